--- Option validation against provider descriptors. Misuse raises a
-- ConfigError that names the key and the provider; values of `env` never
-- appear in a message.
local errors = require "sandkit.errors"

local M = {}

-- A hook's type as the LuaLS stub gives it (docs/sandkit.meta.lua).
local HOOK = "fun(ctx: { sandbox: sandkit.Sandbox })"

--- Options every provider accepts (README.md §"Sandbox": id, env, instructions, hooks).
-- An option's spec: type ("string", "integer", "number", "boolean",
-- "array", "map", "env", "function", or a list of them), default,
-- description, and as needed enum, min, ms (whole milliseconds), zero
-- (what 0 means), non_empty, items / values (of an array / map), check
-- (function(v) -> problem or nil), env (the variable read when the option
-- is absent: documentation), secret (never on a command line: the CLI
-- refuses it), flag (a `sandkit exec` flag setting it: { name, arg, help,
-- host_dir }), lua_type (the stub's annotation, when the type says too
-- little).
M.common = {
  id = { type = "string", description = "Sandbox id; a fresh one is generated when absent." },
  env = { type = "env", lua_type = "table<string, string|number|boolean>",
    description = "Environment variables for every command (names to string values)." },
  instructions = { type = { "string", "function" },
    lua_type = "string|fun(ctx: { default_instructions: string, request_context: any, sandbox: sandkit.Sandbox }): string",
    description = "Text describing the sandbox to an agent, or function({ default_instructions, request_context, sandbox }) returning it." },
  on_start = { type = "function", lua_type = HOOK, description = "Hook called with { sandbox } after each start; an error fails the start." },
  on_stop = { type = "function", lua_type = HOOK, description = "Hook called with { sandbox } before stop." },
  on_destroy = { type = "function", lua_type = HOOK, description = "Hook called with { sandbox } before destroy." },
  max_output_bytes = { type = "integer", min = 1, default = 64 * 1024 * 1024,
    description = "Default for exec's max_output_bytes: bytes of stdout and of stderr kept in a result; past it "
      .. "the command keeps running, its output is drained, the result has truncated = true." },
}

--- What a provider can do, as the cross-provider conformance suite asks
-- (upstream's supports* flags, spec/conformance/suite.lua): a descriptor's
-- `capabilities` names only where it differs from these.
M.capabilities = {
  reconnection = true, concurrency = true, env_vars = true, working_directory = true,
  timeout = true, streaming = true, stdin = true, close_stdin = true, mounting = false,
}

--- Checks an exec option `max_output_bytes`; returns an error message or nil.
function M.check_max_output(v)
  if math.type(v) ~= "integer" and not (type(v) == "number" and v == math.floor(v) and math.abs(v) < 2^53) then
    return "must be a whole number of bytes"
  end
  if v < 1 then return "must be at least 1 (use capture = false to keep nothing)" end
  return nil
end

--- A user-supplied value as messages show it: at most 64 bytes, so a huge
-- key or value is not echoed back whole (env values are never shown).
function M.shown(v)
  v = tostring(v)
  if #v > 64 then return v:sub(1, 61) .. "..." end
  return v
end

local function type_name(t)
  return type(t) == "table" and table.concat(t, " or ") or t
end

local function fail(desc, key, message)
  errors.misuse(errors.new("ConfigError", ("%s option '%s' %s"):format(desc.name, key, message),
    { provider = desc.id, key = key }))
end

--- Checks an env table; `what` names it in messages ("env", "exec option 'env'").
function M.check_env(env, on_error)
  for k, v in pairs(env) do
    if type(k) ~= "string" then
      on_error(("has a non-string key (%s)"):format(type(k)))
    elseif k == "" then
      on_error("has an empty variable name")
    elseif k:find("=", 1, true) then
      on_error(("variable name '%s' contains '='"):format(M.shown(k)))
    elseif k:find("\0", 1, true) then
      on_error("has a variable name containing a NUL byte")
    elseif type(v) ~= "string" and type(v) ~= "number" and type(v) ~= "boolean" then
      on_error(("variable '%s' must be a string, got %s"):format(M.shown(k), type(v)))
    elseif type(v) == "string" and v:find("\0", 1, true) then
      on_error(("variable '%s' contains a NUL byte"):format(M.shown(k)))
    end
  end
end

--- A copy of env with every value as a string.
function M.normalize_env(env)
  local out = {}
  for k, v in pairs(env) do out[k] = tostring(v) end
  return out
end

--- Checks a milliseconds value (timeouts, delays): a whole, finite number
-- >= min (default 0). Returns a message naming the unit, or nil. `zero`
-- says what 0 means, when it is allowed.
function M.ms_problem(v, min, zero)
  min = min or 0
  if type(v) ~= "number" then return ("must be a whole number of milliseconds, got %s"):format(type(v)) end
  if v ~= v or v % 1 ~= 0 or v < min or v >= 2^53 then
    return ("must be a whole number of milliseconds >= %d%s, got %s"):format(min,
      (min == 0 and zero) and (" (0: " .. zero .. ")") or "", M.shown(v))
  end
end

local function check_value(desc, key, spec, v)
  if spec.ms then
    local msg = M.ms_problem(v, spec.min, spec.zero)
    if msg then fail(desc, key, msg) end
    v = math.tointeger(v)
    msg = spec.check and spec.check(v)
    if msg then fail(desc, key, msg) end
    return v
  end
  local t = spec.type
  local types = type(t) == "table" and t or { t }
  local matched
  for _, name in ipairs(types) do
    if name == "integer" and math.type(v) == "integer" then matched = name
    elseif name == "integer" and type(v) == "number" and v == math.floor(v) and v == v and math.abs(v) < 2^53 then matched = name
    elseif (name == "env" or name == "map" or name == "array") and type(v) == "table" then matched = name
    elseif name == type(v) then matched = name end
    if matched then break end
  end
  if not matched then
    local shown = ({ env = "table", map = "table", array = "table" })[type_name(t)] or type_name(t)
    fail(desc, key, ("must be a %s, got %s"):format(shown, type(v)))
  end
  if matched == "string" then
    if v:find("\0", 1, true) then fail(desc, key, "contains a NUL byte") end
    if spec.enum then
      local ok = false
      for _, e in ipairs(spec.enum) do ok = ok or e == v end
      if not ok then
        fail(desc, key, ('must be one of "%s" (got "%s")'):format(table.concat(spec.enum, '", "'), M.shown(v)))
      end
    end
    if spec.non_empty and v == "" then fail(desc, key, "must not be empty") end
  elseif matched == "number" or matched == "integer" then
    if v ~= v or v == math.huge or v == -math.huge then fail(desc, key, "must be a finite number") end
    if spec.min and v < spec.min then fail(desc, key, ("must be at least %s"):format(spec.min)) end
  elseif matched == "env" then
    M.check_env(v, function(msg) fail(desc, key, msg) end)
    return M.normalize_env(v)
  elseif matched == "array" then
    local n = #v
    for k in pairs(v) do
      if math.type(k) ~= "integer" or k < 1 or k > n then fail(desc, key, "must be an array") end
    end
    for i = 1, n do
      local item = v[i]
      local item_type = spec.items or "string"
      local ms_msg = spec.items == "ms" and M.ms_problem(item)
      if ms_msg then fail(desc, key, ("[%d] %s"):format(i, ms_msg)) end
      if spec.items == "ms" then item_type = "number" end
      if type(item) ~= item_type then
        fail(desc, key, ("[%d] must be a %s, got %s"):format(i, item_type, type(item)))
      end
      if item_type == "string" and item:find("\0", 1, true) then
        fail(desc, key, ("[%d] contains a NUL byte"):format(i))
      end
    end
  elseif matched == "map" then
    for k2, v2 in pairs(v) do
      if type(k2) ~= "string" or type(v2) ~= (spec.values or "string") then
        fail(desc, key, ("must map strings to %ss"):format(spec.values or "string"))
      end
      if k2:find("\0", 1, true) or (type(v2) == "string" and v2:find("\0", 1, true)) then
        fail(desc, key, "contains a NUL byte")
      end
    end
  end
  if spec.check then
    local msg = spec.check(v)
    if msg then fail(desc, key, msg) end
  end
  return v
end

--- Validates opts against desc.options; returns a new table with defaults
-- left absent (providers apply them) and env normalised.
function M.validate(desc, opts)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then
    errors.misuse(("bad argument #1 to '%s' (table expected, got %s)"):format(desc.name, type(opts)))
  end
  local out = {}
  for k, v in pairs(opts) do
    if type(k) ~= "string" then
      errors.misuse(errors.new("ConfigError", ("%s options must have string keys (got %s)"):format(desc.name, type(k)),
        { provider = desc.id }))
    end
    local spec = desc.options[k]
    if not spec then
      errors.misuse(errors.new("ConfigError", ("Unknown option '%s' for %s"):format(M.shown(k), desc.name),
        { provider = desc.id, key = k }))
    end
    out[k] = check_value(desc, k, spec, v)
  end
  if desc.validate then desc.validate(out, function(key, msg) fail(desc, key, msg) end) end
  return out
end

--- A descriptor's options merged with the common ones.
function M.with_common(specific)
  local all = {}
  for k, v in pairs(M.common) do all[k] = v end
  for k, v in pairs(specific) do all[k] = v end
  return all
end

return M
