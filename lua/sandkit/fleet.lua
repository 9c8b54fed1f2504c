--- Fleets: n clones of a template sandbox, started together, driven
-- concurrently on one loop.
local compat = require "sandkit.compat"
local errors = require "sandkit.errors"
local options = require "sandkit.options"
local scheduler = require "sandkit.scheduler"

local M = {}
-- The clones are also the fleet's array part, so that fleet[i] and #fleet
-- need no metamethod (LuaJIT and 5.1 ignore a table's __len).
local Fleet = { __name = "sandkit.Fleet" }
Fleet.__index = Fleet

local argerror = errors.argument

-- fn(i) for every clone, at most `limit` at once, reporting progress.
local function each(n, limit, fn, on_progress)
  local done = 0
  return scheduler.bounded(n, limit, fn, on_progress and function()
    done = done + 1
    on_progress(done, n)
  end)
end

-- What clone i raised or failed with, as an error that names the clone.
local function clone_error(f, i, err)
  local sb = f.sandboxes[i]
  return errors.new(errors.is(err) and err.kind or "SandboxError",
    ("fleet clone %d (%s): %s"):format(i, sb.id, errors.is(err) and err.message or tostring(err)),
    { clone = i, sandbox_id = sb.id, cause = err })
end

--- n clones of template, all started; or nil, err (the ones that started
-- are destroyed again). opts: concurrency (starts at once), overrides(i),
-- on_progress(done, total) after each start.
function M.new(template, n, opts)
  if type(template) ~= "userdata" or not template.clone then
    argerror(1, "fleet", "sandkit.Sandbox expected, got " .. type(template))
  end
  if not compat.is_whole(n) or n < 1 then argerror(2, "fleet", "positive integer expected") end
  opts = options.check(options.fleet, opts, 3)
  local concurrency = opts.concurrency or n
  local on_progress = opts.on_progress
  local f = setmetatable({ sandboxes = {} }, Fleet)
  -- overrides(i): per-clone options, e.g. a working directory each
  for i = 1, n do
    f.sandboxes[i] = template:clone(opts.overrides and opts.overrides(i))
    f[i] = f.sandboxes[i]
  end
  local _, errs = each(n, concurrency, function(i)
    local ok, err = f.sandboxes[i]:start()
    if not ok then error(err, 0) end
  end, on_progress)
  local first = next(errs)
  if first then
    local err = clone_error(f, first, errs[first])
    f:destroy()
    return nil, err
  end
  return f
end

--- Runs the same command on every sandbox at once; returns results,
-- errors as sandkit.all does (results[i] or errors[i] for clone i). opts
-- as for exec, plus on_progress(done, total).
function Fleet:exec(command, args, opts)
  if getmetatable(self) ~= Fleet then argerror(1, "exec", "sandkit.Fleet expected, got " .. type(self)) end
  local exec_opts = {}
  for k, v in pairs(options.check(options.fleet_exec, opts, 3)) do exec_opts[k] = v end
  local on_progress = exec_opts.on_progress
  exec_opts.on_progress = nil
  local ops = {}
  for i, sb in ipairs(self.sandboxes) do ops[i] = sb:exec_async(command, args, exec_opts) end
  return scheduler.all(ops, { on_progress = on_progress })
end

--- Calls fn(sandbox, i) for each sandbox, at most `concurrency` at once, in
-- tasks; returns values, errors: the first value of each call, and for a
-- call that raised an error naming the clone (clone, sandbox_id, cause).
-- opts: concurrency, on_progress(done, total).
function Fleet:map(fn, opts)
  if getmetatable(self) ~= Fleet then argerror(1, "map", "sandkit.Fleet expected, got " .. type(self)) end
  if type(fn) ~= "function" then argerror(1, "map", "function expected, got " .. type(fn)) end
  opts = options.check(options.map, opts, 2)
  local limit = opts.concurrency or #self.sandboxes
  local values, raised = each(#self.sandboxes, limit, function(i) return fn(self.sandboxes[i], i) end, opts.on_progress)
  local errs = {}
  for i, err in pairs(raised) do errs[i] = clone_error(self, i, err) end
  return values, errs
end

function Fleet:destroy()
  each(#self.sandboxes, #self.sandboxes, function(i) self.sandboxes[i]:destroy() end)
  return true
end

--- `local f <close> = sandkit.fleet(...)` destroys every clone at scope exit.
Fleet.__close = function(f) f:destroy() end

function Fleet:__tostring() return ("sandkit.Fleet (%d sandboxes)"):format(#self.sandboxes) end

return M
