-- The soak at a smaller scale against the Platform and Modal reference
-- servers (issue 7): normal exits, failures, timeouts, cancellations and
-- larger outputs at once across several sandboxes. Every operation settles
-- exactly once with the outcome of its kind; our descriptors and RSS come
-- back within a small bound (remote providers start no local processes).
local sandkit = require "sandkit"
local server = require "helpers.server"
local procs = require "helpers.procs"

local LARGE = 256 * 1024
-- Under ASan (quarantine) or valgrind RSS is the tool's, not ours: those
-- runs find real leaks themselves, so RSS is bounded only in plain runs.
local INSTRUMENTED = require("helpers.procs").instrumented()

-- Runs n operations with `workers` tasks over the sandboxes; returns the
-- per-kind counts. Each operation's outcome is checked by its kind.
local function soak(sandboxes, n, workers)
  local counts = { normal = 0, failing = 0, timeout = 0, cancel = 0, large = 0 }
  local settled = {}
  local next_i = 0
  local function one(i)
    local sb = sandboxes[i % #sandboxes + 1]
    local kind = ({ "normal", "failing", "timeout", "cancel", "large" })[i % 5 + 1]
    local op
    if kind == "normal" then
      op = sb:exec_async("echo", { tostring(i) })
    elseif kind == "failing" then
      op = sb:exec_async("sh", { "-c", "exit 3" })
    elseif kind == "timeout" then
      op = sb:exec_async("sleep", { "2" }, { timeout = 50 })
    elseif kind == "cancel" then
      op = sb:exec_async("sleep", { "2" })
      op:cancel()
    else
      op = sb:exec_async("head", { "-c", tostring(LARGE), "/dev/zero" })
    end
    local r, err = op:wait()
    settled[i] = (settled[i] or 0) + 1
    assert(r, ("operation %d (%s): %s"):format(i, kind, tostring(err)))
    assert(op.done)
    if kind == "normal" then assert.equal(i .. "\n", r.stdout)
    elseif kind == "failing" then assert.equal(3, r.exit_code)
    elseif kind == "timeout" then assert.is_true(r.timed_out); assert.equal(124, r.exit_code)
    elseif kind == "cancel" then assert.is_false(r.success); assert.is_true(r.cancelled)
    else assert.equal(LARGE, #r.stdout) end
    counts[kind] = counts[kind] + 1
  end
  local tasks = {}
  for w = 1, workers do
    tasks[w] = sandkit.spawn(function()
      while next_i < n do
        next_i = next_i + 1
        one(next_i)
      end
    end)
  end
  for w = 1, workers do tasks[w]:wait() end
  for i = 1, n do assert.equal(1, settled[i], "operation " .. i .. " settled " .. tostring(settled[i]) .. " times") end
  return counts
end

local function measured(name, sandboxes, n, workers)
  assert(sandboxes[1]:exec("true")) -- connections, leases, router access
  collectgarbage()
  collectgarbage()
  local fds0, rss0 = procs.fd_count(), procs.rss_kib()
  local t0 = sandkit.now()
  local counts = soak(sandboxes, n, workers)
  local elapsed = sandkit.now() - t0
  collectgarbage()
  collectgarbage()
  local fds1, rss1 = procs.fd_count(), procs.rss_kib()
  print(("\n%s soak: %d operations (%d normal, %d failing, %d timeouts, %d cancels, %d large) in %.0f ms; "
    .. "descriptors %d -> %d, RSS %d -> %d KiB"):format(name, n, counts.normal, counts.failing, counts.timeout,
    counts.cancel, counts.large, elapsed, fds0, fds1, rss0, rss1))
  -- pooled connections may stay open; a leak per operation would not fit
  assert.is_true(fds1 <= fds0 + 8, ("descriptors %d -> %d"):format(fds0, fds1))
  if not INSTRUMENTED then
    assert.is_true(rss1 - rss0 < 32 * 1024, ("RSS %d -> %d KiB"):format(rss0, rss1))
  end
end

describe("remote soak", function()
  it("Platform: 400 operations over 4 sandboxes settle once each and leak nothing", function()
    local srv = server.start("spec/servers/platform/server.mjs", { "--quiet" })
    local sandboxes = {}
    for i = 1, 4 do
      sandboxes[i] = sandkit.PlatformSandbox { access_token = "test-token", project_id = "proj_soak",
        environment_id = "env_soak", base_url = srv.url }
      assert(sandboxes[i]:start())
    end
    local ok, err = pcall(measured, "Platform", sandboxes, 400, 16)
    for _, sb in ipairs(sandboxes) do sb:destroy() end
    srv:stop()
    assert(ok, err)
  end)

  it("Modal: 200 operations over 3 sandboxes settle once each and leak nothing", function()
    local srv = server.start("spec/servers/modal/server.mjs", { "--port", "0" })
    local sandboxes = {}
    for i = 1, 3 do
      sandboxes[i] = sandkit.ModalSandbox { server_url = srv.url, token_id = "ak-test", token_secret = "as-test" }
      assert(sandboxes[i]:start())
    end
    local ok, err = pcall(measured, "Modal", sandboxes, 200, 12)
    for _, sb in ipairs(sandboxes) do sb:destroy() end
    srv:stop()
    assert(ok, err)
  end)
end)
