-- The value parsers of Apple's Parser.swift that `run` and `exec` need, with its
-- error wording: env (KEY=VALUE or KEY inherited from the CLI's environment),
-- env files, image references, memory sizes, capabilities, labels, published
-- ports and sockets, volumes, mounts, signals.

local json = require("swift_json")
local host = require("host")
local errors = require("errors")

local fail, cz = errors.fail, errors.cz

local M = {}

-- Where a named volume lives on the host; set by the caller.
M.volume_path = function(name) error("volume_path not set for " .. name) end

-- Apple's Parser.env: "KEY=VALUE" as is, bare "KEY" from the CLI's environment
-- (skipped when unset).
local function resolve_env(list, into)
  for _, e in ipairs(list or {}) do
    if e:find("=", 1, true) then
      into[#into + 1] = e
    else
      local v = os.getenv(e)
      if v then into[#into + 1] = e .. "=" .. v end
    end
  end
  return into
end

local function env_file_entries(paths, into)
  for _, path in ipairs(paths or {}) do
    local text = host.read_file(path)
    if not text then fail(cz("invalidArgument", "failed to read envfile at " .. path)) end
    for line in (text .. "\n"):gmatch("([^\n]*)\n") do
      local t = line:gsub("^%s+", "")
      if t ~= "" and t:sub(1, 1) ~= "#" then
        local k, v = t:match("^([^=]*)=(.*)$")
        if k then
          into[#into + 1] = k:gsub("^[ \t]+", "") .. "=" .. v
        else
          local name = t:gsub("%s+$", "")
          local hv = os.getenv(name)
          if hv then into[#into + 1] = name .. "=" .. hv end
        end
      end
    end
  end
  return into
end

-- Keeps the first position of each key and the last value, like a map merge.
local function dedupe_env(list)
  local pos, outl = {}, {}
  for _, kv in ipairs(list) do
    local k = kv:match("^([^=]*)") or kv
    if pos[k] then outl[pos[k]] = kv else outl[#outl + 1] = kv pos[k] = #outl end
  end
  return outl
end

local function dedupe(list)
  local seen, outl = {}, {}
  for _, v in ipairs(list or {}) do
    if not seen[v] then seen[v] = true outl[#outl + 1] = v end
  end
  return outl
end

local IMAGE_ENV = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" }

-- docker.io/library/name:latest style references.
local function normalize_ref(ref)
  local name, digest = ref:match("^([^@]+)@(.+)$")
  name = name or ref
  local tag
  local last = name:match("[^/]*$")
  if last:find(":", 1, true) then
    tag = last:match(":([^:]*)$")
    name = name:sub(1, #name - #tag - 1)
  end
  local first = name:match("^[^/]*")
  local domain, path
  if name:find("/", 1, true) and (first:find("[.:]") or first == "localhost") then
    domain, path = first, name:sub(#first + 2)
  else
    domain, path = "docker.io", name
    if not path:find("/", 1, true) then path = "library/" .. path end
  end
  if not tag and not digest then tag = "latest" end
  local full = domain .. "/" .. path .. (tag and (":" .. tag) or "") .. (digest and ("@" .. digest) or "")
  return full, domain, path, digest or tag
end

local function parse_memory(s)
  local t = s:gsub("^%s+", ""):gsub("%s+$", ""):lower()
  if t == "" then fail("invalid size") end
  local num, unit = t:match("^([%d%.]*)%s*(.-)$")
  local value = tonumber(num)
  if not value then fail("invalid size") end
  local sym = unit:sub(1, 1)
  if sym == "" then sym = "b" end
  local suffix = unit:sub(2)
  local mult = ({ b = 1, k = 1024, m = 1024 ^ 2, g = 1024 ^ 3, t = 1024 ^ 4, p = 1024 ^ 5 })[sym]
  if not (suffix == "" or suffix == "ib" or suffix == "b") or not mult then
    fail("invalid symbol: " .. unit)
  end
  local mib = math.floor(value * mult / (1024 * 1024))
  return math.tointeger(mib * 1024 * 1024)
end

local CAPS = {}
for _, c in ipairs({ "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID",
  "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
  "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
  "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE",
  "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
  "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE" }) do
  CAPS["CAP_" .. c] = true
end

local function capabilities(list)
  local outl = json.array()
  for _, cap in ipairs(list or {}) do
    local upper = cap:upper()
    if upper == "ALL" then
      outl[#outl + 1] = "ALL"
    else
      local norm = upper:sub(1, 4) == "CAP_" and upper or ("CAP_" .. upper)
      if not CAPS[norm] then fail("invalid CapabilityName '" .. upper .. "'") end
      outl[#outl + 1] = norm
    end
  end
  return outl
end

local function parse_labels(list)
  local labels = {}
  for _, l in ipairs(list or {}) do
    if l == "" then fail(cz("invalidArgument", "label cannot be an empty string")) end
    -- Swift's split(separator: "=", maxSplits: 2) omitting empty pieces:
    -- "a=b" is a pair, "a" or "a=" an empty value, "a=b=c" three pieces and refused.
    local parts, start = {}, 1
    for i = 1, #l do
      if #parts == 2 then break end
      if l:sub(i, i) == "=" then
        if i > start then parts[#parts + 1] = l:sub(start, i - 1) end
        start = i + 1
      end
    end
    if start <= #l then parts[#parts + 1] = l:sub(start) end
    if #parts == 1 then
      labels[parts[1]] = ""
    elseif #parts == 2 then
      labels[parts[1]] = parts[2]
    else
      fail(cz("invalidArgument", "invalid label format " .. l))
    end
  end
  return labels
end

-- The json array of parse_one(spec) for each value of a repeated flag.
local function each_spec(list, parse_one)
  local out = json.array()
  for _, spec in ipairs(list or {}) do out[#out + 1] = parse_one(spec) end
  return out
end

-- --publish [addr:]host[-range]:container[-range][/proto]
local function parse_port(spec)
  local body, proto = spec:match("^(.-)/(%a+)$")
  body, proto = body or spec, proto or "tcp"
  if proto ~= "tcp" and proto ~= "udp" then fail(cz("invalidArgument", "invalid publish protocol: " .. proto)) end
  local parts = {}
  for p in (body .. ":"):gmatch("([^:]*):") do parts[#parts + 1] = p end
  local addr, hp, cp
  if #parts == 2 then addr, hp, cp = "0.0.0.0", parts[1], parts[2]
  elseif #parts == 3 then addr, hp, cp = parts[1], parts[2], parts[3]
  else fail(cz("invalidArgument", "invalid publish value: " .. spec)) end
  local hlo, hhi = hp:match("^(%d+)%-?(%d*)$")
  local clo, chi = cp:match("^(%d+)%-?(%d*)$")
  if not hlo then fail(cz("invalidArgument", "invalid publish host port: " .. hp)) end
  if not clo then fail(cz("invalidArgument", "invalid publish container port: " .. cp)) end
  local count = (tonumber(hhi) or tonumber(hlo)) - tonumber(hlo) + 1
  local ccount = (tonumber(chi) or tonumber(clo)) - tonumber(clo) + 1
  if count ~= ccount then
    fail(cz("invalidArgument", "publish host and container port counts are not equal: " .. hp .. ":" .. cp))
  end
  return { hostAddress = addr, hostPort = tonumber(hlo), containerPort = tonumber(clo), proto = proto, count = count }
end

-- --publish-socket host_path:container_path
local function parse_socket(spec)
  local h, c = spec:match("^([^:]*):(.*)$")
  if not h then fail(cz("invalidArgument", "invalid publish-socket format " .. spec)) end
  if h == "" then fail(cz("invalidArgument", "host socket path cannot be empty")) end
  if c == "" then fail(cz("invalidArgument", "container socket path cannot be empty")) end
  return { hostPath = h, containerPath = c }
end

local function parse_publish(list) return each_spec(list, parse_port) end
local function parse_sockets(list) return each_spec(list, parse_socket) end

local function absolute(path)
  if path:sub(1, 1) == "/" then return path end
  local cwd = os.getenv("PWD") or "."
  return cwd .. "/" .. path
end

local function virtiofs(src, dst, options)
  return { type = { virtiofs = {} }, source = src, destination = dst, options = json.array(options or {}) }
end

local function volume_fs(name, dst, options)
  return { type = { volume = { name = name, format = "ext4", cache = { auto = {} }, sync = { full = {} } } },
    source = M.volume_path(name), destination = dst, options = json.array(options or {}) }
end

local VOLUME_NAME = "^[A-Za-z0-9][A-Za-z0-9_.%-]*$"

local function split_options(s)
  local o = {}
  for p in s:gmatch("[^,]+") do o[#o + 1] = p end
  return o
end

local function parse_volume(spec)
  local v = spec:gsub("^:+", "")
  local parts = {}
  for p in v:gmatch("[^:]+") do parts[#parts + 1] = p end
  if #parts == 1 then
    return volume_fs("anon-" .. host.uuid(), parts[1], {})
  elseif #parts == 2 or #parts == 3 then
    local src, dst = parts[1], parts[2]
    local opts = parts[3] and split_options(parts[3]) or {}
    if not (src:find("/", 1, true) or src == "." or src == "..") then
      if not src:match(VOLUME_NAME) then
        fail(cz("invalidArgument", "invalid volume name '" .. src .. "': must match " .. VOLUME_NAME))
      end
      return volume_fs(src, dst, opts)
    end
    local abs = absolute(src)
    if not host.exists(abs) and not host.is_dir(abs) then
      fail(cz("invalidArgument", "path '" .. src .. "' does not exist"))
    end
    return virtiofs(abs, dst, opts)
  end
  fail(cz("invalidArgument", "invalid volume format " .. spec))
end

local function parse_mount(spec)
  local d = { type = "virtiofs" }
  local parts = split_options(spec)
  if #parts == 0 then fail(cz("invalidArgument", "invalid mount format: " .. spec)) end
  for _, part in ipairs(parts) do
    local key, val = part:match("^([^=]*)=?(.*)$")
    local has_value = part:find("=", 1, true) ~= nil
    if key == "source" or key == "src" then key = "source"
    elseif key == "destination" or key == "dst" or key == "target" then key = "destination"
    elseif key == "readonly" or key == "ro" then key = "ro" has_value = true val = ""
    elseif key ~= "type" and key ~= "size" and key ~= "mode" then
      fail(cz("invalidArgument", "unknown directive " .. key .. " when parsing mount " .. spec))
    end
    if not has_value then
      fail(cz("invalidArgument", "invalid directive format missing value " .. part .. " in " .. spec))
    end
    d[key] = val
  end
  local t = d.type == "bind" and "virtiofs" or d.type
  local opts = {}
  if d.ro then opts[#opts + 1] = "ro" end
  if t == "tmpfs" then
    if d.source then fail(cz("invalidArgument", "cannot specify source for tmpfs mount")) end
    if d.size then opts[#opts + 1] = "size=" .. tostring(parse_memory(d.size)) end
    if d.mode then opts[#opts + 1] = "mode=" .. d.mode end
    return { type = { tmpfs = {} }, source = "", destination = d.destination or "", options = json.array(opts) }
  elseif t == "virtiofs" then
    if d.size then fail(cz("invalidArgument", "unsupported option size for " .. d.type .. " mount")) end
    if d.mode then fail(cz("invalidArgument", "unsupported option mode for " .. d.type .. " mount")) end
    local src = d.source or ""
    local abs = absolute(src)
    if not host.is_dir(abs) then
      if host.exists(abs) then fail(cz("invalidArgument", "path '" .. src .. "' is not a directory")) end
      fail(cz("invalidArgument", "path '" .. src .. "' does not exist"))
    end
    return virtiofs(abs, d.destination or "", opts)
  elseif t == "volume" then
    local name = d.source or ("anon-" .. host.uuid())
    if not name:match(VOLUME_NAME) then
      fail(cz("invalidArgument", "invalid volume name '" .. name .. "': must match " .. VOLUME_NAME))
    end
    return volume_fs(name, d.destination or "", opts)
  end
  fail(cz("invalidArgument", "unsupported mount type " .. tostring(d.type)))
end

local function check_destination(m)
  if m.destination == "" then
    fail(cz("invalidArgument", (m.type.volume and "volume" or "mount") .. " destination cannot be empty"))
  end
end

local SIGNALS = { HUP = 1, INT = 2, QUIT = 3, KILL = 9, USR1 = 10, USR2 = 12, TERM = 15 }

local function parse_signal(s)
  if not s then return "TERM" end
  local n = tonumber(s)
  if n then
    for name, num in pairs(SIGNALS) do if num == n then return name end end
  else
    local name = s:upper():gsub("^SIG", "")
    if SIGNALS[name] then return name end
  end
  fail(cz("invalidArgument", "invalid signal " .. s))
end


M.IMAGE_ENV = IMAGE_ENV
M.resolve_env = resolve_env
M.env_file_entries = env_file_entries
M.dedupe_env = dedupe_env
M.dedupe = dedupe
M.normalize_ref = normalize_ref
M.parse_memory = parse_memory
M.capabilities = capabilities
M.parse_labels = parse_labels
M.parse_publish = parse_publish
M.parse_sockets = parse_sockets
M.parse_volume = parse_volume
M.parse_mount = parse_mount
M.check_destination = check_destination
M.parse_signal = parse_signal

return M
