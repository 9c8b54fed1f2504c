--- POSIX path normalisation for the filesystems (lexical: no system calls).
local M = {}

--- Splits `p` into segments with "." and empty ones dropped and ".." folded.
-- Returns the segments and whether ".." climbed above the start.
function M.segments(p)
  local out, escaped = {}, false
  for seg in p:gmatch("[^/]+") do
    if seg == ".." then
      if #out > 0 then out[#out] = nil else escaped = true end
    elseif seg ~= "." then
      out[#out + 1] = seg
    end
  end
  return out, escaped
end

--- "/a/b" form of a workspace path (leading "/" optional on input).
function M.normalize(p)
  local segs = M.segments(p)
  return "/" .. table.concat(segs, "/")
end

function M.basename(p)
  return p:match("([^/]*)/*$")
end

function M.dirname(p)
  local d = p:match("^(.*)/[^/]*$")
  if d == nil then return "." end
  if d == "" then return "/" end
  return d
end

function M.join(a, b)
  if a == "" then return b end
  if b == "" then return a end
  return a .. "/" .. b
end

return M
