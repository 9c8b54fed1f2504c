--- `make demo`: a small fleet of local sandboxes doing real work at once on
-- one event loop.
--
-- Eight sandboxes, each with its own working directory, receive a small awk
-- program (written into the directory through the command's stdin) and
-- count the primes in their slice of [2, 300000). A line is printed as each
-- one finishes; the counts must add up to pi(300000) = 25997. Then two
-- guard rails: a runaway loop stopped by its timeout (exit 124) and a
-- command ended by a signal (128 + N). Finally the wall time next to the
-- sum of the per-sandbox times shows how much ran concurrently.
--
-- Run from the project root: make demo
-- or: LUA_CPATH='build/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;' lua5.4 examples/demo.lua
local sandkit = require "sandkit"
local now = require("sandkit.core").now -- monotonic clock, milliseconds

local SANDBOXES = 8
local LIMIT = 300000
local EXPECTED = 25997 -- pi(300000)

local PRIMES_AWK = [[
# Counts the primes p with lo <= p < hi by trial division.
BEGIN {
  n = 0
  for (x = (lo < 2 ? 2 : lo); x < hi; x++) {
    prime = 1
    for (d = 2; d * d <= x; d++) if (x % d == 0) { prime = 0; break }
    n += prime
  }
  print n
}
]]

local function temp_dir()
  local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/sandkit-demo.XXXXXX"'))
  local dir = p:read("*l")
  p:close()
  assert(dir and dir ~= "", "mktemp failed")
  return dir
end

local root = temp_dir()
local template = sandkit.LocalSandbox { working_directory = root .. "/template", timeout = 20000 }
local sandboxes = {}
for i = 1, SANDBOXES do
  sandboxes[i] = template:clone { working_directory = ("%s/sb%d"):format(root, i) }
end

print(("sandkit %s demo: %d local sandboxes on one event loop"):format(sandkit._VERSION, SANDBOXES))
print(("working directories under %s (removed at the end)"):format(root))
print()

local started = now()
local rows = {}
local failures = 0

-- One task per sandbox: while one waits for its process, the others run.
for i, sb in ipairs(sandboxes) do
  sandkit.spawn(function()
    local lo = math.floor((i - 1) * LIMIT / SANDBOXES)
    local hi = math.floor(i * LIMIT / SANDBOXES)
    local row = { i = i, lo = lo, hi = hi }
    rows[i] = row
    assert(sb:start())
    local w = assert(sb:exec("cat > primes.awk", nil, { stdin = PRIMES_AWK }))
    assert(w.exit_code == 0, "could not write primes.awk: " .. w.stderr)
    local r, err = sb:exec("awk", { "-v", "lo=" .. lo, "-v", "hi=" .. hi, "-f", "primes.awk" }, { timeout = 20000 })
    if not r then
      row.error = tostring(err)
      failures = failures + 1
    else
      row.exit_code, row.ms, row.count = r.exit_code, r.execution_time_ms, tonumber(r.stdout)
      if r.exit_code ~= 0 or not row.count then failures = failures + 1 end
    end
    print(("[sandbox %d] awk -v lo=%d -v hi=%d -f primes.awk  exit %s  %s primes  %.1f ms"):format(
      i, lo, hi, tostring(row.exit_code or "ERR"), tostring(row.count or "?"), row.ms or 0))
  end)
end
sandkit.run()
local wall = now() - started

local total, sum_ms = 0, 0
for _, row in ipairs(rows) do
  total = total + (row.count or 0)
  sum_ms = sum_ms + (row.ms or 0)
end
print()
print(("primes below %d: %d (expected %d) %s"):format(LIMIT, total, EXPECTED,
  total == EXPECTED and "- correct" or "- WRONG"))
local nproc = io.popen("nproc 2>/dev/null")
local cores = nproc and nproc:read("*n") or 1
if nproc then nproc:close() end
print(("wall time %.0f ms; sum of per-sandbox times %.0f ms: on average %.1f commands overlapped")
  :format(wall, sum_ms, sum_ms / wall))
print(("(they share %d CPU core%s; sandkit's one loop only waits on their pipes and exits)")
  :format(cores, cores == 1 and "" or "s"))

-- Guard rails, both at once: a timeout and a signal.
print()
local runaway = sandboxes[1]:exec_async("while :; do :; done", nil, { timeout = 300 })
local signalled = sandboxes[2]:exec_async("kill -TERM $$")
local results = sandkit.all { runaway, signalled }
local t, s = results[1], results[2]
print(("runaway loop, timeout 300 ms: exit %d, timed_out=%s after %.0f ms"):format(
  t.exit_code, tostring(t.timed_out), t.execution_time_ms))
print(("kill -TERM $$: exit %d (128 + 15), killed=%s"):format(s.exit_code, tostring(s.killed)))
local rails_ok = t.exit_code == 124 and t.timed_out and s.exit_code == 143 and s.killed

for _, sb in ipairs(sandboxes) do sb:destroy() end
os.execute("rm -rf -- " .. sandkit.quote(root))

local ok = failures == 0 and total == EXPECTED and rails_ok
print()
print(ok and "demo finished: all sandboxes did their work" or "demo FAILED")
os.exit(ok and 0 or 1)
