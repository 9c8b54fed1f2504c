-- The conformance suite against DockerSandbox on a private Podman service
-- (spec/helpers/podman.lua) with a local busybox image. Every domain runs:
-- command execution, lifecycle, reconnection (files persist across
-- stop/start: the container is started again, never recreated) and process
-- management. No kill_externally: upstream has no retry-on-dead for this
-- provider. Under CI=true a machine without Podman fails the run.
local sandkit = require "sandkit"
local suite = require "conformance.suite"
local podman = require "helpers.podman"

if not podman.usable(pending, "DockerSandbox conformance") then return end

local env = podman.new()

suite({
  provider = "docker",
  name = "DockerSandbox (Podman's Docker-compatible API)",
  create_sandbox = function(opts)
    return sandkit.DockerSandbox { docker_host = env.docker_host, image = podman.IMAGE, env = opts and opts.env,
      timeout = 30000, command = podman.QUICK_STOP }
  end,
  create_invalid_sandbox = function()
    -- not present locally, and never pulled: start fails cleanly
    return sandkit.DockerSandbox { docker_host = env.docker_host, image = "localhost/sandkit-missing:none",
      pull = "never" }
  end,
  cleanup = function(sb)
    sb:destroy()
    env:close()
  end,
}, _ENV)
