-- capture = "buffer" (issue 15): r.stdout / r.stderr are sandkit.Buffer
-- userdata holding the captured bytes without a copy into a Lua string.
-- The methods answer as the string functions they mirror, misuse raises,
-- a closed buffer refuses every method, and the option works for every
-- provider (capture is shared by all of them in the core).
local sandkit = require "sandkit"
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local tmp = require "helpers.tmp"
local server = require "helpers.server"
local ac = require "helpers.apple_container"

local function is_buffer(v) return getmetatable(v) == core.Buffer end

describe("capture = \"buffer\"", function()
  local sb

  setup(function()
    sb = sandkit.LocalSandbox({ working_directory = tmp.dir() })
    assert(sb:start())
  end)

  teardown(function()
    sb:destroy()
    tmp.cleanup()
  end)

  local function run(command, opts)
    local o = { capture = "buffer" }
    for k, v in pairs(opts or {}) do o[k] = v end
    return assert(sb:exec(command, nil, o))
  end

  it("gives buffers for stdout and stderr; strings stay the default", function()
    local r = run("printf 'out\\0put'; printf 'err' >&2")
    assert.is_true(is_buffer(r.stdout))
    assert.is_true(is_buffer(r.stderr))
    assert.are.equal(7, #r.stdout)
    assert.are.equal("out\0put", tostring(r.stdout))
    assert.are.equal("err", tostring(r.stderr))
    local s = assert(sb:exec("printf x"))
    assert.are.equal("string", type(s.stdout))
    local t = assert(sb:exec("printf x", nil, { capture = true }))
    assert.are.equal("x", t.stdout)
  end)

  it("holds large output byte for byte", function()
    local r = run("head -c 3000000 /dev/urandom | tee data.bin | wc -c >&2")
    local f = assert(io.open(sb:info().metadata.working_directory .. "/data.bin", "rb"))
    local want = f:read("*a")
    f:close()
    -- stdout is empty here; the file is the reference for the next exec
    assert.are.equal(0, #r.stdout)
    local r2 = run("cat data.bin")
    assert.are.equal(#want, #r2.stdout)
    assert.are.equal(want, tostring(r2.stdout))
    assert.are.equal(want:sub(-100), r2.stdout:sub(-100))
  end)

  -- Past 4 MiB the capture moves into its own mapping, grown by mremap
  -- (src/core/buf.c): the bytes, the chunks streamed meanwhile and the cap
  -- must come through that move and growth exactly.
  it("holds output past 4 MiB byte for byte, streams it, and stops at the cap", function()
    run("head -c 12582917 /dev/urandom > big.bin")
    local f = assert(io.open(sb:info().metadata.working_directory .. "/big.bin", "rb"))
    local want = f:read("*a")
    f:close()
    assert.are.equal(12582917, #want)
    for _, capture in ipairs({ "buffer", true }) do
      local chunks = {}
      local r = run("cat big.bin", { capture = capture, on_stdout = function(c) chunks[#chunks + 1] = c end })
      assert.is_true(tostring(r.stdout) == want, tostring(capture) .. ": captured bytes differ")
      assert.is_true(table.concat(chunks) == want, tostring(capture) .. ": streamed bytes differ")
      assert.is_false(r.truncated)
    end
    local cap = 5 * 1024 * 1024 + 3
    local r = run("cat big.bin", { max_output_bytes = cap })
    assert.is_true(r.truncated)
    assert.are.equal(cap, #r.stdout)
    assert.is_true(tostring(r.stdout) == want:sub(1, cap), "truncated bytes differ")
  end)

  it("sub and byte follow string.sub and string.byte, negative and out-of-range indices too", function()
    local text = "hello, sandkit buffer"
    local b = run("printf '%s' '" .. text .. "'").stdout
    -- the largest integers: 5.3's and 5.4's; the int range that 5.1's and
    -- LuaJIT's string.sub take
    local max, min = math.maxinteger or 2 ^ 31 - 1, math.mininteger or -2 ^ 31 -- lua_subset: feature-tested
    local cases = { { 1 }, { 0 }, { -6 }, { 3, 7 }, { 7, 3 }, { -3, -1 }, { -100, 2 }, { 5, 100 },
      { 100 }, { 22, 21 }, { 1, 0 }, { min, max }, { max } }
    for _, c in ipairs(cases) do
      assert.are.equal(text:sub(c[1], c[2]), b:sub(c[1], c[2]), ("sub(%s, %s)"):format(c[1], tostring(c[2])))
      assert.are.same({ text:byte(c[1], c[2]) }, { b:byte(c[1], c[2]) }, ("byte(%s, %s)"):format(c[1], tostring(c[2])))
    end
    assert.are.same({ text:byte() }, { b:byte() })
  end)

  it("find answers as string.find for plain text", function()
    local text = "abc.abc(x)abc"
    local b = run("printf '%s' '" .. text .. "'").stdout
    local cases = { { "abc" }, { "abc", 2 }, { "abc", -3 }, { "abc", 12 }, { "zzz" }, { "" }, { "", 14 },
      { "c", -100 }, { "(x)", 1, true }, { ".", 1, true }, { "abc", 100 } }
    for _, c in ipairs(cases) do
      assert.are.same({ text:find(c[1], c[2], c[3]) }, { b:find(c[1], c[2], c[3]) },
        ("find(%q, %s, %s)"):format(c[1], tostring(c[2]), tostring(c[3])))
    end
    -- as 5.3's and 5.4's string.find in every version (5.1's and LuaJIT's
    -- find the empty string at the end instead)
    assert.is_nil(b:find("", 15))
    local empty = run("true").stdout
    assert.are.same({ (""):find("") }, { empty:find("") })
    assert.is_nil(empty:find("x"))
  end)

  it("find refuses pattern magic without plain = true (no silent plain match)", function()
    local b = run("printf 'a.c'").stdout
    assert.has_error(function() b:find("a.c") end)
    assert.has_error(function() b:find("%d") end)
    assert.are.same({ 1, 3 }, { b:find("a.c", 1, true) })
    assert.are.same({ ("a.c"):find("a.c") }, { tostring(b):find("a.c") })
  end)

  it("write_to writes every byte to an open file", function()
    local b = run("head -c 200000 /dev/urandom").stdout
    local path = tmp.dir() .. "/out.bin"
    local f = assert(io.open(path, "wb"))
    assert.is_true(b:write_to(f))
    f:close()
    f = assert(io.open(path, "rb"))
    local got = f:read("*a")
    f:close()
    assert.are.equal(tostring(b), got)
  end)

  it("write_to returns an IOError when the write fails", function()
    local b = run("printf abc").stdout
    -- buffered as files are by default: write_to flushes, so the error shows here
    local f = assert(io.open("/dev/full", "wb"))
    local ok, err = b:write_to(f)
    pcall(f.close, f)
    assert.is_nil(ok)
    assert.is_true(errors.is(err, "IOError"), tostring(err))
    assert.truthy(tostring(err):find("space", 1, true), tostring(err))
  end)

  it("raises on misuse", function()
    local b = run("printf abc").stdout
    assert.has_error(function() b:sub() end)
    assert.has_error(function() b:sub("x") end)
    assert.has_error(function() b:find() end)
    assert.has_error(function() b:find({}) end)
    assert.has_error(function() b:write_to("/tmp/x") end)
    assert.has_error(function() b:write_to(nil) end)
    local closed_file = assert(io.open("/dev/null", "w"))
    closed_file:close()
    assert.has_error(function() b:write_to(closed_file) end)
    assert.has_error(function() b.sub("abc", 1) end)
    assert.has_error(function() b.find(io.stdout, "a") end)
    for _, bad in ipairs({ "buf", "string", 1, {}, "Buffer" }) do
      local ok, err = pcall(sb.exec, sb, "true", nil, { capture = bad })
      assert.is_false(ok)
      assert.truthy(tostring(err):find("option 'capture' must be a boolean or \"buffer\"", 1, true), tostring(err))
    end
  end)

  it("close frees the bytes; every method on a closed buffer raises", function()
    local b = run("printf abc").stdout
    assert.is_false(b:is_closed())
    b:close()
    assert.is_true(b:is_closed())
    b:close() -- idempotent
    for name, fn in pairs({
      len = function() return #b end,
      tostring = function() return tostring(b) end,
      sub = function() return b:sub(1) end,
      byte = function() return b:byte(1) end,
      find = function() return b:find("a") end,
      write_to = function() return b:write_to(io.stdout) end,
    }) do
      local ok, err = pcall(fn)
      assert.is_false(ok, name)
      assert.truthy(tostring(err):find("sandkit.Buffer is closed", 1, true), name .. ": " .. tostring(err))
    end
  end)

  local function rss_kb()
    local f = assert(io.open("/proc/self/status"))
    local kb = tonumber(f:read("*a"):match("VmRSS:%s*(%d+)"))
    f:close()
    return kb
  end

  it("buffers no longer referenced are collected, without an explicit collect", function()
    local weak = setmetatable({}, { __mode = "v" })
    weak[1] = run("printf x").stdout
    collectgarbage("collect")
    assert.is_nil(weak[1])
    -- 30 x 16 MiB dropped: held all at once that is 480 MiB; the GC is
    -- told about the bytes, so it frees them as it would strings
    collectgarbage("collect")
    local before = rss_kb()
    for _ = 1, 30 do
      local r = run("head -c 16777216 /dev/zero")
      assert.are.equal(16777216, #r.stdout)
    end
    local grown = rss_kb() - before
    assert.is_true(grown < 240 * 1024, "RSS grew " .. grown .. " KiB")
  end)

  it("keeps the timeout note and works for background processes", function()
    local r = assert(sb:exec("sleep 5", nil, { capture = "buffer", timeout = 100 }))
    assert.is_true(r.timed_out)
    assert.truthy(r.stderr:find("Process timed out after 100ms", 1, true))
    local p = assert(sb.processes:spawn("printf bg", { capture = "buffer" }))
    local res = assert(p:wait())
    assert.is_true(is_buffer(res.stdout))
    assert.are.equal("bg", tostring(res.stdout))
    -- the process handle and the result share one buffer
    assert.are.equal(res.stdout, p.stdout)
  end)

  it("gives buffers in a result that was cancelled before it ran", function()
    local fresh = sandkit.LocalSandbox({ working_directory = tmp.dir() })
    local op = fresh:exec_async("true", nil, { capture = "buffer" })
    assert.is_true(op:cancel())
    local r = assert(op:wait())
    assert.is_true(r.cancelled)
    assert.is_true(is_buffer(r.stdout))
    assert.are.equal(0, #r.stdout)
    fresh:destroy()
  end)

  it("streams to on_stdout while capturing into the buffer", function()
    local seen = {}
    local r = run("printf 'a'; printf 'b'", { on_stdout = function(c) seen[#seen + 1] = c end })
    assert.are.equal("ab", table.concat(seen))
    assert.are.equal("ab", tostring(r.stdout))
  end)
end)

describe("capture = \"buffer\" on the remote providers", function()
  local cmd = "printf 'out'; printf 'err' >&2; head -c 300000 /dev/zero"

  local function check_result(r)
    assert.is_true(is_buffer(r.stdout))
    assert.is_true(is_buffer(r.stderr))
    assert.are.equal(300003, #r.stdout)
    assert.are.equal("out", r.stdout:sub(1, 3))
    assert.are.equal("err", tostring(r.stderr))
  end

  it("PlatformSandbox", function()
    server.with("spec/servers/platform/server.mjs", { "--quiet" }, function(srv)
      local sb = sandkit.PlatformSandbox({ access_token = "test-token", project_id = "p", environment_id = "e",
        base_url = srv.url })
      check_result(assert(sb:exec(cmd, nil, { capture = "buffer" })))
      sb:destroy()
    end)
  end)

  it("ModalSandbox", function()
    server.with("spec/servers/modal/server.mjs", { "--port", "0" },
      { MODAL_CONFIG_PATH = "/nonexistent/sandkit-modal.toml" }, function(srv)
      local sb = sandkit.ModalSandbox({ server_url = srv.url, token_id = "ak-test", token_secret = "as-test" })
      check_result(assert(sb:exec(cmd, nil, { capture = "buffer" })))
      sb:destroy()
    end)
  end)

  it("AppleContainerSandbox (emulated CLI)", function()
    local env = ac.new()
    local ok, err = pcall(function()
      local sb = sandkit.AppleContainerSandbox({ id = "buffer-spec", container_binary = env.binary })
      check_result(assert(sb:exec(cmd, nil, { capture = "buffer" })))
      sb:destroy()
    end)
    local left = env:teardown()
    assert(ok, err)
    assert.are.same({}, left)
  end)
end)
