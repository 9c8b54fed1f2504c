-- The filesystem conformance suite against sb.fs of the remote providers
-- (exec streams): PlatformSandbox and ModalSandbox on their reference
-- servers, AppleContainerSandbox on the emulated container CLI. The
-- sandbox's filesystem is its own: there is nothing outside it to escape to.
local sandkit = require "sandkit"
local server = require "helpers.server"
local suite = require "conformance.fs_suite"

describe("remote sb.fs", function()
  local psrv = server.start("spec/servers/platform/server.mjs", { "--quiet" })
  local msrv = server.start("spec/servers/modal/server.mjs", { "--port", "0" },
    { MODAL_CONFIG_PATH = "/nonexistent/sandkit-modal.toml" })
  local ac = require("helpers.apple_container").new()
  teardown(function()
    psrv:stop()
    msrv:stop()
    local left = ac:teardown()
    assert(#left == 0, "container processes left behind: " .. table.concat(left, "; "))
  end)

  local makers = {
    PlatformSandbox = function()
      return sandkit.PlatformSandbox { access_token = "test-token", project_id = "proj_fs", environment_id = "env_fs",
        base_url = psrv.url, timeout = 60000 }
    end,
    ModalSandbox = function()
      return sandkit.ModalSandbox { server_url = msrv.url, token_id = "ak-test", token_secret = "as-test" }
    end,
    AppleContainerSandbox = function()
      return sandkit.AppleContainerSandbox { container_binary = ac.binary, timeout = 60000 }
    end,
  }
  it("turns a command that does not finish in time into a TimeoutError", function()
    -- 1 ms: a WebSocket exec on the reference server needs more than that
    local sb = sandkit.PlatformSandbox { access_token = "test-token", project_id = "proj_fs", environment_id = "env_fs",
      base_url = psrv.url, timeout = 1 }
    assert(sb:start())
    local r, err = sb.fs:read_file("anything.txt")
    assert.is_nil(r)
    assert.equal("TimeoutError", err.kind)
    assert.equal("anything.txt", err.path)
    sb:destroy()
  end)

  for _, name in ipairs({ "PlatformSandbox", "ModalSandbox", "AppleContainerSandbox" }) do
    local sb
    suite({
      name = name .. " sb.fs",
      create = function()
        sb = makers[name]()
        assert(sb:start())
        return sb.fs
      end,
      cleanup = function() if sb then sb:destroy() end end,
    }, _ENV)
  end
end)
