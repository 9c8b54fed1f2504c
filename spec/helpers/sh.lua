--- Shell helpers for specs that run commands: quoting, a run that returns
-- the exit code with stdout and stderr together, a capture of stdout, and
-- whether bubblewrap works here.
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

--- Runs `cmd` under /bin/sh; returns its stdout and its exit code.
function M.capture(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code
end

local bwrap_works
--- Whether bubblewrap can build a sandbox on this machine (asked once).
function M.have_bwrap()
  if bwrap_works == nil then
    bwrap_works = os.execute("bwrap --ro-bind / / true >/dev/null 2>&1") == true
  end
  return bwrap_works
end

return M
