--- sandkit in Neovim, or in any host that already runs a luv loop and
-- exposes it (Neovim: `vim.uv`, before 0.10 `vim.loop`). The host runs the
-- loop, so sandkit rides on it with two luv handles: a poll on
-- sandkit.pollfd() and a timer for sandkit.timeout(). They stop while
-- sandkit has nothing in flight and start again when work is queued, so an
-- idle sandkit costs the editor nothing. An agent plugin's shell commands
-- run in a sandbox and the editor never blocks.
--
-- luv calls these handles in Neovim's "fast" context, where most of the
-- editor's API is off limits: results go back through vim.schedule.
--
-- In Neovim (LuaJIT), with a LuaJIT build on the paths
-- (`eval "$(make -s env LUA=luajit)"` in the shell that starts nvim):
--   :luafile examples/neovim.lua
-- Outside Neovim, Debian's lua-luv stands in for vim.uv and the script runs
-- luv's loop itself:
--   LUA_CPATH='build-luajit/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;' luajit examples/neovim.lua
-- (any Lua: lua5.4 with build/, lua5.1 with build-lua5.1/, ...).
local in_nvim = type(rawget(_G, "vim")) == "table"
local uv = in_nvim and (vim.uv or vim.loop) or require "luv"
-- vim.schedule runs fn soon on the main loop, outside the luv callback
local schedule = in_nvim and vim.schedule or function(fn)
  local t = uv.new_timer()
  t:start(0, 0, function() t:close(); fn() end)
end
local report = in_nvim and vim.notify or print
local sandkit = require "sandkit"

-- The bridge: kick() after queuing sandkit work.
local poll, timer
local function pump()
  -- a task's uncaught error is raised from step: report it, keep the editor
  local ok, busy = pcall(sandkit.step, 0)
  if not ok then
    local err = busy
    schedule(function() report("sandkit: " .. tostring(err)) end)
  end
  if ok and not busy then -- nothing in flight: both handles sleep until kick()
    poll:stop()
    timer:stop()
    return
  end
  -- 0 means "now" (tasks are ready); nil means "only when the fd is readable"
  local t = sandkit.timeout()
  if t then timer:start(math.ceil(t * 1000), 0, pump) else timer:stop() end
end

local function kick()
  if not poll then
    poll = uv.new_poll(sandkit.pollfd())
    timer = uv.new_timer()
  end
  poll:start("r", pump)
  -- the first step at once: a spawned task is ready, nothing is on the fd
  timer:start(0, 0, pump)
end

local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/sandkit-nvim.XXXXXX"'))
local root = p:read("*l")
p:close()
assert(root and root ~= "", "mktemp failed")
local sb = sandkit.LocalSandbox { working_directory = root }

-- What a plugin exposes: run a shell command in the sandbox, call on_done
-- with the result (or nil, err) in the editor's normal context.
local function run(command, on_done)
  sandkit.spawn(function()
    local r, err = sb:exec(command, nil, { timeout = 10000 })
    schedule(function() on_done(r, err) end)
  end)
  kick()
end

-- The editor's own work meanwhile (here a timer that must keep ticking).
local ticks = 0
local ticker = uv.new_timer()
ticker:start(20, 20, function() ticks = ticks + 1 end)

local pending = 3
local function finish()
  ticker:stop()
  ticker:close()
  poll:close()
  timer:close()
  report(("editor timer ticked %d times while the commands ran"):format(ticks))
  sb:destroy()
  os.execute("rm -rf '" .. root .. "'")
end

for i = 1, 3 do
  run(("sleep 0.%d; echo 'job %d ran in' \"$PWD\""):format(2 * (4 - i), i), function(r, err)
    if r then
      report((r.stdout:gsub("\n$", "")))
    else
      report("job failed: " .. tostring(err))
    end
    pending = pending - 1
    if pending == 0 then finish() end
  end)
end

if not in_nvim then uv.run() end
