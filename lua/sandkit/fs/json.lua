--- JSON string literal of a Lua string (bytes >= 0x80 pass through: keys are UTF-8).
-- (Not cjson: that is a spec-only dependency, and the one body built here needs only a string.)
local M = {}

function M.string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == "\\" then return "\\\\" end
    return ("\\u%04x"):format(c:byte())
  end) .. '"'
end

return M
