--- The emulated Apple `container` CLI (spec/servers/container/) for the
-- AppleContainerSandbox specs: a private state directory per `new()`, a
-- wrapper script that points the CLI at it (the provider's
-- `container_binary`), direct CLI calls, the argv log, fault rules, and a
-- teardown that leaves no container process behind.
local cjson = require "cjson"
local files = require "helpers.files"
local shell = require "helpers.sh"

local M = {}

local SPEC_DIR = debug.getinfo(1, "S").source:match("^@(.*)/helpers/[^/]*$") or "spec"
if SPEC_DIR:sub(1, 1) ~= "/" then SPEC_DIR = (os.getenv("PWD") or ".") .. "/" .. SPEC_DIR end
M.EMULATOR = SPEC_DIR .. "/servers/container/container"

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
M.q = q

local read_file = files.read
M.read_file = read_file

local function write_file(path, s, mode)
  files.write(path, s)
  if mode then os.execute("chmod " .. mode .. " " .. q(path)) end
end

local function sh(cmd)
  return shell.capture(cmd)
end
M.sh = sh

local Env = {}
Env.__index = Env

--- A fresh state directory. version: emulated CLI version ("1.0.0" when nil).
function M.new(version)
  local dir = sh("mktemp -d /tmp/sandkit-apple-spec.XXXXXX"):gsub("%s+$", "")
  local self = setmetatable({ dir = dir, state_dir = dir .. "/state", version = version or "1.0.0" }, Env)
  os.execute("mkdir -p " .. q(self.state_dir))
  -- the provider's container_binary: the emulator with this state directory
  self.binary = dir .. "/container"
  write_file(self.binary, table.concat({
    "#!/bin/sh",
    "SANDKIT_CONTAINER_STATE=" .. q(self.state_dir) .. "; export SANDKIT_CONTAINER_STATE",
    "SANDKIT_CONTAINER_CLI_VERSION=" .. q(self.version) .. "; export SANDKIT_CONTAINER_CLI_VERSION",
    "exec " .. q(M.EMULATOR) .. ' "$@"',
    "",
  }, "\n"), "755")
  return self
end

--- Runs the CLI directly: { code, stdout, stderr }. opts.env: variables for
-- this call (written to a 0600 file and sourced, never on a command line).
function Env:cli(args, opts)
  opts = opts or {}
  local envfile = self.dir .. "/env.sh"
  local lines = {}
  for k, v in pairs(opts.env or {}) do lines[#lines + 1] = "export " .. k .. "=" .. q(v) end
  write_file(envfile, table.concat(lines, "\n") .. "\n", "600")
  local words = {}
  for i, a in ipairs(args) do words[i] = q(a) end
  local errfile = self.dir .. "/stderr"
  local out, code = sh(". " .. q(envfile) .. " && " .. q(self.binary) .. " " .. table.concat(words, " ") ..
    " </dev/null 2>" .. q(errfile))
  return { code = code, stdout = out, stderr = read_file(errfile) or "" }
end

--- The inspect element of id, or nil when it does not exist.
function Env:inspect(id)
  local r = self:cli({ "inspect", id })
  if r.code ~= 0 then return nil, r end
  local list = cjson.decode(r.stdout)
  return list[1]
end

--- The state of id ("running", "stopped", ...) or nil.
function Env:state(id)
  local item = self:inspect(id)
  if not item then return nil end
  return type(item.status) == "string" and item.status or item.status.state
end

--- Every argv log entry so far ({ argv, command, env_names, env_unset, env_inline, pid }).
function Env:log()
  local entries = {}
  for line in (read_file(self.state_dir .. "/argv.log") or ""):gmatch("[^\n]+") do
    entries[#entries + 1] = cjson.decode(line)
  end
  return entries
end

--- Number of calls logged so far (a mark for calls_since).
function Env:mark() return #self:log() end

--- The entries logged after mark.
function Env:calls_since(mark)
  local all, out = self:log(), {}
  for i = mark + 1, #all do out[#out + 1] = all[i] end
  return out
end

--- The argv lists logged after mark.
function Env:argvs_since(mark)
  local out = {}
  for i, e in ipairs(self:calls_since(mark)) do out[i] = e.argv end
  return out
end

--- Fault rules (a list, see the emulator's README); nil clears them.
function Env:faults(rules)
  os.remove(self.state_dir .. "/faults.state.json")
  if not rules or #rules == 0 then
    os.remove(self.state_dir .. "/faults.json")
  else
    write_file(self.state_dir .. "/faults.json", cjson.encode(rules))
  end
end

--- Live processes (not zombies) whose command line contains needle.
function M.live_processes(needle)
  local found = {}
  for pid in sh("ls /proc"):gmatch("%d+") do
    local cmdline = read_file("/proc/" .. pid .. "/cmdline")
    local stat = read_file("/proc/" .. pid .. "/stat")
    if cmdline and stat and cmdline:gsub("%z", " "):find(needle, 1, true) then
      if stat:match("^%d+ %(.*%) (%a)") ~= "Z" then
        found[#found + 1] = pid .. ": " .. cmdline:gsub("%z", " ")
      end
    end
  end
  return found
end

--- Waits (bounded: `seconds`, default 30) until no live process's command
-- line contains `needle`; returns those still alive (expected: none). A
-- killed process leaves /proc asynchronously, so this never samples once.
function M.wait_live_processes_gone(needle, seconds)
  local procs = require "helpers.procs"
  local left
  procs.wait_for(function()
    left = M.live_processes(needle)
    return #left == 0
  end, seconds)
  return left
end

--- Kills and removes every container, then the directory. Returns the
-- processes still referring to the state directory (expected: none).
function Env:teardown()
  self:cli({ "_reap-all", "--delete" })
  local left = M.wait_live_processes_gone(self.state_dir)
  os.execute("rm -rf " .. q(self.dir))
  return left
end

--- The mastra.sandbox.config-hash of a canonical string (sha256sum, first 16).
function M.hash_of(canonical)
  local f = os.tmpname()
  write_file(f, canonical)
  local out = sh("sha256sum " .. q(f))
  os.remove(f)
  return out:sub(1, 16)
end

return M
