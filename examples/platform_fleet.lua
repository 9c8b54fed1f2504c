--- A fleet of Mastra Platform sandboxes driven from Lua coroutines.
--
-- With MASTRA_PLATFORM_ACCESS_TOKEN, MASTRA_PROJECT_ID and
-- MASTRA_ENVIRONMENT_ID set it talks to the real workspace proxy (or to
-- MASTRA_WORKSPACE_PROXY_URL). Without credentials it starts the reference
-- server (spec/servers/platform; its one npm package is installed with
-- `npm ci` first if missing) on 127.0.0.1 and uses that; the server stops
-- when this script ends.
--
-- Run from the project root, after `make`:
--   LUA_CPATH='build/?.so;;' LUA_PATH='lua/?.lua;lua/?/init.lua;;' lua5.4 examples/platform_fleet.lua
local sandkit = require "sandkit"

local SANDBOXES, JOBS = 4, 40

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Starts the reference server the way spec/helpers/server.lua does: its
-- first stdout line (LISTENING <port>) is read from a FIFO, and we hold its
-- stdin, so it exits when we close it or when this process dies.
local function start_reference_server()
  local modules = io.open("spec/servers/platform/node_modules/ws/package.json")
  if modules then
    modules:close()
  else
    print("installing the reference server's npm dependencies (npm ci)")
    assert(os.execute("cd spec/servers/platform && npm ci --no-audit --no-fund --loglevel=error"),
      "npm ci failed in spec/servers/platform (is npm installed?)")
  end
  local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/sandkit-platform.XXXXXX"'))
  local dir = p:read("*l")
  p:close()
  local fifo = dir .. "/ready"
  assert(os.execute("mkfifo " .. sh_quote(fifo)))
  local stdin = assert(io.popen(("exec node spec/servers/platform/server.mjs --quiet > %s 2> %s"):format(
    sh_quote(fifo), sh_quote(dir .. "/server.log")), "w"))
  local ready = assert(io.open(fifo, "r"))
  local line = ready:read("*l")
  local port = line and line:match("^LISTENING (%d+)")
  if not port then
    stdin:close()
    error("the reference server did not start (run `make npm-deps`?); see " .. dir .. "/server.log")
  end
  return "http://127.0.0.1:" .. port, function()
    stdin:close()
    ready:close()
    os.execute("rm -rf " .. sh_quote(dir))
  end
end

local opts, stop_server = { idle_timeout_minutes = 15, env = { GREETING = "hello" } }, nil
local token = os.getenv("MASTRA_PLATFORM_ACCESS_TOKEN")
if not token or token == "" then
  local url
  url, stop_server = start_reference_server()
  opts.base_url, opts.access_token = url, "test-token" -- the reference server's default token
  opts.project_id, opts.environment_id = "proj_example", "env_example"
  print("no credentials: using the reference server at " .. url)
end

local template = sandkit.PlatformSandbox(opts)
local t0 = sandkit.now()
local fleet = assert(sandkit.fleet(template, SANDBOXES))
print(("%d sandboxes started in %.0f ms"):format(#fleet, sandkit.now() - t0))
for i = 1, #fleet do print("  " .. fleet[i].id .. " -> " .. fleet[i]:info().metadata.sandbox_id) end

-- One coroutine per job; each exec yields to the loop, so all of them
-- share one thread and one event loop. Job i runs on sandbox (i mod n).
t0 = sandkit.now()
local tasks = {}
for i = 1, JOBS do
  local sb = fleet[(i - 1) % #fleet + 1]
  tasks[i] = sandkit.spawn(function()
    local r = assert(sb:exec("sh", { "-c", 'echo "$GREETING from job $JOB on $(hostname)" | cksum' },
      { env = { JOB = tostring(i) }, timeout = 30000 }))
    return r.stdout:match("^(%d+)")
  end)
end
local sums = {}
for i, t in ipairs(tasks) do sums[i] = t:wait() end
print(("%d jobs in %.0f ms; first checksums: %s %s %s"):format(JOBS, sandkit.now() - t0, sums[1], sums[2], sums[3]))

-- The same command on every member at once, streaming its output.
local results, errs = fleet:exec("sh", { "-c", "for i in 1 2 3; do echo tick $i; sleep 0.1; done" },
  { on_stdout = function(chunk) io.write("  | ", chunk) end })
local _, first_err = next(errs)
assert(first_err == nil, tostring(first_err))
for i, r in ipairs(results) do
  assert(r.exit_code == 0, tostring(r))
  assert(select(2, r.stdout:gsub("tick", "")) == 3, "sandbox " .. i)
end

-- Typed errors are values: a command that times out is a result, not an error.
local r = fleet[1]:exec("sleep", { "5" }, { timeout = 200 })
print(("timeout -> exit_code %d, timed_out %s"):format(r.exit_code, tostring(r.timed_out)))

fleet:destroy()
print("fleet destroyed")
if stop_server then stop_server() end
