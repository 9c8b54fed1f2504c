--- The text the tree generates from its one source of each fact, between
-- BEGIN/END markers in files that are otherwise written by hand:
--   rockspec/*.rockspec   the build's C sources and Lua modules, from the
--                         Makefile's CORE_SRC, LUA_SRC and LUA_MODULES
--   docs/sandkit.meta.lua each provider's options class and constructor,
--                         from its descriptor (sandkit.registry)
--   README.md             each provider's option table, from its descriptor
-- `make generated` writes them; spec/generated_spec.lua fails when the
-- checked-in text differs from what this makes. Run with the module and its
-- core on the paths:
--   lua5.4 tools/generate.lua write|check ROCKSPEC... -- C_SOURCE... -- LUA_FILE...
-- Loaded as a file (dofile) it returns its functions.
local G = {}

-- ---- markers ----------------------------------------------------------------

--- text with the region `name` replaced by body (a string ending in "\n").
-- A region is the lines between one holding "BEGIN generated: <name>" and
-- the next holding "END generated: <name>" (markers kept, in whatever
-- comment syntax the file has). nil, message when the markers are missing.
function G.replace(text, name, body)
  local b = text:find("BEGIN generated: " .. name .. " ", 1, true)
    or text:find("BEGIN generated: " .. name .. "\n", 1, true)
  if not b then return nil, "no BEGIN generated: " .. name end
  local start = text:find("\n", b, true)
  local e = text:find("END generated: " .. name, start, true)
  if not e then return nil, "no END generated: " .. name end
  local line_start = e
  while line_start > 1 and text:sub(line_start - 1, line_start - 1) ~= "\n" do line_start = line_start - 1 end
  return text:sub(1, start) .. body .. text:sub(line_start)
end

-- ---- rockspecs ----------------------------------------------------------------

--- The installed module name of a Lua file of the tree.
-- lua/sandkit/x/init.lua -> sandkit.x; lua/sandkit/x/y.lua -> sandkit.x.y;
-- src/core/providers/<dir>/provider.lua -> sandkit.providers.<dir> (its
-- descriptor); src/core/providers/<dir>/<name>.lua ->
-- sandkit.providers.<dir>.<name> (lua/sandkit/registry.lua loads them so).
function G.module_name(file)
  local dir, part = file:match("^src/core/providers/([%w_]+)/([%w_]+)%.lua$")
  if dir then
    return "sandkit.providers." .. dir .. (part == "provider" and "" or "." .. part)
  end
  local path = file:match("^lua/(.+)%.lua$")
  if not path then return nil end
  return (path:gsub("/init$", ""):gsub("/", "."))
end

function G.rockspec_sources(c_files)
  local out = {}
  for _, f in ipairs(c_files) do out[#out + 1] = ('        "%s",\n'):format(f) end
  return table.concat(out)
end

function G.rockspec_modules(lua_files)
  local rows = {}
  for _, f in ipairs(lua_files) do
    local name = G.module_name(f)
    if name then rows[#rows + 1] = { name, f } end
  end
  table.sort(rows, function(a, b) return a[1] < b[1] end)
  local out = {}
  for _, r in ipairs(rows) do out[#out + 1] = ('    ["%s"] = "%s",\n'):format(r[1], r[2]) end
  return table.concat(out)
end

-- ---- descriptors ----------------------------------------------------------------

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

-- The options a provider declares itself (the common ones are documented
-- once, README.md §"Sandbox" and sandkit.SandboxOptions).
local function own_options(d, common)
  local out = {}
  for _, k in ipairs(sorted_keys(d.options)) do
    if d.options[k] ~= common[k] then out[#out + 1] = k end
  end
  return out
end

--- A default as the docs write it: tostring, or {2000, 4000} for a list.
function G.render(v)
  if type(v) ~= "table" then return tostring(v) end
  local parts = {}
  for _, e in ipairs(v) do parts[#parts + 1] = type(e) == "string" and ("%q"):format(e) or tostring(e) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

--- The LuaLS annotation of an option spec.
function G.lua_type(spec)
  if spec.lua_type then return spec.lua_type end
  local types = type(spec.type) == "table" and spec.type or { spec.type }
  local out = {}
  for _, t in ipairs(types) do
    if t == "string" and spec.enum then
      local q = {}
      for _, e in ipairs(spec.enum) do q[#q + 1] = ('"%s"'):format(e) end
      out[#out + 1] = table.concat(q, "|")
    elseif t == "array" then
      out[#out + 1] = (spec.items == "ms" and "integer" or spec.items or "string") .. "[]"
    elseif t == "map" then
      out[#out + 1] = "table<string, " .. (spec.values or "string") .. ">"
    elseif t == "env" then
      out[#out + 1] = "table<string, string|number|boolean>"
    else
      out[#out + 1] = t
    end
  end
  return table.concat(out, "|")
end

local function field_line(key, spec)
  local text = spec.description or ""
  if spec.default ~= nil then text = text .. " Default: " .. G.render(spec.default) .. "." end
  return ("---@field %s? %s %s\n"):format(key, G.lua_type(spec), text)
end

--- The stub's options classes: the common ones, one per provider, and
-- the aliases naming them all.
function G.stub_options(descriptors, common)
  local out = { "---@class sandkit.SandboxOptions  options every provider accepts\n" }
  for _, k in ipairs(sorted_keys(common)) do out[#out + 1] = field_line(k, common[k]) end
  local ids, classes = {}, {}
  for _, d in ipairs(descriptors) do
    out[#out + 1] = ("\n---@class sandkit.%sOptions: sandkit.SandboxOptions  %s\n"):format(d.name, d.description)
    for _, k in ipairs(own_options(d, common)) do out[#out + 1] = field_line(k, d.options[k]) end
    ids[#ids + 1] = ('"%s"'):format(d.id)
    classes[#classes + 1] = ("sandkit.%sOptions"):format(d.name)
  end
  out[#out + 1] = "\n---@alias sandkit.ProviderId " .. table.concat(ids, "|") .. "\n"
  out[#out + 1] = "---@alias sandkit.AnySandboxOptions " .. table.concat(classes, "|") .. "\n"
  return table.concat(out)
end

--- The stub's constructors, one per provider.
function G.stub_constructors(descriptors)
  local out = {}
  for _, d in ipairs(descriptors) do
    out[#out + 1] = ("---@param opts? sandkit.%sOptions\n---@return sandkit.Sandbox\nfunction sandkit.%s(opts) end\n")
      :format(d.name, d.name)
  end
  return table.concat(out)
end

local function cell(s) return (s:gsub("|", "\\|"):gsub("\n", " ")) end

--- README's option table of provider d.
function G.option_table(d, common)
  local out = { "| option | default | meaning |\n", "| --- | --- | --- |\n" }
  for _, k in ipairs(own_options(d, common)) do
    local spec = d.options[k]
    local default
    if spec.default ~= nil then
      default = "`" .. G.render(spec.default) .. "`" .. (spec.env and (", or `" .. spec.env .. "` when set") or "")
    elseif spec.env then
      default = "`" .. spec.env .. "`"
    else
      default = "—"
    end
    out[#out + 1] = ("| `%s` | %s | %s |\n"):format(k, cell(default), cell(spec.description or ""))
  end
  return table.concat(out)
end

-- ---- the files ----------------------------------------------------------------

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

--- { [path] = { old = text, new = text } } for every generated file, or
-- raises naming a file whose markers are missing. lists: { rockspecs,
-- c_sources, lua_files }; descriptors from sandkit.registry.
function G.files(lists, descriptors, common)
  local out = {}
  local function gen(path, regions)
    local old = read(path)
    local new = old
    for _, r in ipairs(regions) do
      local err
      new, err = G.replace(new, r[1], r[2])
      if not new then error(path .. ": " .. err, 0) end
    end
    out[path] = { old = old, new = new }
  end
  for _, rs in ipairs(lists.rockspecs) do
    gen(rs, { { "sources", G.rockspec_sources(lists.c_sources) }, { "modules", G.rockspec_modules(lists.lua_files) } })
  end
  gen("docs/sandkit.meta.lua", {
    { "provider options", G.stub_options(descriptors, common) },
    { "provider constructors", G.stub_constructors(descriptors) },
  })
  local readme = {}
  local text = read("README.md")
  for _, d in ipairs(descriptors) do
    -- a provider whose README section has no table yet gets none
    if text:find("BEGIN generated: options " .. d.id .. " ", 1, true) then
      readme[#readme + 1] = { "options " .. d.id, G.option_table(d, common) }
    end
  end
  gen("README.md", readme)
  return out
end

local function main(mode, ...)
  local args, lists, which = { ... }, { rockspecs = {}, c_sources = {}, lua_files = {} }, "rockspecs"
  for _, a in ipairs(args) do
    if a == "--" then
      which = which == "rockspecs" and "c_sources" or "lua_files"
    else
      table.insert(lists[which], a)
    end
  end
  require "sandkit"
  local files = G.files(lists, require("sandkit.registry").descriptors(), require("sandkit.options").common)
  local stale = {}
  for _, path in ipairs(sorted_keys(files)) do
    local f = files[path]
    if f.new ~= f.old then
      if mode == "write" then
        local h = assert(io.open(path, "wb"))
        h:write(f.new)
        h:close()
        print("generated " .. path)
      else
        stale[#stale + 1] = path
      end
    end
  end
  if #stale > 0 then
    io.stderr:write("stale generated text (run `make generated`): ", table.concat(stale, ", "), "\n")
    os.exit(1)
  end
end

if select("#", ...) > 0 then main(...) end
return G
