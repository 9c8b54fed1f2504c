--- sandkit under a host's own coroutine scheduler: many engines and agent
-- runtimes resume a list of coroutines every tick and know nothing of
-- sandkit.spawn. Their coroutines start commands with exec_async and yield
-- to the host until the operation is done; the host's tick calls
-- sandkit.step, which waits in poll (at most a tick) when every coroutine
-- waits on sandkit, so nothing spins. The yields are the host's own, at
-- the coroutine's top level: this works the same in Lua 5.1, where a
-- coroutine cannot yield from inside pcall or a C function.
--
-- Run: LUA_CPATH='build/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;' lua5.4 examples/coroutines.lua
-- (any Lua: luajit with build-luajit/, lua5.1 with build-lua5.1/, ...).
local sandkit = require "sandkit"

-- The host's scheduler: a list of coroutines, resumed in turn each tick.
local threads = {}
local function go(fn) threads[#threads + 1] = coroutine.create(fn) end

-- What its coroutines call: yield to the host until the command is done.
local function exec(sb, command)
  local op = sb:exec_async(command, nil, { timeout = 10000 })
  while not op.done do coroutine.yield() end
  local r = assert(op:wait()) -- done: returns at once
  assert(r.exit_code == 0, command .. ": exit " .. r.exit_code)
  return r
end

local TICK = 0.05 -- seconds
local function run_all()
  local ticks = 0
  while #threads > 0 do
    ticks = ticks + 1
    for i = #threads, 1, -1 do
      local ok, err = coroutine.resume(threads[i])
      if not ok then error(err, 0) end
      if coroutine.status(threads[i]) == "dead" then table.remove(threads, i) end
    end
    -- the host's idle wait: sandkit's loop, at most one tick
    sandkit.step(#threads > 0 and TICK or 0)
  end
  return ticks
end

local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/sandkit-co.XXXXXX"'))
local root = p:read("*l")
p:close()
assert(root and root ~= "", "mktemp failed")
local sb = sandkit.LocalSandbox { working_directory = root }

-- Three agents, each a pipeline of two commands. Agent 1's first command
-- waits until agent 3 has written a file: with one agent at a time it
-- would time out (exit 124) instead.
local log = {}
local first = {
  "until [ -e ready ]; do sleep 0.02; done; echo agent 1",
  "sleep 0.1; echo agent 2",
  "sleep 0.2; touch ready; echo agent 3",
}
for i = 1, 3 do
  go(function()
    local r = exec(sb, first[i])
    local w = exec(sb, "echo '" .. r.stdout:gsub("\n$", "") .. "' | wc -c")
    log[#log + 1] = ("agent %d: %d bytes"):format(i, tonumber(w.stdout))
  end)
end

local cpu0 = os.clock()
local ticks = run_all()
table.sort(log)
for _, line in ipairs(log) do print(line) end
print(("%d ticks, %.3f s of CPU"):format(ticks, os.clock() - cpu0))
sb:destroy()
os.execute("rm -rf '" .. root .. "'")
