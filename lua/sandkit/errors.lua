--- Typed error objects: tables with `kind`, `message` and the fields of
-- their kind; `tostring(err)` gives "Kind: message".
local M = {}

local Error = { __name = "sandkit.Error" }
Error.__index = Error
Error.__tostring = function(e) return e.kind .. ": " .. e.message end

--- Creates an error object. `fields` (optional) are copied onto it.
function M.new(kind, message, fields)
  local e = {}
  if fields then
    for k, v in pairs(fields) do e[k] = v end
  end
  e.kind = kind
  e.message = message
  return setmetatable(e, Error)
end

--- True when `err` is an error object of `kind` (any kind when nil).
function M.is(err, kind)
  return getmetatable(err) == Error and (kind == nil or err.kind == kind)
end

--- Raises a ConfigError naming the provider and the key.
function M.config(provider, key, message)
  error(M.new("ConfigError", message, { provider = provider, key = key }), 3)
end

M.Error = Error
return M
