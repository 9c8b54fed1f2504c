--- Testing agent code with busted: each test gives the agent a real
-- LocalSandbox in a fresh temporary directory and checks what it did there.
-- The agent below is a stand-in (a plan of shell steps run in order); in a
-- project it would be `require "my_agent"`.
--
-- Run: LUA_CPATH='build/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;' \
--        lua5.4 /usr/bin/busted examples/agent_spec.lua
local sandkit = require "sandkit"

--- The agent under test: runs each step of `plan` in `sb`, stops at the
-- first step that fails, and returns ok plus a transcript.
local function run_plan(sb, plan, step_timeout_ms)
  local transcript = {}
  for _, step in ipairs(plan) do
    local r, err = sb:exec(step, nil, { timeout = step_timeout_ms or 5000 })
    if not r then
      transcript[#transcript + 1] = { step = step, error = tostring(err) }
      return false, transcript
    end
    transcript[#transcript + 1] = { step = step, exit_code = r.exit_code, output = r.stdout, timed_out = r.timed_out }
    if r.exit_code ~= 0 then return false, transcript end
  end
  return true, transcript
end

local function temp_dir()
  local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/sandkit-agent.XXXXXX"'))
  local dir = p:read("*l")
  p:close()
  return dir
end

describe("the agent", function()
  local dir, sb
  before_each(function()
    dir = temp_dir()
    sb = sandkit.LocalSandbox { working_directory = dir }
    assert(sb:start())
  end)
  after_each(function()
    sb:destroy()
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("writes a file in its sandbox and reads it back", function()
    local ok, transcript = run_plan(sb, { "printf 'hello' > note.txt", "cat note.txt" })
    assert.is_true(ok)
    assert.equal("hello", transcript[2].output)
    -- what it left behind is visible from the test, in the working directory
    local f = assert(io.open(dir .. "/note.txt"))
    assert.equal("hello", f:read("*a"))
    f:close()
  end)

  it("stops at the first failing step", function()
    local ok, transcript = run_plan(sb, { "true", "exit 3", "touch never" })
    assert.is_false(ok)
    assert.equal(2, #transcript)
    assert.equal(3, transcript[2].exit_code)
    assert.is_nil(io.open(dir .. "/never"))
  end)

  it("a step that hangs is cut off by its timeout", function()
    local ok, transcript = run_plan(sb, { "sleep 30" }, 200)
    assert.is_false(ok)
    assert.equal(124, transcript[1].exit_code)
    assert.is_true(transcript[1].timed_out)
  end)

  it("several plans run concurrently, each in a clone of its own", function()
    local clones = {}
    for i = 1, 3 do clones[i] = sb:clone { working_directory = dir .. "/clone" .. i } end
    local jobs = {}
    for i = 1, 3 do
      jobs[i] = function() return run_plan(clones[i], { "echo " .. i .. " > id", "cat id" }) end
    end
    local results, errors = sandkit.all(jobs, { concurrency = 2 })
    assert.same({}, errors)
    for i = 1, 3 do
      assert.is_true(results[i])
      clones[i]:destroy()
    end
  end)
end)
