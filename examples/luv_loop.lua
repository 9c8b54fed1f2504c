--- Embedding sandkit in a luv program (Debian's lua-luv): luv owns the loop
-- and sandkit is driven by two luv handles, a poll on sandkit.pollfd() and
-- a timer for sandkit.timeout(). Each wake-up calls sandkit.step(0) once
-- and re-arms the timer.
--
-- The trap: sandkit.timeout() is 0 while tasks are ready to run, which is
-- the case right after sandkit.spawn() and before the first step — nothing
-- arrives on the descriptor for them. So step once at the start (a timer of
-- 0 ms here) and re-arm the timer after every step; never treat 0 as "no
-- timeout". nil means "only when the descriptor is readable".
--
-- Run: LUA_CPATH='build/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;' lua5.4 examples/luv_loop.lua
local uv = require "luv"
local sandkit = require "sandkit"

local function temp_dir()
  local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/sandkit-luv.XXXXXX"'))
  local dir = p:read("*l")
  p:close()
  return assert(dir ~= "" and dir, "mktemp failed")
end

local root = temp_dir()
local sb = sandkit.LocalSandbox { working_directory = root }

-- sandkit work: three commands in tasks, finishing in reverse order.
local finished = {}
for i = 1, 3 do
  sandkit.spawn(function()
    local r = assert(sb:exec("sh", { "-c", ("sleep 0.%d; echo job %d"):format(4 - i, i) }))
    finished[#finished + 1] = r.stdout:gsub("\n$", "")
  end)
end

-- luv's own work at the same time: a ticker that must keep running.
local ticks = 0
local ticker = uv.new_timer()
ticker:start(20, 20, function() ticks = ticks + 1 end)

-- The bridge.
local poll = uv.new_poll(sandkit.pollfd())
local timer = uv.new_timer()
local function pump()
  if not sandkit.step(0) then -- nothing left in flight: let luv's loop end
    poll:stop(); timer:stop(); ticker:stop()
    poll:close(); timer:close(); ticker:close()
    return
  end
  local t = sandkit.timeout()
  if t then timer:start(math.ceil(t * 1000), 0, pump) else timer:stop() end
end
poll:start("r", pump)
timer:start(0, 0, pump) -- the first step: spawned tasks are ready, not on the fd

local cpu0 = os.clock()
uv.run()
local cpu = os.clock() - cpu0

for _, line in ipairs(finished) do print(line) end
print(("luv ticker ran %d times meanwhile; %.3f s of CPU"):format(ticks, cpu))
sb:destroy()
os.execute("rm -rf '" .. root .. "'")
