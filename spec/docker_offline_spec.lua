-- DockerSandbox (provider docker) where no real daemon is needed: its
-- options (checked as upstream's, in snake_case, with did-you-mean), a
-- daemon that is not there, and a fake daemon on a unix socket
-- (spec/servers/docker/fake_daemon.mjs) for the faults a real one will not
-- produce: hangs, hostile exec streams, floods, a failed pull inside a 200
-- answer (docs/protocols/docker.md §7). It needs only node, so it runs in
-- every build the suite runs against; spec/docker_spec.lua drives a real
-- Podman service.
local sandkit = require "sandkit"
local server = require "helpers.server"
local child = require "helpers.child"
local tmp = require "helpers.tmp"

local q = require("helpers.sh").quote
local FAKE = (child.ROOT .. "/spec/servers/docker/fake_daemon.mjs")

local made = {}

local function new(opts)
  local sb = sandkit.DockerSandbox(opts)
  made[#made + 1] = sb
  return sb
end

teardown(function()
  for _, sb in ipairs(made) do pcall(sb.destroy, sb) end
  tmp.cleanup()
end)

describe("DockerSandbox options", function()
  it("are upstream's in snake_case, validated with the provider and key named", function()
    local e = select(2, pcall(sandkit.DockerSandbox, { memorySwap = 1 }))
    assert.equal("ConfigError", e.kind)
    assert.equal("docker", e.provider)
    assert.matches("Unknown option 'memorySwap' for DockerSandbox (did you mean 'memory_swap'?)", e.message, 1, true)
    e = select(2, pcall(sandkit.DockerSandbox, { pids_limit = "many" }))
    assert.equal("pids_limit", e.key)
    e = select(2, pcall(sandkit.DockerSandbox, { pull = "always" }))
    assert.matches('must be one of "missing", "never"', e.message)
    e = select(2, pcall(sandkit.DockerSandbox, { ulimits = { { name = "nofile", soft = 1 } } }))
    assert.matches("ulimits' %[1%]%.hard must be a whole number", e.message)
    e = select(2, pcall(sandkit.DockerSandbox, { ulimits = { { name = "nofile", sotf = 1, hard = 2 } } }))
    assert.matches("ulimits' [1] has an unknown key 'sotf' (did you mean 'soft'?)", e.message, 1, true)
    e = select(2, pcall(sandkit.DockerSandbox, { ulimits = { { name = "nofile", limit = 1 } } }))
    assert.matches("unknown key 'limit' (name, soft, hard)", e.message, 1, true)
    e = select(2, pcall(sandkit.DockerSandbox, { docker_host = "ssh://me@host" }))
    assert.equal("ConfigError", e.kind)
    assert.equal("docker_host", e.key)
    assert.matches("not unix:// or tcp:// (ssh:// and npipe:// are not supported)", e.message, 1, true)
  end)

  it("say which address a docker_host that is not unix:// or tcp:// most likely meant", function()
    for given, meant in pairs({ ["/var/run/docker.sock"] = "unix:///var/run/docker.sock",
        ["unx:///run/podman.sock"] = "unix:///run/podman.sock", ["uinx:///s"] = "unix:///s",
        ["tpc://10.0.0.1:2375"] = "tcp://10.0.0.1:2375", ["https://10.0.0.1:2376"] = "tcp://10.0.0.1:2376" }) do
      local e = select(2, pcall(sandkit.DockerSandbox, { docker_host = given }))
      assert.equal("ConfigError", e.kind)
      assert.equal("docker_host", e.key)
      assert.matches(("Docker host '%s' (option docker_host) is not unix:// or tcp:// (did you mean '%s'?)")
        :format(given, meant), e.message, 1, true)
    end
  end)

  it("default the id as upstream (docker-sandbox-<base36 time>-<6>) and keep the sandbox's name", function()
    local sb = sandkit.DockerSandbox {}
    assert.matches("^docker%-sandbox%-[0-9a-z]+%-[0-9a-z][0-9a-z][0-9a-z][0-9a-z][0-9a-z][0-9a-z]$", sb.id)
    assert.equal("DockerSandbox", sb.name)
    assert.equal("docker", sb.provider)
    local info = sb:info()
    assert.equal("node:22-slim", info.metadata.image)
    assert.equal("/workspace", info.metadata.working_dir)
    assert.same({ ["mastra.sandbox"] = "true", ["mastra.sandbox.id"] = sb.id }, info.metadata.labels)
  end)

  it("give upstream's instructions word for word", function()
    local sb = sandkit.DockerSandbox { image = "alpine:3", working_dir = "/src" }
    assert.equal("You are working inside a Docker container (image: alpine:3).\n" ..
      "The working directory is /src.\nYou can execute shell commands using executeCommand().\n" ..
      "You can spawn background processes using processes.spawn().", sb:instructions())
  end)

  it("are listed by sandkit.providers() with their defaults", function()
    local d
    for _, p in ipairs(sandkit.providers()) do if p.id == "docker" then d = p end end
    assert.equal("DockerSandbox", d.name)
    assert.equal(300000, d.options.timeout.default)
    assert.equal("node:22-slim", d.options.image.default)
    assert.equal("missing", d.options.pull.default)
  end)
end)

describe("DockerSandbox faults", function()
  it("a missing socket: a NetworkError naming the address and DOCKER_HOST", function()
    local sb = new { docker_host = "unix:///nonexistent/docker.sock" }
    local okk, err = sb:start()
    assert.is_nil(okk)
    assert.equal("NetworkError", err.kind)
    assert.matches("unix:///nonexistent/docker.sock", err.message)
    assert.matches("option docker_host", err.message)
    -- from the environment, the message names the variable
    local dir, cfg = child.config({})
    local script = child.script("missing.lua", [[
      local sandkit = require "sandkit"
      local sb = sandkit.DockerSandbox {}
      local _, err = sb:start()
      io.write(err.kind, "\n", err.message)
    ]])
    local out = child.run(("env %s DOCKER_HOST=unix:///nonexistent/d.sock lua5.4 %s"):format(child.LUA_ENV, q(script)), dir)
    assert.matches("^NetworkError\n", out)
    assert.matches("DOCKER_HOST", out)
    out = child.run(("env -u DOCKER_HOST %s HOME=/nonexistent lua5.4 %s"):format(child.LUA_ENV, q(script)), dir)
    assert.matches("unix:///var/run/docker.sock %(the default; set DOCKER_HOST", out)
    os.remove(cfg)
  end)

  describe("a fake daemon", function()
    local srv
    -- the socket in a short temporary path (sun_path holds 107 bytes)
    local function fake(mode, opts)
      local sock = tmp.dir() .. "/" .. mode .. ".sock"
      srv = server.start(FAKE, { sock, mode })
      opts = opts or {}
      opts.docker_host = "unix://" .. sock
      return new(opts)
    end
    after_each(function()
      if srv then srv:stop() end
      srv = nil
    end)

    it("that accepts and never answers: start fails within api_timeout", function()
      local sb = fake("hang", { api_timeout = 300 })
      local t0 = sandkit.now()
      local okk, err = sb:start()
      assert.is_nil(okk)
      assert.equal("TimeoutError", err.kind)
      assert.matches("did not answer GET /_ping within 300 ms", err.message)
      assert.truthy(sandkit.now() - t0 < 10000)
    end)

    it("that never answers an exec start: the exec fails within api_timeout", function()
      local sb = fake("hang_exec", { api_timeout = 300 })
      assert(sb:start())
      local r, err = sb:exec("echo hi")
      assert.is_nil(r)
      assert.equal("TimeoutError", err.kind)
      assert.matches("/exec/[%w]+/start", err.message)
    end)

    it("with a bad frame header: a malformed-stream error, the command killed", function()
      local sb = fake("bad_header")
      assert(sb:start())
      local r, err = sb:exec("echo hi")
      assert.is_nil(r)
      assert.equal("DockerApiError", err.kind)
      assert.is_true(err.malformed)
      assert.matches("frame header 09 09 09 09 00 00 00 04", err.message)
    end)

    it("with a frame cut short, or declared 4 GiB: an error, memory bounded", function()
      local sb = fake("truncated")
      assert(sb:start())
      local r, err = sb:exec("echo hi")
      assert.is_nil(r)
      assert.matches("ended inside a frame", err.message)
      srv:stop()
      sb = fake("huge_frame")
      assert(sb:start())
      r, err = sb:exec("echo hi", nil, { max_output_bytes = 4096 })
      assert.is_nil(r)
      assert.matches("ended inside a frame", err.message)
    end)

    it("with a daemon error frame: the daemon's message", function()
      local sb = fake("systemerr")
      assert(sb:start())
      local r, err = sb:exec("echo hi")
      assert.is_nil(r)
      assert.matches("the daemon says no", err.message)
    end)

    it("flooding output: the capture stays at max_output_bytes and the timeout ends it", function()
      local sb = fake("flood")
      assert(sb:start())
      local r = assert(sb:exec("yes", nil, { timeout = 500, max_output_bytes = 100000 }))
      assert.equal(124, r.exit_code)
      assert.equal(100000, #r.stdout)
      assert.is_true(r.truncated)
    end)

    it("reporting a failed pull inside a 200 stream (as Docker does too)", function()
      local sb = fake("pull_error", { image = "example/none:1" })
      local okk, err = sb:start()
      assert.is_nil(okk)
      assert.equal("Failed to pull Docker image 'example/none:1': manifest unknown", err.message)
    end)
  end)
end)

describe("DockerSandbox's own methods", function()
  it("raise on another provider's sandbox, naming it and the method", function()
    local sb = sandkit.LocalSandbox({})
    local ok, e = pcall(sb.get_port_url, sb, 8080)
    assert.is_false(ok)
    assert.matches("the local provider has no method 'get_port_url'", tostring(e), 1, true)
    ok, e = pcall(sb.snapshot, sb)
    assert.is_false(ok)
    assert.matches("the local provider has no method 'snapshot'", tostring(e), 1, true)
    assert(sb:destroy())
  end)

  it("need no daemon before start: get_port_url is nil, snapshot a SandboxNotReadyError", function()
    local sb = new({ docker_host = "unix:///nonexistent/docker.sock" })
    assert.is_nil(sb:get_port_url(8080))
    assert.has_error(function() sb:get_port_url(0) end)
    local image, err = sb:snapshot()
    assert.is_nil(image)
    assert.equal("SandboxNotReadyError", err.kind)
    assert.equal(sb.id, err.sandbox_id)
  end)
end)
