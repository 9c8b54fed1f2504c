-- The conformance suite against ModalSandbox and the Modal reference server
-- (spec/servers/modal), started here on a free 127.0.0.1 port, once per
-- isolation mode of the server (its two ways of giving a sandbox its own
-- filesystem view must look the same to a client).
local sandkit = require "sandkit"
local suite = require "conformance.suite"
local server = require "helpers.server"

local servers = {}

for _, isolation in ipairs({ "none", "bwrap" }) do
  local srv = server.start("spec/servers/modal/server.mjs", { "--port", "0", "--isolation", isolation },
    { MODAL_CONFIG_PATH = "/nonexistent/sandkit-modal.toml" })
  servers[#servers + 1] = srv

  local function opts(extra)
    local o = { server_url = srv.url, token_id = "ak-test", token_secret = "as-test" }
    for k, v in pairs(extra or {}) do o[k] = v end
    return o
  end

  -- The server's id (sb-...) of the running sandbox named after sb.id.
  local function modal_id(sb)
    for _, s in ipairs(srv:admin("GET", "/__admin/sandboxes")) do
      if s.running and s.name == sb.id then return s.id end
    end
  end

  suite({
    provider = "modal",
    name = "ModalSandbox (reference server, --isolation " .. isolation .. ")",
    create_sandbox = function(o)
      return sandkit.ModalSandbox(opts({ env = o and o.env }))
    end,
    create_invalid_sandbox = function()
      return sandkit.ModalSandbox(opts({ token_secret = "wrong-secret" }))
    end,
    kill_externally = function(sb)
      local id = assert(modal_id(sb), "no running sandbox named " .. sb.id)
      local res = srv:admin("POST", "/__admin/sandboxes/" .. id .. "/kill", { status = "TERMINATED" })
      assert(type(res) == "table" and res.running == false, "admin kill failed")
    end,
    cleanup = function(sb)
      sb:destroy()
    end,
  }, _ENV)
end

teardown(function()
  for _, srv in ipairs(servers) do srv:stop() end
end)
