-- `sandkit cp` between this machine and a Platform sandbox on the reference
-- server (cli.main in-process: stdout/stderr captured, isatty faked).
local sandkit = require "sandkit"
local cli = require "sandkit.cli"
local server = require "helpers.server"
local tmp = require "helpers.tmp"

local function sink()
  local s = { parts = {} }
  function s:write(...) for _, v in ipairs({ ... }) do self.parts[#self.parts + 1] = v end return self end
  function s:flush() return self end
  function s:text() return table.concat(self.parts) end
  return s
end

describe("sandkit cp", function()
  local srv = server.start("spec/servers/platform/server.mjs", { "--quiet" })
  local sb, opts
  setup(function()
    sb = sandkit.PlatformSandbox { access_token = "test-token", project_id = "proj_cp", environment_id = "env_cp", base_url = srv.url }
    assert(sb:start())
    opts = { "--opt", "project_id=proj_cp", "--opt", "base_url=" .. srv.url,
      "--opt", "sandbox_id=" .. sb:info().metadata.sandbox_id }
  end)
  teardown(function()
    sb:destroy()
    srv:stop()
    tmp.cleanup()
  end)

  local function run(args, tty)
    local out, err = sink(), sink()
    local argv = { "cp" }
    for _, a in ipairs(opts) do argv[#argv + 1] = a end
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    local code = cli.main(argv, { stdout = out, stderr = err, isatty = function() return tty == true end,
      getenv = function(name) if name == "MASTRA_PLATFORM_ACCESS_TOKEN" then return "test-token" end return os.getenv(name) end })
    return code, out:text(), err:text()
  end

  it("copies a file into the sandbox and back, bytes intact, with a progress line", function()
    local dir = tmp.dir()
    local t = {}
    for i = 0, 255 do t[#t + 1] = string.char(i) end
    local data = table.concat(t):rep(40 * 1024) -- 10 MiB
    local f = assert(io.open(dir .. "/in.bin", "wb"))
    f:write(data)
    f:close()
    local code, _, err = run({ "local:" .. dir .. "/in.bin", "platform:copied.bin" }, true)
    assert.equal(0, code, err)
    assert.truthy(err:find("copied 10.0 MiB of 10.0 MiB (100%)", 1, true))
    assert.equal(data, sb.fs:read_file("copied.bin"))
    code, _, err = run({ "platform:copied.bin", dir .. "/" }, false)
    assert.equal(0, code, err)
    assert.equal("", err)
    f = assert(io.open(dir .. "/copied.bin", "rb"))
    assert.equal(data, f:read("*a"))
    f:close()
  end)

  it("fails cleanly: missing files, bad arguments", function()
    local code, _, err = run({ "platform:/no/such/file", tmp.dir() .. "/x" })
    assert.equal(cli.EXIT_FAILURE, code)
    assert.truthy(err:find("FileNotFoundError", 1, true))
    code, _, err = run({ "local:/no/such/file", "platform:x" })
    assert.equal(cli.EXIT_FAILURE, code)
    assert.truthy(err:find("/no/such/file", 1, true))
    code, _, err = run({ "a", "b" })
    assert.equal(cli.EXIT_USAGE, code)
    assert.truthy(err:find("between this machine", 1, true))
    code = run({ "bogus:x", "y" })
    assert.equal(cli.EXIT_USAGE, code)
    code = run({ "only-one" })
    assert.equal(cli.EXIT_USAGE, code)
    -- secrets are refused on the command line
    code, _, err = run({ "--opt", "access_token=sk_on_argv", "local:x", "platform:y" })
    assert.equal(cli.EXIT_USAGE, code)
    assert.truthy(err:find("MASTRA_PLATFORM_ACCESS_TOKEN", 1, true))
    assert.is_nil(err:find("sk_on_argv", 1, true))
    -- no token in any message
    code, _, err = run({ "platform:/no/such/file", "/tmp/x" })
    assert.is_nil(err:find("test-token", 1, true))
  end)
end)
