-- The conformance suite against AppleContainerSandbox, driven through the
-- emulated Apple `container` CLI (spec/servers/container/). Every domain
-- runs: command execution, lifecycle, reconnection (files persist across
-- stop/start) and process management (a sandkit extension: upstream's
-- provider has no process manager). No kill_externally: upstream has no
-- retry-on-dead for this provider.
local sandkit = require "sandkit"
local suite = require "conformance.suite"
local ac = require "helpers.apple_container"

local env = ac.new()

suite({
  provider = "apple-container",
  name = "AppleContainerSandbox (emulated container CLI)",
  create_sandbox = function(opts)
    return sandkit.AppleContainerSandbox { container_binary = env.binary, env = opts and opts.env, timeout = 30000 }
  end,
  create_invalid_sandbox = function()
    -- the emulator answers a pull of any "does-not-exist" image like a registry refusal
    return sandkit.AppleContainerSandbox { container_binary = env.binary, image = "invalid/does-not-exist" }
  end,
  cleanup = function(sb)
    sb:destroy()
    local left = env:teardown()
    assert(#left == 0, "container processes left behind: " .. table.concat(left, "; "))
  end,
}, _ENV)
