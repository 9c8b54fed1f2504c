-- Isolation escapes (issue 7): LocalSandbox with bubblewrap, attacked from
-- inside. Each case tries a way out — writing outside the working
-- directory and read_write_paths (directly, through symlinks, through
-- swapped bind sources), reaching a 127.0.0.1 listener without network,
-- seeing or signalling host processes, keeping a process alive after
-- destroy — and asserts, on the host, that it failed. Positive controls
-- show each probe would notice a success.
local sandkit = require "sandkit"
local core = require "sandkit.core"
local files = require "helpers.files"
local procs = require "helpers.procs"
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

local HAVE_BWRAP = require("helpers.sh").have_bwrap()

local sh_quote = require("helpers.sh").quote

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

local write_file = files.write

local counter = 0 -- numbers the sleep markers below
local unique = procs.unique

local gone, kill_leftovers = procs.gone, procs.kill_matching

-- Run by root, commands run as nobody (65534): a directory the spec makes
-- for the sandbox to write is handed to that user, as a user would.
local IS_ROOT = io.popen("id -u"):read("l") == "0"
local function give(path)
  if IS_ROOT then assert(os.execute("chown -R 65534:65534 " .. sh_quote(path))) end
end

local function it_bwrap(name, fn)
  if HAVE_BWRAP then it(name, fn) else pending(name .. " (bubblewrap cannot run here)") end
end

local bwrap_sandbox = require("helpers.bwrap").sandbox

describe("bwrap: writing outside", function()
  local sb, outside
  setup(function()
    if not HAVE_BWRAP then return end
    outside = tmp.dir()
    sb = bwrap_sandbox()
  end)
  teardown(function() if sb then sb:destroy() end end)

  it_bwrap("cannot create files anywhere but the working directory and its own /tmp", function()
    local home = os.getenv("HOME") or "/root"
    local name = unique("sandkit-escape")
    local targets = {
      outside .. "/" .. name,               -- a host directory beside the sandbox's
      home .. "/" .. name,
      "/tmp/" .. name .. "-host",          -- the host's /tmp, probed below
      "/var/tmp/" .. name, "/dev/shm/" .. name, "/usr/" .. name, "/usr/local/" .. name,
      "/etc/" .. name, "/opt/" .. name, "/" .. name, "/run/" .. name, "/lib/" .. name,
    }
    local script = {}
    for _, t in ipairs(targets) do
      script[#script + 1] = ("mkdir -p %s 2>/dev/null; echo x > %s 2>/dev/null"):format(
        sh_quote(t:match("^(.*)/[^/]*$")), sh_quote(t))
    end
    -- the sandbox's /tmp is its own: a file there is not the host's
    script[#script + 1] = "echo inside > /tmp/" .. name .. "-host; true"
    assert(sb:exec(table.concat(script, "\n")))
    for _, t in ipairs(targets) do assert.is_false(exists(t), "written on the host: " .. t) end
  end)

  it_bwrap("cannot climb out through cwd, .. or symlinks planted in the working directory", function()
    local name = unique("sandkit-climb")
    local victim = outside .. "/" .. name
    local rel = ("../"):rep(24) .. victim:sub(2)
    local r = assert(sb:exec(table.concat({
      "ln -s " .. sh_quote(outside) .. " abs_link",
      "ln -s " .. sh_quote(rel:match("^(.*)/[^/]*$")) .. " rel_link",
      "echo x > abs_link/" .. name .. "-a",
      "echo x > rel_link/" .. name .. "-b",
      "echo x > " .. sh_quote(rel),
      "cd ../../../../.. && echo x > " .. sh_quote(name .. "-c"),
      "true",
    }, "; ")))
    assert.equal(0, r.exit_code)
    for _, suffix in ipairs({ "-a", "-b", "" }) do assert.is_false(exists(victim .. suffix), victim .. suffix) end
    -- a cwd outside is the sandbox's own view of that path (if any)
    sb:exec("echo x > " .. sh_quote(name .. "-d"), nil, { cwd = outside })
    assert.is_false(exists(outside .. "/" .. name .. "-d"))
  end)

  it_bwrap("mounting, remounting and chroot tricks fail", function()
    local r = assert(sb:exec(table.concat({
      "mount -t tmpfs none /usr 2>/dev/null && echo MOUNTED",
      "mount -o remount,rw / 2>/dev/null && echo REMOUNTED",
      "mount -o remount,rw /usr 2>/dev/null && echo REMOUNTED_USR",
      "echo 1 > /proc/sys/kernel/sysrq 2>/dev/null && echo SYSCTL",
      "true",
    }, "; ")))
    assert.equal("", r.stdout)
  end)
end)

describe("bwrap: read_write_paths and read_only_paths", function()
  it_bwrap("a read_write_path is writable; its sibling is not", function()
    local base = tmp.dir()
    os.execute("mkdir -p " .. sh_quote(base .. "/rw") .. " " .. sh_quote(base .. "/sibling"))
    give(base .. "/rw")
    local sb = bwrap_sandbox { read_write_paths = { base .. "/rw" } }
    assert(sb:exec(("echo in > %s/rw/ok; echo out > %s/sibling/no; echo out > %s/no; true"):format(
      sh_quote(base), sh_quote(base), sh_quote(base))))
    sb:destroy()
    assert.is_true(exists(base .. "/rw/ok"), "positive control: the read_write_path took the write")
    assert.is_false(exists(base .. "/sibling/no"))
    assert.is_false(exists(base .. "/no"))
  end)

  -- A working directory (handed to the sandbox's user) whose dir/settings
  -- says "original", and a bwrap sandbox in it with dir read-only.
  local function read_only_conf(dir)
    local ws = tmp.dir() .. "/ws"
    os.execute("mkdir -p " .. sh_quote(ws .. "/" .. dir))
    write_file(ws .. "/" .. dir .. "/settings", "original")
    give(ws)
    return ws, bwrap_sandbox { working_directory = ws, read_only_paths = { ws .. "/" .. dir } }
  end

  it_bwrap("a read_only_path inside the working directory stays read-only", function()
    local ws, sb = read_only_conf("conf")
    local r = assert(sb:exec("cat conf/settings; echo changed > conf/settings; echo new > conf/new; rm -f conf/settings; echo rest > other"))
    sb:destroy()
    assert.equal("original", r.stdout:sub(1, 8))
    local f = assert(io.open(ws .. "/conf/settings"))
    assert.equal("original", f:read("a"))
    f:close()
    assert.is_false(exists(ws .. "/conf/new"))
    assert.is_true(exists(ws .. "/other"), "positive control: the working directory is writable")
  end)

  -- bwrap follows symlinks in a bind's source: a command that swaps a
  -- nested bind source for a relative symlink must not get the target
  -- mounted by the next command.
  it_bwrap("a nested read_write_path swapped for a symlink does not mount the host's /opt", function()
    local ws = tmp.dir() .. "/ws"
    os.execute("mkdir -p " .. sh_quote(ws .. "/a/data"))
    give(ws)
    local sb = bwrap_sandbox { working_directory = ws, read_write_paths = { ws .. "/a/data" } }
    local name = unique("sandkit-swap")
    -- exactly as many ../ as a/ is deep: the destination must resolve too
    local up = ("../"):rep(select(2, (ws .. "/a"):gsub("/", "")))
    assert(sb:exec("mv a a2 && mkdir a && ln -s " .. sh_quote(up .. "opt") .. " a/data"))
    local r, err = sb:exec("echo pwned > /opt/" .. name .. " 2>/dev/null; echo pwned > a/data/" .. name .. " 2>/dev/null; true")
    sb:destroy()
    local escaped = exists("/opt/" .. name)
    os.remove("/opt/" .. name)
    assert.is_false(escaped, "the host's /opt was writable from the sandbox")
    assert.truthy(r or err)
  end)

  it_bwrap("a command cannot move a nested read_only_path or a directory on its way", function()
    local ws, sb = read_only_conf("b/conf")
    local up = ("../"):rep(select(2, (ws .. "/b"):gsub("/", "")))
    local r = assert(sb:exec(table.concat({
      "mv b b2 2>/dev/null && echo MOVED_PARENT",
      "mv b/conf b/c2 2>/dev/null && echo MOVED_PATH",
      "rm -rf b 2>/dev/null; test -d b/conf || echo REMOVED",
      "ln -s " .. sh_quote(up .. "tmp") .. " b/conf 2>/dev/null && echo LINKED",
      "echo changed > b/conf/settings 2>/dev/null && echo WROTE",
      "true",
    }, "; ")))
    -- and again from a second command racing a background one
    local bg = assert(sb.processes:spawn("while :; do mv b b2 2>/dev/null && mv b2 b; done"))
    for _ = 1, 5 do
      local r2 = assert(sb:exec("echo changed > b/conf/settings 2>/dev/null && echo WROTE; " ..
        "echo changed > b2/conf/settings 2>/dev/null && echo WROTE2; true"))
      assert.equal("", r2.stdout)
    end
    bg:kill()
    sb:destroy()
    assert.equal("", r.stdout)
    local f = assert(io.open(ws .. "/b/conf/settings"))
    assert.equal("original", f:read("a"))
    f:close()
    assert.is_false(exists(ws .. "/b2/conf/settings"))
  end)

  it_bwrap("a nested read_only_path swapped on the host is refused, not mounted", function()
    local ws = tmp.dir() .. "/ws"
    local secret_dir = tmp.dir()
    local secret = unique("host-only-content")
    write_file(secret_dir .. "/secret", secret)
    os.execute("chmod 755 " .. sh_quote(secret_dir) .. "; chmod 644 " .. sh_quote(secret_dir .. "/secret"))
    os.execute("mkdir -p " .. sh_quote(ws .. "/b/conf"))
    give(ws)
    local sb = bwrap_sandbox { working_directory = ws, read_only_paths = { ws .. "/b/conf" } }
    -- someone outside the sandbox (or a race) swaps it: the symlink
    -- resolves to the host's /tmp as the source, and to the sandbox's /tmp
    -- (which exists) as the destination
    local up = ("../"):rep(select(2, (ws .. "/b"):gsub("/", "")))
    assert(os.execute(("cd %s && mv b b2 && mkdir b && ln -s %s b/conf"):format(sh_quote(ws), sh_quote(up .. "tmp"))))
    local r, err = sb:exec("cat " .. sh_quote(secret_dir .. "/secret") .. " 2>/dev/null; true")
    sb:destroy()
    assert.is_false((r and r.stdout or ""):find(secret, 1, true) ~= nil, "read a host file through the swap")
    assert.is_nil(r)
    assert.equal("SandboxError", err.kind)
    assert.truthy(err.message:find("symlink", 1, true))
  end)
end)

describe("bwrap: network", function()
  local socket = require "cqueues.socket"

  local function listener()
    local srv = socket.listen("127.0.0.1", 0)
    assert(srv:listen())
    local _, _, port = srv:localname()
    return srv, port
  end

  local function probe(port)
    -- bash's /dev/tcp needs no client program; curl as the second try
    return ("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo hello >&3' 2>/dev/null && echo CONNECTED; " ..
      "curl -s -m 2 -o /dev/null http://127.0.0.1:%d/ 2>/dev/null; echo curl=$?"):format(port, port)
  end

  -- The probe from a bwrap sandbox with allow_network: its result, and the
  -- connection the listener got (closed) or nil.
  local function probe_listener(allow_network)
    local srv, port = listener()
    local sb = bwrap_sandbox { allow_network = allow_network }
    local r = assert(sb:exec(probe(port), nil, { timeout = 20000 }))
    sb:destroy()
    local conn = srv:accept(0)
    if conn then conn:close() end
    srv:close()
    return r, conn
  end

  it_bwrap("a 127.0.0.1 listener is unreachable with allow_network = false", function()
    local r, conn = probe_listener(false)
    assert.is_nil(conn, "the listener got a connection from the sandbox")
    assert.is_nil(r.stdout:find("CONNECTED", 1, true), r.stdout)
    assert.is_nil(r.stdout:find("curl=0", 1, true), r.stdout)
  end)

  it_bwrap("positive control: the same probe connects with allow_network = true", function()
    local r, conn = probe_listener(true)
    assert.truthy(conn, "no connection: the probe cannot show an escape")
    assert.truthy(r.stdout:find("CONNECTED", 1, true), r.stdout)
  end)

  it_bwrap("has no interface but loopback", function()
    local sb = bwrap_sandbox()
    local r = assert(sb:exec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"))
    sb:destroy()
    assert.equal("lo\n", r.stdout)
  end)
end)

describe("bwrap: host processes", function()
  it_bwrap("cannot see, signal or read host processes", function()
    local host = sandkit.LocalSandbox { working_directory = tmp.dir() }
    local marker = ("sleep 94.%s%d"):format(procs.self_pid(), counter)
    local h = assert(host.processes:spawn("exec " .. marker))
    local hp = h.pid
    local sb = bwrap_sandbox()
    local r = assert(sb:exec(table.concat({
      -- a regex that is not itself the marker: our own command line must not match
      "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done | grep -c " ..
        sh_quote((marker:gsub("%.", "[.]"))),
      "kill -0 " .. hp .. " 2>/dev/null && echo SIGNALLED",
      "cat /proc/" .. hp .. "/environ 2>/dev/null && echo READ",
      "ls /proc | grep -c '^[0-9]'",
      "true",
    }, "; ")))
    sb:destroy()
    local lines = {}
    for l in r.stdout:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal("0", lines[1], "saw the host process")
    assert.is_nil(r.stdout:find("SIGNALLED", 1, true))
    assert.is_nil(r.stdout:find("READ", 1, true))
    assert.is_true(tonumber(lines[#lines]) < 10, "processes visible: " .. lines[#lines])
    assert.is_true(h:kill(), "the host process was still running")
    host:destroy()
  end)
end)

describe("bwrap: nothing outlives destroy", function()
  for _, how in ipairs({
    { "setsid", "setsid %s </dev/null >/dev/null 2>&1 &" },
    { "nohup", "nohup %s </dev/null >/dev/null 2>&1 &" },
    { "double fork", "( %s </dev/null >/dev/null 2>&1 & ) &" },
    { "SIGTERM/SIGHUP ignored", "( trap '' TERM HUP INT; %s ) </dev/null >/dev/null 2>&1 &" },
  }) do
    it_bwrap(how[1] .. " in a background process", function()
      local marker = ("sleep 95.%s%d"):format(procs.self_pid(), counter)
      counter = counter + 1
      local sb = bwrap_sandbox()
      assert(sb.processes:spawn(how[2]:format(marker) .. " exec sleep 300"))
      -- generous: a bwrap start on a machine loaded far past its cores
      -- seen once is enough: a second look can fall between the shell that
      -- names the marker and the exec of the probe itself
      local seen = procs.wait_for(function() return #procs.pids_matching(marker) > 0 end, 30)
      assert.is_true(seen, "the probe never ran")
      assert(sb:destroy())
      local ok = gone(marker)
      kill_leftovers(marker)
      assert.is_true(ok, "survived destroy: " .. marker)
    end)

    it_bwrap(how[1] .. " in an exec that returns at once", function()
      local marker = ("sleep 96.%s%d"):format(procs.self_pid(), counter)
      counter = counter + 1
      local sb = bwrap_sandbox()
      local r = assert(sb:exec(how[2]:format(marker) .. " echo started"))
      assert.equal("started\n", r.stdout)
      assert(sb:destroy())
      local ok = gone(marker)
      kill_leftovers(marker)
      assert.is_true(ok, "survived destroy: " .. marker)
    end)
  end
end)
