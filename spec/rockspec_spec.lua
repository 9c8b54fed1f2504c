-- The rockspec lists its sources one by one (a rockspec cannot glob): these
-- checks fail when a C file under src/ or a Lua module under lua/ is added
-- without its rockspec line, or when a listed file no longer exists.
local ROCKSPEC = "rockspec/sandkit-scm-1.rockspec"

local function load_rockspec()
  local env = {}
  local chunk = assert(loadfile(ROCKSPEC, "t", env))
  chunk()
  return env
end

local function lines_of(cmd)
  local p = assert(io.popen(cmd))
  local out = {}
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  table.sort(out)
  return out
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

describe("rockspec", function()
  local spec = load_rockspec()
  local modules = spec.build.modules
  local core = modules["sandkit.core"]

  it("is a builtin build of sandkit.core with the libraries and _GNU_SOURCE", function()
    assert.are.equal("sandkit", spec.package)
    assert.are.equal("builtin", spec.build.type)
    assert.is_table(core)
    assert.are.same({ "uv", "curl", "jansson", "websockets", "protobuf-c", "m" }, core.libraries)
    assert.is_truthy(set_of(core.defines)["_GNU_SOURCE"])
    assert.is_truthy(set_of(core.incdirs)["src/core"])
    assert.are.equal("bin/sandkit", spec.build.install.bin.sandkit)
  end)

  it("lists every .c file under src/", function()
    local listed = set_of(core.sources)
    local missing = {}
    for _, f in ipairs(lines_of("find src -name '*.c' -type f")) do
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
    for _, f in ipairs(lines_of("find lua -name '*.lua' -type f")) do
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
