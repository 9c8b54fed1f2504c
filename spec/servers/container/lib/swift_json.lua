-- JSON output the way Apple's CLI prints it (Swift JSONEncoder with .sortedKeys):
-- keys sorted, "/" escaped as "\/", and for .prettyPrinted two-space indents with
-- " : " between key and value. Lua cannot tell an empty array from an empty
-- object, so arrays are marked with json.array() or named in opts.array_keys.

local M = {}

local ARRAY = { __name = "swift_json.array" }
M.null = setmetatable({}, { __name = "swift_json.null" })

function M.array(t)
  return setmetatable(t or {}, ARRAY)
end

local ESCAPES = {
  ['"'] = '\\"', ["\\"] = "\\\\", ["/"] = "\\/",
  ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
}

local function encode_string(s)
  return '"' .. s:gsub('[%c"\\/]', function(c)
    return ESCAPES[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

local function encode_number(n)
  if math.type(n) == "integer" then return string.format("%d", n) end
  if n ~= n or n == math.huge or n == -math.huge then error("cannot encode " .. tostring(n)) end
  if n == math.floor(n) and math.abs(n) < 2 ^ 53 then return string.format("%d", math.tointeger(n)) end
  return string.format("%.17g", n)
end

local function is_array(t, key, opts)
  if getmetatable(t) == ARRAY then return true end
  if next(t) == nil then return opts.array_keys ~= nil and opts.array_keys[key] == true end
  local n = #t
  if n == 0 then return false end
  local count = 0
  for _ in pairs(t) do count = count + 1 end
  return count == n
end

local encode_value

local function encode_table(t, key, opts, depth)
  local pretty = opts.pretty
  local nl, pad, inner = "", "", ""
  if pretty then
    nl = "\n"
    pad = string.rep("  ", depth)
    inner = string.rep("  ", depth + 1)
  end
  if is_array(t, key, opts) then
    if #t == 0 then return "[]" end
    local parts = {}
    for i = 1, #t do parts[i] = inner .. encode_value(t[i], nil, opts, depth + 1) end
    return "[" .. nl .. table.concat(parts, "," .. nl) .. nl .. pad .. "]"
  end
  local keys = {}
  for k in pairs(t) do
    if type(k) ~= "string" then error("object key must be a string, got " .. type(k)) end
    keys[#keys + 1] = k
  end
  if #keys == 0 then return "{}" end
  table.sort(keys)
  local sep = pretty and " : " or ":"
  local parts = {}
  for i, k in ipairs(keys) do
    parts[i] = inner .. encode_string(k) .. sep .. encode_value(t[k], k, opts, depth + 1)
  end
  return "{" .. nl .. table.concat(parts, "," .. nl) .. nl .. pad .. "}"
end

function encode_value(v, key, opts, depth)
  local tv = type(v)
  if v == nil or v == M.null then return "null" end
  if tv == "string" then return encode_string(v) end
  if tv == "number" then return encode_number(v) end
  if tv == "boolean" then return v and "true" or "false" end
  if tv == "table" then return encode_table(v, key, opts, depth) end
  if tv == "userdata" then return "null" end -- cjson.null
  error("cannot encode a " .. tv)
end

-- opts: { pretty = bool, array_keys = { name = true } }
function M.encode(v, opts)
  return encode_value(v, nil, opts or {}, 0)
end

return M
