-- LocalSandbox specifics: environment, cwd, quoting, process groups on
-- timeout, and what bubblewrap isolation lets through.
local sandkit = require "sandkit"
local errors = sandkit.errors
local procs = require "helpers.procs"
local tmp = require "helpers.tmp"

-- sleeps no other run on this machine has: process checks see only ours
local TIMEOUT_TREE_SECS = "41.5" .. procs.self_pid()
local TERM_IGNORER_SECS = "42.5" .. procs.self_pid()
local STOP_SECS = "43.5" .. procs.self_pid()
local DESTROY_SECS = "44.5" .. procs.self_pid()

teardown(tmp.cleanup)

local function trim(s) return (s:gsub("%s+$", "")) end

describe("LocalSandbox environment", function()
  it("children see PATH, the sandbox env and the command env, nothing else from the host", function()
    local sb = sandkit.LocalSandbox { working_directory = tmp.dir(), env = { SB_VAR = "sb" } }
    local r = assert(sb:exec("env", nil, { env = { CMD_VAR = "cmd" } }))
    local names = {}
    for line in r.stdout:gmatch("[^\n]+") do names[#names + 1] = line:match("^([^=]+)=") end
    table.sort(names)
    -- sh itself may add PWD
    local filtered = {}
    for _, n in ipairs(names) do if n ~= "PWD" then filtered[#filtered + 1] = n end end
    assert.same({ "CMD_VAR", "PATH", "SB_VAR" }, filtered)
    sb:destroy()
  end)

  it("working_directory is created on start and is the default cwd", function()
    local dir = tmp.dir() .. "/nested/ws"
    local sb = sandkit.LocalSandbox { working_directory = dir }
    assert.equal(dir .. "\n", assert(sb:exec("pwd")).stdout)
    assert.equal(dir .. "/sub\n", assert(sb:exec("mkdir -p sub && cd sub && pwd")).stdout)
    assert.equal(dir .. "/sub\n", assert(sb:exec("pwd", nil, { cwd = "sub" })).stdout)
    sb:destroy()
  end)

  it("working_directory defaults to ./.sandbox; ~ is expanded from HOME", function()
    -- in a child: the default is relative to the current directory
    local base = tmp.dir()
    local function q(x) return "'" .. x:gsub("'", "'\\''") .. "'" end
    local script = [[
      local sandkit = require "sandkit"
      local a = sandkit.LocalSandbox {}
      io.write(assert(a:exec("pwd")).stdout)
      a:destroy()
      local b = sandkit.LocalSandbox { working_directory = "~/ws" }
      io.write(assert(b:exec("pwd")).stdout)
      b:destroy()
    ]]
    local p = assert(io.popen(("cd %s && mkdir home && HOME=%s/home LUA_PATH=%s LUA_CPATH=%s lua5.4 -e %s 2>&1"):format(
      q(base), q(base), q(package.path), q(package.cpath), q(script))))
    local out = p:read("a")
    p:close()
    assert.equal(base .. "/.sandbox\n" .. base .. "/home/ws\n", out)
  end)

  it("a missing cwd is a runtime error naming it", function()
    local sb = sandkit.LocalSandbox { working_directory = tmp.dir() }
    local r, err = sb:exec("pwd", nil, { cwd = "/no/such/dir" })
    assert.is_nil(r)
    assert.truthy(err.message:find("/no/such/dir", 1, true))
    sb:destroy()
  end)

  it("the sandbox timeout option is the default per-command timeout", function()
    local sb = sandkit.LocalSandbox { working_directory = tmp.dir(), timeout = 100 }
    local r = assert(sb:exec("sleep", { "5" }))
    assert.equal(124, r.exit_code)
    assert.is_true(r.timed_out)
    assert.truthy(r.stderr:find("Process timed out after 100ms", 1, true))
    r = assert(sb:exec("sleep", { "0.3" }, { timeout = 5000 }))
    assert.equal(0, r.exit_code)
    sb:destroy()
  end)
end)

describe("shell quoting", function()
  local sb = sandkit.LocalSandbox { working_directory = tmp.dir() }
  teardown(function() sb:destroy() end)

  it("every byte string but NUL arrives as exactly one argument", function()
    math.randomseed(42)
    local cases = { "", " ", "'", "''", '"', "\\", "$HOME", "`id`", "$(id)", "a b\tc\nd", "-n", "--", "*", "~",
      "é✓", "\255\254\1", "!", "#x", ";rm -rf /", "|&<>(){}[]" }
    for _ = 1, 150 do
      local n = math.random(1, 40)
      local b = {}
      for i = 1, n do b[i] = string.char(math.random(1, 255)) end
      cases[#cases + 1] = table.concat(b)
    end
    -- one exec per batch: printf frames each argument so boundaries show
    local args = { "[%s]\\n" }
    for _, c in ipairs(cases) do args[#args + 1] = c end
    local r = assert(sb:exec("printf", args))
    local expected = {}
    for i, c in ipairs(cases) do expected[i] = "[" .. c .. "]\n" end
    assert.equal(table.concat(expected), r.stdout)
    r = assert(sb:exec("sh", { "-c", 'echo $#', "sh", table.unpack(cases) }))
    assert.equal(#cases .. "\n", r.stdout)
  end)

  it("quote() gives one shell word", function()
    assert.equal("'a b'", sandkit.quote("a b"))
    assert.equal("plain", sandkit.quote("plain"))
    assert.equal("''\\'''", sandkit.quote("'"))
    assert.has_error(function() sandkit.quote("a\0b") end)
    -- upstream's examples and bare set ([A-Za-z0-9._-/=:@]), byte for byte
    assert.equal("ok", sandkit.quote("ok"))
    assert.equal([['it'\''s']], sandkit.quote("it's"))
    assert.equal("'$HOME'", sandkit.quote("$HOME"))
    assert.equal("''", sandkit.quote(""))
    assert.equal("a.b_c-d/e=f:g@h", sandkit.quote("a.b_c-d/e=f:g@h"))
    for _, c in ipairs({ "+", "%", ",", "~", "!", "#" }) do
      assert.equal("'x" .. c .. "'", sandkit.quote("x" .. c))
    end
  end)
end)

describe("process groups", function()
  local sb = sandkit.LocalSandbox { working_directory = tmp.dir() }
  teardown(function() sb:destroy() end)

  it("a timeout kills the whole tree, grandchildren included", function()
    local r = assert(sb:exec("sh", { "-c", "sleep " .. TIMEOUT_TREE_SECS .. " & sleep " .. TIMEOUT_TREE_SECS .. " & sleep " .. TIMEOUT_TREE_SECS }, { timeout = 200 }))
    assert.equal(124, r.exit_code)
    assert.is_true(r.timed_out)
    assert.equal(0, procs.wait_gone("sleep " .. TIMEOUT_TREE_SECS))
  end)

  it("a process that ignores SIGTERM is killed after the grace period", function()
    local r = assert(sb:exec("sh", { "-c", "trap '' TERM; sleep " .. TERM_IGNORER_SECS .. " & wait" }, { timeout = 100 }))
    assert.equal(124, r.exit_code)
    assert.equal(0, procs.wait_gone("sleep " .. TERM_IGNORER_SECS))
  end)

  it("a signal death reports 128 + N and killed", function()
    local r = assert(sb:exec("kill -TERM $$"))
    assert.equal(143, r.exit_code)
    assert.is_true(r.killed)
  end)

  it("stop and destroy kill background processes and their children", function()
    local s2 = sandkit.LocalSandbox { working_directory = tmp.dir() }
    assert(s2.processes:spawn("sleep " .. STOP_SECS .. " & exec sleep " .. STOP_SECS))
    -- both running (the child's sleep is forked after spawn returns), so
    -- that the kill is what ends them
    assert.is_true(procs.wait_for(function() return #procs.pids_matching("sleep " .. STOP_SECS) == 2 end))
    assert(s2:stop())
    assert.equal(0, procs.wait_gone("sleep " .. STOP_SECS))
    assert(s2.processes:spawn("sleep " .. DESTROY_SECS .. " & exec sleep " .. DESTROY_SECS))
    assert.is_true(procs.wait_for(function() return #procs.pids_matching("sleep " .. DESTROY_SECS) == 2 end))
    assert(s2:destroy())
    assert.equal(0, procs.wait_gone("sleep " .. DESTROY_SECS))
  end)

  it("output is not lost when the command exits at once", function()
    for _ = 1, 20 do
      local r = assert(sb:exec("sh", { "-c", "seq 1 2000; echo end >&2" }))
      assert.equal(2000, select(2, r.stdout:gsub("\n", "")))
      assert.equal("end\n", r.stderr)
    end
  end)
end)

describe("bubblewrap isolation", function()
  local dir = tmp.dir()
  local extra_ro, extra_rw = tmp.dir(), tmp.dir()
  local sb = sandkit.LocalSandbox { working_directory = dir, isolation = "bwrap",
    read_only_paths = { extra_ro }, read_write_paths = { extra_rw } }
  teardown(function() sb:destroy() end)

  it("the system is read-only and the working directory writable", function()
    local r = assert(sb:exec("sh", { "-c", "touch /usr/sandkit-escape 2>/dev/null; echo $?" }))
    assert.not_equal("0", trim(r.stdout))
    -- the root itself too, not only the system binds
    r = assert(sb:exec("sh", { "-c", "touch /etc/sandkit-x /sandkit-x 2>/dev/null; echo $?" }))
    assert.not_equal("0", trim(r.stdout))
    r = assert(sb:exec("sh", { "-c", "echo hi > inside.txt && cat inside.txt" }))
    assert.equal("hi\n", r.stdout)
    local f = assert(io.open(dir .. "/inside.txt"))
    assert.equal("hi\n", f:read("a"))
    f:close()
  end)

  it("read_only_paths are visible but not writable; read_write_paths writable", function()
    local r = assert(sb:exec("sh", { "-c", "touch " .. extra_ro .. "/x 2>/dev/null; echo $?" }))
    assert.not_equal("0", trim(r.stdout))
    r = assert(sb:exec("sh", { "-c", "touch " .. extra_rw .. "/x; echo $?" }))
    assert.equal("0", trim(r.stdout))
  end)

  it("the host's home and other directories are not visible", function()
    local r = assert(sb:exec("sh", { "-c", "ls /root /home /var 2>&1 >/dev/null | wc -l" }))
    assert.not_equal("0", trim(r.stdout))
  end)

  it("has its own /tmp, kept across commands, not the host's", function()
    local name = "sandkit-private-" .. os.time()
    assert(sb:exec("sh", { "-c", "echo x > /tmp/" .. name }))
    assert.equal("x\n", assert(sb:exec("cat", { "/tmp/" .. name })).stdout)
    assert.is_nil(io.open("/tmp/" .. name))
  end)

  it("has no network unless allowed", function()
    local r = assert(sb:exec("sh", { "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '" }))
    assert.equal("lo\n", r.stdout)
    -- the host's interfaces: interfaces come and go on a busy machine, so
    -- the sandbox must see those present before and after its look, and
    -- nothing that was never there
    local function names(text)
      local set = {}
      for n in text:gmatch("[^\n]+") do set[n] = true end
      return set
    end
    local LIST = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
    local before = names(io.popen(LIST):read("a"))
    local open = sandkit.LocalSandbox { working_directory = tmp.dir(), isolation = "bwrap", allow_network = true }
    r = assert(open:exec("sh", { "-c", LIST }))
    open:destroy()
    local after = names(io.popen(LIST):read("a"))
    local seen = names(r.stdout)
    for n in pairs(before) do
      if after[n] then assert.is_true(seen[n], n .. " is the host's but not the sandbox's: " .. r.stdout) end
    end
    for n in pairs(seen) do assert.is_true(before[n] or after[n], n .. " is not the host's") end
    local function others(set)
      local n = 0
      for name in pairs(set) do if name ~= "lo" then n = n + 1 end end
      return n
    end
    if others(before) > 0 and others(after) > 0 then
      assert.is_true(others(seen) > 0, "allow_network: the sandbox sees only lo: " .. r.stdout)
    end
  end)

  it("sees only its own processes", function()
    -- pid 1 is bwrap's own init, not the host's, and only a handful exist
    local r = assert(sb:exec("sh", { "-c", "tr '\\0' ' ' < /proc/1/cmdline; echo; ls /proc | grep -c '^[0-9]'" }))
    local init, count = r.stdout:match("^(.-)\n(%d+)")
    assert.truthy(init:find("^[%w/]*bwrap "), init) -- absolute when a cgroup wrapper resolved it
    assert.is_true(tonumber(count) < 10, count)
  end)

  it("honours a per-command cwd", function()
    assert.equal("/tmp\n", assert(sb:exec("pwd", nil, { cwd = "/tmp" })).stdout)
    assert(sb:exec("mkdir", { "-p", "sub" }))
    assert.equal(dir .. "/sub\n", assert(sb:exec("pwd", nil, { cwd = "sub" })).stdout)
  end)

  it("raises IsolationUnavailableError with the install command when bwrap is missing", function()
    local code = [[
      package.cpath = "build/?.so;" .. package.cpath
      package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
      local sandkit = require "sandkit"
      local ok, err = pcall(sandkit.LocalSandbox, { isolation = "bwrap" })
      io.write(tostring(ok), "|", tostring(err), "|", tostring(sandkit.errors.is(err, "IsolationUnavailableError")))
    ]]
    local p = io.popen("env PATH=/nonexistent /usr/bin/lua5.4 -e '" .. code:gsub("'", "'\\''") .. "'")
    local out = p:read("a")
    p:close()
    assert.truthy(out:find("^false|IsolationUnavailableError: .*apt%-get install bubblewrap.*|true$"), out)
  end)
end)
