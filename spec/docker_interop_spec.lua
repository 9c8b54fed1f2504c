-- sandkit's DockerSandbox and upstream's (@mastra/docker 0.3.0 from npm,
-- spec/servers/docker/package.json, driven by spec/servers/docker/upstream.mjs)
-- on the same private Podman service: a container made by either is adopted
-- by the other with the same sandbox id (reconnect by label, never
-- recreated), and the same commands give the same results.
local sandkit = require "sandkit"
local cjson = require "cjson"
local podman = require "helpers.podman"
local child = require "helpers.child"
local shell = require "helpers.sh"

if not podman.usable(pending, "DockerSandbox interop specs") then return end

local DIR = child.ROOT .. "/spec/servers/docker"
do
  local f = io.open(DIR .. "/node_modules/@mastra/docker/package.json", "r")
  if not f then
    if os.getenv("CI") == "true" then error("@mastra/docker is not installed (make npm-deps)") end
    pending("DockerSandbox interop specs: @mastra/docker is not installed (make npm-deps)")
    return
  end
  f:close()
end

local q = podman.q
local env

-- Upstream's DockerSandbox, one operation: the decoded JSON line.
local function upstream(req)
  req.image = req.image or podman.IMAGE
  local out, code = shell.capture(("cd %s && node upstream.mjs %s %s 2>&1"):format(q(DIR), q(env.socket),
    q(cjson.encode(req))))
  local ok, doc = pcall(cjson.decode, out:match("[^\n]*\n?$") or out)
  assert(ok and code == 0 and not doc.error, "upstream's DockerSandbox failed: " .. out)
  return doc
end

local function containers_of(id)
  local filters = cjson.encode({ label = { "mastra.sandbox.id=" .. id } })
  local body, status = env:api("GET", "/v1.41/containers/json?all=1&filters=" .. filters:gsub("[^%w]", function(c)
    return ("%%%02X"):format(c:byte())
  end))
  assert.equal(200, status, body)
  local ids = {}
  for _, c in ipairs(cjson.decode(body)) do ids[#ids + 1] = c.Id end
  return ids
end

local ARGS = { "hello  world", "$HOME", "it's" }

setup(function() env = podman.new() end)

teardown(function()
  if env then env:close() end
end)

describe("DockerSandbox and upstream's @mastra/docker 0.3.0", function()
  it("sandkit adopts a container upstream made (same id, not recreated), and their results agree", function()
    local id = "interop-up-" .. tostring(math.floor(sandkit.now()))
    local up = upstream({ id = id, op = "start", command = "echo", args = ARGS, env = { GREETING = "hi" } })
    assert.same({ up.containerId }, containers_of(id))
    assert.same({ ["mastra.sandbox"] = "true", ["mastra.sandbox.id"] = id }, up.labels)

    local sb = env:sandbox({ id = id, env = { GREETING = "hi" } })
    assert(sb:start())
    assert.equal(up.containerId, assert(sb:info()).metadata.container_id)
    assert.same({ up.containerId }, containers_of(id))
    local r = assert(sb:exec("echo", ARGS))
    assert.equal(up.result.exitCode, r.exit_code)
    assert.equal(up.result.stdout, r.stdout)
    assert.equal("hello  world $HOME it's\n", r.stdout)
    -- the container's env, set by upstream at create, reaches sandkit's exec
    assert.equal("hi\n", assert(sb:exec("echo $GREETING")).stdout)
    assert(sb:destroy())
    assert.same({}, containers_of(id))
  end)

  it("upstream adopts a container sandkit made, results agree, and upstream's destroy finds it by label", function()
    local id = "interop-sk-" .. tostring(math.floor(sandkit.now()))
    local sb = env:sandbox({ id = id })
    assert(sb:start())
    local cid = assert(sb:info()).metadata.container_id
    local mine = assert(sb:exec("sh -c 'echo out; echo err >&2; exit 3'"))
    local up = upstream({ id = id, op = "adopt", command = "sh -c 'echo out; echo err >&2; exit 3'" })
    assert.equal(cid, up.containerId)
    assert.same({ cid }, containers_of(id))
    assert.equal(3, mine.exit_code)
    assert.equal(mine.exit_code, up.result.exitCode)
    assert.equal(mine.stdout, up.result.stdout)
    assert.equal(mine.stderr, up.result.stderr)
    -- a stopped container: upstream starts it again, never recreates it
    assert(sb:stop())
    up = upstream({ id = id, op = "adopt", command = "echo", args = ARGS })
    assert.equal(cid, up.containerId)
    assert.equal(assert(sb:exec("echo", ARGS)).stdout, up.result.stdout)
    upstream({ id = id, op = "destroy" })
    assert.same({}, containers_of(id))
  end)
end)
