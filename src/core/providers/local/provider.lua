--- Descriptor of the local provider (LocalSandbox).
local options = require "sandkit.options"

-- inherit_env entries: variable names as env accepts them.
local function env_names(v)
  for i, name in ipairs(v) do
    if name == "" then return ("[%d] is an empty variable name"):format(i) end
    if name:find("=", 1, true) then
      return ("[%d] variable name '%s' contains '='"):format(i, options.shown(name))
    end
  end
end

-- Resource limits: Docker's names and bounds, whole numbers with units.
local function at_least(min, unit)
  return function(v)
    if v < min then return ("must be at least %d %s"):format(min, unit) end
  end
end

local function pids_check(v)
  if v < -1 then return "must be a number of processes, at least 1 (0 or -1: no limit)" end
end

local function period_check(v)
  if v < 1000 or v > 1000000 then return "must be from 1000 to 1000000 microseconds (1 ms to 1 s)" end
end

return {
  id = "local",
  name = "LocalSandbox",
  description = "Runs commands as local processes in a working directory, optionally isolated with bubblewrap.",
  -- sb.fs: fs.lua beside this file
  filesystem = "own",
  options = options.with_common {
    working_directory = { type = "string", default = "./.sandbox", non_empty = true,
      flag = { name = "workdir", arg = "DIR", host_dir = true,
        help = "the sandbox's working directory, kept afterwards (default: a fresh temporary directory, removed after)",
        -- bwrap run by root: commands run as `user`, who must be able to
        -- enter a temporary parent to reach the directory inside
        temp_mode = function(o) return o.isolation == "bwrap" and "711" or nil end },
      description = "Directory commands run in; created on start (~ expanded, relative to the current directory)." },
    timeout = options.command_timeout("Default per-command timeout in milliseconds (none when absent or 0)."),
    isolation = { type = "string", enum = { "none", "bwrap" }, default = "none",
      flag = { name = "isolation", arg = "MODE", help = "none (default) or bwrap" },
      description = "none: plain processes; bwrap: bubblewrap with a read-only system, writable working directory and private /tmp." },
    allow_network = { type = "boolean", default = false, description = "bwrap: keep the host network (without it, commands have none)." },
    read_only_paths = { type = "array",
      description = "bwrap: extra host paths visible read-only; a missing one fails start() (in both modes)." },
    read_write_paths = { type = "array",
      description = "bwrap: extra host paths visible read-write; a missing one fails start() (in both modes)." },
    inherit_env = { type = "array", check = env_names,
      description = "Names of host environment variables passed through to commands (e.g. { \"HOME\", \"LANG\" }); the sandbox env and a command's env override them." },
    memory = { type = "integer", check = at_least(6 * 1024 * 1024, "bytes (6 MiB, Docker's minimum)"),
      description = "Bytes of memory the sandbox's processes may use together (no swap beyond it), through its "
        .. "cgroup; a command the kernel kills for it has oom_killed = true. start() fails where cgroups cannot enforce it." },
    pids_limit = { type = "integer", default = 4096, check = pids_check,
      description = "Processes and threads the sandbox may have at once, through its cgroup (a fork storm stays "
        .. "inside); 0 or -1: no limit. Where cgroups cannot enforce it, only a value given fails start()." },
    cpu_quota = { type = "integer", check = at_least(1000, "microseconds"),
      description = "Microseconds of CPU time the sandbox may use per cpu_period (50000 with the default period: "
        .. "half a CPU), through its cgroup; start() fails where cgroups cannot enforce it." },
    cpu_period = { type = "integer", default = 100000, check = period_check,
      description = "Length of the CPU accounting period in microseconds for cpu_quota (1000 to 1000000)." },
    user = { type = { "integer", "string" }, default = 65534,
      description = "bwrap run by root: the unprivileged user (uid or name, never root; 65534 is nobody) commands run as. Non-root callers' commands run as the caller. Refused with isolation none." },
  },
}
