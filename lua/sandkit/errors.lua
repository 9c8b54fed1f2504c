--- Typed error objects: tables with `kind`, `message` and the fields of
-- their kind; `tostring(err)` gives "Kind: message". The kinds are the
-- core's list (src/core/error.h, SK_ERROR_KINDS), stated once: each is a
-- constant here (errors.ConfigError == "ConfigError") and errors.kinds
-- lists them in order with their fields and meaning.
--
-- Misuse (ConfigError, ArgumentError) is raised as an error object that
-- carries the caller's "file:line" (`where`) and, while it is being
-- raised, a traceback: the standalone interpreter shows an error table
-- through its __tostring and adds no traceback of its own, so an uncaught
-- misuse prints "file:line: ConfigError: ...", then the caller's stack.
local core = require "sandkit.core"

local M = {}

M.kinds = core.error_kinds()
local known = {}
for _, k in ipairs(M.kinds) do
  known[k.name] = true
  M[k.name] = k.name
end

local Error = { __name = "sandkit.Error" }
Error.__index = Error

-- Tracebacks of raised misuse, kept beside the objects so that their
-- fields stay the kind's own.
local tracebacks = setmetatable({}, { __mode = "k" })
local raise = error

-- True while the error is still on its way up: a message handler (the
-- interpreter's, xpcall's) runs before the stack unwinds, so `error` is
-- still on it; a caller's tostring(err) after pcall finds no such frame.
local function being_raised()
  for level = 3, 6 do
    local info = debug.getinfo(level, "f")
    if not info then return false end
    if info.func == raise then return true end
  end
  return false
end

--- What an uncaught misuse shows: "file:line: Kind: message" and the
-- caller's traceback; nil for an error that was not raised as misuse.
function M.uncaught(e)
  local tb = tracebacks[e]
  if not tb then return nil end
  return (e.where and (e.where .. ": ") or "") .. e.kind .. ": " .. e.message .. "\n" .. tb
end

Error.__tostring = function(e)
  if tracebacks[e] and being_raised() then return M.uncaught(e) end
  return e.kind .. ": " .. e.message
end

--- Creates an error object of a kind of the list. `fields` (optional) are
-- copied onto it.
function M.new(kind, message, fields)
  if not known[kind] then
    raise(("sandkit.errors.new: unknown error kind '%s' (see sandkit.errors.kinds)"):format(tostring(kind)), 2)
  end
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
  -- "tail": what Lua 5.1 leaves of a frame that made a tail call
  if info.what == "C" or info.what == "tail" then return true end
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

--- Raises an error object as misuse: it gains `where` (the caller's
-- "file:line") and the caller's traceback, shown while it is uncaught. A
-- string (a deadlock's description) is raised at the caller's line.
function M.misuse(err)
  local level = M.caller_level()
  if type(err) == "string" then raise(err, level) end
  if level > 0 then
    err.where = err.where or M.caller_where()
    tracebacks[err] = debug.traceback(nil, level)
  end
  raise(err, 0)
end

--- Raises a ConfigError naming the provider (or nil) and the key (or nil).
function M.config(provider, key, message)
  M.misuse(M.new("ConfigError", message, { provider = provider, key = key }))
end

--- Raises an ArgumentError in Lua's own words:
-- "bad argument #n to 'fname' (problem)"; n = 0 is a method's self.
function M.argument(n, fname, problem)
  local message = n == 0 and ("calling '%s' on bad self (%s)"):format(fname, problem)
    or ("bad argument #%d to '%s' (%s)"):format(n, fname, problem)
  M.misuse(M.new("ArgumentError", message, { argument = n }))
end

-- The binding's own argument checks (sandkit.Buffer) raise through it.
core.set_argument_error(M.argument)

M.Error = Error
return M
