--- sb.fs of a ModalSandbox (the descriptor's filesystem = "own"): reading
-- and writing files go through the SDK's own filesystem calls
-- (Sandbox.open() and its file handle over ContainerFilesystemExec,
-- docs/modal-filesystem.md; the provider's `fs` operations in modal_fs.c,
-- reached through core.ops_open / core.ops_call), in pieces so neither side
-- holds a large file whole. Everything else (listing, stat, delete, copy,
-- move, mkdir, exclusive create) stays on the shared exec-script backend
-- (lua/sandkit/fs/exec.lua), which Modal's handle API cannot do.
local compat = require "sandkit.compat"
local core = require "sandkit.core"
local fs = require "sandkit.fs"
local fserrors = require "sandkit.fs.errors"
local ops = require "sandkit.ops"
local pathmod = require "sandkit.fs.path"

local M = {}

-- Each operation costs two RPCs (and on the reference server a process in
-- the sandbox), so pieces are large; a read's answer still arrives in
-- batches of about 1 MiB, far below the response size limit.
local READ_PIECE = 16 * 1024 * 1024
local WRITE_PIECE = 8 * 1024 * 1024
-- SystemErrorCode values (errno numbers)
local ENOENT, EACCES, ENOTDIR, EISDIR, EPERM = 2, 13, 20, 21, 1

local Backend = {}

-- Starts one operation: its record (for finish), or nil, err. on_data
-- receives bytes read; body is the data of a write.
function Backend:start(o, on_data, body)
  local ok, err = self.sb:ensure_running()
  if not ok then return nil, err end
  o.timeout_ms = self.options.timeout or fs.DEFAULT_OP_TIMEOUT_MS
  local rec = ops.record(function(r, fd) r.fd = fd end, function(_, data) on_data(data) end)
  self.client = self.client or core.ops_open(self.sb, "fs")
  rec.handle = core.ops_call(self.client, o, body, rec.token)
  return rec
end

-- Waits for a started operation: its values (fd for open, true else) or
-- nil, err.
function Backend:finish(rec)
  local done, oerr = ops.await(rec)
  if not done then return nil, oerr end
  return rec.fd or true
end

-- One operation, started and waited for.
function Backend:op(o, on_data, body)
  local rec, err = self:start(o, on_data, body)
  if not rec then return nil, err end
  return self:finish(rec)
end

-- The typed error for a failed operation on `path`; writing: the parent
-- directory is the one that is missing or not a directory.
local function typed(err, path, writing)
  if not err or err.kind ~= "ModalFilesystemError" then return err end
  local c = err.error_code
  if c == EISDIR then return fserrors.IsDirectoryError(path) end
  if c == ENOENT then
    if writing then return fserrors.DirectoryNotFoundError(pathmod.dirname(path) or path) end
    return fserrors.FileNotFoundError(path)
  end
  if c == ENOTDIR then return fserrors.NotDirectoryError(writing and pathmod.dirname(path) or path) end
  if c == EACCES or c == EPERM then return fserrors.PermissionError(path, writing and "write" or "read") end
  return fserrors.FilesystemError(path, "EIO", err.message)
end

function Backend:open(path, mode)
  local fd, err = self:op({ kind = "open", path = path == "" and "." or path, mode = mode })
  if not fd then return nil, typed(err, path, mode ~= "r") end
  return fd
end

function Backend:close(fd) return self:op({ kind = "close", fd = fd }) end

-- The type and the size are asked over an exec stream while the handle
-- opens, and are waited for first: the handle's open of a FIFO or a device
-- may block (or act) inside the sandbox, so it is abandoned then, and a
-- file over max_bytes is refused before a byte is read.
function Backend:read_file(path, opts)
  local max = opts.max_bytes
  local probed = self.exec:probe(path, max)
  local opening, oerr = self:start({ kind = "open", path = path == "" and "." or path, mode = "r" })
  local regular, perr = probed()
  if not regular then
    if opening and (opening.done or perr.code ~= "EINVAL") then
      local stray = self:finish(opening) -- it ends at once on anything but a FIFO
      if stray and stray ~= true then self:close(stray) end
    elseif opening then
      opening.handle:cancel()
    end
    return nil, perr
  end
  if not opening then return nil, oerr end
  local fd, err = self:finish(opening)
  if not fd then return nil, typed(err, path, false) end
  local parts, total = {}, 0
  local emit = opts.on_chunk or function(c) parts[#parts + 1] = c end
  local ok, rerr
  local pok, cerr = compat.pcall(function()
    while true do
      local got = 0
      -- a whole read asks for one byte past max_bytes at most: a file that grew shows
      local piece = max and math.min(READ_PIECE, max + 1 - total) or READ_PIECE
      ok, rerr = self:op({ kind = "read", fd = fd, n = piece }, function(c)
        got = got + #c
        emit(c)
      end)
      total = total + got
      if not ok or got < piece or (max and total > max) then break end
    end
  end)
  self:close(fd)
  if not pok then error(cerr, 0) end -- on_chunk raised (or no memory: the front reports it)
  if not ok then return nil, typed(rerr, path, false) end
  if max and total > max then return nil, fserrors.TooLarge(path, max) end
  if opts.on_chunk then return true end
  return table.concat(parts)
end

-- Writes content (a string or a chunk source) through a handle opened
-- with mode; the parent directories are made first when recursive.
function Backend:send(path, content, mode, recursive)
  local fd, err = self:open(path, mode)
  if not fd and recursive ~= false and err and err.kind == "DirectoryNotFoundError" then
    local mk, merr = self.exec:mkdir(pathmod.dirname(path) or ".", { recursive = true })
    if not mk then return nil, merr end
    fd, err = self:open(path, mode)
  end
  if not fd then return nil, err end
  local function piece(data)
    local ok, werr = self:op({ kind = "write", fd = fd }, nil, data)
    if not ok then return nil, typed(werr, path, true) end
    return true
  end
  local pok, ok, werr = compat.pcall(fs.each_piece, content, WRITE_PIECE, piece)
  if not pok then
    -- the chunk source raised or returned a non-string: the handle is closed first
    self:close(fd)
    error(ok, 0)
  end
  local cok, cerr = self:close(fd)
  if not ok then return nil, werr end
  if not cok then return nil, typed(cerr, path, true) end
  return true
end

function Backend:write_file(path, content, opts)
  -- exclusive creation needs an atomic check: the exec stream's `set -C`
  if opts.overwrite == false then return self.exec:write_file(path, content, opts) end
  return self:send(path, content, "w", opts.recursive)
end

function Backend:append_file(path, content)
  return self:send(path, content, "a", true)
end

function M.backend(sb, o)
  return require("sandkit.fs.exec").beneath(Backend, sb, o)
end

return M
