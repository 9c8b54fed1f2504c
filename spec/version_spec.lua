-- The version is written once (lua/sandkit/version.lua); sandkit._VERSION,
-- `sandkit --version`, the release rockspec and the changelog agree with it
-- (issue 12, item 13), and LICENSE is the MIT licence the rockspec names.
local ROOT = os.getenv("R") or "."

local function read(path)
  local f = assert(io.open(ROOT .. "/" .. path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

local sh = require "helpers.sh"
local q, run = sh.quote, sh.run

local function load_rockspec(path)
  local env = {}
  assert(loadfile(ROOT .. "/" .. path, "t", env))()
  return env
end

describe("version", function()
  local version = require "sandkit.version"

  it("is a semantic version string", function()
    assert.is_string(version)
    assert.truthy(version:match("^%d+%.%d+%.%d+$") or version:match("^%d+%.%d+%.%d+%-[%w%.]+$"), version)
  end)

  it("is sandkit._VERSION", function()
    assert.are.equal(version, require("sandkit")._VERSION)
  end)

  it("is what `sandkit --version` prints", function()
    local code, out = run("cd " .. q(ROOT) .. " && lua5.4 bin/sandkit --version")
    assert.are.equal(0, code, out)
    assert.are.equal("sandkit " .. version .. "\n", out)
  end)

  it("names the one release rockspec, whose version it is", function()
    local p = assert(io.popen("ls " .. q(ROOT .. "/rockspec")))
    local releases = {}
    for name in p:lines() do
      if name ~= "sandkit-scm-1.rockspec" then releases[#releases + 1] = name end
    end
    p:close()
    assert.are.same({ "sandkit-" .. version .. "-1.rockspec" }, releases)
    local spec = load_rockspec("rockspec/" .. releases[1])
    assert.are.equal("sandkit", spec.package)
    assert.are.equal(version .. "-1", spec.version)
    assert.are.equal("sandkit-" .. version, spec.source.dir)
  end)

  it("is written nowhere else in the code", function()
    local code, out = run("cd " .. q(ROOT) .. " && grep -rnF " .. q('"' .. version .. '"') ..
      " src lua bin | grep -v '^lua/sandkit/version.lua:'")
    assert.are_not.equal(0, code, "the version is repeated:\n" .. out)
  end)

  it("has a CHANGELOG.md section", function()
    local log = read("CHANGELOG.md")
    assert.truthy(log:find("\n## " .. version:gsub("%p", "%%%0") .. "[%s\n]"), "no '## " .. version .. "' in CHANGELOG.md")
  end)

  it("ships under the MIT licence the rockspecs name", function()
    local license = read("LICENSE")
    assert.truthy(license:find("^MIT License\n"), "LICENSE is not the MIT licence")
    assert.truthy(license:find("Copyright %(c%) %d%d%d%d the sandkit authors\n"))
    assert.truthy(license:find("THE SOFTWARE IS PROVIDED \"AS IS\"", 1, true))
    assert.are.equal("MIT", load_rockspec("rockspec/sandkit-" .. version .. "-1.rockspec").description.license)
    assert.are.equal("MIT", load_rockspec("rockspec/sandkit-scm-1.rockspec").description.license)
  end)
end)
