--- Fleets: n clones of a template sandbox, started together, driven
-- concurrently on one loop.
local errors = require "sandkit.errors"
local scheduler = require "sandkit.scheduler"

local M = {}
local Fleet = { __name = "sandkit.Fleet" }
Fleet.__index = function(f, k)
  if type(k) == "number" then return f.sandboxes[k] end
  return Fleet[k]
end
Fleet.__len = function(f) return #f.sandboxes end

local function argerror(n, fname, msg)
  errors.misuse(("bad argument #%d to '%s' (%s)"):format(n, fname, msg))
end

-- Runs fn(i) for i = 1..n with at most `limit` at once; waits for all.
-- Returns the first value of each call and the errors raised, by index.
local function run_bounded(n, limit, fn)
  local values, errs = {}, {}
  local next_i = 0
  local function worker()
    while next_i < n do
      next_i = next_i + 1
      local i = next_i
      local ok, v = pcall(fn, i)
      if ok then values[i] = v else errs[i] = v end
    end
  end
  local workers = {}
  for w = 1, math.min(limit, n) do workers[w] = scheduler.spawn(worker) end
  for w = 1, #workers do workers[w]:wait() end
  return values, errs
end

--- n clones of template, all started; or nil, err (the ones that started
-- are destroyed again). opts: concurrency (starts at once), overrides(i).
function M.new(template, n, opts)
  if type(template) ~= "userdata" or not template.clone then
    argerror(1, "fleet", "sandkit.Sandbox expected, got " .. type(template))
  end
  if math.type(n) ~= "integer" or n < 1 then argerror(2, "fleet", "positive integer expected") end
  opts = opts or {}
  if type(opts) ~= "table" then argerror(3, "fleet", "options table expected, got " .. type(opts)) end
  local concurrency = opts.concurrency or n
  if math.type(concurrency) ~= "integer" or concurrency < 1 then
    argerror(3, "fleet", "concurrency must be a positive integer")
  end
  if opts.overrides ~= nil and type(opts.overrides) ~= "function" then
    argerror(3, "fleet", "overrides must be a function(i) returning clone overrides")
  end
  local f = setmetatable({ sandboxes = {} }, Fleet)
  -- overrides(i): per-clone options, e.g. a working directory each
  for i = 1, n do f.sandboxes[i] = template:clone(opts.overrides and opts.overrides(i)) end
  local _, errs = run_bounded(n, concurrency, function(i)
    local ok, err = f.sandboxes[i]:start()
    if not ok then error(err, 0) end
  end)
  local first = next(errs)
  if first then
    f:destroy()
    local err = errs[first]
    return nil, errors.is(err) and err or errors.new("SandboxError", tostring(err))
  end
  return f
end

--- Runs the same command on every sandbox at once; returns the results
-- (a result table, or the error object where one failed).
function Fleet:exec(command, args, opts)
  local ops = {}
  for i, sb in ipairs(self.sandboxes) do ops[i] = sb:exec_async(command, args, opts) end
  local out = {}
  for i, op in ipairs(ops) do
    local r, err = op:wait()
    out[i] = r or err
  end
  return out
end

--- Calls fn(sandbox, i) for each sandbox, at most `concurrency` at once, in
-- tasks; returns the first value of each call (errors are raised after all
-- have finished).
function Fleet:map(fn, opts)
  if type(fn) ~= "function" then argerror(1, "map", "function expected, got " .. type(fn)) end
  local limit = opts and opts.concurrency or #self.sandboxes
  if math.type(limit) ~= "integer" or limit < 1 then argerror(2, "map", "concurrency must be a positive integer") end
  local values, errs = run_bounded(#self.sandboxes, limit, function(i) return fn(self.sandboxes[i], i) end)
  local first = next(errs)
  if first then error(errs[first], 0) end
  return values
end

function Fleet:destroy()
  run_bounded(#self.sandboxes, #self.sandboxes, function(i) self.sandboxes[i]:destroy() end)
  return true
end

function Fleet:__tostring() return ("sandkit.Fleet (%d sandboxes)"):format(#self.sandboxes) end

return M
