-- DockerSandbox (provider docker) against a private Podman service
-- (spec/helpers/podman.lua). What is checked is upstream's @mastra/docker
-- 0.3.0 contract as seen from outside (labels, names, the create body,
-- reconnect by label, stop, destroy, info), sandkit's exec contract, kill
-- and timeout ending the command inside the container, TCP and TLS, and
-- the faults of docs/protocols/docker.md §7 a real daemon shows (a missing
-- image, a failed pull, a container removed, the daemon killed). Options
-- and the faults only a fake daemon shows: spec/docker_offline_spec.lua.
-- Under CI=true a machine without Podman fails.
local sandkit = require "sandkit"
local cjson = require "cjson"
local podman = require "helpers.podman"
local server = require "helpers.server"
local child = require "helpers.child"

if not podman.usable(pending, "DockerSandbox specs") then return end

local q = podman.q

local env

local function inspect(id)
  local body, status = env:api("GET", "/v1.41/containers/" .. id .. "/json")
  assert.equal(200, status, body)
  return cjson.decode(body)
end

local function container_of(sb)
  return assert(sb:info()).metadata.container_id
end

-- Processes in the container whose command line is `args` exactly
-- (a Lua pattern), not a shell that merely mentions it.
local function in_container(sb, args)
  local r = assert(sb:exec("ps -o pid,args"))
  local n = 0
  for line in r.stdout:gmatch("[^\n]+") do
    if line:match("^%s*%d+%s+" .. args .. "%s*$") then n = n + 1 end
  end
  return n
end

local function wait_until(what, ms, fn)
  local limit = sandkit.now() + ms
  while not fn() do
    assert(sandkit.now() < limit, "timed out waiting for " .. what)
    sandkit.sleep(0.05)
  end
end

setup(function() env = podman.new() end)

teardown(function()
  require("helpers.tmp").cleanup()
  if env then env:close() end
end)

describe("DockerSandbox lifecycle", function()
  it("creates the container as upstream: name, labels, env, working dir, stdin open, host config", function()
    local sb = env:sandbox { id = "Spec Box/1", env = { GREETING = "hello there" }, labels = { team = "qa" },
      memory = 64 * 1024 * 1024, pids_limit = 64, cpu_shares = 512, cpu_quota = 50000, cpu_period = 100000,
      cap_drop = { "NET_RAW" }, security_opt = { "no-new-privileges" }, tmpfs = { ["/scratch"] = "size=1m" },
      -- nproc too: given ulimits replace the service's defaults, and runc
      -- cannot raise nproc here (docs/protocols/docker.md §7)
      ulimits = { { name = "nofile", soft = 256, hard = 512 }, { name = "nproc", soft = 1024, hard = 1024 } },
      working_dir = "/work" }
    assert(sb:start())
    local c = inspect(container_of(sb))
    -- upstream's sanitizeContainerName: "Spec Box/1" -> "Spec-Box-1"
    assert.equal("Spec-Box-1", (c.Name:gsub("^/", "")))
    assert.equal("true", c.Config.Labels["mastra.sandbox"])
    assert.equal("Spec Box/1", c.Config.Labels["mastra.sandbox.id"])
    assert.equal("qa", c.Config.Labels.team)
    assert.equal("/work", c.Config.WorkingDir)
    assert.is_true(c.Config.OpenStdin)
    assert.is_false(c.Config.Tty)
    local has_env = false
    for _, kv in ipairs(c.Config.Env) do has_env = has_env or kv == "GREETING=hello there" end
    assert.is_true(has_env)
    assert.equal(64 * 1024 * 1024, c.HostConfig.Memory)
    assert.equal(64, c.HostConfig.PidsLimit)
    assert.equal(512, c.HostConfig.CpuShares)
    assert.equal(50000, c.HostConfig.CpuQuota)
    assert.equal(100000, c.HostConfig.CpuPeriod)
    assert.truthy(table.concat(c.HostConfig.CapDrop, ","):find("NET_RAW"))
    assert.truthy(c.HostConfig.Tmpfs["/scratch"])
    -- the limits hold inside
    -- the container's own process (Podman gives an exec the hard limit as
    -- its soft one when ulimits are set)
    local r = assert(sb:exec("grep 'open files' /proc/1/limits; cat /sys/fs/cgroup/pids.max 2>/dev/null || " ..
      "cat /sys/fs/cgroup/pids/pids.max"))
    assert.matches("^Max open files%s+256%s+512%s+files%s*\n64\n", r.stdout)
    assert.equal("/work\n", assert(sb:exec("pwd")).stdout)
    assert(sb:destroy())
  end)

  it("reconnects by label: a stopped container is started again, never recreated", function()
    local sb = env:sandbox()
    assert(sb:start())
    local id = container_of(sb)
    assert.equal(0, assert(sb:exec("echo kept > /tmp/mark")).exit_code)
    assert(sb:stop())
    assert.equal("exited", inspect(id).State.Status)
    local again = env:sandbox { id = sb.id }
    assert(again:start())
    assert.equal(id, container_of(again))
    assert.equal("kept\n", assert(again:exec("cat /tmp/mark")).stdout)
    assert(again:destroy())
    local _, status = env:api("GET", "/v1.41/containers/" .. id .. "/json")
    assert.equal(404, status)
  end)

  it("adopts a container another client made with upstream's labels", function()
    local body = cjson.encode({ Image = podman.IMAGE, Cmd = { "sleep", "infinity" },
      Labels = { ["mastra.sandbox"] = "true", ["mastra.sandbox.id"] = "made-elsewhere" }, OpenStdin = true })
    local out, status = env:api("POST", "/v1.41/containers/create?name=made-elsewhere", body)
    assert.equal(201, status, out)
    local id = cjson.decode(out).Id
    local sb = env:sandbox { id = "made-elsewhere" }
    assert(sb:start())
    assert.equal(id, container_of(sb))
    assert.equal("running", assert(sb:info()).metadata.state)
    assert(sb:destroy())
  end)

  it("stops and destroys through a fresh instance that never started (found by label)", function()
    local sb = env:sandbox()
    assert(sb:start())
    local id = container_of(sb)
    local other = env:sandbox { id = sb.id }
    assert(other:stop())
    assert.equal("exited", inspect(id).State.Status)
    assert(sandkit.DockerSandbox({ id = sb.id, docker_host = env.docker_host }):destroy())
    local _, status = env:api("GET", "/v1.41/containers/" .. id .. "/json")
    assert.equal(404, status)
  end)

  it("info() reports the container as upstream's getInfo does", function()
    local sb = env:sandbox()
    assert(sb:start())
    local info = assert(sb:info())
    local c = inspect(info.metadata.container_id)
    assert.equal(c.Id, info.metadata.container_id)
    assert.equal(c.Name, info.metadata.container_name)
    assert.equal("running", info.metadata.state)
    assert.equal(podman.IMAGE, info.metadata.image)
    assert.equal(c.Created:sub(1, 19), info.created_at:sub(1, 19))
    assert(sb:destroy())
  end)

  it("runs a fleet of containers", function()
    local fleet = sandkit.fleet(env:sandbox(), 3)
    local results = fleet:exec("hostname")
    local names = {}
    for _, r in ipairs(results) do
      assert.equal(0, r.exit_code)
      names[r.stdout] = true
    end
    local n = 0
    for _ in pairs(names) do n = n + 1 end
    assert.equal(3, n)
    fleet:destroy()
  end)
end)

describe("DockerSandbox commands", function()
  local sb
  setup(function()
    sb = env:sandbox()
    assert(sb:start())
  end)
  teardown(function() sb:destroy() end)

  it("quote each argument and merge env per command over the sandbox's", function()
    local r = assert(sb:exec("printf '%s|'", { "a b", "it's", "$HOME", "" }, { env = { X = "1" }, cwd = "/tmp" }))
    assert.equal("a b|it's|$HOME||", r.stdout)
    assert.equal("/tmp\n", assert(sb:exec("pwd", nil, { cwd = "/tmp" })).stdout)
  end)

  it("keep the wrapper's pid line out of stderr, and report sh's own errors", function()
    local r = assert(sb:exec("echo out; echo err >&2"))
    assert.equal("err\n", r.stderr)
    r = assert(sb:exec("exit 7"))
    assert.equal(7, r.exit_code)
    r = assert(sb:exec("no-such-command-here"))
    assert.equal(127, r.exit_code)
    assert.matches("not found", r.stderr)
  end)

  it("a timeout ends the command and its children inside the container (124, timed_out)", function()
    local r = assert(sb:exec("sleep 300 & sleep 301; wait", nil, { timeout = 300 }))
    assert.equal(124, r.exit_code)
    assert.is_true(r.timed_out)
    wait_until("the sleeps to end", 10000, function() return in_container(sb, "sleep 30[01]") == 0 end)
  end)

  it("kill() and cancel end the command inside the container (upstream issue 23773)", function()
    local h = assert(sb.processes:spawn("sleep 302 & sleep 303; wait"))
    wait_until("the command to run", 10000, function() return in_container(sb, "sleep 303") == 1 end)
    assert.is_true(h:kill())
    local r = assert(h:wait())
    assert.equal(137, r.exit_code)
    assert.is_true(r.killed)
    wait_until("the sleeps to end", 10000, function() return in_container(sb, "sleep 30[23]") == 0 end)
    local op = sb:exec_async("sleep 304")
    wait_until("the command to run", 10000, function() return in_container(sb, "sleep 304") == 1 end)
    op:cancel()
    r = assert(op:wait())
    assert.is_true(r.cancelled)
    wait_until("the sleep to end", 10000, function() return in_container(sb, "sleep 304") == 0 end)
  end)

  it("a kill asked before the command has started ends it too", function()
    local op = sb:exec_async("sleep 305")
    op:cancel()
    local r = assert(op:wait())
    assert.is_true(r.cancelled)
    assert.equal(0, in_container(sb, "sleep 305"))
  end)

  it("streams stdin both ways and keeps max_output_bytes", function()
    local h = assert(sb.processes:spawn("cat"))
    assert(h:send_stdin("one\n"))
    assert(h:send_stdin("two\n"))
    h:close_stdin()
    assert.equal("one\ntwo\n", assert(h:wait()).stdout)
    local r = assert(sb:exec("head -c 300000 /dev/zero | tr '\\0' x", nil, { max_output_bytes = 1000 }))
    assert.equal(1000, #r.stdout)
    assert.is_true(r.truncated)
    local lines = {}
    r = assert(sb:exec("printf 'a\\nb\\nc'", nil, { on_stdout_line = function(l) lines[#lines + 1] = l end }))
    assert.same({ "a", "b", "c" }, lines)
    r = assert(sb:exec("echo buffered", nil, { capture = "buffer" }))
    assert.equal("buffered\n", tostring(r.stdout))
  end)

  it("runs many commands at once on one container", function()
    local ops = {}
    for i = 1, 12 do ops[i] = sb:exec_async("echo " .. i) end
    for i = 1, 12 do assert.equal(i .. "\n", assert(ops[i]:wait()).stdout) end
  end)
end)

describe("DockerSandbox from the command line", function()
  -- bin/sandkit with the service's socket in DOCKER_HOST; stdout, stderr, status
  local function cli(args)
    local dir = require("helpers.tmp").dir()
    local words = {}
    for i, a in ipairs(args) do words[i] = q(a) end
    local cmd = ("cd %s && env %s DOCKER_HOST=%s timeout -k 5 120 lua5.4 %s %s; echo \"status $?\""):format(
      q(dir), child.LUA_ENV, q(env.docker_host), q(child.ROOT .. "/bin/sandkit"), table.concat(words, " "))
    local out, err = child.run(cmd, dir)
    local status = tonumber(out:match("status (%d+)\n$"))
    return out:gsub("status %d+\n$", ""), err, status
  end

  it("exec --provider docker --image runs the command in a container it then removes", function()
    local before = #env:containers()
    local out, err, status = cli({ "exec", "--provider", "docker", "--image", podman.IMAGE, "--", "echo hi; exit 3" })
    assert.equal(3, status, err)
    assert.equal("hi\n", out)
    assert.equal(before, #env:containers())
  end)

  it("cp copies to and from docker:PATH of the sandbox its id names", function()
    local sb = env:sandbox()
    assert(sb:start())
    local host = require("helpers.tmp").dir() .. "/in.txt"
    require("helpers.files").write(host, "through the CLI\n")
    local opts = { "--opt", "id=" .. sb.id, "--opt", "image=" .. podman.IMAGE }
    local _, err, status = cli({ "cp", opts[1], opts[2], opts[3], opts[4], host, "docker:/tmp/copied.txt" })
    assert.equal(0, status, err)
    assert.equal("through the CLI\n", sb.fs:read_file("/tmp/copied.txt"))
    _, err, status = cli({ "cp", opts[1], opts[2], opts[3], opts[4], "docker:/tmp/copied.txt", host .. ".back" })
    assert.equal(0, status, err)
    assert.equal("through the CLI\n", require("helpers.files").must_read(host .. ".back"))
    assert(sb:destroy())
  end)
end)

describe("DockerSandbox over TCP", function()
  local PROXY = child.ROOT .. "/spec/servers/docker/proxy.mjs"
  -- a child process, so DOCKER_HOST and the TLS variables are its own
  local SCRIPT = [[
    local sandkit = require "sandkit"
    local sb = sandkit.DockerSandbox { image = arg[1] }
    local ok, err = sb:start()
    if not ok then io.write("ERR ", err.kind, " ", err.message) return end
    local r = assert(sb:exec("cat; echo done", nil, { stdin = "over the wire\n" }))
    local h = assert(sb.processes:spawn("cat"))
    h:send_stdin("half-closed")
    h:close_stdin()
    local t = assert(sb:exec("sleep 30", nil, { timeout = 300 }))
    io.write(r.stdout, assert(h:wait()).stdout, "\n", t.exit_code, "\n", tostring(sb:destroy()))
  ]]

  local function run(vars)
    local dir = child.config({})
    local script = child.script("tcp.lua", SCRIPT)
    return (child.run(("env -u DOCKER_TLS -u DOCKER_TLS_VERIFY -u DOCKER_CERT_PATH %s %s lua5.4 %s %s"):format(
      child.LUA_ENV, vars, q(script), q(podman.IMAGE)), dir))
  end

  it("plain: DOCKER_HOST=tcp://127.0.0.1:<port>", function()
    local srv = server.start(PROXY, { env.socket })
    local out = run("DOCKER_HOST=tcp://127.0.0.1:" .. srv.port)
    srv:stop()
    assert.equal("over the wire\ndone\nhalf-closed\n124\ntrue", out)
  end)

  it("TLS: DOCKER_TLS_VERIFY with DOCKER_CERT_PATH's ca.pem, cert.pem and key.pem; a client without a certificate is refused", function()
    local certs = require("helpers.tmp").dir()
    local gen = table.concat({
      "set -e", "cd " .. q(certs),
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 1 -subj /CN=sandkit-ca",
      "openssl req -newkey rsa:2048 -nodes -keyout server-key.pem -out server.csr -subj /CN=127.0.0.1",
      "printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext",
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out server.pem -days 1 -extfile san.ext",
      "openssl req -newkey rsa:2048 -nodes -keyout key.pem -out client.csr -subj /CN=client",
      "printf 'extendedKeyUsage=clientAuth\\n' > client.ext",
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out cert.pem -days 1 -extfile client.ext",
      "mkdir ca-only && cp ca.pem ca-only/",
    }, "\n")
    local out, code = require("helpers.sh").capture("sh -c " .. q(gen) .. " 2>&1")
    assert.equal(0, code, out)
    local srv = server.start(PROXY, { env.socket, certs })
    local base = "DOCKER_HOST=tcp://127.0.0.1:" .. srv.port .. " DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH="
    local good = run(base .. q(certs))
    local refused = run(base .. q(certs .. "/ca-only"))
    srv:stop()
    assert.equal("over the wire\ndone\nhalf-closed\n124\ntrue", good)
    assert.matches("^ERR NetworkError Cannot reach the Docker daemon at tcp://127%.0%.0%.1:%d+ %(DOCKER_HOST%)", refused)
  end)
end)

describe("DockerSandbox faults", function()
  it("a missing image with pull = never: a clear error, no pull, no container", function()
    local sb = env:sandbox { image = "localhost/sandkit-nothing:here", pull = "never" }
    local okk, err = sb:start()
    assert.is_nil(okk)
    assert.equal("DockerApiError", err.kind)
    assert.equal("image_not_found", err.reason)
    assert.matches("not present locally and the pull option is \"never\"", err.message)
    assert.equal("error", sb.status)
  end)

  it("a failed pull that Podman reports inside a 200 stream is an error", function()
    local sb = env:sandbox { image = "localhost:1/sandkit-nope:x" }
    local okk, err = sb:start()
    assert.is_nil(okk)
    assert.equal("DockerApiError", err.kind)
    assert.equal("image_pull_failed", err.reason)
    assert.matches("^Failed to pull Docker image 'localhost:1/sandkit%-nope:x': ", err.message)
    assert.matches("connection refused", err.message)
  end)

  it("a container removed behind sandkit's back: exec fails clearly, destroy still succeeds", function()
    local sb = env:sandbox()
    assert(sb:start())
    local out, code = env:run("rm -f -t 0 " .. container_of(sb))
    assert.equal(0, code, out)
    local r, err = sb:exec("echo hi")
    assert.is_nil(r)
    assert.equal("DockerApiError", err.kind)
    assert.equal(404, err.status)
    assert.matches("no such container", err.message:lower())
    assert(sb:destroy())
  end)

  it("the daemon killed mid-exec: the command returns an error, nothing waits", function()
    local own = podman.new()
    local sb = sandkit.DockerSandbox { docker_host = own.docker_host, image = podman.IMAGE }
    assert(sb:start())
    local op = sb:exec_async("echo started; sleep 120")
    local t0 = sandkit.now()
    wait_until("the command to start", 20000, function()
      sandkit.step(0.05)
      return #own:leftovers() > 2 and in_container(sb, "sleep 120") == 1
    end)
    os.execute("kill -KILL " .. own.pid)
    local r, err = op:wait()
    assert.is_nil(r)
    assert.truthy(err.kind == "NetworkError" or err.kind == "DockerApiError", tostring(err))
    assert.truthy(sandkit.now() - t0 < 60000)
    own.pid = nil
    own:teardown()
  end)

end)
