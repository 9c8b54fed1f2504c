--- PlatformSandbox's test kit (helpers.provider_kits): the reference
-- server, spec/servers/platform.
local server = require "helpers.server"

local function with_token(c) return server.start("spec/servers/platform/server.mjs", { "--quiet", "--token", c.token }) end
local function stop(srv) srv:stop() end

return {
  offline_options = function()
    return { access_token = "t", project_id = "p", environment_id = "e", base_url = "http://127.0.0.1:9" }
  end,
  secrets = {
    {
      id = "platform", name = "PlatformSandbox options",
      setup = with_token,
      options = function(c, srv)
        return { access_token = c.token, project_id = "proj_1", environment_id = "env_1", base_url = srv.url,
          retry_delays_ms = { 10 }, env = { SK_SECRET = c.env } }
      end,
      bad = function(c, srv)
        return { access_token = c.bad_token, project_id = "proj_1", environment_id = "env_1", base_url = srv.url,
          retry_delays_ms = { 10 }, env = { SK_SECRET = c.env } }
      end,
      secrets = function(c) return { c.token, c.bad_token, c.env, c.cmd_env } end,
      teardown = stop,
    },
    {
      id = "platform", name = "PlatformSandbox token from MASTRA_PLATFORM_ACCESS_TOKEN",
      setup = with_token,
      child_env = function(c) return { MASTRA_PLATFORM_ACCESS_TOKEN = c.token } end,
      options = function(c, srv)
        return { project_id = "proj_1", environment_id = "env_1", base_url = srv.url, env = { SK_SECRET = c.env } }
      end,
      secrets = function(c) return { c.token, c.env, c.cmd_env } end,
      teardown = stop,
    },
  },
  -- README's blocks read the variables a user sets
  readme = function(root)
    local srv = server.start(root .. "/spec/servers/platform/server.mjs", { "--quiet" })
    return {
      vars = {
        MASTRA_PLATFORM_ACCESS_TOKEN = "test-token", -- the reference server's
        MASTRA_PROJECT_ID = "proj_readme",
        MASTRA_ENVIRONMENT_ID = "env_readme",
        MASTRA_WORKSPACE_PROXY_URL = srv.url,
      },
      teardown = function() srv:stop() end,
    }
  end,
}
