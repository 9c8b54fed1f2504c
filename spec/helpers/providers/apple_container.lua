--- AppleContainerSandbox's test kit (helpers.provider_kits): the emulated
-- `container` CLI (helpers.apple_container).
local apple = require "helpers.apple_container"

return {
  offline_options = function() return { container_binary = "/nonexistent/container" } end,
  secrets = {
    {
      id = "apple-container", name = "AppleContainerSandbox options",
      setup = function() return apple.new() end,
      options = function(c, emu) return { container_binary = emu.binary, env = { SK_SECRET = c.env } } end,
      bad = function(c) return { container_binary = "/nonexistent/container", env = { SK_SECRET = c.env } } end,
      secrets = function(c) return { c.env, c.cmd_env } end,
      teardown = function(emu) emu:teardown() end,
    },
  },
  -- a `container` on PATH, as a user has it
  readme = function()
    local emu = apple.new()
    return {
      path = emu.dir,
      teardown = function()
        local left = emu:teardown()
        assert(#left == 0, "containers left running: " .. table.concat(left, "; "))
      end,
    }
  end,
}
