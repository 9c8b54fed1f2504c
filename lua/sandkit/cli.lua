--- The `sandkit` command-line tool: `exec` (one sandbox, streamed output,
-- the command's exit code), `fleet` (N local sandboxes in parallel, a live
-- progress line on a terminal, a summary table) and `providers`.
-- bin/sandkit only calls main(); everything else is here so specs can
-- drive it. Values given with --env are never printed: not in errors, not
-- in the fleet summary (where they are masked in the output excerpts).
local sandkit = require "sandkit"
local compat = require "sandkit.compat"
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local registry = require "sandkit.registry"
local options = require "sandkit.options"

local M = {}

-- Exit codes of sandkit itself (the command's own code is passed through).
M.EXIT_USAGE = 2        -- bad flags or arguments
M.EXIT_FAILURE = 125    -- sandkit could not run the command (like timeout(1), docker)
M.EXIT_INTERRUPTED = 130

-- ---- provider flags -----------------------------------------------------------

-- The provider flags of `exec`, from the descriptors: an option whose spec
-- has flag = { name, arg, help, host_dir, temp_mode } is set by
-- --<name> <arg>. Sorted by name: { name, arg, help, by = { [id] = { key,
-- spec } }, ids = { id, ... } }.
local PROVIDER_FLAGS = {}
do
  local by_name = {}
  for _, d in ipairs(registry.descriptors()) do
    local keys = {}
    for key in pairs(d.options) do keys[#keys + 1] = key end
    table.sort(keys)
    for _, key in ipairs(keys) do
      local spec = d.options[key]
      if spec.flag then
        local f = by_name[spec.flag.name]
        if not f then
          f = { name = spec.flag.name, arg = spec.flag.arg or "VALUE", help = spec.flag.help or spec.description,
            by = {}, ids = {} }
          by_name[f.name] = f
          PROVIDER_FLAGS[#PROVIDER_FLAGS + 1] = f
        end
        f.by[d.id] = { key = key, spec = spec }
        f.ids[#f.ids + 1] = d.id
      end
    end
  end
  table.sort(PROVIDER_FLAGS, function(a, b) return a.name < b.name end)
end

-- "  --name ARG   text", text wrapped at 78 columns under column 23.
local function help_line(left, text)
  local out, line = {}, ("  %-19s "):format(left)
  if #line > 22 then out[1] = line; line = (" "):rep(22) end
  local first = true
  for word in text:gmatch("%S+") do
    if not first and #line + 1 + #word > 78 then
      out[#out + 1] = line
      line = (" "):rep(22) .. word
    else
      line = line .. (first and "" or " ") .. word
    end
    first = false
  end
  out[#out + 1] = line
  return table.concat(out, "\n") .. "\n"
end

local function provider_flag_help()
  local out = {}
  for _, f in ipairs(PROVIDER_FLAGS) do
    out[#out + 1] = help_line("--" .. f.name .. " " .. f.arg, table.concat(f.ids, ", ") .. ": " .. f.help)
  end
  return table.concat(out)
end

-- The flags of the local provider that fleet takes as they are (its
-- --workdir is its own: the parent of the clones' directories).
local FLEET_PROVIDER_FLAGS, IN_FLEET = {}, {}
for _, f in ipairs(PROVIDER_FLAGS) do
  if f.by["local"] and not f.by["local"].spec.flag.host_dir then
    FLEET_PROVIDER_FLAGS[#FLEET_PROVIDER_FLAGS + 1] = f
    IN_FLEET[f] = true
  end
end

-- The flag of provider id's option that is a directory on this machine
-- (flag.host_dir), as { key, spec }, or nil.
local function host_dir_option(id)
  for _, f in ipairs(PROVIDER_FLAGS) do
    local mine = f.by[id]
    if mine and mine.spec.flag.host_dir then return mine end
  end
end

local function fleet_flag_names()
  local names = {}
  for _, f in ipairs(FLEET_PROVIDER_FLAGS) do names[#names + 1] = "--" .. f.name end
  for _, n in ipairs({ "--timeout", "--cwd", "--env" }) do names[#names + 1] = n end
  return table.concat(names, ", ")
end

M.USAGE = ([[
Usage:
  sandkit exec [options] [--] CMD [ARG...]
  sandkit fleet N [options] [--] CMD [ARG...]
  sandkit providers [ID]
  sandkit cp [--opt KEY=VALUE]... SRC DST
  sandkit --help | --version

CMD is a shell command string used as it is ('ls | wc -l' works); each ARG
is quoted so that it arrives as exactly one argument.

exec: runs CMD in one sandbox, streams its stdout/stderr as they arrive and
exits with its exit code (124 on timeout, 128+N when ended by signal N).
  --provider ID       provider id (default: local; see `sandkit providers`)
@PROVIDER_FLAGS@  --timeout MS        kill the command after MS milliseconds (0: no timeout)
  --cwd DIR           directory the command runs in (relative: to the workdir)
  --env NAME=VALUE    set a variable (repeatable); --env NAME copies NAME
                      from sandkit's own environment (keeps values off the
                      command line). Values are never printed.
  --stdin             read sandkit's stdin to EOF and give it to CMD

fleet: runs CMD in N local sandboxes at once, each in its own working
directory (DIR/1 .. DIR/N), shows a live progress line when stdout is a
terminal, then a summary table (index, exit code, time, first output line)
and totals. Each command sees SANDKIT_INDEX (1..N) and SANDKIT_FLEET_SIZE.
Exits 0 when every command exited 0, 1 when any did not.
  --concurrency K     at most K commands at once (default: min(N, 64))
  @FLEET_FLAGS@   as for exec
  --workdir DIR       parent of the N working directories, kept afterwards
                      (default: a temporary directory, removed after)

cp: copies a file between this machine (local:PATH or a plain path) and a
sandbox (PROVIDER:PATH, e.g. platform:/data/x.bin), streaming; a progress
line shows on a terminal for files of 8 MiB and more. --opt KEY=VALUE sets a
provider option (repeatable), e.g. --opt sandbox_id=ID to reach a running
Platform sandbox; tokens come from the environment only
(@SECRET_VARS@).
The sandbox is left running.

Exit status: the command's (exec), 0/1 (fleet), 2 for usage errors, 125 when
sandkit itself failed, 130 when interrupted.
]]):gsub("@PROVIDER_FLAGS@", function() return provider_flag_help() end)
  :gsub("@FLEET_FLAGS@", function() return fleet_flag_names() end)
  :gsub("@SECRET_VARS@", function()
    local vars = {}
    for _, d in ipairs(registry.descriptors()) do
      for _, spec in pairs(d.options) do
        if spec.secret and spec.env then vars[#vars + 1] = spec.env end
      end
    end
    table.sort(vars)
    return table.concat(vars, ", ")
  end)

-- ---- small helpers -----------------------------------------------------------

local function usage_error(msg)
  error({ usage = msg }, 0)
end

-- " (did you mean 'x'?)" for a name close to one of `names` (a set), or "".
local function did_you_mean(name, names, prefix)
  local hint = options.suggest(name, names)
  return hint and (" (did you mean '%s%s'?)"):format(prefix or "", hint) or ""
end

local COMMANDS = { exec = true, fleet = true, providers = true, cp = true, help = true, version = true }

local function shell_quote(s) return core.quote(s) end

--- A fresh temporary directory for the host directory option `dir` (as
-- host_dir_option returns it) of a sandbox with options `opts`: its
-- flag's temp_mode(opts) says when the sandbox's user must be able to
-- enter it (local under bwrap, run by root: nobody reaches the working
-- directory inside; searchable, not listable).
local function make_temp_dir(dir, opts)
  local p = io.popen("mktemp -d \"${TMPDIR:-/tmp}/sandkit.XXXXXX\"", "r")
  if not p then return nil end
  local path = p:read("*l")
  p:close()
  if not path or path == "" then return nil end
  local mode = dir.spec.flag.temp_mode and dir.spec.flag.temp_mode(opts)
  if mode then os.execute("chmod " .. mode .. " " .. shell_quote(path)) end
  return path
end

local function remove_tree(dir)
  if dir and dir ~= "" and dir ~= "/" then
    os.execute("rm -rf -- " .. shell_quote(dir))
  end
end

--- True when file descriptor 1 is a terminal.
function M.stdout_is_tty()
  local r = os.execute("test -t 1")
  return r == true or r == 0 -- 0: Lua 5.1 and LuaJIT report the status alone
end

local function is_interrupt(err)
  return type(err) == "string" and err:find("interrupted!", 1, true) ~= nil
end

-- ---- argument parsing ---------------------------------------------------------

-- Flags by command: name -> kind ("value", "env", "switch"); the provider
-- flags are values too.
local FLAGS = {
  exec = { provider = "value", timeout = "value", cwd = "value", env = "env", stdin = "switch" },
  fleet = { concurrency = "value", timeout = "value", cwd = "value", env = "env", workdir = "value" },
}
for _, f in ipairs(PROVIDER_FLAGS) do FLAGS.exec[f.name] = "value" end
for _, f in ipairs(FLEET_PROVIDER_FLAGS) do FLAGS.fleet[f.name] = "value" end

-- Checks the provider flags given against the provider's descriptor:
-- each must be one of its options, within its enum; values become the
-- option's type. o.provider_options gets them by option key.
local function check_provider_flags(o)
  o.provider_options = {}
  for _, f in ipairs(PROVIDER_FLAGS) do
    local v = o[f.name]
    local given = v ~= nil and (o.command ~= "fleet" or IN_FLEET[f])
    if given then
      local mine = f.by[o.provider]
      if not mine then
        usage_error(("--%s applies to --provider %s only"):format(f.name, table.concat(f.ids, " or ")))
      end
      local spec = mine.spec
      if v == "" then usage_error(("--%s expects a non-empty value"):format(f.name)) end
      if spec.enum then
        local ok = false
        for _, e in ipairs(spec.enum) do ok = ok or e == v end
        if not ok then
          usage_error(("--%s expects %s (got '%s')"):format(f.name, table.concat(spec.enum, " or "), v))
        end
      end
      local t = type(spec.type) == "table" and spec.type[1] or spec.type
      if t == "integer" or t == "number" then
        v = (t == "integer" and compat.tointeger(tonumber(v))) or (t == "number" and tonumber(v))
        if not v then usage_error(("--%s expects a%s number (got '%s')"):format(f.name,
          t == "integer" and " whole" or "", o[f.name])) end
      end
      o.provider_options[mine.key] = v
    end
  end
end

local function parse_positive_int(flag, v, max)
  local n = v:match("^%d+$") and compat.tointeger(tonumber(v))
  if not n or n < 1 or (max and n > max) then
    usage_error(("%s expects a positive integer%s (got '%s')"):format(flag,
      max and (" up to " .. max) or "", v))
  end
  return n
end

-- --timeout: whole milliseconds, named as the option errors name them; 0
-- is no timeout, as for the timeout option.
local function parse_timeout(v)
  local n = v:match("^%d+$") and compat.tointeger(tonumber(v))
  if not n or n >= 2^53 then
    usage_error(("--timeout expects a whole number of milliseconds, 0 for none (got '%s')"):format(v))
  end
  return n
end

-- What a flag's missing value should have been, for its error.
local VALUE_KINDS = { timeout = "a whole number of milliseconds" }

-- `--env` entries: NAME=VALUE, or NAME (value from our environment). The
-- value never appears in a message; a bad entry is named by its position.
local function parse_env(o, v, position, getenv)
  local name, value = v:match("^([^=]*)=(.*)$")
  if not name then
    name = v
    if not name:match("^[%a_][%w_]*$") then
      usage_error(("--env (argument %d) expects NAME=VALUE or NAME"):format(position))
    end
    value = getenv(name)
    if value == nil then
      usage_error(("--env (argument %d): the variable is not set in sandkit's environment"):format(position))
    end
  elseif name == "" then
    usage_error(("--env (argument %d) has an empty variable name"):format(position))
  elseif name:find("\0", 1, true) or value:find("\0", 1, true) then
    usage_error(("--env (argument %d) contains a NUL byte"):format(position))
  end
  o.env = o.env or {}
  o.env[name] = value
  o.env_values = o.env_values or {}
  o.env_values[#o.env_values + 1] = value
end

--- Parses argv (without the program name). Returns a table
-- { command = "exec"|"fleet"|"providers"|"help"|"version", ... } or raises
-- { usage = message }.
function M.parse(argv, getenv)
  getenv = getenv or os.getenv
  local first = argv[1]
  -- bare `sandkit` is a usage error, as for git and luarocks
  if first == nil then return { command = "help", bare = true } end
  if first == "--help" or first == "-h" or first == "help" then
    return { command = "help" }
  end
  if first == "--version" or first == "version" then return { command = "version" } end
  if first == "providers" then
    if #argv > 2 then usage_error("providers takes at most one provider id") end
    if argv[2] and argv[2]:sub(1, 1) == "-" then
      if argv[2] == "--help" or argv[2] == "-h" then return { command = "help" } end
      usage_error(("unknown flag '%s' for providers"):format(argv[2]))
    end
    return { command = "providers", id = argv[2] }
  end
  if first == "cp" then
    if argv[2] == "--help" or argv[2] == "-h" then return { command = "help" } end
    local o = require("sandkit.cli_cp").parse({ compat.unpack(argv, 2, #argv) })
    o.command = "cp"
    return o
  end
  local flags = FLAGS[first]
  if not flags then
    if first:sub(1, 1) == "-" then usage_error(("unknown flag '%s'"):format(first)) end
    local hint = did_you_mean(first, COMMANDS)
    usage_error(("unknown command '%s'%s"):format(first, hint ~= "" and hint or " (expected exec, fleet, providers or cp)"))
  end
  local o = { command = first, args = {} }
  local i = 2
  if first == "fleet" then
    local n = argv[2]
    if n == "--help" or n == "-h" then return { command = "help" } end
    if n == nil or n:sub(1, 1) == "-" then usage_error("fleet expects the number of sandboxes N first") end
    o.n = parse_positive_int("fleet N", n, 10000)
    i = 3
  end
  while i <= #argv do
    local a = argv[i]
    if a == "--" then
      i = i + 1
      break
    elseif a == "--help" or a == "-h" then
      return { command = "help" }
    elseif a:sub(1, 2) == "--" then
      local name, inline = a:match("^%-%-([^=]+)=(.*)$")
      name = name or a:sub(3)
      local kind = flags[name]
      if not kind then usage_error(("unknown flag '--%s' for %s%s"):format(name, first, did_you_mean(name, flags, "--"))) end
      local v
      if kind == "switch" then
        if inline then usage_error(("--%s takes no value"):format(name)) end
        v = true
      elseif inline then
        v = inline
      else
        i = i + 1
        v = argv[i]
        if v == nil then
          usage_error(("--%s expects %s"):format(name, VALUE_KINDS[name] or "a value"))
        end
      end
      if kind == "env" then
        parse_env(o, v, i, getenv)
      elseif name ~= "env" and o[name] ~= nil then
        usage_error(("--%s given twice"):format(name))
      else
        o[name] = v
      end
      i = i + 1
    elseif a:sub(1, 1) == "-" and #a > 1 then
      usage_error(("unknown flag '%s' for %s"):format(a, first))
    else
      break -- the command starts here
    end
  end
  o.cmd = argv[i]
  if o.cmd == nil then usage_error(first .. " expects a command (sandkit " .. first .. " [options] -- CMD [ARG...])") end
  if o.cmd:find("\0", 1, true) then usage_error("the command contains a NUL byte") end
  for j = i + 1, #argv do o.args[#o.args + 1] = argv[j] end

  if o.timeout then o.timeout = parse_timeout(o.timeout) end
  if o.concurrency then o.concurrency = parse_positive_int("--concurrency", o.concurrency) end
  if o.provider == nil then o.provider = "local" end
  for _, key in ipairs { "cwd", "workdir", "provider" } do
    if o[key] == "" then usage_error(("--%s expects a non-empty value"):format(key)) end
  end
  if o.command == "fleet" then o.provider = "local" end
  -- an unknown --provider is sandkit.new's ConfigError (exit 2) later
  if registry.get(o.provider) then check_provider_flags(o) else o.provider_options = {} end
  return o
end

-- ---- output masking -------------------------------------------------------------

-- Replaces every --env value found in s (longest first) by "***".
local function masker(values)
  local list = {}
  for _, v in ipairs(values or {}) do
    if v ~= "" then list[#list + 1] = v end
  end
  table.sort(list, function(a, b) return #a > #b end)
  return function(s)
    for _, v in ipairs(list) do
      local out, pos = {}, 1
      while true do
        local a, b = s:find(v, pos, true)
        if not a then break end
        out[#out + 1] = s:sub(pos, a - 1)
        out[#out + 1] = "***"
        pos = b + 1
      end
      out[#out + 1] = s:sub(pos)
      s = table.concat(out)
    end
    return s
  end
end

-- An error object or message as one line, with env values masked.
local function describe_error(err, mask)
  local s
  if errors.is(err) then s = tostring(err)
  elseif type(err) == "table" and err.message then s = tostring(err.message)
  else s = tostring(err) end
  return mask(s)
end

-- ---- sandkit exec -----------------------------------------------------------------

local function run_exec(o, env)
  local out, errout = env.stdout, env.stderr
  local mask = masker(o.env_values)
  -- the provider's flags; a directory on this machine it was not given is a
  -- temporary one, removed after
  local opts, temp = {}, nil
  for k, v in pairs(o.provider_options) do opts[k] = v end
  local dir = host_dir_option(o.provider)
  if dir and opts[dir.key] == nil then
    temp = make_temp_dir(dir, opts)
    if not temp then
      errout:write("sandkit: could not create a temporary directory\n")
      return M.EXIT_FAILURE
    end
    opts[dir.key] = temp .. "/workspace"
  end
  local input
  if o.stdin then input = env.stdin:read("*a") or "" end

  local sb, op, write_failed
  local stderr_ends_line = true -- whether the command's stderr so far ends a line
  local function body()
    sb = sandkit.new(o.provider, opts)
    local ok, err = sb:start()
    if not ok then return nil, err end
    -- Output goes straight through; a reader that went away cancels the command.
    local function pass(stream, is_stderr)
      return function(chunk)
        if is_stderr then stderr_ends_line = chunk:sub(-1) == "\n" end
        if write_failed then return end
        local w = stream:write(chunk)
        if w then w = stream:flush() end
        if not w then
          write_failed = true
          if op then op:cancel() end
        end
      end
    end
    op = sb:exec_async(o.cmd, o.args, {
      timeout = o.timeout, cwd = o.cwd, env = o.env, stdin = input,
      on_stdout = pass(out), on_stderr = pass(errout, true), capture = false,
    })
    return op:wait()
  end

  local ok, result, err = pcall(body)
  local code
  if not ok then
    err = result
    if is_interrupt(err) then
      code = M.EXIT_INTERRUPTED
      if op then pcall(function() op:cancel(); op:wait() end) end
    else
      errout:write("sandkit: ", describe_error(err, mask), "\n")
      code = (errors.is(err, "ConfigError")) and M.EXIT_USAGE or M.EXIT_FAILURE
    end
  elseif not result then
    errout:write("sandkit: ", describe_error(err, mask), "\n")
    code = M.EXIT_FAILURE
  elseif write_failed then
    code = 141 -- as if killed by SIGPIPE, like any writer to a closed pipe
  else
    code = result.exit_code
    -- The timeout note is not the command's output (no callback gets it):
    -- say it here, on a line of its own, for every provider.
    if result.timed_out then
      errout:write(stderr_ends_line and "" or "\n", "sandkit: the command timed out",
        o.timeout and (" after " .. o.timeout .. " ms") or "", " (exit 124)\n")
    end
  end
  if sb then pcall(sb.destroy, sb) end
  remove_tree(temp)
  return code
end

-- ---- sandkit fleet ------------------------------------------------------------------

local function first_line(s)
  local line = s:match("^[%s]*([^\n]*)") or ""
  line = line:gsub("\r$", ""):gsub("[%c]", "?")
  return line
end

local function truncate(s, width)
  if #s <= width then return s end
  return s:sub(1, width - 3) .. "..."
end

local function median(sorted)
  local n = #sorted
  if n == 0 then return 0 end
  if n % 2 == 1 then return sorted[(n + 1) / 2] end
  return (sorted[n / 2] + sorted[n / 2 + 1]) / 2
end

--- The summary table and totals as a string (rows: { index, exit_code,
-- time_ms, output, failed, timed_out, error }).
function M.format_summary(rows, wall_ms)
  local lines = {}
  lines[#lines + 1] = ("%5s  %5s  %9s  %s"):format("#", "exit", "time ms", "output")
  local times, failed, timed_out = {}, 0, 0
  for _, r in ipairs(rows) do
    local exit = r.error and "ERR" or tostring(r.exit_code)
    local time = r.time_ms and ("%.1f"):format(r.time_ms) or "-"
    lines[#lines + 1] = ("%5d  %5s  %9s  %s"):format(r.index, exit, time, r.output or "")
    if r.time_ms then times[#times + 1] = r.time_ms end
    if r.failed then failed = failed + 1 end
    if r.timed_out then timed_out = timed_out + 1 end
  end
  table.sort(times)
  local sum = 0
  for _, t in ipairs(times) do sum = sum + t end
  lines[#lines + 1] = ("%d sandboxes: %d ok, %d failed%s"):format(#rows, #rows - failed, failed,
    timed_out > 0 and (" (%d timed out)"):format(timed_out) or "")
  if #times > 0 then
    lines[#lines + 1] = ("time ms: min %.1f, median %.1f, max %.1f; sum %.1f, wall %.1f")
      :format(times[1], median(times), times[#times], sum, wall_ms)
  end
  return table.concat(lines, "\n") .. "\n"
end

local function run_fleet(o, env)
  local out, errout = env.stdout, env.stderr
  local mask = masker(o.env_values)
  local n = o.n
  local limit = math.min(o.concurrency or math.min(n, 64), n)
  local dir = host_dir_option("local")
  local base, temp = o.workdir, nil
  if not base then
    temp = make_temp_dir(dir, o.provider_options)
    if not temp then
      errout:write("sandkit: could not create a temporary directory\n")
      return M.EXIT_FAILURE
    end
    base = temp
  end

  local function options_for(i)
    local e = { SANDKIT_INDEX = tostring(i), SANDKIT_FLEET_SIZE = tostring(n) }
    for k, v in pairs(o.env or {}) do e[k] = v end
    local opts = { env = e }
    for k, v in pairs(o.provider_options) do opts[k] = v end
    opts[dir.key] = base .. "/" .. i
    return opts
  end

  local rows = {}
  local ops = {}            -- index -> running operation (for an interrupt)
  local running, done, failed = 0, 0, 0
  local stopping = false
  local started = core.now()
  local tty = env.isatty()

  local function progress()
    out:write(("\r\27[Kfleet: %d/%d done, %d running, %d failed, %.1fs"):format(
      done, n, running, failed, (core.now() - started) / 1000))
    out:flush()
  end

  local function run_one(i)
    local row = { index = i }
    rows[i] = row
    local sb = sandkit.LocalSandbox(options_for(i))
    local ok, err = sb:start()
    local result
    if ok then
      local op = sb:exec_async(o.cmd, o.args, { timeout = o.timeout, cwd = o.cwd })
      ops[i] = op
      result, err = op:wait()
      ops[i] = nil
    end
    if result then
      row.exit_code, row.time_ms, row.timed_out = result.exit_code, result.execution_time_ms, result.timed_out
      row.failed = result.exit_code ~= 0
      local text = result.stdout
      if not text:find("%S") then text = result.stderr end
      row.output = truncate(first_line(mask(text)), 48)
    else
      row.error, row.failed = true, true
      row.output = truncate(describe_error(err, mask):gsub("[%c]", "?"), 48)
    end
    sb:destroy()
  end

  local interrupted -- the interrupt, when it landed inside a job

  -- One job per sandbox for sandkit.all, which runs `limit` at once.
  local jobs = {}
  for i = 1, n do
    jobs[i] = function()
      if stopping then return nil end
      running = running + 1
      local ok, err = compat.pcall(run_one, i)
      running = running - 1
      if not ok then
        if is_interrupt(err) then
          -- stop handing out work and kill what runs; all() then returns
          interrupted, stopping = err, true
          for _, op in pairs(ops) do pcall(op.cancel, op) end
          return nil
        end
        local row = rows[i] or { index = i }
        rows[i] = row
        row.error, row.failed = true, true
        row.output = truncate(describe_error(err, mask):gsub("[%c]", "?"), 48)
      end
      if rows[i].failed then failed = failed + 1 end
      return true
    end
  end

  -- Misuse (e.g. bwrap missing) raises here, before anything runs.
  local ok, err = pcall(sandkit.LocalSandbox, options_for(1))
  if not ok then
    errout:write("sandkit: ", describe_error(err, mask), "\n")
    remove_tree(temp)
    return errors.is(err, "ConfigError") and M.EXIT_USAGE or M.EXIT_FAILURE
  end

  -- The progress line follows all()'s on_progress; the ticker below only
  -- keeps its clock moving while nothing finishes.
  sandkit.spawn(function()
    sandkit.all(jobs, { concurrency = limit, on_progress = function(d)
      done = d
      if tty and not stopping then progress() end
    end })
  end)
  if tty then
    sandkit.spawn(function()
      while done < n and not stopping do
        progress()
        sandkit.sleep(0.1)
      end
    end)
  end
  local run_ok, run_err = pcall(sandkit.run)
  if run_ok and interrupted then run_ok, run_err = false, interrupted end
  local wall = core.now() - started
  if not run_ok then
    -- Interrupted (or a bug): stop handing out work, kill what runs, let
    -- the workers destroy their sandboxes, then clean up.
    stopping = true
    for _, op in pairs(ops) do pcall(op.cancel, op) end
    pcall(sandkit.run)
    if tty then out:write("\r\27[K") end
    remove_tree(temp)
    if is_interrupt(run_err) then return M.EXIT_INTERRUPTED end
    errout:write("sandkit: ", describe_error(run_err, mask), "\n")
    return M.EXIT_FAILURE
  end
  if tty then out:write("\r\27[K") end
  out:write(M.format_summary(rows, wall))
  out:flush()
  remove_tree(temp)
  return failed == 0 and 0 or 1
end

-- ---- sandkit providers ----------------------------------------------------------------

local function run_providers(o, env)
  local out = env.stdout
  local list = sandkit.providers()
  if not o.id then
    for _, p in ipairs(list) do
      out:write(("%-16s %-22s %s\n"):format(p.id, p.name, p.description or ""))
    end
    return 0
  end
  for _, p in ipairs(list) do
    if p.id == o.id then
      out:write(("%s (%s): %s\n\noptions:\n"):format(p.name, p.id, p.description or ""))
      local keys = {}
      for k in pairs(p.options) do keys[#keys + 1] = k end
      table.sort(keys)
      for _, k in ipairs(keys) do
        local spec = p.options[k]
        local default = spec.default ~= nil and (" (default: " .. options.render_default(spec.default) .. ")") or ""
        out:write(("  %-20s %-16s %s%s\n"):format(k, spec.type or "", spec.description or "", default))
      end
      return 0
    end
  end
  env.stderr:write(("sandkit: unknown provider '%s' (see `sandkit providers`)\n"):format(o.id))
  return M.EXIT_USAGE
end

-- ---- entry point ------------------------------------------------------------------------

--- Runs the tool; returns the exit status. `env` (optional) supplies
-- stdout, stderr, stdin, isatty() and getenv() for tests.
function M.main(argv, env)
  env = env or {}
  env.stdout = env.stdout or io.stdout
  env.stderr = env.stderr or io.stderr
  env.stdin = env.stdin or io.stdin
  env.isatty = env.isatty or M.stdout_is_tty
  env.getenv = env.getenv or os.getenv
  local ok, o = pcall(M.parse, argv, env.getenv)
  if not ok then
    if type(o) == "table" and o.usage then
      env.stderr:write("sandkit: ", o.usage, "\n", "Try 'sandkit --help'.\n")
      return M.EXIT_USAGE
    end
    error(o, 0)
  end
  if o.command == "help" then
    if o.bare then
      env.stderr:write(M.USAGE)
      return M.EXIT_USAGE
    end
    env.stdout:write(M.USAGE)
    return 0
  elseif o.command == "version" then
    env.stdout:write("sandkit ", tostring(sandkit._VERSION), "\n")
    return 0
  elseif o.command == "providers" then
    return run_providers(o, env)
  elseif o.command == "exec" then
    return run_exec(o, env)
  elseif o.command == "cp" then
    return require("sandkit.cli_cp").run(o, env, { usage = M.EXIT_USAGE, failure = M.EXIT_FAILURE })
  end
  return run_fleet(o, env)
end

return M
