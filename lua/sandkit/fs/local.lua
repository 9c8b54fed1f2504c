--- The local backend of sandkit.Filesystem: system calls beneath root
-- directory descriptors (src/core/fs_local.c), so ".." and symlinks never
-- lead outside a root. One root for LocalFilesystem; the working directory
-- and the private /tmp for a LocalSandbox's sb.fs.
local compat = require "sandkit.compat"
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local fs = require "sandkit.fs"
local fserrors = require "sandkit.fs.errors"
local options = require "sandkit.options"
local pathmod = require "sandkit.fs.path"

local M = {}

-- Reads go in 64 KiB pieces: LuaJIT's allocator maps every string over
-- 128 KiB on its own (an mmap and its page faults each: 1 MiB pieces read
-- ten times slower there), and 5.4 reads 64 KiB pieces as fast.
local CHUNK = 64 * 1024

local Backend = {}
Backend.__index = Backend

-- A system error (errno name) as the typed error of the operation.
local function map(code, msg, path, op, notfound)
  if code == "ENOENT" then return (notfound or fserrors.FileNotFoundError)(path) end
  if code == "EEXIST" then return fserrors.FileExistsError(path) end
  if code == "EISDIR" then return fserrors.IsDirectoryError(path) end
  if code == "ENOTDIR" then return fserrors.NotDirectoryError(path) end
  if code == "ENOTEMPTY" then return fserrors.DirectoryNotEmptyError(path) end
  if code == "EXDEV" or code == "EACCES" or code == "EPERM" or code == "EROFS" then
    return fserrors.PermissionError(path, op)
  end
  if code == "EINVAL" and op ~= "rename" then return fserrors.NotRegular(path) end
  if code == "ENOMEM" then return fserrors.OutOfMemory(path, op) end
  return fserrors.FilesystemError(path, code, msg)
end

--- resolve(path, op) -> root userdata, relative path, shown path; or nil, err.
function M.backend(resolve, fields)
  local b = setmetatable({ resolve = resolve }, Backend)
  for k, v in pairs(fields or {}) do b[k] = v end
  return b
end

function Backend:read_file(path, opts)
  local root, rel = self.resolve(path, "read")
  if not root then return nil, rel end
  local f, code, msg = root:open(rel, "r")
  if not f then return nil, map(code, msg, path, "read") end
  local size = code
  return compat.closing(f, function(file)
    if not opts.on_chunk then
      local data, c2, m2 = file:read_all(size, opts.max_bytes)
      if c2 == "EFBIG" then return nil, fserrors.TooLarge(path, opts.max_bytes) end
      if not data then return nil, map(c2, m2, path, "read") end
      return data
    end
    local n = opts.chunk_size or CHUNK
    while true do
      local chunk, c2, m2 = file:read(n)
      if chunk == nil then
        if c2 then return nil, map(c2, m2, path, "read") end
        return true
      end
      opts.on_chunk(chunk)
    end
  end)
end

-- mkdir -p of rel's segments beneath root; `path` names errors.
local function mkdir_p(root, rel, path)
  local segs = pathmod.segments(rel)
  local cur = ""
  for _, s in ipairs(segs) do
    cur = pathmod.join(cur, s)
    local ok, code, msg = root:mkdir(cur)
    if not ok then
      if code ~= "EEXIST" then return nil, map(code, msg, path, "mkdir", fserrors.DirectoryNotFoundError) end
      local st, c2, m2 = root:stat(cur)
      if not st then return nil, map(c2, m2, path, "mkdir") end
      if st.type ~= "directory" then return nil, fserrors.NotDirectoryError("/" .. cur) end
    end
  end
  return true
end

local function parent_of(rel)
  return rel:match("^(.*)/[^/]*$") or ""
end

local function write_to(root, rel, path, mode, content, op)
  local f, code, msg = root:open(rel, mode)
  if not f then return nil, map(code, msg, path, op, fserrors.DirectoryNotFoundError) end
  return compat.closing(f, function(file)
    local ok, err = fs.each_chunk(content, function(chunk)
      local w, c2, m2 = file:write(chunk)
      if not w then return nil, map(c2, m2, path, op) end
      return true
    end)
    if not ok then return nil, err end
    local closed, c3, m3 = file:close()
    if not closed then return nil, map(c3, m3, path, op) end
    return true
  end)
end

local function ensure_parent(root, rel, path, recursive)
  local parent = parent_of(rel)
  if recursive ~= false then return mkdir_p(root, parent, path) end
  local st, code, msg = root:stat(parent)
  if not st then return nil, map(code, msg, pathmod.dirname(path), "write", fserrors.DirectoryNotFoundError) end
  if st.type ~= "directory" then return nil, fserrors.NotDirectoryError(pathmod.dirname(path)) end
  return true
end

function Backend:write_file(path, content, opts)
  local root, rel = self.resolve(path, "write")
  if not root then return nil, rel end
  if rel == "" then return nil, fserrors.IsDirectoryError(path) end
  local ok, err = ensure_parent(root, rel, path, opts.recursive)
  if not ok then return nil, err end
  return write_to(root, rel, path, opts.overwrite == false and "x" or "w", content, "write")
end

function Backend:append_file(path, content)
  local root, rel = self.resolve(path, "write")
  if not root then return nil, rel end
  if rel == "" then return nil, fserrors.IsDirectoryError(path) end
  local ok, err = ensure_parent(root, rel, path, true)
  if not ok then return nil, err end
  return write_to(root, rel, path, "a", content, "write")
end

-- rm -r beneath root without following symlinks.
local function remove_tree(root, rel, path)
  local entries, code, msg = root:readdir(rel)
  if not entries then return nil, map(code, msg, path, "delete") end
  for _, e in ipairs(entries) do
    local sub = pathmod.join(rel, e.name)
    local ok, c2, m2
    if e.type == "directory" then
      ok, c2 = remove_tree(root, sub, path .. "/" .. e.name)
      if not ok then return nil, c2 end
    else
      ok, c2, m2 = root:unlink(sub)
      if not ok and c2 ~= "ENOENT" then return nil, map(c2, m2, path .. "/" .. e.name, "delete") end
    end
  end
  local ok, c3, m3 = root:rmdir(rel)
  if not ok and c3 ~= "ENOENT" then return nil, map(c3, m3, path, "delete") end
  return true
end

function Backend:delete_file(path, opts)
  local root, rel = self.resolve(path, "delete")
  if not root then return nil, rel end
  local st, code, msg = root:stat(rel, true)
  if not st then
    if code == "ENOENT" and opts.force then return true end
    return nil, map(code, msg, path, "delete")
  end
  if st.type == "directory" then
    if not opts.recursive then return nil, fserrors.IsDirectoryError(path) end
    if rel == "" then return nil, fserrors.PermissionError(path, "delete") end
    return remove_tree(root, rel, path)
  end
  local ok, c2, m2 = root:unlink(rel)
  if not ok then
    if c2 == "ENOENT" and opts.force then return true end
    return nil, map(c2, m2, path, "delete")
  end
  return true
end

function Backend:mkdir(path, opts)
  local root, rel = self.resolve(path, "mkdir")
  if not root then return nil, rel end
  if opts.recursive ~= false then
    local ok, err = mkdir_p(root, rel, path)
    if not ok and err.kind == "NotDirectoryError" and err.path == "/" .. rel then
      return nil, fserrors.FileExistsError(path)
    end
    return ok, err
  end
  if rel == "" then return true end
  local ok, code, msg = root:mkdir(rel)
  if ok then return true end
  if code == "EEXIST" then
    local st = root:stat(rel)
    if st and st.type == "directory" then return true end
    return nil, fserrors.FileExistsError(path)
  end
  if code == "ENOENT" then return nil, fserrors.DirectoryNotFoundError(pathmod.dirname(path)) end
  return nil, map(code, msg, path, "mkdir")
end

function Backend:rmdir(path, opts)
  local root, rel = self.resolve(path, "rmdir")
  if not root then return nil, rel end
  local st, code, msg = root:stat(rel, true)
  if not st then
    if code == "ENOENT" and opts.force then return true end
    return nil, map(code, msg, path, "rmdir", fserrors.DirectoryNotFoundError)
  end
  if st.type ~= "directory" then return nil, fserrors.NotDirectoryError(path) end
  if rel == "" then return nil, fserrors.PermissionError(path, "rmdir") end
  if opts.recursive then return remove_tree(root, rel, path) end
  local ok, c2, m2 = root:rmdir(rel)
  if not ok then return nil, map(c2, m2, path, "rmdir", fserrors.DirectoryNotFoundError) end
  return true
end

-- Streams src (root a) into dest (root b): copies across roots.
local function copy_across(ra, rela, src, rb, relb, dest, excl)
  local f, code, msg = ra:open(rela, "r")
  if not f then return nil, map(code, msg, src, "copy") end
  return compat.closing(f, function(input)
    return write_to(rb, relb, dest, excl and "x" or "w", function()
      local chunk, c2, m2 = input:read(CHUNK)
      if c2 then error(map(c2, m2, src, "copy"), 0) end
      return chunk
    end, "copy")
  end)
end

local function copy_tree(self, src, dest, opts)
  local entries, err = self:readdir(src, {})
  if not entries then return nil, err end
  local ok, e2 = self:mkdir(dest, {})
  if not ok then return nil, e2 end
  for _, e in ipairs(entries) do
    local s, d = src .. "/" .. e.name, dest .. "/" .. e.name
    local r, e3
    if e.is_symlink then
      r = true -- a link is not copied: its target might not be ours to read
    elseif e.type == "directory" then
      r, e3 = copy_tree(self, s, d, opts)
    else
      r, e3 = self:copy_file(s, d, opts)
      if not r and opts.overwrite == false and e3.kind == "FileExistsError" then r = true end
    end
    if not r then return nil, e3 end
  end
  return true
end

function Backend:copy_file(src, dest, opts)
  local ra, rela = self.resolve(src, "copy")
  if not ra then return nil, rela end
  local rb, relb = self.resolve(dest, "write")
  if not rb then return nil, relb end
  local st, code, msg = ra:stat(rela)
  if not st then return nil, map(code, msg, src, "copy") end
  if st.type == "directory" then
    if not opts.recursive then return nil, fserrors.IsDirectoryError(src) end
    return copy_tree(self, src, dest, opts)
  end
  if relb == "" then return nil, fserrors.IsDirectoryError(dest) end
  local ok, err = mkdir_p(rb, parent_of(relb), dest)
  if not ok then return nil, err end
  if not ra:shares(rb) then return copy_across(ra, rela, src, rb, relb, dest, opts.overwrite == false) end
  local c, c2, m2 = ra:copy(rela, relb, opts.overwrite == false, rb)
  if not c then
    if c2 == "ENOENT" then return nil, fserrors.FileNotFoundError(src) end
    if c2 == "EEXIST" then return nil, fserrors.FileExistsError(dest) end
    return nil, map(c2, m2, src, "copy")
  end
  return true
end

function Backend:move_file(src, dest, opts)
  local ra, rela = self.resolve(src, "move")
  if not ra then return nil, rela end
  local rb, relb = self.resolve(dest, "move")
  if not rb then return nil, relb end
  if rela == "" or relb == "" then return nil, fserrors.PermissionError(rela == "" and src or dest, "move") end
  local st, code, msg = ra:stat(rela, true)
  if not st then return nil, map(code, msg, src, "move") end
  local ok, err = mkdir_p(rb, parent_of(relb), dest)
  if not ok then return nil, err end
  if ra:shares(rb) then
    local r, c2, m2 = ra:rename(rela, relb, opts.overwrite == false, rb)
    if r then return true end
    if c2 == "EEXIST" then return nil, fserrors.FileExistsError(dest) end
    if c2 == "ENOENT" then return nil, fserrors.FileNotFoundError(src) end
    if c2 ~= "ENOTSUP" then return nil, map(c2, m2, src, "move") end
  end
  -- another root or another mount: copy, then delete the source
  if st.type == "directory" then
    ok, err = copy_tree(self, src, dest, { overwrite = opts.overwrite, recursive = true })
  else
    ok, err = copy_across(ra, rela, src, rb, relb, dest, opts.overwrite == false)
  end
  if not ok then return nil, err end
  return self:delete_file(src, { recursive = true, force = true })
end

local function list(self, root, rel, path, opts, depth, prefix, out)
  local entries, code, msg = root:readdir(rel)
  if not entries then
    if code == "ENOTDIR" then return nil, fserrors.NotDirectoryError(path) end
    return nil, map(code, msg, path, "readdir", fserrors.DirectoryNotFoundError)
  end
  table.sort(entries, function(a, b) return a.name < b.name end)
  for _, e in ipairs(entries) do
    local sub = pathmod.join(rel, e.name)
    local entry = { name = prefix .. e.name, type = e.type == "directory" and "directory" or "file" }
    if e.type == "symlink" then
      entry.is_symlink = true
      entry.symlink_target = root:readlink(sub)
      local st = root:stat(sub)
      entry.type = st and st.type == "directory" and "directory" or "file"
    elseif entry.type == "file" then
      local st = root:stat(sub, true)
      entry.size = st and st.size or nil
    end
    if entry.type ~= "file" or fs.extension_matches(e.name, opts.extension) then
      out[#out + 1] = entry
    end
    -- symlinked directories are listed, not entered (no loops)
    if opts.recursive and e.type == "directory" and depth > 0 then
      local ok, err = list(self, root, sub, path .. "/" .. e.name, opts, depth - 1, entry.name .. "/", out)
      if not ok then return nil, err end
    end
  end
  return out
end

function Backend:readdir(path, opts)
  local root, rel = self.resolve(path, "readdir")
  if not root then return nil, rel end
  local st, code, msg = root:stat(rel)
  if not st then return nil, map(code, msg, path, "readdir", fserrors.DirectoryNotFoundError) end
  if st.type ~= "directory" then return nil, fserrors.NotDirectoryError(path) end
  return list(self, root, rel, path, opts, opts.max_depth or 100, "", {})
end

function Backend:exists(path)
  local root, rel = self.resolve(path, "exists")
  if not root then return nil, rel end
  local st, code, msg = root:stat(rel)
  if st then return true end
  if code == "ENOENT" or code == "ENOTDIR" then return false end
  return nil, map(code, msg, path, "exists")
end

function Backend:stat(path)
  local root, rel, shown = self.resolve(path, "stat")
  if not root then return nil, rel end
  local st, code, msg = root:stat(rel)
  if not st then return nil, map(code, msg, path, "stat") end
  local dir = st.type == "directory"
  return {
    name = pathmod.basename(shown) or "",
    path = shown,
    type = dir and "directory" or "file",
    size = dir and 0 or st.size,
    created_at = fs.iso(st.ctime_ms),
    modified_at = fs.iso(st.mtime_ms),
  }
end

-- ---- LocalFilesystem ---------------------------------------------------------

local function absolute(p)
  if p:sub(1, 1) ~= "/" then p = core.fs_getcwd() .. "/" .. p end
  return pathmod.normalize(p)
end

local OPTIONS = { name = "LocalFilesystem", provider = "local", options = {
  base_path = { type = "string" }, read_only = { type = "boolean" }, id = { type = "string" } } }

--- sandkit.LocalFilesystem { base_path, read_only?, id? }: workspace paths
-- ("/a" and "a" alike) live under base_path, created on first use.
function M.LocalFilesystem(opts)
  opts = options.check(OPTIONS, opts, 1)
  if not opts.base_path or opts.base_path == "" or opts.base_path:find("\0", 1, true) then
    errors.config("local", "base_path", "LocalFilesystem option 'base_path' is required (a directory path)")
  end
  local base = absolute(opts.base_path)
  local state = { status = "stopped" }
  local function resolve(path, op)
    local segs, escaped = pathmod.segments(path)
    if escaped then return nil, fserrors.PermissionError(path, op) end
    if not state.root then
      local root, code, msg = core.fs_root(base, not opts.read_only)
      if not root then
        state.status = "error"
        return nil, map(code, msg, base, "open", fserrors.DirectoryNotFoundError)
      end
      state.root, state.status = root, "running"
    end
    local rel = table.concat(segs, "/")
    return state.root, rel, "/" .. rel
  end
  local b = M.backend(resolve)
  function b.info() return { status = state.status, base_path = base } end
  function b.instructions()
    return ('Local filesystem at "%s". Files at workspace path "/foo" are stored at "%s/foo" on disk.'):format(base, base)
  end
  return fs.new(b, {
    id = opts.id or fs.random_id("local-fs"), name = "LocalFilesystem", provider = "local",
    read_only = opts.read_only == true, base_path = base,
  })
end

M.map = map
return M
