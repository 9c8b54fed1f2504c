--- Descriptor of the local provider (LocalSandbox).
local options = require "sandkit.options"

return {
  id = "local",
  name = "LocalSandbox",
  description = "Runs commands as local processes in a working directory, optionally isolated with bubblewrap.",
  options = options.with_common {
    working_directory = { type = "string", default = "./.sandbox", non_empty = true,
      description = "Directory commands run in; created on start (~ expanded, relative to the current directory)." },
    timeout = { type = "number", min = 0,
      description = "Default per-command timeout in milliseconds (none when absent)." },
    isolation = { type = "string", enum = { "none", "bwrap" }, default = "none",
      description = "none: plain processes; bwrap: bubblewrap with a read-only system, writable working directory and private /tmp." },
    allow_network = { type = "boolean", default = false, description = "bwrap: keep the host network (default: none)." },
    read_only_paths = { type = "array", description = "bwrap: extra host paths visible read-only." },
    read_write_paths = { type = "array", description = "bwrap: extra host paths visible read-write." },
    user = { type = { "integer", "string" }, default = 65534,
      description = "bwrap run by root: the unprivileged user (uid or name, never root) commands run as; default nobody (65534). Non-root callers' commands run as the caller." },
  },
}
