--- sb.fs: the sandbox's own filesystem as its commands see it, with the
-- sandkit.Filesystem interface. Relative paths start at the working
-- directory. Local sandboxes use confined system calls on the host (the
-- working directory and, under bwrap, the private /tmp); the others run
-- commands in the sandbox (lua/sandkit/fs/exec.lua).
local core = require "sandkit.core"
local fs = require "sandkit.fs"
local fserrors = require "sandkit.fs.errors"
local pathmod = require "sandkit.fs.path"

local M = {}

local function under(abs, dir)
  if abs == dir then return "" end
  if dir == "/" then return abs:sub(2) end
  if abs:sub(1, #dir + 1) == dir .. "/" then return abs:sub(#dir + 2) end
  return nil
end

local function local_backend(sb)
  local roots = {} -- host directory -> root userdata
  local function root_for(dir, path, op)
    local r = roots[dir]
    if r then return r end
    local root, code, msg = core.fs_root(dir, false)
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
    local wd = pathmod.normalize(meta.working_directory)
    local abs
    if path:sub(1, 1) == "/" then
      abs = pathmod.normalize(path)
    else
      local segs, escaped = pathmod.segments(path)
      if escaped then return nil, fserrors.PermissionError(path, op) end
      abs = pathmod.normalize(wd .. "/" .. table.concat(segs, "/"))
    end
    local rel = under(abs, wd)
    local dir = wd
    if not rel and meta.tmp_directory then
      rel = under(abs, "/tmp")
      dir = meta.tmp_directory
    end
    if not rel then return nil, fserrors.PermissionError(path, op) end
    local root, rerr = root_for(dir, path, op)
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

--- The Filesystem object of sandbox `sb` (no I/O until used).
function M.for_sandbox(sb)
  local backend
  if sb.provider == "local" then
    backend = local_backend(sb)
  else
    backend = require("sandkit.fs.exec").backend(sb)
  end
  return fs.new(backend, {
    id = sb.id .. "-fs", name = sb.name .. " filesystem", provider = sb.provider, read_only = false,
  })
end

return M
