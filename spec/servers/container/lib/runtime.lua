-- The emulated container's life: its root directory, its init process under
-- bubblewrap, and stopping it.
--
-- The container's "/" is <container dir>/rootfs, a plain writable directory kept
-- across stop/start (the emulated filesystem layer). The host's /usr and /etc,
-- and the merged-/usr links, are bound read-only on top of it (the emulated
-- image), with a fresh /dev and /proc. Each start runs
--   setsid bwrap --unshare-pid --unshare-uts --unshare-ipc … -- sh -c READY cmd…
-- in its own session, so process-group kills aimed at the CLI never reach it.
-- bwrap's own init is PID 1 in the namespace when --init is given (Apple's init
-- forwards signals the same way); without --init the command itself is PID 1
-- (--as-pid-1), so like on Apple's VM a SIGTERM it does not handle is ignored.
-- Killing PID 1 of the namespace kills every process in it, exec'd ones included.

local host = require("host")

local M = {}

local BWRAP = "/usr/bin/bwrap"

-- Runs in the container before the command: reports READY (or why not) on fd 4.
local READY_SCRIPT = table.concat({
  'wd=$1; shift',
  'mkdir -p "$wd" 2>/dev/null',
  'cd "$wd" 2>/dev/null || { echo CHDIR >&4; exit 1; }',
  'command -v "$1" >/dev/null 2>&1 || { echo NOTFOUND >&4; exit 127; }',
  'echo READY >&4',
  'exec 4>&-',
  'exec "$@"',
}, "\n")

local host_layout -- cached list of { name, link_target | nil }

local function root_layout()
  if host_layout then return host_layout end
  local out = host.capture({ "/bin/sh", "-c",
    'for d in bin sbin lib lib32 lib64 libx32; do ' ..
    'if [ -L "/$d" ]; then echo "L $d $(readlink "/$d")"; ' ..
    'elif [ -d "/$d" ]; then echo "D $d"; fi; done' })
  host_layout = {}
  for kind, name, target in out:gmatch("(%u) (%S+) ?([^\n]*)") do
    host_layout[#host_layout + 1] = { name = name, link = kind == "L" and target or nil }
  end
  return host_layout
end

function M.rootfs(dir)
  return dir .. "/rootfs"
end

-- Mount points and standard directories, made on the host so that a read-only
-- root still has every place bwrap mounts onto.
function M.prepare_rootfs(dir, cfg)
  local root = M.rootfs(dir)
  local cmds = {
    "set -e",
    "umask 022",
    "mkdir -p " .. host.quote(root),
    "cd " .. host.quote(root),
    "mkdir -p dev proc usr etc home srv opt mnt run var",
    "mkdir -p -m 1777 tmp var/tmp",
    "mkdir -p -m 700 root",
  }
  for _, d in ipairs(root_layout()) do
    if d.link then
      cmds[#cmds + 1] = "[ -e " .. host.quote(d.name) .. " ] || [ -L " .. host.quote(d.name) ..
        " ] || ln -s " .. host.quote(d.link) .. " " .. host.quote(d.name)
    else
      cmds[#cmds + 1] = "mkdir -p " .. host.quote(d.name)
    end
  end
  local function mkpoint(path)
    if path:sub(1, 1) == "/" and not path:find("%.%.") then
      cmds[#cmds + 1] = "mkdir -p " .. host.quote("." .. path) .. " 2>/dev/null || true"
    end
  end
  mkpoint(cfg.initProcess.workingDirectory)
  for _, m in ipairs(cfg.mounts) do mkpoint(m.destination) end
  return host.run({ "/bin/sh", "-c", table.concat(cmds, "\n") })
end

local function has_option(list, opt)
  for _, o in ipairs(list or {}) do if o == opt then return true end end
  return false
end

local function bwrap_argv(dir, cfg, emu)
  local argv = { BWRAP, "--info-fd", "3", "--unshare-pid", "--unshare-uts", "--unshare-ipc" }
  local function add(...) for _, w in ipairs({ ... }) do argv[#argv + 1] = w end end
  if emu.network_none then add("--unshare-net") end
  add("--hostname", emu.hostname)
  if not cfg.useInit then add("--as-pid-1") end
  add(cfg.readOnly and "--ro-bind" or "--bind", M.rootfs(dir), "/")
  add("--ro-bind", "/usr", "/usr")
  -- merged-/usr links (bin -> usr/bin …) are already in rootfs (prepare_rootfs)
  for _, d in ipairs(root_layout()) do
    if not d.link then add("--ro-bind", "/" .. d.name, "/" .. d.name) end
  end
  add("--ro-bind", "/etc", "/etc", "--dev", "/dev", "--proc", "/proc")
  for _, m in ipairs(cfg.mounts) do
    if m.type.tmpfs then
      add("--tmpfs", m.destination)
    else
      local src = m.type.volume and emu.volume_paths[m.type.volume.name] or m.source
      add(has_option(m.options, "ro") and "--ro-bind" or "--bind", src, m.destination)
    end
  end
  add("--", "/bin/sh", "-c", READY_SCRIPT, "sh", cfg.initProcess.workingDirectory, cfg.initProcess.executable)
  for _, a in ipairs(cfg.initProcess.arguments) do add(a) end
  return argv
end

-- Env entries become `export 'K=V'` lines of a 0600 launcher file: values never
-- reach a command line. Names a shell cannot export are reported and skipped.
local function env_lines(environment)
  local lines, skipped = {}, {}
  local has_home = false
  for _, kv in ipairs(environment) do
    local k = kv:match("^([^=]*)=") or kv
    if k:match("^[A-Za-z_][A-Za-z0-9_]*$") then
      lines[#lines + 1] = "export " .. host.quote(kv:find("=") and kv or (kv .. "="))
      if k == "HOME" then has_home = true end
    else
      skipped[#skipped + 1] = k
    end
  end
  if not has_home then lines[#lines + 1] = "export HOME=/root" end
  return lines, skipped
end
M.env_lines = env_lines

-- Starts the init process. Returns { pid, monitor, start_time } or nil, reason,
-- detail, where reason is "notfound", "chdir" or "failed" (detail = bwrap's words).
function M.launch(dir, cfg, emu)
  local log = dir .. "/init.log"
  local launcher = dir .. "/.launch.sh"
  local lines = { "umask 022", "cd /" }
  local exports, skipped = env_lines(cfg.initProcess.environment)
  for _, l in ipairs(exports) do lines[#lines + 1] = l end
  lines[#lines + 1] = "exec 3>&1 4>&1 </dev/null 5>&- 6>&- 7>&- 8>&- 9>&-"
  lines[#lines + 1] = "/usr/bin/setsid " .. host.quote_all(bwrap_argv(dir, cfg, emu)) ..
    " >>" .. host.quote(log) .. " 2>&1 &"
  lines[#lines + 1] = 'echo "MONITOR $!"'
  host.write_file(launcher, table.concat(lines, "\n") .. "\n")
  for _, k in ipairs(skipped) do
    io.stderr:write("warning: emulated container cannot pass environment variable '" .. k .. "'\n")
  end

  local f = io.popen("exec /usr/bin/env -i /bin/sh " .. host.quote(launcher), "r")
  local pid, monitor, verdict
  for line in f:lines() do
    monitor = monitor or tonumber(line:match("^MONITOR (%d+)"))
    pid = pid or tonumber(line:match('"child%-pid": *(%d+)'))
    local word = line:match("^(%u+)$")
    if word == "READY" or word == "NOTFOUND" or word == "CHDIR" then verdict = word end
    if verdict and pid and monitor then break end
  end
  f:close()
  os.remove(launcher)

  if verdict == "READY" and pid then
    return { pid = pid, monitor = monitor, start_time = host.start_time(pid) }
  end
  -- The init is gone or going; make sure of it before reporting.
  if pid then host.kill(pid, "KILL") end
  if verdict == "NOTFOUND" then return nil, "notfound" end
  if verdict == "CHDIR" then return nil, "chdir" end
  local text = host.read_file(log) or ""
  local last = text:match("bwrap: ([^\n]*)\n?$") or text:match("([^\n]+)\n?$") or "init process exited"
  return nil, "failed", last
end

function M.alive(st)
  return st and st.pid ~= nil and host.alive(st.pid, st.start_time)
end

-- The process a stop signal goes to: the command (PID 2 under bwrap's init), or
-- the namespace's PID 1 itself when the command is PID 1.
local function signal_target(st, use_init)
  if not use_init then return st.pid end
  local kids = host.children(st.pid)
  return kids[1]
end

local function finish(st)
  -- PID 1 gone means the namespace is gone; the bwrap monitor follows it.
  if st.monitor and host.alive(st.monitor) then
    if not host.wait_until(function() return not host.alive(st.monitor) end, 1) then
      host.kill(st.monitor, "KILL")
    end
  end
end

function M.kill_now(st)
  if M.alive(st) then
    host.kill(st.pid, "KILL")
    host.wait_until(function() return not M.alive(st) end, 5)
  end
  finish(st)
end

-- Sends `signal`, waits up to `grace` seconds, then kills the namespace.
function M.stop(st, use_init, signal, grace)
  if not M.alive(st) then finish(st) return end
  local target = signal_target(st, use_init)
  if target and signal ~= "KILL" then host.kill(target, signal) end
  if signal == "KILL" or not host.wait_until(function() return not M.alive(st) end, grace) then
    M.kill_now(st)
  end
  finish(st)
end

return M
