--- Whole-file reads and writes for specs that plant or inspect files.
local M = {}

--- The contents of `path`, or nil when it cannot be opened.
function M.read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

--- The contents of `path`; raises, naming it, when it cannot be opened.
function M.must_read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

--- Writes `s` to `path` (replacing it); raises when it cannot.
function M.write(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

return M
