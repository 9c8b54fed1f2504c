-- Generated text (tools/generate.lua, `make generated`) is current: the
-- rockspecs' source and module lists are the Makefile's lists, the LuaLS
-- stub's provider classes and constructors and docs/providers.md's option
-- tables are what the descriptors say, docs/sandbox.md's and the stub's exec
-- options and docs/errors.md's and the stub's error kinds what
-- lua/sandkit/options.lua and src/core/error.h say.
-- Each fact is stated once; this spec fails when a checked-in copy of it
-- went stale.
local G = dofile("tools/generate.lua")
local sandkit = require "sandkit"
local registry = require "sandkit.registry"
local options = require "sandkit.options"
local files_h = require "helpers.files"
local sh = require "helpers.sh"
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

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
    local files = G.files(lists, G.declarations())
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

  -- the declarations with one change made by `change(decl)`
  local function changed(change)
    local decl = G.declarations()
    local descs = {}
    for i, d in ipairs(decl.descriptors) do descs[i] = setmetatable({}, { __index = d }) end
    decl.descriptors = descs
    change(decl)
    return G.files(lists, decl), decl
  end

  it("goes stale when a descriptor changes, and the markers are found again after a rewrite", function()
    local files, decl = changed(function(decl)
      local d = decl.descriptors[1]
      local opts = setmetatable({}, { __index = d.options })
      opts.brand_new_option = { type = "string", description = "An option no file mentions yet." }
      d.options = opts
    end)
    assert.are_not.equal(files["docs/sandkit.meta.lua"].old, files["docs/sandkit.meta.lua"].new)
    assert.truthy(files["docs/sandkit.meta.lua"].new:find("---@field brand_new_option? string An option", 1, true))
    assert.truthy(files["docs/providers.md"].new:find("| `brand_new_option` | — | An option no file mentions yet. |", 1, true))
    -- a rewritten file still has its markers: generating again changes nothing
    local d = decl.descriptors[1]
    local once = files["docs/providers.md"].new
    local again = assert(G.replace(once, "options " .. d.id, G.option_table(d, options.common)))
    assert.equal(once, again)
  end)

  it("goes stale when an exec option or an error kind changes", function()
    local files = changed(function(decl)
      local exec = { order = decl.exec.order, options = setmetatable({}, { __index = decl.exec.options }) }
      exec.options.cwd = { type = "string", description = "where it runs" }
      decl.exec = exec
      local kinds = {}
      for i, k in ipairs(decl.error_kinds) do kinds[i] = k end
      kinds[#kinds + 1] = { name = "BrandNewError", fields = "why", doc = "a kind no file mentions yet" }
      decl.error_kinds = kinds
    end)
    local stub = files["docs/sandkit.meta.lua"].new
    assert.truthy(files["docs/sandbox.md"].new:find("| `cwd` | where it runs |", 1, true))
    assert.truthy(files["docs/errors.md"].new:find("| `BrandNewError` | `why` | a kind no file mentions yet |", 1, true))
    assert.truthy(stub:find("---@field cwd? string where it runs", 1, true))
    assert.truthy(stub:find('---| "BrandNewError" a kind no file mentions yet', 1, true))
    assert.truthy(stub:find('---@field BrandNewError "BrandNewError"', 1, true))
  end)

  it("docs/sandbox.md's exec options table lists every exec option, in the declaration's order", function()
    local page = files_h.must_read("docs/sandbox.md")
    local block = page:match("BEGIN generated: exec options.-END generated: exec options")
    local names = {}
    for name in block:gmatch("\n| `([%w_]+)[`(]") do names[#names + 1] = name end
    assert.are.same(options.exec.order, names)
  end)

  it("copies each registered provider's error_kinds.def into error.h, in providers.def's order", function()
    local root = tmp.dir()
    local function put(path, text)
      assert(os.execute(("mkdir -p %s"):format(sh.quote((root .. "/" .. path):match("^(.*)/")))))
      files_h.write(root .. "/" .. path, text)
    end
    put("src/core/providers/providers.def", "/* the registry */\nSK_PROVIDER(zeta)\nSK_PROVIDER(alpha)\nSK_PROVIDER(none)\n")
    put("src/core/providers/alpha/error_kinds.def", "/* alpha's\n * kinds */\nX(ALPHA, AlphaError, \"a\", \"alpha failed\")\n\n")
    put("src/core/providers/zeta/error_kinds.def", "X(ZETA_ONE, ZetaOneError, \"\", \"one\")\nX(ZETA_TWO, ZetaTwoError, \"\", \"two\") /* why */\n")
    put("src/core/providers/unlisted/error_kinds.def", "X(UNLISTED, UnlistedError, \"\", \"not registered\")\n")
    assert.equal("#define SK_PROVIDER_ERROR_KINDS(X) \\\n"
      .. '    X(ZETA_ONE, ZetaOneError, "", "one") \\\n'
      .. '    X(ZETA_TWO, ZetaTwoError, "", "two") \\\n'
      .. '    X(ALPHA, AlphaError, "a", "alpha failed")\n', G.provider_error_kinds(root))
    put("src/core/providers/providers.def", "SK_PROVIDER(none)\n")
    assert.equal("#define SK_PROVIDER_ERROR_KINDS(X)\n", G.provider_error_kinds(root))
    local ok, err = pcall(G.kind_lines, "x/error_kinds.def", "X(A, AError, \"\", \"a\")\n#define B 1\n")
    assert.is_false(ok)
    assert.equal("x/error_kinds.def:2: not an X(id, name, fields, meaning) line: #define B 1", err)
    -- and the checked-in error.h has the tree's
    assert.truthy(files_h.must_read("src/core/error.h"):find(G.provider_error_kinds(), 1, true))
  end)

  it("refuses a file whose markers are missing", function()
    local r, err = G.replace("no markers here\n", "sources", "x\n")
    assert.is_nil(r)
    assert.truthy(err:find("BEGIN generated: sources", 1, true))
  end)

  it("lists every provider sandkit.providers() knows in the stub", function()
    local stub = G.files(lists, G.declarations())["docs/sandkit.meta.lua"].new
    for _, p in ipairs(sandkit.providers()) do
      assert.truthy(stub:find("function sandkit." .. p.name .. "(opts) end", 1, true), p.name)
      assert.truthy(stub:find('"' .. p.id .. '"', 1, true), p.id)
    end
  end)
end)
