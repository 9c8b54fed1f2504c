--- Shell helpers for specs that run commands: quoting and a run that
-- returns the exit code with stdout and stderr together.
local M = {}

--- `s` as one single-quoted shell word.
function M.quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

--- Runs `cmd` under /bin/sh; returns its exit code and its output (stdout
-- and stderr interleaved).
function M.run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local _, _, code = p:close()
  return code, out
end

return M
