---@meta sandkit
-- LuaLS type stub for editors (not loaded at run time). Point your
-- workspace's `Lua.workspace.library` at this folder. The reference is
-- docs/ (docs/api.md first); this mirrors it.

-- Constructor options: one class per provider, generated from its
-- descriptor by `make generated` (tools/generate.lua); spec/meta_spec.lua
-- checks that they list every option sandkit.providers() describes, with
-- its type.

-- BEGIN generated: provider options (make generated, from the descriptors)
---@class sandkit.SandboxOptions  options every provider accepts
---@field env? table<string, string|number|boolean> Environment variables for every command (names to string values).
---@field id? string Sandbox id; a fresh one is generated when absent.
---@field instructions? string|fun(ctx: { default_instructions: string, request_context: any, sandbox: sandkit.Sandbox }): string Text describing the sandbox to an agent, or function({ default_instructions, request_context, sandbox }) returning it.
---@field max_output_bytes? integer exec's max_output_bytes for commands that give none: bytes of stdout and of stderr kept in a result; past it the command keeps running, its output is drained, the result has truncated = true. Default: 67108864 (64 MiB).
---@field on_destroy? fun(ctx: { sandbox: sandkit.Sandbox }) Hook called with { sandbox } before destroy.
---@field on_start? fun(ctx: { sandbox: sandkit.Sandbox }) Hook called with { sandbox } after each start; an error fails the start.
---@field on_stop? fun(ctx: { sandbox: sandkit.Sandbox }) Hook called with { sandbox } before stop.

---@class sandkit.LocalSandboxOptions: sandkit.SandboxOptions  Runs commands as local processes in a working directory, optionally isolated with bubblewrap.
---@field allow_network? boolean bwrap: keep the host network (without it, commands have none). Default: false.
---@field cpu_period? integer Length of the CPU accounting period in microseconds for cpu_quota (1000 to 1000000). Default: 100000.
---@field cpu_quota? integer Microseconds of CPU time the sandbox may use per cpu_period (50000 with the default period: half a CPU), through its cgroup; start() fails where cgroups cannot enforce it.
---@field inherit_env? string[] Names of host environment variables passed through to commands (e.g. { "HOME", "LANG" }); the sandbox env and a command's env override them.
---@field isolation? "none"|"bwrap" none: plain processes; bwrap: bubblewrap with a read-only system, writable working directory and private /tmp. Default: none.
---@field memory? integer Bytes of memory the sandbox's processes may use together (no swap beyond it), through its cgroup; a command the kernel kills for it has oom_killed = true. start() fails where cgroups cannot enforce it.
---@field pids_limit? integer Processes and threads the sandbox may have at once, through its cgroup (a fork storm stays inside); 0 or -1: no limit. Where cgroups cannot enforce it, only a value given fails start(). Default: 4096.
---@field read_only_paths? string[] bwrap: extra host paths visible read-only; a missing one fails start() (in both modes).
---@field read_write_paths? string[] bwrap: extra host paths visible read-write; a missing one fails start() (in both modes).
---@field timeout? integer Default per-command timeout in milliseconds (none when absent or 0).
---@field user? integer|string bwrap run by root: the unprivileged user (uid or name, never root; 65534 is nobody) commands run as. Non-root callers' commands run as the caller. Refused with isolation none. Default: 65534.
---@field working_directory? string Directory commands run in; created on start (~ expanded, relative to the current directory). Default: ./.sandbox.

---@class sandkit.PlatformSandboxOptions: sandkit.SandboxOptions  Runs commands in a Mastra Platform sandbox through the workspace proxy (REST + one WebSocket per command); stop is an alias of destroy.
---@field access_token? string Platform access token (else MASTRA_PLATFORM_ACCESS_TOKEN; required, an empty value counts as missing). Never shown in errors, info or logs.
---@field acting_user_id? string Sent as x-acting-user-id (trimmed) on every request: user attribution, not authorization.
---@field base_url? string Workspace proxy base URL (tests, private deployments); else MASTRA_WORKSPACE_PROXY_URL, else MASTRA_PLATFORM_REGION (us, eu: https://workspaces.<region>.mastra.ai), else https://workspaces.mastra.ai.
---@field ca_file? string Tests only: PEM bundle to verify the proxy's and the exec endpoint's certificates against.
---@field environment_id? string Environment new sandboxes are provisioned in (else MASTRA_ENVIRONMENT_ID); required unless sandbox_id is given.
---@field handshake_timeout_ms? integer Exec socket handshake deadline for commands without a timeout (upstream: 30000). Default: 30000.
---@field id? string Sandbox id, sent at create as the recovery key (a stable id is restored from the platform's checkpoint); generated when absent.
---@field idle_timeout_minutes? number Idle window before the platform may destroy the sandbox (sent at create).
---@field insecure_skip_verify? boolean Tests only: accept any TLS certificate. Default: false.
---@field max_response_bytes? integer Largest control-plane response body accepted, in bytes (the proxy's JSON answers are kilobytes). A larger body, or a Content-Length above it, fails the request with ResponseTooLargeError (fields limit, method, path) before more is read. Default: 16777216 (16 MiB).
---@field network_isolation? "ISOLATED"|"PRIVATE" ISOLATED (platform default): outbound internet only; PRIVATE: joins the environment's private network.
---@field project_id? string Project id (else MASTRA_PROJECT_ID; required, an empty value counts as missing).
---@field request_timeout_ms? integer Timeout of each control-plane request (upstream: 60000). Default: 60000.
---@field retry_delays_ms? integer[] Delays before each retry of a create answered with a 5xx (two delays: 3 attempts; {}: none). Default: { 2000, 4000 }.
---@field sandbox_id? string Platform sandbox id to reattach to (info().metadata.sandbox_id); a dead one is replaced by a fresh sandbox. Not inherited by clone().
---@field stdin_frames? boolean Background processes keep stdin open and send_stdin sends binary [0x00]+bytes frames (an extension served by the reference server; the spec defines none). false: stdin is closed at once and send_stdin fails. Default: true.
---@field timeout? integer Default per-command timeout in milliseconds, enforced by the client (none when absent or 0).
---@field working_directory? string Default cwd of commands inside the sandbox, passed as is (not created).

---@class sandkit.ModalSandboxOptions: sandkit.SandboxOptions  Runs commands in a Modal sandbox (gRPC over HTTP/2); stop snapshots the filesystem, start reconnects by name.
---@field app_name? string Modal App the sandbox belongs to (created if missing). Default: mastra.
---@field base_image? string Registry image the sandbox is created from when there is no snapshot. Default: ubuntu:22.04.
---@field ca_file? string PEM file of the certificate authorities to trust for TLS (control plane and task router), e.g. a private deployment or a TLS-intercepting proxy; default: the system's (libcurl reads no environment variable for this).
---@field id? string The sandbox name: start() reconnects to a running sandbox of that name; generated when absent.
---@field max_response_bytes? integer Largest gRPC response message accepted, in bytes (the SDKs allow up to 104857600). A length prefix above it ends the call at once with ResponseTooLargeError (fields limit, rpc); output streams are many messages and are not limited by it. Default: 16777216 (16 MiB).
---@field rpc_timeout_ms? integer Deadline of each control-plane call attempt, in ms (default none, as the SDK; 0: none); long polls get it on top of their poll time.
---@field server_url? string Control-plane URL (else MODAL_SERVER_URL, else the profile, else https://api.modal.com:443).
---@field timeout_ms? integer Sandbox lifetime in milliseconds (Modal's timeout: a multiple of 1000, at most 4294967295000, since Modal takes whole seconds in 32 bits). Default: 300000.
---@field token_id? string Modal token id (else MODAL_TOKEN_ID, else the active profile of ~/.modal.toml: MODAL_CONFIG_PATH, MODAL_PROFILE).
---@field token_secret? string Modal token secret (else MODAL_TOKEN_SECRET, else the active profile of ~/.modal.toml). Never shown in errors.
---@field workdir? string Working directory of the sandbox (absolute); commands start there unless given cwd.

---@class sandkit.AppleContainerSandboxOptions: sandkit.SandboxOptions  Local OCI Linux container sandbox powered by Apple container
---@field arch? string Image architecture for multi-arch images
---@field cap_add? string[] Linux capabilities to add
---@field cap_drop? string[] Linux capabilities to drop
---@field command? string[] Container init command. Must keep the container alive for exec-based command execution. Default: { "sleep", "infinity" }.
---@field container_binary? string Path or name for the Apple container CLI. Default: container.
---@field cpus? number|string Number of CPUs to allocate
---@field delete_on_destroy? boolean Delete the Apple container on destroy. Default: true.
---@field dns? string[] DNS nameserver IPs
---@field dns_search? string[] DNS search domains
---@field image? string OCI image to use. Default: node:22-slim.
---@field init? boolean Enable Apple's init process in the container. Default: true.
---@field labels? table<string, string> Container labels (the mastra.sandbox labels are always added)
---@field memory? string Memory allocation, for example 1G
---@field mounts? string[] Raw Apple container --mount specs
---@field name? string Apple container name. Defaults to the sandbox ID.
---@field network? string Apple container network attachment spec
---@field no_dns? boolean Do not configure DNS in the container. Default: false.
---@field os? string Operating system for multi-platform images
---@field platform? string OCI platform, for example linux/arm64
---@field published_ports? string[] Port publish specs
---@field published_sockets? string[] Socket publish specs
---@field readonly_rootfs? boolean Mount the container root filesystem as read-only. Default: false.
---@field rosetta? boolean Enable Rosetta in the container. Default: false.
---@field ssh? boolean Forward the host SSH agent socket. Default: false.
---@field timeout? integer Timeout of each command that gives none, in milliseconds (0: none), enforced inside the container (124 on expiry); also bounds each lifecycle CLI call. Default: 300000.
---@field tmpfs? string[] tmpfs destination paths (container paths only, for example /tmp)
---@field virtualization? boolean Expose virtualization capabilities to the container. Default: false.
---@field volumes? table<string, string> Host-to-container bind mounts (host path -> container path)
---@field working_dir? string Working directory inside the container (deprecated alias of working_directory). Default: /workspace.
---@field working_directory? string Working directory inside the container (wins over working_dir). Default: /workspace.

---@class sandkit.DockerSandboxOptions: sandkit.SandboxOptions  Local container sandbox powered by Docker (Docker Engine API; Docker or Podman)
---@field api_timeout? integer Bound on each Engine API request in milliseconds (not on commands; a pull has 10 minutes). Default: 60000.
---@field cap_add? string[] Linux capabilities to add
---@field cap_drop? string[] Linux capabilities to drop
---@field command? string[] Container command; it must keep the container running (commands run through exec). Default: { "sleep", "infinity" }.
---@field cpu_period? integer CPU period in microseconds
---@field cpu_quota? integer CPU quota in microseconds per period (-1: none)
---@field cpu_shares? integer CPU shares (relative weight)
---@field docker_host? string Daemon address as DOCKER_HOST takes it (unix:///path, tcp://host:port; TLS from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH); without it or DOCKER_HOST, unix:///var/run/docker.sock
---@field image? string Docker image to use. Default: node:22-slim.
---@field labels? table<string, string> Container labels (mastra.sandbox and mastra.sandbox.id are always set)
---@field memory? integer Memory limit in bytes
---@field memory_swap? integer Total memory plus swap in bytes (-1: unlimited swap)
---@field name? string Container name (sanitised as upstream). Defaults to the sandbox ID.
---@field network? string Docker network to join (HostConfig.NetworkMode)
---@field pids_limit? integer Maximum number of processes in the container (0 or -1: unlimited)
---@field ports? (integer|{ port: integer, host_port?: integer, host_ip?: string, protocol?: "tcp"|"udp"|"sctp" })[] Container ports to publish: numbers, or { port, host_port, host_ip, protocol } (host_ip 127.0.0.1, protocol tcp, host_port chosen by the engine unless given); see sb:get_port_url()
---@field privileged? boolean Run in privileged mode. Default: false.
---@field pull? "missing"|"never" missing: pull the image when it is not present locally; never: fail instead. Default: missing.
---@field readonly_rootfs? boolean Mount the container root filesystem read-only
---@field security_opt? string[] Docker security options
---@field timeout? integer Timeout of each command that gives none, in milliseconds (0: none). Default: 300000.
---@field tmpfs? table<string, string> tmpfs mounts: container path -> mount options
---@field ulimits? { name: string, soft: integer, hard: integer }[] Ulimits: { { name = "nofile", soft = 1024, hard = 2048 }, ... }
---@field volumes? table<string, string> Host-to-container bind mounts (host path -> container path)
---@field working_dir? string Working directory inside the container (upstream's workingDir). Default: /workspace.
---@field working_directory? string Working directory inside the container (wins over working_dir). Default: /workspace.

---@alias sandkit.ProviderId "local"|"platform"|"modal"|"apple-container"|"docker"
---@alias sandkit.AnySandboxOptions sandkit.LocalSandboxOptions|sandkit.PlatformSandboxOptions|sandkit.ModalSandboxOptions|sandkit.AppleContainerSandboxOptions|sandkit.DockerSandboxOptions
-- END generated: provider options

-- BEGIN generated: error kinds (make generated, from src/core/error.h)
---@alias sandkit.ErrorKind
---| "ConfigError" misuse (raised): an options table has an unknown key, or an option a wrong type or value; or a provider's configuration is missing or wrong
---| "ArgumentError" misuse (raised): an argument of the wrong type or value (`bad argument #n to 'f' (...)`)
---| "IsolationUnavailableError" misuse (raised by the constructor): the isolation asked for cannot run on this machine; or (from `start()`) a LocalSandbox limit it cannot enforce (`key`)
---| "SandboxError" the sandbox could not do it (a working directory it cannot reach, a hook that failed, ...)
---| "SandboxNotReadyError" the sandbox is not running (destroyed, or being torn down)
---| "SandboxDestroyedError" Platform: the sandbox was destroyed under the command
---| "SandboxExecTransportError" Platform: the command's WebSocket failed
---| "PlatformApiError" Platform: the workspace proxy answered with an error (`body`: its first 64 KiB)
---| "ModalError" Modal: a call failed (`sdk_error`: the JS SDK's class, e.g. NotFoundError)
---| "ModalFilesystemError" Modal: a file operation failed in the sandbox
---| "ContainerCliError" Apple container: the `container` CLI failed
---| "DockerApiError" Docker: the daemon answered with an error, or its exec stream was not the protocol (`malformed`)
---| "TimeoutError" a request or wait ran past its deadline
---| "NetworkError" a connection failed or dropped
---| "HttpTransportError" an HTTP request failed below HTTP (files of PlatformFilesystem)
---| "ResponseTooLargeError" a server's answer was larger than the provider's max_response_bytes
---| "UnsupportedError" the provider cannot do it (e.g. stdin with Platform `stdin_frames = false`)
---| "ProcessExitedError" the process has exited (send_stdin)
---| "OutOfMemoryError" memory ran out (never raised)
---| "IOError" a write failed (`buf:write_to`)
---| "FileNotFoundError" files: no such file
---| "DirectoryNotFoundError" files: no such directory
---| "FileExistsError" files: the path exists
---| "IsDirectoryError" files: the path is a directory
---| "NotDirectoryError" files: a path component is not a directory
---| "DirectoryNotEmptyError" files: the directory is not empty
---| "PermissionError" files: outside the filesystem, or refused
---| "WorkspaceReadOnlyError" files: the filesystem is read_only
---| "FilesystemError" files: any other failure (`code` names it)

---@class sandkit.errors  the kinds as constants: errors.ConfigError == "ConfigError"
---@field ConfigError "ConfigError"
---@field ArgumentError "ArgumentError"
---@field IsolationUnavailableError "IsolationUnavailableError"
---@field SandboxError "SandboxError"
---@field SandboxNotReadyError "SandboxNotReadyError"
---@field SandboxDestroyedError "SandboxDestroyedError"
---@field SandboxExecTransportError "SandboxExecTransportError"
---@field PlatformApiError "PlatformApiError"
---@field ModalError "ModalError"
---@field ModalFilesystemError "ModalFilesystemError"
---@field ContainerCliError "ContainerCliError"
---@field DockerApiError "DockerApiError"
---@field TimeoutError "TimeoutError"
---@field NetworkError "NetworkError"
---@field HttpTransportError "HttpTransportError"
---@field ResponseTooLargeError "ResponseTooLargeError"
---@field UnsupportedError "UnsupportedError"
---@field ProcessExitedError "ProcessExitedError"
---@field OutOfMemoryError "OutOfMemoryError"
---@field IOError "IOError"
---@field FileNotFoundError "FileNotFoundError"
---@field DirectoryNotFoundError "DirectoryNotFoundError"
---@field FileExistsError "FileExistsError"
---@field IsDirectoryError "IsDirectoryError"
---@field NotDirectoryError "NotDirectoryError"
---@field DirectoryNotEmptyError "DirectoryNotEmptyError"
---@field PermissionError "PermissionError"
---@field WorkspaceReadOnlyError "WorkspaceReadOnlyError"
---@field FilesystemError "FilesystemError"
---@field kinds { name: sandkit.ErrorKind, fields: string, doc: string }[] in this order
-- END generated: error kinds

---@class sandkit.Error
---@field kind sandkit.ErrorKind
---@field message string
---@field where? string  misuse (ConfigError, ArgumentError) only: "file:line" of the caller
-- plus the fields of its kind (status, code, grpc_status, argv, limit, ...;
-- fleet:map errors: clone, sandbox_id, cause).
-- No string in it (nor tostring) holds an access token, a token secret or an
-- env value of 4 bytes or more, in any encoding (docs/security.md).

---@class sandkit.Result
---@field exit_code integer
---@field success boolean
---@field stdout string|sandkit.Buffer  a Buffer with capture = "buffer"
---@field stderr string|sandkit.Buffer
---@field execution_time_ms number
---@field timed_out boolean  exit_code is 124
---@field killed boolean     ended by a signal (exit_code 128 + N) or a kill
---@field cancelled? boolean ended by op:cancel()
---@field oom_killed? boolean LocalSandbox with a memory limit: the kernel's OOM killer killed a process of the command
---@field truncated boolean  stdout or stderr passed max_output_bytes; the first bytes were kept
---@field command string

-- BEGIN generated: command options (make generated, from lua/sandkit/options.lua)
---@class sandkit.CommandOptions  options of exec, exec_async and processes:spawn
---@field timeout? integer whole milliseconds; default the sandbox's `timeout` option; `0`: none
---@field cwd? string working directory of the command
---@field env? table<string, string|number|boolean> variables merged over the sandbox's `env`
---@field on_stdout? fun(chunk: string) called with stdout as it arrives, in chunks that may split lines anywhere
---@field on_stderr? fun(chunk: string) the same for stderr
---@field on_stdout_line? fun(line: string) called with each whole line of stdout, without its `\n`; the last line comes at exit even without a newline; a line longer than 1 MiB arrives in 1 MiB pieces. May be combined with the chunk callbacks
---@field on_stderr_line? fun(line: string) the same for stderr
---@field stdin? string a string written, then stdin is closed (without it stdin is empty); `processes:spawn` writes it first and keeps stdin open (`h:send_stdin`, `h:close_stdin`)
---@field capture? boolean|"buffer" default true; false keeps output out of the result (for streaming large output); `"buffer"` returns `stdout`/`stderr` as `sandkit.Buffer` objects that hold the captured bytes without copying them into Lua strings: `#buf`, `buf:sub(i, j)`, `buf:byte(i, j)`, `buf:find(text, init, plain)` (plain text), `tostring(buf)`, `buf:write_to(file)`, `buf:close()`; every provider; [docs/capture.md](docs/capture.md)
---@field max_output_bytes? integer whole number >= 1; default the sandbox's option, 64 MiB: the bytes of stdout, and separately of stderr, kept in the result (below)
-- END generated: command options

---@class sandkit.Buffer  captured bytes held without a Lua string (docs/capture.md); #buf is the length
local Buffer = {}
---@param i integer
---@param j? integer
---@return string
function Buffer:sub(i, j) end
---@param i? integer
---@param j? integer
---@return integer ...
function Buffer:byte(i, j) end
---@param text string plain text (pattern characters need plain = true)
---@param init? integer
---@param plain? boolean
---@return integer|nil start, integer|nil stop
function Buffer:find(text, init, plain) end
---@param file file* an open file handle
---@return true|nil, sandkit.Error|nil
function Buffer:write_to(file) end
--- Frees the bytes now; every other method then raises.
function Buffer:close() end
---@return boolean
function Buffer:is_closed() end

---@class sandkit.Operation
---@field done boolean
---@field result? sandkit.Result
---@field error? sandkit.Error
local Operation = {}
---@return sandkit.Result|nil, sandkit.Error|nil
function Operation:wait() end
---@return boolean cancelled false when it had already finished
function Operation:cancel() end
-- the cqueues pollable protocol: cqueues.poll(op), then sandkit.step(0)
---@return integer
function Operation:pollfd() end
---@return "r"
function Operation:events() end
---@return number|nil seconds; 0 once done
function Operation:timeout() end

---@class sandkit.Process
---@field pid string
---@field command string
---@field exit_code integer|nil nil while running
---@field stdout string accumulated so far
---@field stderr string
---@field running boolean
local Process = {}
---@return sandkit.Result|nil, sandkit.Error|nil
function Process:wait() end
--- Ends the command; what that means depends on the provider (docs/processes.md:
--- local SIGKILL to the group, platform closes the socket, modal local only,
--- apple-container signals the exec CLI).
---@return boolean killed false once exited
function Process:kill() end
---@param data string
---@return true|nil, sandkit.Error|nil
function Process:send_stdin(data) end
---@return boolean
function Process:close_stdin() end

---@class sandkit.ProcessManager
local ProcessManager = {}
---@param command string a shell string, used as it is
---@param args? string[] each quoted to arrive as one argument (spawn(command, opts) works too)
---@param opts? sandkit.CommandOptions
---@return sandkit.Process|nil, sandkit.Error|nil
function ProcessManager:spawn(command, args, opts) end
---@return { pid: string, command: string, running: boolean, exit_code: integer|nil }[]
function ProcessManager:list() end
---@param pid string
---@return sandkit.Process|nil
function ProcessManager:get(pid) end
---@param pid string
---@return boolean
function ProcessManager:kill(pid) end

---@class sandkit.Info
---@field id string
---@field name string
---@field provider string
---@field status string
---@field created_at string ISO 8601
---@field metadata table

---@class sandkit.FileStat
---@field name string
---@field path string
---@field type "file"|"directory"
---@field size integer       0 for directories
---@field created_at string  ISO-8601 UTC
---@field modified_at string ISO-8601 UTC
---@field mime_type? string  PlatformFilesystem: the stored content-type

---@class sandkit.FileEntry
---@field name string         relative to the listed directory ("sub/x.lua" when recursive)
---@field type "file"|"directory"
---@field size? integer       files
---@field is_symlink? boolean
---@field symlink_target? string

---@class sandkit.ReadOptions
---@field on_chunk? fun(chunk: string) stream the file: read_file then returns true (no size bound)
---@field chunk_size? integer  local: bytes per chunk (default 1 MiB)
---@field max_bytes? integer   a whole read's limit (default 64 MiB); a larger file: nil, FilesystemError (code "EFBIG", limit). Not with on_chunk

---@class sandkit.WriteOptions
---@field overwrite? boolean   default true; false: FileExistsError when the file exists
---@field recursive? boolean   create missing parent directories (default true)
---@field mime_type? string    PlatformFilesystem: sent as content-type

---@class sandkit.Filesystem
---@field id string
---@field name string
---@field provider string
---@field read_only boolean
---@field base_path? string   LocalFilesystem
local Filesystem = {}
---@param path string
---@param opts? sandkit.ReadOptions
---@return string|true|nil, sandkit.Error|nil
function Filesystem:read_file(path, opts) end
---@param path string
---@param content string|fun(): string|nil  a string, or a chunk source returning strings until nil
---@param opts? sandkit.WriteOptions
---@return true|nil, sandkit.Error|nil
function Filesystem:write_file(path, content, opts) end
---@param path string
---@param content string|fun(): string|nil
---@return true|nil, sandkit.Error|nil
function Filesystem:append_file(path, content) end
---@param opts? { force?: boolean, recursive?: boolean }
---@return true|nil, sandkit.Error|nil
function Filesystem:delete_file(path, opts) end
---@param opts? { overwrite?: boolean, recursive?: boolean }
---@return true|nil, sandkit.Error|nil
function Filesystem:copy_file(src, dest, opts) end
---@param opts? { overwrite?: boolean }
---@return true|nil, sandkit.Error|nil
function Filesystem:move_file(src, dest, opts) end
---@param opts? { recursive?: boolean }  recursive defaults to true
---@return true|nil, sandkit.Error|nil
function Filesystem:mkdir(path, opts) end
---@param opts? { force?: boolean, recursive?: boolean }
---@return true|nil, sandkit.Error|nil
function Filesystem:rmdir(path, opts) end
---@param opts? { recursive?: boolean, extension?: string|string[], max_depth?: integer }
---@return sandkit.FileEntry[]|nil, sandkit.Error|nil
function Filesystem:readdir(path, opts) end
---@return boolean|nil, sandkit.Error|nil
function Filesystem:exists(path) end
---@return sandkit.FileStat|nil, sandkit.Error|nil
function Filesystem:stat(path) end
---@return { id: string, name: string, provider: string, status: string, read_only: boolean, base_path?: string, icon?: string, metadata?: table }
function Filesystem:info() end
---@return string
function Filesystem:instructions() end

---@class sandkit.Sandbox
---@field id string
---@field name string
---@field provider sandkit.ProviderId
---@field status string    pending starting running stopping stopped destroying destroyed error
---@field processes sandkit.ProcessManager
---@field fs sandkit.Filesystem   the sandbox's files as its commands see them
local Sandbox = {}
---@return true|nil, sandkit.Error|nil
function Sandbox:start() end
---@return true|nil, sandkit.Error|nil
function Sandbox:stop() end
---@return true|nil, sandkit.Error|nil
function Sandbox:destroy() end
---@return true|nil, sandkit.Error|nil
function Sandbox:ensure_running() end
---@param command string a shell string, used as it is
---@param args? string[] each quoted to arrive as one argument
---@param opts? sandkit.CommandOptions
---@return sandkit.Result|nil, sandkit.Error|nil
function Sandbox:exec(command, args, opts) end
---@param command string
---@param args? string[]
---@param opts? sandkit.CommandOptions
---@return sandkit.Operation
function Sandbox:exec_async(command, args, opts) end
---@param overrides? sandkit.AnySandboxOptions
---@return sandkit.Sandbox
function Sandbox:clone(overrides) end
--- A running Platform sandbox asks the platform first (GET /sandbox/{id});
--- nil, err when that request fails.
---@return sandkit.Info|nil, sandkit.Error|nil
function Sandbox:info() end
---@param context? any
---@return string
function Sandbox:instructions(context) end
--- DockerSandbox only (another provider raises): the URL of a container
--- port published by the `ports` option, "http://127.0.0.1:<host port>";
--- nil when the port is not published (for tcp) or the sandbox is not
--- running; nil, err when the daemon cannot say.
---@param port integer
---@return string|nil, sandkit.Error|nil
function Sandbox:get_port_url(port) end
--- DockerSandbox only (another provider raises): commits the container
--- (running or stopped) to an image and returns its name, which
--- sb:clone{ image = name } or a new DockerSandbox starts from.
---@param opts? { image?: string }  default "localhost/sandkit-snapshot:<id>-<time>"
---@return string|nil, sandkit.Error|nil
function Sandbox:snapshot(opts) end

---@class sandkit.Task
local Task = {}
---@return any ...
function Task:wait() end

---@class sandkit.FleetExecOptions: sandkit.CommandOptions
---@field on_progress? fun(done: integer, total: integer)

---@class sandkit.Fleet: { [integer]: sandkit.Sandbox }
---@field sandboxes sandkit.Sandbox[]
local Fleet = {}
---@param command string
---@param args? string[]
---@param opts? sandkit.FleetExecOptions
---@return table<integer, sandkit.Result> results, table<integer, sandkit.Error> errors
function Fleet:exec(command, args, opts) end
---@param fn fun(sb: sandkit.Sandbox, i: integer): any
---@param opts? { concurrency?: integer, on_progress?: fun(done: integer, total: integer) }
---@return table<integer, any> values, table<integer, sandkit.Error> errors errors name the clone
function Fleet:map(fn, opts) end
---@return true
function Fleet:destroy() end

---@class sandkit
---@field _NAME "sandkit"
---@field _VERSION string the release, e.g. "1.2.3" (lua/sandkit/version.lua)
local sandkit = {}
---@type sandkit.errors
sandkit.errors = {}
---@param err any
---@param kind? sandkit.ErrorKind
---@return boolean
function sandkit.errors.is(err, kind) end

-- BEGIN generated: provider constructors (make generated, from the descriptors)
---@param opts? sandkit.LocalSandboxOptions
---@return sandkit.Sandbox
function sandkit.LocalSandbox(opts) end
---@param opts? sandkit.PlatformSandboxOptions
---@return sandkit.Sandbox
function sandkit.PlatformSandbox(opts) end
---@param opts? sandkit.ModalSandboxOptions
---@return sandkit.Sandbox
function sandkit.ModalSandbox(opts) end
---@param opts? sandkit.AppleContainerSandboxOptions
---@return sandkit.Sandbox
function sandkit.AppleContainerSandbox(opts) end
---@param opts? sandkit.DockerSandboxOptions
---@return sandkit.Sandbox
function sandkit.DockerSandbox(opts) end
-- END generated: provider constructors
---@param opts { base_path: string, read_only?: boolean, id?: string }
---@return sandkit.Filesystem
function sandkit.LocalFilesystem(opts) end
---@param opts { access_token?: string, project_id?: string, bucket_name?: string, base_url?: string, acting_user_id?: string, read_only?: boolean, id?: string, display_name?: string, description?: string, icon?: string, request_timeout_ms?: integer }
---@return sandkit.Filesystem
function sandkit.PlatformFilesystem(opts) end
---@param id sandkit.ProviderId
---@param opts? sandkit.AnySandboxOptions
---@return sandkit.Sandbox
function sandkit.new(id, opts) end
---@return { id: sandkit.ProviderId, name: string, description: string, options: table<string, { type: string, default: any, description: string, enum?: string[], env?: string }>, capabilities: table<string, boolean>, filesystem: "exec"|"own" }[]
function sandkit.providers() end
---@param fn function
---@return sandkit.Task
function sandkit.spawn(fn, ...) end
function sandkit.run() end
---@param seconds number
function sandkit.sleep(seconds) end
--- pcall from inside which a task may wait: Lua's pcall in LuaJIT and 5.2
--- on; in Lua 5.1 (whose pcall cannot be yielded across) f runs in a
--- coroutine of its own.
---@param f function
---@return boolean ok
---@return any ...
function sandkit.pcall(f, ...) end
---@param items (sandkit.Operation|sandkit.Task|fun(): any, any)[]
---@param opts? { concurrency?: integer, on_progress?: fun(done: integer, total: integer) }
---@return table results, table errors errors[i]: what item i failed with or raised
function sandkit.all(items, opts) end
---@param template sandkit.Sandbox
---@param n integer
---@param opts? { concurrency?: integer, overrides?: fun(i: integer): table, on_progress?: fun(done: integer, total: integer) }
---@return sandkit.Fleet|nil, sandkit.Error|nil
function sandkit.fleet(template, n, opts) end
---@param timeout? number seconds
---@return boolean busy
function sandkit.step(timeout) end
---@return integer
function sandkit.pollfd() end
---@return "r"
function sandkit.events() end
---@return number|nil seconds
function sandkit.timeout() end
---@return number milliseconds (monotonic)
function sandkit.now() end
---@param s string
---@return string
function sandkit.quote(s) end

return sandkit
