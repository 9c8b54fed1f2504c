--- sandkit: run commands in sandboxes from Lua. See README.md.
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
    errors.misuse(("bad argument #1 to 'new' (provider id string expected, got %s)"):format(type(id)))
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

--- One turn of the loop for a host: waits at most timeout seconds
-- (default 0). Returns true while anything is in flight (tasks, starts,
-- commands, timers, connections); false once nothing is left.
function M.step(timeout)
  local ms = 0
  if timeout ~= nil then
    if type(timeout) ~= "number" or timeout ~= timeout or timeout < 0 then
      errors.misuse("bad argument #1 to 'step' (non-negative number of seconds expected)")
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

-- r, err of one item of all(): an operation or task is waited for, a
-- function called; what it raises becomes its error.
local function settle(item)
  local ok, r, err
  if type(item) == "function" then ok, r, err = pcall(item) else ok, r, err = pcall(item.wait, item) end
  if not ok then return nil, r end
  if r == nil then return nil, err end
  return r
end

--- Waits for several operations, tasks or functions; returns their
-- results in order and, where one failed (nil, err) or raised, its error at
-- the same index. opts: concurrency (functions running at once; default
-- all), on_progress(done, total) after each item.
function M.all(items, opts)
  if type(items) ~= "table" then errors.misuse("bad argument #1 to 'all' (table of operations expected)") end
  local n = #items
  for i = 1, n do
    local item = items[i]
    local t = type(item)
    local wait = (t == "table" or t == "userdata") and select(2, pcall(function() return item.wait end))
    if t ~= "function" and type(wait) ~= "function" then
      errors.misuse(("bad argument #1 to 'all' (element %d is not an operation, task or function, got %s)"):format(i, t))
    end
  end
  if opts ~= nil and type(opts) ~= "table" then
    errors.misuse("bad argument #2 to 'all' (options table expected, got " .. type(opts) .. ")")
  end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "concurrency" and k ~= "on_progress" then
      errors.misuse(("bad argument #2 to 'all' (unknown option '%s')"):format(tostring(k)))
    end
  end
  local limit = opts.concurrency or math.max(n, 1)
  if math.type(limit) ~= "integer" or limit < 1 then
    errors.misuse("bad argument #2 to 'all' (concurrency must be a positive integer)")
  end
  local on_progress = opts.on_progress
  if on_progress ~= nil and type(on_progress) ~= "function" then
    errors.misuse("bad argument #2 to 'all' (on_progress must be a function(done, total))")
  end
  local results, errs = {}, {}
  local done = 0
  local function finish(i, r, err)
    results[i], errs[i] = r, err
    done = done + 1
    if on_progress then on_progress(done, n) end
  end
  -- Operations and tasks already run: each is waited for in a task of its
  -- own; functions take turns, `limit` at once.
  local fns, waiters = {}, {}
  for i = 1, n do
    scheduler.claim(items[i])
    if type(items[i]) == "function" then fns[#fns + 1] = i
    else waiters[#waiters + 1] = scheduler.spawn(function() finish(i, settle(items[i])) end) end
  end
  local _, raised = scheduler.bounded(#fns, limit, function(k) finish(fns[k], settle(items[fns[k]])) end)
  for _, w in ipairs(waiters) do w:wait() end
  local _, first = next(raised)
  if first ~= nil then error(first, 0) end -- on_progress raised
  return results, errs
end

--- n clones of template, started together (see Fleet).
function M.fleet(template, n, opts) return fleet.new(template, n, opts) end

--- Host files (upstream's LocalFilesystem; see lua/sandkit/fs).
M.LocalFilesystem = function(opts) return require("sandkit.fs.local").LocalFilesystem(opts) end

--- Monotonic milliseconds (for measuring; not wall-clock time).
M.now = core.now

--- Quotes a string for the POSIX shell (one word).
M.quote = core.quote

return M
