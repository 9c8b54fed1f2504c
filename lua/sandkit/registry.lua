--- The provider registry, Lua side. Which providers there are is the
-- core's to say (src/core/providers/providers.def, read here through
-- core.provider_ids()); each provider's descriptor and Lua modules live in
-- its folder, src/core/providers/<dir>/ (<dir> is the id with "-" as "_"),
-- and are installed as sandkit.providers.<dir> (provider.lua, the
-- descriptor) and sandkit.providers.<dir>.<name> (any other <name>.lua).
-- docs/architecture.md §"Adding a provider" has the descriptor's fields.
local core = require "sandkit.core"
local errors = require "sandkit.errors"

local M = {}

local function dir_of(id) return (id:gsub("-", "_")) end

-- The provider folders of the tree this file belongs to, when it is a
-- checkout (lua/sandkit/registry.lua beside src/): its modules come from
-- there, never from an installed sandkit elsewhere on the path. An
-- installed rock has no src/: its modules are found by name.
-- The path is kept as this file's own chunk name has it (relative when
-- LUA_PATH is), so that misuse raised in a provider's module is reported
-- at its caller's line (sandkit.errors).
local SOURCE = (function()
  local file = debug.getinfo(1, "S").source:match("^@(.*)$")
  local root = file and file:match("^(.-)lua/sandkit/registry%.lua$")
  if not root then return nil end
  local dir = root .. "src/core/providers/"
  local f = io.open(dir .. "providers.def")
  if not f then return nil end
  f:close()
  errors.add_own_dir("@" .. dir)
  return dir
end)()

--- Module `part` of provider `id`: "provider" (its descriptor) or the
-- name of another Lua file in its folder ("fs"). Loaded once, and kept in
-- package.loaded under its installed name.
function M.module(id, part)
  local dir = dir_of(id)
  local name = "sandkit.providers." .. dir .. (part == "provider" and "" or "." .. part)
  if package.loaded[name] ~= nil then return package.loaded[name] end
  local file = SOURCE and SOURCE .. dir .. "/" .. part .. ".lua"
  local f = file and io.open(file)
  if not f then return require(name) end -- installed, or supplied under its name
  f:close()
  local mod = assert(loadfile(file))(name, file)
  package.loaded[name] = mod
  return mod
end

local list, by_id

-- The descriptors of the providers this build has, in registry order. A
-- descriptor that does not match its provider's C side (id, name) is a
-- broken tree: raise at once rather than construct the wrong thing.
local function load()
  list, by_id = {}, {}
  local names = core.provider_names()
  for i, id in ipairs(core.provider_ids()) do
    local d = M.module(id, "provider")
    if type(d) ~= "table" or d.id ~= id or d.name ~= names[i] then
      error(("sandkit: the descriptor of provider '%s' (%s) does not match its C side (%s)"):format(
        id, type(d) == "table" and tostring(d.id) .. ", " .. tostring(d.name) or type(d), names[i]), 0)
    end
    list[#list + 1] = d
    by_id[id] = d
  end
end

--- Every descriptor, in registry order (the tables themselves: read only).
function M.descriptors()
  if not list then load() end
  return list
end

--- The descriptor of provider `id`, or nil.
function M.get(id)
  if not by_id then load() end
  return by_id[id]
end

--- The Filesystem backend of sb.fs for sandbox `sb` of a provider whose
-- descriptor names it: "exec" (commands in the sandbox, shared:
-- lua/sandkit/fs/exec.lua) or "own" (fs.lua in the provider's folder).
function M.filesystem_backend(sb, o)
  local d = M.get(sb.provider)
  if d.filesystem == "own" then return M.module(d.id, "fs").backend(sb, o) end
  return require("sandkit.fs." .. (d.filesystem or "exec")).backend(sb, o)
end

return M
