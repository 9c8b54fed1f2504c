--- sandkit: run commands in sandboxes from Lua. See README.md.
local core = require "sandkit.core"
local sandbox = require "sandkit.sandbox" -- first: see its core.primitives()
local errors = require "sandkit.errors"
local fleet = require "sandkit.fleet"
local scheduler = require "sandkit.scheduler"

local M = {
  _NAME = "sandkit",
  _VERSION = require "sandkit.version",
  errors = errors,
}

-- Provider descriptors: the ids the core knows, each with its Lua module.
local registry = {}
local order = {}
for _, id in ipairs(core.provider_ids()) do
  local ok, desc = pcall(require, "sandkit.providers." .. id:gsub("-", "_"))
  if ok then
    registry[id] = desc
    order[#order + 1] = id
  end
end
sandbox.set_registry(registry)

--- Creates a sandbox of the provider `id` ("local", "platform", ...).
function M.new(id, opts)
  if type(id) ~= "string" then
    errors.argument(1, "new", "provider id string expected, got " .. type(id))
  end
  return sandbox.new(id, opts)
end

local constructors = {
  ["local"] = "LocalSandbox", platform = "PlatformSandbox", modal = "ModalSandbox",
  ["apple-container"] = "AppleContainerSandbox",
}
for id, name in pairs(constructors) do
  M[name] = function(opts)
    if not registry[id] then
      errors.config(id, nil, name .. " is not available in this build")
    end
    return sandbox.new(id, opts)
  end
end

--- Descriptors { id, name, description, options } of every provider.
function M.providers()
  local out = {}
  for i, id in ipairs(order) do
    local d = registry[id]
    local opts = {}
    for k, spec in pairs(d.options) do
      opts[k] = { type = type(spec.type) == "table" and table.concat(spec.type, "|") or spec.type,
        default = spec.default, description = spec.description, enum = spec.enum }
    end
    out[i] = { id = d.id, name = d.name, description = d.description, options = opts }
  end
  return out
end

M.spawn = scheduler.spawn
M.run = scheduler.run
M.sleep = scheduler.sleep

--- One turn of the loop for a host: waits at most timeout seconds
-- (default 0). Returns true while anything is in flight (tasks, starts,
-- commands, timers, connections); false once nothing is left.
function M.step(timeout)
  local ms = 0
  if timeout ~= nil then
    if type(timeout) ~= "number" or timeout ~= timeout or timeout < 0 then
      errors.argument(1, "step", "non-negative number of seconds expected")
    end
    ms = timeout == math.huge and -1 or math.ceil(timeout * 1000)
  end
  return scheduler.turn(ms)
end

--- The descriptor a host loop polls for readability (cqueues convention).
function M.pollfd() return core.pollfd() end
function M.events() return "r" end
--- Seconds until step() should be called even without I/O; nil: only on I/O.
function M.timeout() return scheduler.timeout() end

M.all = scheduler.all

--- n clones of template, started together (see Fleet).
function M.fleet(template, n, opts) return fleet.new(template, n, opts) end

--- Filesystems (upstream's WorkspaceFilesystem; see lua/sandkit/fs).
M.LocalFilesystem = function(opts) return require("sandkit.fs.local").LocalFilesystem(opts) end
M.PlatformFilesystem = function(opts) return require("sandkit.fs.platform").PlatformFilesystem(opts) end

--- Monotonic milliseconds (for measuring; not wall-clock time).
M.now = core.now

--- Quotes a string for the POSIX shell (one word).
function M.quote(s)
  if type(s) ~= "string" and type(s) ~= "number" then errors.argument(1, "quote", "string expected, got " .. type(s)) end
  s = tostring(s)
  if s:find("\0", 1, true) then errors.argument(1, "quote", "contains a NUL byte") end
  return core.quote(s)
end

return M
