-- LocalSandbox inherit_env (issue 12, item 7): chosen host variables reach
-- commands; everything else of the host stays out; the sandbox env and a
-- command's env win. The host environment is set per case by running a
-- child Lua with `env -i`, so the spec does not depend on the caller's.
local sandkit = require "sandkit"
local errors = sandkit.errors
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

local q = require("helpers.sh").quote

-- Runs script in a fresh lua5.4 whose whole environment is host (plus the
-- module paths); returns its stdout and exit status.
local function with_host_env(host, script)
  local parts = { "env -i", "PATH=" .. q(os.getenv("PATH") or "/usr/bin:/bin"),
    "LUA_PATH=" .. q(package.path), "LUA_CPATH=" .. q(package.cpath) }
  for k, v in pairs(host) do parts[#parts + 1] = k .. "=" .. q(v) end
  parts[#parts + 1] = "lua5.4 -e " .. q(script) .. " 2>&1"
  local p = assert(io.popen(table.concat(parts, " ")))
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code
end

describe("LocalSandbox inherit_env", function()
  it("passes the listed host variables and nothing else", function()
    local dir = tmp.dir()
    local out, code = with_host_env({ HOME = dir, LANG = "C.UTF-8", NOT_LISTED = "x" }, ([[
      local sandkit = require "sandkit"
      local sb = sandkit.LocalSandbox { working_directory = %q, inherit_env = { "HOME", "LANG" } }
      local r = assert(sb:exec('echo "$HOME|$LANG|${NOT_LISTED-unset}"'))
      io.write(r.stdout)
      sb:destroy()
    ]]):format(dir .. "/ws"))
    assert.are.equal(0, code, out)
    assert.are.equal(dir .. "|C.UTF-8|unset\n", out)
  end)

  it("makes `git config --global` work through $HOME", function()
    local dir = tmp.dir()
    local script = ([[
      local sandkit = require "sandkit"
      local sb = sandkit.LocalSandbox { working_directory = %q %s }
      local r = assert(sb:exec("git config --global user.name sandkit-test && git config --global user.name"))
      io.write(r.exit_code, " ", r.stdout, r.stderr)
      sb:destroy()
    ]])
    -- before: without HOME git has nowhere to write
    local out = with_host_env({ HOME = dir }, script:format(dir .. "/ws", ""))
    assert.is_falsy(out:match("^0 "), out)
    out = with_host_env({ HOME = dir }, script:format(dir .. "/ws", ', inherit_env = { "HOME" }'))
    assert.are.equal("0 sandkit-test\n", out)
    local f = assert(io.open(dir .. "/.gitconfig"))
    assert.truthy(f:read("a"):find("sandkit-test", 1, true))
    f:close()
  end)

  it("lets the sandbox env and the command env override inherited values", function()
    local dir = tmp.dir()
    local out, code = with_host_env({ A = "host-a", B = "host-b", C = "host-c" }, ([[
      local sandkit = require "sandkit"
      local sb = sandkit.LocalSandbox { working_directory = %q, inherit_env = { "A", "B", "C", "B" },
        env = { B = "sandbox-b", C = "sandbox-c" } }
      io.write(assert(sb:exec('echo "$A $B $C"', nil, { env = { C = "command-c" } })).stdout)
      io.write(assert(sb:exec('env | grep -c "^B="')).stdout)
      sb:destroy()
    ]]):format(dir .. "/ws"))
    assert.are.equal(0, code, out)
    assert.are.equal("host-a sandbox-b command-c\n1\n", out)
  end)

  it("leaves out a listed variable the host does not have (not set empty)", function()
    local dir = tmp.dir()
    local out, code = with_host_env({}, ([[
      local sandkit = require "sandkit"
      local sb = sandkit.LocalSandbox { working_directory = %q, inherit_env = { "MISSING_ON_HOST" } }
      io.write(assert(sb:exec('echo "${MISSING_ON_HOST-unset}"')).stdout)
      sb:destroy()
    ]]):format(dir .. "/ws"))
    assert.are.equal(0, code, out)
    assert.are.equal("unset\n", out)
  end)

  it("is kept by clones; PATH listed is passed once, as always", function()
    local sb = sandkit.LocalSandbox { working_directory = tmp.dir(), inherit_env = { "PATH", "HOME" } }
    local c = sb:clone()
    local home = os.getenv("HOME")
    local r = assert(c:exec('echo "${HOME-unset}"'))
    assert.are.equal((home or "unset") .. "\n", r.stdout)
    -- PATH listed changes nothing: it is passed either way, once
    assert.are.equal("1\n", assert(c:exec('env | grep -c "^PATH="')).stdout)
    sb:destroy()
    c:destroy()
  end)

  it("passes variables under bubblewrap too", function()
    local dir = tmp.dir()
    local out, code = with_host_env({ LANG = "C.UTF-8", SECRETISH = "no" }, ([[
      local sandkit = require "sandkit"
      local sb = sandkit.LocalSandbox { working_directory = %q, isolation = "bwrap", inherit_env = { "LANG" } }
      io.write(assert(sb:exec('echo "$LANG ${SECRETISH-unset}"')).stdout)
      sb:destroy()
    ]]):format(dir .. "/ws"))
    assert.are.equal(0, code, out)
    assert.are.equal("C.UTF-8 unset\n", out)
  end)

  it("never shows inherited values in info(), instructions() or tostring", function()
    local home = os.getenv("HOME")
    if not home or home == "" or home == "/" then return end
    local sb = sandkit.LocalSandbox { working_directory = tmp.dir(), inherit_env = { "HOME" } }
    local seen = tostring(sb) .. sb:instructions()
    for k, v in pairs(sb:info()) do seen = seen .. tostring(k) .. tostring(v) end
    for k, v in pairs(sb:info().metadata) do seen = seen .. tostring(k) .. tostring(v) end
    assert.is_falsy(seen:find(home, 1, true), seen)
    sb:destroy()
  end)

  local bad = {
    { "HOME", "must be a table" },
    { { 1 }, "[1] must be a string" },
    { { "" }, "[1] is an empty variable name" },
    { { "OK", "A=B" }, "[2] variable name 'A=B' contains '='" },
    { { "A\0B" }, "[1] contains a NUL byte" },
    { { x = "HOME" }, "must be an array" },
  }
  for _, case in ipairs(bad) do
    it("refuses inherit_env = " .. (type(case[1]) == "table" and "{...}" or case[1]) .. " (" .. case[2] .. ")", function()
      local ok, err = pcall(sandkit.LocalSandbox, { inherit_env = case[1] })
      assert.is_false(ok)
      assert.is_true(errors.is(err, "ConfigError"), tostring(err))
      assert.are.equal("inherit_env", err.key)
      assert.are.equal("local", err.provider)
      assert.truthy(err.message:find("inherit_env", 1, true), err.message)
      assert.truthy(err.message:find(case[2], 1, true), err.message)
    end)
  end
end)
