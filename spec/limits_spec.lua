-- Resource limits of LocalSandbox (issue 21 row 7): options memory,
-- pids_limit, cpu_quota and cpu_period (Docker's names), enforced through
-- the sandbox's cgroup, in both isolation modes. Before, nothing limited a
-- sandbox: a fork storm under bwrap (as nobody) could take the host's
-- 32,768 pids until its timeout. Each case asserts on the host: the
-- cgroup's own counters (pids.peak, the memory peak), the processes left,
-- the next command. Where this process cannot use cgroups (not root), the
-- enforcing cases are pending and the refusal is checked instead.
local sandkit = require "sandkit"
local files = require "helpers.files"
local procs = require "helpers.procs"
local sh = require "helpers.sh"
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

local quote = sh.quote
local HAVE_BWRAP = sh.have_bwrap()
local MIB = 1024 * 1024

-- Whether sandboxes here get a cgroup that can hold every limit.
local LIMITS = (function()
  local sb = sandkit.LocalSandbox { working_directory = tmp.dir() .. "/probe", memory = 64 * MIB,
    pids_limit = 64, cpu_quota = 50000 }
  local ok = sb:start()
  sb:destroy()
  return ok ~= nil
end)()

local function it_limits(name, fn)
  if LIMITS then it(name, fn) else pending(name .. " (needs a writable cgroup hierarchy: root)") end
end

local function read_number(path)
  local s = files.read(path)
  return s and tonumber(s:match("^%s*(%-?%d+)"))
end

-- The directory of the sandbox's cgroup that holds `ctl`'s counters.
local function ctl_dir(sb, ctl)
  local c = sb:info().metadata.cgroup.controllers[ctl]
  assert(c, "no " .. ctl .. " cgroup in info().metadata")
  return c.path, c.version
end

-- Processes descending from this Lua process.
local function our_process_count()
  return #(procs.children())
end

local function sandbox(isolation, opts)
  opts = opts or {}
  opts.working_directory = tmp.dir() .. "/ws"
  opts.isolation = isolation
  local sb = sandkit.LocalSandbox(opts)
  assert(sb:start())
  return sb
end

-- A shell fork storm that never ends by itself: each function call forks
-- two more in the background; the command then waits.
local STORM = "storm() { storm | storm & }; storm; exec sleep 300"

describe("resource limit options", function()
  local function config_error(opts)
    opts.working_directory = tmp.dir() .. "/ws"
    local ok, err = pcall(sandkit.LocalSandbox, opts)
    assert.is_false(ok)
    assert.are.equal("ConfigError", err.kind, tostring(err))
    return err.message
  end

  it("are whole numbers with units in their messages", function()
    assert.truthy(config_error { memory = 67108864.5 }:find("'memory'", 1, true))
    assert.truthy(config_error { memory = "64m" }:find("'memory'", 1, true))
    assert.truthy(config_error { memory = 1024 }:find("at least 6291456 bytes", 1, true))
    assert.truthy(config_error { pids_limit = -2 }:find("0 or -1: no limit", 1, true))
    assert.truthy(config_error { pids_limit = 1.5 }:find("'pids_limit'", 1, true))
    assert.truthy(config_error { cpu_quota = 999 }:find("at least 1000 microseconds", 1, true))
    assert.truthy(config_error { cpu_period = 999 }:find("1000 to 1000000 microseconds", 1, true))
    assert.truthy(config_error { cpu_period = 1000001 }:find("1000 to 1000000 microseconds", 1, true))
  end)

  it("are described with their units and defaults", function()
    local desc
    for _, d in ipairs(sandkit.providers()) do if d.id == "local" then desc = d end end
    assert.truthy(desc.options.memory.description:find("Bytes", 1, true))
    assert.are.equal(4096, desc.options.pids_limit.default)
    assert.truthy(desc.options.cpu_quota.description:find("Microseconds", 1, true))
    assert.are.equal(100000, desc.options.cpu_period.default)
  end)

  it("fail start() naming the option and why where cgroups cannot enforce them; none asked: start works", function()
    local script = tmp.dir() .. "/off.lua"
    files.write(script, ([[
      local sandkit = require "sandkit"
      for _, key in ipairs { "memory", "pids_limit", "cpu_quota", "cpu_period" } do
        local opts = { working_directory = %q, [key] = key == "memory" and 64 * 1024 * 1024 or 50000 }
        local sb = sandkit.LocalSandbox(opts)
        local ok, err = sb:start()
        print(key, ok, err and err.kind, err and err.key, err and err.message)
        sb:destroy()
      end
      local sb = sandkit.LocalSandbox { working_directory = %q }
      assert(sb:start())
      print("plain", sb:exec("echo ran").stdout:gsub("\n", ""), next(sb:info().metadata.limits))
      sb:destroy()
    ]]):format(tmp.dir() .. "/ws", tmp.dir() .. "/ws2"))
    local out = sh.capture(("SANDKIT_CGROUP=off LUA_PATH=%s LUA_CPATH=%s timeout -k 5 60 lua5.4 %s 2>&1")
      :format(quote(package.path), quote(package.cpath), quote(script)))
    for _, key in ipairs { "memory", "pids_limit", "cpu_quota", "cpu_period" } do
      local option = key == "cpu_period" and "cpu_quota" or key -- one option per controller
      local line = out:match("\n?(" .. key .. "\t[^\n]*)")
      assert.truthy(line, out)
      assert.truthy(line:find("\tnil\tIsolationUnavailableError\t" .. option .. "\t", 1, true), line)
      assert.truthy(line:find("LocalSandbox option '" .. option .. "' cannot be enforced", 1, true), line)
      -- why: turned off, or (a build without cgroup support) none at all
      assert.truthy(line:find("SANDKIT_CGROUP=off", 1, true) or line:find("has no cgroups", 1, true), line)
    end
    -- the default process limit is dropped, not an error
    assert.truthy(out:find("plain\tran\tnil", 1, true), out)
  end)
end)

describe("resource limits enforced by the sandbox's cgroup", function()
  after_each(function() tmp.cleanup() end)

  it_limits("info().metadata says what is enforced; the default process limit is 4096, 0 turns it off", function()
    local sb = sandbox("none")
    assert.are.same({ pids_limit = 4096 }, sb:info().metadata.limits)
    local dir = ctl_dir(sb, "pids")
    assert.are.equal(4096, read_number(dir .. "/pids.max"))
    sb:destroy()
    sb = sandbox("none", { pids_limit = 0 })
    assert.are.same({}, sb:info().metadata.limits)
    assert.is_nil(sb:info().metadata.cgroup.controllers.pids)
    sb:destroy()
    sb = sandbox("none", { pids_limit = -1 })
    assert.are.same({}, sb:info().metadata.limits)
    sb:destroy()
  end)

  for _, isolation in ipairs { "none", "bwrap" } do
    local it_ = (isolation == "bwrap" and not HAVE_BWRAP) and pending or it_limits

    it_("a fork storm with pids_limit = 64 stays inside: at most 64 ever, nothing left after, the next command works ("
        .. isolation .. ")", function()
      local before = our_process_count()
      local sb = sandbox(isolation, { pids_limit = 64 })
      local dir = ctl_dir(sb, "pids")
      assert.are.equal(64, read_number(dir .. "/pids.max"))
      local op = sb:exec_async(STORM)
      -- sample the sandbox's count until the storm fills it (state, with a deadline)
      local max_seen = 0
      local full = procs.wait_for(function()
        local n = read_number(dir .. "/pids.current") or 0
        if n > max_seen then max_seen = n end
        return n >= 60
      end, 60)
      assert.truthy(full, "the storm never reached the limit: " .. max_seen)
      -- it keeps trying: let it push against the limit for a while
      local t_end = sandkit.now() + 500
      while sandkit.now() < t_end do
        local n = read_number(dir .. "/pids.current") or 0
        if n > max_seen then max_seen = n end
        sandkit.step(0.01)
      end
      local peak = read_number(dir .. "/pids.peak")
      op:cancel()
      local r = op:wait()
      assert.is_true(r.killed)
      assert.is_true(max_seen <= 64, "sampled " .. max_seen)
      if peak then assert.is_true(peak <= 64, "pids.peak " .. peak) end
      -- nothing of it is left: the sandbox's cgroup and our descendants
      assert.is_true(procs.wait_for(function() return read_number(dir .. "/pids.current") == 0 end, 30),
        "left in the cgroup: " .. tostring(read_number(dir .. "/pids.current")))
      assert.is_true(procs.wait_for(function() return our_process_count() <= before end, 30),
        ("%d processes of ours before, %d after"):format(before, our_process_count()))
      local ok = assert(sb:exec("echo still here"))
      assert.are.equal("still here\n", ok.stdout)
      assert(sb:destroy())
    end)

    it_("a memory hog with memory = 64 MiB is killed: oom_killed = true, exit 137; the sandbox keeps working ("
        .. isolation .. ")", function()
      local sb = sandbox(isolation, { memory = 64 * MIB })
      local dir, version = ctl_dir(sb, "memory")
      assert.are.equal(64 * MIB, read_number(dir .. (version == "v2" and "/memory.max" or "/memory.limit_in_bytes")))
      local t0 = sandkit.now()
      -- 256 MiB in 4 MiB strings, touched as they are made
      local r = assert(sb:exec("exec lua5.4 -e 'local t = {} for i = 1, 64 do t[i] = string.rep(\"x\", 4194304) end'",
        nil, { timeout = 60000 }))
      assert.is_true(sandkit.now() - t0 < 60000)
      assert.are.equal(137, r.exit_code, r.stderr)
      assert.is_true(r.oom_killed)
      assert.is_false(r.timed_out)
      -- the cgroup never held more than the limit
      local peak = read_number(dir .. (version == "v2" and "/memory.peak" or "/memory.max_usage_in_bytes"))
      if peak then assert.is_true(peak <= 64 * MIB, "memory peak " .. peak) end
      -- what fits runs, and is not reported as killed
      local small = assert(sb:exec("lua5.4 -e 'local s = string.rep(\"x\", 8388608) print(#s)'"))
      assert.are.equal("8388608\n", small.stdout)
      assert.is_nil(small.oom_killed)
      assert(sb:destroy())
    end)

    it_("cpu_quota and cpu_period are written, reported and hold: 2 s of busy work at 10 % gets under 1 s of CPU ("
        .. isolation .. ")", function()
      local sb = sandbox(isolation, { cpu_quota = 10000, cpu_period = 100000 })
      local limits = sb:info().metadata.limits
      assert.are.equal(10000, limits.cpu_quota)
      assert.are.equal(100000, limits.cpu_period)
      local dir, version = ctl_dir(sb, "cpu")
      if version == "v2" then
        assert.are.equal("10000 100000\n", files.read(dir .. "/cpu.max"))
      else
        assert.are.equal(10000, read_number(dir .. "/cpu.cfs_quota_us"))
        assert.are.equal(100000, read_number(dir .. "/cpu.cfs_period_us"))
      end
      local r = assert(sb:exec("lua5.4 -e 'local t = os.time() + 2 while os.time() < t do end print(os.clock())'",
        nil, { timeout = 60000 }))
      local cpu = tonumber(r.stdout)
      assert.truthy(cpu, r.stdout .. r.stderr)
      -- generous: the quota allows about 0.2 to 0.3 s (2 to 3 s of wall time)
      assert.is_true(cpu < 1, ("used %.2f s of CPU"):format(cpu))
      assert(sb:destroy())
    end)
  end

  it_limits("limits are per sandbox: a sibling without them allocates what the limited one may not", function()
    local hog = "exec lua5.4 -e 'local t = {} for i = 1, 32 do t[i] = string.rep(\"x\", 4194304) end print(\"ok\")'"
    local limited = sandbox("none", { memory = 64 * MIB })
    local free = sandbox("none")
    local r1 = assert(limited:exec(hog, nil, { timeout = 60000 }))
    local r2 = assert(free:exec(hog, nil, { timeout = 60000 }))
    assert.is_true(r1.oom_killed)
    assert.are.equal("ok\n", r2.stdout)
    assert.is_nil(r2.oom_killed)
    limited:destroy()
    free:destroy()
  end)

  it_limits("hold with SANDKIT_CGROUP=v1 too (the freezer kills, v1 controllers limit)", function()
    local script = tmp.dir() .. "/v1.lua"
    files.write(script, ([[
      local sandkit = require "sandkit"
      local sb = sandkit.LocalSandbox { working_directory = %q, memory = 64 * 1024 * 1024, pids_limit = 32 }
      assert(sb:start())
      local m = sb:info().metadata
      print("version", m.cgroup.version)
      local hog = assert(sb:exec("exec lua5.4 -e 'local t = {} for i = 1, 64 do t[i] = string.rep(\"x\", 4194304) end'"))
      print("hog", hog.exit_code, hog.oom_killed)
      local dir = m.cgroup.controllers.pids.path
      local op = sb:exec_async(%q)
      local max_seen, deadline = 0, sandkit.now() + 60000
      repeat
        local f = io.open(dir .. "/pids.current")
        local n = tonumber(f:read("a"))
        f:close()
        if n > max_seen then max_seen = n end
        sandkit.step(0.01)
      until max_seen >= 30 or sandkit.now() > deadline
      op:cancel()
      op:wait()
      print("storm", max_seen)
      print("after", sb:exec("echo ok").stdout)
      assert(sb:destroy())
    ]]):format(tmp.dir() .. "/ws", STORM))
    local out = sh.capture(("SANDKIT_CGROUP=v1 LUA_PATH=%s LUA_CPATH=%s timeout -k 5 120 lua5.4 %s 2>&1")
      :format(quote(package.path), quote(package.cpath), quote(script)))
    assert.truthy(out:find("version\tv1\n", 1, true), out)
    assert.truthy(out:find("hog\t137\ttrue\n", 1, true), out)
    local seen = tonumber(out:match("storm\t(%d+)"))
    assert.truthy(seen and seen >= 30 and seen <= 32, out)
    assert.truthy(out:find("after\tok\n", 1, true), out)
  end)

  it_limits("destroy removes every cgroup directory the limits made", function()
    local sb = sandbox("none", { memory = 64 * MIB, pids_limit = 64, cpu_quota = 50000 })
    local meta = sb:info().metadata.cgroup
    local dirs = { meta.path }
    for _, c in pairs(meta.controllers) do dirs[#dirs + 1] = c.path end
    assert(sb:exec("true"))
    for _, d in ipairs(dirs) do assert.is_true(os.execute("test -d " .. quote(d)) == true, d) end
    assert(sb:destroy())
    for _, d in ipairs(dirs) do assert.is_false(os.execute("test -e " .. quote(d)) == true, "left " .. d) end
  end)
end)
