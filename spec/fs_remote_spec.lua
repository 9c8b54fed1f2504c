-- The filesystem conformance suite against sb.fs of the remote providers
-- (exec streams): PlatformSandbox and ModalSandbox on their reference
-- servers, AppleContainerSandbox on the emulated container CLI. The
-- sandbox's filesystem is its own: there is nothing outside it to escape to.
local suite = require "conformance.fs_suite"

describe("remote sb.fs", function()
  local env = require("helpers.remote_sandboxes").start()
  teardown(env.stop)

  it("turns a command that does not finish in time into a TimeoutError", function()
    -- 1 ms: a WebSocket exec on the reference server needs more than that
    local sb = env.make.PlatformSandbox(1)
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
        sb = env.make[name](60000)
        assert(sb:start())
        return sb.fs
      end,
      cleanup = function() if sb then sb:destroy() end end,
    }, _ENV)
  end
end)
