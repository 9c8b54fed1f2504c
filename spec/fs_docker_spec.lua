-- The filesystem conformance suite against sb.fs of DockerSandbox (the
-- archive endpoints where they fit, the exec-stream backend elsewhere:
-- docs/protocols/docker.md §9) on the specs' private Podman service
-- with its busybox image.
local suite = require "conformance.fs_suite"
local podman = require "helpers.podman"

if not podman.usable(pending, "DockerSandbox sb.fs") then return end

local env = podman.new()

suite({
  name = "DockerSandbox sb.fs",
  create = function()
    local sb = env:sandbox { timeout = 60000 }
    assert(sb:start())
    return sb.fs
  end,
  cleanup = function() env:close() end,
}, _ENV)
