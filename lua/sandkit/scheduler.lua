--- The scheduler: records that core events complete, tasks (coroutines)
-- that wait on them, and the three ways of waiting — block in a plain
-- script, yield inside a task, or let a host loop call step().
local compat = require "sandkit.compat"
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local options = require "sandkit.options"

local M = {}

-- token -> record awaiting core events. Weak: whoever waits for a record
-- holds it, and a record nobody holds must not keep its sandbox alive.
local records = setmetatable({}, { __mode = "v" })
local next_token = 0
local ready = {}            -- FIFO of task coroutines to resume
local ready_first, ready_last = 1, 0
local tasks = {}            -- coroutine -> task record
local live_tasks = 0
local task_count = 0        -- numbers tasks in deadlock messages
local failures = {}         -- uncaught task errors, raised from turn()
-- Who is waiting, for deadlock detection: the task being resumed (the
-- innermost one), else the program outside any task.
local MAIN = { name = "the main program" }
local current

local pack, unpack = compat.pack, compat.unpack

--- A record waits for one completion; `handler(rec, kind, ...)` receives
-- the core's events for its token.
function M.record(handler)
  next_token = next_token + 1
  local rec = { token = next_token, handler = handler, done = false }
  if handler then records[next_token] = rec end
  return rec
end

--- A record that the running task (or the main program) will complete
-- itself: waits on it take part in deadlock detection.
function M.owned_record()
  local rec = M.record()
  rec.owner = current or MAIN
  return rec
end

local function make_ready(co)
  ready_last = ready_last + 1
  ready[ready_last] = co
end

--- Completes a record with the values its waiters will receive.
function M.complete(rec, ...)
  if rec.done then return end
  rec.done = true
  rec.values = pack(...)
  records[rec.token] = nil
  local waiters = rec.waiters
  rec.waiters = nil
  if waiters then
    for i = 1, #waiters do make_ready(waiters[i]) end
  end
end

local function dispatch(token, kind, a, b)
  local rec = records[token]
  if rec then rec.handler(rec, kind, a, b) end
end
core.set_dispatch(dispatch, errors.new)

local WAIT = {}

local function resume(co)
  local task = tasks[co]
  local outer = current
  current = task
  local ok, res = coroutine.resume(co)
  current = outer
  if coroutine.status(co) == "dead" then
    tasks[co] = nil
    live_tasks = live_tasks - 1
    if not ok then
      -- Someone waiting gets the error from wait(); only an error nobody
      -- waits for is raised from the loop (run, step, a blocking wait).
      local rec = task.rec
      if not rec.waiters and (rec.blocked or 0) == 0 and not task.claimed then
        failures[#failures + 1] = errors.is(res) and errors.uncaught(res) or debug.traceback(co, tostring(res))
      end
      M.complete(rec, false, res)
    else
      M.complete(task.rec, true, unpack(task.results or {}, 1, task.results and task.results.n or 0))
    end
  elseif res ~= WAIT then
    make_ready(co) -- a task that yielded for its own reasons runs again next turn
  end
end

local function run_ready()
  -- Only what is ready now: tasks made ready meanwhile run next round.
  local last = ready_last
  while ready_first <= last do
    local co = ready[ready_first]
    ready[ready_first] = nil
    ready_first = ready_first + 1
    resume(co)
  end
end

local function has_ready() return ready_first <= ready_last end

local function raise_failures()
  if #failures > 0 then
    local msg = table.remove(failures, 1)
    error("sandkit task failed: " .. msg, 0)
  end
end

-- One turn: resume ready tasks, wait up to timeout_ms for the loop (-1:
-- until something happens; 0 while anything is ready), dispatch events,
-- resume again. Returns the loop's liveness and how many events came.
-- `rec`, when given, is what the caller waits for: done already, no wait.
local function turn_once(timeout_ms, rec)
  run_ready()
  if has_ready() or core.pending() or (rec and rec.done) then timeout_ms = 0 end
  local alive, n = core.step(timeout_ms)
  run_ready()
  raise_failures()
  return alive, n
end

-- A waiter about to wait for `rec`: raises when the chain of owners
-- (rec's owner waits for a record whose owner waits ...) comes back to it,
-- since nothing else could ever complete that record.
local function check_cycle(me, rec)
  local chain = { me.name }
  local r, steps = rec, 0
  while r and not r.done and r.owner and steps <= live_tasks + 1 do
    local owner = r.owner
    if owner == me then
      local msg
      if #chain == 1 then
        msg = me.name .. " waits for itself"
      else
        msg = chain[1] .. " waits for " .. table.concat(chain, ", which waits for ", 2) ..
          ", which waits for " .. me.name
      end
      errors.misuse("sandkit: deadlock: " .. msg)
    end
    chain[#chain + 1] = owner.name
    r = owner.waiting
    steps = steps + 1
  end
end

-- Runs the loop outside any task until `rec` is done; raises when nothing
-- could ever complete it (`me` no longer waiting, as the message reports).
local function block_on(me, rec, outer_wait)
  while not rec.done do
    local alive, n = turn_once(-1, rec)
    if not rec.done and not alive and n == 0 and not has_ready() and not core.alive() then
      me.waiting = outer_wait
      errors.misuse("sandkit: deadlock: " .. me.name ..
        " waits for an operation that nothing can complete" .. M.stuck_tasks())
    end
  end
end

--- Waits for `rec`; returns its values. Yields inside a task, else runs
-- the loop until the record is done. Deadlock errors name the caller's
-- line outside sandkit.
function M.await(rec)
  if not rec.done then
    local task = tasks[compat.outer(coroutine.running())]
    local me = task or current or MAIN
    check_cycle(me, rec)
    local outer_wait = me.waiting
    me.waiting = rec
    if task then
      rec.waiters = rec.waiters or {}
      rec.waiters[#rec.waiters + 1] = task.co -- (in Lua 5.1 we may be in compat.pcall's coroutine)
      repeat coroutine.yield(WAIT) until rec.done
    else
      rec.blocked = (rec.blocked or 0) + 1
      local ok, err = pcall(block_on, me, rec, outer_wait)
      rec.blocked = rec.blocked - 1
      if not ok then me.waiting = outer_wait; error(err, 0) end
    end
    me.waiting = outer_wait
  end
  return unpack(rec.values, 1, rec.values.n)
end

--- "; task 1 (f.lua:3) waits for ..." for every task that waits, for
-- deadlock messages.
function M.stuck_tasks()
  local parts = {}
  for _, t in pairs(tasks) do
    local r = t.waiting
    if r and not r.done then
      parts[#parts + 1] = t.name .. " waits for " .. (r.owner and r.owner.name or r.what or "an operation")
    end
  end
  if #parts == 0 then return "" end
  table.sort(parts)
  return " (" .. table.concat(parts, "; ") .. ")"
end

--- Marks `t`, when it is a task, as waited for: its error goes to the
-- waiter (sandkit.all) instead of being raised from the loop.
function M.claim(t)
  if getmetatable(t) == M.Task then t.claimed = true end
end

--- True when the running coroutine is a sandkit task.
function M.in_task()
  return tasks[compat.outer(coroutine.running())] ~= nil
end

local Task = { __name = "sandkit.Task" }
Task.__index = Task
M.Task = Task

--- Waits for the task; returns its function's values, or raises its error.
function Task:wait()
  local vals = pack(M.await(self.rec))
  if not vals[1] then error(vals[2], 0) end
  return unpack(vals, 2, vals.n)
end

function Task:__tostring()
  return "sandkit.Task (" .. (self.rec.done and "done" or "running") .. ")"
end

--- Starts fn(...) as a task; it runs on the next turn.
function M.spawn(fn, ...)
  if type(fn) ~= "function" then
    errors.argument(1, "spawn", "function expected, got " .. type(fn))
  end
  local args = pack(...)
  task_count = task_count + 1
  local task = setmetatable({ rec = M.record(),
    name = ("task %d (spawned at %s)"):format(task_count, errors.caller_where() or "?") }, Task)
  task.rec.owner = task
  local co = coroutine.create(function()
    task.results = pack(fn(unpack(args, 1, args.n)))
  end)
  task.co = co
  tasks[co] = task
  live_tasks = live_tasks + 1
  make_ready(co)
  return task
end

-- After a turn: tasks live but none ready, no event queued and nothing
-- left in the loop that could produce one means they wait forever.
local function check_stall()
  -- core.alive() now, not the turn's own answer: a task resumed after the
  -- loop ran may just have started a command.
  if live_tasks > 0 and not has_ready() and not core.alive() then
    errors.misuse(("sandkit: deadlock: %d %s for operations that nothing can complete%s"):format(
      live_tasks, live_tasks == 1 and "task waits" or "tasks wait", M.stuck_tasks()))
  end
end

--- Whether anything is still in flight: tasks (ready or waiting), queued
-- events, or loop handles (commands, timers, connections).
local function busy()
  return live_tasks > 0 or has_ready() or core.alive()
end

--- One turn; returns whether anything is still pending. Raises when the
-- remaining tasks can never finish.
function M.turn(timeout_ms)
  turn_once(timeout_ms)
  check_stall()
  -- Asked now, not from the loop's turn: tasks resumed after it may have
  -- started commands (exec_async on an unstarted sandbox starts it in a
  -- task, and the command only once the start completed).
  return busy()
end

--- Runs until every task has finished.
function M.run()
  if current then
    errors.misuse("sandkit: deadlock: sandkit.run() called inside " .. current.name ..
      ": run() waits for every task, that one included; use task:wait() or sandkit.all()")
  end
  while live_tasks > 0 or has_ready() do
    turn_once(has_ready() and 0 or -1)
    check_stall()
  end
end

--- Calls fn(i) for i = 1..n in tasks, at most `limit` at once, and waits
-- for all. Returns the first value of each call and what each call that
-- raised raised, by index; on_done(i), when given, after each call.
function M.bounded(n, limit, fn, on_done)
  local values, errs = {}, {}
  local next_i = 0
  local function worker()
    while next_i < n do
      next_i = next_i + 1
      local i = next_i
      local ok, v = compat.pcall(fn, i)
      if ok then values[i] = v else errs[i] = v end
      if on_done then on_done(i) end
    end
  end
  local workers = {}
  for w = 1, math.min(limit, n) do workers[w] = M.spawn(worker) end
  for w = 1, #workers do workers[w]:wait() end
  return values, errs
end

-- r, err of one item of all(): an operation or task is waited for, a
-- function called; what it raises becomes its error.
local function settle(item)
  local ok, r, err
  if type(item) == "function" then
    ok, r, err = compat.pcall(item)
  else
    ok, r, err = compat.pcall(item.wait, item)
  end
  if not ok then return nil, r end
  if r == nil then return nil, err end
  return r
end

--- sandkit.all: waits for several operations, tasks or functions; returns
-- their results in order and, where one failed (nil, err) or raised, its
-- error at the same index. opts (options.all): concurrency (functions
-- running at once; default all), on_progress(done, total) after each item.
function M.all(items, opts)
  if type(items) ~= "table" then errors.argument(1, "all", "table of operations expected") end
  local n = #items
  for i = 1, n do
    local item = items[i]
    local t = type(item)
    local wait = (t == "table" or t == "userdata") and select(2, pcall(function() return item.wait end))
    if t ~= "function" and type(wait) ~= "function" then
      errors.argument(1, "all", ("element %d is not an operation, task or function, got %s"):format(i, t))
    end
  end
  opts = options.check(options.all, opts, 2)
  local limit = opts.concurrency or math.max(n, 1)
  local on_progress = opts.on_progress
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
    M.claim(items[i])
    if type(items[i]) == "function" then fns[#fns + 1] = i
    else waiters[#waiters + 1] = M.spawn(function() finish(i, settle(items[i])) end) end
  end
  local _, raised = M.bounded(#fns, limit, function(k) finish(fns[k], settle(items[fns[k]])) end)
  for _, w in ipairs(waiters) do w:wait() end
  local _, first = next(raised)
  if first ~= nil then error(first, 0) end -- on_progress raised
  return results, errs
end

--- Sleeps (yields in a task; blocks otherwise).
function M.sleep(seconds)
  if type(seconds) ~= "number" or seconds ~= seconds or seconds < 0 or seconds == math.huge then
    errors.argument(1, "sleep", "non-negative number expected, got " .. tostring(seconds))
  end
  -- the loop's timers take up to 1e12 ms
  if seconds >= 1e9 then
    errors.argument(1, "sleep", "at most 1e9 seconds, got " .. tostring(seconds))
  end
  local rec = M.record(function(r) M.complete(r) end)
  local timer = core.timer(seconds * 1000, rec.token)
  M.await(rec)
  timer:cancel()
end

--- Host-loop surface (cqueues convention).
function M.timeout()
  if has_ready() or core.pending() then return 0 end
  local ms = core.timeout()
  if ms < 0 then return nil end
  return ms / 1000
end

return M
