-- PlatformFilesystem against the reference server's bucket routes
-- (spec/servers/platform, docs/platform-filesystem.md): the conformance
-- suite, then the wire format (docs/platform-filesystem.md) from the server's request log.
local sandkit = require "sandkit"
local errors = require "sandkit.errors"
local child = require "helpers.child"
local server = require "helpers.server"
local suite = require "conformance.fs_suite"

describe("PlatformFilesystem", function()
  local srv = server.for_block("spec/servers/platform/server.mjs", { "--quiet" })

  local n = 0
  local function make(extra)
    local o = { access_token = "test-token", project_id = "proj_fs", bucket_name = "bucket-1", base_url = srv.url }
    for k, v in pairs(extra or {}) do o[k] = v end
    return sandkit.PlatformFilesystem(o)
  end

  local bucket
  suite({
    name = "PlatformFilesystem (reference server)",
    create = function()
      n = n + 1
      bucket = "suite-" .. n
      return make({ bucket_name = bucket })
    end,
    create_read_only = function() return make({ bucket_name = bucket, read_only = true }) end,
    refuses_no_overwrite = true,
  }, _ENV)

  local function last(method)
    local log = srv:log()
    local reqs = log.requests or log
    for i = #reqs, 1, -1 do
      if reqs[i].method == method then return reqs[i] end
    end
  end

  it("speaks the bucket routes' wire format", function()
    local fs = make()
    srv:reset()
    assert.is_true(fs:write_file("/dir with space/a&b.txt", "x", { mime_type = "text/plain" }))
    local put = last("PUT")
    assert.equal("/v1/railway/projects/proj_fs/fs/bucket-1/dir%20with%20space/a%26b.txt", put.path)
    assert.equal("text/plain", put.headers["content-type"])
    assert.equal("Bearer test-token", put.headers.authorization)
    assert.is_nil(put.headers["if-none-match"])
    assert.is_true(fs:write_file("why?.txt", "q", { overwrite = false }))
    put = last("PUT")
    assert.equal("/v1/railway/projects/proj_fs/fs/bucket-1/why%3F.txt", put.path)
    assert.equal("*", put.headers["if-none-match"])
    assert.is_true(fs:mkdir("newdir"))
    local post = last("POST")
    assert.equal("/v1/railway/projects/proj_fs/fs/bucket-1/newdir/", post.path)
    assert.equal("mkdir", post.query.op)
    assert.is_true(fs:copy_file("why?.txt", "/c d.txt"))
    post = last("POST")
    assert.equal("/v1/railway/projects/proj_fs/fs/bucket-1/why%3F.txt", post.path)
    assert.equal("copy", post.query.op)
    assert.same({ destination = "c d.txt" }, post.body.json)
    assert.equal("application/json", post.headers["content-type"])
    assert.is_true(fs:delete_file("/c d.txt"))
    assert.is_nil(last("DELETE").query.recursive)
    assert(fs:readdir("/dir with space"))
    local get = last("GET")
    assert.equal("/v1/railway/projects/proj_fs/fs/bucket-1/", get.path)
    assert.equal("dir with space/", get.query.prefix)
    assert.equal("/", get.query.delimiter)
  end)

  it("keeps .. inside the bucket", function()
    local fs = make({ bucket_name = "confined" })
    srv:reset()
    assert.is_true(fs:write_file("../../other/../../x.txt", "x"))
    assert.equal("/v1/railway/projects/proj_fs/fs/confined/x.txt", last("PUT").path)
    assert.equal("x", fs:read_file("/x.txt"))
    assert.same({ { name = "x.txt", type = "file", size = 1 } }, fs:readdir("/"))
  end)

  it("maps statuses to typed errors and reads prefix-only folders", function()
    local fs = make({ bucket_name = "prefix-only" })
    assert.is_true(fs:write_file("/foo/bar.md", "abc"))
    local st = assert(fs:stat("/foo"))
    assert.equal("directory", st.type)
    assert.is_true(fs:exists("foo"))
    assert.same({ { name = "bar.md", type = "file", size = 3 } }, fs:readdir("/foo"))
    assert.same({ { name = "foo", type = "directory" } }, fs:readdir("/"))
    local fst = assert(fs:stat("/foo/bar.md"))
    assert.equal("file", fst.type)
    assert.equal(3, fst.size)
    local r, err = fs:read_file("/nope")
    assert.is_nil(r)
    assert.is_true(errors.is(err, "FileNotFoundError"))
  end)

  -- 12 MiB of 64 KiB blocks that each say where they belong: a block lost,
  -- doubled or out of place changes the string.
  local function big_content(tag)
    local blocks = {}
    for i = 1, 192 do blocks[i] = ("%s%06d"):format(tag, i):rep(math.floor(65536 / (#tag + 6))):sub(1, 65536) end
    return table.concat(blocks)
  end

  it("moves a multi-MiB file both ways intact, whole and in chunks", function()
    local fs = make({ bucket_name = "bulk" })
    local content = big_content("b")
    assert.is_true(fs:write_file("/big.bin", content))
    local back = assert(fs:read_file("/big.bin"))
    assert.equal(#content, #back)
    assert.is_true(back == content)
    local chunks = {}
    assert.is_true(fs:read_file("/big.bin", { on_chunk = function(c) chunks[#chunks + 1] = c end }))
    assert.is_true(#chunks > 1, "streamed in pieces")
    assert.is_true(table.concat(chunks) == content)
  end)

  it("keeps a request body alive while curl sends it, though the caller dropped it", function()
    -- core.ops_call sends the body string in place: its handle must hold the
    -- string until the request ends.
    local core = require "sandkit.core"
    local scheduler = require "sandkit.scheduler"
    local rec = scheduler.record(function(r, kind, stream)
      if kind == "lifecycle" then scheduler.complete(r, stream == nil and true or nil, stream) end
    end)
    local client = core.ops_open("platform", "fs", { base_url = srv.url, access_token = "test-token",
      project_id = "proj_fs", bucket_name = "kept" })
    local body = big_content("k") -- made here: no other reference exists
    rec.handle = core.ops_call(client, { method = "PUT", key = "k.bin" }, body, rec.token)
    body = nil -- luacheck: ignore
    collectgarbage("collect")
    collectgarbage("collect")
    assert.is_true(scheduler.await(rec))
    local back = assert(make({ bucket_name = "kept" }):read_file("/k.bin"))
    assert.is_true(back == big_content("k"))
  end)

  it("refuses copy with overwrite = false without a request", function()
    local fs = make()
    assert.is_true(fs:write_file("a.txt", "a"))
    srv:reset()
    local r, err = fs:copy_file("a.txt", "b.txt", { overwrite = false })
    assert.is_nil(r)
    assert.truthy(err.message:find("overwrite: false", 1, true))
    local log = srv:log()
    assert.equal(0, #(log.requests or log))
  end)

  it("takes its settings from MASTRA_PLATFORM_ACCESS_TOKEN, MASTRA_PROJECT_ID, MASTRA_PLATFORM_BUCKET_NAME", function()
    local function q(x) return "'" .. x:gsub("'", "'\\''") .. "'" end
    local script = [[
      local sandkit = require "sandkit"
      local fs = sandkit.PlatformFilesystem {}
      assert(fs:write_file("/env/fallback.txt", "from env"))
      io.write(fs:info().metadata.bucket_name, " ", assert(fs:read_file("env/fallback.txt")))
    ]]
    local p = assert(io.popen(("env MASTRA_PLATFORM_ACCESS_TOKEN=test-token MASTRA_PROJECT_ID=proj_env "
      .. "MASTRA_PLATFORM_BUCKET_NAME=bucket-env MASTRA_WORKSPACE_PROXY_URL=%s LUA_PATH=%s LUA_CPATH=%s %s -e %s 2>&1"):format(
      q(srv.url), q(package.path), q(package.cpath), child.LUA, q(script))))
    local out = p:read("*a")
    p:close()
    assert.equal("bucket-env from env", out)
    local r = last("PUT") or last("POST")
    assert.truthy(r and r.url:find("proj_env", 1, true), r and r.url)
    assert.truthy(r.url:find("bucket-env", 1, true), r.url)
  end)

  it("needs its settings, named by their option names, and never shows the token", function()
    for _, c in ipairs({
      { { project_id = "p", bucket_name = "b", access_token = "" }, "access_token", "MASTRA_PLATFORM_ACCESS_TOKEN" },
      { { access_token = "t", bucket_name = "b", project_id = "" }, "project_id", "MASTRA_PROJECT_ID" },
      { { access_token = "t", project_id = "p", bucket_name = "" }, "bucket_name", "MASTRA_PLATFORM_BUCKET_NAME" },
    }) do
      local ok, err = pcall(sandkit.PlatformFilesystem, c[1])
      assert.is_false(ok)
      assert.equal("ConfigError", err.kind)
      assert.equal(c[2], err.key)
      assert.truthy(err.message:find("PlatformFilesystem: " .. c[2] .. " is required (option " .. c[2] .. " or " .. c[3]
        .. ")", 1, true), err.message)
    end
    assert.has_error(function() sandkit.PlatformFilesystem { access_token = "t", project_id = "p", bucket_name = "b", bogus = 1 } end)
    local fs = make({ access_token = "sk_secret_value" })
    local i = fs:info()
    assert.equal("PlatformFilesystem", i.name)
    assert.equal("platform", i.provider)
    assert.equal("bucket-1", i.metadata.bucket_name)
    assert.truthy(i.id:match("^platform%-fs%-"))
    assert.equal("Platform filesystem backed by Mastra Platform bucket bucket-1. Use absolute workspace paths.", fs:instructions())
    local function scan(v, seen)
      if type(v) == "string" then assert.is_nil(v:find("sk_secret_value", 1, true)) end
      if type(v) == "table" and not seen[v] then
        seen[v] = true
        for k, x in pairs(v) do if k ~= "_b" then scan(x, seen) end end
      end
    end
    scan(i, {})
    scan(fs, {})
    assert.is_nil(tostring(fs):find("sk_secret", 1, true))
    -- a refused token: PlatformApiError 401, the token not in the error
    local bad = make({ access_token = "sk_wrong_token" })
    local r, err = bad:read_file("x")
    assert.is_nil(r)
    assert.equal("PlatformApiError", err.kind)
    assert.equal(401, err.status)
    assert.is_nil(tostring(err):find("sk_wrong", 1, true))
  end)
end)

describe("core.ops_call on a Platform bucket, PlatformFilesystem's transport", function()
  local core = require "sandkit.core"
  local scheduler = require "sandkit.scheduler"
  local echo = server.start("spec/servers/echo/server.mjs")
  teardown(function() echo:stop() end)

  -- Runs one request on a bucket of the echo server (which answers a
  -- bucket route as its key's route); returns its stream-1 events (with
  -- collect: the body core.ops_body hands over, as one piece) and the
  -- transport error.
  local function fetch(req)
    local pieces = {}
    local rec = scheduler.record(function(r, kind, stream, data)
      if kind == "output" and stream == 1 then pieces[#pieces + 1] = data
      elseif kind == "lifecycle" then scheduler.complete(r, stream == nil and true or nil, stream) end
    end)
    local client = core.ops_open("platform", "fs", { base_url = echo.url, access_token = "test-token",
      project_id = "p", bucket_name = "b" })
    req.method = "GET"
    rec.handle = core.ops_call(client, req, nil, rec.token)
    local ok, err = scheduler.await(rec)
    if not ok then rec.handle:cancel() end -- past max_collect the transfer still runs
    if ok and req.collect then
      assert.equal(0, #pieces, "a collected body arrives whole, not as events")
      pieces[1] = assert(core.ops_body(rec.handle))
    end
    return pieces, ok and nil or err
  end

  it("collects a body of unknown length (chunked) whole, in one piece", function()
    local n = 3000000
    local bytes = { { "bytes", tostring(n) } }
    local pieces, err = fetch({ key = "chunked", query = bytes, collect = true })
    assert.is_nil(err)
    assert.equal(1, #pieces)
    assert.is_true(pieces[1] == ("b"):rep(n))
    -- the same without collect: streamed in pieces of at most the receive
    -- buffer (curl's default, 16 KiB)
    pieces, err = fetch({ key = "chunked", query = bytes })
    assert.is_nil(err)
    assert.is_true(#pieces > 1)
    for _, p in ipairs(pieces) do assert.is_true(#p <= 16384, #p) end
    assert.is_true(table.concat(pieces) == ("b"):rep(n))
  end)

  it("collects a body of declared length (presized) whole", function()
    local n = 5000000
    local pieces, err = fetch({ key = "big", query = { { "bytes", tostring(n) } }, collect = true, bulk = true })
    assert.is_nil(err)
    assert.equal(1, #pieces)
    assert.is_true(pieces[1] == ("a"):rep(n))
  end)

  it("max_collect ends a longer body: at its Content-Length, or as it arrives (chunked)", function()
    for _, key in ipairs({ "big", "chunked" }) do
      local pieces, err = fetch({ key = key, query = { { "bytes", "3000000" } }, collect = true,
        max_collect = 1000000 })
      assert.equal(0, #pieces)
      assert.equal("ResponseTooLargeError", err.kind, key)
      assert.equal(1000000, err.limit)
    end
    local pieces, err = fetch({ key = "chunked", query = { { "bytes", "1000000" } }, collect = true,
      max_collect = 1000000 })
    assert.is_nil(err)
    assert.equal(1000000, #pieces[1])
  end)

  it("raises on a request without a method or key, sending nothing", function()
    local client = core.ops_open("platform", "fs", { base_url = echo.url, access_token = "test-token",
      project_id = "p", bucket_name = "b" })
    local ok, err = pcall(core.ops_call, client, { key = "hello" }, nil, 1)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("method and key", 1, true), tostring(err))
  end)
end)
