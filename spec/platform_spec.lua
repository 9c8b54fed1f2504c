-- PlatformSandbox against the reference server (spec/servers/platform):
-- options and env fallbacks, every status-handling row of
-- docs/protocols/platform.md §2.3, §2.4, §2.5, §3.4, §3.5 and §4, every fault
-- switch of the server, the pinned scenarios of
-- docs/protocols/platform.md §3.5, what the server received (subprotocol,
-- authorization, frames), background processes and secrets. Each case asserts
-- the typed error or the recovery, and a generous anti-hang bound.
local cjson = require "cjson"
local sandkit = require "sandkit"
local server = require "helpers.server"

local TOKEN = "test-token"
local PROJECT = "proj_123"
local ENV_ID = "env_123"
local NULL = cjson.null
local NONE = {} -- in an option override: remove the key

local function now() return sandkit.now() end

local sh_quote = require("helpers.sh").quote

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

-- Runs `code` in a fresh lua5.4 whose environment is only PATH, the Lua
-- paths and `env`; the code's last stdout line is JSON, decoded.
local function child(env, code)
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(code)
  f:close()
  local parts = { "env -i", "PATH=" .. sh_quote(os.getenv("PATH")),
    "LUA_PATH=" .. sh_quote(os.getenv("LUA_PATH") or "lua/?.lua;lua/?/init.lua;spec/?.lua;;"),
    "LUA_CPATH=" .. sh_quote(os.getenv("LUA_CPATH") or "build/?.so;;") }
  for k, v in pairs(env) do parts[#parts + 1] = k .. "=" .. sh_quote(v) end
  parts[#parts + 1] = "lua5.4 " .. sh_quote(script) .. " 2>&1"
  local p = io.popen(table.concat(parts, " "))
  local out = p:read("a")
  p:close()
  os.remove(script)
  local last = out:match("([^\n]*)\n?$")
  local ok, decoded = pcall(cjson.decode, last)
  assert(ok, "child output: " .. out)
  return decoded, out
end

local CHILD_PRELUDE = [[
local cjson = require "cjson"
local sandkit = require "sandkit"
local function report(t) print(cjson.encode(t)) end
local function err_table(e)
  if type(e) ~= "table" then return { message = tostring(e) } end
  local t = {}
  for k, v in pairs(e) do if type(v) ~= "function" then t[k] = v end end
  return t
end
]]

describe("PlatformSandbox", function()
  local srv
  local open = {}

  setup(function()
    srv = server.start("spec/servers/platform/server.mjs", { "--quiet", "--exit-close-grace-ms", "2000" })
  end)

  teardown(function()
    srv:stop()
  end)

  before_each(function()
    srv:reset()
  end)

  after_each(function()
    for _, sb in ipairs(open) do
      if sb.status ~= "destroyed" then pcall(sb.destroy, sb) end
    end
    open = {}
  end)

  local function opts(extra)
    local o = { access_token = TOKEN, project_id = PROJECT, environment_id = ENV_ID, base_url = srv.url,
      retry_delays_ms = { 20, 40 } }
    for k, v in pairs(extra or {}) do
      if v == NONE then o[k] = nil else o[k] = v end
    end
    return o
  end

  local function new_sb(extra)
    local sb = sandkit.PlatformSandbox(opts(extra))
    open[#open + 1] = sb
    return sb
  end

  local function started(extra)
    local sb = new_sb(extra)
    assert(sb:start())
    return sb
  end

  local function log() return srv:log() end

  local function requests(route)
    local out = {}
    for _, q in ipairs(log().requests) do
      if route == nil or q.route == route then out[#out + 1] = q end
    end
    return out
  end

  local function sockets()
    local out = {}
    for _, w in ipairs(log().ws) do
      if w.path == "/ws/exec" then out[#out + 1] = w end
    end
    return out
  end

  -- Waits (bounded) until the server has logged the close of every socket.
  local function closed_sockets(n)
    local t0 = now()
    while true do
      local ws, done = sockets(), 0
      for _, w in ipairs(ws) do if w.close and w.close ~= NULL then done = done + 1 end end
      if done >= n or now() - t0 > 15000 then return ws end
      sandkit.sleep(0.05)
    end
  end

  local function faults(doc) assert.is_nil(srv:faults(doc).error) end

  local function timed(fn)
    local t0 = now()
    local a, b = fn()
    return a, b, now() - t0
  end

  -- ---- options and configuration -----------------------------------------------

  describe("configuration", function()
    it("requires an access token, a project and an environment, naming the key", function()
      local cases = {
        { { project_id = PROJECT, environment_id = ENV_ID }, "access_token" },
        { { access_token = TOKEN, environment_id = ENV_ID }, "project_id" },
        { { access_token = TOKEN, project_id = PROJECT }, "environment_id" },
        { { access_token = "", project_id = PROJECT, environment_id = ENV_ID }, "access_token" },
      }
      for _, c in ipairs(cases) do
        local r = child({}, CHILD_PRELUDE .. ([[
local ok, e = pcall(sandkit.PlatformSandbox, cjson.decode(%q))
report({ ok = ok, err = err_table(e) })]]):format(cjson.encode(c[1])))
        assert.is_false(r.ok)
        assert.equal("ConfigError", r.err.kind)
        assert.equal(c[2], r.err.key)
        assert.equal("platform", r.err.provider)
        assert.truthy(r.err.message:find(c[2] .. " is required", 1, true), r.err.message)
      end
    end)

    it("reads MASTRA_* env fallbacks and MASTRA_WORKSPACE_PROXY_URL (one trailing / removed)", function()
      local r = child({ MASTRA_PLATFORM_ACCESS_TOKEN = TOKEN, MASTRA_PROJECT_ID = "proj env/1",
        MASTRA_ENVIRONMENT_ID = "env_from_env", MASTRA_WORKSPACE_PROXY_URL = srv.url .. "/" }, CHILD_PRELUDE .. [[
local sb = sandkit.PlatformSandbox {}
local r, e = sb:exec("echo", { "via env" })
sb:destroy()
report({ out = r and r.stdout, err = e and err_table(e) })]])
      assert.equal("via env\n", r.out)
      local create = requests("create")[1]
      assert.equal("/v1/railway/projects/proj%20env%2F1/sandbox", create.path)
      assert.equal("env_from_env", create.body.json.environmentId)
    end)

    it("counts empty values as missing and ignores MASTRA_PLATFORM_SECRET_KEY", function()
      local r = child({ MASTRA_PLATFORM_ACCESS_TOKEN = "", MASTRA_PLATFORM_SECRET_KEY = TOKEN,
        MASTRA_PROJECT_ID = PROJECT, MASTRA_ENVIRONMENT_ID = ENV_ID }, CHILD_PRELUDE .. [[
local ok, e = pcall(sandkit.PlatformSandbox, {})
report({ ok = ok, err = err_table(e) })]])
      assert.is_false(r.ok)
      assert.equal("access_token", r.err.key)
      -- an empty option falls back to the variable
      r = child({ MASTRA_ENVIRONMENT_ID = "env_x" }, CHILD_PRELUDE .. ([[
local sb = sandkit.PlatformSandbox { access_token = %q, project_id = %q, environment_id = "", base_url = %q }
assert(sb:start())
sb:destroy()
report({ ok = true })]]):format(TOKEN, PROJECT, srv.url))
      assert.is_true(r.ok)
      assert.equal("env_x", requests("create")[1].body.json.environmentId)
    end)

    it("resolves the base URL: MASTRA_PLATFORM_REGION=us, else the default", function()
      for region, host in pairs({ us = "https://workspaces.us.mastra.ai/", [" EU "] = "https://workspaces.eu.mastra.ai/",
        xx = "https://workspaces.mastra.ai/" }) do
        local r = child({ MASTRA_PLATFORM_REGION = region }, CHILD_PRELUDE .. ([[
local sb = sandkit.PlatformSandbox { access_token = %q, project_id = "p", environment_id = "e", request_timeout_ms = 3000 }
local ok, e = sb:start()
report({ ok = ok, err = err_table(e) })]]):format(TOKEN))
        assert.is_nil(r.ok)
        assert.truthy(r.err.kind == "NetworkError" or r.err.kind == "TimeoutError", r.err.kind)
        assert.equal(host .. "v1/railway/projects/p/sandbox", r.err.url)
      end
    end)

    it("needs no environment_id when reattaching, and validates network_isolation", function()
      local sb = sandkit.PlatformSandbox { access_token = TOKEN, project_id = PROJECT, sandbox_id = "sbx_x", base_url = srv.url }
      assert.equal("pending", sb.status)
      local ok, e = pcall(sandkit.PlatformSandbox, opts({ network_isolation = "OPEN" }))
      assert.is_false(ok)
      assert.equal("network_isolation", e.key)
      ok, e = pcall(sandkit.PlatformSandbox, opts({ base_url = "ftp://x" }))
      assert.is_false(ok)
      assert.equal("base_url", e.key)
    end)
  end)

  -- ---- control plane -------------------------------------------------------------------

  describe("control plane", function()
    it("creates with the spec's body and headers; exec-lease has no content-type", function()
      local sb = started({ acting_user_id = "  external-user-42  ", idle_timeout_minutes = 45,
        network_isolation = "PRIVATE", env = { BASE = "1" } })
      assert(sb:exec("true"))
      local create, lease = requests("create")[1], requests("lease")[1]
      assert.same({ id = sb.id, environmentId = ENV_ID, idleTimeoutMinutes = 45, networkIsolation = "PRIVATE",
        env = { BASE = "1" } }, create.body.json)
      assert.equal("/v1/railway/projects/proj_123/sandbox", create.path)
      assert.equal("application/json", create.headers["content-type"])
      for _, q in ipairs({ create, lease }) do
        assert.equal("Bearer " .. TOKEN, q.headers.authorization)
        assert.equal("external-user-42", q.headers["x-acting-user-id"])
      end
      assert.is_nil(lease.headers["content-type"])
      assert.equal("/v1/railway/projects/proj_123/sandbox/" .. sb:info().metadata.sandbox_id .. "/exec-lease", lease.path)
    end)

    it("sends env as {} and no optional keys when none are configured", function()
      local sb = started()
      local body = requests("create")[1].body.json
      assert.same({ id = sb.id, environmentId = ENV_ID, env = {} }, body)
      assert.is_nil(requests("create")[1].headers["x-acting-user-id"])
    end)

    it("retries a create answered 5xx (delays from retry_delays_ms) and succeeds", function()
      faults({ http = { { route = "create", status = 503, times = 2 } } })
      local sb = new_sb()
      local ok, err, ms = timed(function() return sb:start() end)
      assert.is_true(ok, tostring(err))
      assert.equal(3, #requests("create"))
      assert.equal("running", sb.status)
      assert.is_true(ms < 5000)
    end)

    it("waits 2 s before the first create retry by default", function()
      faults({ http = { { route = "create", status = 500, times = 1 } } })
      local sb = new_sb({ retry_delays_ms = NONE })
      local ok, _, ms = timed(function() return sb:start() end)
      assert.is_true(ok)
      assert.equal(2, #requests("create"))
      assert.is_true(ms >= 1900 and ms < 10000, tostring(ms))
    end)

    it("gives up after three 5xx creates with PlatformApiError internal_error", function()
      faults({ http = { { route = "create", status = 500 } } })
      local sb = new_sb()
      local ok, err, ms = timed(function() return sb:start() end)
      assert.is_nil(ok)
      assert.equal("PlatformApiError", err.kind)
      assert.equal(500, err.status)
      assert.equal("internal_error", err.code)
      assert.equal(3, #requests("create"))
      assert.equal("error", sb.status)
      assert.is_true(ms < 5000)
    end)

    it("does not retry a 4xx create (404 not_found, one call)", function()
      faults({ http = { { route = "create", status = 404, message = "Environment not found" } } })
      local ok, err = new_sb():start()
      assert.is_nil(ok)
      assert.equal(404, err.status)
      assert.equal("not_found", err.code)
      assert.equal("Environment not found", err.proxy_message)
      assert.truthy(err.message:find("not_found: Environment not found", 1, true))
      assert.equal(1, #requests("create"))
    end)

    it("does not retry a create whose connection dropped (NetworkError)", function()
      faults({ http = { { route = "create", drop = true } } })
      local ok, err = new_sb():start()
      assert.is_nil(ok)
      assert.equal("NetworkError", err.kind)
      assert.equal("network", err.reason)
      -- sandkit sends it once; libcurl itself re-sends once on a fresh
      -- connection when a reused keep-alive connection dies unanswered
      assert.is_true(#requests("create") <= 2)
    end)

    it("retries an HTML 502 create; an HTML 502 lease is a PlatformApiError without code", function()
      faults({ http = { { route = "create", status = 502, body = "html", times = 1 },
        { route = "lease", status = 502, body = "html", times = 1 } } })
      local sb = new_sb()
      assert(sb:start())
      assert.equal(2, #requests("create"))
      local r, err = sb:exec("true")
      assert.is_nil(r)
      assert.equal("PlatformApiError", err.kind)
      assert.equal(502, err.status)
      assert.is_nil(err.code)
      assert.is_nil(err.proxy_message)
      assert.truthy(err.body:find("<html", 1, true))
      assert.truthy(err.message:find("Platform proxy request failed with 502: <html", 1, true))
      assert.equal(0, #sockets())
    end)

    it("keeps code nil for JSON bodies without the error shape, and for an empty body", function()
      faults({ http = { { route = "lease", status = 500, json = { foo = "bar" }, times = 1 },
        { route = "lease", status = 401, body = "empty", times = 1 } } })
      local sb = started()
      local _, err = sb:exec("true")
      assert.equal(500, err.status)
      assert.is_nil(err.code)
      assert.equal('{"foo":"bar"}', err.body)
      _, err = sb:exec("true")
      assert.equal(401, err.status)
      assert.equal("", err.body)
      assert.equal("Platform proxy request failed with 401", err.message)
    end)

    it("reports a malformed 2xx body as PlatformApiError (create, lease)", function()
      faults({ http = { { route = "create", body = "malformed", times = 1 } } })
      local sb = new_sb()
      local ok, err = sb:start()
      assert.is_nil(ok)
      assert.equal("PlatformApiError", err.kind)
      assert.is_true(err.malformed)
      assert.equal(201, err.status)
      faults({ http = { { route = "lease", body = "malformed", times = 1 } } })
      sb = started()
      local r
      r, err = sb:exec("true")
      assert.is_nil(r)
      assert.is_true(err.malformed)
      assert.equal(0, #sockets())
      assert(sb:exec("true")) -- the failed mint is not latched
    end)

    it("times a slow proxy out after request_timeout_ms (TimeoutError); a slow answer within it works", function()
      -- bounds with room for a loaded machine: the create must fit in the
      -- timeout, the slow answer must not, the quick one must
      faults({ http = { { route = "lease", delay_ms = 6000, times = 1 } } })
      local sb = started({ request_timeout_ms = 1000 })
      local r, err, ms = timed(function() return sb:exec("true") end)
      assert.is_nil(r)
      assert.equal("TimeoutError", err.kind)
      assert.equal(1000, err.timeout_ms)
      assert.is_true(ms < 4500, tostring(ms))
      faults({ http = { { route = "lease", delay_ms = 100, times = 1 } } })
      assert.equal(0, assert(sb:exec("true")).exit_code)
    end)

    it("reattaches with sandbox_id: GET then lease, no create", function()
      local first = started()
      local pid = first:info().metadata.sandbox_id
      local sb = new_sb({ sandbox_id = pid, environment_id = NONE })
      assert(sb:start())
      assert.equal(pid, sb:info().metadata.sandbox_id)
      assert.equal(0, assert(sb:exec("true")).exit_code)
      local routes = {}
      for _, q in ipairs(requests()) do routes[#routes + 1] = q.route end
      -- each info() of a running sandbox is a GET too (docs/protocols/platform.md §4.5)
      assert.same({ "create", "get", "get", "get", "lease" }, routes)
    end)

    it("provisions afresh when the reattach target is 404 or destroyed", function()
      local sb = new_sb({ sandbox_id = "sbx_missing" })
      assert(sb:start())
      local create = requests("create")[1]
      assert.same({ id = sb.id, environmentId = ENV_ID, env = {} }, create.body.json)
      assert.not_equal("sbx_missing", sb:info().metadata.sandbox_id)
      assert.equal("get", requests()[1].route)
      -- a record with destroyedAt set (platform-side teardown)
      local dead = sb:info().metadata.sandbox_id
      srv:admin("POST", "/__admin/sandboxes/" .. dead .. "/destroy", {})
      local again = new_sb({ sandbox_id = dead })
      assert(again:start())
      assert.not_equal(dead, again:info().metadata.sandbox_id)
      assert.equal(2, #requests("create"))
    end)

    it("fails start when the reattach GET answers another error, without provisioning", function()
      faults({ http = { { route = "get", status = 500, times = 1 } } })
      local ok, err = new_sb({ sandbox_id = "sbx_any" }):start()
      assert.is_nil(ok)
      assert.equal(500, err.status)
      assert.equal(0, #requests("create"))
    end)

    it("cannot provision a dead reattach target without an environment", function()
      local ok, err = new_sb({ sandbox_id = "sbx_gone", environment_id = NONE }):start()
      assert.is_nil(ok)
      assert.equal("ConfigError", err.kind)
      assert.equal("environment_id", err.key)
    end)

    it("stop is destroy: DELETE, id and lease forgotten, the next start provisions", function()
      local sb = started()
      assert(sb:exec("true"))
      local pid = sb:info().metadata.sandbox_id
      assert(sb:stop())
      assert.equal("stopped", sb.status)
      local del = requests("delete")
      assert.equal(1, #del)
      assert.equal("/v1/railway/projects/proj_123/sandbox/" .. pid, del[1].path)
      assert.is_nil(sb:info().metadata.sandbox_id)
      assert(sb:exec("true"))
      assert.equal(2, #requests("create"))
      assert.equal(2, #requests("lease")) -- the old lease was dropped
      assert.not_equal(pid, sb:info().metadata.sandbox_id)
      assert(sb:destroy())
      assert.equal(2, #requests("delete"))
      -- neither stop nor destroy drops the id's checkpoint (docs/providers.md, docs/protocols/platform.md §4.3)
      assert.equal(0, #requests("checkpoint_delete"))
    end)

    it("stop keeps the checkpoint of a stable id: the next start is restored from it", function()
      local sb = started({ id = "stable-recovery-key" })
      assert(sb:exec("echo kept > state.txt"))
      local pid = sb:info().metadata.sandbox_id
      -- the platform captures a checkpoint (what its own agent would do)
      local p = io.popen(("curl -s -o /dev/null -w '%%{http_code}' -X POST -H 'authorization: Bearer %s' "
        .. "-H 'content-type: application/json' --data '{\"id\":\"stable-recovery-key\"}' "
        .. "%s/v1/railway/projects/%s/sandbox/%s/checkpoint"):format(TOKEN, srv.url, PROJECT, pid))
      assert.equal("200", p:read("a"))
      p:close()
      assert(sb:stop())
      assert.equal("kept\n", assert(sb:exec("cat state.txt")).stdout)
      assert.not_equal(pid, sb:info().metadata.sandbox_id)
      assert(sb:destroy())
      assert.equal(0, #requests("checkpoint_delete"))
    end)

    it("destroy before start and after stop makes no request", function()
      local sb = new_sb()
      assert(sb:destroy())
      assert.equal("destroyed", sb.status)
      sb = started()
      assert(sb:stop())
      assert(sb:destroy())
      assert.equal(1, #requests("delete"))
    end)

    it("propagates a failed DELETE", function()
      local sb = started()
      faults({ http = { { route = "delete", status = 500, times = 1 } } })
      local ok, err = sb:destroy()
      assert.is_nil(ok)
      assert.equal("PlatformApiError", err.kind)
      assert.equal(500, err.status)
    end)

    it("clone: no I/O, credentials and defaults inherited, sandbox_id never, overrides applied", function()
      local template = new_sb({ idle_timeout_minutes = 45, network_isolation = "PRIVATE", env = { BASE = "1" },
        sandbox_id = "sbx_template", acting_user_id = "u-1" })
      local child1 = template:clone({ id = "mc-project-42", idle_timeout_minutes = 15, env = { GITHUB_TOKEN = "ghs_x" } })
      local child2 = template:clone()
      open[#open + 1] = child1
      open[#open + 1] = child2
      assert.equal(0, #requests())
      assert.equal("pending", child1.status)
      assert.equal("mc-project-42", child1.id)
      assert.not_equal(template.id, child2.id)
      assert(child1:start())
      assert(child2:start())
      local bodies = {}
      for _, q in ipairs(requests("create")) do bodies[q.body.json.id] = q.body.json end
      assert.equal(0, #requests("get")) -- sandbox_id was not inherited
      assert.same({ id = "mc-project-42", environmentId = ENV_ID, idleTimeoutMinutes = 15, networkIsolation = "PRIVATE",
        env = { GITHUB_TOKEN = "ghs_x" } }, bodies["mc-project-42"])
      assert.same({ id = child2.id, environmentId = ENV_ID, idleTimeoutMinutes = 45, networkIsolation = "PRIVATE",
        env = { BASE = "1" } }, bodies[child2.id])
      for _, q in ipairs(requests("create")) do assert.equal("u-1", q.headers["x-acting-user-id"]) end
      -- a clone given sandbox_id reattaches
      local child3 = template:clone({ sandbox_id = child2:info().metadata.sandbox_id })
      open[#open + 1] = child3
      assert(child3:start())
      assert.equal(2, #requests("create"))
    end)

    it("info() metadata and created_at come from the platform record; instructions name it", function()
      local sb = new_sb()
      assert.same({}, sb:info().metadata)
      assert.equal("Platform sandbox. Execute commands with the sandbox command APIs.", sb:instructions())
      assert(sb:start())
      local rec = requests("create")[1].response
      local info = sb:info()
      assert.same({ sandbox_id = rec.id, provider_resource_id = rec.providerResourceId, platform_status = "ready" },
        info.metadata)
      assert.equal(sb.id, info.id)
      assert.equal(rec.createdAt, info.created_at)
      assert.equal("Platform sandbox " .. rec.id .. ". Execute commands with the sandbox command APIs.", sb:instructions())
      assert.equal(1, #requests("get")) -- info() of a running sandbox asked the platform
      local custom = new_sb({ instructions = function(a) return "[" .. a.default_instructions .. "]" end })
      assert.equal("[Platform sandbox. Execute commands with the sandbox command APIs.]", custom:instructions())
    end)
  end)

  describe("info()", function()
    it("asks the platform while running: platform_status is fresh, the local status stays", function()
      local sb = new_sb()
      assert.same({}, sb:info().metadata)
      assert.equal(0, #requests("get")) -- pending: answered locally
      assert(sb:start())
      local pid = sb:info().metadata.sandbox_id
      assert.equal("ready", sb:info().metadata.platform_status)
      local gets = requests("get")
      assert.equal(2, #gets)
      assert.equal("/v1/railway/projects/proj_123/sandbox/" .. pid, gets[2].path)
      -- torn down platform-side (idle GC): the next info() says so
      srv:admin("POST", "/__admin/sandboxes/" .. pid .. "/destroy")
      local info = assert(sb:info())
      assert.equal("destroyed", info.metadata.platform_status)
      assert.equal("running", info.status)
      assert(sb:stop())
      assert.is_nil(sb:info().metadata.sandbox_id)
      assert.equal(3, #requests("get")) -- stopped: answered locally
    end)

    it("returns nil and the typed error when the GET fails, and works again after", function()
      local sb = started()
      faults({ http = { { route = "get", status = 500, times = 1 } } })
      local info, err = sb:info()
      assert.is_nil(info)
      assert.equal("PlatformApiError", err.kind)
      assert.equal(500, err.status)
      assert.equal("running", sb.status)
      faults({ http = { { route = "get", status = 404, times = 1 } } })
      info, err = sb:info()
      assert.is_nil(info)
      assert.equal("not_found", err.code)
      assert.equal("ready", assert(sb:info()).metadata.platform_status)
      -- concurrent callers share one GET
      local before = #requests("get")
      local results = {}
      for i = 1, 3 do sandkit.spawn(function() results[i] = sb:info() end) end
      local t0 = now()
      while #results < 3 and now() - t0 < 5000 do sandkit.step(0.05) end
      assert.equal(3, #results)
      assert.equal(before + 1, #requests("get"))
    end)
  end)

  -- ---- exec data plane ---------------------------------------------------------------------

  describe("exec", function()
    it("offers 'railway-shell, <jwt>' with no Authorization, sends init_exec then stdin_close, closes 1000", function()
      local sb = started({ env = { A = "1" }, working_directory = "/tmp" })
      local r = assert(sb:exec("echo", { "hello world" }, { env = { GH_TOKEN = "ghs_rotated" } }))
      assert.equal("hello world\n", r.stdout)
      local jwt = requests("lease")[1].response.jwt
      local w = closed_sockets(1)[1]
      assert.equal("railway-shell, " .. jwt, w.offered_raw)
      assert.equal("railway-shell", w.selected_protocol)
      assert.equal(NULL, w.authorization)
      assert.equal(2, #w.frames_received)
      assert.same({ type = "init_exec", data = { command = "echo 'hello world'", cwd = "/tmp",
        env = { A = "1", GH_TOKEN = "ghs_rotated" } } }, w.frames_received[1].json)
      assert.same({ type = "stdin_close" }, w.frames_received[2].json)
      assert.equal(1000, w.close.code)
      assert.equal("client", w.close.initiator)
      assert.is_true(w.close.after_exit)
    end)

    it("closes 1000 when the exit frame arrives, whatever comes next (process exit, destroy)", function()
      -- a process that exits right after exec (no loop turn, no __close)
      local env = { MASTRA_PLATFORM_ACCESS_TOKEN = TOKEN, MASTRA_PROJECT_ID = PROJECT,
        MASTRA_ENVIRONMENT_ID = ENV_ID, MASTRA_WORKSPACE_PROXY_URL = srv.url }
      for i = 1, 3 do
        local r = child(env, CHILD_PRELUDE .. [[
local sb = sandkit.PlatformSandbox {}
local r, e = sb:exec("echo", { "last words" })
report({ out = r and r.stdout, err = e and err_table(e) })
io.stdout:flush()
os.exit(0, false)]])
        assert.equal("last words\n", r.out)
        local w = closed_sockets(i)[i]
        assert.same({ code = 1000, initiator = "client", after_exit = true },
          { code = w.close.code, initiator = w.close.initiator, after_exit = w.close.after_exit })
      end
      -- destroy right after exec: the DELETE drops the platform's sockets
      for i = 4, 6 do
        local sb = started()
        assert(sb:exec("true"))
        assert(sb:destroy())
        local w = closed_sockets(i)[i]
        assert.equal(1000, w.close.code)
        assert.equal("client", w.close.initiator)
      end
    end)

    it("omits cwd, env and any timeout key when there are none", function()
      local sb = started()
      assert(sb:exec("true", nil, { timeout = 0 }))
      assert(sb:exec("true", nil, { timeout = 5000 }))
      for _, w in ipairs(closed_sockets(2)) do
        assert.same({ command = "true" }, w.frames_received[1].json.data)
      end
    end)

    it("reuses a cached lease across commands (1 mint, 3 sockets)", function()
      local sb = started()
      for _ = 1, 3 do assert(sb:exec("true")) end
      assert.equal(1, #requests("lease"))
      assert.equal(3, #sockets())
    end)

    it("re-mints a lease expiring within 60 s, with the JWT current at each exec", function()
      faults({ lease_ttl_ms = 30000 })
      local sb = started()
      for _ = 1, 3 do assert(sb:exec("true")) end
      local leases, ws = requests("lease"), sockets()
      assert.equal(3, #leases)
      for i = 1, 3 do assert.equal(leases[i].response.jwt, ws[i].offered[2]) end
    end)

    it("mints on every exec when expiresAt is null", function()
      faults({ lease_expires_at_null = true })
      local sb = started()
      for _ = 1, 2 do assert(sb:exec("true")) end
      assert.equal(NULL, requests("lease")[1].response.expiresAt)
      assert.equal(2, #requests("lease"))
    end)

    it("shares one mint between concurrent cold commands", function()
      local sb = started()
      local ops = {}
      for i = 1, 5 do ops[i] = sb:exec_async("echo", { tostring(i) }) end
      for i = 1, 5 do assert.equal(tostring(i) .. "\n", assert(ops[i]:wait()).stdout) end
      assert.equal(1, #requests("lease"))
    end)

    it("propagates a 404 lease (not_found), opening no socket", function()
      faults({ http = { { route = "lease", status = 404, times = 1 } } })
      local sb = started()
      local r, err = sb:exec("true")
      assert.is_nil(r)
      assert.equal("PlatformApiError", err.kind)
      assert.equal("not_found", err.code)
      assert.equal(0, #sockets())
      assert.equal(0, #requests("exec")) -- no legacy fallback
    end)

    it("propagates a 500 lease (internal_error)", function()
      faults({ http = { { route = "lease", status = 500, times = 1 } } })
      local r, err = started():exec("true")
      assert.is_nil(r)
      assert.equal("internal_error", err.code)
    end)

    it("pinned: 410 on the first mint -> SandboxDestroyedError, stopped, the next command provisions", function()
      local starts = 0
      local sb = new_sb({ on_start = function() starts = starts + 1 end })
      assert(sb:start())
      local pid = sb:info().metadata.sandbox_id
      faults({ http = { { route = "lease", status = 410, times = 1 } } })
      local r, err, ms = timed(function() return sb:exec("echo one") end)
      assert.is_nil(r)
      assert.equal("SandboxDestroyedError", err.kind)
      assert.equal(pid, err.sandbox_id)
      assert.equal("echo one", err.command)
      assert.equal(1, err.attempts)
      assert.equal("Sandbox " .. pid .. " was destroyed; /exec-lease returned 410", err.message)
      assert.equal(1, #requests("lease"))
      assert.equal(0, #sockets())
      assert.equal("stopped", sb.status)
      assert.is_nil(sb:info().metadata.sandbox_id)
      assert.is_true(ms < 5000)
      r = assert(sb:exec("echo", { "again" }))
      assert.equal("again\n", r.stdout)
      assert.equal(2, #requests("create"))
      assert.equal(2, starts)
      assert.equal("running", sb.status)
    end)

    it("pinned: WS drop then 410 on the retry mint -> SandboxDestroyedError (attempts 2, one socket)", function()
      local sb = started()
      faults({ ws = { { action = "close_before_exit", code = 1006, times = 1 } },
        http = { { route = "lease", status = 410, skip = 1, times = 1 } } })
      local r, err = sb:exec("echo one")
      assert.is_nil(r)
      assert.equal("SandboxDestroyedError", err.kind)
      assert.equal(2, err.attempts)
      assert.equal(1, #sockets())
      assert.equal(2, #requests("lease"))
      assert.equal("stopped", sb.status)
      assert.is_nil(sb:info().metadata.sandbox_id)
    end)

    it("pinned: two 1011 closes -> SandboxExecTransportError with every field; the lease cache is empty", function()
      local sb = started()
      local pid = sb:info().metadata.sandbox_id
      faults({ ws = { { action = "close_before_exit", code = 1011, reason = "server_error", times = 2 } } })
      local r, err, ms = timed(function() return sb:exec("echo one") end)
      assert.is_nil(r)
      assert.equal("SandboxExecTransportError", err.kind)
      assert.equal(pid, err.sandbox_id)
      assert.equal("echo one", err.command)
      assert.equal(2, err.attempts)
      assert.is_true(err.opened)
      assert.equal(1011, err.close_code)
      assert.equal("server_error", err.close_reason)
      assert.equal(srv.url:gsub("^http", "ws") .. "/ws/exec", err.ws_endpoint)
      assert.equal("Direct-exec transport failed for sandbox " .. pid .. " after 2 attempt(s) (close 1011 server_error)",
        err.message)
      assert.equal(0, #requests("exec"))
      assert.is_true(ms < 5000)
      assert.equal("running", sb.status)
      assert.equal(2, #requests("lease"))
      assert(sb:exec("true"))
      assert.equal(3, #requests("lease")) -- nothing was cached
    end)

    it("pinned: ten concurrent commands whose first socket fails share one retry mint", function()
      faults({ ws = { { action = "close_before_exit", lease_index = 1, code = 1006 } } })
      local sb = new_sb()
      assert(sb:start())
      local ops = {}
      for i = 1, 10 do ops[i] = sb:exec_async("echo", { "n" .. i }) end
      for i = 1, 10 do assert.equal("n" .. i .. "\n", assert(ops[i]:wait()).stdout) end
      assert.equal(3, #requests()) -- create, mint, one retry mint
      assert.equal(20, #sockets())
      -- the retry's lease stays cached
      assert(sb:exec("true"))
      assert.equal(2, #requests("lease"))
    end)

    it("retries once after a drop (1006) with a fresh lease: jwt.first then jwt.second", function()
      local sb = started()
      faults({ ws = { { action = "close_before_exit", code = 1006, times = 1 } } })
      local r = assert(sb:exec("echo", { "ok" }))
      assert.equal("ok\n", r.stdout) -- the first attempt's output is not in the result
      local leases, ws = requests("lease"), sockets()
      assert.equal(2, #leases)
      assert.equal(2, #ws)
      assert.not_equal(leases[1].response.jwt, leases[2].response.jwt)
      assert.equal(leases[1].response.jwt, ws[1].offered[2])
      assert.equal(leases[2].response.jwt, ws[2].offered[2])
      assert(sb:exec("true"))
      assert.equal(2, #requests("lease"))
      assert.equal(leases[2].response.jwt, sockets()[3].offered[2])
    end)

    it("retries closes at open and at init (the command never ran) and a close without code (1005)", function()
      local sb = started()
      for _, rule in ipairs({ { at = "open" }, { at = "init" }, { code = 1005 } }) do
        rule.action, rule.times = "close_before_exit", 1
        faults({ ws = { rule } })
        assert.equal("x\n", assert(sb:exec("echo x")).stdout)
      end
      faults({ ws = { { action = "close_before_exit", code = 1005 } } })
      local _, err = sb:exec("echo x")
      assert.equal(1005, err.close_code)
      assert.is_nil(err.close_reason)
      assert.equal("Direct-exec transport failed for sandbox " .. err.sandbox_id .. " after 2 attempt(s) (close 1005)",
        err.message)
    end)

    it("a refused handshake is a transport failure: retried, then opened=false without close code", function()
      local sb = started()
      faults({ ws = { { action = "reject", status = 401, times = 1 } } })
      assert(sb:exec("true"))
      assert.equal(2, #requests("lease"))
      faults({ ws = { { action = "reject", status = 403 } } })
      local _, err = sb:exec("true")
      assert.equal("SandboxExecTransportError", err.kind)
      assert.is_false(err.opened)
      assert.is_nil(err.close_code)
      assert.equal(403, err.http_status)
    end)

    it("a stalled handshake without timeout fails after handshake_timeout_ms per attempt", function()
      local sb = started({ handshake_timeout_ms = 300 })
      faults({ ws = { { action = "stall" } } })
      local r, err, ms = timed(function() return sb:exec("true") end)
      assert.is_nil(r)
      assert.equal("SandboxExecTransportError", err.kind)
      assert.is_false(err.opened)
      assert.equal(2, err.attempts)
      assert.truthy(err.transport_error:find("300 ms", 1, true))
      assert.is_true(ms >= 550 and ms < 5000, tostring(ms))
    end)

    it("a stalled handshake past a positive timeout is a result (124), not retried", function()
      local sb = started()
      faults({ ws = { { action = "stall" } } })
      local r, _, ms = timed(function() return sb:exec("true", nil, { timeout = 300 }) end)
      assert.equal(124, r.exit_code)
      assert.is_true(r.timed_out)
      assert.is_false(r.success)
      assert.equal(1, #requests("lease"))
      assert.is_true(ms < 3000)
    end)

    it("a delayed handshake within the deadline works", function()
      local sb = started({ handshake_timeout_ms = 3000 })
      faults({ ws = { { action = "delay", delay_ms = 200, times = 1 } } })
      assert.equal(0, assert(sb:exec("true")).exit_code)
    end)

    -- libwebsockets' own connect/handshake deadline (5 s by default) must not
    -- cut in before handshake_timeout_ms: 1,000 sockets opening at once on a
    -- busy server wait that long (bench/scale.lua found it)
    it("a handshake slower than libwebsockets' default deadline completes within handshake_timeout_ms", function()
      local sb = started()
      faults({ ws = { { action = "delay", delay_ms = 6500, times = 1 } } })
      local r, err, ms = timed(function() return sb:exec("true") end)
      assert(r, tostring(err))
      assert.equal(0, r.exit_code)
      assert.equal(1, #requests("lease"))
      assert.is_true(ms >= 6000 and ms < 30000, tostring(ms))
    end)

    it("an already-expired lease is refused at the handshake and the retry mints a good one", function()
      faults({ http = { { route = "lease", expired = true, times = 1 } } })
      local sb = started()
      assert.equal(0, assert(sb:exec("true")).exit_code)
      assert.equal(2, #requests("lease"))
      assert.equal(401, sockets()[1].rejected)
    end)

    it("revoked leases: the cached one is refused, the retry mints a fresh one", function()
      local sb = started()
      assert(sb:exec("true"))
      srv:admin("POST", "/__admin/revoke-leases", {})
      assert(sb:exec("true"))
      assert.equal(2, #requests("lease"))
    end)

    it("a sandbox destroyed platform-side (idle GC) fails the next command with SandboxDestroyedError, then recovers", function()
      -- the teardown the idle timer does (its timing is the server's own
      -- test, spec/servers/platform/test/checkpoint.test.mjs): a timer of
      -- a few ms here would race the first exec on a loaded machine
      local sb = started({ idle_timeout_minutes = 1 })
      assert(sb:exec("true")) -- caches a lease
      local pid = sb:info().metadata.sandbox_id
      srv:admin("POST", "/__admin/sandboxes/" .. pid .. "/destroy", {})
      local r, err = sb:exec("true")
      assert.is_nil(r)
      assert.equal("SandboxDestroyedError", err.kind)
      assert.equal(2, err.attempts) -- the cached lease met 410 at the handshake first
      assert.equal("stopped", sb.status)
      assert.equal(0, assert(sb:exec("true")).exit_code)
    end)

    it("close_before_exit with destroy_sandbox: the retry mint meets 410", function()
      local sb = started()
      faults({ ws = { { action = "close_before_exit", destroy_sandbox = true, times = 1 } } })
      local _, err = sb:exec("true")
      assert.equal("SandboxDestroyedError", err.kind)
      assert.equal(1, #sockets())
    end)

    it("times out client-side: 124, the socket closed, the command killed", function()
      local sb = started()
      local r, _, ms = timed(function() return sb:exec("sleep 30", nil, { timeout = 300 }) end)
      assert.equal(124, r.exit_code)
      assert.is_true(r.timed_out)
      assert.is_true(ms < 3000)
      local w = closed_sockets(1)[1]
      assert.equal("client", w.close.initiator)
      assert.is_false(w.close.after_exit)
      assert.is_true(w.killed_on_close)
      -- the instance timeout applies when the call gives none
      sb = started({ timeout = 200 })
      assert.equal(124, sb:exec("sleep 30").exit_code)
    end)

    it("op:cancel() closes the socket and returns promptly", function()
      local sb = started()
      local running = false
      local op = sb:exec_async("echo up; exec sleep 30", nil, { on_stdout = function() running = true end })
      local t_start = now()
      while not running and now() - t_start < 10000 do sandkit.step(0.05) end
      assert.is_true(running)
      local t0 = now()
      op:cancel()
      local r = assert(op:wait())
      assert.is_true(now() - t0 < 1000)
      assert.is_true(r.cancelled)
      assert.is_false(r.success)
      local w = closed_sockets(1)[1]
      assert.equal("client", w.close.initiator)
      assert.is_true(w.killed_on_close)
    end)

    it("streams stdout/stderr frames to the callbacks as they arrive", function()
      local sb = started()
      local op
      local seen_before_done = false
      local out, err = {}, {}
      op = sb:exec_async("sh", { "-c", "echo out1; echo err1 >&2; sleep 0.5; echo out2" }, {
        on_stdout = function(c)
          out[#out + 1] = c
          if not op.done and c:find("out1", 1, true) then seen_before_done = true end
        end,
        on_stderr = function(c) err[#err + 1] = c end,
      })
      local r = assert(op:wait())
      assert.is_true(seen_before_done)
      assert.is_true(#out >= 2)
      assert.equal("out1\nout2\n", table.concat(out))
      assert.equal("err1\n", table.concat(err))
      assert.equal("out1\nout2\n", r.stdout)
    end)

    it("ignores noise frames and durable_session; output after exit is discarded", function()
      local sb = started()
      faults({ ws = { { action = "noise" }, { action = "durable_session" }, { action = "output_after_exit" } } })
      local r = assert(sb:exec("printf", { "clean" }))
      assert.equal("clean", r.stdout)
      assert.equal("", r.stderr)
    end)

    it("an exit frame without exit_code means 0; a server close after exit is harmless", function()
      local sb = started()
      faults({ ws = { { action = "exit_without_code", times = 1 }, { action = "close_after_exit", times = 1 } } })
      assert.equal(0, assert(sb:exec("sh -c 'exit 5'")).exit_code)
      faults({ ws = { { action = "close_after_exit", code = 1001 } } })
      assert.equal(5, assert(sb:exec("sh -c 'exit 5'")).exit_code)
    end)

    it("passes exit codes through (137) and keeps bytes split across frames intact", function()
      local sb = started()
      assert.equal(137, assert(sb:exec("sh -c 'kill -9 $$'")).exit_code)
      faults({ ws = { { action = "chunk_bytes", bytes = 1 } } })
      local r = assert(sb:exec("printf", { "h\195\169llo \226\130\172" }))
      assert.equal("h\195\169llo \226\130\172", r.stdout)
      assert.is_true(#sockets() >= 2)
    end)

    it("transfers large output (2 MiB) exactly", function()
      local sb = started()
      local r = assert(sb:exec("head -c 2097152 /dev/zero | tr '\\0' x"))
      assert.equal(2097152, #r.stdout)
      assert.is_nil(r.stdout:find("[^x]"))
    end)

    it("runs cwd and env as the spec says (relative cwd inside the sandbox, per-call env over the sandbox's)", function()
      local sb = started({ env = { A = "1", B = "2" } })
      local r = assert(sb:exec("sh -c 'echo $A$B; pwd'", nil, { env = { B = "x" }, cwd = "/tmp" }))
      assert.equal("1x\n/tmp\n", r.stdout)
    end)

    it("exec's stdin option is sent as stdin frames before stdin_close (extension)", function()
      local sb = started()
      local r = assert(sb:exec("cat", nil, { stdin = "fed via frames" }))
      assert.equal("fed via frames", r.stdout)
    end)

    it("refuses a lease for another exec provider (e2b)", function()
      faults({ http = { { route = "lease", status = 200, times = 1, json = { provider = "e2b", sandboxId = "sbx_1",
        providerResourceId = "e2b_sbx_1", jwt = "tok", wsEndpoint = "https://49983-x.e2b.app", subprotocol = "e2b-access-token",
        expiresAt = NULL } } } })
      local r, err = started():exec("true")
      assert.is_nil(r)
      assert.equal("PlatformApiError", err.kind)
      assert.equal("e2b", err.lease_provider)
      assert.truthy(err.message:find("Railway", 1, true))
    end)
  end)

  -- ---- background processes --------------------------------------------------------------

  describe("processes", function()
    it("spawn: platform-proc pid, stdin through frames, close_stdin ends cat", function()
      local sb = started()
      local h = assert(sb.processes:spawn("cat"))
      assert.truthy(h.pid:match("^platform%-proc%-[0-9a-z]+%-[0-9a-z]+$"), h.pid)
      assert(h:send_stdin("one "))
      assert(h:send_stdin("two"))
      assert.is_true(h:close_stdin())
      local r = assert(h:wait())
      assert.equal("one two", r.stdout)
      local frames = closed_sockets(1)[1].frames_received
      assert.equal("binary", frames[2].kind)
      assert.equal(0, frames[2].tag)
      assert.same({ type = "stdin_close" }, frames[#frames].json)
    end)

    it("kill closes the socket; the platform kills the command", function()
      local sb = started()
      local running = false
      local h = assert(sb.processes:spawn("echo up; exec sleep 30", { on_stdout = function() running = true end }))
      local t0 = now()
      while not running and now() - t0 < 10000 do sandkit.step(0.05) end
      assert.is_true(running)
      assert.is_true(sb.processes:kill(h.pid))
      local r = assert(h:wait())
      assert.equal(137, r.exit_code)
      assert.is_true(r.killed)
      assert.is_true(closed_sockets(1)[1].killed_on_close)
    end)

    it("stdin_frames = false: stdin closed at once, send_stdin says it is unsupported", function()
      local sb = started({ stdin_frames = false })
      local h = assert(sb.processes:spawn("cat; echo done"))
      local ok, err = h:send_stdin("x")
      assert.is_nil(ok)
      assert.equal("UnsupportedError", err.kind)
      assert.truthy(err.message:find("does not support stdin", 1, true))
      assert.equal("done\n", assert(h:wait()).stdout)
      local r
      r, err = sb:exec("cat", nil, { stdin = "x" })
      assert.is_nil(r)
      assert.equal("UnsupportedError", err.kind)
    end)
  end)

  -- ---- secrets ---------------------------------------------------------------------------------

  describe("secrets", function()
    local SECRET_ENV = "s3cr3t-env-value"

    local function has_secret(v, seen)
      seen = seen or {}
      if type(v) == "string" then
        return v:find(TOKEN, 1, true) ~= nil or v:find(SECRET_ENV, 1, true) ~= nil
      end
      if type(v) == "table" and not seen[v] then
        seen[v] = true
        for k, x in pairs(v) do
          if has_secret(k, seen) or has_secret(x, seen) then return true end
        end
      end
      return false
    end

    it("never shows the token or env values in errors, tostring or info", function()
      local sb = new_sb({ env = { SECRET = SECRET_ENV } })
      assert.is_false(has_secret(tostring(sb)))
      assert(sb:start())
      assert.is_false(has_secret(sb:info()))
      assert.is_false(has_secret(sb:instructions()))
      local errs = {}
      local function collect(_, e) if e then errs[#errs + 1] = e end end
      -- a proxy echoing the token back has it redacted from body and message
      faults({ http = { { route = "lease", status = 500, body = "text", text = "bad token test-token", times = 1 },
        { route = "lease", status = 401, message = "token test-token rejected", times = 1 } } })
      collect(sb:exec("true"))
      collect(sb:exec("true"))
      faults({ ws = { { action = "close_before_exit", times = 2 } } })
      collect(sb:exec("true", nil, { env = { MORE = SECRET_ENV } }))
      faults({ http = { { route = "lease", status = 410, times = 1 } } })
      collect(sb:exec("true"))
      faults({ http = { { route = "create", status = 500 } } })
      collect(sb:start())
      faults({})
      collect(sandkit.PlatformSandbox(opts({ request_timeout_ms = 200, base_url = "http://127.0.0.1:9" })):start())
      assert.equal(6, #errs)
      for _, e in ipairs(errs) do
        assert.is_false(has_secret(e), tostring(e))
        assert.is_false(has_secret(tostring(e)))
      end
      assert.equal("bad token [redacted]", errs[1].body)
      assert.equal("token [redacted] rejected", errs[2].proxy_message)
    end)
  end)

  -- ---- TLS (https + wss) -------------------------------------------------------------------

  describe("TLS", function()
    local tls_srv, dir

    setup(function()
      dir = os.tmpname()
      os.remove(dir)
      assert(os.execute("mkdir -p " .. dir))
      assert(os.execute(("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 " ..
        "-addext subjectAltName=IP:127.0.0.1 -keyout %s/key.pem -out %s/cert.pem >/dev/null 2>&1"):format(dir, dir)))
      tls_srv = server.start("spec/servers/platform/server.mjs",
        { "--quiet", "--tls-cert", dir .. "/cert.pem", "--tls-key", dir .. "/key.pem" })
    end)

    teardown(function()
      if tls_srv then tls_srv:stop() end
      os.execute("rm -rf " .. dir)
    end)

    local function tls_opts(extra)
      local o = { access_token = TOKEN, project_id = PROJECT, environment_id = ENV_ID,
        base_url = "https://127.0.0.1:" .. tls_srv.port }
      for k, v in pairs(extra) do o[k] = v end
      return o
    end

    it("verifies against ca_file over https and wss", function()
      local sb = sandkit.PlatformSandbox(tls_opts({ ca_file = dir .. "/cert.pem" }))
      open[#open + 1] = sb
      assert(sb:start())
      assert.equal("tls\n", assert(sb:exec("echo tls")).stdout)
    end)

    it("refuses an unknown certificate by default; insecure_skip_verify accepts it", function()
      local ok, err = sandkit.PlatformSandbox(tls_opts({})):start()
      assert.is_nil(ok)
      assert.equal("NetworkError", err.kind)
      assert.equal("tls", err.reason)
      local sb = sandkit.PlatformSandbox(tls_opts({ insecure_skip_verify = true }))
      open[#open + 1] = sb
      assert.equal(0, assert(sb:exec("true")).exit_code)
    end)
  end)
end)
