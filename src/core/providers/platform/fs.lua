--- sandkit.PlatformFilesystem: a Mastra Platform bucket over the workspace
-- proxy's filesystem routes (docs/platform-filesystem.md). The wire is the
-- provider's C (platform_fs.c beside this file: settings and base URL as
-- the sandbox resolves them, the bucket's routes, the credentials, which
-- never reach Lua), reached through core.ops_open / core.ops_call; this file
-- says what the answers mean. Requests run on the loop: they yield in a
-- task and block in a script.
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local fs = require "sandkit.fs"
local fserrors = require "sandkit.fs.errors"
local options = require "sandkit.options"
local json = require "sandkit.fs.json"
local ops = require "sandkit.ops"
local pathmod = require "sandkit.fs.path"

local M = {}

--- Path -> bucket key (docs/platform-filesystem.md): "/" root is "", a trailing "/" survives.
local function key_of(p)
  if p == "" or p == "." then return "" end
  local trailing = p:sub(-1) == "/"
  local n = pathmod.normalize(p)
  if n == "/" then return "" end
  return n:sub(2) .. (trailing and "/" or "")
end

local MONTHS = { Jan = 1, Feb = 2, Mar = 3, Apr = 4, May = 5, Jun = 6, Jul = 7, Aug = 8, Sep = 9, Oct = 10, Nov = 11, Dec = 12 }
local EPOCH = "1970-01-01T00:00:00.000Z"

-- "Tue, 01 Dec 2026 13:04:38 GMT" -> ISO-8601.
local function http_date(s)
  local d, mon, y, hh, mm, ss = (s or ""):match("(%d+) (%a+) (%d+) (%d+):(%d+):(%d+)")
  if not d or not MONTHS[mon] then return EPOCH end
  return ("%04d-%02d-%02dT%s:%s:%s.000Z"):format(tonumber(y), MONTHS[mon], tonumber(d), hh, mm, ss)
end

local Backend = {}
Backend.__index = Backend

-- One request; returns { status, headers, body } (body nil when streamed
-- to on_body on a 2xx), or nil, transport error. o.collect gathers the body
-- in C and hands it over as one string (no per-chunk strings or concat),
-- failing with ResponseTooLargeError past o.max_collect bytes; o.bulk
-- sizes the receive buffer for a large body.
function Backend:request(method, key, o)
  o = o or {}
  local resp = { headers = {} }
  local parts = {}
  local rec = ops.record(function(_, head)
    local status, rest = head:match("^(%d+)\n(.*)$")
    resp.status = tonumber(status)
    for name, value in (rest or ""):gmatch("([^:\n]+): ([^\n]*)\n") do resp.headers[name:lower()] = value end
  end, function(_, data)
    if o.on_body and resp.status and resp.status < 300 then
      o.on_body(data)
    else
      parts[#parts + 1] = data
    end
  end)
  rec.handle = core.ops_call(self.client, { method = method, key = key, query = o.query, headers = o.headers,
    collect = o.collect, max_collect = o.max_collect, bulk = o.bulk }, o.body, rec.token)
  local ok, err = ops.await(rec)
  if not ok then
    rec.handle:cancel() -- past max_collect the transfer is still running
    return nil, err
  end
  if o.collect then
    local body, msg = core.ops_body(rec.handle)
    if not body then return nil, errors.new("OutOfMemoryError", msg, { method = method }) end
    resp.body = body
  else
    resp.body = table.concat(parts)
  end
  return resp
end

-- docs/protocols/platform.md §2.3: a non-2xx answer as PlatformApiError.
local function api_error(resp)
  local body = resp.body or ""
  local code, pmsg
  local j = core.json_decode(body)
  if type(j) == "table" and type(j.error) == "table" and type(j.error.message) == "string"
    and type(j.error.type) == "string" then
    code, pmsg = j.error.type, j.error.message
  end
  local msg = "Platform proxy request failed with " .. resp.status
  if code then msg = msg .. ": " .. code .. ": " .. pmsg elseif body ~= "" then msg = msg .. ": " .. body end
  return errors.new("PlatformApiError", msg, { status = resp.status, code = code, proxy_message = pmsg, body = body })
end

local function ok2xx(resp) return resp.status >= 200 and resp.status < 300 end

-- Keys under "key/" (one listing request): the decoded listing or nil, err.
function Backend:list(prefix, recursive)
  local q = {}
  if not recursive then q[#q + 1] = { "delimiter", "/" } end
  if prefix ~= "" then q[#q + 1] = { "prefix", prefix } end
  local resp, err = self:request("GET", "", { query = q })
  if not resp then return nil, err end
  if not ok2xx(resp) then return nil, api_error(resp) end
  local j = core.json_decode(resp.body)
  if type(j) ~= "table" then return nil, fserrors.FilesystemError(prefix, "EIO", "Unreadable listing from the proxy") end
  j.contents = type(j.contents) == "table" and j.contents or {}
  j.commonPrefixes = type(j.commonPrefixes) == "table" and j.commonPrefixes or {}
  return j
end

-- "file", "directory" or false (nothing there); nil, err on failure.
function Backend:kind(key)
  if key == "" then return "directory" end
  local resp, err = self:request("HEAD", key)
  if not resp then return nil, err end
  if ok2xx(resp) then return key:sub(-1) == "/" and "directory" or "file", resp end
  if resp.status ~= 404 then return nil, api_error(resp) end
  local l, lerr = self:list(key:gsub("/$", "") .. "/", false)
  if not l then return nil, lerr end
  if #l.contents > 0 or #l.commonPrefixes > 0 then return "directory" end
  return false
end

function Backend:read_file(path, opts)
  local key = key_of(path)
  local resp, err = self:request("GET", key, { on_body = opts.on_chunk, collect = not opts.on_chunk,
    max_collect = opts.max_bytes, bulk = true })
  if not resp then
    if errors.is(err, "ResponseTooLargeError") then return nil, fserrors.TooLarge(path, opts.max_bytes) end
    return nil, err
  end
  if resp.status == 404 or key == "" or key:sub(-1) == "/" then
    local k = self:kind(key)
    if k == "directory" then return nil, fserrors.IsDirectoryError(path) end
    if resp.status == 404 then return nil, fserrors.FileNotFoundError(path) end
  end
  if not ok2xx(resp) then return nil, api_error(resp) end
  if opts.on_chunk then return true end
  return resp.body
end

local function gather(content)
  if type(content) == "string" then return content end
  local parts = {}
  fs.each_chunk(content, function(c) parts[#parts + 1] = c; return true end)
  return table.concat(parts)
end

function Backend:put(path, key, body, headers)
  local resp, err = self:request("PUT", key, { body = body, headers = headers })
  if not resp then return nil, err end
  if resp.status == 412 then return nil, fserrors.FileExistsError(path) end
  if not ok2xx(resp) then return nil, api_error(resp) end
  return true
end

function Backend:check_parent(path, key)
  local parent = key:match("^(.*)/[^/]+/?$")
  if not parent or parent == "" then return true end
  local k, err = self:kind(parent)
  if k == nil then return nil, err end
  if k == "file" then return nil, fserrors.NotDirectoryError(pathmod.dirname(path)) end
  if not k then return nil, fserrors.DirectoryNotFoundError(pathmod.dirname(path)) end
  return true
end

function Backend:write_file(path, content, opts)
  local key = key_of(path)
  if key == "" or key:sub(-1) == "/" then return nil, fserrors.IsDirectoryError(path) end
  if opts.recursive == false then
    local ok, err = self:check_parent(path, key)
    if not ok then return nil, err end
  end
  local headers = {}
  if opts.mime_type then headers[#headers + 1] = { "content-type", opts.mime_type } end
  if opts.overwrite == false then headers[#headers + 1] = { "if-none-match", "*" } end
  return self:put(path, key, gather(content), headers)
end

-- Read-modify-write (docs/platform-filesystem.md): not atomic; the last writer wins.
function Backend:append_file(path, content)
  local key = key_of(path)
  local old, err = self:read_file(path, {})
  if not old then
    if not errors.is(err, "FileNotFoundError") then return nil, err end
    old = ""
  end
  return self:put(path, key, old .. gather(content), {})
end

function Backend:delete(path, key, opts, notfound)
  local q = {}
  if opts.recursive ~= nil then q[1] = { "recursive", tostring(opts.recursive) } end
  local resp, err = self:request("DELETE", key, { query = q })
  if not resp then return nil, err end
  if resp.status == 404 then
    if opts.force then return true end
    return nil, notfound(path)
  end
  if resp.status == 409 then return nil, fserrors.DirectoryNotEmptyError(path) end
  if not ok2xx(resp) then return nil, api_error(resp) end
  return true
end

function Backend:delete_file(path, opts)
  local key = key_of(path)
  local k, err = self:kind(key)
  if k == nil then return nil, err end
  if k == "directory" then
    if not opts.recursive then return nil, fserrors.IsDirectoryError(path) end
    return self:delete(path, key:gsub("/$", "") .. "/", { recursive = true }, fserrors.FileNotFoundError)
  end
  return self:delete(path, key, { recursive = opts.recursive, force = opts.force }, fserrors.FileNotFoundError)
end

function Backend:rmdir(path, opts)
  local key = key_of(path)
  local k, err = self:kind(key)
  if k == nil then return nil, err end
  if k == "file" then return nil, fserrors.NotDirectoryError(path) end
  if key:sub(-1) ~= "/" then key = key .. "/" end
  return self:delete(path, key, { recursive = opts.recursive == true, force = opts.force }, fserrors.DirectoryNotFoundError)
end

function Backend:transfer(op, src, dest, opts)
  if opts.overwrite == false then
    -- the proxy always overwrites: refused here, without a request (docs/platform-filesystem.md)
    return nil, errors.new("FilesystemError",
      ("%s with overwrite: false is not supported by PlatformFilesystem: %s"):format(op, dest),
      { path = dest, code = "ENOTSUP" })
  end
  local skey, dkey = key_of(src), key_of(dest)
  local body = '{"destination":' .. json.string(dkey) .. "}"
  local resp, err = self:request("POST", skey, { query = { { "op", op == "copy_file" and "copy" or "rename" } },
    body = body, headers = { { "content-type", "application/json" } } })
  if not resp then return nil, err end
  if resp.status == 404 then
    if self:kind(skey) == "directory" then return nil, fserrors.IsDirectoryError(src) end
    return nil, fserrors.FileNotFoundError(src)
  end
  if not ok2xx(resp) then return nil, api_error(resp) end
  return true
end

function Backend:copy_file(src, dest, opts) return self:transfer("copy_file", src, dest, opts) end
function Backend:move_file(src, dest, opts) return self:transfer("move_file", src, dest, opts) end

function Backend:mkdir(path, opts)
  local key = key_of(path)
  if key == "" then return true end
  local k, err = self:kind(key)
  if k == nil then return nil, err end
  if k == "file" then return nil, fserrors.FileExistsError(path) end
  if k == "directory" then return true end
  if opts.recursive == false then
    local ok, perr = self:check_parent(path, key)
    if not ok then return nil, perr end
  end
  if key:sub(-1) ~= "/" then key = key .. "/" end
  local resp, rerr = self:request("POST", key, { query = { { "op", "mkdir" } } })
  if not resp then return nil, rerr end
  if not ok2xx(resp) then return nil, api_error(resp) end
  return true
end

function Backend:readdir(path, opts)
  local key = key_of(path)
  local prefix = key == "" and "" or (key:gsub("/$", "") .. "/")
  local l, err = self:list(prefix, opts.recursive)
  if not l then return nil, err end
  local out, seen = {}, {}
  local function dir(name)
    if name ~= "" and not seen[name] then
      seen[name] = true
      out[#out + 1] = { name = name, type = "directory" }
    end
  end
  for _, p in ipairs(l.commonPrefixes) do
    if type(p) == "string" then dir((p:sub(#prefix + 1):gsub("/$", ""))) end
  end
  local any = #l.commonPrefixes > 0
  for _, c in ipairs(l.contents) do
    local k = type(c) == "table" and c.key
    if type(k) == "string" and k:sub(1, #prefix) == prefix then
      any = true
      local rel = k:sub(#prefix + 1)
      -- implicit parents of a deep key (recursive listings)
      local acc = ""
      for seg in rel:gmatch("([^/]+)/") do
        acc = acc == "" and seg or acc .. "/" .. seg
        dir(acc)
      end
      if rel ~= "" and rel:sub(-1) ~= "/" and fs.extension_matches(pathmod.basename(rel), opts.extension) then
        out[#out + 1] = { name = rel, type = "file", size = tonumber(c.size) or 0 }
      end
    end
  end
  if not any and key ~= "" then
    local k, kerr = self:kind(key)
    if k == nil then return nil, kerr end
    if k == "file" then return nil, fserrors.NotDirectoryError(path) end
    if not k then return nil, fserrors.DirectoryNotFoundError(path) end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

function Backend:stat(path)
  local key = key_of(path)
  local norm = "/" .. key
  local name = pathmod.basename(norm:gsub("/$", "")) or ""
  if key == "" then
    return { name = "", path = "/", type = "directory", size = 0, created_at = EPOCH, modified_at = EPOCH }
  end
  local k, resp = self:kind(key)
  if k == nil then return nil, resp end
  if not k then return nil, fserrors.FileNotFoundError(path) end
  if k == "directory" and not resp then
    return { name = name, path = norm, type = "directory", size = 0, created_at = EPOCH, modified_at = EPOCH }
  end
  local h = resp.headers
  local t = http_date(h["last-modified"])
  return { name = name, path = norm, type = k, size = tonumber(h["content-length"]) or 0,
    created_at = t, modified_at = t, mime_type = h["content-type"] }
end

function Backend:exists(path)
  local k, err = self:kind(key_of(path))
  if k == nil then return nil, err end
  return k ~= false
end

function Backend:info()
  return { status = "running", icon = self.icon,
    metadata = { bucket_name = self.bucket, display_name = self.display_name, description = self.description } }
end

function Backend:instructions()
  return ("Platform filesystem backed by Mastra Platform bucket %s. Use absolute workspace paths."):format(self.bucket)
end

local OPTIONS = { name = "PlatformFilesystem", provider = "platform", options = {} }
for _, k in ipairs({ "access_token", "project_id", "bucket_name", "base_url", "acting_user_id", "id",
  "display_name", "description", "icon" }) do
  OPTIONS.options[k] = { type = "string" }
end
OPTIONS.options.read_only = { type = "boolean" }
OPTIONS.options.request_timeout_ms = { type = "integer", ms = true, min = 1 }

--- sandkit.PlatformFilesystem { access_token?, project_id?, bucket_name?, ... }
function M.PlatformFilesystem(opts)
  opts = options.check(OPTIONS, opts, 1)
  -- the settings, the environment's fallbacks and the token stay in C
  local ok, client = pcall(core.ops_open, "platform", "fs", {
    access_token = opts.access_token, project_id = opts.project_id, bucket_name = opts.bucket_name,
    base_url = opts.base_url, acting_user_id = opts.acting_user_id,
    request_timeout_ms = opts.request_timeout_ms and math.floor(opts.request_timeout_ms),
  })
  if not ok then errors.misuse(client) end
  local b = setmetatable({
    client = client, bucket = core.ops_info(client).bucket_name,
    icon = opts.icon or "cloud", display_name = opts.display_name, description = opts.description,
  }, Backend)
  return fs.new(b, { id = opts.id or fs.random_id("platform-fs"), name = "PlatformFilesystem",
    provider = "platform", read_only = opts.read_only == true })
end

M.key_of = key_of
return M
