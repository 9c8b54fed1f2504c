-- Builds and installs the rock into a temporary luarocks tree with `make
-- rock LUAROCKS_FLAGS=--tree=...` (which builds in a copy of the sources,
-- so no .o file or core.so lands in the work tree), then runs the installed
-- module and the installed `sandkit` command from there, with no LUA_PATH
-- pointing at the source tree. Compiles C: each external command runs
-- under a generous timeout(1) (10 minutes).
local TIMEOUT = "timeout -k 10 600 "

local sh = require "helpers.sh"
local q, run = sh.quote, sh.run

local mktemp = require("helpers.tmp").mktemp

-- Build products of a luarocks build in the work tree (outside build/).
local function build_litter()
  local _, out = run("find . -path './build*' -prune -o -path '*/node_modules' -prune -o \\( -name '*.o' -o -name 'core.so' \\) -print")
  local list = {}
  for line in out:gmatch("[^\n]+") do list[#list + 1] = line end
  table.sort(list)
  return list
end

describe("the rock", function()
  local tmp, tree, lua_path, lua_cpath
  local build_code, build_out, litter_before

  setup(function()
    tmp = mktemp()
    tree = tmp .. "/tree"
    litter_before = build_litter()
    build_code, build_out = run(TIMEOUT .. "make --no-print-directory rock LUAROCKS_FLAGS=--tree=" .. q(tree))
    lua_path = table.concat({ tree .. "/share/lua/5.4/?.lua", tree .. "/share/lua/5.4/?/init.lua" }, ";") .. ";;"
    lua_cpath = tree .. "/lib/lua/5.4/?.so;;"
  end)

  teardown(function()
    if tmp then os.execute("rm -rf " .. q(tmp)) end
  end)

  -- Runs cmd in a scratch directory with only the installed tree on the paths.
  local function installed(cmd)
    return run("cd " .. q(tmp) .. " && env LUA_PATH=" .. q(lua_path) .. " LUA_CPATH=" .. q(lua_cpath) ..
      " " .. TIMEOUT .. cmd)
  end

  it("make rock builds in a copy: no .o file or core.so is left in the work tree", function()
    assert.are.equal(0, build_code, build_out)
    assert.are.same(litter_before, build_litter())
  end)

  it("installs the examples and the LuaLS stub in the rock's directory", function()
    assert.are.equal(0, build_code, build_out)
    local rock_dir = tree .. "/lib/luarocks/rocks-5.4/sandkit/scm-1"
    assert.is_truthy(io.open(rock_dir .. "/docs/sandkit.meta.lua")):close()
    assert.is_truthy(io.open(rock_dir .. "/examples/demo.lua")):close()
    -- where README.md tells the reader to look
    local code, out = run("luarocks --lua-version=5.4 --tree=" .. q(tree) .. " show --rock-dir sandkit")
    assert.are.equal(0, code, out)
    assert.are.equal(rock_dir, (out:gsub("%s+$", "")))
  end)

  it("builds and installs with luarocks make (C11)", function()
    assert.are.equal(0, build_code, build_out)
    assert.is_truthy(build_out:find("-std=c11", 1, true), "the compiler was not given -std=c11")
    assert.is_truthy(io.open(tree .. "/lib/lua/5.4/sandkit/core.so")):close()
    assert.is_truthy(io.open(tree .. "/share/lua/5.4/sandkit/init.lua")):close()
    assert.is_truthy(io.open(tree .. "/share/lua/5.4/sandkit/cli.lua")):close()
    assert.is_truthy(io.open(tree .. "/bin/sandkit")):close()
  end)

  it("exports the module's entry point alone (-fvisibility=hidden)", function()
    assert.are.equal(0, build_code, build_out)
    local code, out = run("nm -D --defined-only " .. q(tree .. "/lib/lua/5.4/sandkit/core.so"))
    assert.are.equal(0, code, out)
    local names = {}
    for name in out:gmatch("%S+ %a (%S+)") do names[#names + 1] = name end
    assert.are.same({ "luaopen_sandkit_core" }, names)
  end)

  it("loads the installed module, not the source tree's, and runs a command", function()
    assert.are.equal(0, build_code, build_out)
    local code, out = installed("lua5.4 -e " .. q([[
      local where = package.searchpath("sandkit.core", package.cpath)
      local sandkit = require "sandkit"
      local sb = sandkit.LocalSandbox { working_directory = "ws" }
      io.write(where, "\n", sb:exec("echo ok").stdout)
      sb:destroy()
    ]]))
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find(tree .. "/lib/lua/5.4/sandkit/core.so", 1, true), out)
    assert.is_truthy(out:find("\nok\n", 1, true), out)
  end)

  it("installs the sandkit command, which runs with LUA_PATH unset", function()
    assert.are.equal(0, build_code, build_out)
    local code, out = run("cd " .. q(tmp) .. " && env -u LUA_PATH -u LUA_CPATH " .. TIMEOUT ..
      q(tree .. "/bin/sandkit") .. " exec -- echo hi")
    assert.are.equal(0, code, out)
    assert.are.equal("hi\n", out)
    code, out = installed(q(tree .. "/bin/sandkit") .. " exec -- 'exit 7'")
    assert.are.equal(7, code, out)
    code, out = installed(q(tree .. "/bin/sandkit") .. " fleet 3 -- true")
    assert.are.equal(0, code, out)
    assert.is_truthy(out:find("3 sandboxes: 3 ok, 0 failed", 1, true), out)
  end)
end)

-- The same rock for Lua 5.1 and LuaJIT (`make rock LUA=luajit`: luarocks
-- --lua-version=5.1, LuaJIT's version), loaded by both interpreters.
describe("the rock for Lua 5.1 and LuaJIT", function()
  local tmp, tree, build_code, build_out

  setup(function()
    tmp = mktemp()
    tree = tmp .. "/tree"
    build_code, build_out = run(TIMEOUT .. "make --no-print-directory rock LUA=luajit LUAROCKS_FLAGS=--tree=" .. q(tree))
  end)

  teardown(function()
    if tmp then os.execute("rm -rf " .. q(tmp)) end
  end)

  it("builds for 5.1 and runs a command under LuaJIT and under Lua 5.1", function()
    assert.are.equal(0, build_code, build_out)
    assert.is_truthy(io.open(tree .. "/lib/lua/5.1/sandkit/core.so")):close()
    local env = "cd " .. q(tmp) .. " && env LUA_PATH=" .. q(tree .. "/share/lua/5.1/?.lua;" .. tree ..
      "/share/lua/5.1/?/init.lua;;") .. " LUA_CPATH=" .. q(tree .. "/lib/lua/5.1/?.so;;") .. " " .. TIMEOUT
    for _, lua in ipairs({ "luajit", "lua5.1" }) do
      local code, out = run(env .. lua .. " -e " .. q([[
        local where = package.searchpath and package.searchpath("sandkit.core", package.cpath)
        local sandkit = require "sandkit"
        local sb = sandkit.LocalSandbox { working_directory = "ws" }
        io.write(_VERSION, " ", tostring(rawget(_G, "jit") ~= nil), "\n", sb:exec("echo ok").stdout)
        sb:destroy()
      ]]))
      assert.are.equal(0, code, lua .. ": " .. out)
      assert.is_truthy(out:find("^Lua 5%.1 " .. tostring(lua == "luajit") .. "\nok\n$"), lua .. ": " .. out)
    end
  end)

  it("installs the sandkit command, which runs with LUA_PATH unset", function()
    assert.are.equal(0, build_code, build_out)
    local code, out = run("cd " .. q(tmp) .. " && env -u LUA_PATH -u LUA_CPATH " .. TIMEOUT ..
      q(tree .. "/bin/sandkit") .. " exec -- 'echo hi; exit 7'")
    assert.are.equal(7, code, out)
    assert.are.equal("hi\n", out)
  end)
end)

-- The release: `make dist` (tarball, rockspec, .src.rock), then
-- `luarocks install ./sandkit-<v>-1.src.rock` from an empty directory into
-- a fresh tree, with the tarball gone (the rock carries its sources).
local in_git = os.execute("git rev-parse --is-inside-work-tree >/dev/null 2>&1")
if not in_git then
  pending("the release rock: make dist needs a git checkout (git archive)")
  return
end

describe("the release rock", function()
  local VERSION = require "sandkit.version"
  local tmp, tree, dist_code, dist_out, install_code, install_out
  local rock

  setup(function()
    tmp = mktemp()
    tree = tmp .. "/tree"
    local dist = tmp .. "/dist"
    rock = dist .. "/sandkit-" .. VERSION .. "-1.src.rock"
    -- uncommitted changes to tracked files are part of what is tested
    dist_code, dist_out = run("ref=$(git stash create 2>/dev/null); " .. TIMEOUT ..
      "make --no-print-directory dist DIST_DIR=" .. q(dist) .. " DIST_REF=${ref:-HEAD}")
    os.remove(dist .. "/sandkit-" .. VERSION .. ".tar.gz")
    assert(os.execute("mkdir -p " .. q(tmp .. "/empty")))
    install_code, install_out = run("cd " .. q(tmp .. "/empty") .. " && " .. TIMEOUT ..
      "luarocks --lua-version=5.4 --tree=" .. q(tree) .. " install --deps-mode=none " .. q(rock))
  end)

  teardown(function()
    if tmp then os.execute("rm -rf " .. q(tmp)) end
  end)

  local function installed(cmd)
    return run("cd " .. q(tmp .. "/empty") .. " && env LUA_PATH=" ..
      q(tree .. "/share/lua/5.4/?.lua;" .. tree .. "/share/lua/5.4/?/init.lua;;") ..
      " LUA_CPATH=" .. q(tree .. "/lib/lua/5.4/?.so;;") .. " " .. TIMEOUT .. cmd)
  end

  it("make dist writes the tarball, the rockspec and the .src.rock", function()
    assert.are.equal(0, dist_code, dist_out)
    assert.is_truthy(io.open(rock)):close()
    local code, listing = run("unzip -l " .. q(rock))
    assert.are.equal(0, code, listing)
    assert.is_truthy(listing:find("sandkit-" .. VERSION .. "-1.rockspec", 1, true), listing)
    assert.is_truthy(listing:find("sandkit-" .. VERSION .. ".tar.gz", 1, true), listing)
  end)

  it("installs offline from the .src.rock alone, without -Werror", function()
    assert.are.equal(0, install_code, install_out)
    assert.is_truthy(install_out:find("sandkit " .. VERSION .. "-1 is now installed", 1, true), install_out)
    assert.is_falsy(install_out:find("-Werror", 1, true), "a user's build must not use -Werror")
    assert.is_truthy(io.open(tree .. "/lib/lua/5.4/sandkit/core.so")):close()
    assert.is_truthy(io.open(tree .. "/lib/luarocks/rocks-5.4/sandkit/" .. VERSION ..
      "-1/docs/sandkit.meta.lua")):close()
    assert.is_truthy(io.open(tree .. "/lib/luarocks/rocks-5.4/sandkit/" .. VERSION ..
      "-1/examples/demo.lua")):close()
  end)

  it("runs the installed module and command at the release version", function()
    assert.are.equal(0, install_code, install_out)
    local code, out = installed("lua5.4 -e " .. q([[
      local sandkit = require "sandkit"
      local sb = sandkit.LocalSandbox { working_directory = "ws" }
      io.write(sandkit._VERSION, " ", sb:exec("echo ok").stdout)
      sb:destroy()
    ]]))
    assert.are.equal(0, code, out)
    assert.are.equal(VERSION .. " ok\n", out)
    code, out = run("cd " .. q(tmp .. "/empty") .. " && env -u LUA_PATH -u LUA_CPATH " .. TIMEOUT ..
      q(tree .. "/bin/sandkit") .. " --version")
    assert.are.equal(0, code, out)
    assert.are.equal("sandkit " .. VERSION .. "\n", out)
  end)
end)
