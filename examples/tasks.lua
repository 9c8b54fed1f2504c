--- Many tasks on one loop: sandkit.spawn runs a function as a coroutine
-- task; inside it sb:exec yields instead of blocking, so a hundred tasks
-- share four sandboxes and a single event loop. Also shows task:wait()
-- return values, exec_async + sandkit.all, and sandkit.sleep in a task.
--
-- Run: LUA_CPATH='build/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;' lua5.4 examples/tasks.lua
local sandkit = require "sandkit"
local now = require("sandkit.core").now -- monotonic clock, milliseconds

local TASKS, SANDBOXES = 100, 4

local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/sandkit-tasks.XXXXXX"'))
local root = p:read("*l")
p:close()
assert(root and root ~= "", "mktemp failed")

local sandboxes = {}
for i = 1, SANDBOXES do
  sandboxes[i] = sandkit.LocalSandbox { working_directory = ("%s/sb%d"):format(root, i) }
end

local started = now()

-- 1. A hundred tasks, each hashing its own word in one of the sandboxes.
local tasks = {}
for i = 1, TASKS do
  local sb = sandboxes[(i - 1) % SANDBOXES + 1]
  tasks[i] = sandkit.spawn(function(word)
    local r = assert(sb:exec("cksum", nil, { stdin = "word " .. word }))
    return tonumber(r.stdout:match("^(%d+)")), r.execution_time_ms
  end, i)
end

-- 2. A task that sleeps on the loop while the others run.
local ticks = 0
sandkit.spawn(function()
  for _ = 1, 3 do
    sandkit.sleep(0.01)
    ticks = ticks + 1
  end
end)

-- 3. A task that starts one command per sandbox and waits for all of them.
local hosts
sandkit.spawn(function()
  local ops = {}
  for i, sb in ipairs(sandboxes) do ops[i] = sb:exec_async("pwd") end
  local results = sandkit.all(ops)
  hosts = {}
  for i, r in ipairs(results) do hosts[i] = r.stdout:gsub("%s+$", "") end
end)

sandkit.run() -- returns when every task has finished
local wall = now() - started

-- Every task has finished: wait() returns its values at once.
local distinct, sum_ms = {}, 0
local n_distinct = 0
for i = 1, TASKS do
  local crc, ms = tasks[i]:wait()
  assert(crc, "task " .. i .. " returned no checksum")
  if not distinct[crc] then n_distinct = n_distinct + 1 end
  distinct[crc] = true
  sum_ms = sum_ms + ms
end

print(("%d tasks on %d sandboxes: %d distinct checksums"):format(TASKS, SANDBOXES, n_distinct))
print(("wall %.0f ms, sum of command times %.0f ms"):format(wall, sum_ms))
print(("sleeper ticked %d times meanwhile"):format(ticks))
for i, h in ipairs(hosts) do print(("sandbox %d works in %s"):format(i, h)) end

for _, sb in ipairs(sandboxes) do sb:destroy() end
os.execute("rm -rf -- " .. sandkit.quote(root))
os.exit(n_distinct == TASKS and ticks == 3 and #hosts == SANDBOXES and 0 or 1)
