-- The filesystem conformance suite against sb.fs of DockerSandbox (the
-- archive endpoints where they fit, the exec-stream backend elsewhere:
-- docs/protocols/docker.md §9) on the specs' private Podman service
-- with its busybox image.
local sandkit = require "sandkit"
local suite = require "conformance.fs_suite"
local podman = require "helpers.podman"

if not podman.usable(pending, "DockerSandbox sb.fs") then return end

local env = podman.new()
local sb

suite({
  name = "DockerSandbox sb.fs",
  create = function()
    sb = sandkit.DockerSandbox { docker_host = env.docker_host, image = podman.IMAGE, timeout = 60000 }
    assert(sb:start())
    return sb.fs
  end,
  cleanup = function()
    if sb then sb:destroy() end
    local left = env:containers()
    env:teardown()
    assert(#left == 0, "containers left behind: " .. table.concat(left, " "))
  end,
}, _ENV)
