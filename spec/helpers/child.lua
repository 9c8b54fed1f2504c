--- Runs a Lua script as a separate process for specs that must see what a
-- whole process prints or leaves behind (secrets on stdout/stderr, memory
-- at exit). Configuration goes through a 0600 file, never argv.
local cjson = require "cjson"
local sh = require "helpers.sh"
local tmp = require "helpers.tmp"

local quote = sh.quote
local M = {}

--- The checkout's root (where busted runs), the interpreter of the run
-- (LUA: lua5.4, or another for make test-luajit & co., mk/lua.mk), and the
-- environment words (for `env`) that make a child of it load this
-- checkout's modules and its build for that interpreter
-- (SANDKIT_LUA_BUILD, default build/).
M.ROOT = sh.capture("pwd"):gsub("\n$", "")
M.LUA = os.getenv("LUA") or "lua5.4"
M.BUILD = M.ROOT .. "/" .. (os.getenv("SANDKIT_LUA_BUILD") or "build")
M.LUA_ENV = ("LUA_PATH=%s LUA_CPATH=%s"):format(
  quote(M.ROOT .. "/lua/?.lua;" .. M.ROOT .. "/lua/?/init.lua;;"), quote(M.BUILD .. "/?.so;;"))

--- Writes `s` to `path` readable by its owner only.
function M.write_private(path, s)
  local f = assert(io.open(path, "w"))
  f:write(s)
  f:close()
  assert(os.execute("chmod 600 " .. quote(path)))
end

--- Writes `source` to a fresh file named `name`; returns its path.
function M.script(name, source)
  local path = tmp.dir() .. "/" .. name
  local f = assert(io.open(path, "w"))
  f:write(source)
  f:close()
  return path
end

--- A fresh directory for one run and the path of `cfg` written there as
-- JSON (0600).
function M.config(cfg)
  local dir = tmp.dir()
  local cfg_path = dir .. "/cfg.json"
  M.write_private(cfg_path, cjson.encode(cfg))
  return dir, cfg_path
end

--- Runs shell command `cmd` with its stderr in a file under `dir`; returns
-- its stdout and stderr.
function M.run(cmd, dir)
  local errfile = dir .. "/stderr"
  local p = assert(io.popen(cmd .. " 2>" .. quote(errfile)))
  local out = p:read("*a")
  p:close()
  local f = io.open(errfile)
  local err = f and f:read("*a") or ""
  if f then f:close() end
  return out, err
end

return M
