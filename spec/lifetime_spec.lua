-- Lifetimes (issue 7): what happens to running processes when their Lua
-- objects go away. A sandbox or process handle dropped while running is
-- cleaned up by __gc (userdata's, so in LuaJIT and 5.1 too: make
-- test-luajit & co. run this spec); and when the Lua state closes or the
-- script exits — at the end of the chunk, on an uncaught error, or through
-- os.exit — no child survives (/proc is checked, for both isolation
-- modes). spec/close_spec.lua has <close> (5.4).
local sandkit = require "sandkit"
local core = require "sandkit.core"
local child = require "helpers.child"
local procs = require "helpers.procs"
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

local HAVE_BWRAP = require("helpers.sh").have_bwrap()
local ISOLATIONS = HAVE_BWRAP and { "none", "bwrap" } or { "none" }

-- A sleep no other process on the machine runs: the needle for /proc.
local function marker() return procs.sleep_marker(700) end

local gone, kill_leftovers = procs.gone, procs.kill_matching

local function full_gc()
  for _ = 1, 3 do collectgarbage() end
end

for _, isolation in ipairs(ISOLATIONS) do
  describe("dropped objects (" .. isolation .. ")", function()
    local function new()
      return sandkit.LocalSandbox { working_directory = tmp.dir(), isolation = isolation }
    end

    it("a sandbox dropped with an exec and background processes running is cleaned up by __gc", function()
      local m = marker()
      do
        local sb = new()
        assert(sb.processes:spawn(m .. " & exec " .. m))
        sb:exec_async("exec " .. m)
        -- the exec starts on the loop: wait for both (a deadline, not one step's sample)
        assert.is_true(procs.wait_for(function() return #procs.pids_matching(m) >= 2 end, 30))
      end
      local ok = procs.gone_collecting(m)
      kill_leftovers(m)
      assert.is_true(ok, "survivors of " .. m)
    end)

    it("a dropped exec operation runs to its end and is freed; destroy kills it if it has not ended", function()
      local sb = new()
      assert(sb:start())
      local m = marker()
      sb:exec_async("exec " .. m)
      local short = sb:exec_async("echo done")
      short = nil -- luacheck: ignore
      full_gc()
      -- the command starts on the loop: wait for it (a deadline, not a sample)
      local deadline = core.now() + 30000
      while #procs.pids_matching(m) == 0 and core.now() < deadline do sandkit.step(0.02) end
      full_gc()
      assert.is_true(#procs.pids_matching(m) >= 1, "the dropped command was killed")
      assert(sb:exec("true")) -- the loop keeps working with dropped operations around
      assert(sb:destroy())
      local ok = gone(m)
      kill_leftovers(m)
      assert.is_true(ok, "survivors of " .. m)
    end)

    it("a dropped background handle: the process keeps running until destroy kills it", function()
      local sb = new()
      local m = marker()
      do assert(sb.processes:spawn("exec " .. m)) end
      full_gc()
      assert(sb:exec("true"))
      assert.is_true(procs.wait_for(function() return #procs.pids_matching(m) >= 1 end), "the process never ran")
      assert(sb:destroy())
      local ok = gone(m)
      kill_leftovers(m)
      assert.is_true(ok, "survivors of " .. m)
    end)

    it("a process handle dropped after its sandbox was destroyed is harmless", function()
      local sb = new()
      local h = assert(sb.processes:spawn("exec " .. marker()))
      assert(sb:destroy())
      assert.is_boolean(h:kill()) -- true until the killed group is reaped
      assert.is_true(assert(h:wait()).killed)
      assert.is_false(h:kill())
      h = nil -- luacheck: ignore
      sb = nil -- luacheck: ignore
      full_gc()
    end)
  end)
end

-- The subprocess: starts a sandbox per isolation mode, each with a
-- background process tree and an exec in flight, waits until they are all
-- visible in /proc, says READY, then ends the way MODE says. The marker
-- comes in the environment so that no command line but the children's
-- contains it.
local CHILD = [[
local sandkit = require "sandkit"
local m, mode = os.getenv("MARKER"), os.getenv("MODE")
local keep = {}
for iso in os.getenv("ISOLATIONS"):gmatch("%S+") do
  local sb = sandkit.LocalSandbox { working_directory = os.getenv("WS") .. "/" .. iso, isolation = iso }
  assert(sb.processes:spawn(m .. " & " .. m .. " & exec " .. m))
  keep[#keep + 1] = sb:exec_async("exec " .. m)
  keep[#keep + 1] = sb
end
local function visible()
  local n = 0
  local p = io.popen("ls /proc")
  for pid in p:lines() do
    local f = pid:match("^%d+$") and io.open("/proc/" .. pid .. "/cmdline", "rb")
    if f then
      local c = f:read("*a") or ""
      f:close()
      if c:gsub("%z", " "):find(m, 1, true) then n = n + 1 end
    end
  end
  p:close()
  return n
end
local want = 4 * #keep / 2
while visible() < want do sandkit.step(0.01) end
io.write("READY\n")
io.flush()
if mode == "error" then error("deliberate failure")
elseif mode == "exit" then os.exit(3)
elseif mode == "exit_close" then os.exit(4, true)
elseif mode == "collect" then keep = nil; collectgarbage(); collectgarbage()
end
]]

describe("when the Lua state closes", function()
  local script = tmp.dir() .. "/child.lua"
  local f = assert(io.open(script, "w"))
  f:write(CHILD)
  f:close()

  local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

  local cases = {
    { mode = "end", status = 0, what = "the script ends without cleaning up" },
    { mode = "collect", status = 0, what = "the script drops everything and collects" },
    { mode = "error", status = 1, what = "the script dies of an uncaught error" },
    { mode = "exit", status = 3, what = "the script calls os.exit(3) (the state is not closed)" },
    { mode = "exit_close", status = 4, what = "the script calls os.exit(4, true)" },
  }
  for _, c in ipairs(cases) do
    it("no child survives when " .. c.what, function()
      local m = marker()
      local cmd = ("env LUA_PATH=%s LUA_CPATH=%s MARKER=%s MODE=%s ISOLATIONS=%s WS=%s timeout -k 5 120 %s %s 2>&1; echo \"status=$?\"")
        :format(sh_quote(package.path), sh_quote(package.cpath), sh_quote(m), c.mode,
          sh_quote(table.concat(ISOLATIONS, " ")), sh_quote(tmp.dir()), child.LUA, sh_quote(script))
      local p = assert(io.popen(cmd))
      local out = p:read("*a")
      p:close()
      local ok = gone(m)
      local survivors = #procs.pids_matching(m)
      kill_leftovers(m)
      assert.truthy(out:find("^READY\n"), out)
      assert.truthy(out:find("status=" .. c.status .. "\n", 1, true), out)
      assert.is_true(ok, ("%d processes of %s survived"):format(survivors, m))
    end)
  end
end)
