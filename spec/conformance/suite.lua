--- The cross-provider conformance suite (docs/protocols/conformance.md §1),
-- ported to busted. Returns a function taking a config:
--   name                      describe title
--   create_sandbox(opts?)     an unstarted sandbox; opts.env = sandbox env
--   create_invalid_sandbox()  optional: one whose start must fail
--   cleanup(sb)               optional: teardown (default sb:destroy())
--   kill_externally(sb)       optional: kills the provider-side sandbox
--   provider                  its id: the capabilities its descriptor declares apply
--   capabilities              flags overriding those (supports_stdin = false, ...)
--   domains                   { command_execution, lifecycle, reconnection,
--                               process_management } (false disables)
--   fast_only                 skip cases that create extra sandboxes
-- and the spec's _ENV as the second argument (nil before 5.2: see below).
-- Upstream's `node -e` cases use the POSIX sh equivalents (docs/protocols/conformance.md §1.1); abort
-- signals map to op:cancel(); reader/writer streams to on_stdout and
-- send_stdin.
local sandkit = require "sandkit"

-- The capabilities a provider's descriptor declares (sandkit.providers()),
-- as supports_<name> flags.
local function declared(id)
  for _, p in ipairs(sandkit.providers()) do
    if p.id == id then
      local caps = {}
      for k, v in pairs(p.capabilities) do caps["supports_" .. k] = v end
      return caps
    end
  end
  error("conformance suite: no provider '" .. tostring(id) .. "'", 2)
end

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

local function now_ms() return require("sandkit.core").now() end

local function lines(s)
  local out = {}
  for l in trim(s):gmatch("[^\n]+") do out[#out + 1] = l end
  return out
end

-- `env` is the calling spec's environment (busted's describe/it/... live
-- there, not in the globals a required module sees): its _ENV, which Lua
-- 5.1 and LuaJIT do not have (nil there: the caller's function environment).
return function(config, env)
  env = env or getfenv(2)
  local describe, it, pending, setup, teardown, assert =
    env.describe, env.it, env.pending, env.setup, env.teardown, env.assert
  local caps = declared(config.provider)
  for k, v in pairs(config.capabilities or {}) do caps[k] = v end
  local domains = config.domains or {}
  local function on(d) return domains[d] ~= false end

  -- `it` when the condition holds, else a pending (skipped) case.
  local function it_if(cond, name, fn)
    if cond then it(name, fn) else pending(name) end
  end

  describe(config.name, function()
    local sandbox

    setup(function()
      sandbox = config.create_sandbox()
      assert(sandbox:start())
    end)

    teardown(function()
      if not sandbox then return end
      if config.cleanup then config.cleanup(sandbox) else sandbox:destroy() end
    end)

    local function exec(cmd, args, opts)
      local r, err = sandbox:exec(cmd, args, opts)
      assert(r, tostring(err))
      return r
    end

    local function fresh(opts)
      local sb = config.create_sandbox(opts)
      assert(sb:start())
      return sb
    end

    if on("command_execution") then
      describe("Command Execution", function()
        it("executes a simple command", function()
          local r = exec("echo", { "hello" })
          assert.equal(0, r.exit_code)
          assert.is_true(r.success)
          assert.equal("hello", trim(r.stdout))
        end)

        it("captures stdout", function()
          assert.truthy(exec("echo", { "stdout test" }).stdout:find("stdout test", 1, true))
        end)

        it("captures stderr", function()
          assert.truthy(exec("sh", { "-c", 'echo "error message" >&2' }).stderr:find("error message", 1, true))
        end)

        it("returns non-zero exit code for failing command", function()
          local r = exec("sh", { "-c", "exit 1" })
          assert.equal(1, r.exit_code)
          assert.is_false(r.success)
        end)

        it("handles commands with arguments", function()
          assert.equal("arg1 arg2 arg3", trim(exec("echo", { "arg1", "arg2", "arg3" }).stdout))
        end)

        it("handles commands with special characters in arguments", function()
          assert.equal("hello world test", trim(exec("echo", { "hello world", "test" }).stdout))
        end)

        it_if(caps.supports_env_vars, "passes environment variables to command", function()
          local r = exec("sh", { "-c", "echo $TEST_VAR" }, { env = { TEST_VAR = "test_value" } })
          assert.equal("test_value", trim(r.stdout))
        end)

        it_if(caps.supports_env_vars, "handles multiple environment variables", function()
          local r = exec("sh", { "-c", 'echo "$VAR1 $VAR2"' }, { env = { VAR1 = "first", VAR2 = "second" } })
          assert.equal("first second", trim(r.stdout))
        end)

        it_if(caps.supports_env_vars, "handles env values with special characters", function()
          local r = exec("printenv", { "SPECIAL" }, { env = { SPECIAL = 'has spaces & "quotes"' } })
          assert.equal(0, r.exit_code)
          assert.truthy(r.stdout:find("has spaces", 1, true))
        end)

        it_if(caps.supports_working_directory, "executes command in specified working directory", function()
          local out = trim(exec("pwd", nil, { cwd = "/tmp" }).stdout)
          assert.truthy(out == "/tmp" or out == "/private/tmp", out)
        end)

        it_if(caps.supports_timeout, "times out long-running commands", function()
          local r = exec("sleep", { "10" }, { timeout = 100 })
          assert.not_equal(0, r.exit_code)
        end)

        it_if(caps.supports_timeout and caps.supports_streaming,
          "times out long-running commands with streaming callbacks", function()
          local chunks = {}
          local r = exec("sh", { "-c", 'for i in $(seq 1 100); do echo "line $i"; sleep 0.5; done' },
            { timeout = 2000, on_stdout = function(c) chunks[#chunks + 1] = c end })
          assert.is_false(r.success)
          assert.is_true(#chunks >= 1)
        end)

        -- sandkit's own: a timeout's note ("Process timed out after <ms>ms")
        -- belongs to the result (stderr, timed_out), never to the output
        -- callbacks, as if the command had printed it
        it_if(caps.supports_timeout and caps.supports_streaming,
          "a timeout's note reaches no output callback: they carry only what the command printed", function()
          local got = { out = {}, err = {}, out_lines = {}, err_lines = {} }
          local function add(list) return function(v) list[#list + 1] = v end end
          local r = exec("sh", { "-c", "echo out; echo err >&2; exec sleep 30" }, { timeout = 1500,
            on_stdout = add(got.out), on_stderr = add(got.err),
            on_stdout_line = add(got.out_lines), on_stderr_line = add(got.err_lines) })
          assert.is_true(r.timed_out)
          assert.equal(124, r.exit_code)
          -- the result's stderr less the note (local, modal); the Apple
          -- provider trims the newlines around it, as upstream does
          local function bare(text) return (text:gsub("^\n+", ""):gsub("\n+$", "")) end
          local printed = bare((r.stderr:gsub("\nProcess timed out after %d+ms$", "")))
          local function lines(text)
            local out = {}
            for l in (text .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = l end
            return text == "" and {} or out
          end
          assert.equal(r.stdout, table.concat(got.out))
          assert.equal(printed, bare(table.concat(got.err)))
          assert.same(lines(bare(r.stdout)), got.out_lines)
          assert.same(lines(printed), got.err_lines)
        end)

        it_if(caps.supports_timeout, "fast command completes within timeout", function()
          local r = exec("echo", { "fast" }, { timeout = 10000 })
          assert.equal(0, r.exit_code)
          assert.truthy(r.stdout:find("fast", 1, true))
        end)

        it("aborts a running command when signal fires", function()
          local op
          op = sandbox:exec_async("sh", { "-c", "echo started; exec sleep 30" },
            { on_stdout = function() op:cancel() end })
          local r = assert(op:wait())
          assert.is_false(r.success)
          assert.is_true(r.execution_time_ms < 5000)
          -- README, "Background processes": killed = true and 137 whatever the provider
          assert.is_true(r.cancelled)
          assert.is_true(r.killed)
          assert.equal(137, r.exit_code)
        end)

        it("aborts immediately when signal is already aborted", function()
          local t0 = now_ms()
          local op = sandbox:exec_async("sleep", { "10" })
          op:cancel()
          local r = assert(op:wait())
          assert.is_false(r.success)
          assert.is_true(now_ms() - t0 < 5000) -- anti-hang bound, generous for a loaded machine
        end)

        it("captures partial output before abort", function()
          local op
          op = sandbox:exec_async("sh", { "-c", 'echo "before abort"; exec sleep 30' },
            { on_stdout = function() op:cancel() end })
          local r = assert(op:wait())
          assert.is_false(r.success)
          assert.truthy(r.stdout:find("before abort", 1, true))
          assert.is_true(r.execution_time_ms < 5000)
        end)

        it("executes a shell pipeline", function()
          local r = exec("sh", { "-c", 'echo "cherry banana apple" | tr " " "\\n" | sort | head -1' })
          assert.equal(0, r.exit_code)
          assert.equal("apple", trim(r.stdout))
        end)

        it("executes a heredoc", function()
          local r = exec("sh", { "-c", "cat > /tmp/heredoc-test.txt << 'EOF'\nline one\nline two\nEOF\ncat /tmp/heredoc-test.txt" })
          assert.equal(0, r.exit_code)
          assert.truthy(r.stdout:find("line one", 1, true))
          assert.truthy(r.stdout:find("line two", 1, true))
        end)

        it("preserves custom exit codes", function()
          local r = exec("sh", { "-c", "exit 42" })
          assert.equal(42, r.exit_code)
          assert.is_false(r.success)
        end)

        it("captures both stdout and stderr from same command", function()
          local r = exec("sh", { "-c", 'echo "out" && echo "err" >&2' })
          assert.equal(0, r.exit_code)
          assert.truthy(r.stdout:find("out", 1, true))
          assert.truthy(r.stderr:find("err", 1, true))
        end)

        it("can write and read back a file", function()
          local token = "roundtrip-" .. math.floor(now_ms())
          local w = exec("sh", { "-c", 'echo "' .. token .. '" > /tmp/roundtrip-test.txt' })
          assert.equal(0, w.exit_code)
          local r = exec("cat", { "/tmp/roundtrip-test.txt" })
          assert.equal(0, r.exit_code)
          assert.truthy(r.stdout:find(token, 1, true))
        end)

        it("handles large output (5000 lines)", function()
          local r = exec("sh", { "-c", "seq 1 5000" })
          assert.equal(0, r.exit_code)
          local l = lines(r.stdout)
          assert.equal(5000, #l)
          assert.equal("1", l[1])
          assert.equal("5000", l[5000])
        end)

        it_if(caps.supports_streaming, "streams stdout chunks via callback", function()
          local chunks = {}
          local r = exec("sh", { "-c", 'for i in 1 2 3; do echo "chunk $i"; sleep 0.3; done' },
            { on_stdout = function(c) chunks[#chunks + 1] = c end })
          assert.equal(0, r.exit_code)
          assert.truthy(r.stdout:find("chunk 3", 1, true))
          assert.is_true(#chunks >= 1)
        end)

        it_if(caps.supports_streaming, "streams stderr chunks via callback", function()
          local chunks = {}
          local r = exec("sh", { "-c", 'echo "err1" >&2; sleep 0.2; echo "err2" >&2' },
            { on_stderr = function(c) chunks[#chunks + 1] = c end })
          assert.equal(0, r.exit_code)
          assert.is_true(#chunks >= 1)
          assert.truthy(r.stderr:find("err", 1, true))
        end)

        it_if(caps.supports_env_vars and not config.fast_only,
          "per-command env overrides sandbox-level env", function()
          local sb = fresh({ env = { MY_VAR = "initial" } })
          local a = assert(sb:exec("sh", { "-c", "echo $MY_VAR" }))
          local b = assert(sb:exec("sh", { "-c", "echo $MY_VAR" }, { env = { MY_VAR = "changed" } }))
          local c = assert(sb:exec("sh", { "-c", "echo $MY_VAR" }))
          sb:destroy()
          assert.equal("initial", trim(a.stdout))
          assert.equal("changed", trim(b.stdout))
          assert.equal("initial", trim(c.stdout))
        end)

        it_if(caps.supports_env_vars and not config.fast_only,
          "per-command env merges with sandbox-level env", function()
          local sb = fresh({ env = { VAR_A = "1", VAR_B = "2" } })
          local r = assert(sb:exec("sh", { "-c", "echo $VAR_A $VAR_B $VAR_C" },
            { env = { VAR_B = "override", VAR_C = "3" } }))
          sb:destroy()
          assert.equal("1 override 3", trim(r.stdout))
        end)

        it_if(caps.supports_concurrency, "executes multiple commands concurrently", function()
          local ops = {}
          for i, word in ipairs({ "first", "second", "third" }) do ops[i] = sandbox:exec_async("echo", { word }) end
          for i, word in ipairs({ "first", "second", "third" }) do
            local r = assert(ops[i]:wait())
            assert.equal(0, r.exit_code)
            assert.equal(word, trim(r.stdout))
          end
        end)

        it_if(caps.supports_concurrency and caps.supports_env_vars,
          "concurrent commands do not interfere with each other", function()
          local a = sandbox:exec_async("sh", { "-c", "echo $VAR" }, { env = { VAR = "value1" } })
          local b = sandbox:exec_async("sh", { "-c", "echo $VAR" }, { env = { VAR = "value2" } })
          assert.equal("value1", trim(assert(a:wait()).stdout))
          assert.equal("value2", trim(assert(b:wait()).stdout))
        end)
      end)
    end

    if on("lifecycle") then
      describe("Lifecycle", function()
        it("has required identification properties", function()
          for _, k in ipairs({ "id", "name", "provider", "status" }) do
            assert.equal("string", type(sandbox[k]), k)
          end
        end)

        it_if(not config.fast_only, "id is unique per instance", function()
          local other = config.create_sandbox()
          local id = other.id
          other:destroy()
          assert.not_equal(sandbox.id, id)
        end)

        it_if(not config.fast_only, "status starts as pending or stopped before start()", function()
          local sb = config.create_sandbox()
          local s = sb.status
          sb:destroy()
          assert.truthy(s == "pending" or s == "stopped", s)
        end)

        it("status is running after start", function()
          assert.equal("running", sandbox.status)
        end)

        it("start() is idempotent - calling twice does not error", function()
          assert(sandbox:start())
          assert.equal("running", sandbox.status)
        end)

        it_if(not config.fast_only, "stop() changes status to stopped", function()
          local sb = config.create_sandbox()
          assert(sb:start())
          assert.equal("running", sb.status)
          assert(sb:stop())
          assert.equal("stopped", sb.status)
          sb:destroy()
        end)

        it_if(not config.fast_only, "status is not running before start", function()
          local sb = config.create_sandbox()
          assert.not_equal("running", sb.status)
          sb:destroy()
        end)

        it("returns sandbox information", function()
          local info = sandbox:info()
          assert.equal(sandbox.id, info.id)
          assert.equal(sandbox.name, info.name)
          assert.equal(sandbox.provider, info.provider)
          assert.equal("running", info.status)
        end)

        it("getInfo status matches sandbox status", function()
          assert.equal(sandbox.status, sandbox:info().status)
        end)

        it_if(config.create_invalid_sandbox ~= nil, "start() with invalid config rejects cleanly", function()
          local bad = config.create_invalid_sandbox()
          local ok, err = bad:start()
          assert.is_nil(ok)
          assert.truthy(err)
          pcall(bad.destroy, bad)
        end)

        it_if(config.create_invalid_sandbox ~= nil, "valid sandbox works after invalid config failure", function()
          local bad = config.create_invalid_sandbox()
          bad:start()
          pcall(bad.destroy, bad)
          local sb = fresh()
          assert.equal("running", sb.status)
          local r = assert(sb:exec("echo", { "recovery" }))
          sb:destroy()
          assert.equal(0, r.exit_code)
          assert.truthy(r.stdout:find("recovery", 1, true))
        end)
      end)
    end

    if on("reconnection") and caps.supports_reconnection then
      describe("Reconnection", function()
        it("getInfo returns sandbox id for reconnection", function()
          local id = sandbox:info().id
          assert.equal("string", type(id))
          assert.is_true(#id > 0)
        end)

        it("sandbox id is consistent after stop/start", function()
          local id = sandbox.id
          assert(sandbox:stop())
          assert(sandbox:start())
          assert.equal(id, sandbox.id)
        end)

        it("files persist after stop/start", function()
          local path = "/tmp/reconnect-test-" .. math.floor(now_ms()) .. ".txt"
          exec("sh", { "-c", "echo 'reconnection test content' > " .. path })
          local before = exec("cat", { path }).stdout
          assert(sandbox:stop())
          assert(sandbox:start())
          local after = exec("cat", { path }).stdout
          exec("rm", { "-f", path })
          assert.equal(before, after)
          assert.truthy(before:find("reconnection test content", 1, true))
        end)

        it("environment is preserved after reconnection", function()
          assert(sandbox:stop())
          assert(sandbox:start())
          local r = exec("pwd")
          assert.equal(0, r.exit_code)
          assert.is_true(#trim(r.stdout) > 0)
        end)

        pending("mounts are tracked after reconnection (no mount support)")

        it("ensureRunning auto-starts a stopped sandbox", function()
          assert(sandbox:stop())
          assert.equal("stopped", sandbox.status)
          assert(sandbox:ensure_running())
          assert.equal("running", sandbox.status)
        end)

        it("executeCommand works after sandbox is stopped and auto-restarted", function()
          assert(sandbox:stop())
          local r = exec("echo", { "hello" })
          assert.equal(0, r.exit_code)
          assert.equal("hello", trim(r.stdout))
          assert.equal("running", sandbox.status)
        end)

        it("multiple commands work after stop/auto-restart cycle", function()
          assert(sandbox:stop())
          for _, w in ipairs({ "first", "second", "third" }) do
            local r = exec("echo", { w })
            assert.equal(0, r.exit_code)
            assert.equal(w, trim(r.stdout))
          end
        end)

        it("survives multiple stop/start cycles", function()
          for i = 1, 3 do
            assert(sandbox:stop())
            assert.equal("stopped", sandbox.status)
            assert(sandbox:start())
            assert.equal("running", sandbox.status)
            local r = exec("echo", { "cycle-" .. i })
            assert.equal(0, r.exit_code)
            assert.equal("cycle-" .. i, trim(r.stdout))
          end
        end)

        it("concurrent stop calls are safe", function()
          local tasks = {}
          for i = 1, 3 do tasks[i] = sandkit.spawn(function() return sandbox:stop() end) end
          for i = 1, 3 do assert.is_true(tasks[i]:wait()) end
          assert.equal("stopped", sandbox.status)
          assert(sandbox:start())
          assert.equal("running", sandbox.status)
        end)

        it("concurrent start calls after stop are safe", function()
          assert(sandbox:stop())
          local tasks = {}
          for i = 1, 3 do tasks[i] = sandkit.spawn(function() return sandbox:start() end) end
          for i = 1, 3 do assert.is_true(tasks[i]:wait()) end
          assert.equal("running", sandbox.status)
          assert.equal("concurrent-start", trim(exec("echo", { "concurrent-start" }).stdout))
        end)

        it_if(config.kill_externally ~= nil, "recovers from externally killed sandbox via retryOnDead", function()
          assert.equal(0, exec("echo", { "alive" }).exit_code)
          config.kill_externally(sandbox)
          local r = exec("echo", { "recovered" })
          assert.equal(0, r.exit_code)
          assert.equal("recovered", trim(r.stdout))
          assert.equal("running", sandbox.status)
        end)

        it_if(config.kill_externally ~= nil, "recovers from externally killed sandbox during process spawn", function()
          local h = assert(sandbox.processes:spawn("echo before"))
          h:wait()
          config.kill_externally(sandbox)
          local h2 = assert(sandbox.processes:spawn("echo after"))
          local r = assert(h2:wait())
          assert.equal(0, r.exit_code)
          assert.equal("after", trim(r.stdout))
        end)
      end)
    end

    if on("process_management") then
      describe("Process Management", function()
        local P
        setup(function()
          assert(sandbox:ensure_running())
          P = sandbox.processes
          assert.truthy(P)
        end)

        local function spawn(cmd, opts) return assert(P:spawn(cmd, opts)) end

        it("spawn: spawns a process and returns a handle with pid", function()
          local h = spawn("echo hello")
          h:wait()
          assert.equal("string", type(h.pid))
          assert.is_true(#h.pid > 0)
        end)

        it("spawn: accumulates stdout", function()
          local r = assert(spawn("echo hello"):wait())
          assert.is_true(r.success)
          assert.equal(0, r.exit_code)
          assert.equal("hello", trim(r.stdout))
        end)

        it("spawn: accumulates stderr", function()
          local r = assert(spawn('echo "error msg" >&2'):wait())
          assert.truthy(r.stderr:find("error msg", 1, true))
        end)

        it("spawn: captures non-zero exit code", function()
          local r = assert(spawn("exit 42"):wait())
          assert.is_false(r.success)
          assert.equal(42, r.exit_code)
        end)

        it_if(caps.supports_env_vars, "spawn: respects env option", function()
          local r = assert(spawn("echo $MY_VAR", { env = { MY_VAR = "test_value" } }):wait())
          assert.equal("test_value", trim(r.stdout))
        end)

        it("callbacks: calls onStdout callback as data arrives", function()
          local chunks = {}
          spawn("echo hello", { on_stdout = function(c) chunks[#chunks + 1] = c end }):wait()
          assert.truthy(table.concat(chunks):find("hello", 1, true))
        end)

        it("callbacks: calls onStderr callback as data arrives", function()
          local chunks = {}
          spawn('echo "err" >&2', { on_stderr = function(c) chunks[#chunks + 1] = c end }):wait()
          assert.truthy(table.concat(chunks):find("err", 1, true))
        end)

        it("handle: stdout accumulates on the handle", function()
          local h = spawn("echo hello")
          h:wait()
          assert.equal("hello", trim(h.stdout))
        end)

        it("handle: stderr accumulates on the handle", function()
          local h = spawn('echo "err" >&2')
          h:wait()
          assert.truthy(h.stderr:find("err", 1, true))
        end)

        it("handle: exitCode is undefined while running, set after exit", function()
          local h = spawn("sleep 0.05")
          assert.is_nil(h.exit_code)
          h:wait()
          assert.equal(0, h.exit_code)
        end)

        it("wait: wait() is idempotent", function()
          local h = spawn("echo idempotent")
          local a = assert(h:wait())
          local b = assert(h:wait())
          assert.equal(0, a.exit_code)
          assert.equal(0, b.exit_code)
          assert.equal(a.stdout, b.stdout)
        end)

        it("kill: kills a running process", function()
          local h = spawn("sleep 60")
          assert.is_nil(h.exit_code)
          assert.is_true(h:kill())
          local r = assert(h:wait())
          assert.is_false(r.success)
          -- README, "Background processes": killed = true and 137 whatever the provider
          assert.is_true(r.killed)
          assert.equal(137, r.exit_code)
        end)

        it("kill: returns false when killing an already-exited process", function()
          local h = spawn("echo done")
          h:wait()
          assert.is_false(h:kill())
        end)

        -- abort signals: a handle's kill() is the Lua equivalent
        it("abort: aborts a spawned process when signal fires", function()
          local h
          h = spawn("echo started; exec sleep 30", { on_stdout = function() h:kill() end })
          local r = assert(h:wait())
          assert.is_false(r.success)
        end)

        it("abort: aborts immediately when signal is already aborted", function()
          local t0 = now_ms()
          local h = spawn("sleep 60")
          h:kill()
          local r = assert(h:wait())
          assert.is_false(r.success)
          assert.is_true(now_ms() - t0 < 5000) -- anti-hang bound, generous for a loaded machine
        end)

        it("abort: captures partial output before abort", function()
          local h
          h = spawn('echo "before abort"; exec sleep 30', { on_stdout = function() h:kill() end })
          local r = assert(h:wait())
          assert.is_false(r.success)
          assert.truthy(r.stdout:find("before abort", 1, true))
        end)

        it_if(caps.supports_stdin, "sendStdin: sends data to stdin", function()
          local h = spawn("head -1")
          assert(h:send_stdin("hello from stdin\n"))
          local r = assert(h:wait())
          assert.truthy(r.stdout:find("hello from stdin", 1, true))
        end)

        it("sendStdin: throws when sending to an exited process", function()
          local h = spawn("echo done")
          h:wait()
          local ok, err = h:send_stdin("data")
          assert.is_nil(ok)
          assert.equal("ProcessExitedError", err.kind)
        end)

        it("list: lists spawned processes", function()
          local h = spawn("sleep 60")
          local found
          for _, p in ipairs(P:list()) do if p.pid == h.pid then found = p end end
          assert.truthy(found)
          assert.is_true(found.running)
          h:kill()
          h:wait()
        end)

        it("list: shows exited processes as not running", function()
          local h = spawn("echo done")
          h:wait()
          for _, p in ipairs(P:list()) do
            if p.pid == h.pid then
              assert.is_false(p.running)
              assert.equal(0, p.exit_code)
            end
          end
        end)

        it("list: includes command string in process info", function()
          local h = spawn("sleep 60")
          local found
          for _, p in ipairs(P:list()) do if p.pid == h.pid then found = p end end
          assert.truthy(found)
          if found.command then assert.truthy(found.command:find("sleep", 1, true)) end
          h:kill()
          h:wait()
        end)

        it("get: returns handle by pid", function()
          local h = spawn("sleep 60")
          local g = P:get(h.pid)
          assert.truthy(g)
          assert.equal(h.pid, g.pid)
          h:kill()
          h:wait()
        end)

        it("get: retrieved handle has accumulated stdout from spawn", function()
          local h = spawn("echo get-test")
          h:wait()
          local g = P:get(h.pid)
          if g then assert.truthy(g.stdout:find("get-test", 1, true)) end
        end)

        local function first_output(cmd)
          local got = false
          local h = spawn(cmd, { on_stdout = function() got = true end })
          local t0 = now_ms()
          while not got and now_ms() - t0 < 15000 do sandkit.step(0.05) end
          assert.is_true(got)
          return h
        end

        it("get: retrieved handle has accumulated stdout while still running", function()
          local h = first_output("echo running-get-test; exec sleep 600")
          local g = P:get(h.pid)
          assert.truthy(g)
          assert.truthy(g.stdout:find("running-get-test", 1, true))
          h:kill()
          h:wait()
        end)

        it("get: spawn then get output then kill (tool flow)", function()
          local h = first_output("echo spawn-get-kill; exec sleep 600")
          local g = P:get(h.pid)
          assert.truthy(g.stdout:find("spawn-get-kill", 1, true))
          assert.is_true(P:kill(h.pid))
        end)

        it("get: first get() after natural exit returns output, second returns undefined (pruned)", function()
          local h = spawn("echo prune-test")
          local t0 = now_ms()
          while h.exit_code == nil and now_ms() - t0 < 15000 do sandkit.step(0.05) end
          local g = P:get(h.pid)
          assert.truthy(g)
          assert.truthy(g.stdout:find("prune-test", 1, true))
          assert.is_not_nil(g.exit_code)
          assert.is_nil(P:get(h.pid))
        end)

        it("get: returns undefined for unknown pid", function()
          assert.is_nil(P:get("99999"))
        end)

        it("get: handle.kill() does not remove from tracking", function()
          local h = spawn("sleep 60")
          h:kill()
          h:wait()
          local g = P:get(h.pid)
          if g then assert.equal(h.pid, g.pid) end
        end)

        it("concurrent: tracks multiple spawned processes independently", function()
          local a, b, c = spawn("echo first"), spawn("echo second"), spawn("sleep 60")
          assert.is_true(a.pid ~= b.pid and b.pid ~= c.pid and a.pid ~= c.pid)
          assert.equal("first", trim(assert(a:wait()).stdout))
          assert.equal("second", trim(assert(b:wait()).stdout))
          assert.is_nil(c.exit_code)
          c:kill()
          c:wait()
        end)

        it("manager kill: kills a process by pid via the manager", function()
          local h = spawn("sleep 60")
          assert.is_true(P:kill(h.pid))
          assert.is_false(assert(h:wait()).success)
        end)

        it("manager kill: returns false for unknown pid", function()
          assert.is_false(P:kill("99999"))
        end)

        it("manager kill: get after manager kill returns undefined", function()
          local h = spawn("exec sleep 600")
          assert.is_true(P:kill(h.pid))
          assert.is_nil(P:get(h.pid))
        end)

        it_if(caps.supports_env_vars and not config.fast_only,
          "sandbox-level env: spawned process inherits sandbox env", function()
          local sb = fresh({ env = { SANDBOX_VAR = "from-sandbox" } })
          local r = assert(assert(sb.processes:spawn("printenv SANDBOX_VAR")):wait())
          sb:destroy()
          assert.is_true(r.success)
          assert.equal("from-sandbox", trim(r.stdout))
        end)

        it_if(caps.supports_env_vars and not config.fast_only,
          "sandbox-level env: per-spawn env overrides sandbox env", function()
          local sb = fresh({ env = { SANDBOX_VAR = "original", EXTRA = "kept" } })
          local h = assert(sb.processes:spawn("sh -c 'echo $SANDBOX_VAR $EXTRA $SPAWN_VAR'",
            { env = { SANDBOX_VAR = "overridden", SPAWN_VAR = "added" } }))
          local r = assert(h:wait())
          sb:destroy()
          assert.equal("overridden kept added", trim(r.stdout))
        end)

        it_if(caps.supports_streaming, "streams: reader stream receives stdout data", function()
          local chunks = {}
          spawn("echo stream-test", { on_stdout = function(c) chunks[#chunks + 1] = c end }):wait()
          assert.truthy(table.concat(chunks):find("stream-test", 1, true))
        end)

        it_if(caps.supports_streaming, "streams: reader stream ends when process exits", function()
          local t0 = now_ms()
          local r = assert(spawn("echo done", { on_stdout = function() end }):wait())
          assert.equal(0, r.exit_code)
          assert.is_true(now_ms() - t0 < 5000) -- anti-hang bound, generous for a loaded machine
        end)

        it_if(caps.supports_streaming and caps.supports_stdin, "streams: writer stream sends data to stdin", function()
          local h = spawn("head -1")
          assert(h:send_stdin("writer-test\n"))
          assert.truthy(assert(h:wait()).stdout:find("writer-test", 1, true))
        end)

        it_if(caps.supports_close_stdin, "closeStdin: a process reading stdin to EOF finishes", function()
          local h = spawn("cat")
          assert(h:send_stdin("to-eof"))
          assert.is_true(h:close_stdin())
          local r = assert(h:wait())
          assert.equal(0, r.exit_code)
          assert.equal("to-eof", r.stdout)
        end)

        it("exec: commands run with stdin closed (do not hang on reads)", function()
          local r = exec("cat", nil, { timeout = 5000 })
          assert.equal(0, r.exit_code)
          assert.equal("", r.stdout)
        end)
      end)
    end
  end)
end
