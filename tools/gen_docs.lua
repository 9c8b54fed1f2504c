--- The documentation that sandkit's own declarations state: the exec
-- options (lua/sandkit/options.lua) and the error kinds (src/core/error.h,
-- through sandkit.errors.kinds), rendered into README.md and the LuaLS stub
-- docs/sandkit.meta.lua between marker lines, so the text cannot drift from
-- the code. `make docs` rewrites the blocks; spec/schema_docs_spec.lua
-- fails when one differs from its rendering.
--   lua5.4 tools/gen_docs.lua [--check]   (with the specs' LUA_PATH/LUA_CPATH)
local options = require "sandkit.options"
local errors = require "sandkit.errors"

local M = {}

-- ---- renderings ------------------------------------------------------------

-- The option's name as the README shows it: a callback with its parameters.
local function shown_name(name, spec)
  local params = spec.signature and spec.signature:match("^fun%((.-)%)")
  if params then
    return ("`%s(%s)`"):format(name, (params:gsub("%s*:%s*[^,]+", "")))
  end
  return "`" .. name .. "`"
end

-- The option's LuaLS type.
local function annotation(spec)
  if spec.signature then return spec.signature end
  if spec.type == "env" then return "table<string, string|number|boolean>" end
  local parts = {}
  for _, t in ipairs(type(spec.type) == "table" and spec.type or { spec.type }) do
    if t == "string" and spec.enum then
      for _, e in ipairs(spec.enum) do parts[#parts + 1] = ('"%s"'):format(e) end
    else
      parts[#parts + 1] = t
    end
  end
  return table.concat(parts, "|")
end

local function each_option(schema, fn)
  local out = {}
  for _, name in ipairs(schema.order) do out[#out + 1] = fn(name, schema.options[name]) end
  return table.concat(out, "\n")
end

local function fields_of(kind)
  if kind.fields == "" then return "" end
  return "`" .. kind.fields:gsub(", ", "`, `") .. "`"
end

M.blocks = {
  { file = "README.md", name = "exec-options", style = "html", render = function()
    return "| option | meaning |\n| --- | --- |\n" .. each_option(options.exec, function(name, spec)
      return ("| %s | %s |"):format(shown_name(name, spec), spec.description)
    end)
  end },
  { file = "README.md", name = "error-kinds", style = "html", render = function()
    local rows = { "| kind | fields | what happened |", "| --- | --- | --- |" }
    for _, k in ipairs(errors.kinds) do
      rows[#rows + 1] = ("| `%s` | %s | %s |"):format(k.name, fields_of(k), k.doc)
    end
    return table.concat(rows, "\n")
  end },
  { file = "docs/sandkit.meta.lua", name = "command-options", style = "lua", render = function()
    return "---@class sandkit.CommandOptions  options of exec, exec_async and processes:spawn\n"
      .. each_option(options.exec, function(name, spec)
        return ("---@field %s? %s %s"):format(name, annotation(spec), spec.description)
      end)
  end },
  { file = "docs/sandkit.meta.lua", name = "error-kinds", style = "lua", render = function()
    local lines = { "---@alias sandkit.ErrorKind" }
    for _, k in ipairs(errors.kinds) do lines[#lines + 1] = ('---| "%s" %s'):format(k.name, k.doc) end
    lines[#lines + 1] = "\n---@class sandkit.errors  the kinds as constants: errors.ConfigError == \"ConfigError\""
    for _, k in ipairs(errors.kinds) do lines[#lines + 1] = ('---@field %s "%s"'):format(k.name, k.name) end
    lines[#lines + 1] = "---@field kinds { name: sandkit.ErrorKind, fields: string, doc: string }[] in this order"
    return table.concat(lines, "\n")
  end },
}

-- ---- the blocks in their files ----------------------------------------------

local function markers(block)
  if block.style == "html" then
    return ("<!-- generated: %s (tools/gen_docs.lua; make docs) -->"):format(block.name),
      ("<!-- end: %s -->"):format(block.name)
  end
  return ("-- generated: %s (tools/gen_docs.lua; make docs)"):format(block.name), ("-- end: %s"):format(block.name)
end

local function plain(s) return (s:gsub("%p", "%%%0")) end

--- text with block's region replaced by its rendering; nil and a message
-- when the markers are missing.
function M.apply(text, block)
  local open, close = markers(block)
  local a, b = text:find(plain(open) .. "\n")
  local c, d = text:find("\n" .. plain(close), b or 1)
  if not a or not c then
    return nil, ("%s has no %q ... %q block"):format(block.file, open, close)
  end
  return text:sub(1, b) .. block.render() .. text:sub(c)
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

--- Problems, one line each: blocks missing or different from their rendering.
function M.check(root)
  local problems = {}
  for _, block in ipairs(M.blocks) do
    local text = read(root .. "/" .. block.file)
    local new, err = M.apply(text, block)
    if not new then problems[#problems + 1] = err
    elseif new ~= text then
      problems[#problems + 1] = ("%s: block %s differs from its rendering (run `make docs`)"):format(block.file, block.name)
    end
  end
  return problems
end

--- Rewrites every block in place.
function M.write(root)
  for _, block in ipairs(M.blocks) do
    local path = root .. "/" .. block.file
    local new = assert(M.apply(read(path), block))
    local f = assert(io.open(path, "wb"))
    f:write(new)
    f:close()
  end
end

if arg and arg[0] and arg[0]:match("gen_docs%.lua$") then
  if arg[1] == "--check" then
    local problems = M.check(".")
    for _, p in ipairs(problems) do io.stderr:write(p, "\n") end
    os.exit(#problems == 0 and 0 or 1)
  end
  M.write(".")
end

return M
