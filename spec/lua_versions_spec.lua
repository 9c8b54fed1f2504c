-- One source for Lua 5.4, 5.3, 5.1 and LuaJIT 2.1 (docs/lua-versions.md):
-- tools/lua_subset.lua, under each interpreter, rejects what one of them
-- would not read alike.
local sh = require "helpers.sh"
local tmp = require "helpers.tmp"

local q = sh.quote
local INTERPRETERS = { "luajit", "lua5.1", "lua5.3", "lua5.4" }

-- Runs tools/lua_subset.lua under `lua` on `files`; exit code and output.
local function subset(lua, files)
  local words = {}
  for i, f in ipairs(files) do words[i] = q(f) end
  return sh.run(lua .. " tools/lua_subset.lua " .. table.concat(words, " "))
end

local function write(dir, name, s)
  local f = assert(io.open(dir .. "/" .. name, "wb"))
  f:write(s)
  f:close()
  return dir .. "/" .. name
end

-- What every interpreter loads: the modules the rock installs, the CLI,
-- the examples, and the generator the build runs under $(LUA).
local function portable_files()
  local files = { "bin/sandkit", "tools/modal_gen.lua", "tools/lua_subset.lua" }
  local f = assert(io.open("rockspec/sandkit-scm-1.rockspec"))
  local rockspec = f:read("*a")
  f:close()
  for path in rockspec:gmatch('%] = "([^"]+%.lua)"') do files[#files + 1] = path end
  local p = assert(io.popen("ls examples/*.lua"))
  for path in p:lines() do files[#files + 1] = path end
  p:close()
  return files
end

describe("the library", function()
  it("is in the subset under every interpreter: modules, CLI, examples, build-time generator", function()
    local files = portable_files()
    assert.is_true(#files > 30, "the rockspec lists the modules: " .. #files)
    for _, lua in ipairs(INTERPRETERS) do
      local code, out = subset(lua, files)
      assert.are.equal(0, code, lua .. ": " .. out)
    end
  end)
end)

describe("tools/lua_subset.lua", function()
  local dir
  before_each(function() dir = tmp.dir() end)
  after_each(function() tmp.cleanup() end)

  it("passes a file every version reads alike", function()
    local clean = write(dir, "clean.lua", "#!/usr/bin/env lua\n" ..
      "local t = { 1 }\n-- \\x in a comment\nlocal s = [[\\x41]]\n" ..
      "return #t, s, \"a\\\"b\\n\\65\\\\\", 'it\\'s', math.floor(7 / 2)\n")
    for _, lua in ipairs(INTERPRETERS) do
      local code, out = subset(lua, { clean })
      assert.are.equal(0, code, lua .. ": " .. out)
      assert.are.equal("", out)
    end
  end)

  it("rejects 5.4-only syntax under 5.1 and LuaJIT, naming file and line", function()
    local idiv = write(dir, "idiv.lua", "local a = 1\nreturn 7 // 2\n")
    local close = write(dir, "close.lua", "local x <close> = nil\n")
    local const = write(dir, "const.lua", "local x <const> = 1\n")
    local band = write(dir, "band.lua", "return 6 & 3\n")
    for _, lua in ipairs({ "luajit", "lua5.1" }) do
      local code, out = subset(lua, { idiv, close, const, band })
      assert.are.equal(1, code, lua .. ": " .. out)
      assert.truthy(out:find(idiv .. ":2: unexpected symbol near '/'", 1, true), lua .. ": " .. out)
      assert.truthy(out:find(close .. ":1: ", 1, true), lua .. ": " .. out)
      assert.truthy(out:find(const .. ":1: ", 1, true), lua .. ": " .. out)
      assert.truthy(out:find(band .. ":1: ", 1, true), lua .. ": " .. out)
    end
  end)

  it("rejects goto under 5.1", function()
    local f = write(dir, "goto.lua", "for i = 1, 2 do\n  goto next\n  ::next::\nend\n")
    local code, out = subset("lua5.1", { f })
    assert.are.equal(1, code, out)
    assert.truthy(out:find(f .. ":2: ", 1, true), out)
  end)

  it("rejects under 5.1 and LuaJIT the library functions they lack, and 5.1's read formats", function()
    local f = write(dir, "lib.lua", "local t = table.unpack({ 1 })\nlocal i = math.type(1)\n" ..
      "local s = io.read('a')\n-- table.move in a comment\nlocal m = 'math.ult in a string'\n" ..
      "local ok = math.type and math.type(1) -- lua_subset: feature-tested\nreturn rawlen\n")
    for _, lua in ipairs({ "luajit", "lua5.1" }) do
      local code, out = subset(lua, { f })
      assert.are.equal(1, code, lua .. ": " .. out)
      assert.truthy(out:find(f .. ":1: table.unpack is not in Lua 5.1", 1, true), lua .. ": " .. out)
      assert.truthy(out:find(f .. ":2: math.type is not in Lua 5.1", 1, true), lua .. ": " .. out)
      assert.truthy(out:find(f .. ":3: format \"a\": Lua 5.1 knows only \"*a\"", 1, true), lua .. ": " .. out)
      assert.truthy(out:find(f .. ":7: rawlen is not in Lua 5.1", 1, true), lua .. ": " .. out)
      assert.falsy(out:find(":[456]: "), lua .. ": " .. out)
    end
  end)

  it("rejects, under every version, the escapes 5.1 reads as a plain letter", function()
    local f = write(dir, "esc.lua", "local a = 'ok'\nlocal b = \"\\x41\"\nlocal c = '\\z  '\nreturn a, b, c, \"\\u{48}\"\n")
    for _, lua in ipairs(INTERPRETERS) do
      local code, out = subset(lua, { f })
      assert.are.equal(1, code, lua .. ": " .. out)
      assert.truthy(out:find(f .. ":2: escape \\x: Lua 5.1 reads it as \"x\"", 1, true), lua .. ": " .. out)
      assert.truthy(out:find(f .. ":3: escape \\z", 1, true), lua .. ": " .. out)
      assert.truthy(out:find(f .. ":4: escape \\u", 1, true), lua .. ": " .. out)
    end
  end)
end)
