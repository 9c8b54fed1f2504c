--- Descriptor of the docker provider (DockerSandbox): one long-lived
-- container per sandbox through the Docker Engine API, on Docker Engine or
-- Podman's compatible service (docs/protocols/docker.md). Options are
-- upstream's (@mastra/docker 0.3.0) in snake_case, plus pull, docker_host
-- and api_timeout.
local compat = require "sandkit.compat"
local options = require "sandkit.options"

-- ulimits: { { name = "nofile", soft = 1024, hard = 2048 }, ... }
local ULIMIT_KEYS = { name = true, soft = true, hard = true }

local function check_ulimits(v)
  for i, u in ipairs(v) do
    for k in pairs(u) do
      if not ULIMIT_KEYS[k] then
        local hint = options.suggest(k, ULIMIT_KEYS)
        return ("[%d] has an unknown key '%s' (%s)"):format(i, options.shown(k),
          hint and ("did you mean '" .. hint .. "'?") or "name, soft, hard")
      end
    end
    if type(u.name) ~= "string" or u.name == "" then return ("[%d].name must be a non-empty string"):format(i) end
    for _, k in ipairs({ "soft", "hard" }) do
      if not (type(u[k]) == "number" and u[k] == math.floor(u[k])) then
        return ("[%d].%s must be a whole number"):format(i, k)
      end
    end
  end
end

-- ports: { 8080, { port = 3000, host_port = 13000, host_ip = "0.0.0.0", protocol = "tcp" } };
-- checked here, normalised to the table form by desc.validate
local PORT_KEYS = { port = true, host_port = true, host_ip = true, protocol = true }
local PROTOCOLS = { tcp = true, udp = true, sctp = true }

local function port_problem(v)
  if not compat.is_whole(v) then return "must be a whole number" end
  if v < 1 or v > 65535 then return "must be a port number from 1 to 65535" end
end

local function check_ports(v)
  local n = #v
  for k in pairs(v) do
    if not compat.is_whole(k) or k < 1 or k > n then return "must be an array" end
  end
  for i, p in ipairs(v) do
    if type(p) == "number" then
      local msg = port_problem(p)
      if msg then return ("[%d] %s"):format(i, msg) end
    elseif type(p) == "table" then
      for k in pairs(p) do
        if not PORT_KEYS[k] then
          return ("[%d] has an unknown key '%s' (port, host_port, host_ip, protocol)"):format(i, options.shown(k))
        end
      end
      local msg = port_problem(p.port)
      if msg then return ("[%d].port %s"):format(i, msg) end
      msg = p.host_port ~= nil and port_problem(p.host_port)
      if msg then return ("[%d].host_port %s"):format(i, msg) end
      if p.host_ip ~= nil and (type(p.host_ip) ~= "string" or p.host_ip == "" or p.host_ip:find("[^%x%.:]")) then
        return ("[%d].host_ip must be an IPv4 or IPv6 address"):format(i)
      end
      if p.protocol ~= nil and not PROTOCOLS[p.protocol] then
        return ("[%d].protocol must be \"tcp\", \"udp\" or \"sctp\""):format(i)
      end
    else
      return ("[%d] must be a port number or a table, got %s"):format(i, type(p))
    end
  end
end

local function int(description, min)
  return { type = "integer", min = min, description = description }
end

local specific = {
  name = { type = "string", description = "Container name (sanitised as upstream). Defaults to the sandbox ID." },
  image = { type = "string", default = "node:22-slim", non_empty = true,
    flag = { name = "image", arg = "IMAGE", help = "the container's image" },
    description = "Docker image to use" },
  command = { type = "array", default = { "sleep", "infinity" },
    description = "Container command; it must keep the container running (commands run through exec)." },
  working_directory = { type = "string", default = "/workspace",
    description = "Working directory inside the container (wins over working_dir)" },
  working_dir = { type = "string", default = "/workspace",
    description = "Working directory inside the container (upstream's workingDir)" },
  privileged = { type = "boolean", default = false, description = "Run in privileged mode" },
  timeout = options.command_timeout("Timeout of each command that gives none, in milliseconds (0: none)", 300000),
  volumes = { type = "map", description = "Host-to-container bind mounts (host path -> container path)" },
  network = { type = "string", description = "Docker network to join (HostConfig.NetworkMode)" },
  memory = int("Memory limit in bytes", 0),
  memory_swap = int("Total memory plus swap in bytes (-1: unlimited swap)", -1),
  cpu_shares = int("CPU shares (relative weight)", 0),
  cpu_quota = int("CPU quota in microseconds per period (-1: none)", -1),
  cpu_period = int("CPU period in microseconds", 0),
  pids_limit = int("Maximum number of processes in the container (0 or -1: unlimited)", -1),
  readonly_rootfs = { type = "boolean", description = "Mount the container root filesystem read-only" },
  cap_drop = { type = "array", description = "Linux capabilities to drop" },
  cap_add = { type = "array", description = "Linux capabilities to add" },
  security_opt = { type = "array", description = "Docker security options" },
  ulimits = { type = "array", items = "table", check = check_ulimits,
    lua_type = "{ name: string, soft: integer, hard: integer }[]",
    description = "Ulimits: { { name = \"nofile\", soft = 1024, hard = 2048 }, ... }" },
  tmpfs = { type = "map", description = "tmpfs mounts: container path -> mount options" },
  ports = { type = "table", check = check_ports,
    lua_type = '(integer|{ port: integer, host_port?: integer, host_ip?: string, protocol?: "tcp"|"udp"|"sctp" })[]',
    description = "Container ports to publish: numbers, or { port, host_port, host_ip, protocol } "
      .. "(host_ip 127.0.0.1, protocol tcp, host_port chosen by the engine unless given); see sb:get_port_url()" },
  labels = { type = "map", description = "Container labels (mastra.sandbox and mastra.sandbox.id are always set)" },
  pull = { type = "string", enum = { "missing", "never" }, default = "missing",
    description = "missing: pull the image when it is not present locally; never: fail instead" },
  docker_host = { type = "string", non_empty = true, env = "DOCKER_HOST",
    description = "Daemon address as DOCKER_HOST takes it (unix:///path, tcp://host:port; TLS from "
      .. "DOCKER_TLS_VERIFY and DOCKER_CERT_PATH); without it or DOCKER_HOST, unix:///var/run/docker.sock" },
  api_timeout = { type = "integer", ms = true, min = 1, default = 60000,
    description = "Bound on each Engine API request in milliseconds (not on commands; a pull has 10 minutes)" },
}

local desc = {
  id = "docker",
  name = "DockerSandbox",
  label = "Docker Sandbox",
  description = "Local container sandbox powered by Docker (Docker Engine API; Docker or Podman)",
  options = options.with_common(specific),
  -- sb.fs: fs.lua beside this file (the archive endpoints, the exec-script
  -- backend for the rest); every capability of options.capabilities
  -- holds, so none is listed
  filesystem = "own",
  -- clone() keeps every option but these (name addresses the template's container)
  clone_drops = { "name" },
  -- sb:get_port_url(port), sb:snapshot(opts): methods.lua in this folder
  methods = { "get_port_url", "snapshot" },
}

function desc.validate(out)
  if out.ports then
    local norm = {}
    for i, p in ipairs(out.ports) do
      if type(p) == "number" then p = { port = p } end
      norm[i] = { port = compat.tointeger(p.port), host_port = p.host_port and compat.tointeger(p.host_port),
        host_ip = p.host_ip or "127.0.0.1", protocol = p.protocol or "tcp" }
    end
    out.ports = norm
  end
end

return desc
