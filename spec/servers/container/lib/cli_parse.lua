-- Command-line parsing with swift-argument-parser's rules and wording, as used by
-- Apple's CLI: long options as "--name value" or "--name=value", short flags that
-- may be grouped ("-di"), a short option taking the next word, "--" ending
-- options, and "captureForPassthrough" arguments: everything after the image (run)
-- or the container id (exec) belongs to the process, even words starting with "-".
--
-- A command spec:
--   { name, usage, options = { { "-e", "--env", key = "env", value = "env", multi = true }, ... },
--     positionals = { "image" },      -- leading positionals, in order
--     passthrough = "arguments",      -- then every remaining word (optional)
--     passthrough_required = bool,    -- at least one passthrough word
--     rest = "container-ids",         -- or: any number of positionals, options interleaved
--     rest_required = bool }
-- parse() returns { opts = { key = value | list | true }, pos = { name = value },
-- rest = { ... }, passthrough = { ... } } or raises a usage error (see usage_error).

local M = {}

local UsageError = { __name = "cli_parse.UsageError" }
M.UsageError = UsageError

function M.usage_error(spec, message)
  error(setmetatable({ message = message, usage = spec and spec.usage, command = spec and spec.name },
    UsageError), 0)
end

function M.is_usage_error(e)
  return getmetatable(e) == UsageError
end

-- "Error: <message>\nUsage: …\n  See '… --help' for more information." (exit 64)
function M.format_usage_error(e)
  local out = { "Error: " .. e.message }
  if e.usage then
    out[#out + 1] = "Usage: " .. e.usage
    local cmd = e.command and ("container " .. e.command) or "container"
    out[#out + 1] = "  See '" .. cmd .. " --help' for more information."
  end
  return table.concat(out, "\n") .. "\n"
end

local function index_options(spec)
  if spec._index then return spec._index end
  local idx = {}
  for _, o in ipairs(spec.options) do
    for _, n in ipairs(o) do idx[n] = o end
  end
  spec._index = idx
  return idx
end

-- The name argument-parser shows in messages: the long name when there is one.
local function display_name(o)
  local best = o[1]
  for _, n in ipairs(o) do
    if n:sub(1, 2) == "--" then best = n break end
  end
  if o.value then return best .. " <" .. o.value .. ">" end
  return best
end

local function store(result, o, v)
  if o.multi then
    local list = result.opts[o.key]
    if not list then list = {} result.opts[o.key] = list end
    list[#list + 1] = v
  else
    result.opts[o.key] = v
  end
  result.order[#result.order + 1] = { key = o.key, value = v }
end

function M.parse(spec, args, first)
  local idx = index_options(spec)
  local result = { opts = {}, pos = {}, rest = {}, passthrough = {}, order = {} }
  local npos = spec.positionals and #spec.positionals or 0
  local seen_pos = 0
  local i = first or 1
  local only_positionals = false

  local function positional(word)
    if seen_pos < npos then
      seen_pos = seen_pos + 1
      result.pos[spec.positionals[seen_pos]] = word
      return seen_pos == npos and spec.passthrough ~= nil
    elseif spec.rest then
      result.rest[#result.rest + 1] = word
      return false
    end
    M.usage_error(spec, "Unexpected argument '" .. word .. "'")
  end

  local function take_value(o, name)
    i = i + 1
    local v = args[i]
    if v == nil then M.usage_error(spec, "Missing value for '" .. display_name(o) .. "'") end
    return v
  end

  while i <= #args do
    local a = args[i]
    if only_positionals then
      if positional(a) then i = i + 1 break end
    elseif a == "--" then
      only_positionals = true
    elseif a:sub(1, 2) == "--" then
      local name, inline = a:match("^(%-%-[^=]+)=(.*)$")
      name = name or a
      local o = idx[name]
      if not o then M.usage_error(spec, "Unknown option '" .. name .. "'") end
      if o.value then
        store(result, o, inline or take_value(o, name))
      else
        if inline then
          M.usage_error(spec, "The option '" .. name .. "' does not take a value")
        end
        store(result, o, true)
      end
    elseif a:sub(1, 1) == "-" and #a > 1 then
      local o = idx[a]
      if o then
        if o.value then store(result, o, take_value(o, a)) else store(result, o, true) end
      else
        -- grouped short flags: every letter a known flag; a valued one may come last
        for j = 2, #a do
          local name = "-" .. a:sub(j, j)
          local so = idx[name]
          if not so then M.usage_error(spec, "Unknown option '" .. name .. "'") end
          if so.value then
            if j ~= #a then M.usage_error(spec, "Unknown option '" .. a .. "'") end
            store(result, so, take_value(so, name))
          else
            store(result, so, true)
          end
        end
      end
    else
      if positional(a) then i = i + 1 break end
    end
    i = i + 1
  end

  if spec.passthrough and seen_pos == npos then
    while i <= #args do
      result.passthrough[#result.passthrough + 1] = args[i]
      i = i + 1
    end
  end

  if seen_pos < npos then
    M.usage_error(spec, "Missing expected argument '<" .. spec.positionals[seen_pos + 1] .. ">'")
  end
  if spec.passthrough_required and #result.passthrough == 0 then
    M.usage_error(spec, "Missing expected argument '<" .. spec.passthrough .. "> ...'")
  end
  if spec.rest_required and #result.rest == 0 then
    M.usage_error(spec, "Missing expected argument '<" .. spec.rest .. "> ...'")
  end
  return result
end

return M
