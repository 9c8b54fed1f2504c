-- Misuse as a user meets it (issue 25, items 1 to 4): an uncaught misuse
-- in a plain `lua5.4 script.lua` names the script's line and shows its
-- stack; every options table is checked by one helper, so every option
-- error is a ConfigError and every argument error an ArgumentError; an
-- unknown key names the option it most likely meant.
local sandkit = require "sandkit"
local errors = require "sandkit.errors"
local sh = require "helpers.sh"
local tmp = require "helpers.tmp"

local q = sh.quote

local function raised(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok, "did not raise")
  return err
end

-- Runs a script (lines) with plain lua5.4 in a fresh directory; returns its
-- exit code, its output and the script's path.
local function run_script(lines)
  local dir = tmp.dir()
  local path = dir .. "/mistyped.lua"
  local f = assert(io.open(path, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  local code, out = sh.run(("cd %s && env LUA_PATH=%s LUA_CPATH=%s lua5.4 mistyped.lua"):format(q(dir),
    q(package.path), q(package.cpath)))
  return code, out
end

describe("an uncaught misuse in a plain lua5.4 script", function()
  teardown(tmp.cleanup)

  it("names the script's file and line and shows its stack", function()
    local code, out = run_script({
      'local sandkit = require "sandkit"',
      'local sb <close> = sandkit.LocalSandbox { working_directory = os.tmpname() .. ".d" }',
      "local function run_tests()",
      '  local r = sb:exec("true", nil, { timout = 5000 })',
      "  return r",
      "end",
      "run_tests()",
    })
    assert.are_not.equal(0, code)
    assert.truthy(out:find("mistyped.lua:4: ConfigError: Unknown option 'timout' for exec (did you mean 'timeout'?)",
      1, true), out)
    local tb = out:match("\nstack traceback:\n(.*)$")
    assert.is_string(tb, out)
    -- the caller's frames, innermost first; none of sandkit's own
    assert.truthy(tb:find("mistyped.lua:4: in", 1, true), tb)
    assert.truthy(tb:find("mistyped.lua:7: in main chunk", 1, true), tb)
    assert.is_nil(tb:find("lua/sandkit/", 1, true), tb)
  end)

  it("names the task's line when the misuse is inside a task", function()
    local code, out = run_script({
      'local sandkit = require "sandkit"',
      "sandkit.spawn(function()",
      "  sandkit.sleep(-1)",
      "end)",
      "sandkit.run()",
    })
    assert.are_not.equal(0, code)
    assert.truthy(out:find("mistyped.lua:3: ArgumentError: bad argument #1 to 'sleep'", 1, true), out)
    assert.truthy(out:find("stack traceback:", 1, true), out)
  end)

  it("an argument error reads the same way", function()
    local code, out = run_script({
      'local sandkit = require "sandkit"',
      "",
      "print(sandkit.quote({}))",
    })
    assert.are_not.equal(0, code)
    assert.truthy(out:find("mistyped.lua:3: ArgumentError: bad argument #1 to 'quote' (string expected, got table)",
      1, true), out)
    assert.truthy(out:find("\nstack traceback:\n\tmistyped.lua:3: in main chunk", 1, true), out)
  end)

  it("caught, the error stays one line, its place in `where`", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local err = raised(function() sandkit.all({}, { concurency = 2 }) end)
    assert.equal("ConfigError: Unknown option 'concurency' for all (did you mean 'concurrency'?)", tostring(err))
    assert.truthy(err.where:find(":" .. line .. "$"), err.where)
  end)
end)

describe("one misuse type", function()
  local ws = tmp.dir()
  local sb = sandkit.LocalSandbox { working_directory = ws }
  local fleet
  setup(function() fleet = assert(sandkit.fleet(sandkit.LocalSandbox { working_directory = tmp.dir() }, 1)) end)
  teardown(function()
    sb:destroy()
    fleet:destroy()
    tmp.cleanup()
  end)
  local fs = sandkit.LocalFilesystem { base_path = ws }

  -- every options table sandkit takes, with an unknown key and with a bad
  -- value: a ConfigError naming the key, each time
  local tables = {
    { "LocalSandbox", function(o) return sandkit.LocalSandbox(o) end, { timeout = 0.5 } },
    { "new", function(o) return sandkit.new("local", o) end, { isolation = "docker" } },
    { "clone", function(o) return sb:clone(o) end, { env = { ["A=B"] = "x" } } },
    { "exec", function(o) return sb:exec("true", nil, o) end, { timeout = 0.5 } },
    { "exec_async", function(o) return sb:exec_async("true", nil, o) end, { capture = "yes" } },
    { "spawn", function(o) return sb.processes:spawn("true", nil, o) end, { cwd = 1 } },
    { "fleet:exec", function(o) return fleet:exec("true", nil, o) end, { on_progress = 1 } },
    { "fleet:map", function(o) return fleet:map(function() end, o) end, { concurrency = 0 } },
    { "sandkit.fleet", function(o) return sandkit.fleet(sb, 1, o) end, { overrides = 1 } },
    { "sandkit.all", function(o) return sandkit.all({}, o) end, { concurrency = 1.5 } },
    { "LocalFilesystem", function(o) return sandkit.LocalFilesystem(o) end, { read_only = "yes" } },
    { "PlatformFilesystem", function(o) return sandkit.PlatformFilesystem(o) end, { request_timeout_ms = 0.5 } },
    { "fs:read_file", function(o) return fs:read_file("x", o) end, { chunk_size = 0 } },
    { "fs:readdir", function(o) return fs:readdir("/", o) end, { max_depth = -1 } },
  }
  for _, c in ipairs(tables) do
    it(c[1] .. ": an unknown key and a bad value are both ConfigErrors naming the key", function()
      local err = raised(function() c[2]({ bogus_key = 1 }) end)
      assert.is_true(errors.is(err, errors.ConfigError), tostring(err))
      assert.equal("bogus_key", err.key)
      assert.truthy(err.message:find("Unknown option 'bogus_key'", 1, true), err.message)
      err = raised(function() c[2](c[3]) end)
      assert.is_true(errors.is(err, errors.ConfigError), tostring(err))
      assert.equal(next(c[3]), err.key)
      assert.is_string(err.where)
    end)
  end

  it("an argument that is not an options table, or of the wrong type, is an ArgumentError", function()
    for _, fn in ipairs({
      function() sb:exec(42) end,
      function() sb:exec("true", nil, "fast") end,
      function() sandkit.all({}, 7) end,
      function() fleet:map(42) end,
      function() sandkit.sleep("1") end,
      function() sandkit.quote(nil) end,
      function() fs:read_file(1) end,
      function() sb:exec("true", nil, { capture = "buffer" }).stdout:sub("x") end,
    }) do
      local err = raised(fn)
      assert.is_true(errors.is(err, errors.ArgumentError), tostring(err))
      assert.truthy(err.message:find("^bad argument #%d+ to '[%w_:]+' %("), err.message)
      assert.is_number(err.argument)
    end
  end)

  it("the kinds are constants of sandkit.errors", function()
    assert.equal("ConfigError", sandkit.errors.ConfigError)
    assert.equal("ArgumentError", sandkit.errors.ArgumentError)
  end)
end)

describe("did you mean", function()
  local sb = sandkit.LocalSandbox { working_directory = tmp.dir() }
  teardown(function() sb:destroy(); tmp.cleanup() end)

  local function message(fn) return raised(fn).message end

  it("names a misspelt option", function()
    assert.equal("Unknown option 'timout' for exec (did you mean 'timeout'?)",
      message(function() sb:exec("true", nil, { timout = 5 }) end))
    assert.equal("Unknown option 'isolaton' for LocalSandbox (did you mean 'isolation'?)",
      message(function() sandkit.LocalSandbox { isolaton = "bwrap" } end))
    assert.equal("Unknown option 'recursiv' for mkdir (did you mean 'recursive'?)",
      message(function() sandkit.LocalFilesystem({ base_path = tmp.dir() }):mkdir("a", { recursiv = true }) end))
  end)

  it("knows another provider's name for the same option", function()
    assert.equal("Unknown option 'workdir' for LocalSandbox (did you mean 'working_directory'?)",
      message(function() sandkit.LocalSandbox { workdir = "ws" } end))
    assert.equal("Unknown option 'working_directory' for ModalSandbox (did you mean 'workdir'?)",
      message(function() sandkit.ModalSandbox { working_directory = "/ws" } end))
    assert.equal("Unknown option 'working_directory' for exec (did you mean 'cwd'?)",
      message(function() sb:exec("true", nil, { working_directory = "/" }) end))
  end)

  it("knows upstream's camelCase names", function()
    assert.equal("Unknown option 'workingDirectory' for LocalSandbox (did you mean 'working_directory'?)",
      message(function() sandkit.LocalSandbox { workingDirectory = "ws" } end))
  end)

  it("names a misspelt provider and nothing when nothing is close", function()
    assert.equal("Unknown sandbox provider 'locl' (did you mean 'local'?)", message(function() sandkit.new("locl") end))
    assert.equal("Unknown option 'frobnicate' for exec", message(function() sb:exec("true", nil, { frobnicate = 1 }) end))
  end)

  it("the CLI names a misspelt flag or command", function()
    local cli = require "sandkit.cli"
    local function usage(argv)
      local err = {}
      local code = cli.main(argv, { stderr = { write = function(_, ...) for _, s in ipairs({ ... }) do err[#err + 1] = s end end } })
      return code, table.concat(err)
    end
    local code, err = usage({ "exec", "--timout", "5", "--", "true" })
    assert.equal(2, code)
    assert.truthy(err:find("unknown flag '--timout' for exec (did you mean '--timeout'?)", 1, true), err)
    code, err = usage({ "exce", "true" })
    assert.equal(2, code)
    assert.truthy(err:find("unknown command 'exce' (did you mean 'exec'?)", 1, true), err)
  end)
end)

describe("fleet:map and the other fleet calls check their options", function()
  local fleet
  setup(function() fleet = assert(sandkit.fleet(sandkit.LocalSandbox { working_directory = tmp.dir() }, 2)) end)
  teardown(function() fleet:destroy(); tmp.cleanup() end)

  it("refuses concurency = 2 instead of running everything at once", function()
    local ran = 0
    local err = raised(function() fleet:map(function() ran = ran + 1 end, { concurency = 2 }) end)
    assert.is_true(errors.is(err, "ConfigError"), tostring(err))
    assert.equal("Unknown option 'concurency' for map (did you mean 'concurrency'?)", err.message)
    assert.equal(0, ran)
  end)

  it("honours concurrency = 1", function()
    local running, most = 0, 0
    fleet:map(function()
      running = running + 1
      most = math.max(most, running)
      sandkit.sleep(0.01)
      running = running - 1
    end, { concurrency = 1 })
    assert.equal(1, most)
  end)
end)
