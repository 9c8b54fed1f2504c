-- The rockspecs list their sources one by one (a rockspec cannot glob);
-- `make generated` writes the lists (spec/generated_spec.lua checks they are
-- current). These checks fail when a C file under src/ or a Lua module under
-- lua/ is missing from them anyway, or when a listed file no longer exists.
-- Both the development rockspec (scm) and the release one are checked, and
-- the release one must build exactly what the development one builds.
local VERSION = require "sandkit.version"
local sh = require "helpers.sh"
local SCM = "rockspec/sandkit-scm-1.rockspec"
local RELEASE = "rockspec/sandkit-" .. VERSION .. "-1.rockspec"

local function load_rockspec(path)
  local env = {}
  local chunk = assert(loadfile(path, "t", env))
  chunk()
  return env
end

local function set_of(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() end
  return f ~= nil
end

for _, ROCKSPEC in ipairs({ SCM, RELEASE }) do
  describe(ROCKSPEC, function()
    local spec = load_rockspec(ROCKSPEC)
    local modules = spec.build.modules
    local core = modules["sandkit.core"]

    it("is a builtin build of sandkit.core with the libraries and _GNU_SOURCE", function()
      assert.are.equal("sandkit", spec.package)
      assert.are.equal("builtin", spec.build.type)
      assert.is_table(core)
      assert.are.same({ "uv", "curl", "jansson", "websockets", "crypto", "archive", "m" }, core.libraries)
      assert.is_truthy(set_of(core.defines)["_GNU_SOURCE"])
      assert.is_truthy(set_of(core.incdirs)["src/core"])
      assert.are.equal("bin/sandkit", spec.build.install.bin.sandkit)
    end)

    it("lists every .c file under src/", function()
      local listed = set_of(core.sources)
      local missing = {}
      for _, f in ipairs(sh.lines("find src -name '*.c' -type f | sort")) do
        if not listed[f] then missing[#missing + 1] = f end
      end
      assert.are.same({}, missing, "add these to " .. ROCKSPEC .. ": " .. table.concat(missing, ", "))
    end)

    it("lists only C files that exist, once each", function()
      local seen, gone, twice = {}, {}, {}
      for _, f in ipairs(core.sources) do
        if seen[f] then twice[#twice + 1] = f end
        seen[f] = true
        if not exists(f) then gone[#gone + 1] = f end
      end
      assert.are.same({}, gone)
      assert.are.same({}, twice)
    end)

    it("installs every Lua module under lua/ under its module name", function()
      local missing = {}
      for _, f in ipairs(sh.lines("find lua -name '*.lua' -type f | sort")) do
        local name = f:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
        if modules[name] ~= f then missing[#missing + 1] = ('["%s"] = "%s"'):format(name, f) end
      end
      assert.are.same({}, missing, "add these to " .. ROCKSPEC .. ": " .. table.concat(missing, ", "))
    end)

    it("lists only Lua modules that exist", function()
      local gone = {}
      for name, f in pairs(modules) do
        if type(f) == "string" and not exists(f) then gone[#gone + 1] = name .. " = " .. f end
      end
      assert.are.same({}, gone)
      assert.is_true(exists(spec.build.install.bin.sandkit))
    end)

    it("passes luarocks lint", function()
      local ok = os.execute("luarocks --lua-version=5.4 lint " .. ROCKSPEC .. " >/dev/null 2>&1")
      assert.is_true(ok == true, "luarocks lint " .. ROCKSPEC .. " failed")
    end)
  end)
end

describe("the release rockspec", function()
  local scm, rel = load_rockspec(SCM), load_rockspec(RELEASE)
  local LIBS = { "LIBUV", "LIBCURL", "JANSSON", "LIBWEBSOCKETS", "OPENSSL", "LIBARCHIVE" }

  it("builds the same modules as the development rockspec", function()
    assert.are.same(scm.build, rel.build)
    assert.are.same(scm.dependencies, rel.dependencies)
    assert.are.same(scm.external_dependencies, rel.external_dependencies)
  end)

  it("builds from the make dist tarball, not from a git URL", function()
    assert.are.equal("sandkit-" .. VERSION .. ".tar.gz", rel.source.url)
    assert.are.equal("sandkit-" .. VERSION, rel.source.dir)
  end)

  it("declares each C library for linux and macosx", function()
    local ext = rel.external_dependencies
    for _, platform in ipairs({ "linux", "macosx" }) do
      local p = ext.platforms and ext.platforms[platform]
      assert.is_table(p, "no external_dependencies.platforms." .. platform)
      for _, name in ipairs(LIBS) do
        local dep = p[name] or ext[name]
        assert.is_table(dep, platform .. ": " .. name)
        assert.is_string(dep.library, platform .. ": " .. name)
      end
    end
    for _, name in ipairs(LIBS) do
      assert.is_string(ext.platforms.macosx[name].header, "macosx: " .. name .. " has no header to find")
    end
    -- every $(X_INCDIR) and $(X_LIBDIR) the build uses is declared for both
    local core = rel.build.modules["sandkit.core"]
    for _, list in ipairs({ core.incdirs, core.libdirs }) do
      for _, d in ipairs(list) do
        local var = d:match("^%$%(([%w_]+)_INCDIR%)$") or d:match("^%$%(([%w_]+)_LIBDIR%)$")
        if var then
          for _, platform in ipairs({ "linux", "macosx" }) do
            assert.is_table(ext.platforms[platform][var] or ext[var], platform .. ": " .. var)
          end
        end
      end
    end
  end)

  it("lists busted as a test dependency", function()
    assert.are.same({ "busted" }, rel.test_dependencies)
  end)

  it("never asks for -Werror (a user's compiler may warn)", function()
    for _, path in ipairs({ SCM, RELEASE }) do
      local f = assert(io.open(path))
      local text = f:read("a"):gsub("%-%-[^\n]*", "") -- comments may mention it
      f:close()
      assert.is_falsy(text:find("Werror", 1, true), path)
    end
  end)
end)

-- README.md's apt-get line for a rock-only install names the Debian package
-- of every header, library and tool that build and its commands need.
describe("README's packages for a rock-only install", function()
  local readme = assert(io.open("README.md")):read("a")
  local line = readme:match("apt%-get install %-y (build%-essential[^\n]*\\?\n?[^\n`]*)")
  local listed = {}
  for word in (line or ""):gmatch("[%w%.%+%-]+") do listed[word] = true end
  local have_dpkg = os.execute("command -v dpkg >/dev/null 2>&1") == true
  ;(have_dpkg and it or pending)("include the package of each file the build and the commands need", function()
    assert.is_truthy(line, "no `apt-get install -y build-essential ...` line in README.md")
    assert.is_true(listed["build-essential"])
    for _, file in ipairs({ "/usr/include/uv.h", "/usr/include/jansson.h", "/usr/include/libwebsockets.h",
      "/usr/include/openssl/evp.h", "/usr/include/archive.h", "*/curl/curl.h", "/usr/include/lua5.4/lua.h", "*/libwebsockets-evlib_uv.so",
      "/usr/bin/luarocks", "/usr/bin/lua5.4", "/usr/bin/bwrap" }) do
      local p = assert(io.popen("dpkg -S '" .. file .. "' 2>/dev/null"))
      local owner = (p:read("l") or ""):match("^([^:,]+)")
      p:close()
      assert.is_truthy(owner, "no installed package holds " .. file)
      assert.is_true(listed[owner] == true, owner .. " (" .. file .. ") is not in README.md's list: " .. tostring(line))
    end
  end)
end)
