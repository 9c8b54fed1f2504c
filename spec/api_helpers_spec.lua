-- What real scripts need (issue 12 items 1-6 and 10): one rule for units,
-- misuse reported at the caller's line, all() with concurrency, fleets
-- that close and report per clone, spawn with args, line streaming,
-- operations cqueues can poll, and the luv and busted examples.
local sandkit = require "sandkit"
local errors = sandkit.errors
local child = require "helpers.child"
local sh = require "helpers.sh"
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

local NAN, INF = 0 / 0, math.huge
local THIS_FILE = debug.getinfo(1, "S").short_src

local function new(opts)
  opts = opts or {}
  opts.working_directory = opts.working_directory or tmp.dir()
  return sandkit.LocalSandbox(opts)
end

local function raised(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok, "did not raise")
  return err
end

local q = sh.quote
local capture = sh.capture
local ROOT, ENV = child.ROOT, child.LUA_ENV

-- ---- item 1: units ---------------------------------------------------------

describe("timeouts are whole milliseconds", function()
  local BAD = { { 0.5, "0.5" }, { 1.5, "1.5" }, { -1, "-1" }, { NAN, "NaN" }, { INF, "inf" }, { -INF, "-inf" },
    { "1000", "a string" } }

  local sb = new()
  teardown(function() sb:destroy() end)

  for _, row in ipairs(BAD) do
    it("exec timeout = " .. row[2] .. " raises a ConfigError naming the unit", function()
      for _, fname in ipairs({ "exec", "exec_async" }) do
        local err = raised(function() sb[fname](sb, "true", nil, { timeout = row[1] }) end)
        assert.is_true(errors.is(err, "ConfigError"), tostring(err))
        assert.equal("timeout", err.key)
        assert.truthy(err.message:find("milliseconds", 1, true), err.message)
      end
      local err = raised(function() sb.processes:spawn("true", nil, { timeout = row[1] }) end)
      assert.truthy(tostring(err):find("milliseconds", 1, true), tostring(err))
    end)
  end

  it("exec timeout = 0 means no timeout; a whole float is accepted", function()
    local r = assert(sb:exec("sleep", { "0.2" }, { timeout = 0 }))
    assert.equal(0, r.exit_code)
    assert.is_false(r.timed_out)
    r = assert(sb:exec("sleep", { "5" }, { timeout = 100.0 }))
    assert.is_true(r.timed_out)
  end)

  it("a sandbox timeout = 0 means no timeout", function()
    local sb0 = new { timeout = 0 }
    local r = assert(sb0:exec("sleep", { "0.2" }))
    assert.is_false(r.timed_out)
    sb0:destroy()
  end)

  -- every provider option that is a timeout or a delay in ms
  local BASE = require "helpers.offline_options"
  local checked = 0
  for _, d in ipairs(sandkit.providers()) do
    for key, spec in pairs(d.options) do
      if key == "timeout" or key:match("_ms$") then
        checked = checked + 1
        it(("%s option %s refuses non-integer, negative, NaN, infinite values"):format(d.name, key), function()
          for _, row in ipairs(BAD) do
            local v = row[1]
            if spec.type == "array" then v = { v } end
            local opts = BASE[d.id]()
            opts[key] = v
            local err = raised(function() sandkit.new(d.id, opts) end)
            assert.is_true(errors.is(err, "ConfigError"), tostring(err))
            assert.equal(key, err.key)
            assert.truthy(err.message:find("milliseconds", 1, true), err.message)
          end
        end)
      end
    end
  end
  it("found the ms options of every provider", function() assert.is_true(checked >= 8, "only " .. checked) end)

  it("the loop functions take seconds", function()
    local t0 = sandkit.now()
    sandkit.sleep(0.05)
    assert.is_true(sandkit.now() - t0 >= 45)
    assert.truthy(tostring(raised(function() sandkit.step(-1) end)):find("seconds", 1, true))
  end)
end)

-- ---- item 2: misuse is reported at the caller's line --------------------------

describe("misuse errors name the caller's line", function()
  local sb = new()
  local f
  setup(function() f = assert(sandkit.fleet(new(), 1)) end)
  teardown(function() sb:destroy(); f:destroy() end)

  local function source_of(err)
    if errors.is(err) then return err.where or "" end
    return tostring(err)
  end

  local cases = {
    { "exec: command", function() sb:exec(42) end },
    { "exec: args", function() sb:exec("echo", { k = "v" }) end },
    { "exec: NUL in args", function() sb:exec("echo", { "a\0b" }) end },
    { "exec: unknown option", function() sb:exec("true", nil, { bogus = 1 }) end },
    { "exec: timeout", function() sb:exec("true", nil, { timeout = 0.5 }) end },
    { "exec: self", function() sb.exec(nil, "true") end },
    { "exec_async: command", function() sb:exec_async(42) end },
    { "spawn: command", function() sb.processes:spawn(42) end },
    { "spawn: args", function() sb.processes:spawn("echo", "x") end },
    { "spawn: option", function() sb.processes:spawn("echo", nil, { bogus = 1 }) end },
    { "processes:get", function() sb.processes:get({}) end },
    { "processes:kill", function() sb.processes:kill({}) end },
    { "start: self", function() sb.start(42) end },
    { "clone", function() sb:clone(42) end },
    { "clone: bad option", function() sb:clone({ bogus = 1 }) end },
    { "op:wait: self", function() local op = sb:exec_async("true"); op:wait(); op.wait(42) end },
    { "sandkit.fleet: template", function() sandkit.fleet(42, 2) end },
    { "sandkit.fleet: n", function() sandkit.fleet(sb, 0) end },
    { "sandkit.fleet: bad clone option", function() sandkit.fleet(sb, 1, { overrides = function() return { bogus = 1 } end }) end },
    { "fleet:map", function() f:map(42) end },
    { "fleet:exec", function() f:exec(42) end },
    { "sandkit.all", function() sandkit.all(42) end },
    { "sandkit.all: element", function() sandkit.all({ 42 }) end },
    { "sandkit.all: concurrency", function() sandkit.all({}, { concurrency = 0 }) end },
    { "sandkit.sleep", function() sandkit.sleep(-1) end },
    { "sandkit.spawn", function() sandkit.spawn(42) end },
    { "sandkit.step", function() sandkit.step(-1) end },
    { "sandkit.new: id", function() sandkit.new(42) end },
    { "sandkit.new: unknown provider", function() sandkit.new("nope") end },
    { "LocalSandbox: unknown option", function() sandkit.LocalSandbox { bogus = 1 } end },
    { "LocalSandbox: wrong type", function() sandkit.LocalSandbox { isolation = 42 } end },
    { "LocalSandbox: not a table", function() sandkit.LocalSandbox(42) end },
    { "LocalSandbox: bad env", function() sandkit.LocalSandbox { env = { ["A=B"] = "v" } } end },
    { "PlatformSandbox: bad option", function() sandkit.PlatformSandbox { base_url = "ftp://x" } end },
    { "sandkit.quote", function() sandkit.quote("a\0b") end },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local line = debug.getinfo(c[2], "S").linedefined
      local src = source_of(raised(c[2]))
      local at = THIS_FILE .. ":" .. line
      local ok = src:sub(1, #at) == at and (#src == #at or src:sub(#at + 1, #at + 1) == ":")
      assert.is_true(ok, ("reported at %q, expected %s"):format(src:sub(1, 200), at))
    end)
  end

  it("inside a task, too", function()
    local line
    local t = sandkit.spawn(function()
      line = debug.getinfo(1, "l").currentline + 1
      sb:exec(42)
    end)
    local ok, err = pcall(t.wait, t)
    assert.is_false(ok)
    assert.equal(THIS_FILE .. ":" .. line, source_of(err))
  end)

  it("a deadlock is reported where the waiting happens", function()
    local line
    local t
    t = sandkit.spawn(function()
      line = debug.getinfo(1, "l").currentline + 1
      t:wait()
    end)
    local ok, err = pcall(t.wait, t)
    assert.is_false(ok)
    assert.truthy(tostring(err):find(THIS_FILE .. ":" .. line .. ": sandkit: deadlock", 1, true) == 1, tostring(err))
  end)
end)

-- ---- item 3: all() ----------------------------------------------------------

describe("sandkit.all", function()
  local sb = new()
  teardown(function() sb:destroy() end)

  it("runs at most `concurrency` functions at once and keeps the order of results", function()
    local active, peak = 0, 0
    local jobs = {}
    for i = 1, 8 do
      jobs[i] = function()
        active = active + 1
        peak = math.max(peak, active)
        local r = assert(sb:exec("sh", { "-c", "sleep 0.05; echo " .. i }))
        active = active - 1
        return r.stdout
      end
    end
    local results, errs = sandkit.all(jobs, { concurrency = 3 })
    assert.same({}, errs)
    assert.equal(3, peak)
    for i = 1, 8 do assert.equal(i .. "\n", results[i]) end
  end)

  it("a task or function that raises, or returns nil, err, lands in errors[i]", function()
    local t = sandkit.spawn(function() error("task-broke", 0) end)
    local results, errs = sandkit.all({
      t,
      function() error("fn-broke", 0) end,
      function() return nil, "soft" end,
      sb:exec_async("echo", { "ok" }),
      function() return 7 end,
      sb:exec_async("true", nil, { cwd = "/no/such/dir-all" }),
    })
    assert.equal("task-broke", errs[1])
    assert.equal("fn-broke", errs[2])
    assert.equal("soft", errs[3])
    assert.equal("ok\n", results[4].stdout)
    assert.equal(7, results[5])
    assert.is_true(errors.is(errs[6]), tostring(errs[6]))
    assert.is_nil(errs[4]); assert.is_nil(errs[5])
    assert.is_nil(results[1]); assert.is_nil(results[2]); assert.is_nil(results[6])
    -- and nothing is raised later from the loop for the failed task
    sandkit.run()
  end)

  it("reports progress after each item", function()
    local seen = {}
    local jobs = {}
    for i = 1, 4 do jobs[i] = function() sandkit.sleep(0.01 * i); return i end end
    jobs[5] = sb:exec_async("true")
    sandkit.all(jobs, { concurrency = 2, on_progress = function(done, total) seen[#seen + 1] = done .. "/" .. total end })
    assert.same({ "1/5", "2/5", "3/5", "4/5", "5/5" }, seen)
  end)

  it("works inside a task", function()
    local got
    sandkit.spawn(function()
      got = sandkit.all({ function() return 1 end, function() return 2 end }, { concurrency = 1 })
    end)
    sandkit.run()
    assert.same({ 1, 2 }, got)
  end)

  it("refuses bad options: a ConfigError naming the key; not a table: an ArgumentError for #2", function()
    for _, o in ipairs({ { concurrency = 0 }, { concurrency = 1.5 }, { on_progress = 1 }, { bogus = 1 } }) do
      local err = raised(function() sandkit.all({}, o) end)
      assert.is_true(errors.is(err, "ConfigError"), tostring(err))
      assert.equal(next(o), err.key)
    end
    local err = raised(function() sandkit.all({}, "x") end)
    assert.is_true(errors.is(err, "ArgumentError"), tostring(err))
    assert.truthy(tostring(err):find("bad argument #2 to 'all'", 1, true), tostring(err))
  end)
end)

-- ---- item 4: fleets ---------------------------------------------------------

describe("fleets", function()
  it("exec returns results, errors like all (no error objects among results)", function()
    local f = assert(sandkit.fleet(new(), 3))
    finally(function() f:destroy() end)
    f[2]:destroy()
    local results, errs = f:exec("echo", { "hi" })
    assert.equal("hi\n", results[1].stdout)
    assert.equal("hi\n", results[3].stdout)
    assert.is_nil(results[2])
    assert.is_true(errors.is(errs[2], "SandboxNotReadyError"), tostring(errs[2]))
    assert.is_nil(errs[1]); assert.is_nil(errs[3])
  end)

  it("map returns values, errors; each error names its clone", function()
    local f = assert(sandkit.fleet(new(), 3))
    finally(function() f:destroy() end)
    local values, errs = f:map(function(sb, i)
      if i == 2 then error("clone-two-broke") end
      return sb:exec("echo", { i }).stdout
    end)
    assert.equal("1\n", values[1])
    assert.equal("3\n", values[3])
    assert.is_nil(values[2])
    local e = errs[2]
    assert.is_true(errors.is(e), tostring(e))
    assert.equal(2, e.clone)
    assert.equal(f[2].id, e.sandbox_id)
    assert.truthy(e.message:find("fleet clone 2 (" .. f[2].id .. ")", 1, true), e.message)
    assert.truthy(tostring(e.cause):find("clone-two-broke", 1, true))
  end)

  it("a clone that cannot start is named", function()
    local f, err = sandkit.fleet(new(), 3, {
      overrides = function(i) return i == 3 and { working_directory = "/proc/no/such" } or nil end })
    assert.is_nil(f)
    assert.equal(3, err.clone)
    assert.truthy(err.message:find("fleet clone 3", 1, true), err.message)
  end)

  it("when a clone cannot start, the clones that started are destroyed", function()
    local started = {}
    local template = new { on_start = function(ctx) started[#started + 1] = ctx.sandbox end }
    local f, err = sandkit.fleet(template, 3, {
      overrides = function(i) return i == 2 and { working_directory = "/proc/no/such" } or nil end })
    assert.is_nil(f)
    assert.equal(2, err.clone)
    assert.equal(2, #started)
    for _, sb in ipairs(started) do assert.equal("destroyed", sb.status) end
  end)

  it("on_progress(done, total) for fleet, exec and map", function()
    local seen = {}
    local function track(what) return function(done, total) seen[#seen + 1] = what .. done .. "/" .. total end end
    local f = assert(sandkit.fleet(new(), 2, { on_progress = track("start") }))
    finally(function() f:destroy() end)
    f:exec("true", nil, { on_progress = track("exec") })
    f:map(function() end, { concurrency = 1, on_progress = track("map") })
    assert.same({ "start1/2", "start2/2", "exec1/2", "exec2/2", "map1/2", "map2/2" }, seen)
  end)

  it("the CLI's progress line comes from on_progress", function()
    local src = assert(io.open(ROOT .. "/lua/sandkit/cli.lua")):read("*a")
    assert.truthy(src:find("on_progress", 1, true))
  end)
end)

-- ---- item 5: spawn takes args ------------------------------------------------

describe("processes:spawn(command, args?, opts?)", function()
  local sb = new()
  teardown(function() sb:destroy() end)

  it("takes args like exec, each arriving as one argument", function()
    local h = assert(sb.processes:spawn("sleep", { "0.1" }))
    assert.equal(0, assert(h:wait()).exit_code)
    h = assert(sb.processes:spawn("printf", { "%s|", "a b", "it's", "$HOME" }))
    assert.equal("a b|it's|$HOME|", assert(h:wait()).stdout)
  end)

  it("takes options after the args, and spawn(command, opts) still works", function()
    local chunks = {}
    local h = assert(sb.processes:spawn("echo", { "x" }, { on_stdout = function(c) chunks[#chunks + 1] = c end }))
    h:wait()
    assert.equal("x\n", table.concat(chunks))
    h = assert(sb.processes:spawn("echo $V", { env = { V = "legacy" } }))
    assert.equal("legacy\n", h:wait().stdout)
  end)

  it("writes the stdin option first and keeps stdin open for send_stdin", function()
    local h = assert(sb.processes:spawn("cat", { stdin = "first|" }))
    assert.is_true(h:send_stdin("second"))
    assert.is_true(h:close_stdin())
    assert.equal("first|second", assert(h:wait()).stdout)
  end)

  it("arguments mixed into the options table get a clear error", function()
    local err = tostring(raised(function() sb.processes:spawn("sleep", { "1", timeout = 5 }) end))
    assert.truthy(err:find("arguments go in their own table", 1, true), err)
  end)
end)

-- ---- item 6: line streaming ----------------------------------------------------

describe("on_stdout_line / on_stderr_line", function()
  local sb = new()
  teardown(function() sb:destroy() end)

  it("deliver whole lines without the newline, the last partial line at exit", function()
    local out, err = {}, {}
    local r = assert(sb:exec("sh", { "-c", "printf 'a\\n\\nbb\\n'; printf 'e1\\ne2' >&2; printf 'tail'" }, {
      on_stdout_line = function(l) out[#out + 1] = l end,
      on_stderr_line = function(l) err[#err + 1] = l end,
    }))
    assert.same({ "a", "", "bb", "tail" }, out)
    assert.same({ "e1", "e2" }, err)
    assert.equal("a\n\nbb\ntail", r.stdout) -- capture is unaffected
  end)

  it("join lines split across chunks, and coexist with on_stdout", function()
    local lines, chunks = {}, {}
    -- the first half of a line, a pause, then the rest: two chunks at least
    assert(sb:exec("sh", { "-c", "printf 'par'; sleep 0.2; printf 'tial\\nnext\\n'" }, {
      on_stdout = function(c) chunks[#chunks + 1] = c end,
      on_stdout_line = function(l) lines[#lines + 1] = l end,
    }))
    assert.is_true(#chunks >= 2, "one chunk only")
    assert.equal("partial\nnext\n", table.concat(chunks))
    assert.same({ "partial", "next" }, lines)
  end)

  it("work for background processes", function()
    local lines = {}
    local h = assert(sb.processes:spawn("printf", { "1\\n2\\n3" }, { on_stdout_line = function(l) lines[#lines + 1] = l end }))
    h:wait()
    assert.same({ "1", "2", "3" }, lines)
  end)

  it("a line callback that raises cancels the command and the error comes from wait", function()
    local op = sb:exec_async("sh", { "-c", "echo a; exec sleep 30" }, { on_stdout_line = function() error("line-broke") end })
    local t0 = sandkit.now()
    local ok, err = pcall(op.wait, op)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("line-broke", 1, true))
    assert.is_true(sandkit.now() - t0 < 10000)
  end)

  it("a line without a newline is delivered in bounded pieces", function()
    local pieces, total, longest = 0, 0, 0
    assert(sb:exec("head", { "-c", tostring(3 * 1024 * 1024 + 5), "/dev/zero" }, {
      capture = false,
      on_stdout_line = function(l)
        pieces = pieces + 1
        total = total + #l
        longest = math.max(longest, #l)
      end,
    }))
    assert.equal(3 * 1024 * 1024 + 5, total)
    assert.is_true(longest <= 1024 * 1024, "a piece of " .. longest .. " bytes")
    assert.equal(4, pieces)
  end)
end)

-- ---- item 10: host loops and examples -------------------------------------------

describe("embedding", function()
  it("cqueues.poll(op) sleeps until the operation can progress, without spinning", function()
    local cqueues = require "cqueues"
    local sb = new()
    local cq = cqueues.new()
    local result, polls = nil, 0
    cq:wrap(function()
      local op = sb:exec_async("sh", { "-c", "sleep 0.3; echo polled" })
      while not op.done do
        cqueues.poll(op)
        polls = polls + 1
        sandkit.step(0)
      end
      result = op:wait()
    end)
    assert(cq:loop(20))
    assert.equal("polled\n", result.stdout)
    assert.is_true(polls < 200, "polled " .. polls .. " times: busy-waiting")
    sb:destroy()
  end)

  it("sandkit.spawn runs the function from the next turn, not at once", function()
    local ran = false
    local t = sandkit.spawn(function() ran = true; return "v" end)
    assert.is_false(ran)
    sandkit.step(0)
    assert.is_true(ran)
    assert.equal("v", t:wait())
  end)

  it("step raises a task's uncaught error, then returns false once nothing is left", function()
    sandkit.spawn(function() error("boom-from-task") end)
    local ok, err = pcall(sandkit.step, 0)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("boom-from-task", 1, true), tostring(err))
    assert.is_false(sandkit.step(0))
  end)

  it("sandkit.now() is monotonic milliseconds, current without a step", function()
    local last = sandkit.now()
    for _ = 1, 10000 do
      local t = sandkit.now()
      assert.is_true(t >= last)
      last = t
    end
    local t0 = sandkit.now()
    os.execute("sleep 0.1")
    local ms = sandkit.now() - t0
    assert.is_true(ms >= 95 and ms < 60000, tostring(ms))
  end)

  it("callbacks and completions reach Lua only from step or a wait", function()
    local dir = tmp.dir()
    local sb = new { working_directory = dir }
    assert(sb:start())
    local seen = 0
    -- the command writes only once `go` exists, so nothing can arrive during this one step
    local op = sb:exec_async("while [ ! -e go ]; do sleep 0.01; done; echo out; touch done",
      nil, { on_stdout = function() seen = seen + 1 end })
    sandkit.step(0)
    assert(io.open(dir .. "/go", "w")):close()
    local deadline = os.time() + 30
    while not io.open(dir .. "/done") do
      assert.is_true(os.time() < deadline, "the command never finished")
      os.execute("sleep 0.01")
    end
    -- the output is in the pipe, but no step ran since
    assert.equal(0, seen)
    assert.is_false(op.done)
    local r = assert(op:wait())
    assert.equal(1, seen)
    assert.is_true(op.done)
    assert.equal("out\n", r.stdout)
    sb:destroy()
  end)

  it("a finished operation polls ready at once", function()
    local sb = new()
    local op = sb:exec_async("true")
    op:wait()
    assert.equal(0, op:timeout())
    assert.equal("r", op:events())
    assert.equal(sandkit.pollfd(), op:pollfd())
    sb:destroy()
  end)

  it("examples/luv_loop.lua runs sandkit inside luv's loop", function()
    local out, code = capture(("cd %s && env %s timeout -k 5 120 %s examples/luv_loop.lua 2>&1"):format(q(ROOT), ENV, child.LUA))
    assert.equal(0, code, out)
    assert.truthy(out:find("job 3\njob 2\njob 1\n", 1, true), out)
    local ticks, cpu = out:match("ticker ran (%d+) times meanwhile; ([%d.]+) s of CPU")
    assert.truthy(ticks, out)
    assert.is_true(tonumber(ticks) >= 3, "luv's own timer was starved: " .. out)
    assert.is_true(tonumber(cpu) < 1, "spun: " .. out)
  end)

  it("examples/agent_spec.lua tests agent code with busted", function()
    local out, code = capture(("cd %s && env %s timeout -k 5 120 %s /usr/bin/busted --cpath=%s examples/agent_spec.lua 2>&1"):format(
      q(ROOT), ENV, child.LUA, q(child.BUILD .. "/?.so")))
    assert.equal(0, code, out)
    assert.truthy(out:find("4 successes / 0 failures / 0 errors", 1, true), out)
  end)
end)
