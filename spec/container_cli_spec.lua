-- The emulated Apple `container` CLI (spec/servers/container/), driven directly
-- through the shell: real containers under bubblewrap, both inspect shapes,
-- env passed by name, the argv log, faults, and nothing left running.

local cjson = require("cjson")

local ac = require "helpers.apple_container"
local CLI = ac.EMULATOR

local q = require("helpers.sh").quote

local files = require "helpers.files"
local read_file, write_file = files.read, files.write

local sh = require("helpers.sh").capture

local STATE = sh("mktemp -d /tmp/sandkit-container-spec.XXXXXX"):gsub("%s+$", "")
local SCRATCH = STATE .. "-scratch"
-- sleeps no other run on this machine has: the host-wide process checks
-- see only ours (a pid taken by this run makes them unique)
local RUN = sh("echo $$"):gsub("%s+$", "")
local INNER_SECS = "4321." .. RUN
local DELETED_SECS = "8765." .. RUN
local HANG_SECS = tonumber("4242." .. RUN)
os.execute("mkdir -p " .. q(SCRATCH))

-- Runs the CLI. opts.env: variables for this call (written to a file and sourced,
-- so no value sits on any command line); opts.stdin: text for stdin; opts.prefix:
-- shell words put before the CLI (e.g. "timeout 5").
local function cli(args, opts)
  opts = opts or {}
  local envfile = SCRATCH .. "/env.sh"
  local lines = { "export SANDKIT_CONTAINER_STATE=" .. q(STATE) }
  for k, v in pairs(opts.env or {}) do lines[#lines + 1] = "export " .. k .. "=" .. q(v) end
  write_file(envfile, table.concat(lines, "\n") .. "\n")
  local words = {}
  for i, a in ipairs(args) do words[i] = q(a) end
  local errfile = SCRATCH .. "/stderr"
  local stdin = "/dev/null"
  if opts.stdin then
    stdin = SCRATCH .. "/stdin"
    write_file(stdin, opts.stdin)
  end
  local cmd = ". " .. q(envfile) .. " && " .. (opts.prefix or "") .. " " .. q(CLI) .. " " ..
    table.concat(words, " ") .. " <" .. q(stdin) .. " 2>" .. q(errfile)
  local f = io.popen(cmd, "r")
  local stdout = f:read("a")
  local _, _, code = f:close()
  return { code = code, stdout = stdout, stderr = read_file(errfile) or "" }
end

local function ok(r)
  assert.are.equal(0, r.code, "exit " .. tostring(r.code) .. ", stderr: " .. r.stderr)
  return r
end

local function inspect(id, version)
  local r = cli({ "inspect", id }, { env = { SANDKIT_CONTAINER_CLI_VERSION = version or "1.0" } })
  return r, r.code == 0 and cjson.decode(r.stdout) or nil
end

local function state_of(id)
  local _, list = inspect(id)
  return list and list[1] and list[1].status.state
end

local function argv_log()
  local entries = {}
  for line in (read_file(STATE .. "/argv.log") or ""):gmatch("[^\n]+") do
    entries[#entries + 1] = cjson.decode(line)
  end
  return entries
end

local function last_call(command)
  local entries = argv_log()
  for i = #entries, 1, -1 do
    if entries[i].command == command then return entries[i] end
  end
end

-- Polls a condition (bounded); the emulator's init exiting is asynchronous.
local function eventually(fn, seconds)
  for _ = 1, math.floor((seconds or 5) / 0.05) do
    if fn() then return true end
    os.execute("sleep 0.05")
  end
  return fn()
end

-- Live (non-zombie) processes whose command line contains `needle`.
local live_processes = ac.live_processes

local function run_container(name, extra)
  local args = { "run", "-d", "--name", name, "--workdir", "/workspace" }
  for _, a in ipairs(extra or {}) do args[#args + 1] = a end
  for _, a in ipairs({ "node:22-slim", "sleep", "infinity" }) do args[#args + 1] = a end
  return cli(args)
end

-- Live processes matching `needle` once they had (bounded) time to go: a
-- killed process leaves /proc asynchronously.
local function live_after(needle)
  local left
  eventually(function()
    left = live_processes(needle)
    return #left == 0
  end, 10)
  return left
end

describe("emulated container CLI", function()
  teardown(function()
    cli({ "_reap-all", "--delete" })
    local left = live_after(STATE)
    os.execute("rm -rf " .. q(STATE) .. " " .. q(SCRATCH))
    assert.are.same({}, left)
  end)

  describe("run and inspect", function()
    it("starts a long-lived container and records its configuration", function()
      local r = ok(run_container("c-run", { "--label", "app=mastra", "--label", "mastra.sandbox=true",
        "--cpus", "2", "--memory", "512M", "--tmpfs", "/scratch", "--init" }))
      assert.are.equal("c-run\n", r.stdout)
      local _, list = inspect("c-run")
      assert.are.equal(1, #list)
      local c = list[1]
      assert.are.equal("c-run", c.id)
      assert.are.equal("running", c.status.state)
      assert.are.equal("mastra", c.configuration.labels.app)
      assert.are.equal("true", c.configuration.labels["mastra.sandbox"])
      assert.are.equal(2, c.configuration.resources.cpus)
      assert.are.equal(512 * 1024 * 1024, c.configuration.resources.memoryInBytes)
      assert.are.equal("/workspace", c.configuration.initProcess.workingDirectory)
      assert.are.equal("sleep", c.configuration.initProcess.executable)
      assert.is_true(c.configuration.useInit)
      assert.are.equal("docker.io/library/node:22-slim", c.configuration.image.reference)
      assert.truthy(c.configuration.creationDate:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$"))
    end)

    it("prints the 1.0 shape pretty, with Swift's escaped slashes", function()
      local r = ok(cli({ "inspect", "c-run" }))
      assert.truthy(r.stdout:find('^%[\n  {\n    "configuration" : {'))
      assert.truthy(r.stdout:find('"workingDirectory" : "\\/workspace"', 1, true))
    end)

    it("prints the pre-1.0 shape with a plain status string", function()
      local r, list = inspect("c-run", "0.12")
      assert.are.equal(0, r.code)
      assert.are.equal("running", list[1].status)
      assert.is_nil(list[1].id)
      assert.are.equal("c-run", list[1].configuration.id)
      -- JSONEncoder's default date: seconds since 2001-01-01
      assert.are.equal("number", type(list[1].configuration.creationDate))
      assert.is_true(list[1].configuration.creationDate > 7e8)
    end)

    it("reports an unknown container by CLI version", function()
      local old = cli({ "inspect", "nope" }, { env = { SANDKIT_CONTAINER_CLI_VERSION = "0.12.3" } })
      assert.are.equal(0, old.code)
      assert.are.equal("[]\n", old.stdout)
      local new = cli({ "inspect", "nope" })
      assert.are_not.equal(0, new.code)
      assert.are.equal('Error: notFound: "container not found: nope"\n', new.stderr)
    end)

    it("refuses a second container with the same name", function()
      local r = run_container("c-run")
      assert.are.equal(1, r.code)
      assert.truthy(r.stderr:find("already exists", 1, true))
    end)

    it("fails like the real CLI for a missing image, leaving nothing behind", function()
      local r = cli({ "run", "-d", "--name", "c-noimage", "invalid/does-not-exist", "sleep", "1" })
      assert.are.equal(1, r.code)
      assert.truthy(r.stderr:find("^Error: internalError: \"HTTP request to https://registry%-1%.docker%.io/v2/invalid/does%-not%-exist/manifests/latest failed"))
      assert.are_not.equal(0, cli({ "inspect", "c-noimage" }).code)
    end)

    it("refuses invalid names the way Apple validates them", function()
      local r = cli({ "run", "-d", "--name", "x", "alpine", "sleep", "1" })
      assert.are.equal(1, r.code)
      assert.are.equal('Error: invalidArgument: "invalid entity name x"\n', r.stderr)
    end)

    it("marks a container whose init command exits as stopped", function()
      ok(cli({ "run", "-d", "--name", "c-false", "--init", "alpine", "false" }))
      assert.is_true(eventually(function() return state_of("c-false") == "stopped" end))
      local r = cli({ "exec", "c-false", "true" })
      assert.are.equal('Error: invalidState: "container c-false is not running"\n', r.stderr)
      ok(cli({ "delete", "--force", "c-false" }))
    end)
  end)

  describe("exec", function()
    it("passes stdout, stderr and the exit status through", function()
      local r = cli({ "exec", "c-run", "sh", "-c", "echo out; echo err >&2; exit 3" })
      assert.are.equal(3, r.code)
      assert.are.equal("out\n", r.stdout)
      assert.are.equal("err\n", r.stderr)
    end)

    it("runs in the container's working directory, or --workdir", function()
      assert.are.equal("/workspace\n", ok(cli({ "exec", "c-run", "pwd" })).stdout)
      assert.are.equal("/tmp\n", ok(cli({ "exec", "--workdir", "/tmp", "c-run", "pwd" })).stdout)
    end)

    it("sees the container's own hostname and processes", function()
      assert.are.equal("c-run\n", ok(cli({ "exec", "c-run", "hostname" })).stdout)
      local ps = ok(cli({ "exec", "c-run", "sh", "-c", "ps -eo args" })).stdout
      assert.truthy(ps:find("sleep infinity", 1, true))
      assert.is_nil(ps:find("busted", 1, true))
    end)

    it("takes --env KEY values from the CLI's environment and logs only names", function()
      local secret = "s3cr3t-" .. tostring(os.time())
      local r = ok(cli({ "exec", "--env", "SANDKIT_TOKEN", "--env", "MISSING_ONE", "--env", "PLAIN=1",
        "c-run", "sh", "-c", 'printf "%s|%s|%s" "$SANDKIT_TOKEN" "${MISSING_ONE-unset}" "$PLAIN"' },
        { env = { SANDKIT_TOKEN = secret } }))
      assert.are.equal(secret .. "|unset|1", r.stdout)
      local entry = last_call("exec")
      assert.are.same({ "SANDKIT_TOKEN", "MISSING_ONE" }, entry.env_names)
      assert.are.same({ "MISSING_ONE" }, entry.env_unset)
      assert.are.same({ "PLAIN" }, entry.env_inline)
      assert.is_nil((read_file(STATE .. "/argv.log")):find(secret, 1, true))
    end)

    it("keeps the run environment for later execs", function()
      ok(cli({ "run", "-d", "--name", "c-env", "--env", "RUN_TOKEN", "--init", "alpine", "sleep", "infinity" },
        { env = { RUN_TOKEN = "from-run" } }))
      assert.are.equal("from-run", ok(cli({ "exec", "c-env", "printenv", "RUN_TOKEN" })).stdout:gsub("\n", ""))
      ok(cli({ "delete", "--force", "c-env" }))
    end)

    it("passes stdin through with -i", function()
      local r = ok(cli({ "exec", "-i", "c-run", "cat" }, { stdin = "hello\n" }))
      assert.are.equal("hello\n", r.stdout)
    end)

    it("forwards SIGTERM to the process", function()
      local fifo = SCRATCH .. "/fifo"
      os.execute("rm -f " .. q(fifo) .. " && mkfifo " .. q(fifo))
      local script = table.concat({
        "export SANDKIT_CONTAINER_STATE=" .. q(STATE),
        q(CLI) .. " exec c-run sh -c 'trap \"echo got-term; exit 7\" TERM; echo ready; while :; do sleep 0.05; done' >" .. q(fifo) .. " &",
        "p=$!",
        "exec 3<" .. q(fifo),
        "read -r line <&3",
        "kill -TERM $p",
        "wait $p",
        "echo \"rc=$? first=$line\"",
        "cat <&3",
      }, "\n")
      local out = sh("timeout 20 sh -c " .. q(script))
      assert.truthy(out:find("rc=7 first=ready", 1, true), out)
      assert.truthy(out:find("got-term", 1, true), out)
    end)

    it("runs the in-container timeout wrapper: 124 with the marker, nothing left", function()
      local inner = "sh -lc 'sleep " .. INNER_SECS .. "' & child=$!; trap 'kill -TERM \"$child\" 2>/dev/null; " ..
        "wait \"$child\" 2>/dev/null; exit 124' TERM INT; wait \"$child\"; code=$?; trap - TERM INT; " ..
        "printf %s \"$code\" > \"$MASTRA_TIMEOUT_RESULT_FILE\"; exit \"$code\""
      local outer = "result_file=/tmp/.mastra-apple-container-exit-$$; rm -f \"$result_file\"; " ..
        "MASTRA_TIMEOUT_RESULT_FILE=\"$result_file\" timeout 0.1s sh -lc " .. q(inner) ..
        "; timeout_code=$?; if [ -f \"$result_file\" ]; then code=$(cat \"$result_file\"); " ..
        "rm -f \"$result_file\"; exit \"$code\"; fi; rm -f \"$result_file\"; " ..
        "if [ \"$timeout_code\" = 124 ] || [ \"$timeout_code\" = 137 ] || [ \"$timeout_code\" = 143 ]; " ..
        "then printf '%s\\n' __MASTRA_APPLE_CONTAINER_TIMEOUT__ >&2; exit 124; fi; exit \"$timeout_code\""
      local r = cli({ "exec", "c-run", "sh", "-lc", outer })
      assert.are.equal(124, r.code)
      assert.truthy(r.stderr:find("__MASTRA_APPLE_CONTAINER_TIMEOUT__", 1, true))
      assert.is_true(eventually(function()
        return cli({ "exec", "c-run", "sh", "-lc", "pgrep -af '[s]leep " .. INNER_SECS .. "'" }).code == 1
      end, 10), "sleep " .. INNER_SECS .. " still runs in the container")
      assert.are.same({}, live_after("sleep " .. INNER_SECS))
    end)

    it("fails for an unknown container with Apple's wording", function()
      local r = cli({ "exec", "nope", "true" })
      assert.are.equal(1, r.code)
      assert.are.equal('Error: notFound: "get failed: container nope not found"\n', r.stderr)
    end)
  end)

  describe("stop, start and delete", function()
    it("keeps files across stop/start; a tmpfs starts empty", function()
      ok(cli({ "exec", "c-run", "sh", "-c", "echo kept > /workspace/a; echo kept > /tmp/b; echo gone > /scratch/c" }))
      assert.are.equal("c-run\n", ok(cli({ "stop", "c-run" })).stdout)
      assert.are.equal("stopped", state_of("c-run"))
      local _, old = inspect("c-run", "0.12")
      assert.are.equal("stopped", old[1].status)
      local r = cli({ "exec", "c-run", "true" })
      assert.are.equal(1, r.code)
      assert.truthy(r.stderr:find("is not running", 1, true))
      assert.are.equal("c-run\n", ok(cli({ "start", "c-run" })).stdout)
      assert.are.equal("running", state_of("c-run"))
      local files = ok(cli({ "exec", "c-run", "sh", "-c", "cat /workspace/a /tmp/b; ls /scratch | wc -l" })).stdout
      assert.are.equal("kept\nkept\n0\n", files)
    end)

    it("stops a container whose PID 1 ignores SIGTERM after --time", function()
      ok(cli({ "run", "-d", "--name", "c-noinit", "alpine", "sleep", "infinity" }))
      ok(cli({ "stop", "--time", "0", "c-noinit" }))
      assert.are.equal("stopped", state_of("c-noinit"))
      ok(cli({ "delete", "c-noinit" }))
    end)

    it("refuses to delete a running container without --force", function()
      local r = cli({ "delete", "c-run" })
      assert.are.equal(1, r.code)
      assert.are.equal('Error: internalError: "failed to delete container" (cause: "invalidState: ' ..
        '"container c-run is running and can not be deleted"")\n', r.stderr)
    end)

    it("reports unknown containers on stop and delete", function()
      assert.truthy(cli({ "stop", "nope" }).stderr:find('container with ID nope not found', 1, true))
      assert.truthy(cli({ "delete", "--force", "nope" }).stderr:find('container with ID nope not found', 1, true))
    end)

    it("supports a read-only root with a tmpfs and a host volume", function()
      local vol = SCRATCH .. "/vol"
      os.execute("mkdir -p " .. q(vol))
      ok(cli({ "run", "-d", "--name", "c-ro", "--read-only", "--init", "--tmpfs", "/tmp",
        "--volume", vol .. ":/data", "alpine", "sleep", "infinity" }))
      local r = cli({ "exec", "c-ro", "sh", "-c", "touch /x 2>/dev/null && echo wrote; touch /tmp/y && echo /tmp-ok; echo v > /data/f" })
      assert.are.equal("/tmp-ok\n", r.stdout)
      assert.are.equal("v\n", read_file(vol .. "/f"))
      ok(cli({ "delete", "--force", "c-ro" }))
    end)

    it("lists running containers, or all with --all, as table or JSON", function()
      ok(cli({ "run", "-d", "--name", "c-stopped", "--init", "alpine", "sleep", "infinity" }))
      ok(cli({ "stop", "c-stopped" }))
      local table_out = ok(cli({ "list" })).stdout
      assert.truthy(table_out:find("^ID%s+IMAGE"))
      assert.truthy(table_out:find("c-run", 1, true))
      assert.is_nil(table_out:find("c-stopped", 1, true))
      local all = cjson.decode(ok(cli({ "list", "--all", "--format", "json" })).stdout)
      local states = {}
      for _, c in ipairs(all) do states[c.id] = c.status.state end
      assert.are.equal("running", states["c-run"])
      assert.are.equal("stopped", states["c-stopped"])
      assert.are.equal("c-run\n", ok(cli({ "list", "-q" })).stdout)
    end)

    it("deletes with --force and the container is gone", function()
      ok(cli({ "run", "-d", "--name", "c-del", "--init", "alpine", "sleep", DELETED_SECS }))
      assert.are.equal("c-del\n", ok(cli({ "delete", "--force", "c-del" })).stdout)
      local r = cli({ "inspect", "c-del" })
      assert.are_not.equal(0, r.code)
      assert.truthy(r.stderr:find("not found", 1, true))
      assert.are.same({}, live_after("sleep " .. DELETED_SECS))
    end)
  end)

  describe("command line", function()
    it("refuses unknown options and subcommands", function()
      local r = cli({ "run", "-d", "--frobnicate", "alpine" })
      assert.are.equal(64, r.code)
      assert.truthy(r.stderr:find("^Error: Unknown option '%-%-frobnicate'\nUsage: container run"))
      local e = cli({ "exec", "--bogus", "c-run", "true" })
      assert.are.equal(64, e.code)
      local s = cli({ "frobnicate" })
      assert.are.equal(64, s.code)
      assert.truthy(s.stderr:find("Plugin 'container-frobnicate' not found.", 1, true))
    end)

    it("only knows flags that exist in the emulated CLI version", function()
      local r = cli({ "run", "-d", "--name", "c-old", "--init", "alpine", "sleep", "1" },
        { env = { SANDKIT_CONTAINER_CLI_VERSION = "0.9" } })
      assert.are.equal(64, r.code)
      assert.truthy(r.stderr:find("Unknown option '--init'", 1, true))
      assert.truthy(ok(cli({ "--version" }, { env = { SANDKIT_CONTAINER_CLI_VERSION = "0.12.3" } }))
        .stdout:find("^container CLI version 0%.12%.3 "))
    end)

    it("treats words after the image as the command", function()
      ok(cli({ "run", "-d", "--name", "c-args", "--init", "alpine", "sh", "-c", "sleep infinity", "--name" }))
      local _, list = inspect("c-args")
      assert.are.same({ "-c", "sleep infinity", "--name" }, list[1].configuration.initProcess.arguments)
      ok(cli({ "delete", "--force", "c-args" }))
    end)

    it("logs every argv as one JSON line", function()
      cli({ "inspect", "c-run" })
      local entry = last_call("inspect")
      assert.are.same({ "inspect", "c-run" }, entry.argv)
      cli({ "nonsense", "--x" })
      assert.are.same({ "nonsense", "--x" }, argv_log()[#argv_log()].argv)
    end)
  end)

  describe("faults", function()
    after_each(function() os.remove(STATE .. "/faults.json") end)

    it("answers with garbage instead of JSON", function()
      write_file(STATE .. "/faults.json", cjson.encode({ { command = "inspect", stdout = "not json" } }))
      local r = cli({ "inspect", "c-run" })
      assert.are.equal(0, r.code)
      assert.are.equal("not json", r.stdout)
    end)

    it("fails a matching call a given number of times", function()
      write_file(STATE .. "/faults.json", cjson.encode({
        { command = "start", match = "c-stopped", exit = 5, stderr = "start failed", times = 1 } }))
      local r = cli({ "start", "c-stopped" })
      assert.are.equal(5, r.code)
      assert.are.equal("start failed\n", r.stderr)
      ok(cli({ "start", "c-stopped" }))
      ok(cli({ "delete", "--force", "c-stopped" }))
    end)

    it("takes rules from the environment too", function()
      local r = cli({ "exec", "c-run", "true" },
        { env = { SANDKIT_CONTAINER_FAULTS = '{"exec":{"exit":7,"stderr":"container service unavailable"}}' } })
      assert.are.equal(7, r.code)
      assert.are.equal("container service unavailable\n", r.stderr)
    end)

    it("delays an answer, then answers normally", function()
      write_file(STATE .. "/faults.json", cjson.encode({ inspect = { delay_ms = 200 } }))
      local r = ok(cli({ "inspect", "c-run" }))
      assert.are.equal("running", cjson.decode(r.stdout)[1].status.state)
    end)

    it("hangs until killed, leaving no process behind", function()
      write_file(STATE .. "/faults.json", cjson.encode({ { command = "list", hang = HANG_SECS } }))
      local r = cli({ "list" }, { prefix = "timeout 0.5" })
      assert.are.equal(124, r.code)
      assert.are.same({}, live_after("sleep " .. tostring(HANG_SECS)))
    end)
  end)
end)
