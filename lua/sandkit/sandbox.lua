--- The user-facing methods of sandkit.Sandbox and sandkit.Process, built on
-- the core's primitives (the underscore methods) and the scheduler.
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local options = require "sandkit.options"
local scheduler = require "sandkit.scheduler"

local M = {}
local S = core.sandbox_methods
local P = core.process_methods

local function argerror(n, fname, msg)
  error(("bad argument #%d to '%s' (%s)"):format(n, fname, msg), 3)
end

-- Options of exec / exec_async / processes:spawn, with their types.
local COMMAND_OPTS = {
  timeout = "number", cwd = "string", env = "table", on_stdout = "function",
  on_stderr = "function", stdin = "string", capture = "boolean|buffer",
}

local function check_command_opts(fname, opts, argn)
  if opts == nil then return {} end
  if type(opts) ~= "table" then argerror(argn, fname, "options table expected, got " .. type(opts)) end
  local o = {}
  for k, v in pairs(opts) do
    local want = COMMAND_OPTS[k]
    if not want then argerror(argn, fname, ("unknown option '%s'"):format(options.shown(k))) end
    if want == "boolean|buffer" then
      -- capture: true (strings, the default), false, or "buffer" (sandkit.Buffer, no copy)
      if type(v) ~= "boolean" and v ~= "buffer" then
        argerror(argn, fname, ("option '%s' must be a boolean or \"buffer\", got %s"):format(options.shown(k),
          type(v) == "string" and ("%q"):format(v) or type(v)))
      end
    elseif type(v) ~= want then argerror(argn, fname, ("option '%s' must be a %s, got %s"):format(options.shown(k), want, type(v))) end
    o[k] = v
  end
  if o.timeout and (o.timeout ~= o.timeout or o.timeout < 0 or o.timeout == math.huge) then
    argerror(argn, fname, "option 'timeout' must be a finite number of milliseconds >= 0")
  end
  if o.cwd and o.cwd:find("\0", 1, true) then argerror(argn, fname, "option 'cwd' contains a NUL byte") end
  if o.env then
    options.check_env(o.env, function(msg) argerror(argn, fname, "option 'env' " .. msg) end)
    o.env = options.normalize_env(o.env)
  end
  return o
end

local function state(sb) return sb:_state() end

-- Methods are plain Lua functions: check self so misuse reads
-- "sandkit.Sandbox expected, got nil".
local function check(self, class, fname)
  if getmetatable(self) ~= class then
    error(("bad argument #1 to '%s' (%s expected, got %s)"):format(fname, class.__name,
      type(self) == "userdata" and (getmetatable(self) or {}).__name or type(self)), 3)
  end
end

-- ---- lifecycle ----------------------------------------------------------------

local function lifecycle(sb, prim)
  local rec = scheduler.record(function(r, _, err) scheduler.complete(r, err) end)
  sb[prim](sb, rec.token)
  return scheduler.await(rec)
end

local function hook_error(sb, name, err)
  return errors.new("SandboxError", ("Sandbox '%s' %s hook failed: %s"):format(sb.id, name, tostring(err)),
    { hook = name, sandbox_id = sb.id })
end

local function run_hook(sb, name)
  local hook = state(sb).options[name]
  if not hook then return nil end
  local ok, err = pcall(hook, { sandbox = sb })
  if not ok then return hook_error(sb, name, err) end
  return nil
end

-- One shared attempt per operation: concurrent callers wait for its outcome.
local function shared(sb, slot, body)
  local st = state(sb)
  if st[slot] then return scheduler.await(st[slot]) end
  local rec = scheduler.record()
  st[slot] = rec
  local ok, err = pcall(body)
  st[slot] = nil
  if not ok then
    scheduler.complete(rec, nil, err)
    error(err, 0)
  end
  if err then
    scheduler.complete(rec, nil, err)
    return nil, err
  end
  scheduler.complete(rec, true)
  return true
end

--- Provisions or reconnects; idempotent; concurrent calls share one start.
function S:start()
  check(self, core.Sandbox, "start")
  if self.status == "running" and not state(self).start_slot then return true end
  return shared(self, "start_slot", function()
    local err = lifecycle(self, "_start")
    if err then return err end
    err = run_hook(self, "on_start")
    if err then self:_mark_error() end
    return err
  end)
end

function S:stop()
  check(self, core.Sandbox, "stop")
  return shared(self, "stop_slot", function()
    local s = self.status
    if s == "pending" or s == "stopped" or s == "destroyed" then return nil end
    local herr = run_hook(self, "on_stop")
    return lifecycle(self, "_stop") or herr
  end)
end

function S:destroy()
  check(self, core.Sandbox, "destroy")
  return shared(self, "destroy_slot", function()
    if self.status == "destroyed" then return nil end
    local herr = run_hook(self, "on_destroy")
    return lifecycle(self, "_destroy") or herr
  end)
end

--- Starts the sandbox unless it is running (upstream ensureRunning).
function S:ensure_running()
  check(self, core.Sandbox, "ensure_running")
  local s = self.status
  if s == "running" then return true end
  if s == "destroyed" or s == "destroying" then
    return nil, errors.new("SandboxNotReadyError", ("Sandbox '%s' has been destroyed"):format(self.id),
      { sandbox_id = self.id })
  end
  local ok, err = self:start()
  if not ok then return nil, err end
  if self.status ~= "running" then
    return nil, errors.new("SandboxNotReadyError", ("Sandbox '%s' is not running (status: %s)"):format(self.id, self.status),
      { sandbox_id = self.id })
  end
  return true
end

-- ---- commands -----------------------------------------------------------------

local Operation = { __name = "sandkit.Operation" }
Operation.__index = Operation

local function finish(rec, result, err)
  local op = rec.op
  if op then
    op.done = true
    op.result = result
    op.error = err
  end
  scheduler.complete(rec, result, err)
end

local function on_process_event(rec, kind, stream, data)
  if kind == "output" then
    local cb = stream == 1 and rec.o.on_stdout or rec.o.on_stderr
    if cb then
      local ok, err = pcall(cb, data)
      if not ok and not rec.callback_error then
        rec.callback_error = err
        rec.proc:_cancel()
      end
    end
  elseif kind == "exit" then
    local result, err = rec.proc:_result()
    finish(rec, result, err)
  end
end

local function spawn_opts(sb, o, keep_stdin_open)
  local timeout = o.timeout or state(sb).options.timeout
  return {
    cwd = o.cwd, env = o.env, timeout = timeout, stdin = o.stdin,
    keep_stdin_open = keep_stdin_open, capture = o.capture,
    stream = (o.on_stdout or o.on_stderr) and true or false,
  }
end

local function launch(sb, rec, line, o)
  local proc, err = sb:_spawn(line, spawn_opts(sb, o, false), false, rec.token)
  if not proc then return finish(rec, nil, err) end
  rec.proc = proc
  if rec.op.cancelled then proc:_cancel() end
end

local function cancelled_result(line, o)
  local empty = o.capture == "buffer" and core.buffer or tostring
  return { exit_code = 137, success = false, stdout = empty(""), stderr = empty(""), execution_time_ms = 0,
    timed_out = false, killed = true, cancelled = true, command = line }
end

--- Starts a command and returns an operation (op:wait(), op:cancel()).
function S:exec_async(command, args, opts)
  check(self, core.Sandbox, "exec_async")
  if type(command) ~= "string" then argerror(1, "exec", "string expected, got " .. type(command)) end
  if args ~= nil then
    if type(args) ~= "table" then argerror(2, "exec", "table of arguments expected, got " .. type(args)) end
    local n = #args
    for k in pairs(args) do
      if math.type(k) ~= "integer" or k < 1 or k > n then
        argerror(2, "exec", ("array of argument strings expected (key %s); options go in argument #3"):format(options.shown(k)))
      end
    end
  end
  local line = core.command(command, args)
  local o = check_command_opts("exec", opts, 3)
  local op = setmetatable({ done = false, sandbox = self }, Operation)
  local rec = scheduler.record(on_process_event)
  rec.op, rec.o = op, o
  op._rec = rec
  if self.status == "running" then
    launch(self, rec, line, o)
  else
    scheduler.spawn(function()
      local ok, err = self:ensure_running()
      if not ok then return finish(rec, nil, err) end
      if op.cancelled then return finish(rec, cancelled_result(line, o)) end
      launch(self, rec, line, o)
    end)
  end
  return op
end

--- Runs a command and waits: returns the result table, or nil, err.
function S:exec(command, args, opts)
  check(self, core.Sandbox, "exec")
  return self:exec_async(command, args, opts):wait()
end

--- Waits for the operation: the result table, or nil, err.
function Operation:wait()
  local result, err = scheduler.await(self._rec)
  local cb_err = self._rec.callback_error
  if cb_err ~= nil then error(cb_err, 0) end
  return result, err
end

--- Cancels: the command is killed and wait() returns its partial result
-- with `cancelled = true`. False when it had already finished.
function Operation:cancel()
  if self.done then return false end
  self.cancelled = true
  local proc = self._rec.proc
  if proc then proc:_cancel() end
  return true
end

function Operation:__tostring()
  return ("sandkit.Operation (%s)"):format(self.done and "done" or "running")
end

M.Operation = Operation

-- ---- background processes -------------------------------------------------------

local Manager = { __name = "sandkit.ProcessManager" }
Manager.__index = Manager

--- Spawns a background process (one shell command string); returns its
-- handle, or nil, err.
function Manager:spawn(command, opts)
  if type(command) ~= "string" then argerror(1, "spawn", "string expected, got " .. type(command)) end
  if command:find("\0", 1, true) then argerror(1, "spawn", "command contains a NUL byte") end
  local o = check_command_opts("spawn", opts, 2)
  local sb = self.sandbox
  local ok, err = sb:ensure_running()
  if not ok then return nil, err end
  local rec = scheduler.record(on_process_event)
  rec.o = o
  local proc, serr = sb:_spawn(command, spawn_opts(sb, o, true), true, rec.token)
  if not proc then
    scheduler.complete(rec, nil, serr)
    return nil, serr
  end
  rec.proc = proc
  proc:_state().rec = rec
  return proc
end

--- Tracked processes: { pid, command, running, exit_code }.
function Manager:list()
  local out = {}
  for i, h in ipairs(self.sandbox:_list()) do
    out[i] = { pid = h.pid, command = h.command, running = h.running, exit_code = h.exit_code }
  end
  return out
end

local function check_pid(fname, pid)
  if type(pid) == "number" then pid = tostring(math.tointeger(pid) or pid) end
  if type(pid) ~= "string" then argerror(1, fname, "pid string expected, got " .. type(pid)) end
  return pid
end

--- The handle for pid, or nil. An exited process is returned once more,
-- then forgotten.
function Manager:get(pid)
  pid = check_pid("get", pid)
  if self.sandbox.status == "destroyed" then return nil end
  return self.sandbox:_get(pid)
end

--- Kills pid, waits for it to end and forgets it. False for an unknown or
-- already exited process.
function Manager:kill(pid)
  pid = check_pid("kill", pid)
  if self.sandbox.status == "destroyed" then return false end
  for _, h in ipairs(self.sandbox:_list()) do
    if h.pid == pid then
      if not h.running or not h:_kill() then return false end
      h:wait()
      h:_untrack()
      return true
    end
  end
  return false
end

function Manager:__tostring() return "sandkit.ProcessManager (" .. self.sandbox.id .. ")" end

M.Manager = Manager

--- Waits for the process: its result table (idempotent), or nil, err.
function P:wait()
  check(self, core.Process, "wait")
  return scheduler.await(self:_state().rec)
end

--- Kills the process group (SIGKILL). False if it had already exited.
function P:kill()
  check(self, core.Process, "kill")
  return self:_kill()
end

--- Writes to stdin: true, or nil, err when the process has exited.
function P:send_stdin(data)
  check(self, core.Process, "send_stdin")
  if type(data) ~= "string" then argerror(1, "send_stdin", "string expected, got " .. type(data)) end
  return self:_write(data)
end

function P:close_stdin()
  check(self, core.Process, "close_stdin")
  return self:_close_stdin()
end

-- ---- the rest of the sandbox ---------------------------------------------------

function S:info()
  check(self, core.Sandbox, "info")
  return self:_info()
end

--- Text describing the sandbox for an agent.
function S:instructions(context)
  check(self, core.Sandbox, "instructions")
  local default = self:_default_instructions() or ""
  local ins = state(self).options.instructions
  if type(ins) == "string" then return ins end
  if type(ins) == "function" then
    return ins({ default_instructions = default, request_context = context, sandbox = self })
  end
  return default
end

--- A new, unstarted sandbox with the same options, a fresh id unless
-- overridden, and the overrides applied. No I/O.
function S:clone(overrides)
  check(self, core.Sandbox, "clone")
  if overrides ~= nil and type(overrides) ~= "table" then
    argerror(1, "clone", "table expected, got " .. type(overrides))
  end
  local o = {}
  for k, v in pairs(state(self).options) do o[k] = v end
  o.id = nil
  -- options naming the provider-side resource (descriptor's clone_drops)
  for _, k in ipairs(state(self).clone_drops or {}) do o[k] = nil end
  for k, v in pairs(overrides or {}) do o[k] = v end
  return M.new(self.provider, o)
end

core.Sandbox.__close = function(sb)
  if sb.status ~= "destroyed" then sb:destroy() end
end

local registry -- set by init (provider descriptors by id)

function M.set_registry(r) registry = r end

--- Creates a sandbox of provider `id` from validated options.
function M.new(id, opts)
  local desc = registry[id]
  if not desc then
    error(errors.new("ConfigError", ("Unknown sandbox provider '%s'"):format(options.shown(id)), { provider = tostring(id) }), 3)
  end
  local o = options.validate(desc, opts)
  local sb = core.new_sandbox(id, o)
  local st = sb:_state()
  st.options = o
  st.clone_drops = desc.clone_drops
  st.processes = setmetatable({ sandbox = sb }, Manager)
  return sb
end

return M
