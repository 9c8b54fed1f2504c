-- The filesystem conformance suite against LocalFilesystem (openat2 and the
-- fallback walk) and sb.fs of LocalSandbox (with and without bubblewrap).
local sandkit = require "sandkit"
local core = require "sandkit.core"
local tmp = require "helpers.tmp"
local suite = require "conformance.fs_suite"

local function symlinker(base)
  return function(link, target)
    assert(os.execute(("ln -s '%s' '%s/%s'"):format(target, base, link)))
  end
end

for _, mode in ipairs({ "openat2", "fallback" }) do
  local base, outside
  suite({
    name = "LocalFilesystem (" .. mode .. ")",
    create = function()
      core.fs_force_fallback(mode == "fallback")
      base, outside = tmp.dir() .. "/ws", tmp.dir()
      return sandkit.LocalFilesystem { base_path = base }
    end,
    create_read_only = function() return sandkit.LocalFilesystem { base_path = base, read_only = true } end,
    cleanup = function()
      core.fs_force_fallback(false)
      tmp.cleanup()
    end,
    escapes = {
      symlink = function(link, target) symlinker(base)(link, target) end,
      outside_dir = function() return outside end,
    },
    big = mode == "openat2",
  }, _ENV)
end

for _, isolation in ipairs({ "none", "bwrap" }) do
  local sb, outside
  suite({
    name = "LocalSandbox sb.fs (isolation " .. isolation .. ")",
    create = function()
      outside = tmp.dir()
      sb = sandkit.LocalSandbox { working_directory = tmp.dir() .. "/ws", isolation = isolation }
      assert(sb:start())
      return sb.fs
    end,
    cleanup = function()
      sb:destroy()
      tmp.cleanup()
    end,
    escapes = {
      symlink = function(link, target)
        assert(sb:exec("ln -s " .. sandkit.quote(target) .. " " .. sandkit.quote(link)).success)
      end,
      outside_dir = function() return outside end,
    },
  }, _ENV)
end

describe("LocalSandbox sb.fs under bwrap binds", function()
  teardown(tmp.cleanup)

  it("reads but never writes a read-only path, writes a read-write one, and nothing else", function()
    local ws, rw, ro_out = tmp.dir() .. "/ws", tmp.dir(), tmp.dir()
    assert(os.execute("mkdir -p '" .. ws .. "/ro' && echo keep > '" .. ws .. "/ro/f.txt' && echo out > '" .. ro_out .. "/o.txt'"))
    -- run by root, commands run as nobody: the working directory is theirs
    if os.getenv("USER") == "root" or io.popen("id -u"):read("*l") == "0" then
      assert(os.execute("chown -R 65534:65534 '" .. ws .. "' '" .. rw .. "'"))
    end
    local sb = sandkit.LocalSandbox { working_directory = ws, isolation = "bwrap",
      read_only_paths = { ws .. "/ro", ro_out }, read_write_paths = { rw } }
    assert(sb:start())
    -- what the sandbox's commands see, for comparison
    assert.is_false(sb:exec("echo x > ro/f.txt").success)
    assert.equal("keep\n", sb.fs:read_file("ro/f.txt"))
    assert.equal("out\n", sb.fs:read_file(ro_out .. "/o.txt"))
    for _, attempt in ipairs({
      function() return sb.fs:write_file("ro/f.txt", "x") end,
      function() return sb.fs:append_file(ro_out .. "/o.txt", "x") end,
      function() return sb.fs:delete_file("ro/f.txt") end,
      function() return sb.fs:mkdir("ro/sub") end,
      function() return sb.fs:copy_file("ro/f.txt", ro_out .. "/copy.txt") end,
      function() return sb.fs:move_file("ro/f.txt", "moved.txt") end,
      function() return sb.fs:rmdir("ro", { recursive = true }) end,
    }) do
      local ok, err = attempt()
      assert.is_nil(ok)
      assert.equal("PermissionError", err.kind)
    end
    assert.equal("keep\n", sb.fs:read_file("ro/f.txt"))
    assert.is_true(sb.fs:copy_file("ro/f.txt", rw .. "/f.txt"))
    assert.equal("keep\n", assert(io.open(rw .. "/f.txt")):read("*a"))
    assert.equal("PermissionError", select(2, sb.fs:read_file("/etc/hostname")).kind)
    sb:destroy()
  end)
end)

-- A root caller's bwrap sandbox runs its commands as the sandbox user
-- (option `user`, default 65534): sb.fs does its system calls as that user
-- too (per-thread fsuid/fsgid, no supplementary groups; src/lua/fs_ud.c).
describe("LocalSandbox sb.fs as the sandbox user (root caller, bwrap)", function()
  local HAVE_BWRAP = require("helpers.sh").have_bwrap()
  local IS_ROOT = io.popen("id -u"):read("*l") == "0"
  local function it_root_bwrap(name, fn)
    if HAVE_BWRAP and IS_ROOT then it(name, fn) else pending(name .. " (needs root and bubblewrap)") end
  end
  teardown(tmp.cleanup)

  local function owner(path)
    local p = assert(io.popen("stat -c %u:%g " .. sandkit.quote(path) .. " 2>/dev/null"))
    local s = p:read("*l")
    p:close()
    return s
  end

  -- this thread's uid and gid lines (real, effective, saved, fs) and groups
  local function thread_ids()
    local f = assert(io.open("/proc/thread-self/status"))
    local ids = {}
    for line in f:lines() do
      local k, v = line:match("^(%a+):%s*(.-)%s*$")
      if k == "Uid" or k == "Gid" or k == "Groups" then ids[k] = v end
    end
    f:close()
    return ids
  end

  local function put(path, text, mode)
    local f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
    assert(os.execute(("chmod %s %s"):format(mode, sandkit.quote(path))))
  end

  it_root_bwrap("creates files and directories owned by the sandbox user, which its commands can write into", function()
    local before = thread_ids()
    local ws = tmp.dir() .. "/ws"
    local sb = sandkit.LocalSandbox { working_directory = ws, isolation = "bwrap" }
    assert(sb:start())
    assert.same({ uid = 65534, gid = 65534 }, sb:info().metadata.sandbox_user)
    local tmpdir = sb:info().metadata.tmp_directory
    assert.is_true(sb.fs:write_file("made/deep/f.txt", "x"))
    assert.is_true(sb.fs:mkdir("dir"))
    assert.is_true(sb.fs:append_file("dir/log.txt", "a"))
    assert.is_true(sb.fs:copy_file("made/deep/f.txt", "copied/c.txt"))
    assert.is_true(sb.fs:move_file("dir/log.txt", "moved/log.txt"))
    assert.is_true(sb.fs:write_file("/tmp/scratch/t.txt", "t"))
    for _, p in ipairs({ "made", "made/deep", "made/deep/f.txt", "dir", "copied", "copied/c.txt", "moved", "moved/log.txt" }) do
      assert.equal("65534:65534", owner(ws .. "/" .. p), p)
    end
    assert.equal("65534:65534", owner(tmpdir .. "/scratch"))
    assert.equal("65534:65534", owner(tmpdir .. "/scratch/t.txt"))
    -- the sandbox's commands write into what sb.fs made, and sb.fs reads it
    local r = assert(sb:exec("echo hi > made/deep/cmd.txt && ln -s cmd.txt made/deep/link && echo more >> /tmp/scratch/t.txt && id -u"))
    assert.equal(0, r.exit_code, r.stderr)
    assert.equal("65534\n", r.stdout)
    assert.equal("hi\n", sb.fs:read_file("made/deep/cmd.txt"))
    assert.equal("tmore\n", sb.fs:read_file("/tmp/scratch/t.txt"))
    -- and sb.fs removes what the commands made
    assert.is_true(sb.fs:rmdir("made", { recursive = true }))
    assert.is_false(sb.fs:exists("made"))
    sb:destroy()
    -- the thread is root again: a LocalFilesystem creates root's files
    assert.same(before, thread_ids())
    local base = tmp.dir() .. "/plain"
    local lfs = sandkit.LocalFilesystem { base_path = base }
    assert.is_true(lfs:write_file("d/r.txt", "r"))
    assert.equal("0:0", owner(base .. "/d"))
    assert.equal("0:0", owner(base .. "/d/r.txt"))
  end)

  it_root_bwrap("cannot read or change a file only root may read, and ends every call as root again", function()
    local before = thread_ids()
    local ws = tmp.dir() .. "/ws"
    local sb = sandkit.LocalSandbox { working_directory = ws, isolation = "bwrap" }
    assert(sb:start())
    put(ws .. "/root600.txt", "SECRET600", "600")
    put(ws .. "/root640.txt", "SECRET640", "640") -- group root: the groups are dropped too
    put(ws .. "/open644.txt", "open", "644")
    assert(os.execute("mkdir -m 700 " .. sandkit.quote(ws .. "/rootdir") .. " && echo s > " .. sandkit.quote(ws .. "/rootdir/s.txt")))
    assert.equal("0:0", owner(ws .. "/root600.txt"))
    -- positive control: the readable file reads, so the refusals are permissions
    assert.equal("open", sb.fs:read_file("open644.txt"))
    for _, name in ipairs({ "root600.txt", "root640.txt" }) do
      local v, err = sb.fs:read_file(name)
      assert.is_nil(v)
      assert.equal("PermissionError", err.kind, name)
      assert.equal("PermissionError", select(2, sb.fs:write_file(name, "x")).kind)
      assert.equal("PermissionError", select(2, sb.fs:append_file(name, "x")).kind)
      assert.equal("PermissionError", select(2, sb.fs:copy_file(name, "copy-" .. name)).kind)
      assert.is_false(sb.fs:exists("copy-" .. name))
    end
    assert.equal("PermissionError", select(2, sb.fs:read_file("rootdir/s.txt")).kind)
    assert.equal("PermissionError", select(2, sb.fs:readdir("rootdir")).kind)
    assert.equal("PermissionError", select(2, sb.fs:write_file("rootdir/planted.txt", "x")).kind)
    assert.equal("PermissionError", select(2, sb.fs:delete_file("rootdir/s.txt")).kind)
    -- readable by all, writable by root only
    assert.equal("PermissionError", select(2, sb.fs:write_file("open644.txt", "x")).kind)
    -- what the sandbox's commands see is the same
    assert.is_false(sb:exec("cat root600.txt").success)
    assert.is_false(sb:exec("cat root640.txt").success)
    -- the files are untouched; every call, failed ones included, ended as root
    assert.equal("SECRET600", assert(io.open(ws .. "/root600.txt")):read("*a"))
    assert.equal("SECRET640", assert(io.open(ws .. "/root640.txt")):read("*a"))
    assert.equal("open", assert(io.open(ws .. "/open644.txt")):read("*a"))
    assert.is_nil(io.open(ws .. "/rootdir/planted.txt"))
    assert.same(before, thread_ids())
    sb:destroy()
    -- positive control: without isolation sb.fs is root and reads it
    local ws2 = tmp.dir() .. "/ws"
    local plain = sandkit.LocalSandbox { working_directory = ws2 }
    assert(plain:start())
    assert.is_nil(plain:info().metadata.sandbox_user)
    put(ws2 .. "/root600.txt", "SECRET600", "600")
    assert.equal("SECRET600", plain.fs:read_file("root600.txt"))
    plain:destroy()
  end)

  it_root_bwrap("acts as the user named by the option user", function()
    local ws = tmp.dir() .. "/ws"
    local sb = sandkit.LocalSandbox { working_directory = ws, isolation = "bwrap", user = 4242 }
    assert(sb:start())
    assert.same({ uid = 4242, gid = 4242 }, sb:info().metadata.sandbox_user)
    assert.is_true(sb.fs:write_file("sub/f.txt", "x"))
    assert.equal("4242:4242", owner(ws .. "/sub"))
    assert.equal("4242:4242", owner(ws .. "/sub/f.txt"))
    assert.is_true(sb:exec("echo y > sub/g.txt").success)
    assert.equal("4242:4242", owner(ws .. "/sub/g.txt"))
    sb:destroy()
  end)
end)
