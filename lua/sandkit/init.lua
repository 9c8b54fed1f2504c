--- sandkit: run commands in sandboxes from Lua. See README.md and docs/api.md.
local compat = require "sandkit.compat"
local core = require "sandkit.core"
local sandbox = require "sandkit.sandbox" -- first: see its core.primitives()
local errors = require "sandkit.errors"
local fleet = require "sandkit.fleet"
local options = require "sandkit.options"
local registry = require "sandkit.registry"
local scheduler = require "sandkit.scheduler"

local M = {
  _NAME = "sandkit",
  _VERSION = require "sandkit.version",
  errors = errors,
}

--- Creates a sandbox of the provider `id` ("local", "platform", ...).
function M.new(id, opts)
  if type(id) ~= "string" then
    errors.argument(1, "new", "provider id string expected, got " .. type(id))
  end
  return sandbox.new(id, opts)
end

-- One constructor per provider, named by its descriptor (sandkit.<name>),
-- and the filesystems a provider's folder offers standing alone.
for _, d in ipairs(registry.descriptors()) do
  M[d.name] = function(opts) return sandbox.new(d.id, opts) end
  if d.filesystem_constructor then
    local name = d.filesystem_constructor
    M[name] = function(opts) return registry.module(d.id, "fs")[name](opts) end
  end
end

local function copy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = copy(x) end
  return out
end

--- Descriptors { id, name, description, options, capabilities, filesystem }
-- of every provider; options[key] = { type, default, description, enum,
-- env }. Copies: changing them changes nothing.
function M.providers()
  local out = {}
  for i, d in ipairs(registry.descriptors()) do
    local opts = {}
    for k, spec in pairs(d.options) do
      opts[k] = { type = type(spec.type) == "table" and table.concat(spec.type, "|") or spec.type,
        default = copy(spec.default), description = spec.description, enum = copy(spec.enum), env = spec.env }
    end
    local caps = copy(options.capabilities)
    for k, v in pairs(d.capabilities or {}) do caps[k] = v end
    out[i] = { id = d.id, name = d.name, description = d.description, options = opts,
      capabilities = caps, filesystem = d.filesystem or "exec" }
  end
  return out
end

M.spawn = scheduler.spawn
M.run = scheduler.run
M.sleep = scheduler.sleep
--- pcall, from inside which a task may wait (sb:exec and the like yield
-- there): Lua's own pcall in LuaJIT and 5.2 on; in 5.1, whose pcall cannot
-- be yielded across, a pcall that runs f in a coroutine of its own.
M.pcall = compat.pcall

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

--- Host files (upstream's LocalFilesystem; see lua/sandkit/fs).
M.LocalFilesystem = function(opts) return require("sandkit.fs.local").LocalFilesystem(opts) end

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
