-- The host loops of the engines that embed LuaJIT and Lua 5.1
-- (docs/api.md §"Embedding in a host loop"): each example runs as its own
-- process under the interpreter of the run (make test-luajit & co. run
-- this spec under each) and must finish with every command's output,
-- without starving the host's own work and without spinning.
local child = require "helpers.child"
local sh = require "helpers.sh"

local q = sh.quote

local function run_example(name)
  local code, out = sh.run(("cd %s && env %s timeout -k 5 120 %s examples/%s"):format(
    q(child.ROOT), child.LUA_ENV, child.LUA, name))
  return code, out
end

describe("host loops", function()
  it("examples/neovim.lua: luv's loop (vim.uv) drives sandkit through a poll on pollfd()", function()
    local code, out = run_example("neovim.lua")
    assert.are.equal(0, code, out)
    for i = 1, 3 do assert.truthy(out:find("job " .. i .. " ran in /", 1, true), out) end
    local ticks = tonumber(out:match("editor timer ticked (%d+) times"))
    assert.truthy(ticks, out)
    assert.is_true(ticks >= 3, "the host's own timer was starved: " .. out)
  end)

  it("examples/love_frame.lua: love.update(dt) steps sandkit once per frame", function()
    local code, out = run_example("love_frame.lua")
    assert.are.equal(0, code, out)
    local loading, level = out:match("level ready after (%d+) frames of loading: ([^\n]*)")
    assert.truthy(loading, out)
    assert.are.equal("room1 room2 room3 room4 room5 ", level)
    -- the level took 0.3 s: the game kept drawing frames meanwhile
    assert.is_true(tonumber(loading) >= 3, out)
    -- one command started on each of three frames in a row
    local a, b, c = out:match("commands started on: frame (%d+), frame (%d+), frame (%d+)\n")
    assert.truthy(a, out)
    assert.are.same({ tonumber(a) + 1, tonumber(a) + 2 }, { tonumber(b), tonumber(c) })
  end)

  it("examples/coroutines.lua: a host's own coroutine scheduler awaits operations", function()
    local code, out = run_example("coroutines.lua")
    assert.are.equal(0, code, out)
    -- agent 1 waited for agent 3's file: all three ran at once
    assert.truthy(out:find("agent 1: 8 bytes\nagent 2: 8 bytes\nagent 3: 8 bytes\n", 1, true), out)
    local cpu = tonumber(out:match("ticks, ([%d.]+) s of CPU"))
    assert.truthy(cpu, out)
    assert.is_true(cpu < 1, "spun: " .. out)
  end)
end)
