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
    if os.getenv("USER") == "root" or io.popen("id -u"):read("l") == "0" then
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
    assert.equal("keep\n", assert(io.open(rw .. "/f.txt")):read("a"))
    assert.equal("PermissionError", select(2, sb.fs:read_file("/etc/hostname")).kind)
    sb:destroy()
  end)
end)
