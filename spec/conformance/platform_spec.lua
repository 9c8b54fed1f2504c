-- The conformance suite against PlatformSandbox and the reference server
-- (spec/servers/platform): REST control plane plus one WebSocket per
-- command. stdin of background processes uses the server's stdin frames
-- (option stdin_frames, an extension the platform spec does not define).
local sandkit = require "sandkit"
local server = require "helpers.server"
local suite = require "conformance.suite"

describe("PlatformSandbox conformance", function()
  local srv = server.for_block("spec/servers/platform/server.mjs", { "--quiet" })

  local function options(extra)
    local o = { access_token = "test-token", project_id = "proj_conformance", environment_id = "env_conformance",
      base_url = srv.url, timeout = 30000 }
    for k, v in pairs(extra or {}) do o[k] = v end
    return o
  end

  suite({
    provider = "platform",
    name = "PlatformSandbox (reference server)",
    create_sandbox = function(opts)
      return sandkit.PlatformSandbox(options({ env = opts and opts.env }))
    end,
    create_invalid_sandbox = function()
      -- the proxy refuses the token: start must fail cleanly (PlatformApiError 401)
      return sandkit.PlatformSandbox(options({ access_token = "not-the-token" }))
    end,
  }, _ENV)
end)
