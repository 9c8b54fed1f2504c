--- The filesystem conformance suite: one set of cases run against every
-- sandkit.Filesystem (LocalFilesystem, PlatformFilesystem, sb.fs of each
-- provider). Returns a function taking a config and the spec's _ENV:
--   name                 describe title
--   create()             a fresh, empty filesystem object (writable)
--   create_read_only()   optional: a read-only one over the same files
--   cleanup()            optional teardown
--   escapes              optional: { symlink(link, target) makes a symlink
--                        in the filesystem; outside_dir(), a host directory
--                        outside it that escape attempts must not reach }
--   big                  run the 100 MiB case (default true)
--   refuses_no_overwrite copy/move with overwrite = false fail with a
--                        FilesystemError (PlatformFilesystem: the proxy
--                        always overwrites)
local sandkit = require "sandkit"
local errors = require "sandkit.errors"

local MIB = 1024 * 1024

-- 1 MiB of every byte value in turn.
local function block()
  local t = {}
  for i = 0, 255 do t[#t + 1] = string.char(i) end
  return string.rep(table.concat(t), MIB / 256)
end

return function(config, env)
  env = env or getfenv(2) -- Lua 5.1 and LuaJIT have no _ENV: the caller's environment
  local describe, it, setup, teardown, assert, pending =
    env.describe, env.it, env.setup, env.teardown, env.assert, env.pending

  local function expect_kind(kind, ok, err)
    assert.is_nil(ok)
    assert.is_true(errors.is(err, kind), ("expected %s, got %s"):format(kind, tostring(err)))
  end

  describe(config.name, function()
    local fs
    local n = 0
    -- a fresh directory per case keeps cases independent on a shared fs
    local function dir()
      n = n + 1
      local d = ("case%d"):format(n)
      assert(fs:mkdir(d))
      return d
    end

    setup(function() fs = config.create() end)
    teardown(function() if config.cleanup then config.cleanup(fs) end end)

    it("round-trips all 256 byte values, NUL included", function()
      local d = dir()
      local t = {}
      for i = 0, 255 do t[#t + 1] = string.char(i) end
      local data = table.concat(t) .. "\0\0\r\n" .. table.concat(t):reverse()
      assert.is_true(fs:write_file(d .. "/bytes.bin", data))
      assert.equal(data, fs:read_file(d .. "/bytes.bin"))
      local chunks = {}
      assert.truthy(fs:read_file(d .. "/bytes.bin", { on_chunk = function(c) chunks[#chunks + 1] = c end }))
      assert.equal(data, table.concat(chunks))
      assert.equal(#data, fs:stat(d .. "/bytes.bin").size)
    end)

    local function big_case()
      local d = dir()
      local b = block()
      local i = 0
      assert.is_true(fs:write_file(d .. "/big.bin", function()
        i = i + 1
        if i <= 100 then return b end
      end))
      assert.equal(100 * MIB, fs:stat(d .. "/big.bin").size)
      local off, bad, max_chunk = 0, nil, 0
      local bb = b .. b
      assert.truthy(fs:read_file(d .. "/big.bin", { on_chunk = function(c)
        if #c > max_chunk then max_chunk = #c end
        local pos = 1
        while pos <= #c and not bad do
          local start = off % MIB
          local take = math.min(#c - pos + 1, MIB)
          if c:sub(pos, pos + take - 1) ~= bb:sub(start + 1, start + take) then bad = off end
          off = off + take
          pos = pos + take
        end
      end }))
      assert.is_nil(bad)
      assert.equal(100 * MIB, off)
      -- streamed: no chunk is the whole file
      assert.is_true(max_chunk <= 16 * MIB)
      assert.is_true(fs:delete_file(d .. "/big.bin"))
    end
    if config.big == false then pending("a 100 MiB file streams both ways") else
      it("a 100 MiB file streams both ways", big_case)
    end

    it("bounds a whole read by max_bytes (EFBIG naming the limit), not a streamed one", function()
      local d = dir()
      local data = ("0123456789"):rep(1000)
      assert.is_true(fs:write_file(d .. "/ten.txt", data))
      local r, err = fs:read_file(d .. "/ten.txt", { max_bytes = #data - 1 })
      assert.is_nil(r)
      assert.equal("FilesystemError", err.kind, tostring(err))
      assert.equal("EFBIG", err.code)
      assert.equal(#data - 1, err.limit)
      assert.truthy(err.message:find("max_bytes (9999 bytes)", 1, true), err.message)
      assert.equal(data, fs:read_file(d .. "/ten.txt", { max_bytes = #data }))
      assert.equal(data, fs:read_file(d .. "/ten.txt"))
      local n = 0
      assert.truthy(fs:read_file(d .. "/ten.txt", { on_chunk = function(c) n = n + #c end }))
      assert.equal(#data, n)
    end)

    it("keeps unicode and space-laden names", function()
      local d = dir()
      local names = { "with space.txt", "ünïcødé 文件.txt", "quote's \"double\".txt", "why?.txt", "a&b #1.txt", "-dash.txt" }
      for _, name in ipairs(names) do
        assert.is_true(fs:write_file(d .. "/sub dir/" .. name, name))
      end
      for _, name in ipairs(names) do
        assert.equal(name, fs:read_file(d .. "/sub dir/" .. name))
      end
      local seen = {}
      for _, e in ipairs(assert(fs:readdir(d .. "/sub dir"))) do seen[e.name] = e.type end
      for _, name in ipairs(names) do assert.equal("file", seen[name]) end
      assert.is_true(fs:exists(d .. "/sub dir/" .. names[2]))
    end)

    it("creates, lists and removes nested directories", function()
      local d = dir()
      assert.is_true(fs:mkdir(d .. "/a/b/c", { recursive = true }))
      assert.is_true(fs:write_file(d .. "/a/b/c/x.lua", "x"))
      assert.is_true(fs:write_file(d .. "/a/y.txt", "yy"))
      assert.is_true(fs:write_file(d .. "/a/b/z.lua", "zzz"))
      local st = assert(fs:stat(d .. "/a/b"))
      assert.equal("directory", st.type)
      assert.equal("b", st.name)
      local fst = assert(fs:stat(d .. "/a/y.txt"))
      assert.equal("file", fst.type)
      assert.equal(2, fst.size)
      assert.truthy(fst.modified_at:match("^%d%d%d%d%-%d%d%-%d%dT"))
      local names = {}
      for _, e in ipairs(assert(fs:readdir(d .. "/a", { recursive = true }))) do names[e.name] = e end
      assert.equal("directory", names["b"].type)
      assert.equal("directory", names["b/c"].type)
      assert.equal("file", names["b/c/x.lua"].type)
      assert.equal(2, names["y.txt"].size)
      local lua = {}
      for _, e in ipairs(assert(fs:readdir(d .. "/a", { recursive = true, extension = ".lua" }))) do
        if e.type == "file" then lua[#lua + 1] = e.name end
      end
      table.sort(lua)
      assert.same({ "b/c/x.lua", "b/z.lua" }, lua)
      local flat = {}
      for _, e in ipairs(assert(fs:readdir(d .. "/a"))) do flat[#flat + 1] = e.name end
      table.sort(flat)
      assert.same({ "b", "y.txt" }, flat)
      assert.is_true(fs:rmdir(d .. "/a", { recursive = true }))
      assert.is_false(fs:exists(d .. "/a"))
      assert.is_false(fs:exists(d .. "/a/b/c/x.lua"))
    end)

    it("gives every error kind", function()
      local d = dir()
      assert.is_true(fs:write_file(d .. "/f.txt", "f"))
      assert.is_true(fs:mkdir(d .. "/sub"))
      assert.is_true(fs:write_file(d .. "/sub/inner.txt", "i"))
      expect_kind("FileNotFoundError", fs:read_file(d .. "/missing.txt"))
      expect_kind("FileNotFoundError", fs:stat(d .. "/missing.txt"))
      expect_kind("FileNotFoundError", fs:delete_file(d .. "/missing.txt"))
      assert.is_true(fs:delete_file(d .. "/missing.txt", { force = true }))
      expect_kind("FileNotFoundError", fs:copy_file(d .. "/missing.txt", d .. "/x.txt"))
      expect_kind("FileNotFoundError", fs:move_file(d .. "/missing.txt", d .. "/x.txt"))
      expect_kind("IsDirectoryError", fs:read_file(d .. "/sub"))
      expect_kind("IsDirectoryError", fs:delete_file(d .. "/sub"))
      expect_kind("NotDirectoryError", fs:readdir(d .. "/f.txt"))
      expect_kind("NotDirectoryError", fs:rmdir(d .. "/f.txt"))
      expect_kind("DirectoryNotFoundError", fs:readdir(d .. "/nodir"))
      expect_kind("DirectoryNotFoundError", fs:rmdir(d .. "/nodir"))
      assert.is_true(fs:rmdir(d .. "/nodir", { force = true }))
      expect_kind("DirectoryNotFoundError", fs:mkdir(d .. "/no/parent", { recursive = false }))
      expect_kind("DirectoryNotFoundError", fs:write_file(d .. "/no/parent.txt", "x", { recursive = false }))
      expect_kind("FileExistsError", fs:mkdir(d .. "/f.txt"))
      expect_kind("DirectoryNotEmptyError", fs:rmdir(d .. "/sub"))
      assert.is_false(fs:exists(d .. "/missing.txt"))
      assert.is_true(fs:exists(d .. "/sub"))
      -- a mkdir of an existing directory is fine
      assert.is_true(fs:mkdir(d .. "/sub"))
    end)

    it("follows the overwrite rules", function()
      local d = dir()
      assert.is_true(fs:write_file(d .. "/a.txt", "one"))
      assert.is_true(fs:write_file(d .. "/a.txt", "two"))
      assert.equal("two", fs:read_file(d .. "/a.txt"))
      expect_kind("FileExistsError", fs:write_file(d .. "/a.txt", "three", { overwrite = false }))
      assert.equal("two", fs:read_file(d .. "/a.txt"))
      assert.is_true(fs:write_file(d .. "/b.txt", "bee", { overwrite = false }))
      -- a store that always overwrites refuses overwrite = false outright
      local no_overwrite = config.refuses_no_overwrite and "FilesystemError" or "FileExistsError"
      expect_kind(no_overwrite, fs:copy_file(d .. "/a.txt", d .. "/b.txt", { overwrite = false }))
      expect_kind(no_overwrite, fs:move_file(d .. "/a.txt", d .. "/b.txt", { overwrite = false }))
      assert.equal("bee", fs:read_file(d .. "/b.txt"))
      assert.is_true(fs:copy_file(d .. "/a.txt", d .. "/b.txt"))
      assert.equal("two", fs:read_file(d .. "/b.txt"))
      assert.is_true(fs:copy_file(d .. "/a.txt", d .. "/deep/er/c.txt"))
      assert.equal("two", fs:read_file(d .. "/deep/er/c.txt"))
      assert.is_true(fs:move_file(d .. "/b.txt", d .. "/moved.txt"))
      assert.is_false(fs:exists(d .. "/b.txt"))
      assert.equal("two", fs:read_file(d .. "/moved.txt"))
      assert.is_true(fs:append_file(d .. "/moved.txt", "+more"))
      assert.is_true(fs:append_file(d .. "/new.txt", "fresh"))
      assert.equal("two+more", fs:read_file(d .. "/moved.txt"))
      assert.equal("fresh", fs:read_file(d .. "/new.txt"))
      assert.is_true(fs:write_file(d .. "/empty.txt", ""))
      assert.equal("", fs:read_file(d .. "/empty.txt"))
      assert.equal(0, fs:stat(d .. "/empty.txt").size)
    end)

    if config.create_read_only then
      it("refuses every write when read-only, and still reads", function()
        local d = dir()
        assert.is_true(fs:write_file(d .. "/r.txt", "r"))
        local ro = config.create_read_only()
        assert.is_true(ro.read_only)
        assert.is_true(ro:info().read_only)
        assert.equal("r", ro:read_file(d .. "/r.txt"))
        expect_kind("WorkspaceReadOnlyError", ro:write_file(d .. "/r.txt", "w"))
        expect_kind("WorkspaceReadOnlyError", ro:append_file(d .. "/r.txt", "w"))
        expect_kind("WorkspaceReadOnlyError", ro:delete_file(d .. "/r.txt"))
        expect_kind("WorkspaceReadOnlyError", ro:copy_file(d .. "/r.txt", d .. "/c.txt"))
        expect_kind("WorkspaceReadOnlyError", ro:move_file(d .. "/r.txt", d .. "/c.txt"))
        expect_kind("WorkspaceReadOnlyError", ro:mkdir(d .. "/m"))
        expect_kind("WorkspaceReadOnlyError", ro:rmdir(d))
        assert.equal("r", fs:read_file(d .. "/r.txt"))
        assert.is_false(fs:exists(d .. "/c.txt"))
      end)
    else
      pending("refuses every write when read-only (no read-only variant)")
    end

    it("lets concurrent writers write different files", function()
      local d = dir()
      local tasks = {}
      for w = 1, 6 do
        tasks[w] = sandkit.spawn(function()
          local i = 0
          return fs:write_file(("%s/w%d.txt"):format(d, w), function()
            i = i + 1
            if i > 20 then return nil end
            sandkit.sleep(0)
            return (("%d:%d;"):format(w, i)):rep(500)
          end)
        end)
      end
      sandkit.run()
      for w = 1, 6 do
        assert.is_true(tasks[w]:wait())
        local want = {}
        for i = 1, 20 do want[i] = (("%d:%d;"):format(w, i)):rep(500) end
        assert.equal(table.concat(want), fs:read_file(("%s/w%d.txt"):format(d, w)))
      end
    end)

    it("raises on misuse", function()
      assert.has_error(function() fs:read_file(nil) end)
      assert.has_error(function() fs:read_file("a\0b") end)
      assert.has_error(function() fs:write_file("x", 42) end)
      assert.has_error(function() fs:write_file("x", "y", { overwite = true }) end)
      assert.has_error(function() fs:mkdir("x", { recursive = "yes" }) end)
      assert.has_error(function() fs.read_file(nil, "x") end)
      local d = dir()
      assert.has_error(function()
        fs:write_file(d .. "/bad.txt", function() return 42 end)
      end)
    end)

    it("describes itself", function()
      local i = fs:info()
      assert.equal(fs.id, i.id)
      assert.equal(fs.provider, i.provider)
      assert.is_string(fs:instructions())
      assert.truthy(#fs:instructions() > 0)
    end)

    local esc = config.escapes
    if esc then
      it("refuses escapes: .., absolute paths and symlinks", function()
        local outside = esc.outside_dir()
        local secret = outside .. "/secret.txt"
        local f = assert(io.open(secret, "w"))
        f:write("SECRET")
        f:close()
        local d = dir()
        -- `..` climbing out
        local deep = ("../"):rep(40)
        local r, err = fs:read_file(deep .. secret:sub(2))
        assert.is_nil(r)
        assert.is_not_nil(err)
        r = fs:write_file(deep .. outside:sub(2) .. "/planted.txt", "x")
        assert.is_nil(r)
        -- absolute paths never reach the host's file
        local got = fs:read_file(secret)
        assert.are_not.equal("SECRET", got)
        -- symlinks out, absolute and relative
        esc.symlink(d .. "/abs", secret)
        esc.symlink(d .. "/rel", deep .. secret:sub(2))
        esc.symlink(d .. "/dirlink", outside)
        for _, link in ipairs({ "abs", "rel" }) do
          local v, e = fs:read_file(d .. "/" .. link)
          assert.is_nil(v)
          assert.is_not_nil(e)
          assert.is_nil((fs:write_file(d .. "/" .. link, "overwritten")))
          assert.is_nil((fs:append_file(d .. "/" .. link, "more")))
          assert.is_nil((fs:copy_file(d .. "/" .. link, d .. "/copy.txt")))
        end
        assert.is_nil((fs:write_file(d .. "/dirlink/planted.txt", "x")))
        assert.is_nil((fs:readdir(d .. "/dirlink")))
        assert.is_nil((fs:mkdir(d .. "/dirlink/newdir")))
        -- deleting a link removes the link, never its target
        assert.is_true(fs:delete_file(d .. "/abs"))
        assert.is_true(fs:rmdir(d, { recursive = true }))
        f = assert(io.open(secret))
        assert.equal("SECRET", f:read("*a"))
        f:close()
        assert.is_nil(io.open(outside .. "/planted.txt"))
        assert.is_nil(io.open(outside .. "/newdir"))
      end)
    end
  end)
end
