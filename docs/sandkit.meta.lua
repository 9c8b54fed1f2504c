---@meta sandkit
-- LuaLS type stub for editors (not loaded at run time). Point your
-- workspace's `Lua.workspace.library` at this folder. The reference is
-- README.md; this mirrors it.

---@class sandkit.Error
---@field kind string   "ConfigError", "SandboxNotReadyError", "PlatformApiError", ...
---@field message string
---@field where? string  misuse only: "file:line" of the caller
-- plus the fields of its kind (status, code, grpc_status, argv, ...;
-- fleet:map errors: clone, sandbox_id, cause)

---@class sandkit.Result
---@field exit_code integer
---@field success boolean
---@field stdout string
---@field stderr string
---@field execution_time_ms number
---@field timed_out boolean  exit_code is 124
---@field killed boolean     ended by a signal (exit_code 128 + N) or a kill
---@field cancelled? boolean ended by op:cancel()
---@field command string

---@class sandkit.CommandOptions
---@field timeout? integer  whole milliseconds; 0: no timeout
---@field cwd? string
---@field env? table<string, string>
---@field on_stdout? fun(chunk: string)
---@field on_stderr? fun(chunk: string)
---@field on_stdout_line? fun(line: string) whole lines, without the newline
---@field on_stderr_line? fun(line: string)
---@field stdin? string     exec only: written, then stdin is closed
---@field capture? boolean  default true

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
