-- AppleContainerSandbox against the emulated Apple `container` CLI
-- (spec/servers/container/): upstream's 46 unit cases
-- (docs/protocols/apple-container.md §8) with real containers and the CLI's argv log in
-- place of upstream's fake runner, the config-hash test vectors, both
-- inspect shapes, adoption of containers created by upstream, refusals,
-- the in-container timeout, and env values kept off every command line.
--
-- Where upstream's fake runner answers a call with a canned failure, a fault
-- rule of the emulator gives the same answer. Upstream's runner cases
-- (runAppleContainerCli) are C tests of the runner (spec/c/
-- apple_container_test.c); the ones a sandbox can show are repeated here.
local sandkit = require "sandkit"
local cjson = require "cjson"
local ac = require "helpers.apple_container"

local ID = "apple-test"
local DEFAULTS_HASH = "dd262544bdd1d32c"

local env -- the emulator's state for the current case

local function new_sandbox(opts)
  opts = opts or {}
  if opts.id == nil then opts.id = ID end
  opts.container_binary = opts.container_binary or env.binary
  return sandkit.AppleContainerSandbox(opts)
end

local function started(opts)
  local sb = new_sandbox(opts)
  assert(sb:start())
  return sb
end

-- upstream's `run` argv for a container of sandbox `id` with the defaults
local function upstream_run_argv(name, id, hash, extra_labels)
  local argv = { "run", "-d", "--name", name, "--workdir", "/workspace" }
  for _, l in ipairs(extra_labels or {}) do
    argv[#argv + 1] = "--label"
    argv[#argv + 1] = l
  end
  for _, w in ipairs({ "--label", "mastra.sandbox=true", "--label", "mastra.sandbox.id=" .. id }) do
    argv[#argv + 1] = w
  end
  if hash then
    argv[#argv + 1] = "--label"
    argv[#argv + 1] = "mastra.sandbox.config-hash=" .. hash
  end
  for _, w in ipairs({ "--init", "node:22-slim", "sleep", "infinity" }) do argv[#argv + 1] = w end
  return argv
end

local function cli_ok(args, opts)
  local r = env:cli(args, opts)
  assert.are.equal(0, r.code, table.concat(args, " ") .. ": " .. r.stderr)
  return r
end

-- upstream's inspect element (1.0 shape) for a fault answer
local function inspect_json(state, id, labels)
  local l = { ["mastra.sandbox"] = "true", ["mastra.sandbox.id"] = ID }
  for k, v in pairs(labels or {}) do l[k] = v end
  return cjson.encode({ {
    id = id, status = { state = state, networks = { { network = "default" } } },
    configuration = { id = id, labels = l, resources = { cpus = 2, memoryInBytes = 512 * 1024 * 1024 } },
  } })
end

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

describe("AppleContainerSandbox", function()
  before_each(function() env = ac.new() end)
  after_each(function()
    local left = env:teardown()
    assert.are.same({}, left)
  end)

  it("uses default identity and instructions", function()
    local sb = new_sandbox()
    assert.are.equal(ID, sb.id)
    assert.are.equal("AppleContainerSandbox", sb.name)
    assert.are.equal("apple-container", sb.provider)
    assert.are.equal("pending", sb.status)
    assert.truthy(sb:instructions():find("Apple container sandbox", 1, true))
    assert.are.equal(0, env:mark())
  end)

  it("generates upstream's id form and keeps the sandbox name when a container name is given", function()
    local sb = sandkit.AppleContainerSandbox { name = "my box", container_binary = env.binary }
    assert.truthy(sb.id:match("^apple%-container%-sandbox%-[0-9a-z]+%-[0-9a-z]+$"), sb.id)
    assert.are.equal("AppleContainerSandbox", sb.name)
  end)

  it("returns serializable provider config from info metadata", function()
    local host = env.dir
    local sb = new_sandbox {
      image = "node:22-slim", env = { NODE_ENV = "test" }, volumes = { [host] = "/workspace" },
      working_dir = "/workspace", delete_on_destroy = false,
    }
    local m = sb:info().metadata
    assert.are.equal(ID, m.id)
    assert.are.equal("node:22-slim", m.image)
    assert.are.same({ "sleep", "infinity" }, m.command)
    assert.are.same({ [host] = "/workspace" }, m.volumes)
    assert.are.equal("/workspace", m.working_dir)
    assert.are.equal(300000, m.timeout)
    assert.is_false(m.delete_on_destroy)
    -- env values are secrets: never in info() (upstream lists them)
    assert.is_nil(m.env)
    assert.is_nil(m.container_id)
    assert.is_nil(m.container_name)
    assert.are.equal(0, env:mark())
  end)

  it("creates a long-lived Apple container when none exists", function()
    local project = env.dir .. "/project"
    local cache = env.dir .. "/cache"
    os.execute("mkdir -p " .. ac.q(project) .. " " .. ac.q(cache))
    local sb = new_sandbox {
      image = "python:3.12-slim", command = { "sleep", "9999" }, env = { NODE_ENV = "test" },
      volumes = { [project] = "/workspace" }, mounts = { "source=" .. cache .. ",target=/cache" },
      network = "bridge", published_ports = { "127.0.0.1:8080:80" },
      published_sockets = { "/tmp/app.sock:/var/run/app.sock" }, cpus = 2, memory = "1G",
      platform = "linux/arm64", arch = "arm64", os = "linux", rosetta = true, readonly_rootfs = true,
      ssh = true, init = true, virtualization = true, cap_add = { "NET_BIND_SERVICE" },
      cap_drop = { "MKNOD" }, tmpfs = { "/tmp" }, dns = { "1.1.1.1" }, dns_search = { "example.test" },
      no_dns = true, labels = { app = "mastra" }, working_dir = "/workspace",
    }
    assert(sb:start())
    assert.are.equal("running", sb.status)
    local canonical = '{"arch":"arm64","capAdd":["NET_BIND_SERVICE"],"capDrop":["MKNOD"],' ..
      '"command":["sleep","9999"],"cpus":2,"dns":["1.1.1.1"],"dnsSearch":["example.test"],' ..
      '"env":{"NODE_ENV":"test"},"image":"python:3.12-slim","init":true,"labels":{"app":"mastra"},' ..
      '"memory":"1G","mounts":["source=' .. cache .. ',target=/cache"],"network":"bridge","noDns":true,' ..
      '"os":"linux","platform":"linux/arm64","publishedPorts":["127.0.0.1:8080:80"],' ..
      '"publishedSockets":["/tmp/app.sock:/var/run/app.sock"],"readonlyRootfs":true,"rosetta":true,' ..
      '"ssh":true,"tmpfs":["/tmp"],"virtualization":true,"volumes":{"' .. project .. '":"/workspace"},' ..
      '"workingDir":"/workspace"}'
    local calls = env:calls_since(0)
    assert.are.same({ "inspect", ID }, calls[1].argv)
    assert.are.same({
      "run", "-d", "--name", ID, "--workdir", "/workspace", "--env", "NODE_ENV",
      "--volume", project .. ":/workspace", "--mount", "source=" .. cache .. ",target=/cache",
      "--label", "app=mastra", "--label", "mastra.sandbox=true", "--label", "mastra.sandbox.id=" .. ID,
      "--label", "mastra.sandbox.config-hash=" .. ac.hash_of(canonical),
      "--publish", "127.0.0.1:8080:80", "--publish-socket", "/tmp/app.sock:/var/run/app.sock",
      "--cap-add", "NET_BIND_SERVICE", "--cap-drop", "MKNOD", "--tmpfs", "/tmp", "--dns", "1.1.1.1",
      "--dns-search", "example.test", "--network", "bridge", "--cpus", "2", "--memory", "1G",
      "--platform", "linux/arm64", "--arch", "arm64", "--os", "linux", "--rosetta", "--read-only",
      "--ssh", "--init", "--virtualization", "--no-dns", "python:3.12-slim", "sleep", "9999",
    }, calls[2].argv)
    -- the value travels in the CLI's environment, by name only
    assert.are.same({ "NODE_ENV" }, calls[2].env_names)
    assert.are.same({}, calls[2].env_unset)
    assert.are.same({}, calls[2].env_inline)
    assert.are.same({ "inspect", ID }, calls[3].argv)
    assert.are.same({ "exec", ID, "sh", "-lc", "true" }, calls[4].argv)
    assert.are.equal(4, #calls)
    -- and the container really has it
    local r = assert(sb:exec("printenv NODE_ENV"))
    assert.are.equal("test\n", r.stdout)
    sb:destroy()
  end)

  it("keeps status in sync when plain lifecycle methods are called", function()
    local sb = new_sandbox()
    assert(sb:start())
    assert.are.equal("running", sb.status)
    assert(sb:stop())
    assert.are.equal("stopped", sb.status)
    assert.are.equal("stopped", env:state(ID))
    local mark = env:mark()
    assert(sb:destroy())
    assert.are.equal("destroyed", sb.status)
    assert.are.same({ { "inspect", ID }, { "delete", "--force", ID } }, env:argvs_since(mark))
    assert.is_nil(env:state(ID))
    local all = env:argvs_since(0)
    assert.are.same({ "inspect", ID }, all[5])
    assert.are.same({ "stop", ID }, all[6])
  end)

  it("reconnects to an existing stopped container (adopting one upstream created)", function()
    cli_ok(upstream_run_argv(ID, ID, DEFAULTS_HASH))
    cli_ok({ "stop", ID })
    local mark = env:mark()
    local sb = started()
    assert.are.same({ { "inspect", ID }, { "start", ID }, { "inspect", ID }, { "exec", ID, "sh", "-lc", "true" } },
      env:argvs_since(mark))
    assert.are.equal("running", sb.status)
    assert.are.equal("adopted\n", assert(sb:exec("echo adopted")).stdout)
    sb:destroy()
  end)

  it("reconnects to a stopped container whose id differs from its name", function()
    -- upstream's case: inspect apple-test answers with configuration.id existing-id
    cli_ok(upstream_run_argv("existing-id", ID, DEFAULTS_HASH))
    cli_ok({ "stop", "existing-id" })
    env:faults({ { command = "inspect", match = ID, times = 1, stdout = inspect_json("stopped", "existing-id") } })
    local mark = env:mark()
    local sb = started()
    local argvs = env:argvs_since(mark)
    assert.are.same({ "inspect", ID }, argvs[1])
    assert.are.same({ "start", "existing-id" }, argvs[2])
    -- the recorded container id addresses every later call
    assert.are.equal("/workspace\n", assert(sb:exec("pwd")).stdout)
    local last = env:log()[#env:log()]
    assert.are.equal("existing-id", last.argv[4])
    sb:destroy()
  end)

  it("reconnects to an existing running container without restarting it", function()
    cli_ok(upstream_run_argv(ID, ID, DEFAULTS_HASH))
    local mark = env:mark()
    local sb = started()
    assert.are.same({ { "inspect", ID } }, env:argvs_since(mark))
    assert.are.equal("running", sb.status)
    sb:destroy()
  end)

  it("adopts a legacy container without the config-hash label", function()
    cli_ok(upstream_run_argv(ID, ID, nil))
    local mark = env:mark()
    local sb = started()
    assert.are.same({ { "inspect", ID } }, env:argvs_since(mark))
    sb:destroy()
  end)

  it("refuses to reconnect to a container without matching Mastra labels", function()
    cli_ok({ "run", "-d", "--name", ID, "--label", "app=not-mastra", "node:22-slim", "sleep", "infinity" })
    local mark = env:mark()
    local sb = new_sandbox()
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.are.equal("ContainerCliError", err.kind)
    assert.truthy(err.message:find("not labeled as Mastra sandbox apple-test", 1, true), err.message)
    assert.are.equal("error", sb.status)
    assert.are.equal(1, #env:calls_since(mark))
    assert.are.equal("running", env:state(ID)) -- left alone
  end)

  it("stop after a refused start inspects again and fails with the refusal (status error)", function()
    cli_ok({ "run", "-d", "--name", ID, "--label", "app=not-mastra", "node:22-slim", "sleep", "infinity" })
    local sb = new_sandbox()
    assert.is_nil(sb:start())
    local mark = env:mark()
    local ok, err = sb:stop()
    assert.is_nil(ok)
    assert.are.equal("ContainerCliError", err.kind)
    assert.are.equal("Refusing to manage Apple container apple-test because it is not labeled as Mastra sandbox apple-test",
      err.message)
    assert.are.equal("error", sb.status)
    assert.are.same({ { "inspect", ID } }, env:argvs_since(mark))
    assert.are.equal("running", env:state(ID)) -- left alone
  end)

  it("stop on a never-started sandbox stops the container of that name it owns (made by another process)", function()
    cli_ok(upstream_run_argv("fresh-1", "fresh-1", DEFAULTS_HASH))
    local sb = new_sandbox({ id = "fresh-1" })
    assert.are.equal("pending", sb.status)
    local mark = env:mark()
    assert(sb:stop())
    assert.are.same({ { "inspect", "fresh-1" }, { "stop", "fresh-1" } }, env:argvs_since(mark))
    assert.are.equal("stopped", sb.status)
    assert.are.equal("stopped", env:state("fresh-1"))
    -- stopped already: nothing runs (upstream's _stop() returns at once)
    mark = env:mark()
    assert(sb:stop())
    assert.are.same({}, env:argvs_since(mark))
    assert(sb:destroy())
    assert.is_nil(env:state("fresh-1"))
    -- no container of that name: one inspect, stopped
    local none = new_sandbox({ id = "fresh-2" })
    mark = env:mark()
    assert(none:stop())
    assert.are.same({ { "inspect", "fresh-2" } }, env:argvs_since(mark))
    assert.are.equal("stopped", none.status)
    -- another sandbox's container of that name is refused and left running
    cli_ok(upstream_run_argv("fresh-3", "someone-else", DEFAULTS_HASH))
    local other = new_sandbox({ id = "fresh-3" })
    local ok, err = other:stop()
    assert.is_nil(ok)
    assert.truthy(err.message:find("not labeled as Mastra sandbox fresh-3", 1, true), err.message)
    assert.are.equal("error", other.status)
    assert.are.equal("running", env:state("fresh-3"))
  end)

  it("refuses a container labelled for another sandbox id", function()
    cli_ok(upstream_run_argv(ID, "someone-else", DEFAULTS_HASH))
    local ok, err = new_sandbox():start()
    assert.is_nil(ok)
    assert.truthy(err.message:find("Refusing to manage Apple container apple-test because it is not labeled", 1, true))
  end)

  it("refuses to reconnect when a Mastra-owned container has incompatible immutable config", function()
    cli_ok(upstream_run_argv(ID, ID, "different-config"))
    local sb = new_sandbox()
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.are.equal("Refusing to manage Apple container apple-test because its immutable configuration " ..
      "does not match sandbox apple-test", err.message)
    assert.are.equal(1, err.exit_code)
    assert.are.equal("error", sb.status)
  end)

  it("refuses a container upstream created with other settings (hash mismatch)", function()
    cli_ok(upstream_run_argv(ID, ID, DEFAULTS_HASH))
    local ok, err = new_sandbox({ image = "alpine:3.20" }):start()
    assert.is_nil(ok)
    assert.truthy(err.message:find("immutable configuration does not match", 1, true))
  end)

  it("cleans up a newly created container that exits before readiness", function()
    -- the readiness inspect reports the new container stopped
    env:faults({ { command = "inspect", skip = 1, times = 1, stdout = inspect_json("stopped", ID) } })
    local sb = new_sandbox()
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.truthy(err.message:find("create Apple container apple-test failed because Apple container apple-test is stopped",
      1, true), err.message)
    assert.are.equal("error", sb.status)
    assert.are.same({ "delete", "--force", ID }, env:log()[4].argv)
    assert.is_nil(env:state(ID))
  end)

  it("fails startup and cleans up when the init command exits", function()
    local sb = new_sandbox({ command = { "false" } })
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.truthy(err.message:find("is stopped") or err.message:find("did not become ready") or
      err.message:find("disappeared"), err.message)
    local _, r = env:inspect(ID)
    assert.truthy(r.stderr:find("not found", 1, true))
  end)

  it("keeps a failed new container when delete_on_destroy is false", function()
    env:faults({ { command = "inspect", skip = 1, times = 1, stdout = inspect_json("stopped", ID) } })
    local ok = new_sandbox({ delete_on_destroy = false }):start()
    assert.is_nil(ok)
    for _, e in ipairs(env:log()) do assert.are_not.equal("delete", e.command) end
    assert.are.equal("running", env:state(ID))
  end)

  it("throws when reconnecting to a stopped container fails", function()
    cli_ok(upstream_run_argv(ID, ID, DEFAULTS_HASH))
    cli_ok({ "stop", ID })
    env:faults({ { command = "start", exit = 5, stderr = "start failed" } })
    local sb = new_sandbox()
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.are.equal(5, err.exit_code)
    assert.are.equal("start failed\n", err.stderr)
    assert.are.equal("start Apple container apple-test failed with exit code 5: start failed\n", err.message)
    assert.are.same({ "start", ID }, err.argv)
    assert.are.equal("error", sb.status)
  end)

  it("rejects Docker-style tmpfs specs because Apple container expects paths", function()
    for _, bad in ipairs({ "/tmp:rw,size=64m", "tmp", "/a,b" }) do
      local ok, err = pcall(new_sandbox, { tmpfs = { bad } })
      assert.is_false(ok)
      assert.are.equal("ConfigError", err.kind)
      assert.truthy(err.message:find("Apple container --tmpfs accepts container paths only", 1, true))
      assert.truthy(err.message:find('"' .. bad .. '"', 1, true))
    end
  end)

  it("env reaches subsequent commands by name, the value only in the CLI's environment", function()
    local sb = started()
    local mark = env:mark()
    local r = assert(sb:exec("echo $GH_TOKEN", nil, { env = { GH_TOKEN = "tok_1" } }))
    assert.are.equal("tok_1\n", r.stdout)
    local call = env:calls_since(mark)[1]
    assert.are.same({ "exec", "--env", "GH_TOKEN", "--workdir", "/workspace", ID, "sh", "-lc" },
      { table.unpack(call.argv, 1, 8) })
    assert.are.same({ "GH_TOKEN" }, call.env_names)
    assert.are.same({}, call.env_unset)
    for _, w in ipairs(call.argv) do assert.is_nil(w:find("tok_1", 1, true)) end
    sb:destroy()
  end)

  it("never puts an env value on a command line (/proc/*/cmdline)", function()
    local canary = "canary-" .. tostring(os.time()) .. "-" .. tostring(math.random(1e9))
    local sb = new_sandbox({ env = { SECRET_ONE = canary .. "-a" } })
    assert(sb:start())
    local seen_live
    local op
    op = sb:exec_async('echo "$SECRET_ONE $SECRET_TWO"; sleep 30', nil, {
      env = { SECRET_TWO = canary .. "-b" },
      on_stdout = function()
        if seen_live == nil then
          seen_live = ac.live_processes(canary)
          op:cancel()
        end
      end,
    })
    local r = assert(op:wait())
    assert.truthy(r.stdout:find(canary .. "-a " .. canary .. "-b", 1, true))
    assert.are.same({}, seen_live)
    for _, e in ipairs(env:log()) do
      assert.are.same({}, e.env_inline)
      for _, w in ipairs(e.argv) do assert.is_nil(w:find(canary, 1, true)) end
    end
    sb:destroy()
  end)

  it("refuses env names the CLI cannot pass by name", function()
    local ok, err = pcall(new_sandbox, { env = { ["A-B"] = "1" } })
    assert.is_false(ok)
    assert.are.equal("Invalid environment variable name for Apple container command: A-B", err.message)
    local sb = started()
    local r, e = sb:exec("true", nil, { env = { ["1X"] = "1" } })
    assert.is_nil(r)
    assert.are.equal("Invalid environment variable name for Apple container command: 1X", e.message)
    sb:destroy()
  end)

  it("uses working_directory for exec --workdir when no per-command cwd is given", function()
    local sb = started({ working_directory = "/srv/app" })
    local mark = env:mark()
    local r = assert(sb:exec("pwd"))
    assert.are.equal("/srv/app\n", r.stdout)
    assert.are.same({ "exec", "--workdir", "/srv/app" }, { table.unpack(env:calls_since(mark)[1].argv, 1, 3) })
    assert.are.equal("/srv/app", sb:info().metadata.working_dir)
    sb:destroy()
  end)

  it("working_directory wins over the deprecated working_dir alias", function()
    local sb = new_sandbox({ working_directory = "/srv/app", working_dir = "/legacy" })
    assert.are.equal("/srv/app", sb:info().metadata.working_dir)
    assert.truthy(sb:instructions():find("Working directory: /srv/app.", 1, true))
  end)

  it("the deprecated working_dir alias still applies and defaults hold when unset", function()
    assert.are.equal("/legacy", new_sandbox({ working_dir = "/legacy" }):info().metadata.working_dir)
    assert.are.equal("/workspace", new_sandbox():info().metadata.working_dir)
  end)

  it("executes commands with env, cwd, timeout, streaming and output options", function()
    local sb = started({ env = { BASE = "1" } })
    assert(sb:exec("mkdir -p /app"))
    local mark = env:mark()
    local chunks = {}
    local r = assert(sb:exec("node", { "-e", 'console.log("hello")' }, {
      cwd = "/app", env = { EXTRA = "2" }, timeout = 12345, -- room for node's start on a loaded machine
      on_stdout = function(c) chunks[#chunks + 1] = c end,
    }))
    assert.is_true(r.success)
    assert.are.equal(0, r.exit_code)
    assert.are.equal("hello\n", r.stdout)
    assert.are.equal("hello\n", table.concat(chunks))
    assert.are.equal([[node -e 'console.log("hello")']], r.command)
    local call = env:calls_since(mark)[1]
    assert.are.same({ "exec", "--env", "BASE", "--env", "EXTRA", "--workdir", "/app", ID, "sh", "-lc" },
      { table.unpack(call.argv, 1, 10) })
    assert.are.equal(11, #call.argv)
    assert.truthy(call.argv[11]:find("timeout 12.345s sh -lc", 1, true))
    assert.are.same({ "BASE", "EXTRA" }, call.env_names)
    sb:destroy()
  end)

  it("quotes args before executing through the shell", function()
    -- sandkit's command is a shell string used as it is (docs/sandbox.md §"Exec options"); each
    -- arg is quoted (upstream also quotes the command when args are given)
    local sb = started()
    local mark = env:mark()
    local r = assert(sb:exec("echo", { "a; touch /tmp/pwned", "it's" }))
    assert.are.equal([[echo 'a; touch /tmp/pwned' 'it'\''s']], r.command)
    assert.are.equal("a; touch /tmp/pwned it's\n", r.stdout)
    local argv = env:calls_since(mark)[1].argv
    assert.are.same({ "exec", "--workdir", "/workspace", ID, "sh", "-lc" }, { table.unpack(argv, 1, 6) })
    assert.truthy(argv[7]:find("a; touch /tmp/pwned", 1, true))
    assert.are.equal(1, assert(sb:exec("test -e /tmp/pwned")).exit_code)
    sb:destroy()
  end)

  it("preserves shell command strings when no args are provided", function()
    local sb = started()
    local mark = env:mark()
    local r = assert(sb:exec("printf apple-container"))
    assert.are.equal("apple-container", r.stdout)
    local script = env:calls_since(mark)[1].argv[7]
    assert.truthy(script:find("printf apple-container", 1, true))
    assert.truthy(script:find("timeout 300s sh -lc", 1, true))
    assert.truthy(script:find('^result_file="/tmp/.mastra%-apple%-container%-exit%-%$%$"; '))
    assert.truthy(script:find('esac$'))
    sb:destroy()
  end)

  it("marks in-container timeout exits as timed out (and auto-starts)", function()
    local sb = new_sandbox()
    local r = assert(sb:exec("sleep", { "30" }, { timeout = 10 }))
    assert.is_false(r.success)
    assert.are.equal(124, r.exit_code)
    assert.is_true(r.timed_out)
    assert.is_true(r.killed)
    assert.is_nil(r.stderr:find("__MASTRA_APPLE_CONTAINER_TIMEOUT__", 1, true))
    assert.is_nil(r.stderr:find("^\n") or r.stderr:find("\n$"))
    local log = env:log()
    assert.are.same({ "inspect", "run", "inspect", "exec", "exec" },
      { log[1].command, log[2].command, log[3].command, log[4].command, log[5].command })
    assert.truthy(log[5].argv[7]:find("timeout 0.01s sh -lc", 1, true))
    sb:destroy()
  end)

  it("kills a command past its timeout inside the container: 124, marker handled, nothing left", function()
    local procs = require "helpers.procs"
    -- a sleep no other run on this machine has: the host-wide check sees only ours
    local secs = "30." .. procs.self_pid()
    local sb = started()
    local streamed = {}
    local r = assert(sb:exec("sleep " .. secs, nil, { timeout = 100, on_stderr = function(c) streamed[#streamed + 1] = c end }))
    assert.are.equal(124, r.exit_code)
    assert.is_true(r.timed_out)
    assert.is_true(r.killed)
    assert.is_true(r.execution_time_ms < 10000)
    assert.is_nil(r.stderr:find("__MASTRA", 1, true))
    assert.is_nil(table.concat(streamed):find("__MASTRA", 1, true))
    -- the in-container command is killed by the wrapper, and leaves /proc
    -- asynchronously: wait (bounded) for it to be gone, inside and on the host
    local gone_inside = procs.wait_for(function()
      return assert(sb:exec("pgrep -af '[s]leep " .. secs .. "'")).exit_code == 1
    end)
    assert.is_true(gone_inside, "sleep " .. secs .. " still runs in the container")
    assert.are.same({}, ac.wait_live_processes_gone("sleep " .. secs))
    sb:destroy()
  end)

  it("does not mark a legitimate exit 124 as a timeout without the timeout marker", function()
    local sb = started()
    local r = assert(sb:exec('sh -lc "exit 124"', nil, { timeout = 10000 }))
    assert.are.equal(124, r.exit_code)
    assert.is_false(r.timed_out)
    assert.is_false(r.killed)
    sb:destroy()
  end)

  it("keeps a command's own marker text when it was not a timeout", function()
    local sb = started()
    local r = assert(sb:exec("echo __MASTRA_APPLE_CONTAINER_TIMEOUT__ >&2; echo after >&2"))
    assert.are.equal(0, r.exit_code)
    assert.truthy(r.stderr:find("__MASTRA_APPLE_CONTAINER_TIMEOUT__", 1, true))
    assert.truthy(r.stderr:find("after", 1, true))
    sb:destroy()
  end)

  it("runs without the wrapper when the timeout is 0", function()
    local sb = started({ timeout = 0 })
    local mark = env:mark()
    assert.are.equal("x\n", assert(sb:exec("echo x")).stdout)
    assert.are.equal("echo x", env:calls_since(mark)[1].argv[7])
    sb:destroy()
  end)

  it("stops instead of deletes when delete_on_destroy is disabled", function()
    local sb = started({ delete_on_destroy = false })
    local mark = env:mark()
    assert(sb:destroy())
    assert.are.same({ { "inspect", ID }, { "stop", ID } }, env:argvs_since(mark))
    assert.are.equal("destroyed", sb.status)
    assert.are.equal("stopped", env:state(ID))
  end)

  it("does not stop when the container is already stopped or missing", function()
    local sb = started()
    cli_ok({ "stop", ID })
    local mark = env:mark()
    assert(sb:stop())
    assert.are.equal(1, #env:calls_since(mark))
    assert(sb:start())
    cli_ok({ "delete", "--force", ID })
    mark = env:mark()
    assert(sb:stop())
    assert.are.equal(1, #env:calls_since(mark))
    assert.are.equal("stopped", sb.status)
  end)

  it("a second stop() runs nothing, as upstream's _stop() from stopped; stop acts again after a start", function()
    local hooks = 0
    local sb = started({ on_stop = function() hooks = hooks + 1 end })
    local mark = env:mark()
    assert(sb:stop())
    assert.are.same({ { "inspect", ID }, { "stop", ID } }, env:argvs_since(mark))
    assert.are.equal("stopped", sb.status)
    assert.are.equal(1, hooks)
    mark = env:mark()
    assert(sb:stop())
    assert(sb:stop())
    assert.are.same({}, env:argvs_since(mark))
    assert.are.equal("stopped", sb.status)
    assert.are.equal(1, hooks) -- nor the hook: upstream returns before it
    -- a container stopped behind the sandbox's back is still asked about from running
    assert(sb:start())
    cli_ok({ "stop", ID })
    mark = env:mark()
    assert(sb:stop())
    assert.are.same({ { "inspect", ID } }, env:argvs_since(mark))
    assert(sb:destroy())
  end)

  it("refuses to stop a stopped container without matching Mastra labels", function()
    local sb = started()
    cli_ok({ "delete", "--force", ID })
    cli_ok({ "run", "-d", "--name", ID, "--label", "app=not-mastra", "node:22-slim", "sleep", "infinity" })
    cli_ok({ "stop", ID })
    local ok, err = sb:stop()
    assert.is_nil(ok)
    assert.truthy(err.message:find("not labeled as Mastra sandbox apple-test", 1, true))
    assert.are.equal("stopped", env:state(ID))
  end)

  it("ignores a missing container race while stopping", function()
    local sb = started()
    env:faults({ { command = "stop", exit = 1, stderr = "container not found" } })
    local mark = env:mark()
    assert(sb:stop())
    assert.are.equal("stopped", sb.status)
    assert.are.same({ "stop", ID }, env:argvs_since(mark)[2])
  end)

  it("deletes existing containers on destroy by default", function()
    local sb = started()
    local mark = env:mark()
    assert(sb:destroy())
    assert.are.same({ { "inspect", ID }, { "delete", "--force", ID } }, env:argvs_since(mark))
    assert.is_nil(env:state(ID))
  end)

  it("does not delete when the container is missing", function()
    local sb = started()
    cli_ok({ "delete", "--force", ID })
    local mark = env:mark()
    assert(sb:destroy())
    assert.are.equal("destroyed", sb.status)
    assert.are.equal(1, #env:calls_since(mark))
  end)

  it("ignores a missing container race while deleting", function()
    local sb = started()
    env:faults({ { command = "delete", exit = 1, stderr = "container not found" } })
    local mark = env:mark()
    assert(sb:destroy())
    assert.are.equal("destroyed", sb.status)
    assert.are.same({ "delete", "--force", ID }, env:argvs_since(mark)[2])
  end)

  it("throws when stop fails unexpectedly", function()
    local sb = started()
    env:faults({ { command = "stop", exit = 3, stderr = "permission denied" } })
    local ok, err = sb:stop()
    assert.is_nil(ok)
    assert.are.equal(3, err.exit_code)
    assert.are.equal("permission denied\n", err.stderr)
    assert.are.equal("stop Apple container apple-test failed with exit code 3: permission denied\n", err.message)
  end)

  it("throws when destroy fails unexpectedly", function()
    local sb = started()
    env:faults({ { command = "delete", exit = 4, stderr = "delete failed" } })
    local ok, err = sb:destroy()
    assert.is_nil(ok)
    assert.are.equal(4, err.exit_code)
    assert.are.equal("delete failed\n", err.stderr)
    assert.are.equal("delete Apple container apple-test failed with exit code 4: delete failed\n", err.message)
  end)

  it("surfaces inspect JSON parse errors with CLI output", function()
    env:faults({ { command = "inspect", stdout = "not json" } })
    local sb = new_sandbox()
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.are.equal("not json", err.stdout)
    assert.are.equal(1, err.exit_code)
    assert.truthy(err.message:find("^Failed to parse Apple container inspect output for apple%-test: "))
    assert.are.equal("error", sb.status)
  end)

  it("throws when inspect fails for an unexpected reason", function()
    env:faults({ { command = "inspect", exit = 7, stderr = "container service unavailable" } })
    local sb = new_sandbox()
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.are.equal(7, err.exit_code)
    assert.are.equal("container service unavailable\n", err.stderr)
    assert.are.equal("error", sb.status)
    assert.are.equal(1, env:mark())
  end)

  it("throws when create fails", function()
    env:faults({ { command = "run", exit = 2, stderr = "bad image" } })
    local sb = new_sandbox()
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.are.equal(2, err.exit_code)
    assert.are.equal("bad image\n", err.stderr)
    assert.are.equal("create Apple container apple-test failed with exit code 2: bad image\n", err.message)
    assert.are.equal("error", sb.status)
  end)

  it("throws when the real CLI cannot pull the image", function()
    local ok, err = new_sandbox({ image = "invalid/does-not-exist" }):start()
    assert.is_nil(ok)
    assert.truthy(err.message:find("^create Apple container apple%-test failed with exit code 1: Error: internalError"))
  end)

  it("sanitises the container name", function()
    local sb = started({ id = "my project/1" })
    assert.are.equal("running", env:state("my-project-1"))
    sb:destroy()
    local sb2 = started({ id = "_x", name = nil })
    assert.are.equal("running", env:state("c-_x"))
    sb2:destroy()
    local sb3 = started({ id = "named", name = "box:1" })
    assert.are.equal("running", env:state("box-1"))
    assert.are.equal("box:1", sb3:info().metadata.name)
    sb3:destroy()
  end)

  it("bounds each lifecycle CLI call by the sandbox timeout", function()
    -- a hang no other run on this machine has: the host-wide check sees only ours
    local hang = tonumber("3600." .. require("helpers.procs").self_pid())
    env:faults({ { command = "inspect", hang = hang } })
    local sb = new_sandbox({ timeout = 300 })
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.are.equal(137, err.exit_code)
    assert.truthy(err.message:find("^inspect Apple container apple%-test failed with exit code 137"))
    assert.are.same({}, ac.wait_live_processes_gone("sleep " .. tostring(hang)))
  end)

  it("ends an exec the CLI never answers at the host bound (timeout + 10 s)", function()
    local sb = started()
    env:faults({ { command = "exec", hang = true } })
    local t0 = require("sandkit.core").now()
    local r = assert(sb:exec("echo never", nil, { timeout = 100 }))
    local took = require("sandkit.core").now() - t0
    assert.are.equal(124, r.exit_code)
    assert.is_true(r.timed_out)
    assert.is_true(r.killed)
    assert.is_true(took >= 10000 and took < 20000, tostring(took))
    env:faults(nil)
    sb:destroy()
  end)

  it("needs CLI 0.10 for the default --init; init = false works with older ones", function()
    env:teardown()
    env = ac.new("0.9.0")
    local ok, err = new_sandbox():start()
    assert.is_nil(ok)
    assert.are.equal(64, err.exit_code)
    assert.truthy(err.stderr:find("Unknown option '--init'", 1, true))
    local sb = started({ id = "old-cli", init = false })
    assert.are.equal("ok\n", assert(sb:exec("echo ok")).stdout)
    sb:destroy()
  end)

  it("runs the lifecycle hooks and instruction overrides", function()
    local seen = {}
    local sb = new_sandbox({
      on_start = function(ctx) seen[#seen + 1] = "start:" .. ctx.sandbox.status end,
      on_destroy = function() seen[#seen + 1] = "destroy" end,
      instructions = function(ctx) return "custom " .. ctx.default_instructions end,
    })
    assert(sb:start())
    assert(sb:destroy())
    assert.are.same({ "start:running", "destroy" }, seen)
    assert.truthy(sb:instructions():find("^custom Apple container sandbox: commands run inside a local OCI Linux " ..
      "container from image node:22%-slim%. Working directory: /workspace%. Default command timeout: 300s%.$"))
    local two = new_sandbox({ id = "two", volumes = { [env.dir] = "/data" }, mounts = { "type=tmpfs,target=/t" },
      timeout = 1500 })
    assert.are.equal("Apple container sandbox: commands run inside a local OCI Linux container from image " ..
      "node:22-slim. Working directory: /workspace. 2 host mount(s) are configured. Default command timeout: 2s.",
      two:instructions())
  end)

  it("rejects with ContainerCliError when the CLI binary is missing", function()
    local sb = new_sandbox({ container_binary = "/definitely/missing/container" })
    local ok, err = sb:start()
    assert.is_nil(ok)
    assert.are.equal("ContainerCliError", err.kind)
    assert.are.equal("Apple container CLI not found: /definitely/missing/container", err.message)
    assert.are.equal(127, err.exit_code)
  end)

  it("aborts a running command (op:cancel) promptly", function()
    local sb = started()
    local op
    op = sb:exec_async("echo started; sleep 30", nil, { on_stdout = function() op:cancel() end })
    local r = assert(op:wait())
    assert.is_false(r.success)
    assert.is_true(r.killed)
    assert.is_true(r.cancelled)
    assert.is_true(r.stdout:find("started", 1, true) ~= nil)
    assert.is_true(r.execution_time_ms < 5000)
    sb:destroy()
  end)

  it("passes stdin to commands and runs background processes", function()
    local sb = started()
    local r = assert(sb:exec("cat", nil, { stdin = "from stdin\n" }))
    assert.are.equal("from stdin\n", r.stdout)
    local h = assert(sb.processes:spawn("head -1"))
    assert(h:send_stdin("line one\n"))
    local hr = assert(h:wait())
    assert.are.equal("line one\n", hr.stdout)
    local long = assert(sb.processes:spawn("sleep 30"))
    assert.is_true(long:kill())
    assert.is_false(assert(long:wait()).success)
    -- the CLI forwards the kill to the command in the container (docs/processes.md)
    local gone = require("helpers.procs").wait_for(function()
      return assert(sb:exec("pgrep -f '[s]leep 30'")).exit_code == 1
    end)
    assert.is_true(gone)
    sb:destroy()
  end)
end)

describe("AppleContainerSandbox inspect shapes", function()
  for _, version in ipairs({ "0.12.0", "1.0.0" }) do
    describe("CLI " .. version, function()
      before_each(function() env = ac.new(version) end)
      after_each(function() assert.are.same({}, env:teardown()) end)

      it("creates, reconnects, stops and deletes", function()
        local item = env:cli({ "inspect", ID })
        if version == "0.12.0" then
          assert.are.equal(0, item.code) -- unknown ids are omitted: []
          assert.are.equal("[]", trim(item.stdout))
        else
          assert.are.equal(1, item.code)
        end
        local sb = started()
        local raw = env:inspect(ID)
        if version == "0.12.0" then
          assert.are.equal("running", raw.status)
        else
          assert.are.equal("running", raw.status.state)
        end
        local again = new_sandbox()
        local mark = env:mark()
        assert(again:start())
        assert.are.same({ { "inspect", ID } }, env:argvs_since(mark))
        assert(sb:stop())
        assert.are.equal("stopped", env:state(ID))
        assert(sb:start())
        assert.are.equal("running", env:state(ID))
        assert(sb:destroy())
        assert.is_nil(env:state(ID))
        -- gone: stop and destroy of the other object find nothing
        assert(again:destroy())
      end)

      it("refuses a foreign container", function()
        cli_ok({ "run", "-d", "--name", ID, "--init", "node:22-slim", "sleep", "infinity" })
        local ok, err = new_sandbox():start()
        assert.is_nil(ok)
        assert.truthy(err.message:find("not labeled as Mastra sandbox", 1, true))
      end)
    end)
  end
end)

describe("AppleContainerSandbox config-hash label", function()
  before_each(function() env = ac.new() end)
  after_each(function() assert.are.same({}, env:teardown()) end)

  local vectors = {
    { name = "all defaults", opts = {}, hash = "dd262544bdd1d32c" },
    { name = "alpine", opts = { image = "alpine:3.20", command = { "sleep", "3600" }, working_dir = "/" },
      hash = "850d57fb631c6ffa" },
    { name = "cpus number", opts = { cpus = 2 }, hash = "dc2354af7cb1a6dc" },
    { name = "cpus string", opts = { cpus = "2" }, hash = "b498e047c23b158b" },
    { name = "env and label", opts = { env = { NODE_ENV = "test" }, labels = { app = "mastra" } },
      hash = "6cd3225bc40271c2" },
    -- beyond the spec's table, checked with sha256sum: maps sorted by key
    { name = "labels and dns", opts = { labels = { b = "2", a = "1", ["\u{e9}"] = "x" }, dns = { "1.1.1.1" } },
      hash = ac.hash_of('{"command":["sleep","infinity"],"dns":["1.1.1.1"],"image":"node:22-slim","init":true,' ..
        '"labels":{"a":"1","b":"2","\u{e9}":"x"},"noDns":false,"readonlyRootfs":false,"rosetta":false,' ..
        '"ssh":false,"virtualization":false,"workingDir":"/workspace"}') },
  }
  for _, v in ipairs(vectors) do
    it("labels " .. v.name .. " with " .. v.hash, function()
      local sb = started(v.opts)
      local labels = env:inspect(ID).configuration.labels
      assert.are.equal(v.hash, labels["mastra.sandbox.config-hash"])
      assert.are.equal("true", labels["mastra.sandbox"])
      assert.are.equal(ID, labels["mastra.sandbox.id"])
      sb:destroy()
    end)
  end

  it("lets a user label of the same name take the Mastra value", function()
    local sb = started({ labels = { ["mastra.sandbox"] = "false", zz = "1" } })
    local argv = env:log()[2].argv
    local labels = {}
    for i, w in ipairs(argv) do if w == "--label" then labels[#labels + 1] = argv[i + 1] end end
    assert.are.equal("mastra.sandbox=true", labels[1])
    assert.are.equal("zz=1", labels[2])
    assert.are.equal("mastra.sandbox.id=" .. ID, labels[3])
    assert.truthy(labels[4]:find("^mastra%.sandbox%.config%-hash="))
    sb:destroy()
  end)
end)

describe("appleContainerSandboxProvider", function()
  local desc = require "sandkit.providers.apple_container"

  it("describes the Apple container sandbox provider", function()
    assert.are.equal("apple-container", desc.editor.id)
    assert.are.equal("Apple Container Sandbox", desc.editor.name)
    assert.truthy(desc.editor.description:find("Apple container", 1, true))
    local listed
    for _, d in ipairs(sandkit.providers()) do if d.id == "apple-container" then listed = d end end
    assert.truthy(listed)
    assert.are.equal("node:22-slim", listed.options.image.default)
    assert.are.equal(300000, listed.options.timeout.default)
    assert.is_true(listed.options.init.default)
    assert.are.equal("number|string", listed.options.cpus.type)
  end)

  it("creates an AppleContainerSandbox from serializable config", function()
    local stored = cjson.decode('{"id":"apple-test","image":"node:22-slim","env":{"NODE_ENV":"test"},' ..
      '"readonly_rootfs":true,"cpus":2,"labels":{"app":"x"},"command":["sleep","infinity"]}')
    local sb = sandkit.new("apple-container", desc.editor.options(stored))
    assert.are.equal("apple-test", sb.id)
    assert.are.equal("AppleContainerSandbox", sb.name)
    assert.is_true(sb:info().metadata.readonly_rootfs)
    local ok, err = pcall(desc.editor.options, { id = "x", container_binary = "/tmp/evil" })
    assert.is_false(ok)
    assert.are.equal("ConfigError", err.kind)
    ok, err = pcall(sandkit.new, "apple-container", { id = "x", imagee = "typo" })
    assert.is_false(ok)
    assert.are.equal("imagee", err.key)
  end)

  it("exposes an exact serializable schema", function()
    local schema = desc.editor.config_schema
    assert.is_false(schema.additional_properties)
    local keys = {}
    for k in pairs(schema.properties) do keys[#keys + 1] = k end
    table.sort(keys)
    local want = { "arch", "cap_add", "cap_drop", "command", "cpus", "delete_on_destroy", "dns", "dns_search",
      "env", "id", "image", "init", "labels", "memory", "mounts", "name", "network", "no_dns", "os", "platform",
      "published_ports", "published_sockets", "readonly_rootfs", "rosetta", "ssh", "timeout", "tmpfs",
      "virtualization", "volumes", "working_dir" }
    table.sort(want)
    assert.are.same(want, keys)
    assert.is_nil(schema.properties.container_binary)
    assert.are.equal(300000, schema.properties.timeout.default)
    assert.are.equal("/workspace", schema.properties.working_dir.default)
    assert.are.same({ { type = "number" }, { type = "string" } }, schema.properties.cpus.any_of)
    assert.are.same({ type = "string" }, schema.properties.labels.additional_properties)
  end)
end)

describe("AppleContainerSandbox.clone", function()
  before_each(function() env = ac.new() end)
  after_each(function() assert.are.same({}, env:teardown()) end)

  it("constructs an unstarted sibling without any I/O", function()
    local template = sandkit.AppleContainerSandbox { image = "ubuntu:24.04", working_dir = "/workspace",
      container_binary = env.binary }
    local child = template:clone({ id = "mc-project-1" })
    assert.are_not.equal(template, child)
    assert.are.equal("mc-project-1", child.id)
    assert.are.equal("pending", child.status)
    assert.are.equal(0, env:mark())
  end)

  it("inherits template config and applies an env override (replacing the env)", function()
    local template = sandkit.AppleContainerSandbox { image = "ubuntu:24.04", env = { BASE = "1" },
      container_binary = env.binary }
    local child = template:clone({ id = "child-1", env = { GITHUB_TOKEN = "ghs_abc" } })
    assert(child:start())
    local run = env:log()[2]
    assert.are.same({ "GITHUB_TOKEN" }, run.env_names)
    assert.are.equal("ubuntu:24.04", run.argv[#run.argv - 2])
    assert.are.equal("ghs_abc\n", assert(child:exec("echo $GITHUB_TOKEN")).stdout)
    child:destroy()
  end)

  it("drops the template name and keeps the timeout", function()
    local template = sandkit.AppleContainerSandbox { image = "ubuntu:24.04", name = "template-box",
      timeout = 120000, container_binary = env.binary }
    local child = template:clone({ id = "mc-project-1" })
    assert.is_nil(child:info().metadata.name)
    assert.are.equal(120000, child:info().metadata.timeout)
    assert(child:start())
    assert.are.equal("running", env:state("mc-project-1"))
    assert.is_nil(env:state("template-box"))
    child:destroy()
    -- sandkit refuses unknown override keys (upstream ignores idleTimeoutMinutes)
    assert.is_false(pcall(template.clone, template, { idle_timeout_minutes = 15 }))
  end)

  it("inherits template defaults when no overrides are passed", function()
    local template = sandkit.AppleContainerSandbox { image = "ubuntu:24.04", env = { BASE = "1" },
      container_binary = env.binary }
    local child = template:clone()
    assert.are_not.equal(template.id, child.id)
    assert.are.equal("ubuntu:24.04", child:info().metadata.image)
    assert(child:start())
    assert.are.same({ "BASE" }, env:log()[2].env_names)
    child:destroy()
  end)
end)
