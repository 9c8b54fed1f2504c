--- Shell helpers for specs that run commands: quoting, a run that returns
-- the exit code with stdout and stderr together, a capture of stdout, and
-- whether bubblewrap works here.
local M = {}

--- `s` as one single-quoted shell word.
function M.quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Lua 5.1 and LuaJIT's close of a popen'd file says nothing of the exit
-- code (5.2 and later return it third): there the command prints it last,
-- after a byte no output of ours contains.
local close_has_code = select(3, io.popen("exit 3"):close()) == 3
local STATUS = "\1status="

--- Runs `cmd` under /bin/sh with io.popen; returns its stdout and its exit
-- code, in every Lua version.
function M.popen_read(cmd)
  if not close_has_code then cmd = "(" .. cmd .. "\n); printf '" .. STATUS .. "%d' $?" end
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  local _, _, code = p:close()
  if not close_has_code then
    local rest, status = out:match("^(.*)\1status=(%d+)$")
    out, code = rest or out, tonumber(status)
  end
  return out, code
end

--- io.popen(cmd) for reading, whose close returns the exit code third, as
-- from 5.2 on, in every Lua version. Before 5.2, read no further than what
-- the command prints (its status follows).
function M.popen(cmd)
  if close_has_code then return assert(io.popen(cmd)) end
  local p = assert(io.popen("(" .. cmd .. "\n); printf '" .. STATUS .. "%d' $?"))
  return {
    read = function(_, ...) return p:read(...) end,
    close = function()
      local code = tonumber(p:read("*a"):match("\1status=(%d+)$"))
      p:close()
      return code == 0 or nil, "exit", code
    end,
  }
end

--- Runs `cmd` under /bin/sh; returns its exit code and its output (stdout
-- and stderr interleaved).
function M.run(cmd)
  local out, code = M.popen_read(cmd .. " 2>&1")
  return code, out
end

--- Runs `cmd` under /bin/sh; returns its stdout and its exit code.
function M.capture(cmd)
  return M.popen_read(cmd)
end

--- Whether `cmd` (os.execute) exits 0: true, or 0 before Lua 5.2.
function M.ok(cmd)
  local r = os.execute(cmd)
  return r == true or r == 0
end

local bwrap_works
--- Whether bubblewrap can build a sandbox on this machine (asked once).
function M.have_bwrap()
  if bwrap_works == nil then
    bwrap_works = M.ok("bwrap --ro-bind / / true >/dev/null 2>&1")
  end
  return bwrap_works
end

return M
