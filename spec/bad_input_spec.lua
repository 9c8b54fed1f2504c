-- Bad input (issue 7): a generated table over every provider option (from
-- sandkit.providers()) and every public function and method, fed nil,
-- wrong types, empty strings, NUL bytes, 16 MiB strings, negative,
-- non-integer, NaN and infinite numbers, unknown keys and env names with
-- '='. Each must give an error that names the argument or key — raised
-- (misuse) or returned as nil, err (a runtime failure) — never a crash or a
-- hang. Values a provider may legitimately accept ("maybe" rows) must
-- either work or fail the same clear way; accepted LocalSandbox options
-- are also started and run once.
local sandkit = require "sandkit"
local errors = sandkit.errors
local tmp = require "helpers.tmp"

teardown(tmp.cleanup)

local HUGE = ("x"):rep(16 * 1024 * 1024)
local NAN, INF = 0 / 0, math.huge

-- Options that construct without I/O and without credentials from the
-- environment, per provider; the key under test is set on top. A provider
-- without a row here is checked with {} for its must-fail rows only.
local BASE = require "helpers.offline_options"

local function message_of(err)
  if errors.is(err) then return err.kind .. ": " .. tostring(err.message) end
  return tostring(err)
end

local function pack(...) return { n = select("#", ...), ... } end

-- Runs fn; returns "ok" | "raised" | "failed" (nil, err) and the message.
local function outcome(fn)
  local res = pack(pcall(fn))
  if not res[1] then return "raised", message_of(res[2]) end
  if res[2] == nil and res.n >= 3 then return "failed", message_of(res[3]) end
  return "ok", nil, res[2]
end

-- must: "error" (raised or nil, err) or "maybe" (also accepted).
local function check(must, mention, fn)
  local how, msg, value = outcome(fn)
  if how == "ok" then
    assert(must == "maybe", "accepted; expected an error mentioning " .. mention)
    return value
  end
  assert(msg:find(mention, 1, true), ("error does not mention %q: %s"):format(mention, msg:sub(1, 300)))
  -- messages stay readable: a 16 MiB value is not echoed back whole
  assert(#msg < 64 * 1024, "error message of " .. #msg .. " bytes")
  return nil
end

-- ---- provider options -------------------------------------------------------

local WRONG_TYPES = { true, 42, "str", {}, function() end }

local function accepts(t, v)
  for name in t:gmatch("[^|]+") do
    if name == "string" and type(v) == "string" then return true end
    if name == "number" and type(v) == "number" then return true end
    if name == "integer" and type(v) == "number" and v == math.floor(v) then return true end
    if name == "boolean" and type(v) == "boolean" then return true end
    if name == "function" and type(v) == "function" then return true end
    if (name == "env" or name == "map" or name == "array" or name == "table") and type(v) == "table" then return true end
  end
  return false
end

-- The bad values for an option of type t: { value, must, label }.
local function bad_values(t)
  local rows = {}
  local function add(v, must, label) rows[#rows + 1] = { v, must, label } end
  for _, v in ipairs(WRONG_TYPES) do
    if not accepts(t, v) then add(v, "error", "a " .. type(v)) end
  end
  if accepts(t, "") then
    add("", "maybe", "an empty string")
    add("a\0b", "error", "a NUL byte")
    add(HUGE, "maybe", "a 16 MiB string")
  end
  if accepts(t, 1.5) or accepts(t, 1) then
    add(-1, "maybe", "-1")
    add(1.5, accepts(t, 1.5) and "maybe" or "error", "1.5")
    add(NAN, "error", "NaN")
    add(INF, "error", "inf")
    add(-INF, "error", "-inf")
  end
  if t:find("env", 1, true) then
    add({ ["A=B"] = "v" }, "error", "a name with '='")
    add({ [""] = "v" }, "error", "an empty name")
    add({ A = "x\0y" }, "error", "a NUL in a value")
    add({ ["A\0B"] = "v" }, "error", "a NUL in a name")
    add({ A = {} }, "error", "a table value")
    add({ "positional" }, "error", "a non-string name")
  end
  if t:find("array", 1, true) then
    add({ {} }, "error", "a table element")
    add({ [1] = "a", [3] = "b" }, "error", "a sparse array")
    add({ k = "v" }, "error", "a string key")
  end
  if t == "table" then -- a shape the option's own check knows (docker's ports)
    add({ {} }, "error", "an empty table element")
    add({ k = "v" }, "error", "a string key")
  end
  if t:find("map", 1, true) then
    add({ "positional" }, "error", "a non-string key")
    add({ k = {} }, "error", "a table value")
    add({ k = "a\0b" }, "error", "a NUL in a value")
  end
  return rows
end

-- Starts and runs a command on an accepted LocalSandbox: no crash, and a
-- failure is an error object.
local function exercise_local(sb)
  local ok, err = sb:start()
  if ok then
    local r, xerr = sb:exec("true")
    assert(r or errors.is(xerr), tostring(xerr))
  else
    assert.is_true(errors.is(err), tostring(err))
  end
  sb:destroy()
end

for _, d in ipairs(sandkit.providers()) do
  describe(d.name .. " options", function()
    local base = BASE[d.id] or function() return {} end

    it("constructs from the base options used below", function()
      assert(BASE[d.id], "add a base row for " .. d.id .. " to bad_input_spec.lua")
      assert.truthy(sandkit.new(d.id, base()))
    end)

    local keys = {}
    for k in pairs(d.options) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, key in ipairs(keys) do
      local t = d.options[key].type
      for _, row in ipairs(bad_values(t)) do
        local v, must, label = row[1], row[2], row[3]
        if BASE[d.id] or must == "error" then
          it(("%s = %s (%s)"):format(key, label, must), function()
            local opts = base()
            opts[key] = v
            local sb = check(must, key, function() return sandkit.new(d.id, opts) end)
            if sb and d.id == "local" then exercise_local(sb) end
          end)
        end
      end
    end

    it("an unknown key is named", function()
      local opts = base()
      opts.no_such_option_xyz = 1
      check("error", "no_such_option_xyz", function() return sandkit.new(d.id, opts) end)
    end)

    it("a 16 MiB unknown key is named, shortened", function()
      local opts = base()
      opts[HUGE] = 1
      check("error", "xxxxxxxx...", function() return sandkit.new(d.id, opts) end)
    end)

    it("a non-string key is refused", function()
      local opts = base()
      opts[1] = "positional"
      check("error", "string keys", function() return sandkit.new(d.id, opts) end)
    end)

    it("options that are not a table are refused", function()
      for _, v in ipairs({ 42, "str", true, function() end }) do
        check("error", "table expected", function() return sandkit.new(d.id, v) end)
      end
    end)
  end)
end

-- ---- public functions and methods -------------------------------------------------

describe("module functions", function()
  local rows = {
    { "new(nil)", "#1", function() return sandkit.new(nil, {}) end },
    { "new(42)", "#1", function() return sandkit.new(42, {}) end },
    { "new('')", "provider", function() return sandkit.new("", {}) end },
    { "new(NUL)", "provider", function() return sandkit.new("lo\0cal", {}) end },
    { "new(huge)", "provider", function() return sandkit.new(HUGE, {}) end },
    { "step('x')", "step", function() return sandkit.step("x") end },
    { "step(-1)", "step", function() return sandkit.step(-1) end },
    { "step(NaN)", "step", function() return sandkit.step(NAN) end },
    { "sleep(nil)", "sleep", function() return sandkit.sleep(nil) end },
    { "sleep(-1)", "sleep", function() return sandkit.sleep(-1) end },
    { "sleep(NaN)", "sleep", function() return sandkit.sleep(NAN) end },
    { "sleep(inf)", "sleep", function() return sandkit.sleep(INF) end },
    { "sleep('1')", "sleep", function() return sandkit.sleep("1") end },
    { "spawn(nil)", "spawn", function() return sandkit.spawn(nil) end },
    { "spawn('f')", "spawn", function() return sandkit.spawn("f") end },
    { "all(nil)", "all", function() return sandkit.all(nil) end },
    { "all({1})", "all", function() return sandkit.all({ 1 }) end },
    { "all({{}})", "all", function() return sandkit.all({ {} }) end },
    { "fleet(nil, 2)", "fleet", function() return sandkit.fleet(nil, 2) end },
    { "quote(nil)", "#1", function() return sandkit.quote(nil) end },
    { "quote({})", "#1", function() return sandkit.quote({}) end },
    { "quote(NUL)", "NUL", function() return sandkit.quote("a\0b") end },
  }
  for _, row in ipairs(rows) do
    it(row[1], function() check("error", row[2], row[3]) end)
  end

  it("step(inf) on an idle loop returns", function()
    assert.is_boolean(sandkit.step(INF))
  end)

  it("quote(16 MiB) quotes it whole", function()
    assert.equal(#HUGE, #sandkit.quote(HUGE))
  end)

  describe("fleet", function()
    local template = sandkit.LocalSandbox { working_directory = tmp.dir() }
    for _, row in ipairs({
      { "n = nil", nil }, { "n = 0", 0 }, { "n = -1", -1 }, { "n = 1.5", 1.5 }, { "n = NaN", NAN },
      { "n = inf", INF }, { "n = '2'", "2" },
    }) do
      it(row[1], function() check("error", "#2", function() return sandkit.fleet(template, row[2]) end) end)
    end
  end)
end)

describe("Sandbox methods", function()
  local sb = sandkit.LocalSandbox { working_directory = tmp.dir() }
  teardown(function() sb:destroy() end)

  local methods = { "start", "stop", "destroy", "exec", "exec_async", "info", "instructions", "clone", "ensure_running" }
  for _, m in ipairs(methods) do
    it(m .. " on a non-sandbox names the class", function()
      for _, self in ipairs({ false, 42, "sb", {} }) do
        check("error", "sandkit.Sandbox expected", function() return sb[m](self) end)
      end
    end)
  end

  local exec_rows = {
    -- label, must, mention, command, args, opts
    { "command nil", "error", "#1", nil },
    { "command number", "error", "#1", 42 },
    { "command table", "error", "#1", {} },
    { "command NUL", "error", "NUL", "echo a\0b" },
    { "command empty", "maybe", "command", "" },
    { "command 16 MiB", "maybe", "argument list too long", HUGE },
    { "args string", "error", "#2", "echo", "x" },
    { "args with a table", "error", "args[1]", "echo", { {} } },
    { "args with a NUL", "error", "NUL", "echo", { "a\0b" } },
    { "args sparse", "error", "#2", "echo", { [1] = "a", [3] = "b" } },
    { "args with a key", "error", "#2", "echo", { k = "v" } },
    { "args 16 MiB", "maybe", "argument list too long", "echo", { HUGE } },
    { "opts string", "error", "#3", "true", nil, "x" },
    { "opts unknown key", "error", "frobnicate", "true", nil, { frobnicate = 1 } },
    { "opts non-string key", "error", "string keys", "true", nil, { "positional" } },
    { "opts 16 MiB key", "error", "Unknown option", "true", nil, { [HUGE] = 1 } },
    { "timeout string", "error", "timeout", "true", nil, { timeout = "1" } },
    { "timeout negative", "error", "timeout", "true", nil, { timeout = -1 } },
    { "timeout NaN", "error", "timeout", "true", nil, { timeout = NAN } },
    { "timeout inf", "error", "timeout", "true", nil, { timeout = INF } },
    { "timeout 1.5", "maybe", "timeout", "true", nil, { timeout = 1.5 } },
    { "cwd number", "error", "cwd", "true", nil, { cwd = 1 } },
    { "cwd NUL", "error", "cwd", "true", nil, { cwd = "a\0b" } },
    { "cwd empty", "maybe", "cwd", "true", nil, { cwd = "" } },
    { "cwd missing", "maybe", "/no/such/dir-bad-input", "true", nil, { cwd = "/no/such/dir-bad-input" } },
    { "cwd 16 MiB", "maybe", "cwd", "true", nil, { cwd = HUGE } },
    { "env string", "error", "env", "true", nil, { env = "A=B" } },
    { "env name with =", "error", "A=B", "true", nil, { env = { ["A=B"] = "v" } } },
    { "env empty name", "error", "env", "true", nil, { env = { [""] = "v" } } },
    { "env NUL value", "error", "env", "true", nil, { env = { A = "a\0b" } } },
    { "env table value", "error", "env", "true", nil, { env = { A = {} } } },
    { "env 16 MiB value", "maybe", "environment", "true", nil, { env = { BIG = HUGE } } },
    { "env 16 MiB name", "error", "env", "true", nil, { env = { [HUGE .. "="] = "v" } } },
    { "stdin number", "error", "stdin", "cat", nil, { stdin = 1 } },
    { "stdin 16 MiB", "maybe", "stdin", "wc -c", nil, { stdin = HUGE } },
    { "on_stdout string", "error", "on_stdout", "true", nil, { on_stdout = "print" } },
    { "on_stderr table", "error", "on_stderr", "true", nil, { on_stderr = {} } },
    { "capture string", "error", "capture", "true", nil, { capture = "yes" } },
  }
  for _, fname in ipairs({ "exec", "exec_async" }) do
    for _, row in ipairs(exec_rows) do
      it(("%s: %s"):format(fname, row[1]), function()
        local r = check(row[2], row[3], function()
          local res, err = sb[fname](sb, row[4], row[5], row[6])
          if fname == "exec_async" and res then return res:wait() end
          return res, err
        end)
        if r and row[1] == "stdin 16 MiB" then assert.equal(#HUGE .. "\n", r.stdout) end
      end)
    end
  end

  it("clone: overrides not a table, or with bad values", function()
    check("error", "#1", function() return sb:clone("x") end)
    check("error", "timeout", function() return sb:clone({ timeout = "soon" }) end)
    check("error", "no_such_option_xyz", function() return sb:clone({ no_such_option_xyz = 1 }) end)
  end)

  it("instructions accepts any context", function()
    for _, ctx in ipairs({ 42, "x", {}, HUGE }) do assert.is_string(sb:instructions(ctx)) end
  end)
end)

describe("process manager and Process methods", function()
  local sb = sandkit.LocalSandbox { working_directory = tmp.dir() }
  teardown(function() sb:destroy() end)

  local spawn_rows = {
    { "command nil", "error", "#1", nil },
    { "command number", "error", "#1", 42 },
    { "command NUL", "error", "NUL", "a\0b" },
    { "command 16 MiB", "maybe", "argument list too long", HUGE },
    { "opts string", "error", "#2", "true", "x" },
    { "opts unknown key", "error", "frobnicate", "true", { frobnicate = true } },
    { "timeout NaN", "error", "timeout", "true", { timeout = NAN } },
    { "env name with =", "error", "A=B", "true", { env = { ["A=B"] = "v" } } },
  }
  for _, row in ipairs(spawn_rows) do
    it("spawn: " .. row[1], function()
      local h = check(row[2], row[3], function() return sb.processes:spawn(row[4], row[5]) end)
      if h then h:wait() end
    end)
  end

  it("get and kill: pids of wrong type, unknown, NaN, huge", function()
    for _, f in ipairs({ "get", "kill" }) do
      for _, pid in ipairs({ {}, true, function() end }) do
        check("error", "#1", function() return sb.processes[f](sb.processes, pid) end)
      end
      for _, pid in ipairs({ "nope", "", -1, 1.5, NAN, INF, HUGE, "1\0" }) do
        local ok, v = pcall(sb.processes[f], sb.processes, pid)
        assert.is_true(ok, tostring(v))
        assert.falsy(v)
      end
    end
  end)

  it("Process methods on wrong selves and with wrong arguments", function()
    local h = assert(sb.processes:spawn("exec cat"))
    for _, m in ipairs({ "wait", "kill", "send_stdin", "close_stdin" }) do
      for _, self in ipairs({ false, 42, {}, sb }) do
        check("error", "sandkit.Process expected", function() return h[m](self) end)
      end
    end
    for _, v in ipairs({ nil, 42, {}, true }) do
      check("error", "#1", function() return h:send_stdin(v) end)
    end
    assert.is_true(h:send_stdin("a\0b")) -- stdin is bytes: NUL is data here
    assert.is_true(h:send_stdin(HUGE))
    assert.is_true(h:close_stdin())
    local r = assert(h:wait())
    assert.equal(3 + #HUGE, #r.stdout)
    check("error", "exited", function() return h:send_stdin("late") end)
  end)
end)
