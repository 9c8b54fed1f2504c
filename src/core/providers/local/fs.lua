--- sb.fs of a LocalSandbox (the descriptor's filesystem = "own"): the
-- sandbox's files as its commands see them, through confined system calls
-- on the host in a view of the descriptors its start pinned (the working
-- directory and, under bwrap, the private /tmp and the read_write_paths /
-- read_only_paths binds). Relative paths start at the working directory.
-- When the sandbox's commands run as another user than the caller (a root
-- caller under bwrap: metadata.sandbox_user), sb.fs acts as that user: what
-- it creates is theirs, and it can read and write only what they can
-- (src/lua/fs_ud.c says how).
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

-- A LocalSandbox's sb.fs works in a view (src/core/fs_local.h) over the
-- descriptors its start pinned: the working directory, the private /tmp
-- and each read_only_paths/read_write_paths bind, at the paths the
-- commands see them (with isolation "none", the working directory's path,
-- where its commands run; docs/security.md §"sb.fs: the pinned view"). A path is
-- resolved in that view by the core, a component at a time: a symlink
-- leads where it leads the commands, and read-only is decided by the mount
-- it resolves into. Each path is handed to the root of the deepest mount
-- it is spelled under, so that "the root of a mount" (which cannot be
-- written as a file, deleted or moved) stays visible as rel == "".
local function local_backend(sb)
  local view, roots, mounts, wd -- of the pins current at the last call
  local function resolve(path, op)
    local ok, err = sb:ensure_running()
    if not ok then return nil, err end
    local v, code, msg = core.local_fs_view(sb, view)
    if not v then
      return nil, fserrors.FilesystemError(path, code, "The sandbox's files cannot be reached (" .. msg .. ")")
    end
    if v ~= view then
      view, roots, mounts, wd = v, {}, v:mounts(), pathmod.normalize(v:working_directory())
    end
    local abs
    if path:sub(1, 1) == "/" then
      abs = pathmod.normalize(path)
    else
      local segs, escaped = pathmod.segments(path)
      if escaped then return nil, fserrors.PermissionError(path, op) end
      abs = pathmod.normalize(wd .. "/" .. table.concat(segs, "/"))
    end
    local base, rel = "/", abs:sub(2)
    for _, m in ipairs(mounts) do
      local r = under(abs, m.path)
      if r and (base == "/" or #m.path > #base) then base, rel = m.path, r end
    end
    local root = roots[base]
    if not root then
      root = view:root(base)
      roots[base] = root
    end
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

--- The backend of sandbox `sb` (no I/O until used; its options are in the
-- pinned view).
function M.backend(sb) return local_backend(sb) end

return M
