-- The Lua API contract (docs/api.md §"Conventions"): errors, options, lifecycle hooks,
-- clone/info/instructions, operations, tasks, fleets, host loops.
local sandkit = require "sandkit"
local errors = sandkit.errors
local tmp = require "helpers.tmp"

local function new(opts)
  opts = opts or {}
  opts.working_directory = opts.working_directory or tmp.dir()
  return sandkit.LocalSandbox(opts)
end

local function raises_kind(kind, fn)
  local ok, err = pcall(fn)
  assert.is_false(ok)
  assert.is_true(errors.is(err, kind), "expected " .. kind .. ", got " .. tostring(err))
  return err
end

teardown(tmp.cleanup)

describe("options", function()
  it("refuses an unknown key with a ConfigError naming key and provider", function()
    local err = raises_kind("ConfigError", function() sandkit.LocalSandbox { wrking_directory = "x" } end)
    assert.equal("wrking_directory", err.key)
    assert.equal("local", err.provider)
    assert.truthy(err.message:find("wrking_directory", 1, true))
    assert.truthy(err.message:find("LocalSandbox", 1, true))
  end)

  it("refuses a wrong type naming the key", function()
    local err = raises_kind("ConfigError", function() sandkit.LocalSandbox { timeout = "soon" } end)
    assert.equal("timeout", err.key)
    assert.truthy(tostring(err):find("^ConfigError: LocalSandbox option 'timeout' must be a whole number of milliseconds"))
  end)

  it("refuses values outside an enum", function()
    local err = raises_kind("ConfigError", function() sandkit.LocalSandbox { isolation = "docker" } end)
    assert.truthy(err.message:find('"none", "bwrap"', 1, true))
  end)

  it("refuses env names with '=' or NUL and never shows env values", function()
    local err = raises_kind("ConfigError", function() sandkit.LocalSandbox { env = { ["A=B"] = "secret-value-1" } } end)
    assert.falsy(tostring(err):find("secret-value-1", 1, true))
    err = raises_kind("ConfigError", function() sandkit.LocalSandbox { env = { A = "x\0y" } } end)
    assert.falsy(tostring(err):find("x\0y", 1, true))
    raises_kind("ConfigError", function() sandkit.LocalSandbox { env = { A = {} } } end)
  end)

  it("refuses a non-table options argument", function()
    assert.has_error(function() sandkit.LocalSandbox("x") end)
  end)

  it("new() takes provider ids and refuses unknown ones", function()
    local sb = sandkit.new("local", { working_directory = tmp.dir() })
    assert.equal("local", sb.provider)
    raises_kind("ConfigError", function() sandkit.new("nope", {}) end)
  end)

  it("lists provider descriptors", function()
    local found
    for _, d in ipairs(sandkit.providers()) do if d.id == "local" then found = d end end
    assert.truthy(found)
    assert.equal("LocalSandbox", found.name)
    assert.equal("string", found.options.working_directory.type)
    assert.equal("none", found.options.isolation.default)
    assert.truthy(found.options.env.description)
  end)

  it("lists each provider's capabilities, filesystem backend and environment fallbacks, as copies", function()
    local by = {}
    for _, d in ipairs(sandkit.providers()) do by[d.id] = d end
    assert.equal("own", by["local"].filesystem)
    assert.equal("own", by.modal.filesystem)
    assert.equal("exec", by.platform.filesystem)
    assert.equal("exec", by["apple-container"].filesystem)
    assert.equal("own", by.docker.filesystem)
    for _, d in pairs(by) do
      assert.is_true(d.capabilities.stdin, d.id)
      assert.is_false(d.capabilities.mounting, d.id)
    end
    assert.equal("MASTRA_PLATFORM_ACCESS_TOKEN", by.platform.options.access_token.env)
    assert.equal("MODAL_SERVER_URL", by.modal.options.server_url.env)
    assert.is_nil(by["local"].options.isolation.env)
    -- what a caller does to the lists changes no descriptor
    by.platform.options.retry_delays_ms.default[1] = 1
    by["local"].capabilities.stdin = false
    for _, d in ipairs(sandkit.providers()) do
      if d.id == "platform" then assert.equal(2000, d.options.retry_delays_ms.default[1]) end
      if d.id == "local" then assert.is_true(d.capabilities.stdin) end
    end
  end)
end)

describe("misuse raises", function()
  local sb = new()

  it("on a NUL byte in an argument", function()
    assert.has_error(function() sb:exec("echo", { "a\0b" }) end)
    assert.has_error(function() sb:exec("echo\0") end)
  end)

  it("on wrong argument types", function()
    assert.has_error(function() sb:exec(42) end)
    assert.has_error(function() sb:exec("echo", "notatable") end)
    -- options passed where the arguments go are refused, not ignored
    assert.has_error(function() sb:exec("sleep 5", { timeout = 10 }) end, nil)
    local ok, err = pcall(sb.exec, sb, "sleep 5", { timeout = 10 })
    assert.truthy(tostring(err):find("options go in argument #3", 1, true))
    assert.has_error(function() sb:exec("echo", { "a", nil, "c" }) end)
    assert.has_error(function() sb:exec("echo", nil, { timeout = "x" }) end)
    assert.has_error(function() sb:exec("echo", nil, { bogus = 1 }) end)
    assert.has_error(function() sb:exec("echo", nil, { env = { ["A=B"] = "x" } }) end)
    assert.has_error(function() sb:exec("echo", nil, { timeout = -1 }) end)
    assert.has_error(function() sb.processes:spawn(nil) end)
  end)

  it("on writes to read-only fields", function()
    assert.has_error(function() sb.status = "running" end)
  end)

  it("names the class in type errors", function()
    local ok, err = pcall(sandkit.new("local", { working_directory = tmp.dir() }).exec, nil, "echo")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("sandkit.Sandbox expected", 1, true))
  end)
end)

describe("the core's primitives", function()
  local SANDBOX_PRIMS = { "start", "stop", "destroy", "spawn", "state", "mark_error", "info", "refresh",
    "default_instructions", "get", "list" }
  local PROCESS_PRIMS = { "result", "kill", "cancel", "write", "close_stdin", "untrack", "state", "set_stream",
    "sandbox" }

  it("are not reachable through a sandbox or a process", function()
    local sb = new()
    assert(sb:start())
    local h = assert(sb.processes:spawn("sleep 5"))
    for _, name in ipairs(SANDBOX_PRIMS) do
      assert.is_nil(sb["_" .. name], "sb._" .. name)
    end
    for _, name in ipairs(PROCESS_PRIMS) do
      assert.is_nil(h["_" .. name], "proc._" .. name)
    end
    assert.is_nil(sb._spawn)
    assert.is_nil(sb._state)
    assert.is_nil(sb._mark_error)
    -- nor through the method tables the classes share
    for k in pairs(require("sandkit.core").sandbox_methods) do
      assert.is_nil(k:match("^_"), "sandbox method " .. k)
    end
    for k in pairs(require("sandkit.core").process_methods) do
      assert.is_nil(k:match("^_"), "process method " .. k)
    end
    h:kill()
    h:wait()
    assert(sb:destroy())
  end)

  it("are handed out once, to sandkit.sandbox", function()
    local ok, err = pcall(require("sandkit.core").primitives)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("already taken", 1, true))
  end)

  -- Reloading sandkit's Lua modules but keeping the core would hand the
  -- primitives out twice: refused with a message saying what to clear,
  -- before anything (the scheduler's dispatch) is taken from the live module.
  local function reload_lua_modules()
    local saved = {}
    for k, v in pairs(package.loaded) do
      if k:match("^sandkit") and k ~= "sandkit.core" then saved[k], package.loaded[k] = v, nil end
    end
    local ok, again = pcall(require, "sandkit")
    for k, v in pairs(saved) do package.loaded[k] = v end
    return ok, again
  end

  it("refuse a reload of the Lua modules alone, leaving the loaded sandkit working", function()
    local ok, err = reload_lua_modules()
    assert.is_false(ok)
    assert.truthy(tostring(err):find("already taken", 1, true))
    assert.truthy(tostring(err):find("sandkit.core", 1, true))
    local sb = new()
    assert.equal("still\n", assert(sb:exec("echo", { "still" })).stdout)
    assert(sb:destroy())
  end)

  -- in a child: a reload leaves the first module's scheduler without events
  it("are handed out again when the core is reloaded too", function()
    local child, sh = require "helpers.child", require "helpers.sh"
    local script = child.script("reload.lua", [[
      local first = require "sandkit"
      for k in pairs(package.loaded) do if k:match("^sandkit") then package.loaded[k] = nil end end
      local again = require "sandkit"
      assert(first ~= again)
      local sb = again.LocalSandbox { working_directory = arg[1] }
      io.write(assert(sb:exec("echo", { "reloaded" })).stdout)
      assert(sb:destroy())
    ]])
    local code, out = sh.run(("env %s %s %s %s"):format(child.LUA_ENV, child.LUA, sh.quote(script), sh.quote(tmp.dir())))
    assert.equal(0, code, out)
    assert.equal("reloaded\n", out)
  end)

  -- A host that reloads modules opened the core a second time: that open
  -- gave the Sandbox and Process classes fresh, empty method tables, which
  -- sandkit.sandbox (still loaded) never fills: every live sandbox lost its
  -- methods (sb.exec was nil).
  it("a second load of sandkit.core keeps the methods of live sandboxes", function()
    local sb = new()
    local core = package.loaded["sandkit.core"]
    package.loaded["sandkit.core"] = nil
    local again = require("sandkit.core")
    package.loaded["sandkit.core"] = core
    assert.equal(core.sandbox_methods, again.sandbox_methods)
    assert.equal(core.process_methods, again.process_methods)
    assert.equal("function", type(sb.exec))
    local r = assert(sb:exec("echo", { "still" }))
    assert.equal("still\n", r.stdout)
    assert(sb:destroy())
  end)
end)

describe("lifecycle", function()
  it("exec on a stopped sandbox starts it first", function()
    local sb = new()
    assert.equal("pending", sb.status)
    local r = assert(sb:exec("echo", { "auto" }))
    assert.equal("auto\n", r.stdout)
    assert.equal("running", sb.status)
    sb:destroy()
  end)

  it("a destroyed sandbox refuses start and exec with SandboxNotReadyError", function()
    local sb = new()
    assert(sb:start())
    assert(sb:destroy())
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.is_true(errors.is(err, "SandboxNotReadyError"))
    local r, err2 = sb:exec("true")
    assert.is_nil(r)
    assert.is_true(errors.is(err2, "SandboxNotReadyError"))
    local ok3, err3 = sb:ensure_running()
    assert.is_nil(ok3)
    assert.is_true(errors.is(err3, "SandboxNotReadyError"))
  end)

  it("runs hooks in order, on_start after running, on_stop/on_destroy before", function()
    local seen = {}
    local sb = new {
      on_start = function(ctx) seen[#seen + 1] = "start:" .. ctx.sandbox.status end,
      on_stop = function(ctx) seen[#seen + 1] = "stop:" .. ctx.sandbox.status end,
      on_destroy = function(ctx) seen[#seen + 1] = "destroy:" .. ctx.sandbox.status end,
    }
    assert(sb:start())
    assert(sb:stop())
    assert(sb:start())
    assert(sb:destroy())
    assert.same({ "start:running", "stop:running", "start:running", "destroy:running" }, seen)
  end)

  it("a failing on_start fails the start, sets status error, and is retried", function()
    local calls = 0
    local sb = new { on_start = function() calls = calls + 1; if calls == 1 then error("boom") end end }
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.truthy(err.message:find("on_start hook failed: .*boom"))
    assert.equal("error", sb.status)
    assert(sb:start())
    assert.equal("running", sb.status)
    assert.equal(2, calls)
    sb:destroy()
  end)

  it("concurrent starts share one attempt (the hook runs once)", function()
    local calls = 0
    local sb = new { on_start = function() calls = calls + 1 end }
    local tasks = {}
    for i = 1, 5 do tasks[i] = sandkit.spawn(function() return sb:start() end) end
    for i = 1, 5 do assert.is_true(tasks[i]:wait()) end
    assert.equal(1, calls)
    sb:destroy()
  end)

  it("a dropped sandbox kills its processes when collected", function()
    local procs = require "helpers.procs"
    local m = procs.sleep_marker(31)
    do
      local sb = new()
      assert(sb.processes:spawn("exec " .. m))
      assert.is_true(procs.wait_for(function() return #procs.pids_matching(m) == 1 end), "the process never ran")
    end
    local ok = procs.gone_collecting(m)
    procs.kill_matching(m)
    assert.is_true(ok, "the dropped sandbox's process survived collection")
  end)
end)

describe("clone, info, instructions", function()
  it("clone keeps options, takes a fresh id, applies overrides, does no I/O", function()
    local dir = tmp.dir()
    local sb = new { working_directory = dir, env = { A = "1" } }
    local c = sb:clone()
    assert.not_equal(sb.id, c.id)
    assert.equal("pending", c.status)
    assert.equal(dir, c:info().metadata.working_directory)
    local c2 = sb:clone { id = "fixed-id", env = { A = "2" } }
    assert.equal("fixed-id", c2.id)
    assert.equal("2\n", assert(c2:exec("sh", { "-c", "echo $A" })).stdout)
    assert.equal("1\n", assert(c:exec("sh", { "-c", "echo $A" })).stdout)
    c2:destroy()
    c:destroy()
  end)

  it("info has id, name, provider, status, created_at, metadata", function()
    local sb = new { id = "info-test" }
    local i = sb:info()
    assert.equal("info-test", i.id)
    assert.equal("LocalSandbox", i.name)
    assert.equal("local", i.provider)
    assert.equal("pending", i.status)
    assert.truthy(i.created_at:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ$"))
    assert.equal("none", i.metadata.isolation)
  end)

  it("instructions: default, string, or function of the default and context", function()
    local dir = tmp.dir()
    assert.truthy(new({ working_directory = dir }):instructions():find(dir, 1, true))
    assert.equal("custom", new({ instructions = "custom" }):instructions())
    local got
    local sb = new { instructions = function(o) got = o; return "fn:" .. o.request_context.user end }
    assert.equal("fn:ada", sb:instructions({ user = "ada" }))
    assert.truthy(got.default_instructions:find("Local command execution", 1, true))
  end)

  it("tostring names the class, the provider and the id", function()
    local sb = new { id = "ts-id" }
    assert.truthy(tostring(sb):find("^sandkit.Sandbox %(local ts%-id, pending%)"))
  end)
end)

describe("operations and tasks", function()
  local sb = new()
  setup(function() assert(sb:start()) end)
  teardown(function() sb:destroy() end)

  it("exec_async runs concurrently and all() collects results in order", function()
    local ops = {}
    for i = 1, 20 do ops[i] = sb:exec_async("sh", { "-c", "sleep 0.2; echo " .. i }) end
    local t0 = require("sandkit.core").now()
    local results, errs = sandkit.all(ops)
    local elapsed = require("sandkit.core").now() - t0
    assert.same({}, errs)
    for i = 1, 20 do assert.equal(i .. "\n", results[i].stdout) end
    assert.is_true(elapsed < 4000, "20 concurrent 0.2 s commands took " .. elapsed .. " ms")
    assert.is_true(ops[1].done)
  end)

  it("sandkit.pcall: a task waits inside it (in Lua 5.1 too); what f raises comes back as from pcall", function()
    local order = {}
    local t = sandkit.spawn(function()
      local ok, r = sandkit.pcall(function() return sb:exec("echo in-pcall") end)
      order[#order + 1] = "waited"
      local ok2, e = sandkit.pcall(function()
        -- nested, and an error object raised after a wait keeps its kind
        local inner_ok, inner = sandkit.pcall(sb.exec, sb, "echo nested")
        assert(inner_ok and inner.stdout == "nested\n")
        sb:exec("true")
        errors.misuse(errors.new("ConfigError", "after the wait"))
      end)
      return ok, r.stdout, ok2, e
    end)
    -- runs while the first task waits inside sandkit.pcall
    sandkit.spawn(function() order[#order + 1] = "other task" end)
    local ok, out, ok2, e = t:wait()
    assert.is_true(ok)
    assert.equal("in-pcall\n", out)
    assert.is_false(ok2)
    assert.is_true(errors.is(e, "ConfigError"), tostring(e))
    assert.same({ "other task", "waited" }, order)
    assert.same({ true, 1, 2 }, { sandkit.pcall(function(a, b) return a, b end, 1, 2) })
  end)

  it("an op's fields settle: done, result", function()
    local op = sb:exec_async("echo", { "x" })
    assert.is_false(op.done)
    op:wait()
    assert.is_true(op.done)
    assert.equal("x\n", op.result.stdout)
    assert.is_false(op:cancel())
  end)

  it("a callback error cancels the command and is raised by wait", function()
    local op = sb:exec_async("sh", { "-c", "echo a; exec sleep 30" }, { on_stdout = function() error("cb-broke") end })
    local ok, err = pcall(op.wait, op)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cb-broke", 1, true))
  end)

  it("tasks yield instead of blocking, and run() waits for all of them", function()
    local order = {}
    sandkit.spawn(function() sb:exec("sleep", { "0.3" }); order[#order + 1] = "slow" end)
    sandkit.spawn(function() sb:exec("true"); order[#order + 1] = "fast" end)
    sandkit.run()
    assert.same({ "fast", "slow" }, order)
  end)

  it("a task's error is raised from run()", function()
    sandkit.spawn(function() error("task-broke") end)
    local ok, err = pcall(sandkit.run)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("task-broke", 1, true))
  end)

  it("a blocking wait returns as soon as a task completes it, while other work keeps the loop busy", function()
    local slept = false
    local sleeper = sandkit.spawn(function() sandkit.sleep(2); slept = true end)
    local t = sandkit.spawn(function() return 42 end)
    assert.equal(42, t:wait())
    assert.is_false(slept, "waited for an unrelated timer")
    sleeper:wait()
  end)

  it("task:wait() returns the function's values", function()
    local t = sandkit.spawn(function(a, b) return a + b, "x" end, 2, 3)
    local v, x = t:wait()
    assert.equal(5, v)
    assert.equal("x", x)
  end)

  it("sleep yields in tasks and blocks outside", function()
    local core = require "sandkit.core"
    local t0 = core.now()
    sandkit.sleep(0.05)
    assert.is_true(core.now() - t0 >= 45)
    local woke = {}
    for i = 3, 1, -1 do sandkit.spawn(function() sandkit.sleep(i * 0.03); woke[#woke + 1] = i end) end
    sandkit.run()
    assert.same({ 1, 2, 3 }, woke)
  end)

  it("stdin is written and closed", function()
    assert.equal("piped", assert(sb:exec("cat", nil, { stdin = "piped" })).stdout)
  end)

  it("capture = false keeps output out of the result but streams it", function()
    local n = 0
    local r = assert(sb:exec("head", { "-c", "100000", "/dev/zero" },
      { capture = false, on_stdout = function(c) n = n + #c end }))
    assert.equal("", r.stdout)
    assert.equal(100000, n)
  end)
end)

describe("fleet", function()
  it("starts n clones, runs a command on all, maps with bounded concurrency, destroys", function()
    local f = assert(sandkit.fleet(new(), 4))
    assert.equal(4, #f)
    local ids = {}
    for i = 1, 4 do ids[f[i].id] = true; assert.equal("running", f[i].status) end
    local results = f:exec("sh", { "-c", "echo $$" })
    for i = 1, 4 do assert.equal(0, results[i].exit_code) end
    local active, peak = 0, 0
    local values = f:map(function(sb, i)
      active = active + 1
      peak = math.max(peak, active)
      local r = sb:exec("sh", { "-c", "sleep 0.05; echo " .. i })
      active = active - 1
      return r.stdout
    end, { concurrency = 2 })
    assert.equal(2, peak)
    for i = 1, 4 do assert.equal(i .. "\n", values[i]) end
    f:destroy()
    for i = 1, 4 do assert.equal("destroyed", f[i].status) end
    local n = 0
    for _ in pairs(ids) do n = n + 1 end
    assert.equal(4, n)
  end)

  it("returns nil, err when a clone cannot start", function()
    local f, err = sandkit.fleet(sandkit.LocalSandbox { working_directory = "/proc/no/such" }, 2)
    assert.is_nil(f)
    assert.truthy(err)
  end)
end)

describe("host loops", function()
  it("a plain while loop calling step(0) drives tasks to completion", function()
    local sb = new()
    local out
    sandkit.spawn(function() out = assert(sb:exec("echo", { "from-host-loop" })).stdout end)
    local turns = 0
    while not out and turns < 1e6 do
      sandkit.step(0)
      turns = turns + 1
    end
    assert.equal("from-host-loop\n", out)
    sb:destroy()
  end)

  it("a cqueues controller polls sandkit's descriptor and steps it", function()
    local cqueues = require "cqueues"
    local sb = new()
    local outputs = {}
    for i = 1, 5 do
      sandkit.spawn(function() outputs[i] = assert(sb:exec("sh", { "-c", "sleep 0.1; echo " .. i })).stdout end)
    end
    local cq = cqueues.new()
    local polls = 0
    cq:wrap(function()
      while sandkit.step(0) do
        -- sandkit follows the cqueues pollable protocol: pollfd/events/timeout
        cqueues.poll(sandkit)
        polls = polls + 1
      end
    end)
    assert(cq:loop(10))
    for i = 1, 5 do assert.equal(i .. "\n", outputs[i]) end
    assert.is_true(polls < 1000, "polled " .. polls .. " times: busy-waiting")
    sb:destroy()
  end)

  it("timeout() is 0 with work ready, nil or positive when idle", function()
    local t = sandkit.timeout()
    assert.truthy(t == nil or t >= 0)
    assert.equal("number", type(sandkit.pollfd()))
    assert.equal("r", sandkit.events())
  end)
end)
