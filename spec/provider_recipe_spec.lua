-- Adding a provider is its folder and one registry line
-- (docs/architecture.md §"Adding a provider"), checked by doing it: a copy of the tree gets the
-- throwaway provider of spec/fixtures/provider_fixture/ as
-- src/core/providers/fixture/ and the line SK_PROVIDER(fixture) in
-- providers.def, nothing else; then its build has the provider in
-- sandkit.providers(), a constructor, sb.fs through the backend its
-- descriptor names, the CLI (`sandkit providers`, its flag on `exec`),
-- and `make generated` puts it in the LuaLS stub and the rockspecs.
local tmp = require "helpers.tmp"
local sh = require "helpers.sh"
local q, run = sh.quote, sh.run

teardown(tmp.cleanup)

local TIMEOUT = "timeout -k 10 600 "

describe("adding a provider: its folder and one registry line", function()
  local root, build_code, build_out

  setup(function()
    root = tmp.dir() .. "/tree"
    -- the build's objects come along (times kept), so only what the
    -- recipe touches is compiled again
    assert(os.execute(("mkdir -p %s/build && cp -a Makefile mk src lua bin tools rockspec docs README.md %s/"
      .. " && { [ ! -d build/obj ] || cp -a build/obj %s/build/; }"
      .. " && { [ ! -d build/gen ] || cp -a build/gen %s/build/; }"):format(q(root), q(root), q(root), q(root))))
    assert(os.execute(("cp -a spec/fixtures/provider_fixture %s/src/core/providers/fixture"
      .. " && echo 'SK_PROVIDER(fixture)' >> %s/src/core/providers/providers.def"):format(q(root), q(root))))
    build_code, build_out = run(("cd %s && %s make build/sandkit/core.so 2>&1"):format(q(root), TIMEOUT))
  end)

  -- Runs cmd in the copy with its module and core on the paths.
  local function in_copy(cmd)
    return run(("cd %s && env LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH='build/?.so;;' %s%s"):format(
      q(root), TIMEOUT, cmd))
  end

  it("builds, compiling only the registry and the new folder", function()
    assert.equal(0, build_code, build_out)
    local compiled = {}
    for f in build_out:gmatch("%-c (%S+%.c)") do compiled[#compiled + 1] = f end
    table.sort(compiled)
    -- when the build's objects were there to copy and current (make -q:
    -- nothing to do), nothing else was compiled
    if os.execute("make -s -q build/sandkit/core.so >/dev/null 2>&1") == true then
      assert.are.same({ "src/core/providers/fixture/fixture.c", "src/core/providers/registry.c" }, compiled)
    end
  end)

  it("is in sandkit.providers(), with a constructor, its options and its filesystem", function()
    assert.equal(0, build_code, build_out)
    local code, out = in_copy("lua5.4 -e " .. q([[
      local sandkit = require "sandkit"
      local p
      for _, d in ipairs(sandkit.providers()) do if d.id == "fixture" then p = d end end
      assert(p, "no fixture in sandkit.providers()")
      assert(p.name == "FixtureSandbox" and p.options.greeting.default == "hello" and p.filesystem == "exec")
      assert(p.capabilities.reconnection == false and p.capabilities.stdin == false and p.capabilities.streaming)
      local sb <close> = sandkit.FixtureSandbox { greeting = "bonjour" }
      assert(sb:start())
      io.write(assert(sb:exec("echo $FIXTURE_GREETING")).stdout)
      assert(sb.fs:write_file("recipe-file.txt", "through the exec backend"))
      io.write(assert(sb.fs:read_file("recipe-file.txt")), "\n")
      io.write(sb:info().metadata.greeting, "\n")
      assert(sandkit.new("fixture", {}):start())
      local ok, err = pcall(sandkit.FixtureSandbox, { greeting = "hi" })
      io.write(tostring(ok), " ", err.kind, "\n")
    ]]))
    assert.equal(0, code, out)
    assert.equal("bonjour\nthrough the exec backend\nbonjour\nfalse ConfigError\n", out)
  end)

  it("is in the CLI: `sandkit providers`, and its flag on exec", function()
    assert.equal(0, build_code, build_out)
    local code, out = in_copy("lua5.4 bin/sandkit providers")
    assert.equal(0, code, out)
    assert.truthy(out:find("\nfixture%s+FixtureSandbox%s+A throwaway provider"), out)
    code, out = in_copy("lua5.4 bin/sandkit providers fixture")
    assert.equal(0, code, out)
    assert.truthy(out:find("greeting", 1, true), out)
    code, out = in_copy("lua5.4 bin/sandkit exec --provider fixture --greeting bonjour -- 'echo $FIXTURE_GREETING'")
    assert.equal(0, code, out)
    assert.equal("bonjour\n", out)
    code, out = in_copy("lua5.4 bin/sandkit --help")
    assert.truthy(out:find("  --greeting WORD     fixture: what FIXTURE_GREETING says\n", 1, true), out)
    code, out = in_copy("lua5.4 bin/sandkit exec --greeting bonjour -- true")
    assert.equal(2, code, out)
    assert.truthy(out:find("--greeting applies to --provider fixture only", 1, true), out)
    code, out = in_copy("lua5.4 bin/sandkit exec --provider fixture --greeting hi -- true")
    assert.equal(2, code, out)
    assert.truthy(out:find("--greeting expects hello or bonjour (got 'hi')", 1, true), out)
  end)

  it("is in the generated stub and rockspecs after `make generated`, and the rest stays as it was", function()
    assert.equal(0, build_code, build_out)
    local code, out = run(("cd %s && %s make -s generated 2>&1"):format(q(root), TIMEOUT))
    assert.equal(0, code, out)
    local read = require("helpers.files").read
    local stub = read(root .. "/docs/sandkit.meta.lua")
    assert.truthy(stub:find("---@class sandkit.FixtureSandboxOptions: sandkit.SandboxOptions", 1, true))
    assert.truthy(stub:find('---@field greeting? "hello"|"bonjour" Given to every command as FIXTURE_GREETING. Default: hello.', 1, true))
    assert.truthy(stub:find("---@param opts? sandkit.FixtureSandboxOptions\n---@return sandkit.Sandbox\nfunction sandkit.FixtureSandbox(opts) end", 1, true))
    assert.truthy(stub:find('\n%-%-%-@alias sandkit.ProviderId "local"[^\n]*|"fixture"\n'))
    for _, rs in ipairs({ "sandkit-scm-1.rockspec", "sandkit-" .. require("sandkit.version") .. "-1.rockspec" }) do
      local text = read(root .. "/rockspec/" .. rs)
      assert.truthy(text:find('"src/core/providers/fixture/fixture.c",', 1, true), rs)
      assert.truthy(text:find('["sandkit.providers.fixture"] = "src/core/providers/fixture/provider.lua",', 1, true), rs)
    end
    -- docs/providers.md has no section for it: nothing there changed
    assert.equal(read("docs/providers.md"), read(root .. "/docs/providers.md"))
  end)
end)
