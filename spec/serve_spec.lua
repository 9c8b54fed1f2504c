-- Trying the remote providers offline (README.md §"Try it offline"):
-- spec/servers/serve.sh, which `make serve-platform`, `make serve-modal` and
-- `make serve-container` run, prints the variables to export; a script run
-- with only those set reaches the provider, and when serve.sh is stopped
-- the server, its commands and its files are gone.
local procs = require "helpers.procs"
local sh = require "helpers.sh"
local tmp = require "helpers.tmp"
local server = require "helpers.server"

teardown(tmp.cleanup)

local q = sh.quote
local ROOT = os.getenv("R") or io.popen("pwd"):read("l")
local SERVE = ROOT .. "/spec/servers/serve.sh"

local function read(path)
  local f = io.open(path)
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function alive(pid) return os.execute("kill -0 " .. pid .. " 2>/dev/null") == true end

-- serve.sh started in the background: { pid, dir, env_file, out, err }
local function serve(provider)
  local dir = tmp.dir()
  local s = { dir = dir, env_file = dir .. "/" .. provider .. ".env", out = dir .. "/out", err = dir .. "/err" }
  local p = assert(io.popen(("SANDKIT_SERVE_DIR=%s sh %s %s >%s 2>%s </dev/null & echo $!"):format(
    q(dir), q(SERVE), provider, q(s.out), q(s.err))))
  s.pid = p:read("l")
  p:close()
  s.ready = procs.wait_for(function() return read(s.env_file) ~= nil end, 60)
  return s
end

-- Runs `code` in a fresh lua5.4 whose environment is this run's module
-- paths and PATH, plus the lines serve.sh printed, and nothing else.
local function run_with(s, code)
  local script = s.dir .. "/client.lua"
  local f = assert(io.open(script, "w"))
  f:write(code)
  f:close()
  local cmd = ("env -i PATH=%s HOME=%s LUA_PATH=%s LUA_CPATH=%s sh -c %s 2>&1"):format(q(os.getenv("PATH")),
    q(s.dir), q(package.path), q(package.cpath),
    q(". " .. q(s.env_file) .. " && exec timeout -k 5 120 lua5.4 " .. q(script)))
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

-- Stops serve.sh as a terminal's Ctrl-C would stop it (SIGINT is ignored
-- by a background job: SIGTERM), and waits until it is gone.
local function stop(s, children)
  os.execute("kill -TERM " .. s.pid .. " 2>/dev/null")
  local gone = procs.wait_for(function()
    if alive(s.pid) then return false end
    for _, c in ipairs(children or {}) do
      if alive(c) then return false end
    end
    return true
  end, 30)
  return gone
end

local function children_of(pid)
  local out = {}
  local p = io.popen("ps -o pid= --ppid " .. pid)
  for line in p:lines() do out[#out + 1] = line:match("%d+") end
  p:close()
  return out
end

describe("serve.sh (make serve-*)", function()
  local missing = server.node_missing(ROOT .. "/spec/servers/modal/node_modules")
    or server.node_missing(ROOT .. "/spec/servers/platform/node_modules")

  for _, case in ipairs({
    { provider = "platform", vars = { "MASTRA_WORKSPACE_PROXY_URL", "MASTRA_PLATFORM_ACCESS_TOKEN", "MASTRA_PROJECT_ID",
      "MASTRA_ENVIRONMENT_ID", "MASTRA_PLATFORM_BUCKET_NAME" }, code = [[
local sandkit = require "sandkit"
local sb <close> = sandkit.PlatformSandbox {}
io.write(assert(sb:exec("echo", { "hello from the platform" })).stdout)
local bucket = sandkit.PlatformFilesystem {}
assert(bucket:write_file("/a.txt", "in the bucket"))
print(assert(bucket:read_file("a.txt")))
]], expect = "hello from the platform\nin the bucket\n" },
    { provider = "modal", vars = { "MODAL_SERVER_URL", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET" }, code = [[
local sandkit = require "sandkit"
local sb <close> = sandkit.ModalSandbox { app_name = "sandkit-serve" }
io.write(assert(sb:exec("echo", { "hello from modal" })).stdout)
]], expect = "hello from modal\n" },
    { provider = "container", vars = { "PATH" }, code = [[
local sandkit = require "sandkit"
local sb <close> = sandkit.AppleContainerSandbox {}
io.write(assert(sb:exec("echo", { "hello from a container" })).stdout)
]], expect = "hello from a container\n" },
  }) do
    local needs_node = case.provider ~= "container"
    local run = (needs_node and missing) and pending or it
    run(case.provider .. ": prints the variables to export, serves a script that has only those, and leaves nothing when stopped",
      function()
        local s = serve(case.provider)
        local kids = children_of(s.pid)
        local ok, err = pcall(function()
          assert.is_truthy(s.ready, "serve.sh printed nothing:\n" .. (read(s.err) or ""))
          local printed = read(s.out)
          assert.equal(read(s.env_file), printed)
          for _, v in ipairs(case.vars) do
            assert.is_truthy(printed:find("export " .. v .. "=", 1, true), printed)
          end
          local out, done = run_with(s, case.code)
          assert.is_true(done, out)
          assert.equal(case.expect, out)
        end)
        local state = case.provider == "container" and read(s.env_file):match("PATH=([^:]+)/bin:")
        local stopped = stop(s, kids)
        assert(ok, err)
        assert.is_true(stopped, "serve.sh or its server outlived SIGTERM")
        assert.is_nil(read(s.env_file), "the env file was left behind")
        if state then
          assert.is_false(os.execute("test -e " .. q(state)) == true, state .. " was left behind")
        end
      end)
  end

  it("refuses an unknown provider or a bad port, with its usage", function()
    for _, args in ipairs({ "", "docker", "platform x1" }) do
      local p = io.popen(("sh %s %s 2>&1 </dev/null; echo \"status=$?\""):format(q(SERVE), args))
      local out = p:read("a")
      p:close()
      assert.is_truthy(out:find("status=2\n", 1, true), args .. ": " .. out)
      assert.is_truthy(out:find("serve.sh", 1, true), out)
    end
  end)
end)
