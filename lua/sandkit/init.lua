--- sandkit: run commands in sandboxes from Lua. See README.md.
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local fleet = require "sandkit.fleet"
local sandbox = require "sandkit.sandbox"
local scheduler = require "sandkit.scheduler"

local M = {
  _NAME = "sandkit",
  _VERSION = core._VERSION,
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
    error(("bad argument #1 to 'new' (provider id string expected, got %s)"):format(type(id)), 2)
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
      error(errors.new("ConfigError", name .. " is not available in this build", { provider = id }), 2)
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
-- (default 0). Returns true while sandkit has work in flight.
function M.step(timeout)
  local ms = 0
  if timeout ~= nil then
    if type(timeout) ~= "number" or timeout ~= timeout or timeout < 0 then
      error("bad argument #1 to 'step' (non-negative number of seconds expected)", 2)
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

--- Waits for several operations (or tasks); returns their results in
-- order and, where one failed, its error at the same index.
function M.all(ops)
  if type(ops) ~= "table" then error("bad argument #1 to 'all' (table of operations expected)", 2) end
  for i, op in ipairs(ops) do
    local t = type(op)
    local wait = (t == "table" or t == "userdata") and select(2, pcall(function() return op.wait end))
    if type(wait) ~= "function" then
      error(("bad argument #1 to 'all' (element %d is not an operation, got %s)"):format(i, t), 2)
    end
  end
  local results, errs = {}, {}
  for i, op in ipairs(ops) do
    local r, err = op:wait()
    results[i] = r
    if r == nil then errs[i] = err end
  end
  return results, errs
end

--- n clones of template, started together (see Fleet).
function M.fleet(template, n, opts) return fleet.new(template, n, opts) end

--- Filesystems (upstream's WorkspaceFilesystem; see lua/sandkit/fs).
M.LocalFilesystem = function(opts) return require("sandkit.fs.local").LocalFilesystem(opts) end
M.PlatformFilesystem = function(opts) return require("sandkit.fs.platform").PlatformFilesystem(opts) end

--- Monotonic milliseconds (for measuring; not wall-clock time).
M.now = core.now

--- Quotes a string for the POSIX shell (one word).
M.quote = core.quote

return M
