--- /proc readings for leak checks: our descriptors, children, zombies.
local M = {}

function M.fd_count()
  local n = 0
  -- /proc/self inside popen would be the shell: name our pid
  local p = io.popen("ls /proc/" .. M.self_pid() .. "/fd")
  for _ in p:lines() do n = n + 1 end
  p:close()
  return n - 1 -- the popen pipe itself
end

local cached_pid
function M.self_pid()
  if not cached_pid then
    local f = assert(io.open("/proc/self/stat"))
    cached_pid = f:read("*l"):match("^(%d+)")
    f:close()
  end
  return cached_pid
end

--- Descendant processes of ours (excluding the ps used to look), and how
-- many of them are zombies.
function M.children()
  local me = M.self_pid()
  local p = io.popen("ps -e -o pid=,ppid=,stat=,args=")
  local kids, zombies = {}, 0
  local parent = {}
  local rows = {}
  for line in p:lines() do
    local pid, ppid, stat, args = line:match("^%s*(%d+)%s+(%d+)%s+(%S+)%s+(.*)$")
    if pid then
      parent[pid] = ppid
      rows[#rows + 1] = { pid = pid, stat = stat, args = args }
    end
  end
  p:close()
  local function descends(pid)
    local seen = 0
    while pid and seen < 64 do
      if parent[pid] == me then return true end
      pid = parent[pid]
      seen = seen + 1
    end
    return false
  end
  for _, r in ipairs(rows) do
    if descends(r.pid) and not r.args:match("^ps %-e") and not r.args:match("^sh %-c ps") then
      kids[#kids + 1] = r
      if r.stat:sub(1, 1) == "Z" then zombies = zombies + 1 end
    end
  end
  return kids, zombies
end

--- Processes anywhere whose command line contains `needle`.
function M.matching(needle)
  local p = io.popen("ps -e -o args=")
  local n = 0
  for line in p:lines() do
    if line:find(needle, 1, true) and not line:find("ps -e", 1, true) then n = n + 1 end
  end
  p:close()
  return n
end

--- Polls `pred` until it returns a truthy value or `seconds` (default 30)
-- pass, turning the sandkit loop meanwhile (so our own children get
-- reaped); returns pred's last value. A state that comes ends the wait at
-- once, so the bound is generous: a CI machine can stall for seconds. A
-- killed process leaves /proc asynchronously (its parent, or init for an
-- orphan, reaps it), so a check right after a kill samples a race: wait
-- for the state instead.
function M.wait_for(pred, seconds)
  local sandkit = require "sandkit"
  local deadline = sandkit.now() + (seconds or 30) * 1000
  while true do
    local v = pred()
    if v or sandkit.now() > deadline then return v end
    sandkit.step(0.02)
  end
end

--- Waits (bounded) until no process's command line contains `needle`;
-- returns how many are left (0: all gone).
function M.wait_gone(needle, seconds)
  local left = 0
  M.wait_for(function()
    left = M.matching(needle)
    return left == 0
  end, seconds)
  return left
end

local marker_count = 0
--- A `sleep` command line no other process on the machine runs, the
-- needle to find (or miss) in /proc: base plus a counter seconds, our pid
-- and the counter in the fraction.
function M.sleep_marker(base)
  marker_count = marker_count + 1
  return ("sleep %d.%s%d"):format(base + marker_count, M.self_pid(), marker_count)
end

local unique_count = 0
--- `prefix` made unique to this run and call (our pid and a counter): a
-- name or marker no other process on the machine uses.
function M.unique(prefix)
  unique_count = unique_count + 1
  return ("%s-%s-%d"):format(prefix, M.self_pid(), unique_count)
end

--- Waits (bounded, default 30 s) until no live process's command line
-- contains `needle` (read from /proc, see pids_matching); true once none.
function M.gone(needle, seconds)
  return M.wait_for(function() return #M.pids_matching(needle) == 0 end, seconds)
end

--- gone(), with a full collection on every poll: a test of cleanup by
-- __gc must not hinge on which cycle finalizes the object.
function M.gone_collecting(needle, seconds)
  return M.wait_for(function()
    collectgarbage()
    return #M.pids_matching(needle) == 0
  end, seconds)
end

--- SIGKILLs every live process whose command line contains `needle`:
-- cleanup after a test that failed before its processes were reaped.
function M.kill_matching(needle)
  for _, pid in ipairs(M.pids_matching(needle)) do os.execute("kill -9 " .. pid .. " 2>/dev/null") end
end

--- Pids of live (non-zombie) processes anywhere whose command line
-- (/proc/<pid>/cmdline, arguments joined by spaces) contains `needle`;
-- read from /proc directly, so nothing started to look matches.
function M.pids_matching(needle)
  local out = {}
  local p = io.popen("ls /proc")
  for pid in p:lines() do
    if pid:match("^%d+$") then
      local f = io.open("/proc/" .. pid .. "/cmdline", "rb")
      local cmd = f and f:read("*a")
      if f then f:close() end
      if cmd and cmd:gsub("%z", " "):find(needle, 1, true) then out[#out + 1] = tonumber(pid) end
    end
  end
  p:close()
  return out
end

--- True under ASan or valgrind, whose memory use is not ours to bound.
function M.instrumented()
  return os.getenv("ASAN_OPTIONS") ~= nil or (os.getenv("LD_PRELOAD") or ""):find("vgpreload") ~= nil
end

function M.rss_kib()
  local f = io.open("/proc/self/status")
  local s = f:read("*a")
  f:close()
  return tonumber(s:match("VmRSS:%s+(%d+)"))
end

return M
