-- examples/platform_fleet.lua (issue 12, item 11): without credentials it
-- starts the reference server itself, installing the server's npm package
-- first when it is missing. The install is checked offline: a stand-in
-- `npm` on PATH records its arguments and copies the real node_modules.
local ROOT = os.getenv("R") or (io.popen("pwd"):read("l"))

local sh = require "helpers.sh"
local q, run = sh.quote, sh.run

local mktemp = require("helpers.tmp").mktemp

local LUA_ENV = "LUA_PATH=" .. q(ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;;") ..
  " LUA_CPATH=" .. q(os.getenv("LUA_CPATH") or (ROOT .. "/build/?.so;;"))

local function check_output(out)
  assert.is_truthy(out:find("no credentials: using the reference server at http://127.0.0.1:", 1, true), out)
  assert.is_truthy(out:find("4 sandboxes started", 1, true), out)
  assert.is_truthy(out:find("40 jobs in", 1, true), out)
  assert.is_truthy(out:find("timeout -> exit_code 124, timed_out true", 1, true), out)
  assert.is_truthy(out:find("fleet destroyed", 1, true), out)
end

describe("examples/platform_fleet.lua", function()
  it("runs against the reference server it starts itself", function()
    local code, out = run("cd " .. q(ROOT) .. " && env -u MASTRA_PLATFORM_ACCESS_TOKEN " .. LUA_ENV ..
      " timeout -k 5 120 lua5.4 examples/platform_fleet.lua")
    assert.are.equal(0, code, out)
    check_output(out)
  end)

  it("installs the server's npm dependencies when they are missing", function()
    local tmp = mktemp()
    finally(function() os.execute("rm -rf " .. q(tmp)) end)
    assert(os.execute("mkdir -p " .. q(tmp .. "/tree/spec/servers") .. " " .. q(tmp .. "/bin") ..
      " && cp -R " .. q(ROOT .. "/examples") .. " " .. q(tmp .. "/tree/") ..
      " && cd " .. q(ROOT .. "/spec/servers") .. " && tar cf - --exclude=node_modules platform shared | (cd " ..
      q(tmp .. "/tree/spec/servers") .. " && tar xf -)"))
    local npm = io.open(tmp .. "/bin/npm", "w")
    npm:write("#!/bin/sh\necho \"npm $*\" >> " .. q(tmp .. "/npm.log") .. "\ncp -R " ..
      q(ROOT .. "/spec/servers/platform/node_modules") .. " ./node_modules\n")
    npm:close()
    assert(os.execute("chmod +x " .. q(tmp .. "/bin/npm")))
    local code, out = run("cd " .. q(tmp .. "/tree") .. " && env -u MASTRA_PLATFORM_ACCESS_TOKEN PATH=" ..
      q(tmp .. "/bin:" .. os.getenv("PATH")) .. " " .. LUA_ENV .. " timeout -k 5 120 lua5.4 examples/platform_fleet.lua")
    assert.are.equal(0, code, out)
    check_output(out)
    local log = assert(io.open(tmp .. "/npm.log")):read("a")
    assert.is_truthy(log:match("^npm ci "), log)
  end)
end)
