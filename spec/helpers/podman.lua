--- A private Podman Engine API service for the DockerSandbox specs
-- (docs/protocols/docker.md §7): its own storage (--root, --runroot and
-- --tmpdir in a fresh temporary directory, so a second `make test` beside
-- this one shares nothing), its own containers.conf, a local busybox image
-- made with no registry (busybox-static's binary as the whole root
-- filesystem, piped to `podman import`), the service on a unix socket, and
-- a teardown that removes every container, stops the service by its PID
-- and ends what it left behind (conmon and its exit commands), found by
-- the private directory in their command lines.
--
-- Why the containers.conf: crun fails on this kind of machine (cgroups in
-- hybrid mode, no CAP_SYS_RESOURCE to raise limits), so runc; nofile and
-- nproc are given explicitly (Podman otherwise copies the host's, which
-- runc cannot set here); no network namespace setup (nothing shared with
-- the host's CNI state); exec sessions are kept 60 s after they end, not
-- Podman's 300 s, so a suite of a thousand execs does not keep a thousand
-- conmon processes waiting (10 s was too short on a loaded machine: the
-- exec inspect after a command's end found its session gone).
local files = require "helpers.files"
local shell = require "helpers.sh"

local M = {}

M.IMAGE = "localhost/sandkit-busybox:test"

-- A container command that ends on the SIGTERM of a stop. Upstream's
-- default, `sleep infinity` as PID 1, has no handler, so the kernel drops
-- the signal and every stop waits out the 10 s grace for the SIGKILL; the
-- specs that stop and start many times (conformance's reconnection) use
-- this instead. The default's own stop is checked in spec/docker_spec.lua.
M.QUICK_STOP = { "sh", "-c", "trap 'exit 0' TERM; sleep infinity & wait" }

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
M.q = q

local sh = shell.capture

local function now() return require("sandkit.core").now() end

local function have(cmd) return select(2, sh("command -v " .. cmd .. " >/dev/null 2>&1")) == 0 end

--- Whether the specs can run here; when not, the reason. Under CI=true a
-- missing tool is a failure of the run (mk/docker.mk installs them).
function M.available()
  for _, cmd in ipairs({ "podman", "runc", "busybox", "curl" }) do
    if not have(cmd) then return false, cmd .. " is not installed (make deps installs it)" end
  end
  local uid = sh("id -u"):gsub("%s+", "")
  if uid ~= "0" then return false, "the Podman service of the specs runs as root" end
  return true
end

--- For a spec file: true when the specs can run; else false, after
-- marking `what` pending with the reason, or raising under CI=true. The
-- Podman-backed suites run against the main build only (`make test`):
-- under `make test-asan` and `make test-portable` (SANDKIT_BUILD names
-- another build) the daemon's own work would make most of their time
-- again, and spec/docker_offline_spec.lua's fake daemon drives the
-- client's code there (README's block and the secrets row still use the
-- service: helpers.providers.docker).
function M.usable(pending, what)
  local build = os.getenv("SANDKIT_BUILD")
  if build and build ~= "" and build ~= "build" then
    pending(what .. ": the Podman-backed specs run against the main build only (make test), not " .. build)
    return false
  end
  local ok, why = M.available()
  if ok then return true end
  if os.getenv("CI") == "true" then error(what .. " cannot run: " .. why) end
  pending(what .. ": " .. why)
  return false
end

local Env = {}
Env.__index = Env

local CONF = [[
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
netns = "none"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
exit_command_delay = 60
]]

--- The podman command line with this service's storage.
function Env:podman(args)
  return ("CONTAINERS_CONF=%s podman --root %s --runroot %s --tmpdir %s %s"):format(q(self.conf), q(self.root),
    q(self.runroot), q(self.tmpdir), args)
end

--- Runs podman on this service's storage: output, exit code.
function Env:run(args) return sh(self:podman(args) .. " 2>&1") end

--- GET/POST on the socket with curl: body, HTTP status.
function Env:api(method, path, body)
  local out = sh(("curl -s -m 30 -X %s --unix-socket %s -H 'Content-Type: application/json' %s -w '\\n%%{http_code}' %s")
    :format(method, q(self.socket), body and ("-d " .. q(body)) or "", q("http://d" .. path)))
  local resp, status = out:match("^(.*)\n(%d+)$")
  return resp or out, tonumber(status)
end

local function wait_for(what, deadline_ms, fn)
  local limit = now() + deadline_ms
  while true do
    local v = fn()
    if v then return v end
    if now() > limit then error("timed out waiting for " .. what, 2) end
    os.execute("sleep 0.05")
  end
end
M.wait_for = wait_for

--- A fresh service. opts.image (default true): import the busybox image.
function M.new(opts)
  opts = opts or {}
  local dir = sh("mktemp -d /tmp/sandkit-podman.XXXXXX"):gsub("%s+$", "")
  local self = setmetatable({ dir = dir, root = dir .. "/root", runroot = dir .. "/run", tmpdir = dir .. "/tmp",
    conf = dir .. "/containers.conf", socket = dir .. "/podman.sock", log = dir .. "/service.log", made = {} }, Env)
  self.docker_host = "unix://" .. self.socket
  os.execute("mkdir -p " .. q(self.root) .. " " .. q(self.runroot) .. " " .. q(self.tmpdir))
  files.write(self.conf, CONF)
  if opts.image ~= false then self:import_image(M.IMAGE) end
  self:start_service()
  return self
end

--- Imports the busybox root filesystem as image `name`.
function Env:import_image(name)
  local rootfs = self.dir .. "/rootfs"
  local script = table.concat({
    "set -e",
    "mkdir -p " .. q(rootfs .. "/bin") .. " " .. q(rootfs .. "/tmp") .. " " .. q(rootfs .. "/workspace"),
    "cp \"$(command -v busybox)\" " .. q(rootfs .. "/bin/busybox"),
    "for a in $(busybox --list); do [ \"$a\" = busybox ] || ln -sf busybox " .. q(rootfs .. "/bin") .. "/\"$a\"; done",
    "tar -C " .. q(rootfs) .. " -c . | " .. self:podman("import --quiet - " .. q(name)) .. " >/dev/null",
  }, "\n")
  os.execute("mkdir -p " .. q(rootfs .. "/bin"))
  -- Debian's busybox-static has no printenv applet; the conformance suite
  -- uses it (coreutils' behaviour: each value, exit 1 for an unset name)
  files.write(rootfs .. "/bin/printenv", table.concat({
    "#!/bin/sh",
    "[ $# -eq 0 ] && exec env",
    "rc=0",
    [[for n; do eval "if [ \"\${$n+x}\" = x ]; then printf '%s\\n' \"\$$n\"; else rc=1; fi"; done]],
    "exit $rc",
    "",
  }, "\n"))
  os.execute("chmod 755 " .. q(rootfs .. "/bin/printenv"))
  local out, code = sh("sh -c " .. q(script) .. " 2>&1")
  assert(code == 0, "podman import failed: " .. out)
end

-- The service runs under a keeper shell that holds a pipe from this
-- process: if the spec dies without its teardown (a crash, run.sh's
-- timeout), the pipe closes and the keeper removes the containers and
-- stops the service, so nothing of a failed run keeps running.
function Env:start_service()
  local pidfile = self.dir .. "/service.pid"
  local keeper = table.concat({
    self:podman("system service --time=0 " .. q(self.docker_host)) .. " >" .. q(self.log) .. " 2>&1 &",
    "echo $! > " .. q(pidfile),
    "cat >/dev/null",
    self:podman("rm -a -f -t 0") .. " >/dev/null 2>&1",
    "kill -TERM $(cat " .. q(pidfile) .. ") 2>/dev/null",
  }, "\n")
  self.keeper = assert(io.popen("sh -c " .. q(keeper), "w"))
  self.pid = wait_for("the service's pid", 30000, function()
    local f = io.open(pidfile, "r")
    local pid = f and tonumber(f:read("*a"))
    if f then f:close() end
    return pid
  end)
  wait_for("the Podman service on " .. self.socket, 30000, function()
    local body = self:api("GET", "/_ping")
    return body == "OK"
  end)
end

local function alive(pid)
  local f = io.open("/proc/" .. pid .. "/stat", "r")
  if not f then return false end
  local st = f:read("*a")
  f:close()
  return not st:match("^%d+ %b() Z")
end

--- Stops the service by its PID (SIGTERM, then SIGKILL after 10 s).
function Env:stop_service()
  if not self.pid then return end
  local pid = self.pid
  self.pid = nil
  os.execute("kill -TERM " .. pid .. " 2>/dev/null")
  local ok = pcall(wait_for, "the Podman service to exit", 10000, function() return not alive(pid) end)
  if not ok then os.execute("kill -KILL " .. pid .. " 2>/dev/null") end
end

-- The keeper's pipe closes: it finds nothing left to do.
function Env:close_keeper()
  if self.keeper then
    self.keeper:close()
    self.keeper = nil
  end
end

--- PIDs of processes whose command line names this service's directory
-- (conmon, its exit commands, a service), the caller's excepted.
function Env:leftovers()
  local out = {}
  local list = sh("ls /proc")
  for pid in list:gmatch("%d+") do
    local f = io.open("/proc/" .. pid .. "/cmdline", "rb")
    local cmd = f and f:read("*a")
    if f then f:close() end
    if cmd and cmd:find(self.dir, 1, true) and alive(pid) then
      out[#out + 1] = { pid = tonumber(pid), cmdline = cmd:gsub("%z", " ") }
    end
  end
  return out
end

--- The containers of this service still present (podman ps -a).
function Env:containers()
  local out = self:run("ps -aq")
  local ids = {}
  for id in out:gmatch("%x+") do ids[#ids + 1] = id end
  return ids
end

--- A DockerSandbox on this service, with its busybox image unless opts
-- names another; Env:close destroys it.
function Env:sandbox(opts)
  opts = opts or {}
  opts.docker_host = opts.docker_host or self.docker_host
  opts.image = opts.image or M.IMAGE
  return self:track(require("sandkit").DockerSandbox(opts))
end

--- Has Env:close destroy sb too (a clone, say). Returns sb.
function Env:track(sb)
  self.made[#self.made + 1] = sb
  return sb
end

--- Destroys the sandboxes Env:sandbox made and Env:track was given.
function Env:destroy_sandboxes()
  for _, sb in ipairs(self.made) do pcall(sb.destroy, sb) end
  self.made = {}
end

--- A suite's end: its sandboxes destroyed, the service torn down, and an
-- error naming any container that outlived its sandbox's destroy.
function Env:close()
  self:destroy_sandboxes()
  local left = self:containers()
  self:teardown()
  assert(#left == 0, "containers left behind: " .. table.concat(left, " "))
end

--- Removes every container, stops the service, ends what is left (by
-- PID) and removes the directory. Returns what had to be killed.
function Env:teardown()
  if self.torn then return {} end
  self.torn = true
  self:run("rm -a -f -t 0")
  self:stop_service()
  self:close_keeper()
  local killed = {}
  for _, p in ipairs(self:leftovers()) do
    os.execute("kill -KILL " .. p.pid .. " 2>/dev/null")
    killed[#killed + 1] = p.cmdline
  end
  -- storage mounts (overlay) before the files go
  for line in io.lines("/proc/mounts") do
    local mnt = line:match("^%S+ (%S+)")
    if mnt and mnt:sub(1, #self.dir) == self.dir then os.execute("umount -l " .. q(mnt) .. " 2>/dev/null") end
  end
  os.execute("rm -rf " .. q(self.dir))
  return killed
end

return M
