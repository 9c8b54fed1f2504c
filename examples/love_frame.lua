--- sandkit in a LÖVE-style game loop: the engine owns the frame loop and
-- calls love.update(dt) once per frame; love.update calls sandkit.step(0),
-- one turn that never waits, and reads finished work from the operations
-- it started. Between frames the engine sleeps or draws; commands keep
-- running meanwhile and their completions wait in the queue for the next
-- step. Here the "game" asks a sandbox to generate a level and animates a
-- loading bar until it is ready, then runs a command per frame for a few
-- frames.
--
-- In LÖVE 11 (LuaJIT): use this file as main.lua, with the LuaJIT build of
-- sandkit on package.cpath and lua/ on package.path. Outside LÖVE, a small
-- stand-in engine below runs the same callbacks the way love.run does
-- (Debian's lua-luv provides its love.timer.sleep):
--   LUA_CPATH='build-luajit/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;' luajit examples/love_frame.lua
-- (any Lua: lua5.4 with build/, lua5.1 with build-lua5.1/, ...).
local sandkit = require "sandkit"

local love = rawget(_G, "love")
local standalone = love == nil
if standalone then
  local uv = require "luv"
  local quit = false
  love = {
    timer = {
      getTime = function() return sandkit.now() / 1000 end,
      sleep = function(s) uv.sleep(math.floor(s * 1000)) end,
    },
    event = { quit = function() quit = true end },
  }
  -- love.run's shape: load once, then update, draw, sleep, every frame
  love.run = function()
    love.load()
    local last = love.timer.getTime()
    while not quit do
      local now = love.timer.getTime()
      love.update(now - last)
      last = now
      love.draw()
      love.timer.sleep(1 / 60)
    end
  end
end

local sb, root, level_op, level
local frames, loading_frames = 0, 0
local started = {} -- operations, in the order of the frames that started them

function love.load()
  local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/sandkit-love.XXXXXX"'))
  root = p:read("*l")
  p:close()
  assert(root and root ~= "", "mktemp failed")
  sb = sandkit.LocalSandbox { working_directory = root }
  -- started now, finished some frames later: the game never waits for it
  level_op = sb:exec_async("sleep 0.3; seq 1 5 | awk '{ printf \"room%d \", $1 }'")
end

function love.update(dt)
  frames = frames + 1
  sandkit.step(0) -- one non-blocking turn: completions arrive here
  if not level_op.done then
    loading_frames = loading_frames + 1 -- the loading bar grows
    return
  end
  if not level then
    level = assert(level_op:wait()).stdout -- done: returns at once
    print(("level ready after %d frames of loading: %s"):format(loading_frames, level))
  end
  -- then one command per frame, for three frames
  if #started < 3 then
    started[#started + 1] = sb:exec_async("echo frame " .. frames)
    return
  end
  for _, op in ipairs(started) do
    if not op.done then return end
  end
  local lines = {}
  for i, op in ipairs(started) do lines[i] = assert(op:wait()).stdout:gsub("\n$", "") end
  print("commands started on: " .. table.concat(lines, ", "))
  sb:destroy()
  os.execute("rm -rf '" .. root .. "'")
  love.event.quit()
end

function love.draw()
  -- a real game draws here; the loading bar is loading_frames long
end

if standalone then love.run() end
