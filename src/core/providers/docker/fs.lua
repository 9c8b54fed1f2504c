--- sb.fs of a DockerSandbox (the descriptor's filesystem = "own"): stat,
-- exists, whole reads and the creation of a new file go through the
-- Engine API's archive endpoints (HEAD, GET and PUT
-- /containers/{id}/archive: one request each, no process in the
-- container; the provider's fs operations in docker_fs.c, tar through
-- libarchive in docker_archive.c, reached through core.ops_open /
-- core.ops_call); the rest, and whatever those endpoints would do otherwise
-- than the container's own commands, stays on the shared exec-script
-- backend (lua/sandkit/fs/exec.lua):
--   * a path with an empty, "." or ".." component or a trailing slash (the
--     daemon cleans a path lexically; the container's kernel does not);
--   * a path with a glob character (* ? [ or \: Podman's archive endpoints
--     take the path as a glob pattern, Docker's do not);
--   * a symlink (the archive hands over the link itself; exec follows it,
--     inside the container);
--   * streamed reads (on_chunk: the archive's tar is read whole, bounded by
--     max_bytes, so a read without that bound stays on exec's pieces);
--   * writes over an existing file (a PUT replaces the file: a new inode,
--     owner and mode from the tar, a symlink replaced instead of written
--     through), chunk sources, recursive = false (Podman's PUT makes
--     missing parents, as mkdir -p would), and anything the daemon refuses
--     (Docker's 404 for a missing parent: exec makes it, or names the error
--     as it does elsewhere).
-- docs/protocols/docker.md §9 says what Docker and Podman do.
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local fserrors = require "sandkit.fs.errors"
local fs = require "sandkit.fs"
local pathmod = require "sandkit.fs.path"
local ops = require "sandkit.ops"

local M = {}

local OP_TIMEOUT_MS = 600000
-- A write builds its tar whole (content and tar both in memory): larger
-- strings go in exec's pieces.
local WRITE_MAX = 64 * 1024 * 1024

local Backend = {}

-- The absolute container path the archive endpoints may be given for
-- `path`, or nil (exec's job; see the header).
function Backend:archive_path(path)
  if path:find("[%*%?%[\\]") then return nil end
  local abs = path
  if abs:sub(1, 1) ~= "/" then
    -- the working directory is fixed at creation: asked once (info()
    -- inspects the container), and on failure exec's commands answer
    if not self.wd then
      local info = self.sb:info()
      self.wd = info and info.metadata.working_dir
      if not self.wd then return nil end
    end
    abs = (self.wd == "/" and "" or self.wd) .. "/" .. path
  end
  for seg in (abs:sub(2) .. "/"):gmatch("([^/]*)/") do
    if seg == "" or seg == "." or seg == ".." then return nil end
  end
  return abs
end

-- One archive request: status, info (docker_fs.c's head says what they
-- hold), and the bytes a read got; or nil, err.
function Backend:op(o, body)
  local ok, err = self.sb:ensure_running()
  if not ok then return nil, err end
  local t = self.options.timeout
  o.timeout_ms = (t and t > 0) and t or OP_TIMEOUT_MS
  o.collect = o.kind == "read"
  local rec, oerr = ops.call(function()
    self.client = self.client or core.ops_open(self.sb, "fs")
    return self.client
  end, o, body, function(r, head) r.status, r.info = head:match("^(%d+) ?(.*)$") end)
  if not rec then return nil, oerr end
  local got
  if o.collect then
    local msg
    got, msg = core.ops_body(rec.handle)
    if not got then return nil, errors.new("OutOfMemoryError", msg) end
  end
  return tonumber(rec.status), rec.info, got
end

-- A GET's 404 that means the path is missing, not the container (Docker
-- and Podman say "No such container" for that; exec then reports it).
local function no_path(status, info)
  return status == 404 and not (info or ""):lower():find("no such container", 1, true)
end

-- "<t> <size> <mtime_ms>" as t, size, mtime_ms.
local function parse_stat(info)
  local t, size, ms = (info or ""):match("^(%a) (%d+) (%-?%d+)$")
  return t, tonumber(size), tonumber(ms)
end

-- The path's stat from HEAD: status, t, size, mtime_ms; or nil, err.
function Backend:head(ap)
  local status, info = self:op({ kind = "stat", path = ap })
  if not status then return nil, info end
  if status == 404 then
    -- a HEAD's 404 has no message: the container's root answers 200 when
    -- it is the path that is missing, not the container
    local root = self:op({ kind = "stat", path = "/" })
    if root == 200 then return 404 end
  end
  if status ~= 200 then return 0 end -- 0: ask exec
  local t, size, ms = parse_stat(info)
  if not t then return nil, errors.new("DockerApiError", "Docker daemon's archive stat: " .. tostring(info)) end
  return status, t, size, ms
end

function Backend:stat(path)
  local ap = self:archive_path(path)
  if not ap then return self.exec:stat(path) end
  local status, t, size, ms = self:head(ap)
  if not status then return nil, t end
  if status == 404 then return nil, fserrors.FileNotFoundError(path) end
  if status ~= 200 or (t ~= "f" and t ~= "d") then return self.exec:stat(path) end
  local iso = fs.iso(ms)
  return { name = pathmod.basename(path) or "", path = path, type = t == "d" and "directory" or "file",
    size = t == "d" and 0 or size, created_at = iso, modified_at = iso }
end

function Backend:exists(path)
  local ap = self:archive_path(path)
  if not ap then return self.exec:exists(path) end
  local status, t = self:head(ap)
  if not status then return nil, t end
  if status == 404 then return false end
  if status == 200 and (t == "f" or t == "d") then return true end
  return self.exec:exists(path)
end

function Backend:read_file(path, opts)
  local ap = not opts.on_chunk and self:archive_path(path)
  if not ap then return self.exec:read_file(path, opts) end
  local max = opts.max_bytes
  local status, info, got = self:op({ kind = "read", path = ap, max_bytes = max })
  if not status then return nil, info end
  if no_path(status, info) then return nil, fserrors.FileNotFoundError(path) end
  if status ~= 200 then return self.exec:read_file(path, opts) end
  if info == "too_large" then return nil, fserrors.TooLarge(path, max) end
  local kind = info:match("^not_regular (%a)$")
  if kind == "d" then return nil, fserrors.IsDirectoryError(path) end
  if kind == "l" then return self.exec:read_file(path, opts) end
  if kind then return nil, fserrors.NotRegular(path) end
  local why = info:match("^bad_archive: (.*)$")
  if why then
    return nil, fserrors.FilesystemError(path, "EIO", "the Docker daemon sent a bad archive: " .. why)
  end
  return got
end

function Backend:write_file(path, content, opts)
  -- recursive = false: Podman's PUT makes missing parents (Docker's: 404)
  local ap = type(content) == "string" and #content <= WRITE_MAX and opts.recursive ~= false
    and self:archive_path(path)
  if not ap then return self.exec:write_file(path, content, opts) end
  local status, err = self:head(ap)
  if not status then return nil, err end
  if status == 404 then
    local put, perr = self:op({ kind = "write", path = ap, mode = 420 }, content) -- 0644
    if not put then return nil, perr end
    if put == 200 then return true end
    -- any other answer: exec's commands do it or name the error
  end
  return self.exec:write_file(path, content, opts)
end

function M.backend(sb, o)
  return require("sandkit.fs.exec").beneath(Backend, sb, o)
end

return M
