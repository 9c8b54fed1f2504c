--- Driving sandkit from a host program's own loop (a game engine, a GUI, an
-- agent runtime): the host owns the `while` loop and never blocks inside
-- sandkit. Each frame it waits on sandkit's descriptor for at most the
-- rest of the frame, then calls sandkit.step(0) for one non-blocking turn.
--
-- The wait uses cqueues.poll (Debian's lua-cqueues) on the sandkit module
-- itself, which has the pollfd/events/timeout functions of the cqueues
-- convention; without cqueues it falls back to sandkit.step(wait), which
-- does the same wait internally. luv or any poll(2) binding works the same
-- way with sandkit.pollfd() and sandkit.timeout().
--
-- Run: LUA_CPATH='build/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;' lua5.4 examples/host_loop.lua
local sandkit = require "sandkit"
local now = require("sandkit.core").now -- monotonic clock, milliseconds

local has_cqueues, cqueues = pcall(require, "cqueues")

local FRAME = 1 / 60 -- seconds

local function temp_dir()
  local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/sandkit-host.XXXXXX"'))
  local dir = p:read("*l")
  p:close()
  return assert(dir ~= "" and dir, "mktemp failed")
end

local root = temp_dir()
local sb = sandkit.LocalSandbox { working_directory = root }

-- Work in flight, started without waiting: two commands streaming lines.
local lines = {}
local ticker = sb:exec_async("for i in 1 2 3 4 5; do echo tick $i; sleep 0.05; done", nil, {
  on_stdout = function(chunk)
    for line in chunk:gmatch("[^\n]+") do lines[#lines + 1] = line end
  end,
})
local sum = sb:exec_async([[seq 1 100000 | awk '{ s += $1 } END { printf "%.0f\n", s }']])

-- The host's loop: one iteration per frame.
local frames, turns = 0, 0
local started = now()
while not (ticker.done and sum.done) do
  frames = frames + 1
  local frame_end = now() + FRAME * 1000
  -- ... the host's own work for this frame would go here ...

  -- Until the frame ends: wait for sandkit's descriptor (or its next
  -- timer, whichever is sooner), then one non-blocking turn.
  repeat
    local wait = math.max(0, (frame_end - now()) / 1000)
    local t = sandkit.timeout()
    if t and t < wait then wait = t end
    if has_cqueues then
      cqueues.poll(sandkit, wait) -- readable, or the timeout passed
      sandkit.step(0)
    else
      sandkit.step(wait)
    end
    turns = turns + 1
  until now() >= frame_end or (ticker.done and sum.done)

  -- Show what arrived during the frame, as a host would draw it.
  while #lines > 0 do print(("frame %3d: %s"):format(frames, table.remove(lines, 1))) end
end

local r1, r2 = assert(ticker:wait()), assert(sum:wait()) -- already done: no waiting
print(("ticker exit %d; sum of 1..100000 = %s"):format(r1.exit_code, r2.stdout:gsub("%s+$", "")))
print(("%d frames, %d turns in %.0f ms, waiting with %s"):format(frames, turns, now() - started,
  has_cqueues and "cqueues.poll" or "sandkit.step(timeout)"))

sb:destroy()
os.execute("rm -rf -- " .. sandkit.quote(root))
os.exit(r1.exit_code == 0 and r2.stdout == "5000050000\n" and 0 or 1)
