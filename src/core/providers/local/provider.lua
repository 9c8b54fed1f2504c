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
    timeout = { type = "integer", ms = true, zero = "no timeout",
      description = "Default per-command timeout in milliseconds (none when absent or 0)." },
    isolation = { type = "string", enum = { "none", "bwrap" }, default = "none",
      flag = { name = "isolation", arg = "MODE", help = "none (default) or bwrap" },
      description = "none: plain processes; bwrap: bubblewrap with a read-only system, writable working directory and private /tmp." },
    allow_network = { type = "boolean", default = false, description = "bwrap: keep the host network (default: none)." },
    read_only_paths = { type = "array",
      description = "bwrap: extra host paths visible read-only; a missing one fails start() (in both modes)." },
    read_write_paths = { type = "array",
      description = "bwrap: extra host paths visible read-write; a missing one fails start() (in both modes)." },
    inherit_env = { type = "array", check = env_names,
      description = "Names of host environment variables passed through to commands (e.g. { \"HOME\", \"LANG\" }); the sandbox env and a command's env override them." },
    user = { type = { "integer", "string" }, default = 65534,
      description = "bwrap run by root: the unprivileged user (uid or name, never root) commands run as; default nobody (65534). Non-root callers' commands run as the caller. Refused with isolation none." },
  },
}
