--- The text the tree generates from its one source of each fact, between
-- BEGIN/END markers in files that are otherwise written by hand:
--   rockspec/*.rockspec   the build's C sources and Lua modules, from the
--                         Makefile's CORE_SRC, LUA_SRC and LUA_MODULES
--   docs/sandkit.meta.lua each provider's options class and constructor,
--                         from its descriptor (sandkit.registry); the exec
--                         options (sandkit.CommandOptions) from their
--                         declaration (lua/sandkit/options.lua); the error
--                         kinds from SK_ERROR_KINDS (src/core/error.h,
--                         through sandkit.errors.kinds)
--   docs/providers.md     each provider's option table, from the same
--   docs/sandbox.md       the exec options' table, from the same
--   docs/errors.md        the error kinds' table, from the same
--   src/core/error.h      SK_PROVIDER_ERROR_KINDS, the error kinds each
--                         provider states in its folder (error_kinds.def),
--                         in providers.def's order; read from the tree
--                         alone, so that the core builds from it
-- `make generated` writes them; spec/generated_spec.lua fails when the
-- checked-in text differs from what this makes. Run with the module and its
-- core on the paths:
--   lua5.4 tools/generate.lua write|check ROCKSPEC... -- C_SOURCE... -- LUA_FILE...
-- or, before the core is built (error.h alone, from the tree):
--   lua5.4 tools/generate.lua kinds
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
-- once, docs/sandbox.md §"Options common to every provider" and sandkit.SandboxOptions).
local function own_options(d, common)
  local out = {}
  for _, k in ipairs(sorted_keys(d.options)) do
    if d.options[k] ~= common[k] then out[#out + 1] = k end
  end
  return out
end

--- A default as the docs write it (sandkit.options.render_default: the
-- CLI's own): tostring, or { 2000, 4000 } for a list.
function G.render(v) return require("sandkit.options").render_default(v) end

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

-- A byte count as well in MiB, when it is a whole number of them.
local function mib(v)
  if math.type(v) == "integer" and v >= 1 << 20 and v % (1 << 20) == 0 then return (" (%d MiB)"):format(v >> 20) end
  return ""
end

local function field_line(key, spec)
  local text = spec.description or ""
  if spec.default ~= nil then
    if text ~= "" and not text:match("[.!?]$") then text = text .. "." end
    text = text .. " Default: " .. G.render(spec.default) .. mib(spec.default) .. "."
  end
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

--- The option table of provider d (docs/providers.md).
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

-- ---- exec options and error kinds -----------------------------------------------

-- An option's name as the docs show it: a callback with its parameters.
local function shown_name(name, spec)
  local params = spec.lua_type and spec.lua_type:match("^fun%((.-)%)")
  if params then return ("`%s(%s)`"):format(name, (params:gsub("%s*:%s*[^,]+", ""))) end
  return "`" .. name .. "`"
end

local function each_option(schema, fn)
  local out = {}
  for _, name in ipairs(schema.order) do out[#out + 1] = fn(name, schema.options[name]) end
  return table.concat(out)
end

--- docs/sandbox.md's table of the exec options (schema: options.exec), in their order.
function G.exec_table(schema)
  return "| option | meaning |\n| --- | --- |\n" .. each_option(schema, function(name, spec)
    return ("| %s | %s |\n"):format(shown_name(name, spec), cell(spec.description))
  end)
end

--- The stub's sandkit.CommandOptions.
function G.stub_exec(schema)
  return "---@class sandkit.CommandOptions  options of exec, exec_async and processes:spawn\n"
    .. each_option(schema, function(name, spec)
      return ("---@field %s? %s %s\n"):format(name, G.lua_type(spec), spec.description)
    end)
end

local function fields_of(kind)
  if kind.fields == "" then return "" end
  return "`" .. kind.fields:gsub(", ", "`, `") .. "`"
end

--- docs/errors.md's table of the error kinds ({ name, fields, doc }, in order).
function G.error_table(kinds)
  local rows = { "| kind | fields | what happened |\n| --- | --- | --- |\n" }
  for _, k in ipairs(kinds) do rows[#rows + 1] = ("| `%s` | %s | %s |\n"):format(k.name, fields_of(k), cell(k.doc)) end
  return table.concat(rows)
end

--- The stub's sandkit.ErrorKind and the constants of sandkit.errors.
function G.stub_errors(kinds)
  local lines = { "---@alias sandkit.ErrorKind\n" }
  for _, k in ipairs(kinds) do lines[#lines + 1] = ('---| "%s" %s\n'):format(k.name, k.doc) end
  lines[#lines + 1] = "\n---@class sandkit.errors  the kinds as constants: errors.ConfigError == \"ConfigError\"\n"
  for _, k in ipairs(kinds) do lines[#lines + 1] = ('---@field %s "%s"\n'):format(k.name, k.name) end
  lines[#lines + 1] = "---@field kinds { name: sandkit.ErrorKind, fields: string, doc: string }[] in this order\n"
  return table.concat(lines)
end

-- ---- the files ----------------------------------------------------------------

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- ---- provider error kinds -------------------------------------------------------

local PROVIDERS_DEF = "src/core/providers/providers.def"

--- The folders providers.def registers, in its order.
function G.provider_dirs(def_text)
  local out = {}
  for line in def_text:gmatch("[^\n]+") do
    local dir = line:match("^%s*SK_PROVIDER%(([%w_]+)%)")
    if dir then out[#out + 1] = dir end
  end
  return out
end

--- The X(...) lines of an error_kinds.def (comments and blank lines
-- skipped); raises naming the file and line of anything else.
function G.kind_lines(path, text)
  local out, n = {}, 0
  local in_comment = false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    local rest = line
    if in_comment then
      local e = rest:find("*/", 1, true)
      if e then in_comment, rest = false, rest:sub(e + 2) else rest = "" end
    end
    if rest:match("^%s*/%*") and not rest:find("*/", 1, true) then in_comment, rest = true, "" end
    rest = rest:gsub("/%*.-%*/", "")
    if rest:match("^%s*X%(.*%)%s*$") then
      out[#out + 1] = rest:match("^%s*(.-)%s*$")
    elseif rest:match("%S") then
      error(("%s:%d: not an X(id, name, fields, meaning) line: %s"):format(path, n, line), 0)
    end
  end
  return out
end

--- error.h's SK_PROVIDER_ERROR_KINDS: each registered provider's
-- error_kinds.def, in providers.def's order (root: the tree, default ".").
function G.provider_error_kinds(root)
  root = root or "."
  local lines = {}
  for _, dir in ipairs(G.provider_dirs(read(root .. "/" .. PROVIDERS_DEF))) do
    local path = ("src/core/providers/%s/error_kinds.def"):format(dir)
    local f = io.open(root .. "/" .. path, "rb")
    if f then
      local text = f:read("a")
      f:close()
      for _, l in ipairs(G.kind_lines(path, text)) do lines[#lines + 1] = "    " .. l end
    end
  end
  if #lines == 0 then return "#define SK_PROVIDER_ERROR_KINDS(X)\n" end
  return "#define SK_PROVIDER_ERROR_KINDS(X) \\\n" .. table.concat(lines, " \\\n") .. "\n"
end

local ERROR_H = "src/core/error.h"

--- { old, new } of src/core/error.h.
function G.error_h()
  local old = read(ERROR_H)
  local new, err = G.replace(old, "provider error kinds", G.provider_error_kinds())
  if not new then error(ERROR_H .. ": " .. err, 0) end
  return { old = old, new = new }
end

--- The declarations the text is generated from, as this build has them:
-- { descriptors, common, exec, error_kinds }.
function G.declarations()
  require "sandkit"
  local options = require "sandkit.options"
  return { descriptors = require("sandkit.registry").descriptors(), common = options.common,
    exec = options.exec, error_kinds = require("sandkit.errors").kinds }
end

--- { [path] = { old = text, new = text } } for every generated file, or
-- raises naming a file whose markers are missing. lists: { rockspecs,
-- c_sources, lua_files }; decl: as G.declarations() returns it.
function G.files(lists, decl)
  local descriptors, common = decl.descriptors, decl.common
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
    { "command options", G.stub_exec(decl.exec) },
    { "error kinds", G.stub_errors(decl.error_kinds) },
  })
  gen("docs/sandbox.md", { { "exec options", G.exec_table(decl.exec) } })
  gen("docs/errors.md", { { "error kinds", G.error_table(decl.error_kinds) } })
  local tables, text = {}, read("docs/providers.md")
  for _, d in ipairs(descriptors) do
    -- a provider whose section in docs/providers.md has no table yet gets none
    if text:find("BEGIN generated: options " .. d.id .. " ", 1, true) then
      tables[#tables + 1] = { "options " .. d.id, G.option_table(d, common) }
    end
  end
  gen("docs/providers.md", tables)
  out[ERROR_H] = G.error_h()
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
  local files = mode == "kinds" and { [ERROR_H] = G.error_h() } or G.files(lists, G.declarations())
  local stale = {}
  for _, path in ipairs(sorted_keys(files)) do
    local f = files[path]
    if f.new ~= f.old then
      if mode == "write" or mode == "kinds" then
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
