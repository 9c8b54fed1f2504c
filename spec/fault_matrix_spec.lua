-- Fault matrix (issue 7 item 3): every fault switch of the Platform and
-- Modal reference servers and of the emulated container CLI, one row each.
-- A row names the operation the fault hits (`when`), sets the fault
-- (`setup`), and expects either transparent recovery ("recovers": a
-- successful result), a timed-out result ("timed_out"), a result with a
-- non-zero exit ("exit N": the CLI's own status passed through), or a typed error
-- kind (checked with sandkit.errors.is). Every row also asserts completion
-- within `within_ms` (a generous anti-hang bound) and that no child process
-- is left behind. The detailed assertions live in platform_spec,
-- modal_spec and apple_container_spec; this file is the overview, and it
-- prints the matrix (fault -> outcome -> ms) at the end for docs/reliability.md.
local cjson = require "cjson"
local sandkit = require "sandkit"
local errors = require "sandkit.errors"
local server = require "helpers.server"
local procs = require "helpers.procs"
local ac = require "helpers.apple_container"

local NULL = cjson.null

-- Row fields: provider, fault, when ("start" | "exec" | "stop" | "destroy"
-- | "restart": start, stop, fault, start again), opts (sandbox options),
-- prepare(srv) (before the sandbox starts), setup(srv, sb) (the fault),
-- command + args + exec_opts (the command run), check(r) (extra look at a
-- successful result), expect, within_ms.
local ROWS = {}
local function row(t) ROWS[#ROWS + 1] = t end

-- ---- Platform ------------------------------------------------------------------

local function pf(doc) return function(srv) assert.is_nil(srv:faults(doc).error) end end

row { provider = "platform", fault = "create 503 twice", when = "start",
  setup = pf { http = { { route = "create", status = 503, times = 2 } } }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "create 500 always", when = "start",
  setup = pf { http = { { route = "create", status = 500 } } }, expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "create 404 (4xx, not retried)", when = "start",
  setup = pf { http = { { route = "create", status = 404 } } }, expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "create connection dropped", when = "start",
  setup = pf { http = { { route = "create", drop = true } } }, expect = "NetworkError", within_ms = 5000 }
row { provider = "platform", fault = "create HTML 502 once", when = "start",
  setup = pf { http = { { route = "create", status = 502, body = "html", times = 1 } } },
  expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "create 2xx body malformed", when = "start",
  setup = pf { http = { { route = "create", body = "malformed", times = 1 } } },
  expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "reattach GET 500", when = "start",
  opts = function(srv)
    -- a live platform sandbox to reattach to
    local first = sandkit.PlatformSandbox { access_token = "test-token", project_id = "proj_123",
      environment_id = "env_123", base_url = srv.url, retry_delays_ms = { 20, 40 } }
    assert(first:start())
    return { sandbox_id = first:info().metadata.sandbox_id }
  end,
  setup = pf { http = { { route = "get", status = 500, times = 1 } } }, expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "delete 500", when = "destroy",
  setup = pf { http = { { route = "delete", status = 500, times = 1 } } }, expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "lease 404", when = "exec",
  setup = pf { http = { { route = "lease", status = 404, times = 1 } } }, expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "lease 500", when = "exec",
  setup = pf { http = { { route = "lease", status = 500, times = 1 } } }, expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "lease HTML 502", when = "exec",
  setup = pf { http = { { route = "lease", status = 502, body = "html", times = 1 } } },
  expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "lease 500 JSON without error shape", when = "exec",
  setup = pf { http = { { route = "lease", status = 500, json = { foo = "bar" }, times = 1 } } },
  expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "lease 401 empty body", when = "exec",
  setup = pf { http = { { route = "lease", status = 401, body = "empty", times = 1 } } },
  expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "lease 500 text body", when = "exec",
  setup = pf { http = { { route = "lease", status = 500, body = "text", text = "oops", times = 1 } } },
  expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "lease 2xx body malformed", when = "exec",
  setup = pf { http = { { route = "lease", body = "malformed", times = 1 } } },
  expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "lease for another provider (e2b)", when = "exec",
  setup = pf { http = { { route = "lease", status = 200, times = 1, json = { provider = "e2b", sandboxId = "sbx_1",
    providerResourceId = "x", jwt = "j", wsEndpoint = "ws://127.0.0.1:1/ws/exec", subprotocol = "railway-shell",
    expiresAt = NULL } } } },
  expect = "PlatformApiError", within_ms = 5000 }
row { provider = "platform", fault = "lease delayed 6 s past request_timeout_ms 1000", when = "exec",
  opts = { request_timeout_ms = 1000 },
  setup = pf { http = { { route = "lease", delay_ms = 6000, times = 1 } } }, expect = "TimeoutError", within_ms = 4500 }
row { provider = "platform", fault = "lease delayed 100 ms", when = "exec",
  setup = pf { http = { { route = "lease", delay_ms = 100, times = 1 } } }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "lease minted already expired", when = "exec",
  setup = pf { http = { { route = "lease", expired = true, times = 1 } } }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "lease TTL 30 s (re-mint each exec)", when = "exec",
  setup = pf { lease_ttl_ms = 30000 }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "lease expiresAt null", when = "exec",
  setup = pf { lease_expires_at_null = true }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "cached leases revoked", when = "exec",
  setup = function(srv, sb)
    assert(sb:exec("true")) -- caches a lease
    srv:admin("POST", "/__admin/revoke-leases", {})
  end, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "lease 410 on first mint", when = "exec",
  setup = pf { http = { { route = "lease", status = 410, times = 1 } } },
  expect = "SandboxDestroyedError", within_ms = 5000 }
row { provider = "platform", fault = "ws drop (1006) then lease 410", when = "exec",
  setup = pf { ws = { { action = "close_before_exit", code = 1006, times = 1 } },
    http = { { route = "lease", status = 410, skip = 1, times = 1 } } },
  expect = "SandboxDestroyedError", within_ms = 5000 }
row { provider = "platform", fault = "ws close with destroy_sandbox", when = "exec",
  setup = pf { ws = { { action = "close_before_exit", destroy_sandbox = true, times = 1 } } },
  expect = "SandboxDestroyedError", within_ms = 5000 }
row { provider = "platform", fault = "sandbox destroyed platform-side (idle GC)", when = "exec",
  setup = function(srv, sb)
    assert(sb:exec("true")) -- caches a lease
    srv:admin("POST", "/__admin/sandboxes/" .. sb:info().metadata.sandbox_id .. "/destroy", {})
  end, expect = "SandboxDestroyedError", within_ms = 5000 }
row { provider = "platform", fault = "ws close 1011 twice", when = "exec",
  setup = pf { ws = { { action = "close_before_exit", code = 1011, reason = "server_error", times = 2 } } },
  expect = "SandboxExecTransportError", within_ms = 5000 }
row { provider = "platform", fault = "ws drop (1006) once", when = "exec",
  setup = pf { ws = { { action = "close_before_exit", code = 1006, times = 1 } } }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "ws close at open once", when = "exec",
  setup = pf { ws = { { action = "close_before_exit", at = "open", times = 1 } } }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "ws close at init once", when = "exec",
  setup = pf { ws = { { action = "close_before_exit", at = "init", times = 1 } } }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "ws close without code (1005) once", when = "exec",
  setup = pf { ws = { { action = "close_before_exit", code = 1005, times = 1 } } }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "ws close without code (1005) always", when = "exec",
  setup = pf { ws = { { action = "close_before_exit", code = 1005 } } },
  expect = "SandboxExecTransportError", within_ms = 5000 }
row { provider = "platform", fault = "ws handshake rejected 401 once", when = "exec",
  setup = pf { ws = { { action = "reject", status = 401, times = 1 } } }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "ws handshake rejected 403 always", when = "exec",
  setup = pf { ws = { { action = "reject", status = 403 } } }, expect = "SandboxExecTransportError", within_ms = 5000 }
row { provider = "platform", fault = "ws handshake stalls (handshake_timeout_ms 300)", when = "exec",
  opts = { handshake_timeout_ms = 300 },
  setup = pf { ws = { { action = "stall" } } }, expect = "SandboxExecTransportError", within_ms = 5000 }
row { provider = "platform", fault = "ws handshake stalls past exec timeout 300", when = "exec",
  exec_opts = { timeout = 300 },
  setup = pf { ws = { { action = "stall" } } }, expect = "timed_out", within_ms = 3000 }
row { provider = "platform", fault = "ws handshake delayed 200 ms", when = "exec",
  opts = { handshake_timeout_ms = 3000 },
  setup = pf { ws = { { action = "delay", delay_ms = 200, times = 1 } } }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "ws noise, durable_session, output after exit", when = "exec",
  setup = pf { ws = { { action = "noise" }, { action = "durable_session" }, { action = "output_after_exit" } } },
  check = function(r) assert.equal("ok\n", r.stdout) end, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "ws exit without exit_code", when = "exec",
  setup = pf { ws = { { action = "exit_without_code" } } }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "ws server close after exit (1001)", when = "exec",
  setup = pf { ws = { { action = "close_after_exit", code = 1001 } } }, expect = "recovers", within_ms = 5000 }
row { provider = "platform", fault = "ws output in 1-byte frames", when = "exec",
  command = "printf", args = { "h\195\169llo" },
  setup = pf { ws = { { action = "chunk_bytes", bytes = 1 } } },
  check = function(r) assert.equal("h\195\169llo", r.stdout) end, expect = "recovers", within_ms = 5000 }

-- ---- Modal ---------------------------------------------------------------------

local function mf(doc) return function(srv) srv:faults(doc) end end

row { provider = "modal", fault = "SandboxCreate UNAVAILABLE x3", when = "start",
  setup = mf { unavailable = { rpc = "SandboxCreate", count = 3 } }, expect = "recovers", within_ms = 15000 }
row { provider = "modal", fault = "SandboxCreate UNAVAILABLE x4", when = "start",
  setup = mf { unavailable = { rpc = "SandboxCreate", count = 4 } }, expect = "ModalError", within_ms = 15000 }
row { provider = "modal", fault = "SandboxCreate reply lost after the work", when = "start",
  setup = mf { unavailable = { rpc = "SandboxCreate", count = 1, after = true } }, expect = "recovers", within_ms = 15000 }
row { provider = "modal", fault = "UNAVAILABLE x2 on any RPC", when = "start",
  setup = mf { unavailable = { rpc = "*", count = 2 } }, expect = "recovers", within_ms = 15000 }
row { provider = "modal", fault = "TaskExecStart + TaskExecStdioRead UNAVAILABLE x2", when = "exec",
  setup = mf { unavailable = { { rpc = "TaskExecStart", count = 2 }, { rpc = "TaskExecStdioRead", count = 2 } } },
  expect = "recovers", within_ms = 15000 }
for _, mode in ipairs({ "status", "rst" }) do
  row { provider = "modal", fault = "stdout stream cut at 4 KiB x2 (" .. mode .. ")", when = "exec",
    command = "seq", args = { "1", "20000" },
    setup = mf { cut_stream = { after_bytes = 4096, count = 2, mode = mode, fd = "stdout" } },
    check = function(r)
      local _, lines = r.stdout:gsub("\n", "")
      assert.equal(20000, lines)
      assert.equal("20000\n", r.stdout:sub(-6))
    end, expect = "recovers", within_ms = 15000 }
end
row { provider = "modal", fault = "AppGetOrCreate delayed 3 s x2 (rpc_timeout_ms 1000)", when = "start",
  opts = { rpc_timeout_ms = 1000 },
  setup = mf { delay = { rpc = "AppGetOrCreate", ms = 3000, count = 2 } }, expect = "recovers", within_ms = 15000 }
row { provider = "modal", fault = "AppGetOrCreate always too slow (rpc_timeout_ms 200)", when = "start",
  opts = { rpc_timeout_ms = 200 },
  setup = mf { delay = { rpc = "AppGetOrCreate", ms = 1500, count = 10 } }, expect = "ModalError", within_ms = 15000 }
row { provider = "modal", fault = "TaskExecStart INTERNAL once (retried)", when = "exec",
  setup = mf { fail = { rpc = "TaskExecStart", count = 1, code = 13, message = "boom" } },
  expect = "recovers", within_ms = 15000 }
row { provider = "modal", fault = "TaskExecStart INVALID_ARGUMENT once", when = "exec",
  setup = mf { fail = { rpc = "TaskExecStart", count = 1, code = 3, message = "boom" } },
  expect = "ModalError", within_ms = 15000 }
row { provider = "modal", fault = "every RPC delayed 100 ms", when = "exec",
  setup = mf { delay = { rpc = "*", ms = 100 } }, expect = "recovers", within_ms = 15000 }
row { provider = "modal", fault = "TaskExecStdioRead stalls past exec timeout 1 s", when = "exec",
  exec_opts = { timeout = 1000 },
  setup = mf { delay = { rpc = "TaskExecStdioRead", ms = 30000 } }, expect = "timed_out", within_ms = 15000 }
row { provider = "modal", fault = "tokens expired, short TTL (refetched)", when = "exec",
  prepare = mf { token_ttl_s = 20 },
  setup = function(srv, sb)
    assert(sb:exec("true"))
    srv:faults({ expire_tokens = true })
  end, expect = "recovers", within_ms = 15000 }
row { provider = "modal", fault = "tokens expired, long TTL", when = "exec",
  setup = function(srv, sb)
    assert(sb:exec("true"))
    srv:faults({ expire_tokens = true })
  end, expect = "ModalError", within_ms = 15000 }
row { provider = "modal", fault = "wrong token secret", when = "start",
  opts = { token_secret = "not-the-secret" }, expect = "ModalError", within_ms = 15000 }
row { provider = "modal", fault = "sandbox killed behind the client's back", when = "exec",
  setup = function(srv, sb)
    assert(sb:exec("true"))
    for _, s in ipairs(srv:admin("GET", "/__admin/sandboxes")) do
      if s.running and s.name == sb.id then srv:admin("POST", "/__admin/sandboxes/" .. s.id .. "/kill", {}) end
    end
  end, expect = "recovers", within_ms = 15000 }

-- ---- emulated Apple container CLI ----------------------------------------------

local function cf(rules) return function(env) env:faults(rules) end end

row { provider = "container", fault = "inspect exits 7", when = "start",
  setup = cf { { command = "inspect", exit = 7, stderr = "container service unavailable" } },
  expect = "ContainerCliError", within_ms = 10000 }
row { provider = "container", fault = "inspect prints garbage (not json)", when = "start",
  setup = cf { { command = "inspect", stdout = "not json" } }, expect = "ContainerCliError", within_ms = 10000 }
row { provider = "container", fault = "inspect hangs (timeout 2000)", when = "start",
  opts = { timeout = 2000 },
  setup = cf { { command = "inspect", hang = true } }, expect = "ContainerCliError", within_ms = 10000 }
row { provider = "container", fault = "inspect delayed 200 ms", when = "start",
  setup = cf { { command = "inspect", delay_ms = 200 } }, expect = "recovers", within_ms = 10000 }
row { provider = "container", fault = "run exits 2", when = "start",
  setup = cf { { command = "run", exit = 2, stderr = "bad image" } }, expect = "ContainerCliError", within_ms = 10000 }
row { provider = "container", fault = "new container stopped before ready", when = "start",
  setup = function(env, sb)
    env:faults({ { command = "inspect", skip = 1, times = 1, stdout = cjson.encode({ {
      id = sb.id, status = { state = "stopped", networks = { { network = "default" } } },
      configuration = { id = sb.id, labels = { ["mastra.sandbox"] = "true", ["mastra.sandbox.id"] = sb.id },
        resources = { cpus = 2, memoryInBytes = 512 * 1024 * 1024 } } } }) } })
  end, expect = "ContainerCliError", within_ms = 10000 }
row { provider = "container", fault = "start exits 5 (reconnect to stopped)", when = "restart",
  setup = cf { { command = "start", exit = 5, stderr = "start failed" } }, expect = "ContainerCliError", within_ms = 10000 }
row { provider = "container", fault = "stop exits 3", when = "stop",
  setup = cf { { command = "stop", exit = 3, stderr = "permission denied" } },
  expect = "ContainerCliError", within_ms = 10000 }
row { provider = "container", fault = "stop: container not found (race)", when = "stop",
  setup = cf { { command = "stop", exit = 1, stderr = "container not found" } }, expect = "recovers", within_ms = 10000 }
row { provider = "container", fault = "delete exits 4", when = "destroy",
  setup = cf { { command = "delete", exit = 4, stderr = "delete failed" } },
  expect = "ContainerCliError", within_ms = 10000 }
row { provider = "container", fault = "delete: container not found (race)", when = "destroy",
  setup = cf { { command = "delete", exit = 1, stderr = "container not found" } }, expect = "recovers", within_ms = 10000 }
row { provider = "container", fault = "run hangs (timeout 2000)", when = "start",
  opts = { timeout = 2000 },
  setup = cf { { command = "run", hang = true } }, expect = "ContainerCliError", within_ms = 10000 }
-- 5 s: the start before the stop (inspect, run, a readiness exec) runs
-- under the same bound, and on a loaded machine the emulated CLI's calls
-- take seconds
row { provider = "container", fault = "stop hangs (timeout 5000)", when = "stop",
  opts = { timeout = 5000 },
  setup = cf { { command = "stop", hang = true } }, expect = "ContainerCliError", within_ms = 20000 }
row { provider = "container", fault = "exec exits 9 with garbage output", when = "exec",
  setup = cf { { command = "exec", exit = 9, stdout = "\1garbage", stderr = "not an error format" } },
  expect = "exit 9", within_ms = 10000 }
row { provider = "container", fault = "exec delayed 200 ms", when = "exec",
  setup = cf { { command = "exec", delay_ms = 200 } }, expect = "recovers", within_ms = 10000 }
row { provider = "container", fault = "exec hangs (timeout 100, host bound +10 s)", when = "exec",
  exec_opts = { timeout = 100 },
  setup = cf { { command = "exec", hang = true } }, expect = "timed_out", within_ms = 20000 }
row { provider = "container", fault = "CLI binary missing", when = "start",
  opts = { container_binary = "/definitely/missing/container" }, expect = "ContainerCliError", within_ms = 10000 }

-- ---- runner --------------------------------------------------------------------

-- Pids of our live descendants; zombies count too (nobody reaped them).
local function child_set()
  local set = {}
  for _, c in ipairs(procs.children()) do set[c.pid] = c.args end
  return set
end

-- Descendants that appeared since `before`, waiting (bounded) for ones
-- that are already on their way out (a killed command being reaped).
local function new_children(before)
  local t0 = sandkit.now()
  while true do
    local extra = {}
    for pid, args in pairs(child_set()) do
      if not before[pid] then extra[#extra + 1] = pid .. " " .. args end
    end
    if #extra == 0 or sandkit.now() - t0 > 15000 then return extra end
    sandkit.sleep(0.05)
  end
end

local function outcome_of(r, err)
  if r == nil then return errors.is(err) and err.kind or ("raw error: " .. tostring(err)) end
  if r == true then return "recovers" end
  if r.timed_out then return "timed_out" end
  if r.exit_code == 0 then return "recovers" end
  return "exit " .. tostring(r.exit_code)
end

local matrix = {}

-- Runs one row: builds the sandbox with make(opts), drives the operation
-- the fault hits, returns outcome, elapsed ms and the error or result.
local function drive(rw, ctx, make)
  local opts = rw.opts
  if type(opts) == "function" then opts = opts(ctx) end
  if rw.prepare then rw.prepare(ctx) end
  local sb = make(opts or {})
  local when = rw.when
  if when ~= "start" then
    assert(sb:start())
    if when == "restart" then assert(sb:stop()) end
  end
  if rw.setup then rw.setup(ctx, sb) end
  local command, args = rw.command or "echo ok", rw.args
  local t0 = sandkit.now()
  local r, err
  if when == "start" or when == "restart" then
    r, err = sb:start()
    if r then r, err = sb:exec(command, args, rw.exec_opts) end
  elseif when == "exec" then
    r, err = sb:exec(command, args, rw.exec_opts)
  elseif when == "stop" then
    r, err = sb:stop()
  elseif when == "destroy" then
    r, err = sb:destroy()
  else
    error("unknown when: " .. tostring(when))
  end
  return sb, r, err, math.floor(sandkit.now() - t0 + 0.5)
end

local function judge(rw, r, err, ms)
  local outcome = outcome_of(r, err)
  matrix[#matrix + 1] = { provider = rw.provider, fault = rw.fault, outcome = outcome, ms = ms }
  if rw.expect == "recovers" or rw.expect == "timed_out" or rw.expect:match("^exit ") then
    assert.equal(rw.expect, outcome, err and tostring(err) or nil)
    if rw.check and type(r) == "table" then rw.check(r) end
  else
    assert.is_true(errors.is(err, rw.expect), "expected " .. rw.expect .. ", got " .. outcome ..
      (err and (": " .. tostring(err)) or ""))
  end
  assert.is_true(ms < rw.within_ms, ("took %d ms, bound %d"):format(ms, rw.within_ms))
end

-- Drives and judges one row with sandboxes made by new_sandbox(base
-- overlaid by the row's options); then faults_off(), every sandbox made
-- destroyed, cleanup() when given; no child process of ours may be left.
local function check_row(rw, ctx, new_sandbox, base, faults_off, cleanup)
  local before = child_set()
  local made = {}
  local ok, e = pcall(function()
    local _, r, err, ms = drive(rw, ctx, function(extra)
      local o = {}
      for k, v in pairs(base) do o[k] = v end
      for k, v in pairs(extra) do o[k] = v end
      local sb = new_sandbox(o)
      made[#made + 1] = sb
      return sb
    end)
    judge(rw, r, err, ms)
  end)
  faults_off()
  for _, sb in ipairs(made) do pcall(sb.destroy, sb) end
  if cleanup then cleanup() end
  if not ok then error(e, 0) end
  assert.same({}, new_children(before))
end

local function rows_of(provider)
  local out = {}
  for _, rw in ipairs(ROWS) do if rw.provider == provider then out[#out + 1] = rw end end
  return out
end

describe("fault matrix", function()
  teardown(function()
    local lines = { "", "| provider | fault | outcome | ms |", "| --- | --- | --- | --- |" }
    for _, m in ipairs(matrix) do
      lines[#lines + 1] = ("| %s | %s | %s | %d |"):format(m.provider, m.fault, m.outcome, m.ms)
    end
    print(table.concat(lines, "\n"))
  end)

  describe("Platform", function()
    local srv
    setup(function()
      srv = server.start("spec/servers/platform/server.mjs", { "--quiet", "--exit-close-grace-ms", "2000" })
    end)
    teardown(function() srv:stop() end)

    for _, rw in ipairs(rows_of("platform")) do
      it(rw.fault .. " -> " .. rw.expect, function()
        srv:reset()
        check_row(rw, srv, sandkit.PlatformSandbox, { access_token = "test-token", project_id = "proj_123",
          environment_id = "env_123", base_url = srv.url, retry_delays_ms = { 20, 40 } },
          function() srv:reset() end) -- faults off (and the server kills its commands) before cleaning up
      end)
    end
  end)

  describe("Modal", function()
    local srv
    setup(function()
      srv = server.start("spec/servers/modal/server.mjs", { "--port", "0" },
        { MODAL_CONFIG_PATH = "/nonexistent/sandkit-modal.toml" })
    end)
    teardown(function() srv:stop() end)

    for _, rw in ipairs(rows_of("modal")) do
      it(rw.fault .. " -> " .. rw.expect, function()
        local function reset_sandboxes() srv:admin("POST", "/__admin/reset", { sandboxes = true }) end
        srv:reset()
        reset_sandboxes()
        check_row(rw, srv, sandkit.ModalSandbox, { server_url = srv.url, token_id = "ak-test", token_secret = "as-test" },
          function() srv:reset() end, reset_sandboxes)
      end)
    end
  end)

  describe("container CLI", function()
    local env
    setup(function() env = ac.new() end)
    teardown(function()
      assert.same({}, env:teardown())
    end)

    for i, rw in ipairs(rows_of("container")) do
      it(rw.fault .. " -> " .. rw.expect, function()
        local function faults_off() env:faults(nil) end
        faults_off()
        check_row(rw, env, sandkit.AppleContainerSandbox, { id = "fault-row-" .. i, container_binary = env.binary },
          faults_off, function() env:cli({ "_reap-all", "--delete" }) end)
        assert.same({}, ac.wait_live_processes_gone(env.state_dir))
      end)
    end
  end)
end)
