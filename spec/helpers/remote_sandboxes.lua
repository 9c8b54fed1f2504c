--- The remote providers on their stand-ins, for specs that run one case on
-- each: the Platform and Modal reference servers and the emulated Apple
-- container CLI. start() -> env { platform, modal (the servers), ac (the
-- CLI, helpers.apple_container), make = { PlatformSandbox = fn(timeout),
-- ModalSandbox = fn(), AppleContainerSandbox = fn(timeout) }, stop() };
-- stop() raises when a container process was left behind.
local sandkit = require "sandkit"
local server = require "helpers.server"

local M = {}

function M.start()
  local env = {
    platform = server.start("spec/servers/platform/server.mjs", { "--quiet" }),
    modal = server.start("spec/servers/modal/server.mjs", { "--port", "0" },
      { MODAL_CONFIG_PATH = "/nonexistent/sandkit-modal.toml" }),
    ac = require("helpers.apple_container").new(),
  }
  env.make = {
    -- timeout: each command behind an sb.fs call (ModalSandbox has no such option)
    PlatformSandbox = function(timeout)
      return sandkit.PlatformSandbox { access_token = "test-token", project_id = "proj_fs", environment_id = "env_fs",
        base_url = env.platform.url, timeout = timeout }
    end,
    ModalSandbox = function()
      return sandkit.ModalSandbox { server_url = env.modal.url, token_id = "ak-test", token_secret = "as-test" }
    end,
    AppleContainerSandbox = function(timeout)
      return sandkit.AppleContainerSandbox { container_binary = env.ac.binary, timeout = timeout }
    end,
  }
  function env.stop()
    env.platform:stop()
    env.modal:stop()
    local left = env.ac:teardown()
    assert(#left == 0, "container processes left behind: " .. table.concat(left, "; "))
  end
  return env
end

return M
