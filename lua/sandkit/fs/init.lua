--- sandkit.Filesystem: upstream's WorkspaceFilesystem interface in
-- snake_case. This front checks arguments (misuse raises), refuses writes on
-- a read-only filesystem and hands the call to a backend (local system
-- calls, the Platform HTTP routes, or commands in a sandbox), which returns
-- results or nil, err with the kinds of sandkit.fs.errors.
local compat = require "sandkit.compat"
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local fserrors = require "sandkit.fs.errors"
local options = require "sandkit.options"

local M = {}

--- read_file's default max_bytes (64 MiB, as exec's max_output_bytes).
M.DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024

local Filesystem = { __name = "sandkit.Filesystem" }
Filesystem.__index = Filesystem

local argerror = errors.argument

local function check_self(self, fname)
  if getmetatable(self) ~= Filesystem then
    argerror(1, fname, "sandkit.Filesystem expected, got " .. type(self))
  end
end

local function check_path(n, fname, p)
  if type(p) ~= "string" then argerror(n, fname, "path string expected, got " .. type(p)) end
  if p:find("\0", 1, true) then argerror(n, fname, "path contains a NUL byte") end
  return p
end

local BOOLEAN = { type = "boolean" }
local function extensions(v)
  if type(v) == "table" then
    for _, e in ipairs(v) do
      if type(e) ~= "string" then return "must hold strings" end
    end
  end
end

-- Options by method (options.check schemas).
local OPTS = {
  read_file = { on_chunk = { type = "function" }, encoding = { type = "string" },
    chunk_size = { type = "integer", min = 1, expect = "a positive integer" },
    max_bytes = { type = "integer", min = 1, expect = "a whole number of bytes >= 1" } },
  write_file = { overwrite = BOOLEAN, mime_type = { type = "string" }, recursive = BOOLEAN },
  append_file = {},
  delete_file = { force = BOOLEAN, recursive = BOOLEAN },
  copy_file = { overwrite = BOOLEAN, recursive = BOOLEAN },
  move_file = { overwrite = BOOLEAN },
  mkdir = { recursive = BOOLEAN },
  rmdir = { force = BOOLEAN, recursive = BOOLEAN },
  readdir = { recursive = BOOLEAN, extension = { type = { "string", "table" }, check = extensions },
    max_depth = { type = "number", min = 0 } },
}
for name, spec in pairs(OPTS) do OPTS[name] = { name = name, options = spec } end
OPTS.read_file.validate = function(o, fail)
  if o.max_bytes and o.on_chunk then fail("max_bytes", "bounds a whole read: with 'on_chunk' nothing is kept") end
end

local function check_opts(n, fname, opts)
  return options.check(OPTS[fname], opts, n)
end

local function check_content(n, fname, content)
  local t = type(content)
  if t ~= "string" and t ~= "function" then
    argerror(n, fname, "content string or chunk source function expected, got " .. t)
  end
  return content
end

--- Calls `fn(chunk)` for each chunk of `content` (a string or a function
-- returning strings until nil). A source returning anything else raises.
function M.each_chunk(content, fn)
  if type(content) == "string" then
    if #content > 0 then return fn(content) end
    return true
  end
  while true do
    local chunk = content()
    if chunk == nil then return true end
    if type(chunk) ~= "string" then
      error(("chunk source returned %s (string or nil expected)"):format(type(chunk)), 0)
    end
    if #chunk > 0 then
      local ok, err = fn(chunk)
      if not ok then return nil, err end
    end
  end
end

-- Each method checks self and its arguments by kind (in order), refuses a
-- mutating call on a read-only filesystem, then hands the call to the backend.
local CHECK = { path = check_path, content = check_content, opts = check_opts }

local function define(fname, kinds, mutates)
  local n = #kinds
  Filesystem[fname] = function(self, ...)
    check_self(self, fname)
    local args = { ... }
    for i = 1, n do
      args[i] = CHECK[kinds[i]](i, fname, args[i])
    end
    if mutates and self.read_only then return nil, fserrors.WorkspaceReadOnlyError(fname) end
    local b = self._b
    return b[fname](b, compat.unpack(args, 1, n))
  end
end

--- read_file(path, opts): the whole file as a string, or with
-- `opts.on_chunk` each chunk passed to it in order (then returns true): a
-- large file never sits whole in memory. A whole read holds at most
-- `opts.max_bytes` (default M.DEFAULT_MAX_READ_BYTES): a larger file is
-- nil, FilesystemError (code EFBIG, `limit`), found before it is read
-- where the size is known. Out of memory is nil, OutOfMemoryError: a
-- memory error raised while reading (a Lua string, a table of pieces) is
-- turned into one, any other error raised (by on_chunk) goes on up.
define("read_file", { "path", "opts" })
local backend_read = Filesystem.read_file

local function read_outcome(path, ok, ...)
  if ok then return ... end
  local e = ...
  if e == "not enough memory" then return nil, fserrors.OutOfMemory(path, "read") end
  error(e, 0)
end

function Filesystem:read_file(path, opts)
  local arg = opts -- anything but a table or nil: the check raises
  if opts == nil or type(opts) == "table" then
    arg = {}
    for k, v in pairs(opts or {}) do arg[k] = v end
    if not arg.on_chunk and arg.max_bytes == nil then arg.max_bytes = M.DEFAULT_MAX_READ_BYTES end
  end
  return read_outcome(path, compat.pcall(backend_read, self, path, arg))
end

--- write_file(path, content, opts) writes a string or the chunks of a source
-- function. Options: overwrite (default true), recursive (create parents,
-- default true), mime_type.
define("write_file", { "path", "content", "opts" }, true)
define("append_file", { "path", "content" }, true)
define("delete_file", { "path", "opts" }, true)
define("copy_file", { "path", "path", "opts" }, true)
define("move_file", { "path", "path", "opts" }, true)
define("mkdir", { "path", "opts" }, true)
define("rmdir", { "path", "opts" }, true)

--- readdir(path, opts): entries { name, type = "file"|"directory", size?,
-- is_symlink?, symlink_target? }; recursive names are relative ("sub/x.lua").
define("readdir", { "path", "opts" })

--- exists(path): true or false; nil, err when the question cannot be
-- answered (e.g. the path leads outside the filesystem).
define("exists", { "path" })

--- stat(path): { name, path, type, size, created_at, modified_at, mime_type? }
-- (times as ISO-8601 UTC strings, as in sandbox info).
define("stat", { "path" })

--- { id, name, provider, status, read_only, base_path?, metadata? }
function Filesystem:info()
  check_self(self, "info")
  local i = self._b:info()
  i.id, i.name, i.provider, i.read_only = self.id, self.name, self.provider, self.read_only
  return i
end

function Filesystem:instructions()
  check_self(self, "instructions")
  return self._b:instructions()
end

function Filesystem:__tostring()
  return ("sandkit.Filesystem (%s %s)"):format(self.name, self.id)
end

--- Calls `fn(piece)` with `content` regrouped into pieces of `size` bytes
-- (a chunk source's last piece may be shorter, a larger chunk makes a larger
-- piece); true, or the nil, err of the first failing piece. Empty content
-- makes no call.
function M.each_piece(content, size, fn)
  if type(content) == "string" then
    for i = 1, #content, size do
      local ok, err = fn(content:sub(i, i + size - 1))
      if not ok then return nil, err end
    end
    return true
  end
  local buf, n = {}, 0
  local ok, err = M.each_chunk(content, function(chunk)
    buf[#buf + 1] = chunk
    n = n + #chunk
    if n < size then return true end
    local data = table.concat(buf)
    buf, n = {}, 0
    return fn(data)
  end)
  if not ok then return nil, err end
  if n > 0 then
    ok, err = fn(table.concat(buf))
    if not ok then return nil, err end
  end
  return true
end

--- Extension filter of readdir: ".lua" and "lua" both match "x.lua".
function M.extension_matches(name, ext)
  if ext == nil then return true end
  local list = type(ext) == "table" and ext or { ext }
  local e = name:match("(%.[^./]*)$")
  if not e then return false end
  for _, x in ipairs(list) do
    if x == e or x == e:sub(2) then return true end
  end
  return false
end

--- ISO-8601 UTC of milliseconds since the epoch.
function M.iso(ms)
  ms = math.floor(ms)
  return os.date("!%Y-%m-%dT%H:%M:%S", math.floor(ms / 1000)) .. (".%03dZ"):format(ms % 1000)
end

local function random_id(prefix)
  local now = core.now()
  local chars = "0123456789abcdefghijklmnopqrstuvwxyz"
  local function b36(n)
    local s = ""
    repeat
      local d = n % 36
      s = chars:sub(d + 1, d + 1) .. s
      n = math.floor(n / 36)
    until n == 0
    return s
  end
  local r = {}
  for i = 1, 6 do
    local d = math.random(1, 36)
    r[i] = chars:sub(d, d)
  end
  return ("%s-%s-%s"):format(prefix, b36(math.floor(os.time() * 1000 + now % 1000)), table.concat(r))
end
M.random_id = random_id

--- A filesystem object over `backend` with the public fields given.
function M.new(backend, fields)
  local fs = setmetatable({ _b = backend }, Filesystem)
  for k, v in pairs(fields) do fs[k] = v end
  return fs
end

M.Filesystem = Filesystem
return M
