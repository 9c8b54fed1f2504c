--- sb.fs of a LocalSandbox (the descriptor's filesystem = "own"): the
-- sandbox's files as its commands see them, through confined system calls
-- on the host (the working directory and, under bwrap, the private /tmp
-- and the read_write_paths / read_only_paths binds). Relative paths start
-- at the working directory. When the sandbox's commands run as another
-- user than the caller (a root caller under bwrap: metadata.sandbox_user),
-- sb.fs acts as that user: what it creates is theirs, and it can read and
-- write only what they can (src/lua/fs_ud.c says how).
local core = require "sandkit.core"
local fserrors = require "sandkit.fs.errors"
local pathmod = require "sandkit.fs.path"

local M = {}

local function under(abs, dir)
  if abs == dir then return "" end
  if dir == "/" then return abs:sub(2) end
  if abs:sub(1, #dir + 1) == dir .. "/" then return abs:sub(#dir + 2) end
  return nil
end

-- Operations that change the file system (a read-only bind refuses them).
local WRITES = { write = true, delete = true, mkdir = true, rmdir = true, move = true }

local function host_abs(p)
  if p:sub(1, 1) ~= "/" then p = core.fs_getcwd() .. "/" .. p end
  return pathmod.normalize(p)
end

-- What the sandbox's commands may touch, as { dir (as they see it), host
-- directory, ro }: the working directory, and under bwrap its /tmp and the
-- read_write_paths / read_only_paths binds.
local function binds_of(meta, o)
  local wd = pathmod.normalize(meta.working_directory)
  local list = { { dir = wd, host = wd, ro = false } }
  if meta.isolation == "bwrap" then
    if meta.tmp_directory then list[#list + 1] = { dir = "/tmp", host = meta.tmp_directory, ro = false } end
    for _, p in ipairs(o.read_write_paths or {}) do
      local a = host_abs(p)
      list[#list + 1] = { dir = a, host = a, ro = false }
    end
    for _, p in ipairs(o.read_only_paths or {}) do
      local a = host_abs(p)
      list[#list + 1] = { dir = a, host = a, ro = true }
    end
  end
  return list
end

--- The backend of sandbox `sb` with options `o` (no I/O until used).
local function local_backend(sb, o)
  local roots = {} -- host directory -> root userdata
  local function root_for(dir, path, op, user)
    local r = roots[dir]
    if r then return r end
    local root, code, msg
    if user then
      root, code, msg = core.fs_root(dir, false, user.uid, user.gid)
    else
      root, code, msg = core.fs_root(dir, false)
    end
    if not root then
      return nil, require("sandkit.fs.local").map(code, msg, path, op, fserrors.DirectoryNotFoundError)
    end
    roots[dir] = root
    return root
  end
  local function resolve(path, op)
    local ok, err = sb:ensure_running()
    if not ok then return nil, err end
    local meta = sb:info().metadata
    local binds = binds_of(meta, o)
    local abs
    if path:sub(1, 1) == "/" then
      abs = pathmod.normalize(path)
    else
      local segs, escaped = pathmod.segments(path)
      if escaped then return nil, fserrors.PermissionError(path, op) end
      abs = pathmod.normalize(binds[1].dir .. "/" .. table.concat(segs, "/"))
    end
    -- the innermost bind wins (bwrap mounts nested binds over outer ones;
    -- the same path given read-only and writable ends up read-only)
    local best, rel
    for _, b in ipairs(binds) do
      local r = under(abs, b.dir)
      if r and (not best or #b.dir > #best.dir or (#b.dir == #best.dir and b.ro)) then best, rel = b, r end
    end
    if not best or (best.ro and WRITES[op]) then return nil, fserrors.PermissionError(path, op) end
    local root, rerr = root_for(best.host, path, op, meta.sandbox_user)
    if not root then return nil, rerr end
    return root, rel, abs
  end
  local b = require("sandkit.fs.local").backend(resolve)
  function b.info()
    local meta = sb:info().metadata
    return { status = sb.status, base_path = meta.working_directory }
  end
  function b.instructions()
    local meta = sb:info().metadata
    return ("Files of the local sandbox: relative paths start at its working directory %s%s."):format(
      meta.working_directory, meta.isolation == "bwrap" and "; /tmp is its private /tmp" or "")
  end
  return b
end

M.backend = local_backend

return M
