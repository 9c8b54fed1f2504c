--- Descriptor of the Mastra Platform provider (PlatformSandbox): sandboxes
-- behind the workspace proxy, REST control plane plus one WebSocket per
-- command with an exec lease (docs/protocols/platform.md §1).
-- Credentials: access_token / project_id / environment_id, else
-- MASTRA_PLATFORM_ACCESS_TOKEN / MASTRA_PROJECT_ID / MASTRA_ENVIRONMENT_ID
-- (an empty value counts as missing). Base URL: base_url, else
-- MASTRA_WORKSPACE_PROXY_URL, else MASTRA_PLATFORM_REGION (us, eu), else
-- https://workspaces.mastra.ai.
local options = require "sandkit.options"

local function http_url(v)
  if not (v:match("^https?://")) then return "must start with http:// or https://" end
end

return {
  id = "platform",
  name = "PlatformSandbox",
  description = "Runs commands in a Mastra Platform sandbox through the workspace proxy (REST + one WebSocket per command); stop is an alias of destroy.",
  -- sb.fs: short sh scripts in the sandbox (lua/sandkit/fs/exec.lua)
  filesystem = "exec",
  -- its folder also holds PlatformFilesystem (fs.lua over platform_fs.c)
  filesystem_constructor = "PlatformFilesystem",
  -- clone(): never inherited from the template (upstream: sandboxId is per instance)
  clone_drops = { "sandbox_id" },
  options = options.with_common {
    id = { type = "string",
      description = "Sandbox id, sent at create as the recovery key (a stable id is restored from the platform's checkpoint); generated when absent." },
    access_token = { type = "string", env = "MASTRA_PLATFORM_ACCESS_TOKEN", secret = true,
      description = "Platform access token (else MASTRA_PLATFORM_ACCESS_TOKEN; required, an empty value counts as missing). Never shown in errors, info or logs." },
    project_id = { type = "string", env = "MASTRA_PROJECT_ID",
      description = "Project id (else MASTRA_PROJECT_ID; required, an empty value counts as missing)." },
    environment_id = { type = "string", env = "MASTRA_ENVIRONMENT_ID",
      description = "Environment new sandboxes are provisioned in (else MASTRA_ENVIRONMENT_ID); required unless sandbox_id is given." },
    sandbox_id = { type = "string", non_empty = true,
      description = "Platform sandbox id to reattach to (info().metadata.sandbox_id); a dead one is replaced by a fresh sandbox. Not inherited by clone()." },
    idle_timeout_minutes = { type = "number", min = 0,
      description = "Idle window before the platform may destroy the sandbox (sent at create)." },
    network_isolation = { type = "string", enum = { "ISOLATED", "PRIVATE" },
      description = "ISOLATED (platform default): outbound internet only; PRIVATE: joins the environment's private network." },
    timeout = options.command_timeout(
      "Default per-command timeout in milliseconds, enforced by the client (none when absent or 0)."),
    working_directory = { type = "string",
      description = "Default cwd of commands inside the sandbox, passed as is (not created)." },
    acting_user_id = { type = "string",
      description = "Sent as x-acting-user-id (trimmed) on every request: user attribution, not authorization." },
    base_url = { type = "string", check = http_url, env = "MASTRA_WORKSPACE_PROXY_URL",
      description = "Workspace proxy base URL (tests, private deployments); else MASTRA_WORKSPACE_PROXY_URL, else MASTRA_PLATFORM_REGION (us, eu: https://workspaces.<region>.mastra.ai), else https://workspaces.mastra.ai." },
    ca_file = { type = "string", non_empty = true,
      description = "Tests only: PEM bundle to verify the proxy's and the exec endpoint's certificates against." },
    insecure_skip_verify = { type = "boolean", default = false,
      description = "Tests only: accept any TLS certificate." },
    retry_delays_ms = { type = "array", items = "ms", default = { 2000, 4000 },
      description = "Delays before each retry of a create answered with a 5xx (two delays: 3 attempts; {}: none)." },
    request_timeout_ms = { type = "integer", ms = true, min = 1, default = 60000,
      description = "Timeout of each control-plane request (upstream: 60000)." },
    max_response_bytes = { type = "integer", min = 1024, default = 16777216,
      description = "Largest control-plane response body accepted, in bytes (the proxy's JSON answers are kilobytes). A larger body, or a Content-Length above it, fails the request with ResponseTooLargeError (fields limit, method, path) before more is read." },
    handshake_timeout_ms = { type = "integer", ms = true, min = 1, default = 30000,
      description = "Exec socket handshake deadline for commands without a timeout (upstream: 30000)." },
    stdin_frames = { type = "boolean", default = true,
      description = "Background processes keep stdin open and send_stdin sends binary [0x00]+bytes frames (an extension served by the reference server; the spec defines none). false: stdin is closed at once and send_stdin fails." },
  },
}
