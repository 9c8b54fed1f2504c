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

-- A test that runs Lua as uid 4343 (run_lua with setpriv).
local function it_as_4343(name, fn)
  local blocked = require("helpers.module_copy").blocked_for(4343)
  if blocked then return pending(name .. " (" .. blocked .. ")") end
  it_root_bwrap(name, fn)
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

  it_as_4343("the same for a non-root caller (uid 4343): its ~/.ssh stays untouched", function()
    -- the checkout may be readable by root only: the child gets a copy
    local copy_path, copy_cpath = require("helpers.module_copy").paths()
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
      { path = copy_path, cpath = copy_cpath })
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

-- A fresh lua5.4 that reads a file whole and reports the outcome and its
-- peak memory; the file is made first (sparse: no disk used).
local READ_CHILD = [[
local sandkit = require "sandkit"
local function hwm_kb()
  for line in io.lines("/proc/self/status") do
    local v = line:match("^VmHWM:%s+(%d+)")
    if v then return tonumber(v) end
  end
end
local sb = sandkit.LocalSandbox { working_directory = os.getenv("WS"), isolation = os.getenv("ISOLATION") }
assert(sb:start())
assert(sb:exec("truncate -s " .. os.getenv("SIZE") .. " big"))
local max = tonumber(os.getenv("MAX") or "")
local before = hwm_kb()
local t0 = sandkit.now()
local ok, data, err
if os.getenv("STREAM") then
  local n = 0
  ok, data, err = pcall(sb.fs.read_file, sb.fs, "big", { on_chunk = function(c) n = n + #c end })
  if data then data = n end
else
  ok, data, err = pcall(sb.fs.read_file, sb.fs, "big", { max_bytes = max })
  if type(data) == "string" then data = #data end
end
print(("ok=%s data=%s kind=%s code=%s limit=%s ms=%.0f grew_kb=%d"):format(tostring(ok), tostring(data),
  type(err) == "table" and err.kind or tostring(err), type(err) == "table" and tostring(err.code) or "-",
  type(err) == "table" and tostring(err.limit) or "-", sandkit.now() - t0, hwm_kb() - before))
if type(err) == "table" then print("message=" .. err.message) end
print("after=" .. tostring(sb.fs:write_file("small", "still works") and sb.fs:read_file("small")))
sb:destroy()
]]

describe("row 4: bounded reads", function()
  local iso = HAVE_BWRAP and "bwrap" or "none"
  local function read_big(env, prefix)
    env.WS, env.ISOLATION = open_dir() .. "/ws", iso
    local words = {}
    for k, v in pairs(env) do words[#words + 1] = k .. "=" .. quote(v) end
    return run_lua(READ_CHILD, (prefix or "") .. " env " .. table.concat(words, " "))
  end

  it("a 512 MiB sparse file read whole: nil, FilesystemError naming max_bytes, at once, the host does not grow", function()
    local out = read_big({ SIZE = "512M" })
    assert.truthy(out:find("ok=true data=nil kind=FilesystemError code=EFBIG limit=" .. 64 * MiB, 1, true), out)
    assert.truthy(out:find("max_bytes", 1, true), out)
    assert.truthy(out:find("67108864", 1, true), out)
    assert.truthy(out:find("after=still works", 1, true), out)
    local ms, grew = out:match("ms=(%d+) grew_kb=(%d+)")
    assert.is_true(tonumber(ms) < 5000, out)
    if not procs.instrumented() then assert.is_true(tonumber(grew) < 32 * 1024, out) end
  end)

  it("max_bytes raises the limit; on_chunk streams 512 MiB with no bound and bounded memory", function()
    local out = read_big({ SIZE = "80M", MAX = tostring(100 * MiB) })
    assert.truthy(out:find("ok=true data=" .. 80 * MiB .. " kind=nil", 1, true), out)
    out = read_big({ SIZE = "80M", MAX = tostring(80 * MiB - 1) })
    assert.truthy(out:find("kind=FilesystemError code=EFBIG limit=" .. (80 * MiB - 1), 1, true), out)
    out = read_big({ SIZE = "512M", STREAM = "1" })
    assert.truthy(out:find("ok=true data=" .. 512 * MiB .. " kind=nil", 1, true), out)
    if not procs.instrumented() then
      local grew = tonumber(out:match("grew_kb=(%d+)"))
      assert.is_true(grew < 64 * 1024, out)
    end
  end)

  local ulimit_it = procs.instrumented() and pending or it
  ulimit_it("a 16 GiB sparse file under ulimit -v: nil, err (the limit, or OutOfMemoryError past it), never a raise", function()
    local out = read_big({ SIZE = "16G" }, "ulimit -v 1000000;")
    assert.truthy(out:find("ok=true data=nil kind=FilesystemError code=EFBIG", 1, true), out)
    out = read_big({ SIZE = "16G", MAX = tostring(32 << 30) }, "ulimit -v 1000000;")
    assert.truthy(out:find("ok=true data=nil kind=OutOfMemoryError", 1, true), out)
    assert.truthy(out:find("after=still works", 1, true), out)
    assert.truthy(out:find("status=0\n", 1, true), out)
  end)

  it("LocalFilesystem has the same limit", function()
    local dir = open_dir()
    assert(os.execute("truncate -s 65M " .. quote(dir .. "/big")))
    local fs = sandkit.LocalFilesystem { base_path = dir }
    local data, err = fs:read_file("big")
    assert.is_nil(data)
    assert.equal("EFBIG", err.code)
    assert.equal(64 * MiB, err.limit)
    assert.equal(65 * MiB, #assert(fs:read_file("big", { max_bytes = 65 * MiB })))
  end)

  it("max_bytes is checked: a whole number >= 1, and not with on_chunk", function()
    local fs = sandkit.LocalFilesystem { base_path = open_dir() }
    for _, bad in ipairs({ 0, -1, 1.5, "1M" }) do
      local ok, err = pcall(fs.read_file, fs, "x", { max_bytes = bad })
      assert.is_false(ok)
      assert.truthy(tostring(err):find("max_bytes", 1, true), tostring(err))
    end
    local ok, err = pcall(fs.read_file, fs, "x", { max_bytes = 10, on_chunk = function() end })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("on_chunk", 1, true), tostring(err))
  end)
end)

describe("rows 4 and 5: remote sb.fs", function()
  local env = require("helpers.remote_sandboxes").start()
  teardown(env.stop)

  -- a stuck command would run into 60 s (Modal's file operations: 10
  -- minutes); the bound below (BOUND_MS) is far under that, and far over
  -- what a command takes on a loaded machine under ASan
  local BOUND_MS = 20000
  local makers = {
    { "platform", function() return env.make.PlatformSandbox(60000) end },
    { "modal", env.make.ModalSandbox },
    { "apple-container", function() return env.make.AppleContainerSandbox(60000) end },
  }

  local function timed(fn, ...)
    local t0 = sandkit.now()
    local a, b = fn(...)
    return a, b, sandkit.now() - t0
  end

  for _, m in ipairs(makers) do
    local name, make = m[1], m[2]

    it(name .. ": a FIFO is listed and stat'ed at once, and reading it is a clear error at once (as local)", function()
      local sb = make()
      assert(sb:start())
      local lsb = sandkit.LocalSandbox { working_directory = open_dir() .. "/ws" }
      assert(lsb:start())
      for _, s in ipairs({ sb, lsb }) do
        assert(s:exec("mkdir -p d/sub && mkfifo d/fifo && ln -s fifo d/link && echo hi > d/f"))
        local fs = s.fs
        local list, err, ms = timed(fs.readdir, fs, "d")
        assert.is_not_nil(list, tostring(err))
        assert.is_true(ms < BOUND_MS, ("%s readdir took %.0f ms"):format(s.provider, ms))
        local by = {}
        for _, e in ipairs(list) do by[e.name] = e end
        assert.equal("file", by.fifo.type)
        assert.equal("file", by.f.type)
        assert.equal(3, by.f.size)
        assert.is_true(by.link.is_symlink)
        list, err, ms = timed(fs.readdir, fs, "d", { recursive = true })
        assert.is_not_nil(list, tostring(err))
        assert.is_true(ms < BOUND_MS)
        local st
        st, err, ms = timed(fs.stat, fs, "d/fifo")
        assert.is_not_nil(st, tostring(err))
        assert.equal("file", st.type)
        assert.is_true(ms < BOUND_MS)
        for _, p in ipairs({ "d/fifo", "d/link" }) do
          local data
          data, err, ms = timed(fs.read_file, fs, p)
          assert.is_nil(data, s.provider .. " read a FIFO")
          assert.equal("FilesystemError", err.kind, tostring(err))
          assert.truthy(err.message:find("regular file", 1, true), tostring(err))
          assert.is_true(ms < BOUND_MS, ("%s read_file of a FIFO took %.0f ms"):format(s.provider, ms))
          data, err, ms = timed(fs.copy_file, fs, p, "copy")
          assert.is_nil(data, s.provider .. " copied a FIFO")
          assert.is_true(ms < BOUND_MS, ("%s copy_file of a FIFO took %.0f ms"):format(s.provider, ms))
        end
        local ok
        -- (Modal writes through the SDK's file handle, whose open of a FIFO
        -- waits for a reader inside the sandbox: docs/security.md)
        if s.provider ~= "modal" then
          ok, err, ms = timed(fs.write_file, fs, "d/fifo", "x")
          assert.is_nil(ok, s.provider .. " wrote into a FIFO")
          assert.equal("FilesystemError", err.kind, tostring(err))
          assert.is_true(ms < BOUND_MS)
        end
        local n = 0
        ok, err, ms = timed(fs.read_file, fs, "d/fifo", { on_chunk = function(c) n = n + #c end })
        assert.is_nil(ok)
        assert.is_true(ms < BOUND_MS)
        -- still usable afterwards
        assert.equal("hi\n", fs:read_file("d/f"))
      end
      lsb:destroy()
      sb:destroy()
    end)

    it(name .. ": a 512 MiB sparse file read whole fails at once naming max_bytes; max_bytes lowers it", function()
      local sb = make()
      assert(sb:start())
      assert(sb:exec("truncate -s 512M big && head -c 5000 /dev/zero > small"))
      local data, err, ms = timed(sb.fs.read_file, sb.fs, "big")
      assert.is_nil(data)
      assert.equal("EFBIG", err.code, tostring(err))
      assert.equal(64 * MiB, err.limit)
      assert.truthy(err.message:find("max_bytes", 1, true))
      assert.is_true(ms < BOUND_MS, ("%.0f ms"):format(ms))
      data, err = sb.fs:read_file("small", { max_bytes = 4999 })
      assert.is_nil(data)
      assert.equal(4999, err.limit)
      assert.equal(5000, #assert(sb.fs:read_file("small", { max_bytes = 5000 })))
      sb:destroy()
    end)
  end

  it("sandkit cp from a sandbox: a FIFO fails at once with a clear error", function()
    local sb = makers[1][2]()
    assert(sb:start())
    assert(sb:exec("mkfifo pipe"))
    local cli = require "sandkit.cli"
    local err = {}
    local sink = { write = function(self, ...) for _, v in ipairs({ ... }) do err[#err + 1] = v end return self end,
      flush = function(self) return self end }
    local dst = open_dir() .. "/out"
    local t0 = sandkit.now()
    local code = cli.main({ "cp", "--opt", "project_id=proj_fs", "--opt", "base_url=" .. env.platform.url,
      "--opt", "sandbox_id=" .. sb:info().metadata.sandbox_id, "--opt", "timeout=60000", "platform:pipe", dst },
      { stdout = sink, stderr = sink, isatty = function() return false end,
        getenv = function(k) if k == "MASTRA_PLATFORM_ACCESS_TOKEN" then return "test-token" end return os.getenv(k) end })
    local ms = sandkit.now() - t0
    sb:destroy()
    local text = table.concat(err)
    assert.equal(cli.EXIT_FAILURE, code, text)
    assert.truthy(text:find("regular file", 1, true), text)
    assert.is_true(ms < BOUND_MS, ("%.0f ms"):format(ms))
  end)
end)

describe("row 4: PlatformFilesystem", function()
  local server = require "helpers.server"
  local srv = server.for_block("spec/servers/platform/server.mjs", { "--quiet" })

  it("read_file past max_bytes is nil, FilesystemError naming the limit; on_chunk has no bound", function()
    local fs = sandkit.PlatformFilesystem { access_token = "test-token", project_id = "p", bucket_name = "b",
      base_url = srv.url }
    local body = ("x"):rep(3 * MiB)
    assert(fs:write_file("obj", body))
    local data, err = fs:read_file("obj", { max_bytes = MiB })
    assert.is_nil(data)
    assert.equal("FilesystemError", err.kind)
    assert.equal("EFBIG", err.code)
    assert.equal(MiB, err.limit)
    assert.equal(body, fs:read_file("obj"))
    assert.equal(body, fs:read_file("obj", { max_bytes = 3 * MiB }))
    local n = 0
    assert.is_true(fs:read_file("obj", { on_chunk = function(c) n = n + #c end }))
    assert.equal(3 * MiB, n)
  end)
end)
