-- Issue 21, rows 2-5: sb.fs (and sandkit cp) under attack from the
-- sandbox's own commands. Row 2: a sandbox swaps another's working
-- directory for a symlink to the host; row 3: a symlink leads a write into
-- a read-only bind; row 4: a huge (sparse) file read whole; row 5: a FIFO
-- in a remote sandbox's listing. Each case asserts on the host (files
-- unchanged, memory, time) and has a positive control.
local sandkit = require "sandkit"
local files = require "helpers.files"
local procs = require "helpers.procs"
local sh = require "helpers.sh"
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

local MiB = 1 << 20
local HAVE_BWRAP = sh.have_bwrap()
local IS_ROOT = sh.capture("id -u") == "0\n"
local quote = sh.quote
local read_file, write_file = files.read, files.write

local function it_bwrap(name, fn)
  if HAVE_BWRAP then it(name, fn) else pending(name .. " (bubblewrap cannot run here)") end
end

local function it_root_bwrap(name, fn)
  if HAVE_BWRAP and IS_ROOT then it(name, fn) else pending(name .. " (needs root and bubblewrap)") end
end

local function exists(path) return os.execute("test -e " .. quote(path) .. " || test -L " .. quote(path)) == true end

--- A directory every user may enter (run by root, bwrap commands run as
-- nobody, who must reach the working directories inside it).
local function open_dir()
  local d = tmp.dir()
  assert(os.execute("chmod 755 " .. quote(d)))
  return d
end

-- Runs `code` in a fresh lua5.4 (this run's module paths) after `prefix`
-- (ulimit, setpriv); returns its output (stdout and stderr) and status.
local function run_lua(code, prefix, paths)
  local dir = open_dir()
  local script = dir .. "/child.lua"
  write_file(script, code)
  os.execute("chmod 644 " .. quote(script))
  paths = paths or { path = package.path, cpath = package.cpath }
  local p = io.popen(("%s env LUA_PATH=%s LUA_CPATH=%s lua5.4 %s 2>&1; echo status=$?"):format(prefix or "",
    quote(paths.path), quote(paths.cpath), quote(script)))
  local out = p:read("a")
  p:close()
  return out
end

describe("row 2: sb.fs acts on the descriptors pinned at start", function()
  -- the attack of the issue: inner's sb.fs was opened by path at first use
  it_bwrap("nested working directories: the outer swaps inner for a symlink to a host dir; inner.fs stays in inner", function()
    local base, host = open_dir(), open_dir()
    local secret = procs.unique("host-secret")
    write_file(host .. "/secret", secret)
    write_file(host .. "/authorized_keys", "key\n")
    -- readable and writable by anyone: only sb.fs's roots stand in the way
    os.execute("chmod 777 " .. quote(host) .. " && chmod 666 " .. quote(host) .. "/*")
    local outer = sandkit.LocalSandbox { working_directory = base .. "/ws", isolation = "bwrap" }
    assert(outer:start())
    local inner = sandkit.LocalSandbox { working_directory = base .. "/ws/inner", isolation = "bwrap" }
    assert(inner:start())
    assert(inner:exec("echo mine > mine"))
    -- inner.fs is first used after the swap (before, that opened the host dir)
    local swap = assert(outer:exec("mv inner inner.old && ln -s " .. quote(host) .. " inner && echo SWAPPED"))
    assert.equal("SWAPPED\n", swap.stdout, "positive control: the swap happened")
    local got = inner.fs:read_file("secret")
    local wrote = inner.fs:write_file("pwned", "pwned\n")
    local appended = inner.fs:append_file("authorized_keys", "attacker-key\n")
    local listed = inner.fs:readdir(".")
    local mine = inner.fs:read_file("mine")
    local abs = inner.fs:read_file(base .. "/ws/inner/secret")
    inner:destroy()
    outer:destroy()
    assert.are_not.equal(secret, got, "inner.fs read the host directory")
    assert.are_not.equal(secret, abs, "inner.fs read the host directory by its absolute path")
    assert.equal(secret, read_file(host .. "/secret"))
    assert.equal("key\n", read_file(host .. "/authorized_keys"), "inner.fs appended to a host file")
    assert.is_false(exists(host .. "/pwned"), "inner.fs wrote into the host directory")
    -- confined: still its own directory (now at inner.old on the host)
    assert.equal("mine\n", mine)
    assert.is_true(wrote)
    assert.equal("pwned\n", read_file(base .. "/ws/inner.old/pwned"))
    assert.is_true(appended)
    local names = {}
    for _, e in ipairs(listed) do names[#names + 1] = e.name end
    table.sort(names)
    assert.same({ "authorized_keys", "mine", "pwned" }, names)
  end)

  it_root_bwrap("the same for a non-root caller (uid 4343): its ~/.ssh stays untouched", function()
    -- the checkout may be readable by root only: the child gets a copy
    local copy = open_dir()
    assert(os.execute(("cp -r lua %s/lua && mkdir -p %s/build && cp -r build/sandkit %s/build/ && chmod -R a+rX %s"):format(
      quote(copy), quote(copy), quote(copy), quote(copy))))
    local home = open_dir()
    assert(os.execute(("mkdir -p %s/.ssh %s/base && echo PRIVATE-KEY > %s/.ssh/id_rsa && echo key > %s/.ssh/authorized_keys"
      .. " && chmod 700 %s/.ssh && chmod 600 %s/.ssh/* && chown -R 4343:4343 %s"):format(
      quote(home), quote(home), quote(home), quote(home), quote(home), quote(home), quote(home))))
    local out = run_lua(([[
      local sandkit = require "sandkit"
      local base, ssh = %q, %q
      local outer = sandkit.LocalSandbox { working_directory = base .. "/ws", isolation = "bwrap" }
      assert(outer:start())
      local inner = sandkit.LocalSandbox { working_directory = base .. "/ws/inner", isolation = "bwrap" }
      assert(inner:start())
      assert(inner:exec("echo mine > mine"))
      local r = assert(outer:exec("mv inner inner.old && ln -s " .. ssh .. " inner && echo SWAPPED"))
      io.write(r.stdout)
      print("key=" .. tostring(inner.fs:read_file("id_rsa")))
      print("append=" .. tostring(inner.fs:append_file("authorized_keys", "attacker\n")))
      print("mine=" .. tostring(inner.fs:read_file("mine")))
      inner:destroy()
      outer:destroy()
    ]]):format(home .. "/base", home .. "/.ssh"), "setpriv --reuid=4343 --regid=4343 --clear-groups",
      { path = copy .. "/lua/?.lua;" .. copy .. "/lua/?/init.lua;;", cpath = copy .. "/build/?.so;;" })
    assert.truthy(out:find("SWAPPED\n", 1, true), "positive control: the swap happened\n" .. out)
    assert.truthy(out:find("status=0\n", 1, true), out)
    assert.is_nil(out:find("PRIVATE-KEY", 1, true), "inner.fs read ~/.ssh/id_rsa\n" .. out)
    assert.truthy(out:find("mine=mine\n", 1, true), out)
    assert.equal("key\n", read_file(home .. "/.ssh/authorized_keys"), "inner.fs appended to ~/.ssh/authorized_keys")
    assert.equal("attacker\n", read_file(home .. "/base/ws/inner.old/authorized_keys"))
  end)

  it_root_bwrap("read_only_paths and read_write_paths swapped on the host after start: sb.fs keeps the pinned ones", function()
    local base, host = open_dir(), open_dir()
    write_file(host .. "/secret", "host-only")
    os.execute("chmod 777 " .. quote(host) .. "; chmod 666 " .. quote(host .. "/secret"))
    os.execute("mkdir -p " .. quote(base .. "/ro") .. " " .. quote(base .. "/rw"))
    write_file(base .. "/ro/file", "ro-content")
    os.execute("chmod -R a+rX " .. quote(base) .. " && chown 65534:65534 " .. quote(base .. "/rw"))
    local sb = sandkit.LocalSandbox { working_directory = base .. "/ws", isolation = "bwrap",
      read_only_paths = { base .. "/ro" }, read_write_paths = { base .. "/rw" } }
    assert(sb:start())
    assert(os.execute(("cd %s && mv ro ro.old && ln -s %s ro && mv rw rw.old && ln -s %s rw"):format(
      quote(base), quote(host), quote(host))))
    local ro_file = sb.fs:read_file(base .. "/ro/file")
    local secret = sb.fs:read_file(base .. "/ro/secret")
    local wrote = sb.fs:write_file(base .. "/rw/pwned", "x")
    sb:destroy()
    assert.equal("ro-content", ro_file)
    assert.are_not.equal("host-only", secret)
    assert.is_true(wrote)
    assert.is_false(exists(host .. "/pwned"))
    assert.is_true(exists(base .. "/rw.old/pwned"), "positive control: the pinned read_write_path took the write")
  end)
end)

describe("row 3: read-only applies to where a path resolves", function()
  local function ro_sandbox()
    local ws = open_dir() .. "/ws"
    assert(os.execute(("mkdir -p %s/config %s/data && echo original > %s/config/settings && ln -s ../data %s/config/link"
      .. " && chmod -R a+rwX %s"):format(quote(ws), quote(ws), quote(ws), quote(ws), quote(ws))))
    if IS_ROOT then os.execute("chown -R 65534:65534 " .. quote(ws)) end
    local sb = sandkit.LocalSandbox { working_directory = ws, isolation = "bwrap", read_only_paths = { ws .. "/config" } }
    assert(sb:start())
    return sb, ws
  end

  local function refused(what, ok, err)
    assert.is_nil(ok, what .. " succeeded")
    assert.truthy(err.kind == "PermissionError" or err.kind == "WorkspaceReadOnlyError", what .. ": " .. tostring(err))
  end

  it_bwrap("a symlink the sandbox plants (out -> config) does not make the read-only bind writable", function()
    local sb, ws = ro_sandbox()
    local r = assert(sb:exec(table.concat({
      "ln -s config out", "ln -s " .. ws .. "/config abs", "ln -s config/settings file", "echo x > x",
      "echo hi > out/settings 2>/dev/null && echo COMMAND-WROTE", "echo PLANTED" }, "; ")))
    assert.equal("PLANTED\n", r.stdout, "positive control: the commands cannot write the bind either")
    refused("write_file out/settings", sb.fs:write_file("out/settings", "overwritten\n"))
    refused("write_file abs/settings (absolute link)", sb.fs:write_file("abs/settings", "overwritten\n"))
    refused("write_file by absolute path", sb.fs:write_file(ws .. "/out/settings", "overwritten\n"))
    refused("write_file through a link to the file", sb.fs:write_file("file", "overwritten\n"))
    refused("append_file", sb.fs:append_file("out/settings", "more\n"))
    refused("write_file creating in the bind", sb.fs:write_file("out/new", "x"))
    refused("copy_file onto it", sb.fs:copy_file("x", "out/settings"))
    refused("move_file into it", sb.fs:move_file("x", "out/x"))
    refused("delete_file", sb.fs:delete_file("out/settings"))
    refused("mkdir", sb.fs:mkdir("out/sub"))
    refused("move_file out of it", sb.fs:move_file("out/settings", "stolen"))
    -- reading through the link works, as for the commands
    assert.equal("original\n", sb.fs:read_file("out/settings"))
    assert.equal("original\n", sb.fs:read_file("file"))
    sb:destroy()
    assert.equal("original\n", read_file(ws .. "/config/settings"))
    assert.is_false(exists(ws .. "/config/new"))
    assert.is_false(exists(ws .. "/config/x"))
    assert.is_false(exists(ws .. "/config/sub"))
    assert.is_true(exists(ws .. "/x"), "move_file must not have moved x")
    assert.is_false(exists(ws .. "/stolen"))
  end)

  it_bwrap("a symlink inside the read-only bind that leads to a writable directory writes there, as a command does", function()
    local sb, ws = ro_sandbox()
    local r = assert(sb:exec("echo cmd > config/link/by-command && echo OK"))
    assert.equal("OK\n", r.stdout, "positive control: the commands write through the link")
    assert.is_true(sb.fs:write_file("config/link/by-fs", "fs\n"))
    refused("write_file into the bind itself", sb.fs:write_file("config/by-fs", "fs\n"))
    sb:destroy()
    assert.equal("fs\n", read_file(ws .. "/data/by-fs"))
    assert.equal("cmd\n", read_file(ws .. "/data/by-command"))
    assert.is_false(exists(ws .. "/config/by-fs"))
  end)
end)
