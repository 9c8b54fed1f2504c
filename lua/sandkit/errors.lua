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

-- Frames from sandkit's own Lua files are skipped when misuse is reported:
-- the error names the caller's line, not sandkit's. Own files are those
-- beside this one, and the provider folders of a checkout
-- (sandkit.registry adds them).
local own_dirs = { debug.getinfo(1, "S").source:match("^(@.*[/\\])errors%.lua$") }

local function is_own(info)
  if info.what == "C" then return true end
  for _, dir in ipairs(own_dirs) do
    if info.source:sub(1, #dir) == dir then return true end
  end
  return false
end

--- Counts the Lua files under `dir` (a chunk name prefix, "@/path/") as
-- sandkit's own.
function M.add_own_dir(dir) own_dirs[#own_dirs + 1] = dir end

--- The error() level, counted from the function calling caller_level(), of
-- the first caller outside sandkit (C frames such as pcall are skipped too).
function M.caller_level()
  local level = 2
  while true do
    local info = debug.getinfo(level + 1, "S")
    if not info then return 0 end -- nothing outside: no position
    if not is_own(info) then return level end
    level = level + 1
  end
end

--- "file:line" of the first caller outside sandkit, or nil.
function M.caller_where()
  local level = M.caller_level()
  if level == 0 then return nil end
  local info = debug.getinfo(level, "Sl")
  return ("%s:%d"):format(info.short_src, info.currentline)
end

--- Raises a misuse error: a string message reported at the caller's line,
-- or an error object given `where` ("file:line" of the caller).
function M.misuse(err)
  if type(err) == "table" then
    err.where = err.where or M.caller_where()
    error(err)
  end
  error(err, M.caller_level())
end

--- Raises a ConfigError naming the provider and the key.
function M.config(provider, key, message)
  M.misuse(M.new("ConfigError", message, { provider = provider, key = key }))
end

M.Error = Error
return M
