-- Generated text (tools/generate.lua, `make generated`) is current: the
-- rockspecs' source and module lists are the Makefile's lists, the LuaLS
-- stub's provider classes and constructors and README's provider option
-- tables are what the descriptors say. Each fact is stated once; this spec
-- fails when a checked-in copy of it went stale.
local G = dofile("tools/generate.lua")
local sandkit = require "sandkit"
local registry = require "sandkit.registry"
local options = require "sandkit.options"
local sh = require "helpers.sh"

-- The lists as the Makefile has them (mk/generated.mk).
local function make_lists()
  local code, out = sh.run("make -s --no-print-directory generated-lists")
  assert(code == 0, out)
  local lists, which = { rockspecs = {}, c_sources = {}, lua_files = {} }, "rockspecs"
  for word in out:gmatch("%S+") do
    if word == "--" then which = which == "rockspecs" and "c_sources" or "lua_files"
    else table.insert(lists[which], word) end
  end
  return lists
end

describe("generated text", function()
  local lists = make_lists()

  it("takes every source and module of the tree from the Makefile", function()
    assert.is_true(#lists.rockspecs >= 2)
    local function has(list, f)
      for _, x in ipairs(list) do if x == f then return true end end
      return false
    end
    assert.is_true(has(lists.c_sources, "src/core/providers/registry.c"))
    assert.is_true(has(lists.c_sources, "src/lua/core.c"))
    assert.is_true(has(lists.lua_files, "src/core/providers/modal/fs.lua"))
    assert.is_true(has(lists.lua_files, "lua/sandkit/registry.lua"))
  end)

  it("is current in every file (run `make generated` after changing a descriptor or a source list)", function()
    local files = G.files(lists, registry.descriptors(), options.common)
    local stale = {}
    for path, f in pairs(files) do
      if f.new ~= f.old then stale[#stale + 1] = path end
    end
    table.sort(stale)
    assert.are.same({}, stale)
  end)

  it("names provider modules as sandkit.registry loads them", function()
    assert.equal("sandkit.providers.apple_container", G.module_name("src/core/providers/apple_container/provider.lua"))
    assert.equal("sandkit.providers.modal.fs", G.module_name("src/core/providers/modal/fs.lua"))
    assert.equal("sandkit.fs", G.module_name("lua/sandkit/fs/init.lua"))
    assert.equal("sandkit", G.module_name("lua/sandkit/init.lua"))
    for _, f in ipairs(lists.lua_files) do
      local name = G.module_name(f)
      local dir, part = f:match("^src/core/providers/([%w_]+)/([%w_]+)%.lua$")
      if dir then
        local id = dir:gsub("_", "-")
        if registry.get(id) then
          local mod = registry.module(id, part)
          assert.is_not_nil(mod, f)
          assert.equal(mod, package.loaded[name], f .. " is not loaded as " .. name)
        end
      end
    end
  end)

  it("goes stale when a descriptor changes, and the markers are found again after a rewrite", function()
    local descs = {}
    for i, d in ipairs(registry.descriptors()) do
      descs[i] = setmetatable({}, { __index = d })
    end
    local changed = setmetatable({}, { __index = descs[1].options })
    changed.brand_new_option = { type = "string", description = "An option no file mentions yet." }
    descs[1].options = changed
    local files = G.files(lists, descs, options.common)
    assert.are_not.equal(files["docs/sandkit.meta.lua"].old, files["docs/sandkit.meta.lua"].new)
    assert.truthy(files["docs/sandkit.meta.lua"].new:find("---@field brand_new_option? string An option", 1, true))
    assert.truthy(files["README.md"].new:find("| `brand_new_option` | — | An option no file mentions yet. |", 1, true))
    -- a rewritten file still has its markers: generating again changes nothing
    local once = files["README.md"].new
    local again = assert(G.replace(once, "options " .. descs[1].id, G.option_table(descs[1], options.common)))
    assert.equal(once, again)
  end)

  it("refuses a file whose markers are missing", function()
    local r, err = G.replace("no markers here\n", "sources", "x\n")
    assert.is_nil(r)
    assert.truthy(err:find("BEGIN generated: sources", 1, true))
  end)

  it("lists every provider sandkit.providers() knows in the stub", function()
    local stub = G.files(lists, registry.descriptors(), options.common)["docs/sandkit.meta.lua"].new
    for _, p in ipairs(sandkit.providers()) do
      assert.truthy(stub:find("function sandkit." .. p.name .. "(opts) end", 1, true), p.name)
      assert.truthy(stub:find('"' .. p.id .. '"', 1, true), p.id)
    end
  end)
end)
