--- `sandkit cp SRC DST`: copies one file between the local machine and a
-- sandbox's filesystem (sb.fs). A side is `local:PATH` (or a plain path) on
-- this machine, or `PROVIDER:PATH` in a sandbox of that provider, made from
-- the --opt KEY=VALUE options (e.g. --opt sandbox_id=... reattaches to a
-- Platform sandbox). Data streams in chunks both ways; on a terminal a
-- progress line shows for files of 8 MiB and more. The sandbox is started
-- (or reattached) and left as it is.
local sandkit = require "sandkit"
local compat = require "sandkit.compat"
local registry = require "sandkit.registry"

local M = {}

local CHUNK = 1024 * 1024
local PROGRESS_MIN = 8 * 1024 * 1024

local function usage_error(msg) error({ usage = msg }, 0) end

-- A sandbox side names its provider; "local:" is this machine, not a
-- LocalSandbox. Secrets (options the descriptor marks secret) never travel
-- on a command line: they come from the variable the descriptor names.
local PROVIDERS, SECRETS, ANY_SECRET, PREFIXES = {}, {}, {}, { "local:" }
for _, d in ipairs(registry.descriptors()) do
  if d.id ~= "local" then
    PROVIDERS[d.id] = true
    PREFIXES[#PREFIXES + 1] = d.id .. ":"
    SECRETS[d.id] = {}
    for key, spec in pairs(d.options) do
      if spec.secret and spec.env then
        SECRETS[d.id][key] = spec.env
        ANY_SECRET[key] = ANY_SECRET[key] or spec.env
      end
    end
  end
end
local EXPECTED = table.concat(PREFIXES, ", ", 1, #PREFIXES - 1) .. " or " .. PREFIXES[#PREFIXES]

-- "platform:/x" -> { provider = "platform", path = "/x" }; host paths -> { path }.
local function side(s, which)
  if s == nil or s == "" then usage_error("cp expects SRC and DST") end
  if s:find("\0", 1, true) then usage_error(which .. " contains a NUL byte") end
  local prefix, rest = s:match("^([%w%-]+):(.*)$")
  if prefix == "local" then return { path = rest } end
  if prefix and PROVIDERS[prefix] then
    if rest == "" then usage_error(which .. " names no path after '" .. prefix .. ":'") end
    return { provider = prefix, path = rest }
  end
  if prefix and prefix ~= "" and #prefix > 1 then
    usage_error(("%s: unknown prefix '%s:' (expected %s)"):format(which, prefix, EXPECTED))
  end
  return { path = s }
end

local function option_value(v)
  if v == "true" then return true end
  if v == "false" then return false end
  return compat.tointeger(tonumber(v)) or v
end

--- Parses argv after "cp": { src, dst, opts }.
function M.parse(argv)
  local o = { opts = {}, positional = {} }
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--opt" then
      local kv = argv[i + 1]
      local k, v = (kv or ""):match("^([%w_]+)=(.*)$")
      if not k then usage_error("--opt expects KEY=VALUE") end
      o.opts[k] = option_value(v)
      i = i + 2
    elseif a == "--" then
      for j = i + 1, #argv do o.positional[#o.positional + 1] = argv[j] end
      break
    elseif a:sub(1, 2) == "--" then
      usage_error(("unknown flag '%s' for cp"):format(a))
    else
      o.positional[#o.positional + 1] = a
      i = i + 1
    end
  end
  if #o.positional ~= 2 then usage_error("cp expects exactly SRC and DST") end
  o.src, o.dst = side(o.positional[1], "SRC"), side(o.positional[2], "DST")
  if (o.src.provider == nil) == (o.dst.provider == nil) then
    usage_error("cp copies between this machine (local:PATH) and a sandbox (PROVIDER:PATH)")
  end
  for k in pairs(o.opts) do
    local env = SECRETS[o.src.provider or o.dst.provider][k] or ANY_SECRET[k]
    if env then usage_error(("--opt %s: secrets stay off the command line; set %s instead"):format(k, env)) end
  end
  return o
end

local function mib(n) return ("%.1f MiB"):format(n / 1048576) end

-- DST itself, or SRC's file name inside DST when DST ends with "/".
local function destination(o)
  local dst = o.dst.path
  if dst:sub(-1) == "/" then dst = dst .. o.src.path:match("([^/]*)$") end
  return dst
end

--- Runs the copy; returns the exit status.
function M.run(o, env, exits)
  local errout = env.stderr
  local provider = o.src.provider or o.dst.provider
  -- through env.getenv (tests inject it); the providers read the same variables
  for key, var in pairs(SECRETS[provider]) do o.opts[key] = env.getenv(var) end
  local ok, sb = pcall(sandkit.new, provider, o.opts)
  if not ok then
    errout:write("sandkit: ", tostring(sb), "\n")
    return exits.usage
  end
  local started, err = sb:start()
  if not started then
    errout:write("sandkit: ", tostring(err), "\n")
    return exits.failure
  end
  local total, done = 0, 0
  local show = env.isatty()
  local function progress(final)
    if not show or total < PROGRESS_MIN then return end
    errout:write(("\rcopied %s of %s (%d%%)%s"):format(mib(done), mib(total),
      total > 0 and math.floor(done * 100 / total) or 100, final and "\n" or ""))
    errout:flush()
  end
  local result
  if o.dst.provider then
    local f, ferr = io.open(o.src.path, "rb")
    if not f then
      errout:write("sandkit: cannot read ", o.src.path, ": ", tostring(ferr), "\n")
      return exits.failure
    end
    total = f:seek("end") or 0
    f:seek("set")
    local dst = destination(o)
    result, err = sb.fs:write_file(dst, function()
      local chunk = f:read(CHUNK)
      if chunk then
        done = done + #chunk
        progress(false)
      end
      return chunk
    end)
    f:close()
  else
    local st, serr = sb.fs:stat(o.src.path)
    if not st then
      errout:write("sandkit: ", tostring(serr), "\n")
      return exits.failure
    end
    total = st.size
    local dst = destination(o)
    local f, ferr = io.open(dst, "wb")
    if not f then
      errout:write("sandkit: cannot write ", dst, ": ", tostring(ferr), "\n")
      return exits.failure
    end
    result, err = sb.fs:read_file(o.src.path, { on_chunk = function(chunk)
      assert(f:write(chunk))
      done = done + #chunk
      progress(false)
    end })
    if not f:close() and result then result, err = nil, "cannot finish writing " .. dst end
  end
  if not result then
    if show and total >= PROGRESS_MIN then errout:write("\n") end
    errout:write("sandkit: ", tostring(err), "\n")
    return exits.failure
  end
  progress(true)
  return 0
end

return M
