--- The user-facing methods of sandkit.Sandbox and sandkit.Process, built on
-- the core's primitives and the scheduler. The primitives are this
-- module's alone: no sandbox or process reaches them.
local compat = require "sandkit.compat"
local core = require "sandkit.core"
-- Taken first: a second load (sandkit's Lua modules reloaded, the core
-- kept) raises here, before the scheduler takes the core's events from
-- the loaded sandkit.
local prim = core.primitives()
local errors = require "sandkit.errors"
local options = require "sandkit.options"
local registry = require "sandkit.registry"
local scheduler = require "sandkit.scheduler"

local M = {}
local S = core.sandbox_methods
local P = core.process_methods
local SP, PP = prim.sandbox, prim.process

-- Misuse is reported at the caller's line (errors.misuse skips sandkit's
-- own frames), whichever public method the check runs under.
local argerror = errors.argument

local state = SP.state

-- Methods are plain Lua functions: check self so misuse reads
-- "sandkit.Sandbox expected, got nil".
local function check(self, class, fname)
  if getmetatable(self) ~= class then
    argerror(1, fname, ("%s expected, got %s"):format(class.__name,
      type(self) == "userdata" and (getmetatable(self) or {}).__name or type(self)))
  end
end

-- ---- lifecycle ----------------------------------------------------------------

local function lifecycle(sb, op)
  local rec = scheduler.record(function(r, _, err) scheduler.complete(r, err) end)
  op(sb, rec.token)
  return scheduler.await(rec)
end

local function hook_error(sb, name, err)
  return errors.new("SandboxError", ("Sandbox '%s' %s hook failed: %s"):format(sb.id, name, tostring(err)),
    { hook = name, sandbox_id = sb.id })
end

local function run_hook(sb, name)
  local hook = state(sb).options[name]
  if not hook then return nil end
  local ok, err = compat.pcall(hook, { sandbox = sb })
  if not ok then return hook_error(sb, name, err) end
  return nil
end

-- One shared attempt per operation: concurrent callers wait for its outcome.
local function shared(sb, slot, body)
  local st = state(sb)
  if st[slot] then return scheduler.await(st[slot]) end
  local rec = scheduler.owned_record()
  st[slot] = rec
  local ok, err = compat.pcall(body)
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
    local err = lifecycle(self, SP.start)
    if err then return err end
    err = run_hook(self, "on_start")
    if err then SP.mark_error(self) end
    return err
  end)
end

function S:stop()
  check(self, core.Sandbox, "stop")
  return shared(self, "stop_slot", function()
    local s = self.status
    -- as upstream's _stop(): nothing to do once stopped (no hook, no provider call)
    if s == "destroyed" or s == "stopped" then return nil end
    -- a provider whose stop addresses a resource by name stops from pending too
    if s == "pending" and not state(self).stop_when_idle then return nil end
    local herr = run_hook(self, "on_stop")
    return lifecycle(self, SP.stop) or herr
  end)
end

function S:destroy()
  check(self, core.Sandbox, "destroy")
  return shared(self, "destroy_slot", function()
    if self.status == "destroyed" then return nil end
    local herr = run_hook(self, "on_destroy")
    return lifecycle(self, SP.destroy) or herr
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

-- A line longer than this reaches on_*_line in pieces of this size, so a
-- command that never prints a newline cannot make the buffer grow forever.
local MAX_LINE = 1024 * 1024

-- Whole lines of `data` (after what is left of the stream's last chunk) to
-- cb, without "\n"; keeps the unfinished rest for the next chunk.
local function feed_lines(rec, slot, data, cb)
  local rest = rec[slot]
  if rest then data = rest .. data end
  local pos = 1
  while true do
    local nl = data:find("\n", pos, true)
    if not nl then break end
    local line = data:sub(pos, nl - 1)
    pos = nl + 1
    cb(line)
  end
  while #data - pos + 1 >= MAX_LINE do
    local piece = data:sub(pos, pos + MAX_LINE - 1)
    pos = pos + MAX_LINE
    cb(piece)
  end
  rec[slot] = pos <= #data and data:sub(pos) or nil
end

local function callback_failed(rec, err, cancel)
  if rec.callback_error == nil then
    rec.callback_error = err
    if cancel then PP.cancel(rec.proc) end
  end
end

-- ("output", stream, data) while it runs, then ("exit", result, err).
local function on_process_event(rec, kind, a, b)
  local o = rec.o
  if kind == "output" then
    local stream, data = a, b
    if rec.callback_error ~= nil then return end
    local cb = stream == 1 and o.on_stdout or o.on_stderr
    local line_cb = stream == 1 and o.on_stdout_line or o.on_stderr_line
    local ok, err = true, nil
    if cb then ok, err = pcall(cb, data) end
    if ok and line_cb then ok, err = pcall(feed_lines, rec, stream == 1 and "out_rest" or "err_rest", data, line_cb) end
    if not ok then callback_failed(rec, err, true) end
  elseif kind == "exit" then
    -- the last line, when the output did not end with a newline
    if o.on_stdout_line or o.on_stderr_line then
      for _, s in ipairs({ { "out_rest", o.on_stdout_line }, { "err_rest", o.on_stderr_line } }) do
        local rest = rec[s[1]]
        rec[s[1]] = nil
        if rest and s[2] and rec.callback_error == nil then
          local ok, err = pcall(s[2], rest)
          if not ok then callback_failed(rec, err, false) end
        end
      end
    end
    finish(rec, a, b) -- the result, or nil and the error, came with the event
  end
end

local function not_running(sb)
  return errors.new("SandboxNotReadyError", ("Sandbox is not running (status: %s)"):format(sb.status))
end

-- The core's spawn, given the checked options one by one, with the
-- sandbox's defaults for the absent timeout and max_output_bytes.
local function spawn(sb, line, o, tracked, token)
  local defaults = state(sb).options
  local streaming = (o.on_stdout or o.on_stderr or o.on_stdout_line or o.on_stderr_line) ~= nil
  return SP.spawn(sb, line, tracked, token, o.cwd, o.env, o.timeout or defaults.timeout or 0,
    o.max_output_bytes or defaults.max_output_bytes or 0, o.stdin, o.capture == nil or o.capture, streaming)
end

-- Starts the command; false when the sandbox is not running.
local function launch(sb, rec, line, o)
  local proc, err = spawn(sb, line, o, false, rec.token)
  if proc == false then return false end
  if not proc then
    finish(rec, nil, err)
    return true
  end
  rec.proc = proc
  if rec.op.cancelled then PP.cancel(proc) end
  return true
end

local function cancelled_result(line, o)
  local empty = o.capture == "buffer" and core.buffer or tostring
  return { exit_code = 137, success = false, stdout = empty(""), stderr = empty(""), execution_time_ms = 0,
    timed_out = false, killed = true, cancelled = true, truncated = false, command = line }
end

-- The shell line for command and args (each arg quoted as one word).
local function command_line(fname, command, args)
  if type(command) ~= "string" then argerror(1, fname, "string expected, got " .. type(command)) end
  if args ~= nil then
    if type(args) ~= "table" then argerror(2, fname, "table of arguments expected, got " .. type(args)) end
    local n = #args
    for k in pairs(args) do
      if not compat.is_whole(k) or k < 1 or k > n then
        argerror(2, fname, ("array of argument strings expected (key %s); options go in argument #3"):format(options.shown(k)))
      end
    end
  end
  local ok, line = pcall(core.command, command, args)
  if not ok then
    -- the binding's "bad argument #n (...)", re-raised at the caller's line with our name
    local n, problem = tostring(line):match("bad argument #(%d+)[^(]*%((.*)%)")
    if not n then error(line, 0) end -- out of memory
    argerror(tonumber(n), fname, problem)
  end
  return line
end

-- exec and exec_async: the operation of the command, started at once on
-- a running sandbox, else in a task once the sandbox runs.
local function exec_async(sb, command, args, opts)
  local line = command_line("exec", command, args)
  local o = options.check(options.exec, opts, 3, "exec")
  local op = setmetatable({ done = false, sandbox = sb }, Operation)
  local rec = scheduler.record(on_process_event)
  rec.op, rec.o = op, o
  op._rec = rec
  if not launch(sb, rec, line, o) then
    scheduler.spawn(function()
      local ok, err = sb:ensure_running()
      if not ok then return finish(rec, nil, err) end
      if op.cancelled then return finish(rec, cancelled_result(line, o)) end
      if not launch(sb, rec, line, o) then finish(rec, nil, not_running(sb)) end
    end)
  end
  return op
end

local function wait(op)
  local result, err = scheduler.await(op._rec)
  local cb_err = op._rec.callback_error
  if cb_err ~= nil then error(cb_err, 0) end
  return result, err
end

--- Starts a command and returns an operation (op:wait(), op:cancel()).
function S:exec_async(command, args, opts)
  check(self, core.Sandbox, "exec_async")
  return exec_async(self, command, args, opts)
end

--- Runs a command and waits: returns the result table, or nil, err.
function S:exec(command, args, opts)
  check(self, core.Sandbox, "exec")
  return wait(exec_async(self, command, args, opts))
end

--- Waits for the operation: the result table, or nil, err.
function Operation:wait()
  check(self, Operation, "wait")
  return wait(self)
end

--- Cancels: the command is killed and wait() returns its partial result
-- with `cancelled = true`. False when it had already finished.
function Operation:cancel()
  check(self, Operation, "cancel")
  if self.done then return false end
  self.cancelled = true
  local proc = self._rec.proc
  if proc then PP.cancel(proc) end
  return true
end

-- The cqueues pollable protocol, so a cqueues coroutine can sleep on an
-- operation: `while not op.done do cqueues.poll(op); sandkit.step(0) end`.
-- It wakes when sandkit's loop has work (then step), at once when done.
function Operation:pollfd() return core.pollfd() end
function Operation:events() return "r" end
function Operation:timeout()
  if self.done then return 0 end
  return scheduler.timeout()
end

function Operation:__tostring()
  return ("sandkit.Operation (%s)"):format(self.done and "done" or "running")
end

M.Operation = Operation

-- ---- background processes -------------------------------------------------------

local Manager = { __name = "sandkit.ProcessManager" }
Manager.__index = Manager

-- A table with a key that is not an array index: spawn(command, opts).
local function is_options(t)
  if type(t) ~= "table" then return false end
  for k in pairs(t) do
    if not compat.is_whole(k) then return true end
  end
  return false
end

--- Spawns a background process: command and args as for exec; returns
-- its handle, or nil, err. spawn(command, opts) is accepted too (a table
-- with string keys is options).
function Manager:spawn(command, args, opts)
  check(self, Manager, "spawn")
  local opts_argn = 3
  if opts == nil and is_options(args) then args, opts, opts_argn = nil, args, 2 end
  local line = command_line("spawn", command, args)
  local o = options.check(options.exec, opts, opts_argn, "spawn")
  local sb = self.sandbox
  local ok, err = sb:ensure_running()
  if not ok then return nil, err end
  local rec = scheduler.record(on_process_event)
  rec.o = o
  local proc, serr = spawn(sb, line, o, true, rec.token)
  if proc == false then serr = not_running(sb) end
  if not proc then
    scheduler.complete(rec, nil, serr)
    return nil, serr
  end
  rec.proc = proc
  PP.state(proc).rec = rec
  return proc
end

--- Tracked processes: { pid, command, running, exit_code }.
function Manager:list()
  local out = {}
  for i, h in ipairs(SP.list(self.sandbox)) do
    out[i] = { pid = h.pid, command = h.command, running = h.running, exit_code = h.exit_code }
  end
  return out
end

local function check_pid(fname, pid)
  if type(pid) == "number" then pid = tostring(compat.tointeger(pid) or pid) end
  if type(pid) ~= "string" then argerror(1, fname, "pid string expected, got " .. type(pid)) end
  return pid
end

--- The handle for pid, or nil. An exited process is returned once more,
-- then forgotten.
function Manager:get(pid)
  pid = check_pid("get", pid)
  if self.sandbox.status == "destroyed" then return nil end
  return SP.get(self.sandbox, pid)
end

--- Kills pid, waits for it to end and forgets it. False for an unknown or
-- already exited process.
function Manager:kill(pid)
  pid = check_pid("kill", pid)
  if self.sandbox.status == "destroyed" then return false end
  for _, h in ipairs(SP.list(self.sandbox)) do
    if h.pid == pid then
      if not h.running or not PP.kill(h) then return false end
      h:wait()
      PP.untrack(h)
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
  return scheduler.await(PP.state(self).rec)
end

--- Kills the process group (SIGKILL). False if it had already exited.
function P:kill()
  check(self, core.Process, "kill")
  return PP.kill(self)
end

--- Writes to stdin: true, or nil, err when the process has exited.
function P:send_stdin(data)
  check(self, core.Process, "send_stdin")
  if type(data) ~= "string" then argerror(1, "send_stdin", "string expected, got " .. type(data)) end
  return PP.write(self, data)
end

function P:close_stdin()
  check(self, core.Process, "close_stdin")
  return PP.close_stdin(self)
end

-- ---- the rest of the sandbox ---------------------------------------------------

--- The sandbox's description. A running sandbox whose provider keeps
-- state remotely asks it first (platform: GET /sandbox/{id}); when that
-- fails, info() returns nil, err.
function S:info()
  check(self, core.Sandbox, "info")
  if self.status == "running" then
    local err = lifecycle(self, SP.refresh)
    if err then return nil, err end
  end
  return SP.info(self)
end

--- Text describing the sandbox for an agent.
function S:instructions(context)
  check(self, core.Sandbox, "instructions")
  local default = SP.default_instructions(self) or ""
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

-- Methods of some providers only: a descriptor's `methods` names them and
-- its folder's methods.lua defines each as fn(sb, options, ...); on a
-- sandbox of another provider they raise.
for _, d in ipairs(registry.descriptors()) do
  for _, name in ipairs(d.methods or {}) do
    if S[name] == nil then
      S[name] = function(self, ...)
        check(self, core.Sandbox, name)
        local fn = registry.get(self.provider).methods
        fn = fn and registry.module(self.provider, "methods")[name]
        if not fn then errors.misuse(("the %s provider has no method '%s'"):format(self.provider, name)) end
        return fn(self, state(self).options, ...)
      end
    end
  end
end

--- Creates a sandbox of provider `id` from validated options.
function M.new(id, opts)
  local desc = type(id) == "string" and registry.get(id)
  if not desc then
    local ids = {}
    for _, d in ipairs(registry.descriptors()) do ids[d.id] = true end
    local hint = type(id) == "string" and options.suggest(id, ids)
    errors.config(tostring(id), nil, ("Unknown sandbox provider '%s'%s"):format(options.shown(id),
      hint and (" (did you mean '" .. hint .. "'?)") or ""))
  end
  local o = options.validate(desc, opts)
  local ok, sb = pcall(core.new_sandbox, id, o)
  if not ok then
    -- the core's ConfigError / IsolationUnavailableError, at the caller's line
    if not errors.is(sb) then
      sb = errors.new("ConfigError", tostring(sb):gsub("^[^\n]-:%d+: ", ""), { provider = id })
    end
    errors.misuse(sb)
  end
  local st = state(sb)
  st.options = o
  st.clone_drops = desc.clone_drops
  st.processes = setmetatable({ sandbox = sb }, Manager)
  st.fs = require("sandkit.fs").new(registry.filesystem_backend(sb, o), {
    id = sb.id .. "-fs", name = sb.name .. " filesystem", provider = sb.provider, read_only = false,
  })
  return sb
end

return M
