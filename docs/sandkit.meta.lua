---@meta sandkit
-- LuaLS type stub for editors (not loaded at run time). Point your
-- workspace's `Lua.workspace.library` at this folder. The reference is
-- README.md; this mirrors it.

---@class sandkit.Error
---@field kind string   "ConfigError", "SandboxNotReadyError", "PlatformApiError", ...
---@field message string
-- plus the fields of its kind (status, code, grpc_status, argv, ...)

---@class sandkit.Result
---@field exit_code integer
---@field success boolean
---@field stdout string|sandkit.Buffer  a Buffer with capture = "buffer"
---@field stderr string|sandkit.Buffer
---@field execution_time_ms number
---@field timed_out boolean  exit_code is 124
---@field killed boolean     ended by a signal (exit_code 128 + N) or a kill
---@field cancelled? boolean ended by op:cancel()
---@field command string

---@class sandkit.CommandOptions
---@field timeout? number   milliseconds
---@field cwd? string
---@field env? table<string, string>
---@field on_stdout? fun(chunk: string)
---@field on_stderr? fun(chunk: string)
---@field stdin? string     exec only: written, then stdin is closed
---@field capture? boolean|"buffer"  default true; "buffer": stdout/stderr as sandkit.Buffer (no copy)

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
---@return boolean killed false once exited
function Process:kill() end
---@param data string
---@return true|nil, sandkit.Error|nil
function Process:send_stdin(data) end
---@return boolean
function Process:close_stdin() end

---@class sandkit.ProcessManager
local ProcessManager = {}
---@param command string a shell command
---@param opts? sandkit.CommandOptions
---@return sandkit.Process|nil, sandkit.Error|nil
function ProcessManager:spawn(command, opts) end
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

---@class sandkit.Sandbox
---@field id string
---@field name string
---@field provider string  "local" | "platform" | "modal" | "apple-container"
---@field status string    pending starting running stopping stopped destroying destroyed error
---@field processes sandkit.ProcessManager
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
---@param overrides? table
---@return sandkit.Sandbox
function Sandbox:clone(overrides) end
---@return sandkit.Info
function Sandbox:info() end
---@param context? any
---@return string
function Sandbox:instructions(context) end

---@class sandkit.Task
local Task = {}
---@return any ...
function Task:wait() end

---@class sandkit.Fleet
---@field sandboxes sandkit.Sandbox[]
local Fleet = {}
---@return (sandkit.Result|sandkit.Error)[]
function Fleet:exec(command, args, opts) end
---@param fn fun(sb: sandkit.Sandbox, i: integer): any
---@param opts? { concurrency?: integer }
---@return any[]
function Fleet:map(fn, opts) end
function Fleet:destroy() end

---@class sandkit
local sandkit = {}
sandkit.errors = {}
---@param err any
---@param kind? string
---@return boolean
function sandkit.errors.is(err, kind) end

---@param opts? table
---@return sandkit.Sandbox
function sandkit.LocalSandbox(opts) end
---@param opts? table
---@return sandkit.Sandbox
function sandkit.PlatformSandbox(opts) end
---@param opts? table
---@return sandkit.Sandbox
function sandkit.ModalSandbox(opts) end
---@param opts? table
---@return sandkit.Sandbox
function sandkit.AppleContainerSandbox(opts) end
---@param id string "local" | "platform" | "modal" | "apple-container"
---@param opts? table
---@return sandkit.Sandbox
function sandkit.new(id, opts) end
---@return { id: string, name: string, description: string, options: table }[]
function sandkit.providers() end
---@param fn function
---@return sandkit.Task
function sandkit.spawn(fn, ...) end
function sandkit.run() end
---@param seconds number
function sandkit.sleep(seconds) end
---@param ops (sandkit.Operation|sandkit.Task)[]
---@return table results, table errors
function sandkit.all(ops) end
---@param template sandkit.Sandbox
---@param n integer
---@param opts? { concurrency?: integer, overrides?: fun(i: integer): table }
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
