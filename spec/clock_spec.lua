-- One clock (issue 21 row 1): every timeout, sleep and deadline counts from
-- the moment of the call, whatever the host did before it. The host here
-- blocks the way an agent loop does between sandkit calls (a model call:
-- os.execute("sleep 2"), or plain Lua work), embeds sandkit in luv's loop,
-- or drives it from a frame loop that works 300 ms per frame. Before, the
-- loop's cached time stood still meanwhile: a 1,500 ms timeout after a 2 s
-- block fired at once (124 after 2 ms), sandkit.sleep(0.5) after a 1 s
-- block returned at once, 400 ms of Lua work cut a 1,000 ms timeout to
-- about 500 ms. Bounds: lower bounds on waits (a wait is never short),
-- generous upper bounds only against hangs.
local sandkit = require "sandkit"
local server = require "helpers.server"
local tmp = require "helpers.tmp"

local function now() return sandkit.now() end

-- The host busy in Lua for `s` seconds (no sandkit call meanwhile).
local function busy(s)
  local t = now() + s * 1000
  local x = 0
  while now() < t do x = x + 1 end
  return x
end

-- The host blocked in a system call for 2 s (its model call).
local function block_2s() assert(os.execute("sleep 2")) end

local FINISHES = "sleep 0.3; echo finished"

local function assert_finished(r, err)
  assert(r, tostring(err))
  assert.are.equal("finished\n", r.stdout, r.stderr)
  assert.are.equal(0, r.exit_code, r.stderr)
  assert.is_false(r.timed_out)
end

describe("one clock: LocalSandbox", function()
  local sb

  before_each(function()
    sb = sandkit.LocalSandbox { working_directory = tmp.dir() .. "/ws" }
    assert(sb:start())
    assert(sb:exec("true"))
  end)

  after_each(function()
    sb:destroy()
    tmp.cleanup()
  end)

  it("exec with a 1,500 ms timeout completes after the host blocked 2 s", function()
    block_2s()
    assert_finished(sb:exec(FINISHES, nil, { timeout = 1500 }))
  end)

  it("exec with a 1,500 ms timeout completes after 2 s of busy Lua", function()
    busy(2)
    assert_finished(sb:exec(FINISHES, nil, { timeout = 1500 }))
  end)

  it("exec_async with a 1,500 ms timeout completes after the host blocked 2 s", function()
    block_2s()
    assert_finished(sb:exec_async(FINISHES, nil, { timeout = 1500 }):wait())
  end)

  it("a command that ended while the host blocked past its deadline reports its own exit", function()
    local op = sb:exec_async(FINISHES, nil, { timeout = 1500 })
    sandkit.step(0) -- the command starts
    block_2s()      -- it ends meanwhile; nobody turns the loop
    assert_finished(op:wait())
  end)

  it("a timeout still fires, counted from the call: not shortened by the work before it", function()
    busy(0.4)
    local t0 = now()
    local r = assert(sb:exec("sleep 30", nil, { timeout = 1000 }))
    local took = now() - t0
    assert.are.equal(124, r.exit_code)
    assert.is_true(r.timed_out)
    assert.is_true(took >= 950, ("a 1,000 ms timeout fired after %.0f ms"):format(took))
    assert.is_true(took < 15000, ("took %.0f ms"):format(took))
  end)

  it("sandkit.sleep(0.5) in a task sleeps 0.5 s after the host blocked 1 s", function()
    local task = sandkit.spawn(function()
      local t0 = now()
      sandkit.sleep(0.5)
      return now() - t0
    end)
    busy(1)
    sandkit.run()
    local slept = task:wait()
    assert.is_true(slept >= 450, ("slept %.0f ms"):format(slept))
    assert.is_true(slept < 15000, ("slept %.0f ms"):format(slept))
  end)

  it("sandkit.timeout() counts from when it is asked", function()
    local task = sandkit.spawn(function() sandkit.sleep(1) end)
    sandkit.step(0) -- the task starts its sleep
    busy(0.4)
    local t = sandkit.timeout()
    -- 1 s from the sleep's start, 0.4 s of it gone: at most 0.6 s left
    assert.is_true(t ~= nil and t <= 0.65, "timeout() = " .. tostring(t))
    sandkit.run()
    task:wait()
  end)

  it("a frame loop working 300 ms per frame and stepping 0: sleeps and timeouts count from the call", function()
    local results = {}
    sandkit.spawn(function()
      local t0 = now()
      sandkit.sleep(0.5)
      results.slept = now() - t0
      results.slow = { sb:exec(FINISHES, nil, { timeout = 1500 }) }
      -- a timeout shorter than a frame, and a 2 s hitch in the frame after
      -- the call: the deadline passes while the host works, the command
      -- (an echo) has long ended by then
      results.hitch = true
      results.quick = { sb:exec("echo finished", nil, { timeout = 250 }) }
    end)
    local deadline = now() + 60000
    repeat
      if results.hitch then
        results.hitch = false
        busy(2)
      else
        busy(0.3)          -- the frame's own work
      end
      local pending = sandkit.step(0)
    until not pending or now() > deadline
    assert.is_true(results.slept and results.slept >= 450, "slept " .. tostring(results.slept))
    assert_finished(table.unpack(results.slow))
    local quick = results.quick[1]
    assert(quick, tostring(results.quick[2]))
    assert.are.equal(0, quick.exit_code, quick.stderr)
    assert.are.equal("finished\n", quick.stdout)
  end)

  it("a luv host that blocks 2 s in its own callback, then runs sandkit work", function()
    local uv = require "luv"
    local results = {}
    -- the bridge of examples/luv_loop.lua
    local poll = uv.new_poll(sandkit.pollfd())
    local timer = uv.new_timer()
    local function pump()
      if not sandkit.step(0) then
        poll:stop(); timer:stop()
        return
      end
      local t = sandkit.timeout()
      if t then timer:start(math.ceil(t * 1000), 0, pump) else timer:stop() end
    end
    poll:start("r", pump)
    -- the host's own work: a callback that blocks 2 s, then asks for sandkit work
    local host = uv.new_timer()
    host:start(10, 0, function()
      block_2s()
      sandkit.spawn(function()
        results.exec = { sb:exec(FINISHES, nil, { timeout = 1500 }) }
        local t0 = now()
        sandkit.sleep(0.5)
        results.slept = now() - t0
      end)
      timer:start(0, 0, pump)
    end)
    local guard = uv.new_timer()
    guard:start(60000, 0, function() uv.stop() end)
    guard:unref()
    uv.run()
    for _, h in ipairs { poll, timer, host, guard } do
      if not h:is_closing() then h:close() end
    end
    uv.run() -- the closes
    assert(results.exec, "the luv loop ended before the sandkit work")
    assert_finished(table.unpack(results.exec))
    assert.is_true(results.slept and results.slept >= 450, "slept " .. tostring(results.slept))
  end)
end)

-- The same checks against a remote provider's reference server: `start`
-- returns the server, `new(srv)` a sandbox on it; each case gets it started,
-- with one command run. `more(it_)` adds the provider's own cases.
local function against_server(title, start, new, more)
  describe(title, function()
    local ctx = {}
    local skip = server.node_missing()

    setup(function()
      if not skip then ctx.srv = start() end
    end)

    teardown(function()
      if ctx.srv then ctx.srv:stop() end
    end)

    before_each(function()
      if skip then return end
      ctx.sb = new(ctx.srv)
      assert(ctx.sb:start())
      assert(ctx.sb:exec("true"))
    end)

    after_each(function()
      if ctx.sb then ctx.sb:destroy() end
    end)

    local function it_(name, fn)
      it(name, function()
        if skip then return pending(skip) end
        fn(ctx.sb, ctx.srv)
      end)
    end

    it_("exec with a 1,500 ms timeout completes after the host blocked 2 s", function(sb)
      block_2s()
      assert_finished(sb:exec(FINISHES, nil, { timeout = 1500 }))
    end)

    it_("exec_async with a 1,500 ms timeout completes after the host blocked 2 s", function(sb)
      block_2s()
      assert_finished(sb:exec_async(FINISHES, nil, { timeout = 1500 }):wait())
    end)

    if more then more(it_) end
  end)
end

against_server("one clock: PlatformSandbox (reference server)",
  function() return server.start("spec/servers/platform/server.mjs", { "--quiet" }) end,
  function(srv)
    return sandkit.PlatformSandbox { access_token = "test-token", project_id = "proj_123",
      environment_id = "env_123", base_url = srv.url, request_timeout_ms = 1500 }
  end,
  function(it_)
    it_("a command that ended while the host blocked past its deadline reports its own exit", function(sb)
      -- until the command runs (its socket is open): then the host blocks
      local deadline = now() + 30000
      local started = false
      local op = sb:exec_async("echo up; " .. FINISHES, nil, { timeout = 1500,
        on_stdout = function() started = true end })
      while not started and now() < deadline do sandkit.step(0.01) end
      assert.is_true(started)
      block_2s()
      local r = assert(op:wait())
      assert.are.equal("up\nfinished\n", r.stdout)
      assert.are.equal(0, r.exit_code)
    end)

    it_("a control-plane call with request_timeout_ms = 1,500 answered in 300 ms succeeds after a 2 s block",
      function(sb, srv)
        assert.is_nil(srv:faults({ http = { { route = "get", delay_ms = 300 } } }).error)
        block_2s()
        local info = assert(sb:info()) -- GET /sandbox/{id}, delayed 300 ms
        assert.are.equal("running", info.status)
      end)
  end)

against_server("one clock: ModalSandbox (reference server)",
  function()
    return server.start("spec/servers/modal/server.mjs", { "--port", "0" },
      { MODAL_CONFIG_PATH = "/nonexistent/sandkit-modal.toml" })
  end,
  function(srv) return sandkit.ModalSandbox { server_url = srv.url, token_id = "ak-test", token_secret = "as-test" } end)
