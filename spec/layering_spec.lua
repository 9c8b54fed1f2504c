-- The C tree keeps its layers (tools/layers.lua;
-- docs/architecture.md §"Layers"): no #include and no call goes up from a lower layer to a higher
-- one, src/core has no Lua, providers do not reach into each other, the
-- binding drives sandboxes through sandbox.h alone, no #include cycle, and
-- call cycles only inside the modules the tool names as one unit.
local L = dofile("tools/layers.lua")

local BUILD = os.getenv("SANDKIT_BUILD") or "build"

describe("the layers of the C tree", function()
  it("hold, for every #include and every call between objects", function()
    local includes, calls, missing = L.scan(BUILD)
    assert.is_table(calls, "no object " .. tostring(missing) .. ": build first")
    local n = 0
    for _, list in pairs(calls) do n = n + #list end
    assert.is_true(n > 100, "too few calls seen: " .. n)
    assert.are.same({}, L.check(includes, calls))
  end)

  it("put every file of the tree in a layer", function()
    local includes = L.scan(BUILD)
    local none = {}
    for f in pairs(includes) do if not L.layer_of(f) then none[#none + 1] = f end end
    assert.are.same({}, none)
  end)
end)

describe("the layering check", function()
  -- A small tree: a .c includes its .h, nothing else.
  local function tree(extra)
    local inc = {
      ["src/core/loop.c"] = { quoted = { "src/core/loop.h" }, system = {} },
      ["src/core/loop.h"] = { quoted = {}, system = { "uv.h" } },
      ["src/core/sandbox.c"] = { quoted = { "src/core/provider.h" }, system = {} },
      ["src/core/provider.h"] = { quoted = { "src/core/sandbox.h" }, system = {} },
      ["src/core/sandbox.h"] = { quoted = { "src/core/loop.h" }, system = {} },
      ["src/core/providers/a/a.c"] = { quoted = { "src/core/provider.h" }, system = {} },
      ["src/core/providers/b/b.c"] = { quoted = { "src/core/provider.h" }, system = {} },
      ["src/lua/x.c"] = { quoted = { "src/core/sandbox.h" }, system = { "lua.h" } },
    }
    local calls = {
      ["src/core/sandbox.c"] = { "src/core/loop.c" },
      ["src/core/providers/a/a.c"] = { "src/core/sandbox.c" },
      ["src/lua/x.c"] = { "src/core/sandbox.c" },
    }
    extra(inc, calls)
    return L.check(inc, calls)
  end
  local function one(problems, text)
    assert.equal(1, #problems, table.concat(problems, "\n"))
    assert.truthy(problems[1]:find(text, 1, true), problems[1])
  end

  it("accepts the small tree", function()
    assert.are.same({}, tree(function() end))
  end)

  it("reports a call up from a lower layer", function()
    one(tree(function(_, calls) calls["src/core/loop.c"] = { "src/core/providers/b/b.c" } end),
      "src/core/loop.c (loop) calls src/core/providers/b/b.c (providers): up")
  end)

  it("reports an include up from a lower layer", function()
    one(tree(function(inc) table.insert(inc["src/core/loop.h"].quoted, "src/core/provider_ops.h") end),
      "src/core/loop.h (loop) includes src/core/provider_ops.h (sandbox): up")
  end)

  it("reports Lua in the core", function()
    one(tree(function(inc) table.insert(inc["src/core/sandbox.c"].system, "lauxlib.h") end),
      "src/core/sandbox.c includes <lauxlib.h>: the core has no Lua")
  end)

  it("reports a provider reaching into another", function()
    one(tree(function(_, calls) calls["src/core/providers/b/b.c"] = { "src/core/providers/a/a.c" } end),
      "src/core/providers/b/b.c calls src/core/providers/a/a.c: a provider reaches into another")
  end)

  it("reports the binding using a provider's side", function()
    one(tree(function(inc) table.insert(inc["src/lua/x.c"].quoted, "src/core/provider.h") end),
      "src/lua/x.c includes src/core/provider.h: the binding uses sandbox.h")
  end)

  it("reports an #include cycle", function()
    local problems = tree(function(inc) table.insert(inc["src/core/sandbox.h"].quoted, "src/core/provider.h") end)
    one(problems, "an #include cycle: src/core/provider.h -> src/core/sandbox.h")
  end)

  it("reports a call cycle unless it is a declared unit", function()
    one(tree(function(_, calls) calls["src/core/providers/a/a.c"] = { "src/core/providers/a/a2.c" }
      calls["src/core/providers/a/a2.c"] = { "src/core/providers/a/a.c" } end),
      "a call cycle that is no declared unit: src/core/providers/a/a.c <-> src/core/providers/a/a2.c")
    assert.are.same({}, tree(function(_, calls)
      calls["src/core/providers/platform/platform.c"] = { "src/core/providers/platform/platform_exec.c" }
      calls["src/core/providers/platform/platform_exec.c"] = { "src/core/providers/platform/platform.c" }
    end))
  end)

  it("reports what proc_opts.h ended: child.h including proc.h for sk_proc_opts", function()
    one(tree(function(inc) inc["src/core/child.h"] = { quoted = { "src/core/proc.h" }, system = {} } end),
      "src/core/child.h (system) includes src/core/proc.h (process): up")
  end)

  it("resolves includes from the including file's folder", function()
    local inc = L.includes("src/core/providers/modal/modal.c", '#include "../../provider.h"\n#include <uv.h>\n'
      .. '#include "modal_state.h"\n')
    assert.are.same({ "src/core/provider.h", "src/core/providers/modal/modal_state.h" }, inc.quoted)
    assert.are.same({ "uv.h" }, inc.system)
  end)
end)
