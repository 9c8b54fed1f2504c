--- Descriptor of the Modal provider (ModalSandbox): Modal sandboxes over
-- gRPC/HTTP2, as Mastra's ModalSandbox drives them through the official
-- JS SDK (modal@0.7.6). Credentials: token_id/token_secret, else
-- MODAL_TOKEN_ID/MODAL_TOKEN_SECRET, else the active profile of
-- ~/.modal.toml (MODAL_CONFIG_PATH, MODAL_PROFILE); MODAL_SERVER_URL and
-- MODAL_ENVIRONMENT as the SDK reads them.
local options = require "sandkit.options"

local function positive_seconds(v)
  if v <= 0 or v % 1000 ~= 0 then return "must be a positive multiple of 1000 (milliseconds)" end
  -- Modal's timeout_secs is a uint32
  if v / 1000 > 4294967295 then return "must be at most 4294967295000 (2^32 - 1 seconds)" end
end

return {
  id = "modal",
  name = "ModalSandbox",
  description = "Runs commands in a Modal sandbox (gRPC over HTTP/2); stop snapshots the filesystem, start reconnects by name.",
  -- sb.fs: fs.lua beside this file
  filesystem = "own",
  options = options.with_common {
    id = { type = "string",
      description = "The sandbox name: start() reconnects to a running sandbox of that name; generated when absent." },
    app_name = { type = "string", default = "mastra", non_empty = true,
      description = "Modal App the sandbox belongs to (created if missing)." },
    base_image = { type = "string", default = "ubuntu:22.04", non_empty = true,
      description = "Registry image the sandbox is created from when there is no snapshot." },
    timeout_ms = { type = "integer", ms = true, min = 1000, default = 300000, check = positive_seconds,
      description = "Sandbox lifetime in milliseconds (Modal's timeout: a multiple of 1000, at most 4294967295000, since Modal takes whole seconds in 32 bits)." },
    workdir = { type = "string", non_empty = true,
      check = function(v) if v:sub(1, 1) ~= "/" then return "must be an absolute path" end end,
      description = "Working directory of the sandbox (absolute); commands start there unless given cwd." },
    token_id = { type = "string", non_empty = true, env = "MODAL_TOKEN_ID",
      description = "Modal token id (else MODAL_TOKEN_ID, else the active profile of ~/.modal.toml: MODAL_CONFIG_PATH, MODAL_PROFILE)." },
    token_secret = { type = "string", non_empty = true, env = "MODAL_TOKEN_SECRET", secret = true,
      description = "Modal token secret (else MODAL_TOKEN_SECRET, else the active profile of ~/.modal.toml). Never shown in errors." },
    server_url = { type = "string", non_empty = true, env = "MODAL_SERVER_URL",
      description = "Control-plane URL (else MODAL_SERVER_URL, else the profile, else https://api.modal.com:443)." },
    ca_file = { type = "string", non_empty = true,
      description = "PEM file of the certificate authorities to trust for TLS (control plane and task router), e.g. a private deployment or a TLS-intercepting proxy; default: the system's (libcurl reads no environment variable for this)." },
    max_response_bytes = { type = "integer", min = 1024, default = 16777216,
      description = "Largest gRPC response message accepted, in bytes (the SDKs allow up to 104857600). A length prefix above it ends the call at once with ResponseTooLargeError (fields limit, rpc); output streams are many messages and are not limited by it." },
    rpc_timeout_ms = { type = "integer", ms = true, zero = "no deadline",
      description = "Deadline of each control-plane call attempt, in ms (default none, as the SDK; 0: none); long polls get it on top of their poll time." },
  },
}
