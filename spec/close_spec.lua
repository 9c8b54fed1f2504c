-- Lua 5.4 only (`<close>` is 5.4 syntax; make test runs it, make
-- test-luajit & co. do not): `local x <close> = ...` destroys a sandbox
-- or a fleet and closes a sandkit.Buffer at scope exit, also when the
-- block raises, and the sandbox's processes die with it
-- (docs/sandbox.md, docs/fleets.md).
local sandkit = require "sandkit"
local procs = require "helpers.procs"
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

local HAVE_BWRAP = require("helpers.sh").have_bwrap()

local function new(isolation)
  return sandkit.LocalSandbox { working_directory = tmp.dir(), isolation = isolation }
end

describe("<close>", function()
  it("destroys every clone of a fleet at scope exit", function()
    local clones
    do
      local f <close> = assert(sandkit.fleet(new(), 3))
      clones = { f[1], f[2], f[3] }
      for i = 1, 3 do assert.equal("running", clones[i].status) end
    end
    for i = 1, 3 do assert.equal("destroyed", clones[i].status) end
  end)

  it("closes a sandkit.Buffer", function()
    local sb = new()
    finally(function() sb:destroy() end)
    local kept
    do
      local b <close> = assert(sb:exec("printf abc", nil, { capture = "buffer" })).stdout
      kept = b
      assert.are.equal(3, #b)
    end
    assert.is_true(kept:is_closed())
  end)

  for _, isolation in ipairs(HAVE_BWRAP and { "none", "bwrap" } or { "none" }) do
    it("destroys the sandbox and kills its processes, also when the block raises (" .. isolation .. ")", function()
      local m = procs.sleep_marker(700)
      local outer
      local ok, err = pcall(function()
        local sb <close> = new(isolation)
        outer = sb
        assert(sb.processes:spawn("exec " .. m))
        sb:exec_async(m)
        sandkit.step(0)
        error("boom")
      end)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("boom", 1, true))
      assert.equal("destroyed", outer.status)
      local gone_ok = procs.gone(m)
      procs.kill_matching(m)
      assert.is_true(gone_ok, "survivors of " .. m)
    end)
  end
end)
