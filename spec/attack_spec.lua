-- Attacks on the promises of issue 10 (docs/security.md) that the trust_*
-- specs did not try: each case is a break found on this build, kept as a
-- regression test. The command is hostile, the caller is root.
local sandkit = require "sandkit"
local server = require "helpers.server"
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

local HAVE_BWRAP = require("helpers.sh").have_bwrap()
local IS_ROOT = io.popen("id -u"):read("l") == "0"

local sh_quote = require("helpers.sh").quote

local capture = require("helpers.sh").capture

local function owner(path) return capture("stat -c %u " .. sh_quote(path)):match("%d+") end

local function exists(path) return os.execute("test -e " .. sh_quote(path)) == true end

local function it_root_bwrap(name, fn)
  if HAVE_BWRAP and IS_ROOT then it(name, fn) else pending(name .. " (needs root and bubblewrap)") end
end

-- An `it` for tests against a reference server: pending when node (or
-- `needed`, the server's node_modules) is missing.
local function it_with_node(needed)
  local missing = server.node_missing(needed)
  return function(name, fn)
    if missing then pending(name .. " (" .. missing .. ")") else it(name, fn) end
  end
end

describe("attack: LocalSandbox bwrap, root caller", function()
  -- An outer sandbox plants `inner` as a symlink to an empty root-owned host
  -- directory (think /usr/local/bin) before the caller starts a sandbox
  -- there. Following it, sandkit (root) gave that directory to nobody and
  -- bound it writable: the next command could fill root's PATH.
  for _, key in ipairs { "working_directory", "read_write_paths", "read_only_paths" } do
    it_root_bwrap(key .. ": a symlink planted by a sandbox does not lead a root caller to a host directory",
      function()
      local base = tmp.dir()
      local host = tmp.dir()
      os.execute("chmod 755 " .. sh_quote(host))
      if key == "read_only_paths" then
        assert(io.open(host .. "/secret", "w")):write("host-secret"):close()
        os.execute("chmod 644 " .. sh_quote(host .. "/secret"))
      end
      local outer = sandkit.LocalSandbox { isolation = "bwrap", working_directory = base .. "/ws" }
      assert(outer:start())
      local planted = assert(outer:exec("ln -s " .. sh_quote(host) .. " inner && echo PLANTED"))
      assert.equal("PLANTED\n", planted.stdout, "positive control: the symlink was planted")
      outer:destroy()
      local opts = { isolation = "bwrap", working_directory = base .. "/other" }
      if key == "working_directory" then
        opts.working_directory = base .. "/ws/inner"
      else
        opts[key] = { base .. "/ws/inner" }
      end
      local sb = sandkit.LocalSandbox(opts)
      local ok, err = sb:start()
      local r = ok and sb:exec(("cat %s/ws/inner/secret; echo pwned > %s/ws/inner/pwned"):format(base, base))
      sb:destroy()
      assert.equal("0", owner(host), "the host directory was given to the sandbox user")
      assert.is_false(exists(host .. "/pwned"), "the sandbox wrote the host directory")
      if r then assert.is_nil(r.stdout:find("host-secret", 1, true), "the sandbox read the host directory") end
      assert.is_nil(ok)
      assert.equal("SandboxError", err.kind)
      assert.truthy(err.message:find("symlink", 1, true), err.message)
      assert.truthy(err.message:find("65534", 1, true), err.message)
    end)
  end

  -- Before the symlink check, start() made the missing directories as root
  -- with mkdir -p, through the planted symlink: an empty root-owned
  -- directory appeared wherever the sandbox pointed.
  it_root_bwrap("a working directory below a planted symlink is not made on the host", function()
    local base = tmp.dir()
    local host = tmp.dir()
    local outer = sandkit.LocalSandbox { isolation = "bwrap", working_directory = base .. "/ws" }
    assert(outer:start())
    assert.equal("PLANTED\n", assert(outer:exec("ln -s " .. sh_quote(host) .. " inner && echo PLANTED")).stdout)
    outer:destroy()
    local sb = sandkit.LocalSandbox { isolation = "bwrap", working_directory = base .. "/ws/inner/made/here" }
    local ok, err = sb:start()
    sb:destroy()
    assert.is_nil(ok)
    assert.equal("SandboxError", err.kind)
    assert.is_false(exists(host .. "/made"), "start() made a directory through the planted symlink")
  end)

  it_root_bwrap("missing directories of the working directory are made, the last one given to the sandbox user", function()
    local base = tmp.dir()
    local sb = sandkit.LocalSandbox { isolation = "bwrap", working_directory = base .. "/a/b/c" }
    assert(sb:start())
    local r = assert(sb:exec("echo x > f && echo ok"))
    sb:destroy()
    assert.equal("ok\n", r.stdout)
    assert.equal("65534", owner(base .. "/a/b/c"))
    assert.equal("0", owner(base .. "/a/b"))
  end)

  it_root_bwrap("a symlink owned by root is still followed (positive control)", function()
    local base = tmp.dir()
    os.execute("mkdir -p " .. sh_quote(base .. "/real") .. " && ln -s real " .. sh_quote(base .. "/link"))
    local sb = sandkit.LocalSandbox { isolation = "bwrap", working_directory = base .. "/link" }
    assert(sb:start())
    local r = assert(sb:exec("echo hi > f && cat f"))
    sb:destroy()
    assert.equal("hi\n", r.stdout)
    assert.is_true(exists(base .. "/real/f"))
  end)
end)

describe("attack: LocalSandbox bwrap, nested user namespaces", function()
  local HAVE_BWRAP_ANY = HAVE_BWRAP
  local function it_bwrap(name, fn)
    if HAVE_BWRAP_ANY then it(name, fn) else pending(name .. " (bubblewrap cannot run here)") end
  end

  -- With its own user namespace a command holds CAP_NET_ADMIN and
  -- CAP_SYS_ADMIN over namespaces of its own: it wrote a sysctl of its own
  -- network namespace and mounted a tmpfs, and reached the netfilter and
  -- mount code most kernel escapes go through. bwrap 0.8 forbids it.
  it_bwrap("a command cannot create a user namespace (unshare -U), so holds no capability anywhere", function()
    local sb = sandkit.LocalSandbox { isolation = "bwrap", working_directory = tmp.dir() .. "/ws" }
    assert(sb:start())
    local r = assert(sb:exec(table.concat({
      "unshare -Ur true 2>/dev/null && echo USERNS",
      "unshare -Urn sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward' 2>/dev/null && echo SYSCTL",
      "unshare -Urm sh -c 'mount -t tmpfs x /tmp' 2>/dev/null && echo MOUNT",
      "grep CapEff /proc/self/status",
    }, "; ")))
    sb:destroy()
    assert.is_nil(r.stdout:find("USERNS", 1, true), "made a user namespace: " .. r.stdout)
    assert.is_nil(r.stdout:find("SYSCTL", 1, true), r.stdout)
    assert.is_nil(r.stdout:find("MOUNT", 1, true), r.stdout)
    assert.truthy(r.stdout:find("CapEff:%s+0+\n"), r.stdout)
  end)

  it("positive control: without bwrap, root can make a user namespace here", function()
    if not IS_ROOT then return pending("needs root") end
    local sb = sandkit.LocalSandbox { isolation = "none", working_directory = tmp.dir() .. "/ws" }
    local r = assert(sb:exec("unshare -Ur true && echo USERNS"))
    sb:destroy()
    assert.equal("USERNS\n", r.stdout)
  end)
end)

describe("attack: LocalSandbox bwrap, what read-only does not stop", function()
  local function it_bwrap(name, fn)
    if HAVE_BWRAP then it(name, fn) else pending(name .. " (bubblewrap cannot run here)") end
  end

  local function wait_for(path, seconds)
    return require("helpers.procs").wait_for(function() return exists(path) end, seconds)
  end

  -- docs/security.md §"What `bwrap` does not promise": a Unix socket inside a
  -- bound path, read-only or not, still connects to whatever listens on the
  -- host, with allow_network = false too (sockets in the file system are not
  -- part of a network namespace).
  it_bwrap("a Unix socket in a read_only_paths entry still reaches the host listener", function()
    local dir = tmp.dir() .. "/socks"
    os.execute("mkdir -p " .. sh_quote(dir) .. " && chmod 755 " .. sh_quote(dir) .. " " .. sh_quote(dir .. "/.."))
    local sock, got = dir .. "/s", dir .. "/../got"
    local listener = ([[local socket = require "cqueues.socket"
      local srv = socket.listen { path = %q, unlink = true }
      srv:listen()
      os.execute("chmod 777 %s")
      local c = srv:accept(10)
      local data = c and c:read("*a") or ""
      local f = io.open(%q, "w") f:write(data) f:close()]]):format(sock, sh_quote(sock), got)
    local script = dir .. "/../listener.lua"
    assert(io.open(script, "w")):write(listener):close()
    local bg = io.popen("timeout 20 lua5.4 " .. sh_quote(script) .. " 2>&1")
    assert.is_true(wait_for(sock, 10), "the host listener did not start")
    local sb = sandkit.LocalSandbox { isolation = "bwrap", working_directory = tmp.dir() .. "/ws",
      read_only_paths = { dir } }
    assert(sb:start())
    local r = assert(sb:exec(("lua5.4 -e 'local s = require(\"cqueues.socket\").connect { path = %q }; "
      .. "s:write(\"from-the-sandbox\"); s:flush(); s:close()'"):format(sock)))
    sb:destroy()
    local arrived = wait_for(got, 10)
    bg:close()
    assert.equal(0, r.exit_code, r.stderr)
    assert.is_true(arrived)
    local f = assert(io.open(got))
    assert.equal("from-the-sandbox", f:read("a"))
    f:close()
  end)
end)

describe("attack: a hostile Platform exec endpoint", function()
  local it_node = it_with_node("spec/servers/platform/node_modules/ws")

  -- Runs one exec against the server in a child Lua; returns everything it
  -- printed (every string of the error, tostring, info) and logged.
  local function exec_child(url)
    local script = tmp.dir() .. "/child.lua"
    assert(io.open(script, "w")):write(([[
      local sandkit = require "sandkit"
      local sb = sandkit.PlatformSandbox { access_token = "test-token", base_url = %q, project_id = "proj_1",
        environment_id = "env_1", retry_delays_ms = {} }
      assert(sb:start())
      local r, err = sb:exec("echo hi")
      local function dump(prefix, t)
        for k, v in pairs(t) do
          if type(v) == "table" then dump(prefix .. tostring(k) .. ".", v) else print(prefix .. tostring(k), tostring(v)) end
        end
      end
      print("result", tostring(r), "tostring", tostring(err))
      if err then dump("err.", err) end
      sb:destroy()
    ]]):format(url))
    local p = io.popen(("env LUA_PATH=%s LUA_CPATH=%s lua5.4 %s 2>&1"):format(sh_quote(package.path),
      sh_quote(package.cpath), sh_quote(script)))
    local out = p:read("a")
    p:close()
    return out
  end

  -- The exec lease's jwt opens exec on the sandbox for an hour. A proxy
  -- that echoed the offered Sec-WebSocket-Protocol header ("railway-shell,
  -- <jwt>") in a close reason put the jwt in message, close_reason and
  -- tostring(err): unlike Modal's router JWT, it was not held as a secret.
  for _, case in ipairs {
    { "short jwt, echoed whole", "eyJhbGciOiJIUzI1NiJ9.eyJsaXgiOjF9.bGVhc2Utc2VjcmV0LWNhbmFyeQ" },
    { "long jwt, cut by the 123-byte close reason", "eyJhbGciOiJIUzI1NiJ9." .. ("bGVhc2Ut"):rep(30) .. ".c2lnbmF0dXJl" },
  } do
    it_node("a close reason echoing the lease jwt shows no form of it (" .. case[1] .. ")", function()
      local jwt = case[2]
      local srv = server.start("spec/servers/platform/hostile_lease.mjs", { "--jwt", jwt })
      local ok, out = pcall(exec_child, srv.url)
      srv:stop()
      assert(ok, out)
      assert.truthy(out:find("err.close_reason\tbad lease railway-shell, [redacted]", 1, true), out)
      -- no piece of the signature or the payload (the header segment is the same in every HS256 jwt)
      local secret = jwt:match("^[^.]+%.(.*)$")
      for i = 1, #secret - 11 do
        local piece = secret:sub(i, i + 11)
        assert.is_nil(out:find(piece, 1, true), "a piece of the lease jwt shows: " .. piece .. "\n" .. out)
      end
    end)
  end
end)

describe("attack: a hostile Modal control plane", function()
  local it_node = it_with_node()

  -- The retry hint is a float from the wire: 3.4e38 s (or 1e16 s) times
  -- 1000 was converted to int64, which is undefined (UBSan aborted the
  -- client; plain builds got INT64_MIN). Now clamped: the call fails
  -- with the server's status, as any throttle past MODAL_MAX_THROTTLE_WAIT.
  for _, hint in ipairs { "max", "1e16", "-1" } do
    it_node("a retry_after_secs of " .. hint .. " s ends start() with nil, err (no undefined conversion)", function()
      local srv = server.start("spec/servers/modal/hostile_throttle.mjs", { "--retry-after", hint })
      local script = tmp.dir() .. "/child.lua"
      assert(io.open(script, "w")):write(([[
        local sandkit = require "sandkit"
        local sb = sandkit.ModalSandbox { token_id = "ak-test", token_secret = "as-test", server_url = %q }
        local ok, err = sb:start()
        print("start", tostring(ok), err and err.kind, err and err.message)
      ]]):format(srv.url))
      local p = io.popen(("env LUA_PATH=%s LUA_CPATH=%s MODAL_MAX_THROTTLE_WAIT=2 lua5.4 %s 2>&1"):format(
        sh_quote(package.path), sh_quote(package.cpath), sh_quote(script)))
      local out = p:read("a")
      local closed_ok = p:close()
      srv:stop()
      assert.is_nil(out:find("runtime error", 1, true), out)
      assert.is_true(closed_ok, "the client died: " .. out)
      assert.truthy(out:find("start\tnil\tModalError\t[^\n]*RESOURCE_EXHAUSTED"), out)
    end)
  end
end)

describe("attack: a lying Modal router", function()
  local it_node = it_with_node("spec/servers/modal/node_modules")

  -- The exit signal is an int32 from the wire and the result is 128 + it:
  -- INT32_MAX overflowed a signed int (undefined; it wrapped to a negative
  -- exit code, or UBSan aborted). Now clamped at INT_MAX.
  for _, case in ipairs {
    { exit = { signal = 2147483647 }, code = 2147483647, killed = true },
    { exit = { signal = -2147483648 }, code = -2147483520, killed = true },
    { exit = { code = -2147483648 }, code = -2147483648, killed = false },
  } do
    local what = case.exit.signal and ("signal " .. case.exit.signal) or ("code " .. case.exit.code)
    it_node("an exec reported as " .. what .. " gives a result in range, no undefined arithmetic", function()
      server.with("spec/servers/modal/server.mjs",
        { "--port", "0", "--token-id", "ak-test", "--token-secret", "as-test" }, function(srv)
        srv:faults({ exec_exit = case.exit })
        local sb = sandkit.ModalSandbox { token_id = "ak-test", token_secret = "as-test", server_url = srv.url }
        local r, err = sb:exec("true")
        sb:destroy()
        assert.is_nil(err)
        assert.equal(case.code, r.exit_code)
        assert.equal(case.killed, r.killed == true)
        assert.is_false(r.success)
      end)
    end)
  end
end)

describe("attack: a Platform proxy echoing the token into the sandbox record", function()
  local it_node = it_with_node("spec/servers/platform/node_modules/ws")

  -- docs/errors.md: no info() contains an access token. info().metadata carries
  -- the proxy's own strings (sandbox_id, provider_resource_id,
  -- platform_status): a proxy that put the caller's token there had it
  -- shown (and logged by whoever prints info()).
  it_node("info() shows no form of the access token the proxy put in the record", function()
    local token = "sk-live/attack+canary=0123456789"
    server.with("spec/servers/platform/hostile_lease.mjs", { "--jwt", "unused-jwt", "--mode", "record" }, function(srv)
      local sb = sandkit.PlatformSandbox { access_token = token, base_url = srv.url, project_id = "proj_1",
        environment_id = "env_1", retry_delays_ms = {} }
      assert(sb:start())
      local info = sb:info()
      sb:destroy()
      local function walk(t, path)
        for k, v in pairs(t) do
          local where = path .. "." .. tostring(k)
          assert.is_nil(tostring(k):find("0123456789", 1, true), where)
          if type(v) == "table" then walk(v, where)
          else assert.is_nil(tostring(v):find("0123456789", 1, true), where .. " = " .. tostring(v)) end
        end
      end
      walk(info, "info")
      -- the proxy's strings are there, cut
      assert.equal("ready [redacted]", info.metadata.platform_status)
    end)
  end)
end)

describe("attack: bad input to the scheduler", function()
  -- sleep(2e9) passed its own check and failed in the loop's timer with
  -- "bad argument #1 to 'timer'" at sandkit's line, not the caller's.
  it("sleep beyond the loop's timers names sleep and the limit, at the caller's line", function()
    for _, v in ipairs { 1e9, 2e9, 1e300 } do
      local ok, err = pcall(sandkit.sleep, v)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("bad argument #1 to 'sleep' (at most 1e9 seconds", 1, true), tostring(err))
      assert.is_nil(tostring(err):find("scheduler.lua", 1, true), tostring(err))
    end
  end)
end)

describe("attack: Modal timeouts past 32 bits", function()
  local it_node = it_with_node("spec/servers/modal/node_modules")

  -- The exec's backstop timeout_secs is a uint32: timeout = 4294967296000 ms
  -- (2^32 s) wrapped to 1 s, and the router killed a 2 s command the caller
  -- had given 136 years.
  it_node("an exec timeout of 2^32 s does not wrap to a 1 s backstop", function()
    server.with("spec/servers/modal/server.mjs",
      { "--port", "0", "--token-id", "ak-test", "--token-secret", "as-test" }, function(srv)
      local sb = sandkit.ModalSandbox { token_id = "ak-test", token_secret = "as-test", server_url = srv.url }
      local r, err = sb:exec("sleep 2; echo done", nil, { timeout = 4294967296000 })
      sb:destroy()
      assert.is_nil(err)
      assert.equal(0, r.exit_code, r.stderr)
      assert.equal("done\n", r.stdout)
    end)
  end)

  it("a sandbox timeout_ms past 2^32 s is a ConfigError naming it (it wrapped to 0 s)", function()
    local ok, err = pcall(sandkit.ModalSandbox, { token_id = "ak-test", token_secret = "as-test",
      server_url = "http://127.0.0.1:9", timeout_ms = 4294967296000 })
    assert.is_false(ok)
    assert.equal("ConfigError", err.kind)
    assert.truthy(err.message:find("timeout_ms", 1, true), err.message)
  end)
end)

describe("attack: JSON nested deeply by a server", function()
  -- A Platform proxy's error body goes through core.json_decode
  -- (src/core/providers/platform/fs.lua). jansson accepts 2048 levels; the binding
  -- pushed one Lua stack slot per level without asking for room, and
  -- 2000 levels wrote past the stack: the host crashed (ASan: SEGV in
  -- lua_rawseti under skl_push_json). Run in a child so a crash is one
  -- failure, not the end of the run.
  it("2000 levels of arrays and of objects decode whole, without a crash", function()
    local child = require "helpers.child"
    local script = child.script("deep_json.lua", [[
      local core = require "sandkit.core"
      for _, open in ipairs { { "[", "]" }, { '{"a":', "}" } } do
        local v = assert(core.json_decode(open[1]:rep(2000) .. "1" .. open[2]:rep(2000)))
        local depth = 0
        while type(v) == "table" do v = v[1] or v.a; depth = depth + 1 end
        io.write(depth, " ", tostring(v), "\n")
      end
    ]])
    local dir = require("helpers.tmp").dir()
    local out, err = child.run("timeout 60 env " .. child.LUA_ENV .. " lua5.4 " .. sh_quote(script), dir)
    assert.equal("2000 1\n2000 1\n", out, err)
  end)
end)
