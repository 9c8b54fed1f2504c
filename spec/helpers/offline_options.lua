--- Options that construct a sandbox of each provider without I/O and
-- without credentials from the environment (servers on a closed port, a
-- CLI that does not exist), for specs that set one key on top and look at
-- how it is checked. Each value is a function: a fresh table every call.
local tmp = require "helpers.tmp"

return {
  ["local"] = function() return { working_directory = tmp.dir() } end,
  platform = function()
    return { access_token = "t", project_id = "p", environment_id = "e", base_url = "http://127.0.0.1:9" }
  end,
  modal = function() return { token_id = "i", token_secret = "s", server_url = "http://127.0.0.1:9" } end,
  ["apple-container"] = function() return { container_binary = "/nonexistent/container" } end,
}
