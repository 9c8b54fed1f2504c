-- Secrets (issue 7): canary tokens and env values in every provider's
-- options (and in their environment-variable fallbacks) never appear in an
-- error message or error field, tostring, info(), instructions(), a log
-- line (the child's stderr), or a process command line (/proc/*/cmdline
-- while commands run). One row per provider; the scenario runs in a child
-- lua5.4 so that its stderr — where the core logs — can be read whole.
local child = require "helpers.child"
local procs = require "helpers.procs"
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

local sh_quote = require("helpers.sh").quote

local counter = 0
local function canary(what)
  counter = counter + 1
  return ("CANARY-%s-%s-%d-%d"):format(what, procs.self_pid(), counter, math.random(100000, 999999))
end

-- Rows: how to get a sandbox of each provider with secrets in it, from
-- each provider's kit (helpers.provider_kits, its `secrets`):
--   id, name      the provider and the row's title
--   available()   -> false when the row cannot run here (it is then pending)
--   setup(c)      -> ctx (a server, an emulator...) ; c holds fresh canaries
--   options(c, ctx) -> options with every secret-bearing key set to canaries
--   child_env(c)  -> environment of the child (credential fallbacks)
--   bad(c, ctx)   -> options whose start must fail (wrong credentials...)
--   secrets(c)    -> the canaries that must never show
--   teardown(ctx)
local ROWS = {}
for _, p in ipairs(require("helpers.provider_kits").all()) do
  for _, row in ipairs(p.kit.secrets or {}) do ROWS[#ROWS + 1] = row end
end

-- The child: everything a user could print goes to stdout; the core's log
-- lines go to stderr. It also scans /proc while its commands run: every
-- process's command line for the secrets, and for the command's marker so
-- that the scan is known to have seen the command.
local CHILD = child.CONFIG_PRELUDE .. [[
local sandkit = require "sandkit"

local function dump(label, v)
  local ok, s = pcall(cjson.encode, v)
  print(label, ok and s or tostring(v))
end
local function dump_err(label, e)
  if e == nil then return end
  print(label, tostring(e))
  if type(e) == "table" then
    local t = {}
    for k, v in pairs(e) do if type(v) ~= "function" then t[k] = v end end
    dump(label .. ".fields", t)
  end
end
local function with(extra)
  local o = {}
  for k, v in pairs(cfg.options) do o[k] = v end
  for k, v in pairs(extra) do o[k] = v end
  return o
end

-- the command lines of every process, and of how many the marker is in
local function scan()
  local hits, seen = {}, 0
  local p = io.popen("ls /proc")
  for pid in p:lines() do
    local h = pid:match("^%d+$") and io.open("/proc/" .. pid .. "/cmdline", "rb")
    if h then
      local c = (h:read("a") or ""):gsub("%z", " ")
      h:close()
      if c:find(cfg.marker, 1, true) then seen = seen + 1 end
      for _, s in ipairs(cfg.secrets) do
        if c:find(s, 1, true) and not c:find("server.mjs", 1, true) then hits[#hits + 1] = pid .. ": " .. c:sub(1, 200) end
      end
    end
  end
  p:close()
  return hits, seen
end

-- misuse: ConfigErrors raised with the secrets in the options
for _, extra in ipairs({ { no_such_option = 1 }, { env = { ["A=B"] = cfg.cmd_env } },
    { env = { A = "x\0" .. cfg.cmd_env } }, { env = { B = cfg.cmd_env, C = {} } } }) do
  local ok, e = pcall(sandkit.new, cfg.id, with(extra))
  if ok then print("UNEXPECTED_OK") else dump_err("config_error", e) end
end

local sb = sandkit.new(cfg.id, cfg.options)
print("tostring", tostring(sb))
dump("info", sb:info())
print("instructions", sb:instructions())
local ok, err = sb:start()
dump_err("start_error", err)
if ok then
  dump("info_running", sb:info())
  print("tostring_running", tostring(sb))
  local env = { SK_CMD_SECRET = cfg.cmd_env }
  local op = sb:exec_async(cfg.marker, nil, { env = env, timeout = 20000 })
  local bg, berr = sb.processes:spawn(cfg.marker, { env = env })
  dump_err("spawn_error", berr)
  local hits, seen, deadline = {}, 0, os.time() + 20
  repeat
    sandkit.step(0.05)
    hits, seen = scan()
  until seen >= 2 or os.time() > deadline
  print("SEEN", seen)
  for _, h in ipairs(hits) do print("CMDLINE_HIT", h) end
  op:cancel()
  local r, e = op:wait()
  dump("cancelled_result", r)
  dump_err("exec_error", e)
  if bg then bg:kill(); dump("bg_result", (bg:wait())) end
  r, e = sb:exec("true", nil, { cwd = "/no/such/dir/for/secrets", env = env })
  dump("missing_cwd_result", r)
  dump_err("missing_cwd_error", e)
  r, e = sb:exec("sleep 5", nil, { timeout = 100, env = env })
  dump("timeout_result", r)
  dump_err("timeout_error", e)
  r, e = sb:exec("exit 3", nil, { env = env })
  dump("failed_result", r)
  dump_err("failed_error", e)
  dump_err("stop_error", select(2, sb:stop()))
  dump_err("destroy_error", select(2, sb:destroy()))
  dump("info_destroyed", sb:info())
end
if cfg.bad then
  local bad = sandkit.new(cfg.id, cfg.bad)
  print("bad_tostring", tostring(bad))
  local bok, berr2 = bad:start()
  print("bad_started", tostring(bok))
  dump_err("bad_start_error", berr2)
  dump_err("bad_exec_error", select(2, bad:exec("true", nil, { env = { SK_CMD_SECRET = cfg.cmd_env } })))
  dump("bad_info", bad:info())
  bad:destroy()
end
print("DONE")
]]

local script = child.script("secrets_child.lua", CHILD)

-- Runs the child; returns its stdout and stderr.
local function run_child(cfg, child_env)
  local dir, env_words = child.run_env(cfg)
  local parts = { "env -i", "PATH=" .. sh_quote(os.getenv("PATH")), "HOME=" .. sh_quote(dir), env_words }
  for _, k in ipairs({ "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS" }) do
    if os.getenv(k) then parts[#parts + 1] = k .. "=" .. sh_quote(os.getenv(k)) end
  end
  -- fallbacks go through a 0600 file sourced by sh: never on a command line
  local envfile = dir .. "/env.sh"
  local exports = {}
  for k, v in pairs(child_env or {}) do exports[#exports + 1] = "export " .. k .. "=" .. sh_quote(v) .. "\n" end
  child.write_private(envfile, table.concat(exports))
  local cmd = ("cd %s && %s sh -c '. \"$0\" && exec timeout -k 5 180 lua5.4 \"$1\"' %s %s"):format(
    sh_quote(os.getenv("PWD") or "."), table.concat(parts, " "), sh_quote(envfile), sh_quote(script))
  return child.run(cmd, dir)
end

for _, row in ipairs(ROWS) do
  local usable = not row.available or row.available()
  local body = function()
    local c = {
      token = canary("token"), bad_token = canary("badtoken"), secret = canary("secret"),
      bad_secret = canary("badsecret"), env = canary("env"), cmd_env = canary("cmdenv"),
    }
    local ctx = row.setup and row.setup(c)
    local ok, err = pcall(function()
      local marker = ("sleep 61.%d%d"):format(procs.self_pid(), counter)
      local cfg = { id = row.id, options = row.options(c, ctx), bad = row.bad and row.bad(c, ctx),
        secrets = row.secrets(c), cmd_env = c.cmd_env, marker = marker }
      local out, stderr = run_child(cfg, row.child_env and row.child_env(c))
      assert.truthy(out:find("\nDONE\n", 1, true) or out:find("^DONE\n"), "child did not finish:\n" .. out .. stderr)
      assert.is_nil(out:find("UNEXPECTED_OK", 1, true), out)
      assert.is_nil(out:find("CMDLINE_HIT", 1, true), out)
      if not out:find("start_error", 1, true) then
        local seen = tonumber(out:match("\nSEEN\t(%d+)"))
        assert.is_true((seen or 0) >= 1, "the scan never saw the command run:\n" .. out .. stderr)
      end
      for _, s in ipairs(cfg.secrets) do
        assert.is_nil(out:find(s, 1, true), "in stdout (errors, tostring, info): " .. s .. "\n" .. out)
        assert.is_nil(stderr:find(s, 1, true), "in stderr (log lines): " .. s .. "\n" .. stderr)
      end
    end)
    if row.teardown and ctx then row.teardown(ctx) end
    if not ok then error(err, 0) end
  end
  if usable then it(row.name .. ": no secret shows anywhere", body) else pending(row.name) end
end
