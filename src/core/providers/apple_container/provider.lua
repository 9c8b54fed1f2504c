--- Descriptor of the apple-container provider (AppleContainerSandbox):
-- Apple's `container` CLI, one long-lived container per sandbox, commands
-- through `container exec` (docs/protocols/apple-container.md).
--
-- `options` is what sandkit.new / sandkit.AppleContainerSandbox accept (the
-- upstream option names in snake_case). `editor` is upstream's editor
-- provider descriptor (docs/protocols/apple-container.md §6): its name,
-- description and the closed schema of the 30 keys a stored configuration may
-- hold (no `container_binary`); `editor.options(config)` checks a stored
-- configuration against it and returns the options for
-- sandkit.new("apple-container", ...).
local options = require "sandkit.options"

local specific = {
  name = { type = "string", description = "Apple container name. Defaults to the sandbox ID." },
  image = { type = "string", default = "node:22-slim", description = "OCI image to use" },
  command = { type = "array", default = { "sleep", "infinity" },
    description = "Container init command. Must keep the container alive for exec-based command execution." },
  volumes = { type = "map", description = "Host-to-container bind mounts (host path -> container path)" },
  mounts = { type = "array", description = "Raw Apple container --mount specs" },
  network = { type = "string", description = "Apple container network attachment spec" },
  published_ports = { type = "array", description = "Port publish specs" },
  published_sockets = { type = "array", description = "Socket publish specs" },
  cpus = { type = { "number", "string" }, description = "Number of CPUs to allocate" },
  memory = { type = "string", description = "Memory allocation, for example 1G" },
  platform = { type = "string", description = "OCI platform, for example linux/arm64" },
  arch = { type = "string", description = "Image architecture for multi-arch images" },
  os = { type = "string", description = "Operating system for multi-platform images" },
  rosetta = { type = "boolean", default = false, description = "Enable Rosetta in the container" },
  readonly_rootfs = { type = "boolean", default = false, description = "Mount the container root filesystem as read-only" },
  ssh = { type = "boolean", default = false, description = "Forward the host SSH agent socket" },
  init = { type = "boolean", default = true, description = "Enable Apple's init process in the container" },
  virtualization = { type = "boolean", default = false, description = "Expose virtualization capabilities to the container" },
  cap_add = { type = "array", description = "Linux capabilities to add" },
  cap_drop = { type = "array", description = "Linux capabilities to drop" },
  tmpfs = { type = "array", description = "tmpfs destination paths (container paths only, for example /tmp)" },
  dns = { type = "array", description = "DNS nameserver IPs" },
  dns_search = { type = "array", description = "DNS search domains" },
  no_dns = { type = "boolean", default = false, description = "Do not configure DNS in the container" },
  labels = { type = "map", description = "Container labels (the mastra.sandbox labels are always added)" },
  working_directory = { type = "string", default = "/workspace",
    description = "Working directory inside the container (wins over working_dir)" },
  working_dir = { type = "string", default = "/workspace",
    description = "Working directory inside the container (deprecated alias of working_directory)" },
  timeout = options.command_timeout("Timeout of each command that gives none, in milliseconds (0: none), enforced "
    .. "inside the container (124 on expiry); also bounds each lifecycle CLI call", 300000),
  delete_on_destroy = { type = "boolean", default = true, description = "Delete the Apple container on destroy" },
  container_binary = { type = "string", default = "container", non_empty = true,
    description = "Path or name for the Apple container CLI" },
}

local desc = {
  id = "apple-container",
  name = "AppleContainerSandbox",
  label = "Apple Container Sandbox",
  description = "Local OCI Linux container sandbox powered by Apple container",
  options = options.with_common(specific),
  -- sb.fs: short sh scripts in the sandbox (lua/sandkit/fs/exec.lua)
  filesystem = "exec",
  -- clone() keeps every option but these (upstream drops id and name: the
  -- name would address the template's container)
  clone_drops = { "name" },
}

-- ---- the editor descriptor (docs/protocols/apple-container.md §6) -------

local EDITOR_KEYS = {
  "id", "image", "name", "command", "env", "volumes", "mounts", "network", "published_ports",
  "published_sockets", "cpus", "memory", "platform", "arch", "os", "rosetta", "readonly_rootfs", "ssh",
  "init", "virtualization", "cap_add", "cap_drop", "tmpfs", "dns", "dns_search", "no_dns", "labels",
  "working_dir", "timeout", "delete_on_destroy",
}

local properties = {}
for _, k in ipairs(EDITOR_KEYS) do
  local spec = desc.options[k]
  local t = spec.type
  local schema = { description = spec.description, default = spec.default }
  if k == "id" then
    schema.description = "Stable sandbox ID, used to reconnect to the same container"
  end
  if type(t) == "table" then
    schema.any_of = {}
    for i, name in ipairs(t) do schema.any_of[i] = { type = name } end
  elseif t == "array" then
    schema.type, schema.items = "array", { type = "string" }
  elseif t == "map" or t == "env" then
    schema.type, schema.additional_properties = "object", { type = "string" }
  else
    schema.type = spec.ms and "number" or t -- upstream's schema: a number of ms
  end
  properties[k] = schema
end

desc.editor = {
  id = desc.id,
  name = desc.label,
  description = desc.description,
  config_schema = { type = "object", additional_properties = false, properties = properties },
}

-- The stored configuration's keys, any value (the constructor checks them).
local EDITOR_CHECK = { name = desc.label, provider = desc.id, options = {} }
for k in pairs(properties) do EDITOR_CHECK.options[k] = {} end

--- Checks a stored editor configuration (only the schema's keys) and returns
-- a copy to pass to sandkit.new("apple-container", ...).
function desc.editor.options(config)
  local out = {}
  for k, v in pairs(options.check(EDITOR_CHECK, config, 1)) do out[k] = v end
  return out
end

return desc
