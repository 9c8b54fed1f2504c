--- ModalSandbox's test kit (helpers.provider_kits): the reference server,
-- spec/servers/modal, never a ~/.modal.toml.
local server = require "helpers.server"

local NO_CONFIG = "/nonexistent/sandkit-modal.toml"

local function with_secret(c)
  return server.start("spec/servers/modal/server.mjs",
    { "--port", "0", "--token-id", "ak-canary", "--token-secret", c.secret }, { MODAL_CONFIG_PATH = NO_CONFIG })
end
local function stop(srv) srv:stop() end

return {
  offline_options = function() return { token_id = "i", token_secret = "s", server_url = "http://127.0.0.1:9" } end,
  secrets = {
    {
      id = "modal", name = "ModalSandbox options",
      setup = with_secret,
      child_env = function() return { MODAL_CONFIG_PATH = NO_CONFIG } end,
      options = function(c, srv)
        return { token_id = "ak-canary", token_secret = c.secret, server_url = srv.url, env = { SK_SECRET = c.env } }
      end,
      bad = function(c, srv)
        return { token_id = "ak-canary", token_secret = c.bad_secret, server_url = srv.url, env = { SK_SECRET = c.env } }
      end,
      secrets = function(c) return { c.secret, c.bad_secret, c.env, c.cmd_env } end,
      teardown = stop,
    },
    {
      id = "modal", name = "ModalSandbox secret from MODAL_TOKEN_SECRET",
      setup = with_secret,
      child_env = function(c)
        return { MODAL_CONFIG_PATH = NO_CONFIG, MODAL_TOKEN_ID = "ak-canary", MODAL_TOKEN_SECRET = c.secret }
      end,
      options = function(c, srv) return { server_url = srv.url, env = { SK_SECRET = c.env } } end,
      secrets = function(c) return { c.secret, c.env, c.cmd_env } end,
      teardown = stop,
    },
  },
  readme = function(root)
    local srv = server.start(root .. "/spec/servers/modal/server.mjs", { "--port", "0" },
      { MODAL_CONFIG_PATH = "/nonexistent/sandkit-readme.toml" })
    return {
      vars = {
        MODAL_TOKEN_ID = "ak-test",
        MODAL_TOKEN_SECRET = "as-test",
        MODAL_SERVER_URL = srv.url,
        MODAL_CONFIG_PATH = "/nonexistent/sandkit-readme.toml",
      },
      teardown = function() srv:stop() end,
    }
  end,
}
