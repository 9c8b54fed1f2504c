-- Emulated Apple `container` CLI (the subcommands and flags sandkit's
-- AppleContainerSandbox uses, with Apple's wording), run by the `container`
-- front-end script beside this file. See README.md for the contract.
--
-- Exit statuses: 0 success; 1 a service-side error ("Error: <code>: "<msg>""),
-- 64 a usage error (unknown option, missing argument), like swift-argument-parser.
-- `exec` and some faults end by writing a plan file ($SANDKIT_CONTAINER_PLAN)
-- that the front-end carries out, so that the caller's child process is the one
-- that runs the command and can be signalled.

local HOME = os.getenv("SANDKIT_CONTAINER_HOME") or (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = HOME .. "/lib/?.lua;" .. package.path

local json = require("swift_json")
local cli = require("cli_parse")
local host = require("host")
local runtime = require("runtime")
local store_mod = require("store")
local faults = require("faults")
local errors = require("errors")
local parser = require("apple_parser")

math.randomseed(os.time(), tonumber(tostring({}):match("0x(%x+)"), 16) or 0)

-- Errors -------------------------------------------------------------------

local fail, cz, unsupported = errors.fail, errors.cz, errors.unsupported

-- Version -----------------------------------------------------------------

-- A malformed version is reported by main(), inside its error handling.
local function cli_version()
  local v = os.getenv("SANDKIT_CONTAINER_CLI_VERSION")
  if not v or v == "" then v = "1.0.0" end
  local a, b, c = v:match("^(%d+)%.?(%d*)%.?(%d*)$")
  if not a then return { 1, 0, 0 }, "SANDKIT_CONTAINER_CLI_VERSION must look like 1.0.0, got " .. v end
  return { tonumber(a), tonumber(b) or 0, tonumber(c) or 0 }
end

local VERSION, VERSION_ERROR = cli_version()

local function version_at_least(a, b)
  if VERSION[1] ~= a then return VERSION[1] > a end
  return VERSION[2] >= b
end

local function version_string()
  return string.format("%d.%d.%d", VERSION[1], VERSION[2], VERSION[3])
end

-- Option tables (Apple's Flags.swift) ---------------------------------------

local DEBUG = { "--debug", key = "debug" }

local PROCESS_OPTS = {
  { "-e", "--env", key = "env", value = "env", multi = true },
  { "--env-file", key = "env_file", value = "env-file", multi = true },
  { "--gid", key = "gid", value = "gid" },
  { "-i", "--interactive", key = "interactive" },
  { "-t", "--tty", key = "tty" },
  { "-u", "--user", key = "user", value = "user" },
  { "--uid", key = "uid", value = "uid" },
  { "-w", "--workdir", "--cwd", key = "cwd", value = "dir" },
  { "--ulimit", key = "ulimit", value = "ulimit", multi = true },
}

local RUN_OPTS = {
  { "-c", "--cpus", key = "cpus", value = "cpus" },
  { "-m", "--memory", key = "memory", value = "memory" },
  { "--dns", key = "dns", value = "ip", multi = true },
  { "--dns-domain", key = "dns_domain", value = "domain" },
  { "--dns-option", key = "dns_option", value = "option", multi = true },
  { "--dns-search", key = "dns_search", value = "domain", multi = true },
  { "--scheme", key = "scheme", value = "scheme" },
  { "-a", "--arch", key = "arch", value = "arch" },
  { "--cap-add", key = "cap_add", value = "cap", multi = true, since = { 0, 12 } },
  { "--cap-drop", key = "cap_drop", value = "cap", multi = true, since = { 0, 12 } },
  { "--cidfile", key = "cidfile", value = "cidfile" },
  { "-d", "--detach", key = "detach" },
  { "--entrypoint", key = "entrypoint", value = "cmd" },
  { "--init", key = "init", since = { 0, 10 } },
  { "--init-image", key = "init_image", value = "image" },
  { "-k", "--kernel", key = "kernel", value = "path" },
  { "-l", "--label", key = "label", value = "label", multi = true },
  { "--mount", key = "mount", value = "mount", multi = true },
  { "--name", key = "name", value = "name" },
  { "--network", key = "network", value = "network", multi = true },
  { "--no-dns", key = "no_dns" },
  { "--os", key = "os", value = "os" },
  { "-p", "--publish", key = "publish", value = "spec", multi = true },
  { "--platform", key = "platform", value = "platform" },
  { "--publish-socket", key = "publish_socket", value = "spec", multi = true },
  { "--read-only", key = "read_only", since = { 0, 8 } },
  { "--rm", "--remove", key = "rm" },
  { "--rosetta", key = "rosetta" },
  { "--runtime", key = "runtime", value = "runtime" },
  { "--ssh", key = "ssh" },
  { "--shm-size", key = "shm_size", value = "shm-size" },
  { "--tmpfs", key = "tmpfs", value = "tmpfs", multi = true },
  { "--virtualization", key = "virtualization" },
  { "-v", "--volume", key = "volume", value = "volume", multi = true },
  { "--progress", key = "progress", value = "type" },
  { "--max-concurrent-downloads", key = "max_downloads", value = "max-concurrent-downloads" },
  DEBUG,
}

local function with_process(list)
  local out = {}
  for _, o in ipairs(PROCESS_OPTS) do out[#out + 1] = o end
  for _, o in ipairs(list) do
    -- options newer than the emulated CLI version do not exist for it
    if not o.since or version_at_least(o.since[1], o.since[2]) then out[#out + 1] = o end
  end
  return out
end

local SPECS = {
  run = { name = "run", usage = "container run [<options>] <image> [<arguments> ...]",
    options = with_process(RUN_OPTS), positionals = { "image" }, passthrough = "arguments" },
  exec = { name = "exec", usage = "container exec [<options>] <container-id> <arguments> ...",
    options = with_process({ { "-d", "--detach", key = "detach" }, DEBUG }),
    positionals = { "container-id" }, passthrough = "arguments", passthrough_required = true },
  inspect = { name = "inspect", usage = "container inspect [--debug] <container-ids> ...",
    options = { DEBUG }, rest = "container-ids", rest_required = true },
  start = { name = "start", usage = "container start [--attach] [--interactive] [--debug] <container-id>",
    options = { { "-a", "--attach", key = "attach" }, { "-i", "--interactive", key = "interactive" }, DEBUG },
    positionals = { "container-id" } },
  stop = { name = "stop", usage = "container stop [--all] [--signal <signal>] [--time <time>] [--debug] [<container-ids> ...]",
    options = { { "-a", "--all", key = "all" }, { "-s", "--signal", key = "signal", value = "signal" },
      { "-t", "--time", key = "time", value = "time" }, DEBUG },
    rest = "container-ids" },
  delete = { name = "delete", usage = "container delete [--all] [--force] [--debug] [<container-ids> ...]",
    options = { { "-a", "--all", key = "all" }, { "-f", "--force", key = "force" }, DEBUG },
    rest = "container-ids" },
  list = { name = "list", usage = "container list [--all] [--format <format>] [--quiet] [--debug]",
    options = { { "-a", "--all", key = "all" }, { "--format", key = "format", value = "format" },
      { "-q", "--quiet", key = "quiet" }, DEBUG } },
  logs = { name = "logs", usage = "container logs [--follow] [--boot] [-n <n>] [--debug] <container-id>",
    options = { { "-f", "--follow", key = "follow" }, { "--boot", key = "boot" },
      { "-n", key = "n", value = "n" }, DEBUG },
    positionals = { "container-id" } },
  system = { name = "system", usage = "container system <subcommand>",
    options = { DEBUG }, rest = "arguments", rest_required = true },
  ["_reap-all"] = { name = "_reap-all", usage = "container _reap-all [--delete]",
    options = { { "--delete", key = "delete" } } },
}

local ALIASES = { rm = "delete", ls = "list" }

-- Helpers -----------------------------------------------------------------

local STATE = os.getenv("SANDKIT_CONTAINER_STATE")
local store

local function out(s) io.stdout:write(s) end

local resolve_env, env_file_entries, dedupe_env, dedupe = parser.resolve_env, parser.env_file_entries,
  parser.dedupe_env, parser.dedupe
local normalize_ref, parse_memory, capabilities = parser.normalize_ref, parser.parse_memory, parser.capabilities
local parse_labels, parse_publish, parse_sockets = parser.parse_labels, parser.parse_publish, parser.parse_sockets
local parse_volume, parse_mount, check_destination = parser.parse_volume, parser.parse_mount, parser.check_destination
local parse_signal, IMAGE_ENV = parser.parse_signal, parser.IMAGE_ENV
parser.volume_path = function(name) return store:volume_path(name) end

-- Inspect / list rendering -------------------------------------------------

local ARRAY_KEYS = {
  mounts = true, publishedPorts = true, publishedSockets = true, networks = true, nameservers = true,
  searchDomains = true, options = true, arguments = true, environment = true, supplementalGroups = true,
  rlimits = true, capAdd = true, capDrop = true,
}

local function attachments(c)
  local list = json.array()
  if c.st.status ~= "running" then return list end
  local n = math.tointeger(((c.emu.seq or 1) % 250) + 2)
  for _, a in ipairs(c.cfg.networks or {}) do
    list[#list + 1] = { network = a.network, hostname = a.options and a.options.hostname or c.id,
      ipv4Address = "192.168.64." .. n .. "/24", ipv4Gateway = "192.168.64.1" }
  end
  return list
end

-- Dates are kept as Unix seconds. CLI 1.0 prints them ISO 8601; earlier CLIs used
-- JSONEncoder's default, seconds since 2001-01-01 as a number.
local function render_date(t)
  if t == nil then return nil end
  if version_at_least(1, 0) then return os.date("!%Y-%m-%dT%H:%M:%SZ", math.tointeger(t) or math.floor(t)) end
  return t - 978307200
end

local function render_container(c)
  local started = c.st.status == "running" and render_date(c.st.startedDate) or nil
  local cfg = {}
  for k, v in pairs(c.cfg) do cfg[k] = v end
  cfg.creationDate = render_date(c.cfg.creationDate)
  if version_at_least(1, 0) then
    return { id = c.id, configuration = cfg,
      status = { state = c.st.status, networks = attachments(c), startedDate = started } }
  end
  return { status = c.st.status, configuration = cfg, networks = attachments(c), startedDate = started }
end

local function render_list(containers, pretty)
  local items = json.array()
  for _, c in ipairs(containers) do items[#items + 1] = render_container(c) end
  return json.encode(items, { pretty = pretty, array_keys = ARRAY_KEYS })
end

-- Commands ----------------------------------------------------------------

local cmd = {}

local function not_found_get(id)
  fail(cz("notFound", "get failed: container " .. id .. " not found"))
end

-- A launched container's state: running since now, and stored.
local function mark_running(c, st)
  st.status = "running"
  st.startedDate = os.time()
  c.st = st
  c.emu.started_once = true
  store:save_emu(c)
  store:save_state(c)
end

function cmd.run(p)
  local o = p.opts
  if o.tty then unsupported("--tty") end
  if o.interactive then unsupported("--interactive") end
  if o.user or o.uid or o.gid then unsupported("--user/--uid/--gid") end
  if not o.detach then unsupported("run without --detach") end

  local id = o.name or host.uuid()
  if not store_mod.valid_id(id) then fail(cz("invalidArgument", "invalid entity name " .. id)) end
  if store:load(id) then fail(cz("exists", "container with id " .. id .. " already exists")) end

  local image = p.pos.image
  local ref, domain, path, tag = normalize_ref(image)
  if image:find("does-not-exist", 1, true) then
    local registry = domain == "docker.io" and "registry-1.docker.io" or domain
    fail(cz("internalError", "HTTP request to https://" .. registry .. "/v2/" .. path .. "/manifests/" .. tag ..
      " failed with response: 401 Unauthorized. No credentials found for host " .. registry))
  end

  local os_name, arch, variant = o.os or "linux", o.arch or "arm64", nil
  if o.platform then
    local a, b, c3 = o.platform:match("^([^/]+)/([^/]+)/?(.*)$")
    if not a then fail(cz("invalidArgument", "invalid platform " .. o.platform)) end
    os_name, arch, variant = a, b, c3 ~= "" and c3 or nil
  end

  local env = {}
  for _, e in ipairs(IMAGE_ENV) do env[#env + 1] = e end
  env_file_entries(o.env_file, env)
  resolve_env(o.env, env)
  env = dedupe_env(env)

  local args = json.array()
  local executable
  if o.entrypoint and o.entrypoint ~= "" then
    executable = o.entrypoint
    for _, a in ipairs(p.passthrough) do args[#args + 1] = a end
  elseif #p.passthrough > 0 then
    executable = p.passthrough[1]
    for i = 2, #p.passthrough do args[#args + 1] = p.passthrough[i] end
  else
    executable = "/bin/sh" -- the emulated image's default command
  end

  local cpus = 4
  if o.cpus then
    cpus = math.tointeger(tonumber(o.cpus:match("^[+-]?%d+$") and o.cpus or "x"))
    if not cpus then cli.usage_error(SPECS.run, "The value '" .. o.cpus .. "' is invalid for '--cpus <cpus>'") end
  end
  local memory = 1024 * 1024 * 1024
  if o.memory then memory = parse_memory(o.memory) end

  local mounts = json.array()
  for _, t in ipairs(dedupe(o.tmpfs)) do
    mounts[#mounts + 1] = { type = { tmpfs = {} }, source = "", destination = t, options = json.array() }
  end
  for _, v in ipairs(o.volume or {}) do mounts[#mounts + 1] = parse_volume(v) end
  for _, m in ipairs(dedupe(o.mount)) do mounts[#mounts + 1] = parse_mount(m) end
  for _, m in ipairs(mounts) do check_destination(m) end

  local networks = json.array()
  local network_none = false
  local nets = o.network or {}
  for _, spec in ipairs(nets) do
    local name = spec:match("^[^,]*")
    if name == "" then fail(cz("invalidArgument", "network name cannot be empty")) end
    if name == "none" then
      if #nets > 1 then
        fail(cz("unsupported", "no other networks may be created along with network none"))
      end
      network_none = true
    else
      local mtu = tonumber(spec:match(",mtu=(%d+)")) or 1280
      networks[#networks + 1] = { network = name, options = { hostname = id, mtu = mtu } }
    end
  end
  if #nets == 0 then networks[1] = { network = "default", options = { hostname = id, mtu = 1280 } } end

  local dns
  if not o.no_dns then
    dns = { nameservers = json.array(o.dns or {}), domain = o.dns_domain,
      searchDomains = json.array(o.dns_search or {}), options = json.array(o.dns_option or {}) }
  end

  local shm
  if o.shm_size then shm = parse_memory(o.shm_size) end

  local cfg = {
    id = id,
    image = { reference = ref, descriptor = { mediaType = "application/vnd.oci.image.index.v1+json",
      digest = "sha256:" .. host.sha256_hex(ref), size = 1609 } },
    mounts = mounts,
    publishedPorts = parse_publish(o.publish),
    publishedSockets = parse_sockets(o.publish_socket),
    labels = parse_labels(o.label),
    sysctls = {},
    networks = networks,
    dns = dns,
    rosetta = o.rosetta == true,
    initProcess = { executable = executable, arguments = args, environment = json.array(env),
      workingDirectory = o.cwd or "/", terminal = false, user = { id = { uid = 0, gid = 0 } },
      supplementalGroups = json.array(), rlimits = json.array() },
    platform = { os = os_name, architecture = arch, variant = variant },
    resources = { cpus = cpus, memoryInBytes = memory, cpuOverhead = 1 },
    runtimeHandler = o.runtime or "container-runtime-linux",
    virtualization = o.virtualization == true,
    ssh = o.ssh == true,
    readOnly = o.read_only == true,
    useInit = o.init == true,
    capAdd = capabilities(o.cap_add),
    capDrop = capabilities(o.cap_drop),
    shmSize = shm,
    creationDate = os.time(),
  }

  if memory < 200 * 1024 * 1024 then
    fail(cz("internalError", "failed to create container", cz("invalidArgument",
      "minimum memory amount allowed is 200 MiB (got " .. memory .. " bytes)")))
  end

  if not store:create_dir(id) then fail(cz("exists", "container with id " .. id .. " already exists")) end
  local c = { id = id, dir = store:dir(id), cfg = cfg, st = { status = "stopped" } }
  local volume_paths = {}
  for _, m in ipairs(mounts) do
    if m.type.volume then volume_paths[m.type.volume.name] = m.source end
  end
  c.emu = { seq = store:next_seq(), hostname = id, network_none = network_none,
    volume_paths = volume_paths, auto_remove = o.rm == true }
  store:save_config(c)
  store:save_emu(c)
  store:save_state(c)

  local function boot_failure(message)
    store:remove(c)
    fail(message)
  end
  if not runtime.prepare_rootfs(c.dir, cfg) then
    boot_failure(cz("internalError", "failed to bootstrap container", "cannot prepare the root filesystem"))
  end
  local st, why, detail = runtime.launch(c.dir, cfg, c.emu)
  if not st then
    if why == "notfound" then
      boot_failure(cz("internalError", "failed to bootstrap container",
        cz("invalidArgument", "failed to find target executable " .. executable)))
    elseif why == "chdir" then
      boot_failure(cz("internalError", "failed to bootstrap container",
        cz("invalidArgument", "working directory " .. cfg.initProcess.workingDirectory .. " is not a directory")))
    end
    boot_failure(cz("internalError", "failed to bootstrap container", detail))
  end
  mark_running(c, st)
  if o.cidfile and o.cidfile ~= "" then host.write_file(o.cidfile, id) end
  out(id .. "\n")
end

local function plan_path()
  local plan = os.getenv("SANDKIT_CONTAINER_PLAN")
  if not plan or plan == "" then
    fail("emulator: this subcommand must be run through the `container` front-end script")
  end
  return plan
end

function cmd.exec(p)
  local o = p.opts
  if o.tty then unsupported("--tty") end
  if o.user or o.uid or o.gid then unsupported("--user/--uid/--gid") end
  if o.ulimit then unsupported("--ulimit") end
  local id = p.pos["container-id"]
  local c = store:load(id) or not_found_get(id)
  if c.st.status ~= "running" then fail(cz("invalidState", "container " .. id .. " is not running")) end

  local env = {}
  for _, e in ipairs(c.cfg.initProcess.environment or {}) do env[#env + 1] = e end
  local extra = {}
  env_file_entries(o.env_file, extra)
  resolve_env(o.env, extra)
  for _, e in ipairs(dedupe_env(extra)) do env[#env + 1] = e end
  env = dedupe_env(env)

  local wd = o.cwd or c.cfg.initProcess.workingDirectory
  if not host.is_dir("/proc/" .. c.st.pid .. "/root" .. (wd:sub(1, 1) == "/" and wd or "/" .. wd)) then
    fail(cz("invalidArgument", "working directory " .. wd .. " is not a directory in container " .. id))
  end

  local nsenter = { "/usr/bin/nsenter", "--target", tostring(c.st.pid), "--mount", "--uts", "--ipc", "--pid" }
  if c.emu.network_none then nsenter[#nsenter + 1] = "--net" end
  for _, w in ipairs({ "--root", "--", "/bin/sh", "-c", 'cd "$0" || exit 1; exec "$@"', wd }) do
    nsenter[#nsenter + 1] = w
  end
  for _, a in ipairs(p.passthrough) do nsenter[#nsenter + 1] = a end

  local lines = { "# exec" }
  local exports, skipped = runtime.env_lines(env)
  for _, l in ipairs(exports) do lines[#lines + 1] = l end
  for _, k in ipairs(skipped) do
    io.stderr:write("warning: emulated container cannot pass environment variable '" .. k .. "'\n")
  end
  lines[#lines + 1] = "__sk_interactive=" .. (o.interactive and "1" or "0")
  lines[#lines + 1] = "__sk_detach=" .. (o.detach and "1" or "0")
  lines[#lines + 1] = "__sk_cid=" .. host.quote(id)
  lines[#lines + 1] = "set -- " .. host.quote_all(nsenter)
  host.write_file(plan_path(), table.concat(lines, "\n") .. "\n")
end

function cmd.inspect(p)
  local wanted, order = {}, {}
  for _, id in ipairs(p.rest) do
    if not wanted[id] then wanted[id] = true order[#order + 1] = id end
  end
  local found, seen = {}, {}
  for _, c in ipairs(store:all()) do
    if wanted[c.id] then found[#found + 1] = c seen[c.id] = true end
  end
  if version_at_least(1, 0) then
    local missing = {}
    for _, id in ipairs(order) do if not seen[id] then missing[#missing + 1] = id end end
    if #missing > 0 then
      table.sort(missing)
      fail(cz("notFound", "container not found: " .. table.concat(missing, ", ")))
    end
    out(render_list(found, true) .. "\n")
  else
    out(render_list(found, false) .. "\n")
  end
end

local function launch_existing(c)
  for _, m in ipairs(c.cfg.mounts or {}) do
    if m.type.virtiofs and not host.is_dir(m.source) then
      fail(cz("invalidState", "mount source path '" .. m.source .. "' does not exist"))
    end
  end
  if not runtime.prepare_rootfs(c.dir, c.cfg) then
    fail(cz("internalError", "failed to bootstrap container", "cannot prepare the root filesystem"))
  end
  local st, why, detail = runtime.launch(c.dir, c.cfg, c.emu)
  if not st then
    local cause = detail or (why == "notfound" and ("failed to find target executable " .. c.cfg.initProcess.executable))
      or ("working directory " .. c.cfg.initProcess.workingDirectory .. " is not a directory")
    fail(cz("internalError", "failed to bootstrap container", cause))
  end
  mark_running(c, st)
end

function cmd.start(p)
  if p.opts.attach or p.opts.interactive then unsupported("start --attach/--interactive") end
  local id = p.pos["container-id"]
  local c = store:load(id) or not_found_get(id)
  if c.st.status ~= "running" then launch_existing(c) end
  out(id .. "\n")
end

local function select_ids(p, verb, filter)
  local o = p.opts
  if #p.rest == 0 and not o.all then
    fail(cz("invalidArgument", "no containers specified and --all not supplied"))
  end
  if #p.rest > 0 and o.all then
    fail(cz("invalidArgument", verb == "stop"
      and "explicitly supplied container IDs conflict with the --all flag"
      or "explicitly supplied container ID(s) conflict with the --all flag"))
  end
  if not o.all then return dedupe(p.rest) end
  local ids = {}
  for _, c in ipairs(store:all()) do
    if not filter or filter(c) then ids[#ids + 1] = c.id end
  end
  return ids
end

local function aggregate(errors)
  if #errors > 0 then fail(table.concat(errors, "\n")) end
end

function cmd.stop(p)
  local grace = 5
  if p.opts.time then
    grace = math.tointeger(tonumber(p.opts.time:match("^[+-]?%d+$") and p.opts.time or "x"))
    if not grace then cli.usage_error(SPECS.stop, "The value '" .. p.opts.time .. "' is invalid for '--time <time>'") end
  end
  local signal = parse_signal(p.opts.signal)
  local errors = {}
  for _, id in ipairs(select_ids(p, "stop")) do
    local c = store:load(id)
    if not c then
      errors[#errors + 1] = cz("internalError", "failed to stop container",
        cz("notFound", "container with ID " .. id .. " not found"))
    else
      if c.st.status ~= "stopped" then
        c.st.status = "stopping"
        store:save_state(c)
        runtime.stop(c.st, c.cfg.useInit, signal, math.max(grace, 0))
        c.st = { status = "stopped" }
        store:save_state(c)
        if c.emu.auto_remove then store:remove(c) end
      end
      out(id .. "\n")
    end
  end
  aggregate(errors)
end

function cmd.delete(p)
  local force = p.opts.force == true
  local errors = {}
  local ids = select_ids(p, "delete", function(c) return force or c.st.status ~= "running" end)
  for _, id in ipairs(ids) do
    local c = store:load(id)
    if not c then
      errors[#errors + 1] = cz("internalError", "failed to delete container",
        cz("notFound", "container with ID " .. id .. " not found"))
    elseif c.st.status == "stopping" or (c.st.status == "running" and not force) then
      errors[#errors + 1] = cz("internalError", "failed to delete container",
        cz("invalidState", "container " .. id .. " is " .. c.st.status .. " and can not be deleted"))
    else
      if c.st.status == "running" then runtime.kill_now(c.st) end
      store:remove(c)
      out(id .. "\n")
    end
  end
  aggregate(errors)
end

function cmd.list(p)
  local o = p.opts
  local format = o.format or "table"
  if format ~= "json" and format ~= "table" and format ~= "yaml" and format ~= "toml" then
    cli.usage_error(SPECS.list, "The value '" .. format .. "' is invalid for '--format <format>'")
  end
  if format == "yaml" or format == "toml" then unsupported("--format " .. format) end
  local items = {}
  for _, c in ipairs(store:all()) do
    if o.all or c.st.status == "running" then items[#items + 1] = c end
  end
  if format == "json" then
    out(render_list(items, false) .. "\n")
    return
  end
  if o.quiet then
    for _, c in ipairs(items) do out(c.id .. "\n") end
    return
  end
  local rows = { { "ID", "IMAGE", "OS", "ARCH", "STATE", "ADDR", "CPUS", "MEMORY", "STARTED" } }
  for _, c in ipairs(items) do
    local addr = {}
    for _, a in ipairs(attachments(c)) do addr[#addr + 1] = a.ipv4Address end
    rows[#rows + 1] = { c.id, c.cfg.image.reference, c.cfg.platform.os, c.cfg.platform.architecture,
      c.st.status, table.concat(addr, ","), string.format("%d", c.cfg.resources.cpus),
      string.format("%d MB", c.cfg.resources.memoryInBytes // (1024 * 1024)),
      c.st.status == "running" and os.date("!%Y-%m-%dT%H:%M:%SZ", math.tointeger(c.st.startedDate) or 0) or "" }
  end
  local widths = {}
  for _, r in ipairs(rows) do
    for i, cell in ipairs(r) do widths[i] = math.max(widths[i] or 0, #cell) end
  end
  for _, r in ipairs(rows) do
    local cells = {}
    for i, cell in ipairs(r) do
      cells[i] = i < #r and (cell .. string.rep(" ", widths[i] - #cell)) or cell
    end
    out((table.concat(cells, "  "):gsub("%s+$", "")) .. "\n")
  end
end

function cmd.logs(p)
  if p.opts.follow then unsupported("logs --follow") end
  if p.opts.boot then unsupported("logs --boot") end
  local id = p.pos["container-id"]
  local c = store:load(id) or not_found_get(id)
  local text = host.read_file(c.dir .. "/init.log") or ""
  local n = p.opts.n and tonumber(p.opts.n)
  if n then
    local lines = {}
    for line in text:gmatch("[^\n]*\n?") do if line ~= "" then lines[#lines + 1] = line end end
    text = table.concat(lines, "", math.max(1, #lines - n + 1))
  end
  out(text)
end

function cmd.system(p)
  local sub = p.rest[1]
  if sub == "start" or sub == "stop" then return end
  if sub == "status" then out("apiserver is running\n") return end
  if sub == "version" then out("container CLI version " .. version_string() .. " (build: release, commit: unspecified)\n") return end
  cli.usage_error(SPECS.system, "Unexpected argument '" .. sub .. "'")
end

-- Test teardown: kills every container of this state directory (and deletes them with --delete).
cmd["_reap-all"] = function(p)
  if not host.is_dir(store.containers) then return end
  for _, name in ipairs(host.list_dir(store.containers)) do
    local c = { id = name, dir = store:dir(name) }
    local st = store_mod.decode_state(host.read_file(c.dir .. "/state.json"))
    if runtime.alive(st) then runtime.kill_now(st) end
    if p.opts.delete then
      store:remove(c)
    else
      host.write_file(c.dir .. "/state.json", '{"status":"stopped"}')
    end
    out(name .. "\n")
  end
  for _, name in ipairs(host.list_dir(store.root)) do
    if name:match("^%.plan%.") then os.remove(store.root .. "/" .. name) end
  end
end

-- Argv log ------------------------------------------------------------------

-- One JSON line per call: the argv as received, and for --env the variable names
-- only: passed by name (value taken from the CLI's environment), missing from that
-- environment, or passed inline as KEY=VALUE (the value is never logged).
local function log_call(argv, command, parsed)
  local entry = { argv = json.array({}), command = command, pid = tonumber(os.getenv("SANDKIT_CONTAINER_PID") or ""),
    time = host.utc_now(), env_names = json.array(), env_unset = json.array(), env_inline = json.array() }
  for i, a in ipairs(argv) do entry.argv[i] = a end
  if parsed then
    for _, ev in ipairs(parsed.order) do
      if ev.key == "env" then
        local k = ev.value:match("^([^=]*)=")
        if k then
          entry.env_inline[#entry.env_inline + 1] = k
        else
          entry.env_names[#entry.env_names + 1] = ev.value
          if os.getenv(ev.value) == nil then entry.env_unset[#entry.env_unset + 1] = ev.value end
        end
      end
    end
  end
  host.append_file(STATE .. "/argv.log", json.encode(entry) .. "\n")
end

-- Faults --------------------------------------------------------------------

local function write_plan(kind, value)
  host.write_file(plan_path(), "# " .. kind .. " " .. tostring(value) .. "\n")
end

-- A careless CLI quoting its environment: {env:NAME:<encoding>} in a fault's
-- stderr becomes the value of NAME as this call received it, written raw,
-- JSON-escaped ("/" as "\/"), every character as \uXXXX, percent-encoded or
-- base64.
local function echo_encode(v, enc)
  if enc == "raw" then return v end
  if enc == "json_slash" then
    return (v:gsub('[\\"/]', function(c) return "\\" .. c end))
  end
  if enc == "json_u" then
    local out = {}
    for _, cp in utf8.codes(v) do out[#out + 1] = ("\\u%04X"):format(cp) end
    return table.concat(out)
  end
  if enc == "percent" then
    return (v:gsub("[^%w%-_.~]", function(c) return ("%%%02X"):format(c:byte()) end))
  end
  if enc == "base64" then
    local abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    local out = {}
    for i = 1, #v, 3 do
      local a, b, c = v:byte(i, i + 2)
      local n = (a << 16) | ((b or 0) << 8) | (c or 0)
      for k = 3, 0, -1 do
        local idx = (n >> (6 * k)) & 63
        out[#out + 1] = (k >= 2 or (k == 1 and b) or (k == 0 and c)) and abc:sub(idx + 1, idx + 1) or "="
      end
    end
    return table.concat(out)
  end
  error("unknown echo encoding " .. tostring(enc))
end

local function echo_env(s)
  return (s:gsub("{env:([%w_]+):([%w_]+)}", function(name, enc) return echo_encode(os.getenv(name) or "", enc) end))
end

-- true when the fault fully answered the call
local function apply_fault(command, argv)
  local resumed = os.getenv("SANDKIT_CONTAINER_RESUMED_FAULT")
  if resumed == "" then resumed = nil end
  local rule = faults.find(STATE, command, argv, resumed)
  if not rule then return false end
  if rule.hang then
    write_plan("hang", type(rule.hang) == "number" and rule.hang or 3600)
    return true
  end
  if rule.delay_ms and not resumed then
    write_plan("delay", string.format("%.3f %s", tonumber(rule.delay_ms) / 1000, rule._id))
    return true
  end
  if rule.stdout == nil and rule.stderr == nil and rule.exit == nil then return false end
  if rule.stdout then out(tostring(rule.stdout)) end
  if rule.stderr then
    local s = echo_env(tostring(rule.stderr))
    io.stderr:write(s:sub(-1) == "\n" and s or (s .. "\n"))
  end
  local code = tonumber(rule.exit) or (rule.stderr and 1 or 0)
  io.stdout:flush()
  os.exit(math.tointeger(code) or 1, true)
end

-- Main ----------------------------------------------------------------------

local HELP = [[
OVERVIEW: A container platform for macOS (emulated for Linux tests)

USAGE: container [--debug] <subcommand>

SUBCOMMANDS (emulated):
  run, exec, inspect, start, stop, delete (rm), list (ls), logs, system
  _reap-all    kill every container of $SANDKIT_CONTAINER_STATE (test teardown)
]]

local function main(argv)
  if not STATE or STATE == "" then
    fail(cz("interrupted", "XPC connection error: Connection invalid") ..
      "\nEnsure container system service has been started with `container system start`." ..
      "\n(emulator: SANDKIT_CONTAINER_STATE is not set)")
  end
  -- the launcher runs from "/", so every path it is given must be absolute
  if STATE:sub(1, 1) ~= "/" then STATE = (os.getenv("PWD") or ".") .. "/" .. STATE end
  if not host.is_dir(STATE) then host.mkdir_p(STATE, "700") end
  store = store_mod.new(STATE)
  if VERSION_ERROR then fail(VERSION_ERROR) end

  local i = 1
  while argv[i] == "--debug" do i = i + 1 end
  local sub = argv[i]
  if sub == "--version" then
    log_call(argv, "--version")
    out("container CLI version " .. version_string() .. " (build: release, commit: unspecified)\n")
    return 0
  end
  if sub == nil or sub == "--help" or sub == "-h" or sub == "help" then
    log_call(argv, sub or "")
    out(HELP)
    return 0
  end
  local name = ALIASES[sub] or sub
  local spec = SPECS[name]
  if not spec then
    log_call(argv, sub)
    if sub:sub(1, 1) == "-" then
      cli.usage_error({ usage = "container [--debug] <subcommand>" }, "Unknown option '" .. sub .. "'")
    end
    cli.usage_error({ usage = "container [--debug] <subcommand>" }, "Plugin 'container-" .. sub .. "' not found.")
  end
  local ok, parsed = pcall(cli.parse, spec, argv, i + 1)
  log_call(argv, name, ok and parsed or nil)
  if not ok then error(parsed, 0) end
  if apply_fault(name, argv) then return 0 end
  cmd[name](parsed)
  return 0
end

local args = {}
for i = 1, #arg do args[i] = arg[i] end
local ok, err = pcall(main, args)
io.stdout:flush()
if ok then os.exit(err or 0, true) end
if cli.is_usage_error(err) then
  io.stderr:write(cli.format_usage_error(err))
  os.exit(64, true)
end
if errors.is_cli_error(err) then
  io.stderr:write("Error: " .. err.message .. "\n")
  os.exit(err.code, true)
end
io.stderr:write("Error: emulator failure: " .. tostring(err) .. "\n")
os.exit(70, true)
