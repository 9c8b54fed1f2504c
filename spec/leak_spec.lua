-- 1,000 execs, timeouts and kills included, leave no descriptor, child
-- process or zombie behind.
local sandkit = require "sandkit"
local procs = require "helpers.procs"
local tmp = require "helpers.tmp"

-- sleeps no other run on this machine has: process checks see only ours
local TIMEOUT_SECS = "45.5" .. procs.self_pid()
local CANCEL_SECS = "46.5" .. procs.self_pid()
local BACKGROUND_SECS = "47.5" .. procs.self_pid()

teardown(tmp.cleanup)

describe("resource hygiene", function()
  it("leaves nothing behind after 1,000 execs with timeouts and kills", function()
    local sandboxes = {}
    for i = 1, 4 do sandboxes[i] = assert(sandkit.LocalSandbox { working_directory = tmp.dir() }) end
    assert(sandboxes[1]:exec("true")) -- warm up: the loop's own descriptors
    collectgarbage()
    local fds_before = procs.fd_count()
    local counts = { normal = 0, timeout = 0, kill = 0, stdin = 0, background = 0 }
    local n = 1000
    local next_i = 0
    local function worker()
      while next_i < n do
        next_i = next_i + 1
        local i = next_i
        local sb = sandboxes[i % #sandboxes + 1]
        local kind = i % 10
        if kind == 0 then
          local r = assert(sb:exec("sh", { "-c", "sleep " .. TIMEOUT_SECS .. " & sleep " .. TIMEOUT_SECS }, { timeout = 30 }))
          assert.equal(124, r.exit_code)
          counts.timeout = counts.timeout + 1
        elseif kind == 1 then
          local op = sb:exec_async("sh", { "-c", "sleep " .. CANCEL_SECS .. " & exec sleep " .. CANCEL_SECS })
          op:cancel()
          assert.is_true(assert(op:wait()).killed)
          counts.kill = counts.kill + 1
        elseif kind == 2 then
          assert.equal("in", assert(sb:exec("cat", nil, { stdin = "in" })).stdout)
          counts.stdin = counts.stdin + 1
        elseif kind == 3 then
          local h = assert(sb.processes:spawn("exec sleep " .. BACKGROUND_SECS))
          assert.is_true(sb.processes:kill(h.pid))
          counts.background = counts.background + 1
        else
          local r = assert(sb:exec("echo", { i }))
          assert.equal(i .. "\n", r.stdout)
          counts.normal = counts.normal + 1
        end
      end
    end
    local tasks = {}
    for w = 1, 16 do tasks[w] = sandkit.spawn(worker) end
    for w = 1, 16 do tasks[w]:wait() end
    assert.equal(n, counts.normal + counts.timeout + counts.kill + counts.stdin + counts.background)
    -- the last kills are reaped by the loop: wait (bounded) for that
    collectgarbage()
    local kids, zombies
    procs.wait_for(function()
      kids, zombies = procs.children()
      return #kids == 0 and zombies == 0
    end)
    assert.equal(0, #kids, "leftover children: " .. #kids)
    assert.equal(0, zombies)
    for _, marker in ipairs({ "sleep " .. TIMEOUT_SECS, "sleep " .. CANCEL_SECS, "sleep " .. BACKGROUND_SECS }) do
      assert.equal(0, procs.wait_gone(marker), marker)
    end
    -- libuv may close a lazily made descriptor meanwhile: never more after
    -- (a reaped command's descriptors close on a later loop turn: wait)
    local fds_after
    procs.wait_for(function()
      fds_after = procs.fd_count()
      return fds_after <= fds_before
    end, 30)
    assert.is_true(fds_after <= fds_before, ("descriptors: %d before, %d after"):format(fds_before, fds_after))
    for _, sb in ipairs(sandboxes) do sb:destroy() end
  end)
end)
