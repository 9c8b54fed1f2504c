-- DockerSandbox beyond upstream's 0.3.0 (docs/protocols/docker.md §8): the
-- `ports` option published to 127.0.0.1 with the host port the engine
-- chooses, sb:get_port_url(port) fetched from the host, and sb:snapshot()
-- committing the container to an image a clone starts from. Against the
-- specs' private Podman service; the containers that publish ports use
-- slirp4netns (the service's default is no network at all, and Podman's
-- bridge would change the host's firewall).
local sandkit = require "sandkit"
local cjson = require "cjson"
local podman = require "helpers.podman"
local shell = require "helpers.sh"

if not podman.usable(pending, "DockerSandbox port and snapshot specs") then return end

local env

-- The images this service holds whose name starts with `prefix`.
local function images(prefix)
  local body, status = env:api("GET", "/v1.41/images/json")
  assert.equal(200, status, body)
  local out = {}
  for _, img in ipairs(cjson.decode(body)) do
    for _, t in ipairs(type(img.RepoTags) == "table" and img.RepoTags or {}) do
      if t:sub(1, #prefix) == prefix then out[#out + 1] = t end
    end
  end
  return out
end

setup(function() env = podman.new() end)

teardown(function()
  if not env then return end
  env:destroy_sandboxes()
  -- the snapshots this suite made, removed through the API
  for _, tag in ipairs(images("localhost/sandkit-snapshot")) do
    env:api("DELETE", "/v1.41/images/" .. tag .. "?force=1")
  end
  local left_images = images("localhost/sandkit-snapshot")
  env:close()
  assert.same({}, left_images, "snapshot images left behind")
end)

describe("DockerSandbox ports option", function()
  it("is checked with the key and the entry named", function()
    local function problem(ports)
      local ok, e = pcall(sandkit.DockerSandbox, { ports = ports })
      assert.is_false(ok)
      assert.equal("ConfigError", e.kind)
      assert.equal("ports", e.key)
      return e.message
    end
    assert.matches("%[1%] must be a port number from 1 to 65535", problem({ 0 }))
    assert.matches("%[2%] must be a whole number", problem({ 80, 1.5 }))
    assert.matches("%[1%]%.port must be a port number", problem({ { port = 70000 } }))
    assert.matches("%[1%] has an unknown key 'hostPort'", problem({ { port = 80, hostPort = 8080 } }))
    assert.matches("%[1%]%.protocol must be", problem({ { port = 80, protocol = "icmp" } }))
    assert.matches("%[1%]%.host_ip must be an IPv4 or IPv6 address", problem({ { port = 80, host_ip = "any host" } }))
    assert.matches("must be an array", problem({ http = 80 }))
    assert.matches("must be a table, got string", problem("80"))
  end)

  it("publishes to 127.0.0.1 on a port the engine chooses, and get_port_url fetches what the container serves", function()
    local sb = env:sandbox({ network = "slirp4netns", ports = { 8080, { port = 9090, protocol = "udp" } } })
    -- not running: upstream's contract is null
    assert.is_nil(sb:get_port_url(8080))
    assert(sb:start())
    local info = assert(sb:info())
    local doc = cjson.decode((env:api("GET", "/v1.41/containers/" .. info.metadata.container_id .. "/json")))
    local b = doc.HostConfig.PortBindings["8080/tcp"][1]
    assert.equal("127.0.0.1", b.HostIp)
    assert.equal("127.0.0.1", doc.HostConfig.PortBindings["9090/udp"][1].HostIp)
    assert.is_not_nil(doc.Config.ExposedPorts["8080/tcp"])

    local page = "served from " .. sb.id
    assert(sb:exec("mkdir -p /www && printf %s " .. sandkit.quote(page) .. " > /www/index.html"))
    local httpd = assert(sb.processes:spawn("httpd -f -p 8080 -h /www"))
    local url = assert(sb:get_port_url(8080))
    local port = tonumber(url:match("^http://127%.0%.0%.1:(%d+)$"))
    assert.is_not_nil(port, url)
    -- the server may take a moment to listen: retried until a deadline
    local body, code
    local limit = sandkit.now() + 30000 -- ms
    repeat
      body, code = shell.capture("curl -s -m 5 " .. podman.q(url .. "/index.html"))
      if code ~= 0 or body ~= page then sandkit.sleep(0.1) end
    until (code == 0 and body == page) or sandkit.now() > limit
    assert.equal(page, body)
    -- a port that is not published, or only for udp: nil
    assert.is_nil(sb:get_port_url(8081))
    assert.is_nil(sb:get_port_url(9090))
    httpd:kill()
    assert(sb:destroy())
    assert.is_nil(sb:get_port_url(8080))
  end)

  it("takes a host port and address given", function()
    local free = tonumber((shell.capture([[python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])']])))
    local sb = env:sandbox({ network = "slirp4netns",
      ports = { { port = 8080, host_port = free, host_ip = "127.0.0.1" } } })
    assert(sb:start())
    assert.equal("http://127.0.0.1:" .. free, sb:get_port_url(8080))
    assert(sb:destroy())
  end)

  it("get_port_url checks its argument, and other providers have no such method", function()
    local sb = env:sandbox()
    assert.has_error(function() sb:get_port_url(0) end, "bad argument #1 to 'get_port_url' (port number 1-65535 expected)")
    assert.has_error(function() sb:get_port_url("http") end)
    local loc = sandkit.LocalSandbox {}
    local ok, e = pcall(function() return loc:snapshot() end)
    assert.is_false(ok)
    assert.matches("the local provider has no method 'snapshot'", tostring(e))
    loc:destroy()
  end)
end)

describe("DockerSandbox snapshot()", function()
  it("commits the container: a clone started from the image finds the file written before", function()
    local sb = env:sandbox()
    assert(sb:start())
    assert(sb:exec("mkdir -p /data && echo before-snapshot > /data/f"))
    local image = assert(sb:snapshot())
    assert.matches("^localhost/sandkit%-snapshot:", image)
    local body, status = env:api("GET", "/v1.41/images/" .. image .. "/json")
    assert.equal(200, status, body)
    assert.equal(sb.id, cjson.decode(body).Config.Labels["sandkit.snapshot.of"])

    -- written after: not in the snapshot
    assert(sb:exec("echo after > /data/g"))
    local copy = env:track(sb:clone({ image = image, pull = "never" }))
    assert(copy:start())
    assert.are_not.equal(sb.id, copy.id)
    assert.equal("before-snapshot\n", assert(copy:exec("cat /data/f")).stdout)
    assert.equal(1, assert(copy:exec("test -e /data/g")).exit_code)
    -- its own labels, not the template's
    local cinfo = assert(copy:info())
    assert.equal(copy.id, cinfo.metadata.labels["mastra.sandbox.id"])
    assert(copy:destroy())

    -- a new sandbox with a name of the caller's choosing
    local named = assert(sb:snapshot({ image = "localhost/sandkit-snapshot:named" }))
    assert.equal("localhost/sandkit-snapshot:named", named)
    local fresh = env:sandbox({ image = named, pull = "never" })
    assert(fresh:start())
    assert.equal("before-snapshot\n", assert(fresh:exec("cat /data/f")).stdout)
    assert.equal("after\n", assert(fresh:exec("cat /data/g")).stdout)
    assert(fresh:destroy())
    assert(sb:destroy())
  end)

  it("of a stopped sandbox works; of a destroyed or never started one is an error", function()
    local sb = env:sandbox()
    local ok, e = sb:snapshot()
    assert.is_nil(ok)
    assert.equal("SandboxNotReadyError", e.kind)
    assert(sb:start())
    assert(sb:exec("echo x > /tmp/x"))
    assert(sb:stop())
    local image = assert(sb:snapshot())
    assert.matches("^localhost/sandkit%-snapshot:", image)
    assert(sb:destroy())
    ok, e = sb:snapshot()
    assert.is_nil(ok)
    assert.equal("SandboxNotReadyError", e.kind)
    assert.matches("has been destroyed", e.message)
    assert.has_error(function() sb:snapshot({ tag = "x" }) end, "bad argument #1 to 'snapshot' (unknown option 'tag')")
  end)

  it("of a container removed behind sandkit's back is a DockerApiError naming it", function()
    local sb = env:sandbox()
    assert(sb:start())
    local cid = assert(sb:info()).metadata.container_id
    env:run("rm -f -t 0 " .. cid)
    local ok, e = sb:snapshot()
    assert.is_nil(ok)
    assert.equal("DockerApiError", e.kind)
    assert.equal(404, e.status)
    assert.equal(sb.id, e.sandbox_id)
    assert.matches("/commit", e.path)
    assert(sb:destroy())
  end)
end)
