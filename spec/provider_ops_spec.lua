-- The one binding of a provider's own operations (src/lua/ops_ud.c over
-- src/core/provider_ops.h; docs/architecture.md §"A provider's own operations"):
-- core.ops_open opens the table asked for, "fs" (the provider's files) or
-- "calls" (the calls behind its own sandbox methods), and says which
-- provider lacks which. Offline: opening does no I/O.
local sandkit = require "sandkit"
local core = require "sandkit.core"
local kits = require "helpers.provider_kits"

local made = {}

local function new(id)
  local sb = sandkit.new(id, kits.of(id).offline_options())
  made[#made + 1] = sb
  return sb
end

teardown(function()
  for _, sb in ipairs(made) do pcall(sb.destroy, sb) end
end)

local function raises(pattern, ...)
  local ok, err = pcall(core.ops_open, ...)
  assert.is_false(ok)
  assert.matches(pattern, tostring(err), 1, true)
  return err
end

describe("core.ops_open", function()
  it("opens a provider's files as fs and its methods' calls as calls, each only where the provider has it", function()
    local modal = new("modal")
    assert.equal("userdata", type(core.ops_open(modal, "fs")))
    raises("ModalSandbox has no 'calls' operations of its own", modal, "calls")

    local docker = new("docker")
    local calls = core.ops_open(docker, "calls")
    assert.equal("userdata", type(calls))
    assert.same({}, core.ops_info(calls))

    local lsb = sandkit.LocalSandbox({})
    made[#made + 1] = lsb
    raises("LocalSandbox has no 'fs' operations of its own", lsb, "fs")
    raises("LocalSandbox has no 'calls' operations of its own", lsb, "calls")
  end)

  it("names the table to open: fs or calls, nothing else", function()
    local docker = new("docker")
    raises("invalid option 'files'", docker, "files")
    raises("bad argument #2", docker)
  end)

  it("refuses a provider's calls standing alone with its ConfigError, and an unknown provider", function()
    local err = raises("DockerSandbox's calls need a sandbox", "docker", "calls", {})
    assert.equal("ConfigError", err.kind)
    raises("ops_open: unknown provider 'nope'", "nope", "calls", {})
    raises("bad argument #3", "platform", "fs")
  end)
end)

describe("core.ops_call on DockerSandbox's calls", function()
  it("refuses a malformed request before any I/O, with a ConfigError", function()
    local calls = core.ops_open(new("docker"), "calls")
    local ok, err = pcall(core.ops_call, calls, { path = "/containers/{container}/json", ok = { 200 } }, nil, 1)
    assert.is_false(ok)
    assert.equal("ConfigError", err.kind)
    assert.matches("needs method, path and 1 to 8 ok statuses", err.message, 1, true)
  end)
end)
