--- Options tables: their schemas and the one check every options table of
-- sandkit goes through (provider constructors, exec and spawn, fleets,
-- sandkit.all, files). A schema names each key with its type, unit,
-- default and meaning; check() refuses an unknown key (naming the closest
-- one) or a bad value with a ConfigError raised at the caller's line, and
-- returns a checked copy. Values of `env` never appear in a message.
local compat = require "sandkit.compat"
local errors = require "sandkit.errors"

local M = {}

-- A hook's type as the LuaLS stub gives it (docs/sandkit.meta.lua).
local HOOK = "fun(ctx: { sandbox: sandkit.Sandbox })"

--- A user-supplied value as messages show it: at most 64 bytes, so a huge
-- key or value is not echoed back whole (env values are never shown).
function M.shown(v)
  v = tostring(v)
  if #v > 64 then return v:sub(1, 61) .. "..." end
  return v
end

--- A default as the reader would write it in Lua: tostring, an array as
-- { "sleep", "infinity" } (the CLI's `providers ID`, the stub, docs/providers.md).
function M.render_default(v)
  if type(v) ~= "table" then return tostring(v) end
  local items = {}
  for i, item in ipairs(v) do items[i] = type(item) == "string" and ("%q"):format(item) or tostring(item) end
  return #items == 0 and "{}" or "{ " .. table.concat(items, ", ") .. " }"
end

--- A schema from an ordered list of { name, type = ..., description = ...,
-- ... } (the order is the documentation's); `extra` fields are kept
-- (provider, validate, positional_hint).
function M.schema(name, list, extra)
  local s = { name = name, options = {}, order = {} }
  for k, v in pairs(extra or {}) do s[k] = v end
  for i, spec in ipairs(list) do
    local copy = {}
    for k, v in pairs(spec) do if k ~= 1 then copy[k] = v end end
    s.options[spec[1]] = copy
    s.order[i] = spec[1]
  end
  return s
end

-- ---- the options themselves ------------------------------------------------

--- Options every provider accepts (docs/sandbox.md §"Options common to every provider": id, env, instructions, hooks).
-- An option's spec: type ("string", "integer", "number", "boolean",
-- "array", "map", "env", "function", or a list of them), default,
-- description, and as needed enum, min, ms (whole milliseconds), zero
-- (what 0 means), non_empty, items / values (of an array / map), check
-- (function(v) -> problem or nil), env (the variable read when the option
-- is absent: documentation), secret (never on a command line: the CLI
-- refuses it), flag (a `sandkit exec` flag setting it: { name, arg, help,
-- host_dir }), lua_type (the stub's annotation, when the type says too
-- little), fill (check() sets the default when the option is absent).
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
  max_output_bytes = { type = "integer", min = 1, default = 64 * 1024 * 1024, unit = "bytes",
    description = "exec's max_output_bytes for commands that give none: bytes of stdout and of stderr kept in a result; past it "
      .. "the command keeps running, its output is drained, the result has truncated = true." },
}

--- What a provider can do, as the cross-provider conformance suite asks
-- (upstream's supports* flags, spec/conformance/suite.lua): a descriptor's
-- `capabilities` names only where it differs from these.
M.capabilities = {
  reconnection = true, concurrency = true, env_vars = true, working_directory = true,
  timeout = true, streaming = true, stdin = true, close_stdin = true, mounting = false,
}

--- A provider's `timeout` option: the timeout of each command that gives
-- none, in whole milliseconds, 0 for none. With a default, check() fills
-- it in, so that every command has one unless the caller gives 0.
function M.command_timeout(description, default)
  return { type = "integer", ms = true, zero = "no timeout", default = default, fill = default ~= nil,
    description = description }
end

--- Checks an exec option `max_output_bytes`; returns an error message or nil.
function M.check_max_output(v)
  if not compat.is_whole(v) then
    return "must be a whole number of bytes"
  end
  if v < 1 then return "must be at least 1 (use capture = false to keep nothing)" end
  return nil
end

--- The options of sb:exec, sb:exec_async, sb.processes:spawn and
-- fleet:exec, stated once: the check, docs/sandbox.md's table and the LuaLS stub
-- (sandkit.CommandOptions) come from here (make generated; spec/generated_spec.lua).
local EXEC = {
  { "timeout", type = "integer", ms = true, zero = "no timeout", unit = "ms",
    description = "whole milliseconds; default the sandbox's `timeout` option; `0`: none" },
  { "cwd", type = "string", description = "working directory of the command" },
  { "env", type = "env", description = "variables merged over the sandbox's `env`" },
  { "on_stdout", type = "function", lua_type = "fun(chunk: string)",
    description = "called with stdout as it arrives, in chunks that may split lines anywhere" },
  { "on_stderr", type = "function", lua_type = "fun(chunk: string)",
    description = "the same for stderr" },
  { "on_stdout_line", type = "function", lua_type = "fun(line: string)",
    description = "called with each whole line of stdout, without its `\\n`; the last line comes at exit even "
      .. "without a newline; a line longer than 1 MiB arrives in 1 MiB pieces. May be combined with the chunk "
      .. "callbacks" },
  { "on_stderr_line", type = "function", lua_type = "fun(line: string)",
    description = "the same for stderr" },
  { "stdin", type = "string", nul_ok = true,
    description = "a string written, then stdin is closed (without it stdin is empty); `processes:spawn` writes it "
      .. "first and keeps stdin open (`h:send_stdin`, `h:close_stdin`)" },
  { "capture", type = { "boolean", "string" }, enum = { "buffer" }, expect = 'a boolean or "buffer"', default = true,
    description = "default true; false keeps output out of the result (for streaming large output); `\"buffer\"` "
      .. "returns `stdout`/`stderr` as `sandkit.Buffer` objects that hold the captured bytes without copying them "
      .. "into Lua strings: `#buf`, `buf:sub(i, j)`, `buf:byte(i, j)`, `buf:find(text, init, plain)` (plain text), "
      .. "`tostring(buf)`, `buf:write_to(file)`, `buf:close()`; every provider; [docs/capture.md](docs/capture.md)" },
  { "max_output_bytes", type = "integer", expect = "a whole number of bytes", check = M.check_max_output,
    unit = "bytes",
    description = "whole number >= 1; default the sandbox's option, 64 MiB: the bytes of stdout, and separately "
      .. "of stderr, kept in the result (below)" },
}
local POSITIONAL = { positional_hint = "arguments go in their own table, before the options" }
M.exec = M.schema("exec", EXEC, POSITIONAL)

local CONCURRENCY = { "concurrency", type = "integer", min = 1, expect = "a positive integer",
  description = "at most this many at once (default: all)" }
local ON_PROGRESS = { "on_progress", type = "function", expect = "a function(done, total)",
  description = "called with (done, total) after each item" }

--- fleet:exec: the exec options plus on_progress.
M.fleet_exec = M.schema("exec", { ON_PROGRESS, compat.unpack(EXEC) }, POSITIONAL)
--- sandkit.all(items, opts), fleet:map(fn, opts), sandkit.fleet(template, n, opts).
M.all = M.schema("all", { CONCURRENCY, ON_PROGRESS })
M.map = M.schema("map", { CONCURRENCY, ON_PROGRESS })
M.fleet = M.schema("fleet", { CONCURRENCY,
  { "overrides", type = "function", expect = "a function(i) returning clone overrides",
    description = "overrides(i) returns per-clone options, merged over the template's" },
  ON_PROGRESS })

-- ---- value checks ------------------------------------------------------------

--- Checks an env table; on_error(problem) is called for the first problem.
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

-- ---- "did you mean" -----------------------------------------------------------

-- Names one provider or call uses where another uses the other: a key of a
-- group that the schema lacks suggests the first of the group it has.
local SYNONYMS = {
  { "working_directory", "workdir", "working_dir", "cwd" },
  { "image", "base_image" },
  { "stdin", "input" },
  { "env", "environment", "environment_variables" },
}

-- Optimal string alignment distance (Levenshtein plus adjacent swaps).
local function distance(a, b)
  local prev2, prev, cur = nil, {}, nil
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    cur = { [0] = i }
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      local d = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      if prev2 and i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        d = math.min(d, prev2[j - 2] + 1)
      end
      cur[j] = d
    end
    prev2, prev = prev, cur
  end
  return prev[#b]
end

--- The option of `names` (a set) that `key` most likely meant, or nil: its
-- snake_case spelling (upstream's camelCase names), a known synonym, or
-- the closest name by edit distance.
function M.suggest(key, names)
  if type(key) ~= "string" or #key > 64 then return nil end
  local snake = key:gsub("(%l)(%u)", "%1_%2"):lower()
  if names[snake] then return snake end
  for _, group in ipairs(SYNONYMS) do
    for _, member in ipairs(group) do
      if member == snake then
        for _, other in ipairs(group) do
          if names[other] then return other end
        end
      end
    end
  end
  local best, best_d
  for name in pairs(names) do
    local d = distance(snake, name)
    if d < (best_d or math.huge) or (d == best_d and name < best) then best, best_d = name, d end
  end
  if best and best_d <= math.max(1, math.floor(#snake / 3)) then return best end
  return nil
end

-- ---- the check ------------------------------------------------------------------

local function type_name(t)
  return type(t) == "table" and table.concat(t, " or ") or t
end

local function check_value(fail, spec, v)
  if spec.type == nil and not spec.ms then return v end -- any value
  if spec.ms then
    local msg = M.ms_problem(v, spec.min, spec.zero)
    if msg then fail(msg) end
    v = compat.tointeger(v)
    msg = spec.check and spec.check(v)
    if msg then fail(msg) end
    return v
  end
  local t = spec.type
  local types = type(t) == "table" and t or { t }
  local matched
  for _, name in ipairs(types) do
    if name == "integer" and compat.is_whole(v) then matched = name
    elseif (name == "env" or name == "map" or name == "array") and type(v) == "table" then matched = name
    elseif name == type(v) then matched = name end
    if matched then break end
  end
  local function wrong()
    if spec.expect then
      local got = type(v) == "string" and ("%q"):format(M.shown(v)) or type(v) == "number" and M.shown(v) or type(v)
      fail(("must be %s, got %s"):format(spec.expect, got))
    end
    local shown = ({ env = "table", map = "table", array = "table" })[type_name(t)] or type_name(t)
    fail(("must be %s %s, got %s"):format(shown:match("^[aeiou]") and "an" or "a", shown, type(v)))
  end
  if not matched then wrong() end
  if matched == "string" then
    if not spec.nul_ok and v:find("\0", 1, true) then fail("contains a NUL byte") end
    if spec.enum then
      local ok = false
      for _, e in ipairs(spec.enum) do ok = ok or e == v end
      if not ok and spec.expect then wrong() end
      if not ok then
        fail(('must be one of "%s" (got "%s")'):format(table.concat(spec.enum, '", "'), M.shown(v)))
      end
    end
    if spec.non_empty and v == "" then fail("must not be empty") end
  elseif matched == "number" or matched == "integer" then
    if v ~= v or v == math.huge or v == -math.huge then fail("must be a finite number") end
    if spec.min and v < spec.min then
      if spec.expect then wrong() end
      fail(("must be at least %s"):format(spec.min))
    end
  elseif matched == "env" then
    M.check_env(v, fail)
    return M.normalize_env(v)
  elseif matched == "array" then
    local n = #v
    for k in pairs(v) do
      if not compat.is_whole(k) or k < 1 or k > n then fail("must be an array") end
    end
    for i = 1, n do
      local item = v[i]
      local item_type = spec.items or "string"
      local ms_msg = spec.items == "ms" and M.ms_problem(item)
      if ms_msg then fail(("[%d] %s"):format(i, ms_msg)) end
      if spec.items == "ms" then item_type = "number" end
      if type(item) ~= item_type then
        fail(("[%d] must be a %s, got %s"):format(i, item_type, type(item)))
      end
      if item_type == "string" and item:find("\0", 1, true) then
        fail(("[%d] contains a NUL byte"):format(i))
      end
    end
  elseif matched == "map" then
    for k2, v2 in pairs(v) do
      if type(k2) ~= "string" or type(v2) ~= (spec.values or "string") then
        fail(("must map strings to %ss"):format(spec.values or "string"))
      end
      if k2:find("\0", 1, true) or (type(v2) == "string" and v2:find("\0", 1, true)) then
        fail("contains a NUL byte")
      end
    end
  end
  if spec.check then
    local msg = spec.check(v)
    if msg then fail(msg) end
  end
  return v
end

-- What check() returns for absent options: shared, so read only.
local NO_OPTS = setmetatable({}, { __newindex = function() error("checked options are read only", 2) end })

--- Checks opts against schema; returns a new table (defaults left absent:
-- their users apply them; env normalised). `opts` may be nil. `argn` and
-- `fname` name the argument in messages (fname defaults to schema.name).
-- Misuse raises: an opts that is not a table an ArgumentError, anything
-- in it a ConfigError { key, provider? } at the caller's line.
function M.check(schema, opts, argn, fname)
  fname = fname or schema.name
  if opts == nil then return NO_OPTS end
  if type(opts) ~= "table" then
    errors.argument(argn or 1, fname, "options table expected, got " .. type(opts))
  end
  local provider = schema.provider
  local out = {}
  for k, v in pairs(opts) do
    if type(k) ~= "string" then
      errors.config(provider, nil, ("%s options must have string keys (got %s%s)"):format(fname, type(k),
        schema.positional_hint and ("; " .. schema.positional_hint) or ""))
    end
    local spec = schema.options[k]
    if not spec then
      local hint = M.suggest(k, schema.options)
      errors.config(provider, k, ("Unknown option '%s' for %s%s"):format(M.shown(k), fname,
        hint and (" (did you mean '" .. hint .. "'?)") or ""))
    end
    out[k] = check_value(function(problem)
      errors.config(provider, k, ("%s option '%s' %s"):format(fname, k, problem))
    end, spec, v)
  end
  for k, spec in pairs(schema.options) do
    if spec.fill and out[k] == nil then out[k] = spec.default end
  end
  if schema.validate then
    schema.validate(out, function(key, problem)
      errors.config(provider, key, ("%s option '%s' %s"):format(fname, key, problem))
    end)
  end
  return out
end

--- Validates a provider's constructor options (desc: a provider
-- descriptor: id, name, options, validate).
function M.validate(desc, opts)
  return M.check({ name = desc.name, options = desc.options, provider = desc.id, validate = desc.validate },
    opts == nil and {} or opts, 1)
end

--- A descriptor's options merged with the common ones.
function M.with_common(specific)
  local all = {}
  for k, v in pairs(M.common) do all[k] = v end
  for k, v in pairs(specific) do all[k] = v end
  return all
end

return M
