-- sb.fs of a DockerSandbox through the archive endpoints
-- (src/core/providers/docker/fs.lua, docs/protocols/docker.md §9): what goes
-- there runs no process in the container, byte-exact, with the sb.fs
-- contract (max_bytes, never a FIFO, symlinks resolved in the container),
-- and a daemon that lies about a tar or floods one is cut off with a clear
-- error (a fake daemon, spec/servers/docker/fake_daemon.mjs).
local sandkit = require "sandkit"
local podman = require "helpers.podman"
local server = require "helpers.server"
local child = require "helpers.child"

local FAKE = child.ROOT .. "/spec/servers/docker/fake_daemon.mjs"

-- The exec sessions the daemon has seen in sb's container (Podman keeps
-- an ended one for a minute: the specs' containers.conf).
local function exec_count(env, sb)
  local body, status = env:api("GET", "/v1.41/containers/" .. sb:info().metadata.container_id .. "/json")
  assert.equal(200, status, body)
  return #(require("cjson").decode(body).ExecIDs or {})
end

describe("DockerSandbox sb.fs through the archive endpoints", function()
  if not podman.usable(pending, "DockerSandbox archive sb.fs") then return end
  local env, sb, fs

  setup(function()
    env = podman.new()
    sb = env:sandbox { timeout = 60000 }
    assert(sb:start())
    fs = sb.fs
  end)

  teardown(function()
    if env then env:close() end
  end)

  it("writes, reads, stats a new file with no command in the container, byte for byte", function()
    local t = {}
    for i = 0, 255 do t[#t + 1] = string.char(i) end
    local data = string.rep(table.concat(t), 4096) -- 1 MiB
    -- every byte but NUL, '/' and the glob characters in the name (Podman
    -- globs the archive path: those go through exec)
    local name = ("/tmp/n" .. table.concat(t, "", 2, 47) .. table.concat(t, "", 49, 256)):gsub("[%*%?%[\\]", "")
    local execs = exec_count(env, sb)
    assert.is_true(fs:write_file(name, data))
    assert.equal(data, fs:read_file(name))
    local st = assert(fs:stat(name))
    assert.same({ "file", #data }, { st.type, st.size })
    assert.is_true(fs:exists(name))
    assert.is_false(fs:exists("/tmp/none"))
    assert.equal(execs, exec_count(env, sb))
    -- the container sees the same bytes
    assert.equal("1048576", assert(sb:exec("cat /tmp/n* | wc -c")).stdout:match("%d+"))
  end)

  it("refuses past max_bytes before reading (EFBIG), and never a FIFO", function()
    assert(sb:exec("mkfifo /tmp/fifo; head -c 5000 /dev/zero > /tmp/five"))
    local execs = exec_count(env, sb)
    local r, err = fs:read_file("/tmp/five", { max_bytes = 4999 })
    assert.is_nil(r)
    assert.same({ "EFBIG", 4999 }, { err.code, err.limit })
    r, err = fs:read_file("/tmp/fifo")
    assert.is_nil(r)
    assert.same({ "FilesystemError", "EINVAL" }, { err.kind, err.code })
    assert.equal(execs, exec_count(env, sb))
  end)

  it("follows a symlink inside the container (exec), an absolute link to the container's file", function()
    assert(fs:write_file("/tmp/inside.txt", "container's"))
    assert(sb:exec("ln -s /tmp/inside.txt /tmp/link"))
    assert.equal("container's", fs:read_file("/tmp/link"))
    assert.equal("file", fs:stat("/tmp/link").type)
  end)

  it("writes over an existing file through exec: its mode and inode stay", function()
    assert(fs:write_file("/tmp/keep.txt", "one"))
    assert(sb:exec("chmod 600 /tmp/keep.txt"))
    local before = assert(sb:exec("stat -c '%a %i' /tmp/keep.txt")).stdout
    assert.is_true(fs:write_file("/tmp/keep.txt", "two"))
    assert.equal("two", fs:read_file("/tmp/keep.txt"))
    assert.equal(before, assert(sb:exec("stat -c '%a %i' /tmp/keep.txt")).stdout)
  end)

  it("a container removed behind its back: an error saying so, not a missing file", function()
    local other = env:sandbox { timeout = 60000 }
    assert(other:start())
    local id = other:info().metadata.container_id
    local _, status = env:api("DELETE", "/v1.41/containers/" .. id .. "?force=1")
    assert.equal(204, status)
    for _, call in ipairs({ "read_file", "stat", "exists" }) do
      local r, err = other.fs[call](other.fs, "/etc/passwd")
      assert.is_nil(r, call)
      assert.is_not.equal("FileNotFoundError", err.kind, call)
    end
    other:destroy()
  end)
end)

describe("DockerSandbox sb.fs against a hostile archive stream", function()
  local srv
  local function fake(mode)
    local sock = require("helpers.tmp").dir() .. "/" .. mode .. ".sock"
    srv = server.start(FAKE, { sock, mode })
    local sb = sandkit.DockerSandbox { docker_host = "unix://" .. sock, image = "fake", timeout = 20000 }
    assert(sb:start())
    return sb
  end
  after_each(function()
    if srv then srv:stop() end
    srv = nil
  end)

  it("an entry longer than it says, without end: cut past max_bytes plus the tar's slack", function()
    local sb = fake("tar_flood")
    local t0 = sandkit.now()
    local r, err = sb.fs:read_file("/f", { max_bytes = 1000 })
    assert.is_nil(r)
    assert.equal("EIO", err.code)
    assert.matches("bad archive: more data than the entry holds", err.message)
    assert.truthy(sandkit.now() - t0 < 20000)
  end)

  it("an entry of 1 GiB where the stat said 10 bytes: EFBIG, nothing of it kept", function()
    local sb = fake("tar_huge")
    local r, err = sb.fs:read_file("/f", { max_bytes = 1000 })
    assert.is_nil(r)
    assert.same({ "EFBIG", 1000 }, { err.code, err.limit })
  end)

  it("a body that is no tar: a clear error", function()
    local sb = fake("tar_bad")
    local r, err = sb.fs:read_file("/f")
    assert.is_nil(r)
    assert.matches("the Docker daemon sent a bad archive", err.message)
  end)

  it("a directory in the stat: IsDirectoryError without reading its endless body", function()
    local sb = fake("tar_dir")
    local r, err = sb.fs:read_file("/f")
    assert.is_nil(r)
    assert.equal("IsDirectoryError", err.kind)
  end)
end)
