--- Upstream's workspace filesystem errors as sandkit error kinds. Every one
-- carries `path` (or `operation`) and `code` (the errno-like string upstream
-- gives: ENOENT, EEXIST, ...).
local errors = require "sandkit.errors"

local M = {}

local KINDS = {
  FileNotFoundError = { "ENOENT", "File not found: %s" },
  DirectoryNotFoundError = { "ENOENT", "Directory not found: %s" },
  FileExistsError = { "EEXIST", "File already exists: %s" },
  IsDirectoryError = { "EISDIR", "Path is a directory: %s" },
  NotDirectoryError = { "ENOTDIR", "Path is not a directory: %s" },
  DirectoryNotEmptyError = { "ENOTEMPTY", "Directory not empty: %s" },
}

for kind, def in pairs(KINDS) do
  M[kind] = function(path)
    return errors.new(kind, def[2]:format(path), { path = path, code = def[1] })
  end
end

--- Access refused: the path leads outside the filesystem's root, or the
-- system said EACCES/EPERM/EROFS.
function M.PermissionError(path, operation)
  return errors.new("PermissionError", ("Permission denied: %s on %s"):format(operation, path),
    { path = path, operation = operation, code = "EACCES" })
end

function M.WorkspaceReadOnlyError(operation)
  return errors.new("WorkspaceReadOnlyError", "Workspace is in read-only mode. Cannot perform: " .. operation,
    { operation = operation, code = "READ_ONLY" })
end

--- Any other failure: `code` names the system error.
function M.FilesystemError(path, code, message)
  return errors.new("FilesystemError", ("%s: %s"):format(message, path), { path = path, code = code })
end

--- read_file of a file larger than its max_bytes (`limit`).
function M.TooLarge(path, limit)
  return errors.new("FilesystemError",
    ("File is larger than max_bytes (%d bytes): %s; raise max_bytes or read it with on_chunk"):format(limit, path),
    { path = path, code = "EFBIG", limit = limit })
end

--- A FIFO, socket or device where a regular file was expected: never read.
function M.NotRegular(path)
  return M.FilesystemError(path, "EINVAL", "Not a regular file or directory")
end

--- No memory for the data of `path` (never a raise: docs/security.md).
function M.OutOfMemory(path, op)
  return errors.new("OutOfMemoryError", ("out of memory for the %s of %s"):format(op, path),
    { path = path, operation = op })
end

return M
