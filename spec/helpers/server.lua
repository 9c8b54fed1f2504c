--- Starts a reference server (spec/servers/*/server.mjs) for a spec and
-- stops it. The server prints "LISTENING <port> [ADMIN <port>]" first; we
-- read that line from a FIFO (a blocking read, no polling), and we hold
-- its stdin: closing it makes the server exit, even if this process dies.
local cjson = require "cjson"
local sh = require "helpers.sh"

local M = {}
local Server = {}
Server.__index = Server

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

--- Why a test that needs node (and `needed`, a path such as a server's
-- node_modules, when given) cannot run here; nil when it can.
function M.node_missing(needed)
  if not sh.ok("command -v node >/dev/null 2>&1") then return "needs node" end
  if needed and not sh.ok("test -e " .. sh_quote(needed)) then
    return "needs node and " .. needed:gsub("/ws$", "")
  end
  return nil
end

--- start(script, args?) -> server { port, admin_port, url, log_path, ... }
-- args: array of strings passed to node after the script.
function M.start(script, args, env)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. sh_quote(dir)))
  local fifo = dir .. "/ready"
  assert(os.execute("mkfifo " .. sh_quote(fifo)))
  local parts = {}
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. sh_quote(v) end
  parts[#parts + 1] = "exec node " .. sh_quote(script)
  for _, a in ipairs(args or {}) do parts[#parts + 1] = sh_quote(a) end
  local log_path = dir .. "/server.log"
  local cmd = table.concat(parts, " ") .. " > " .. sh_quote(fifo) .. " 2> " .. sh_quote(log_path)
  local stdin = assert(io.popen(cmd, "w"))
  local ready = assert(io.open(fifo, "r"))
  local line = ready:read("*l")
  if not line or not line:match("^LISTENING") then
    stdin:close()
    local f = io.open(log_path)
    local log = f and f:read("*a") or ""
    if f then f:close() end
    error("server " .. script .. " did not start: " .. tostring(line) .. "\n" .. log, 2)
  end
  local port, admin = line:match("^LISTENING (%d+)"), line:match("ADMIN (%d+)")
  return setmetatable({
    port = tonumber(port), admin_port = tonumber(admin or port),
    url = "http://127.0.0.1:" .. port, dir = dir, log_path = log_path,
    _stdin = stdin, _ready = ready,
  }, Server)
end

--- Stops the server and waits for it to exit.
--- Starts the server, calls fn(server), stops the server however fn ends,
-- and raises what fn raised. env may be left out.
function M.with(script, args, env, fn)
  if fn == nil then env, fn = nil, env end
  local srv = M.start(script, args, env)
  local ok, err = pcall(fn, srv)
  srv:stop()
  if not ok then error(err, 0) end
end

function Server:stop()
  if self._stdin then
    self._stdin:close()
    self._ready:close()
    self._stdin = nil
    os.execute("rm -rf " .. sh_quote(self.dir))
  end
end

local function admin(self, method, path, body)
  local cmd = ("curl -s -m 10 -X %s -H 'content-type: application/json' %s http://127.0.0.1:%d%s"):format(
    method, body and ("--data-binary " .. sh_quote(cjson.encode(body))) or "", self.admin_port, path)
  local p = io.popen(cmd)
  local out = p:read("*a")
  p:close()
  local ok, decoded = pcall(cjson.decode, out)
  return ok and decoded or out
end

--- Sets fault switches (POST /__admin/faults).
function Server:faults(tbl) return admin(self, "POST", "/__admin/faults", tbl) end
--- Clears faults and logs (POST /__admin/reset).
function Server:reset() return admin(self, "POST", "/__admin/reset", {}) end
--- The server's request log (GET /__admin/log).
function Server:log() return admin(self, "GET", "/__admin/log") end
--- Any other admin call.
function Server:admin(method, path, body) return admin(self, method, path, body) end

return M
