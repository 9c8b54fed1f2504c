-- Each fact stated once (issue 23, items 3 and 6): the exec options are
-- declared in lua/sandkit/options.lua and the error kinds in
-- src/core/error.h; the check and the C binding follow those declarations
-- (docs/'s and the LuaLS stub's renderings of them are
-- spec/generated_spec.lua's).
local sandkit = require "sandkit"
local errors = require "sandkit.errors"
local options = require "sandkit.options"
local files = require "helpers.files"
local tmp = require "helpers.tmp"

local ROOT = os.getenv("R") or (io.popen("pwd"):read("l"))

describe("exec options", function()
  local sb = sandkit.LocalSandbox { working_directory = tmp.dir() }
  teardown(function() sb:destroy(); tmp.cleanup() end)

  -- a value of the declared type for each option, and what it must do
  local good = {
    timeout = 5000, cwd = ".", env = { A = "1" }, on_stdout = function() end, on_stderr = function() end,
    on_stdout_line = function() end, on_stderr_line = function() end, stdin = "in", capture = "buffer",
    max_output_bytes = 4,
  }

  it("every declared option is accepted and reaches the command", function()
    for _, name in ipairs(options.exec.order) do
      assert.is_not_nil(good[name], "no sample value for the declared option " .. name)
    end
    local seen = {}
    local r = assert(sb:exec("printf %s-%s \"$A\" \"$(cat)\"", nil, {
      timeout = good.timeout, cwd = good.cwd, env = good.env, stdin = good.stdin, capture = good.capture,
      max_output_bytes = good.max_output_bytes, on_stdout = function(c) seen[#seen + 1] = c end,
      on_stderr = good.on_stderr, on_stdout_line = good.on_stdout_line, on_stderr_line = good.on_stderr_line,
    }))
    assert.equal("1-in", table.concat(seen))
    assert.equal("1-in", tostring(r.stdout)) -- max_output_bytes = 4 kept all of it
    assert.is_false(r.truncated)
  end)

  it("the C binding reads no option by name: it is handed the checked values", function()
    local src = files.must_read(ROOT .. "/src/lua/process_ud.c")
    for _, name in ipairs(options.exec.order) do
      assert.is_nil(src:find('"' .. name .. '"', 1, true), "process_ud.c names the option " .. name)
    end
  end)
end)

describe("error kinds", function()
  it("are constants of sandkit.errors, in the core's order", function()
    assert.is_true(#errors.kinds >= 20)
    for i, k in ipairs(errors.kinds) do
      assert.equal(k.name, errors[k.name], k.name)
      assert.equal(k.name, sandkit.errors[k.name])
      assert.is_string(k.doc)
      assert.is_string(k.fields)
      if i > 1 then assert.are_not.equal(errors.kinds[i - 1].name, k.name) end
    end
    assert.equal("ConfigError", sandkit.errors.ConfigError)
  end)

  it("errors.new refuses a kind that is not in the list", function()
    local ok, err = pcall(errors.new, "ConfigErorr", "x")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("unknown error kind 'ConfigErorr'", 1, true), tostring(err))
  end)

  it("every kind sandkit's Lua code creates is in the list", function()
    local known = {}
    for _, k in ipairs(errors.kinds) do known[k.name] = true end
    local p = assert(io.popen("cd " .. ROOT .. " && git ls-files 'lua/*.lua' 'lua/**/*.lua' 'src/core/providers/*/*.lua'"))
    local count = 0
    for path in p:lines() do
      local text = files.must_read(ROOT .. "/" .. path)
      for kind in text:gmatch('errors%.new%("(%w+)"') do
        count = count + 1
        assert.is_true(known[kind], path .. " creates " .. kind)
      end
      for kind in text:gmatch('\n  (%u%w+Error) = {') do -- sandkit.fs.errors' table
        assert.is_true(known[kind], path .. " declares " .. kind)
      end
    end
    p:close()
    assert.is_true(count > 10)
  end)

  it("the C core names kinds only through the list: no kind string in src/", function()
    local p = assert(io.popen("cd " .. ROOT .. " && git ls-files 'src/*.c' 'src/*.h'"))
    local offenders = {}
    for path in p:lines() do
      if path ~= "src/core/error.h" then
        local text = files.must_read(ROOT .. "/" .. path)
        if text:find('sk_error_new%(%s*"') then offenders[#offenders + 1] = path end
      end
    end
    p:close()
    assert.are.same({}, offenders)
  end)
end)
