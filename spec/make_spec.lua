-- README, "Two commands": `make demo` and `make test` install missing Debian
-- packages with `apt-get install -y` when run as root, or print the exact
-- `apt-get` command otherwise. Both go through `make deps`; a package name
-- that cannot exist stands for a missing one, and a stand-in apt-get on
-- PATH records what root's run would do (nothing is installed). `make
-- test` also runs `npm ci` for the reference servers (`make npm-deps`).
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

local sh = require "helpers.sh"
local q, run = sh.quote, sh.run

local ROOT = os.getenv("R") or io.popen("pwd"):read("l")
local MISSING = "sandkit-no-such-package-" .. os.time()

local function is_root() return io.popen("id -u"):read("l") == "0" end

describe("make deps", function()
  -- a copy of the Makefile and mk/ that any user can read
  local function copy_tree()
    local dir = tmp.dir()
    assert(os.execute(("cp %s/Makefile %s/ && cp -r %s/mk %s/ && chmod -R a+rX %s"):format(
      q(ROOT), q(dir), q(ROOT), q(dir), q(dir))))
    return dir
  end

  ;(is_root() and it or pending)("as root: installs what is missing with apt-get install -y", function()
    local dir = copy_tree()
    local bin, log = dir .. "/fakebin", dir .. "/apt.log"
    assert(os.execute(("mkdir %s && printf '#!/bin/sh\\necho \"$*\" >>%s\\n' >%s/apt-get && chmod +x %s/apt-get"):format(
      q(bin), q(log), q(bin), q(bin))))
    local code, out = run(("cd %s && PATH=%s:\"$PATH\" make -s deps DEB_PACKAGES=%s"):format(q(dir), q(bin), MISSING))
    assert.equal(0, code, out)
    assert.truthy(out:find("installing: " .. MISSING, 1, true), out)
    local f = assert(io.open(log))
    local calls = f:read("a")
    f:close()
    assert.truthy(calls:find("install -y -qq " .. MISSING .. "\n", 1, true), calls)
  end)

  ;(is_root() and it or pending)("not root: prints the exact apt-get command and fails, installing nothing", function()
    local dir = copy_tree()
    local bin, log = dir .. "/fakebin", dir .. "/apt.log"
    assert(os.execute(("mkdir %s && printf '#!/bin/sh\\necho \"$*\" >>%s\\n' >%s/apt-get && chmod -R a+rx %s && chmod a+rwx %s"):format(
      q(bin), q(log), q(bin), q(bin), q(dir))))
    local code, out = run(("cd %s && PATH=%s:\"$PATH\" setpriv --reuid=65534 --regid=65534 --clear-groups make -s deps DEB_PACKAGES=%s"):format(
      q(dir), q(bin), MISSING))
    assert.are_not.equal(0, code, out)
    assert.truthy(out:find("run: sudo apt-get install -y " .. MISSING, 1, true), out)
    assert.is_nil(io.open(log), "apt-get ran")
  end)

  it("npm-deps (part of make test) runs npm ci where a reference server has a lock file and no node_modules", function()
    local dir = copy_tree()
    local bin, log = dir .. "/fakebin", dir .. "/npm.log"
    assert(os.execute(("mkdir -p %s %s/spec/servers/a %s/spec/servers/b/node_modules %s/spec/servers/c"
      .. " && touch %s/spec/servers/a/package-lock.json %s/spec/servers/b/package-lock.json"
      .. " && printf '#!/bin/sh\\necho \"$(basename \"$PWD\") $*\" >>%s\\n' >%s/npm && chmod +x %s/npm"):format(
      q(bin), q(dir), q(dir), q(dir), q(dir), q(dir), q(log), q(bin), q(bin))))
    local code, out = run(("cd %s && PATH=%s:\"$PATH\" make -s npm-deps"):format(q(dir), q(bin)))
    assert.equal(0, code, out)
    local f = assert(io.open(log))
    local calls = f:read("a")
    f:close()
    -- a: lock file, no node_modules; b: already installed; c: no lock file
    assert.equal("a ci --no-audit --no-fund --loglevel=error\n", calls)
  end)
end)

-- README, "Two commands": after `make demo`, `eval "$(make -s env)"` puts
-- the clone's build on the paths, for scripts and the `sandkit` command run
-- from anywhere.
describe("make env", function()
  -- LUA=luajit: the LuaJIT build, and a sandkit command run by luajit
  for _, c in ipairs({ { make = "", lua = "lua5.4", build = "build" },
    { make = " LUA=luajit", lua = "luajit", build = "build-luajit" } }) do
    it("prints the exports after which require 'sandkit' and the sandkit command work from another directory ("
      .. c.lua .. ")", function()
      local code, out = run(("cd %s && make -s --no-print-directory env%s"):format(q(ROOT), c.make))
      assert.equal(0, code, out)
      assert.is_truthy(out:find("export LUA_PATH='" .. ROOT .. "/lua/?.lua;", 1, true), out)
      local elsewhere = tmp.dir()
      local script = elsewhere .. "/exports.sh"
      local f = assert(io.open(script, "w"))
      f:write(out)
      f:close()
      -- the paths a user may already have are kept after ours
      code, out = run(("cd %s && env -i PATH=%s HOME=%s LUA_PATH='/nowhere/?.lua;;' sh -c %s 2>&1"):format(
        q(elsewhere), q(os.getenv("PATH")), q(elsewhere), q(". ./exports.sh && " .. c.lua .. " -e " .. q([[
          local sandkit = require "sandkit"
          io.write(package.searchpath("sandkit.core", package.cpath), " ", sandkit._VERSION, "\n")
          assert(package.path:find("/nowhere/?.lua", 1, true))
        ]]) .. " && sandkit exec -- echo from-the-command && head -c 200 \"$(command -v sandkit)\"")))
      assert.equal(0, code, out)
      local want = ROOT .. "/" .. c.build .. "/sandkit/core.so " .. require("sandkit.version") .. "\nfrom-the-command\n"
      assert.equal(want, out:sub(1, #want))
      -- the command on PATH is the one for that interpreter
      local command = out:sub(#want + 1)
      if c.lua == "lua5.4" then
        assert.truthy(command:find("^#!/usr/bin/env lua5.4\n"), command)
      else
        assert.equal("#!/bin/sh\nexec luajit " .. ROOT .. "/bin/sandkit \"$@\"\n", command)
      end
    end)
  end
end)
