-- run() and step() detect deadlock (issue 10 row 6): a task waiting for
-- itself, tasks waiting for each other, run() inside a task, tasks left
-- waiting for what nothing can complete. Each case runs in its own Lua
-- process under `timeout`, since the failure being guarded against is a
-- hang at 100 % CPU; the CPU time the process used is asserted too.
-- Waiting itself never spins: CPU time while tasks sleep stays near zero.

local child = require "helpers.child"
local sh = require "helpers.sh"

local q = sh.quote
local capture = sh.capture
local ROOT, ENV = child.ROOT, child.LUA_ENV
-- Generous: the cases finish in milliseconds; the bound only stops a hang.
local HANG_GUARD_S = 30

-- Runs `body` as a script (sandkit required as `sandkit`). It prints the
-- error it ends with (or "no error") and the CPU seconds it used, so a hang
-- shows as exit 124 and a spin as CPU time.
local function run_script(body)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write('local sandkit = require "sandkit"\n',
    'local ok, err = pcall(function()\n', body, '\nend)\n',
    'io.write(ok and "no error" or tostring(err), "\\n")\n',
    'io.write("cpu=", os.clock(), "\\n")\n')
  f:close()
  local out, code = capture(("env %s timeout -k 5 %d %s %s 2>&1"):format(ENV, HANG_GUARD_S, child.LUA, q(path)))
  os.remove(path)
  assert.are_not.equal(124, code, "hung: " .. out)
  assert.are.equal(0, code, out)
  local cpu = tonumber(out:match("cpu=([%d.e%-]+)"))
  assert.is_truthy(cpu, out)
  return out, cpu
end

describe("deadlock", function()
  it("a task waiting for itself raises at once, naming the task", function()
    local out, cpu = run_script [[
      local t
      t = sandkit.spawn(function() sandkit.sleep(0); t:wait() end)
      sandkit.run()
    ]]
    assert.is_truthy(out:find("deadlock: task %d+ %(spawned at [^)]+:4%) waits for itself"), out)
    assert.is_true(cpu < 2, "cpu " .. cpu .. " s: spun before raising")
  end)

  it("two tasks waiting for each other raise, naming both", function()
    local out, cpu = run_script [[
      local a, b
      a = sandkit.spawn(function() sandkit.sleep(0); b:wait() end)
      b = sandkit.spawn(function() sandkit.sleep(0); a:wait() end)
      sandkit.run()
    ]]
    assert.is_truthy(out:find("deadlock: task 2 %(spawned at [^)]+:5%) waits for task 1 %(spawned at [^)]+:4%), "
      .. "which waits for task 2"), out)
    assert.is_true(cpu < 2, "cpu " .. cpu .. " s")
  end)

  it("a longer cycle names every task in it", function()
    local out = run_script [[
      local t = {}
      for i = 1, 3 do
        t[i] = sandkit.spawn(function() sandkit.sleep(0.01 * i); t[i % 3 + 1]:wait() end)
      end
      sandkit.run()
    ]]
    assert.is_truthy(out:find("task 3 %b() waits for task 1 %b(), which waits for task 2 %b(), which waits for task 3"), out)
  end)

  it("sandkit.run() inside a task raises, saying so", function()
    local out, cpu = run_script [[
      sandkit.spawn(function() sandkit.run() end)
      sandkit.run()
    ]]
    assert.is_truthy(out:find("sandkit.run() called inside task 1 (spawned at", 1, true), out)
    assert.is_true(cpu < 2, "cpu " .. cpu .. " s")
  end)

  it("run() inside a plain coroutine inside a task raises too", function()
    local out = run_script [[
      sandkit.spawn(function() coroutine.wrap(function() sandkit.run() end)() end)
      sandkit.run()
    ]]
    assert.is_truthy(out:find("sandkit.run() called inside task 1", 1, true), out)
  end)

  it("the main program waiting for a task that waits for it raises", function()
    -- the on_start hook runs in the main program, inside its start(); the
    -- task's start() shares that start, so each waits for the other
    local out = run_script [[
      local dir = os.tmpname(); os.remove(dir)
      local t
      local sb = sandkit.LocalSandbox { working_directory = dir,
        on_start = function() t:wait() end }
      t = sandkit.spawn(function() return sb:start() end)
      local ok, err = sb:start()
      sb:destroy()
      os.execute("rm -rf " .. dir)
      error(tostring(err))
    ]]
    assert.is_truthy(out:find("the main program waits for task 1 %b(), which waits for the main program"), out)
  end)

  it("tasks left waiting for what nothing can complete: run() and step() raise", function()
    local out = run_script [[
      local scheduler = require "sandkit.scheduler"
      local orphan = scheduler.record() -- nothing will ever complete it
      sandkit.spawn(function() scheduler.await(orphan) end)
      local ok, err = pcall(sandkit.run)
      io.write("run: ", tostring(err), "\n")
      ok, err = pcall(function() sandkit.step(0) end)
      io.write("step: ", tostring(err), "\n")
    ]]
    assert.is_truthy(out:find("run: [^\n]*:6: sandkit: deadlock: 1 task waits for operations that nothing can complete %(task 1 %(spawned at [^)]+:5%) waits for an operation%)"), out)
    assert.is_truthy(out:find("step: [^\n]*:8: sandkit: deadlock: 1 task waits for"), out)
  end)

  it("a failed task does not leave its waiters stuck", function()
    local out = run_script [[
      local a = sandkit.spawn(function() error("a-broke") end)
      local b = sandkit.spawn(function() return a:wait() end)
      local ok, err = pcall(sandkit.run)
      io.write("first: ", tostring(err), "\n")
      ok, err = pcall(b.wait, b)
      io.write("b: ", tostring(err), "\n")
    ]]
    assert.is_truthy(out:find("first: sandkit task failed: [^\n]*a%-broke"), out)
    assert.is_truthy(out:find("b: [^\n]*a%-broke"), out)
  end)
end)

describe("waiting does not spin", function()
  it("a task sleeping 2 s and a 2 s command cost almost no CPU", function()
    local out, cpu = run_script [[
      local dir = os.tmpname(); os.remove(dir)
      local sb = sandkit.LocalSandbox { working_directory = dir }
      assert(sb:start())
      local c0 = os.clock()
      local t0 = sandkit.now()
      sandkit.spawn(function() sandkit.sleep(1) end)
      sandkit.spawn(function() assert(sb:exec("sleep", { "1" })) end)
      sandkit.run()
      sandkit.sleep(0.5)                 -- blocking, outside tasks
      assert(sb:exec("sleep", { "0.5" })) -- blocking exec
      io.write("waited=", sandkit.now() - t0, " idle_cpu=", os.clock() - c0, "\n")
      sb:destroy()
      os.execute("rm -rf " .. dir)
    ]]
    local waited = tonumber(out:match("waited=([%d.]+)"))
    local idle = tonumber(out:match("idle_cpu=([%d.e%-]+)"))
    assert.is_truthy(waited and idle, out)
    assert.is_true(waited >= 1900, "did not wait: " .. out)
    -- a spinning wait would burn ~2 s of CPU; a blocked one a few ms
    assert.is_true(idle < 0.5, ("%.3f s of CPU while waiting %.0f ms"):format(idle, waited))
    assert.is_true(cpu < 2, out)
  end)

  it("a host loop stepping with timeout() does not spin while a task sleeps", function()
    local out = run_script [[
      local c0 = os.clock()
      sandkit.spawn(function() sandkit.sleep(1) end)
      local turns = 0
      while sandkit.step(sandkit.timeout() or 1) do turns = turns + 1 end
      io.write("turns=", turns, " idle_cpu=", os.clock() - c0, "\n")
    ]]
    local turns = tonumber(out:match("turns=(%d+)"))
    local idle = tonumber(out:match("idle_cpu=([%d.e%-]+)"))
    assert.is_truthy(turns and idle, out)
    assert.is_true(turns < 100, "turned " .. turns .. " times for one timer")
    assert.is_true(idle < 0.5, out)
  end)
end)

-- A host loop that only steps and polls sandkit's descriptor
-- (docs/api.md §"Embedding in a host loop") runs work to the end: step(0)
-- stays true while anything is in flight — a sandbox being started for
-- exec_async, a command, a sleeping task — and turns false only once
-- nothing is left.
describe("a host loop of step(0) and poll", function()
  -- Defines host_loop(): docs/api.md's loop inside a cqueues controller;
  -- returns its turns and the CPU seconds it used. `report(label, value)`
  -- prints what the test checks, with step(0) and timeout() afterwards.
  local PRELUDE = [[
    local cqueues = require "cqueues"
    local dir = os.tmpname(); os.remove(dir)
    local function host_loop()
      local turns, c0 = 0, os.clock()
      local cq = cqueues.new()
      cq:wrap(function()
        while sandkit.step(0) do
          turns = turns + 1
          cqueues.poll(sandkit)
        end
      end)
      assert(cq:loop())
      return turns, os.clock() - c0
    end
    local function report(label, value, turns, cpu)
      io.write(label, "=", tostring(value), " turns=", turns, (" loop_cpu=%.3f"):format(cpu),
        " after=", tostring(sandkit.step(0)), " timeout=", tostring(sandkit.timeout()), "\n")
    end
  ]]

  local function check(out, label, expected)
    local turns = tonumber(out:match(label .. "=[^\n]- turns=(%d+)"))
    local cpu = tonumber(out:match(label .. "=[^\n]- loop_cpu=([%d.]+)"))
    assert.is_truthy(turns and cpu, out)
    assert.is_truthy(out:find(label .. "=" .. expected .. " turns=", 1, true), out)
    assert.is_true(turns >= 1, "the loop ended at once: " .. out)
    -- Polling sleeps until the loop has work; a spinning loop turns thousands of times.
    assert.is_true(turns < 100, "turned " .. turns .. " times: " .. out)
    assert.is_true(cpu < 1, "spun: " .. out)
    -- Finished means finished: nothing more to step, nothing to wait for.
    assert.is_truthy(out:find(label .. "=[^\n]- after=false timeout=nil\n"), out)
  end

  it("exec_async on a sandbox not started yet: starts it and runs the command", function()
    local out = run_script(PRELUDE .. [[
      local sb = sandkit.LocalSandbox { working_directory = dir }
      local op = sb:exec_async("sleep 0.2; echo done")
      local turns, cpu = host_loop()
      report("unstarted", op.result and op.result.stdout:gsub("\n", "|"), turns, cpu)
      sb:destroy()
      -- The bug report's loop, stepping only: it spins, but until the end.
      local sb2 = sandkit.LocalSandbox { working_directory = dir .. "-2" }
      local op2 = sb2:exec_async("sleep 0.2; echo spun")
      local n = 0
      while sandkit.step(0) do n = n + 1 end
      io.write("spin=", tostring(op2.result and op2.result.stdout:gsub("\n", "|")), " n=", n, "\n")
      sb2:destroy()
      os.execute("rm -rf " .. dir .. " " .. dir .. "-2")
    ]])
    check(out, "unstarted", "done|")
    assert.is_truthy(out:find("spin=spun| n=[1-9]"), out)
  end)

  it("a task that sleeps: the loop runs until it has returned", function()
    local out = run_script(PRELUDE .. [[
      local t = sandkit.spawn(function() sandkit.sleep(0.2); return "woke" end)
      local turns, cpu = host_loop()
      report("task", tostring(t) .. ":" .. t:wait(), turns, cpu)
    ]])
    check(out, "task", "sandkit.Task (done):woke")
  end)

  it("an operation on a started sandbox: the loop runs until the command exits", function()
    local out = run_script(PRELUDE .. [[
      local sb = sandkit.LocalSandbox { working_directory = dir }
      assert(sb:start())
      local op = sb:exec_async("sleep 0.2; echo started")
      local turns, cpu = host_loop()
      report("started", op.result and op.result.stdout:gsub("\n", "|"), turns, cpu)
      sb:destroy()
      os.execute("rm -rf " .. dir)
    ]])
    check(out, "started", "started|")
  end)
end)
