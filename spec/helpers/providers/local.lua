--- LocalSandbox's test kit (helpers.provider_kits).
local tmp = require "helpers.tmp"

return {
  offline_options = function() return { working_directory = tmp.dir() } end,
  secrets = {
    {
      id = "local", name = "LocalSandbox options",
      options = function(c) return { working_directory = tmp.dir(), env = { SK_SECRET = c.env } } end,
      bad = function(c) return { working_directory = "/proc/no-such/ws", env = { SK_SECRET = c.env } } end,
      secrets = function(c) return { c.env, c.cmd_env } end,
    },
    {
      id = "local", name = "LocalSandbox under bwrap",
      available = function() return require("helpers.sh").have_bwrap() end,
      options = function(c)
        return { working_directory = tmp.dir(), isolation = "bwrap", env = { SK_SECRET = c.env } }
      end,
      secrets = function(c) return { c.env, c.cmd_env } end,
    },
  },
}
