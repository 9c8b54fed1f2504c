--- The soak workload (spec/soak_spec.lua runs it in a child lua5.4):
-- N operations mixing normal and failing exits, timeouts, kills of
-- background processes, large outputs and cancellations, from 24 tasks
-- across 50 LocalSandboxes. Returns a report: what failed, which operations
-- did not settle exactly once (counted where the core hands events to
-- Lua), and descriptors, children and RSS before and after.
-- Must be required before anything loads sandkit.
local core = require "sandkit.core"

-- Count, per token, the terminal events the core delivers ("exit" for a
-- process, "lifecycle" for start/stop/destroy) by wrapping the dispatcher
-- the scheduler installs when it loads.
local settled = {}
local real_set_dispatch = core.set_dispatch
core.set_dispatch = function(dispatch, error_factory)
  return real_set_dispatch(function(token, kind, a, b)
    if kind == "exit" or kind == "lifecycle" then settled[token] = (settled[token] or 0) + 1 end
    return dispatch(token, kind, a, b)
  end, error_factory)
end
assert(not package.loaded["sandkit.scheduler"], "helpers.soak must be loaded before sandkit")
local sandkit = require "sandkit"
local scheduler = require "sandkit.scheduler"
core.set_dispatch = real_set_dispatch

-- The token of the newest record: Manager:spawn makes its process's record
-- last and returns without a task switch, so right after spawn this is
-- the process's token.
local last_token
local real_record = scheduler.record
scheduler.record = function(handler)
  local rec = real_record(handler)
  last_token = rec.token
  return rec
end

local procs = require "helpers.procs"
local tmp = require "helpers.tmp"

local M = {}

local SANDBOXES = 50
local WORKERS = 24
-- at most this many large outputs at a time: the allocator keeps its
-- high-water mark, which would otherwise drown a leak in noise
local LARGE_AT_ONCE = 2
local KINDS = { "normal", "failing", "timeout", "kill", "large", "cancel" }
local MIX = { "normal", "normal", "normal", "failing", "timeout", "kill", "large", "cancel", "cancel", "normal" }
-- unique to this run: another run's soak (CI, a sanitizer run) may be live
local MARKERS = {}
for i = 1, 3 do MARKERS[i] = ("sleep 30.%s%d"):format(procs.self_pid(), i) end

local function check(cond, msg)
  if not cond then error(msg, 2) end
end

-- A counting semaphore for tasks: a released slot passes straight to the
-- longest waiter.
local function semaphore(n)
  local free, waiting = n, {}
  return {
    acquire = function()
      if free > 0 then free = free - 1 return end
      local rec = scheduler.record()
      waiting[#waiting + 1] = rec
      scheduler.await(rec)
    end,
    release = function()
      local rec = table.remove(waiting, 1)
      if rec then scheduler.complete(rec) else free = free + 1 end
    end,
  }
end

local function snapshot()
  for _ = 1, 3 do collectgarbage() end
  local kids, zombies = procs.children()
  return { fds = procs.fd_count(), children = #kids, zombies = zombies, rss_kib = procs.rss_kib(),
    lua_kib = math.floor(collectgarbage("count")) }
end

--- Runs n operations (after a warm-up of min(500, n/10)); returns the report.
function M.run(n)
  math.randomseed(7)
  local sandboxes = {}
  for i = 1, SANDBOXES do
    sandboxes[i] = sandkit.LocalSandbox { working_directory = tmp.dir(), env = { SOAK = tostring(i) } }
    assert(sandboxes[i]:start())
  end
  local expected = {} -- tokens of processes that must get exactly one exit event
  local large_slots = semaphore(LARGE_AT_ONCE)
  local counts

  local kinds = {
    normal = function(sb, i)
      local r = assert(sb:exec("echo", { "op", i }))
      check(r.stdout == "op " .. i .. "\n" and r.exit_code == 0, "normal: " .. r.stdout)
    end,
    failing = function(sb, i)
      local code = i % 100 + 1
      local r = assert(sb:exec("echo oops >&2; exit " .. code))
      check(r.exit_code == code and r.stderr == "oops\n" and r.success == false, "failing: " .. r.exit_code)
    end,
    timeout = function(sb)
      local r = assert(sb:exec(MARKERS[1] .. " & exec " .. MARKERS[1], nil, { timeout = math.random(5, 40) }))
      check(r.exit_code == 124 and r.timed_out, "timeout: " .. r.exit_code)
    end,
    kill = function(sb)
      local h = assert(sb.processes:spawn(MARKERS[2] .. " & exec " .. MARKERS[2]))
      expected[#expected + 1] = last_token
      if math.random(2) == 1 then sandkit.sleep(math.random(0, 10) / 1000) end
      check(sb.processes:kill(h.pid), "kill: not killed")
      check(assert(h:wait()).killed, "kill: not marked killed")
    end,
    large = function(sb)
      large_slots.acquire()
      local bytes = math.random(64, 1024) * 1024
      local streamed = 0
      local r, err = sb:exec("head", { "-c", tostring(bytes), "/dev/zero" },
        { on_stdout = function(chunk) streamed = streamed + #chunk end })
      large_slots.release()
      assert(r, err)
      check(#r.stdout == bytes and streamed == bytes, ("large: %d of %d bytes"):format(#r.stdout, bytes))
    end,
    cancel = function(sb)
      local op = sb:exec_async(MARKERS[3] .. " & exec " .. MARKERS[3])
      expected[#expected + 1] = op._rec.token
      local when = math.random(3)
      if when == 2 then sandkit.sleep(0) elseif when == 3 then sandkit.sleep(math.random(1, 20) / 1000) end
      check(op:cancel(), "cancel: already done")
      check(assert(op:wait()).cancelled, "cancel: not marked cancelled")
      check(not op:cancel(), "cancel: a settled operation cancelled again")
    end,
  }

  local failures = {}
  local function run_phase(count)
    counts = {}
    for _, k in ipairs(KINDS) do counts[k] = 0 end
    local next_i = 0
    local function worker()
      while next_i < count do
        next_i = next_i + 1
        local i = next_i
        local kind = MIX[math.random(#MIX)]
        local ok, err = pcall(kinds[kind], sandboxes[math.random(SANDBOXES)], i)
        if not ok then failures[#failures + 1] = kind .. " #" .. i .. ": " .. tostring(err) end
        counts[kind] = counts[kind] + 1
      end
    end
    local tasks = {}
    for w = 1, WORKERS do tasks[w] = sandkit.spawn(worker) end
    for w = 1, WORKERS do tasks[w]:wait() end
  end

  -- The warm-up: the loop's lazily made resources and the allocator's
  -- high-water mark belong to the baseline, not to the growth.
  run_phase(math.min(500, math.ceil(n / 10)))
  sandkit.sleep(0.05)
  local before = snapshot()
  local t0 = core.now()
  run_phase(n)
  local took_s = (core.now() - t0) / 1000

  local report = { n = n, took_s = took_s, counts = counts, failures = failures, before = before,
    unsettled = {}, settled_twice = {} }
  for _, token in ipairs(expected) do
    if settled[token] ~= 1 then report.unsettled[#report.unsettled + 1] = token end
  end
  for token, k in pairs(settled) do
    if k > 1 then report.settled_twice[#report.settled_twice + 1] = token end
  end

  for _, sb in ipairs(sandboxes) do assert(sb:destroy()) end
  sandboxes = nil
  -- the last kills' process groups are reaped, and the handles closed, by
  -- the loop: turn it until it has nothing left (bounded)
  local deadline = core.now() + 30000
  while (sandkit.step(0.02) or #procs.children() > 0) and core.now() < deadline do end
  -- a killed command's pipes close after a short drain (proc.c), maybe
  -- after the last child is reaped: wait for that too (bounded)
  while procs.fd_count() > before.fds and core.now() < deadline + 10000 do sandkit.sleep(0.02) end
  report.after = snapshot()
  report.markers_left = 0
  -- killed processes leave /proc when reaped (by init for orphans): wait
  for _, m in ipairs(MARKERS) do report.markers_left = report.markers_left + procs.wait_gone(m, 30) end
  tmp.cleanup()
  return report
end

return M
