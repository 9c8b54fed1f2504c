--- sandkit.Filesystem: upstream's WorkspaceFilesystem interface in
-- snake_case. This front checks arguments (misuse raises), refuses writes on
-- a read-only filesystem and hands the call to a backend (local system
-- calls, the Platform HTTP routes, or commands in a sandbox), which returns
-- results or nil, err with the kinds of sandkit.fs.errors.
local fserrors = require "sandkit.fs.errors"

local M = {}

local Filesystem = { __name = "sandkit.Filesystem" }
Filesystem.__index = Filesystem

local function argerror(n, fname, msg)
  error(("bad argument #%d to '%s' (%s)"):format(n, fname, msg), 3)
end

local function check_self(self, fname)
  if getmetatable(self) ~= Filesystem then
    error(("bad argument #1 to '%s' (sandkit.Filesystem expected, got %s)"):format(fname, type(self)), 3)
  end
end

local function check_path(n, fname, p)
  if type(p) ~= "string" then argerror(n, fname, "path string expected, got " .. type(p)) end
  if p:find("\0", 1, true) then argerror(n, fname, "path contains a NUL byte") end
  return p
end

-- Options by method: name -> expected type.
local OPTS = {
  read_file = { on_chunk = "function", encoding = "string", chunk_size = "number" },
  write_file = { overwrite = "boolean", mime_type = "string", recursive = "boolean" },
  append_file = {},
  delete_file = { force = "boolean", recursive = "boolean" },
  copy_file = { overwrite = "boolean", recursive = "boolean" },
  move_file = { overwrite = "boolean" },
  mkdir = { recursive = "boolean" },
  rmdir = { force = "boolean", recursive = "boolean" },
  readdir = { recursive = "boolean", extension = { string = true, table = true }, max_depth = "number" },
}

local function check_opts(n, fname, opts)
  if opts == nil then return {} end
  if type(opts) ~= "table" then argerror(n, fname, "options table expected, got " .. type(opts)) end
  local spec = OPTS[fname]
  for k, v in pairs(opts) do
    local want = spec[k]
    if want == nil then argerror(n, fname, ("unknown option '%s'"):format(tostring(k))) end
    local ok = type(want) == "table" and want[type(v)] or type(v) == want
    if not ok then
      argerror(n, fname, ("option '%s' has the wrong type (%s)"):format(k, type(v)))
    end
  end
  if opts.chunk_size and (math.type(opts.chunk_size) ~= "integer" or opts.chunk_size < 1) then
    argerror(n, fname, "option 'chunk_size' must be a positive integer")
  end
  if opts.max_depth and (opts.max_depth ~= opts.max_depth or opts.max_depth < 0) then
    argerror(n, fname, "option 'max_depth' must be a number >= 0")
  end
  if type(opts.extension) == "table" then
    for _, e in ipairs(opts.extension) do
      if type(e) ~= "string" then argerror(n, fname, "option 'extension' must hold strings") end
    end
  end
  return opts
end

local function check_content(n, fname, content)
  local t = type(content)
  if t ~= "string" and t ~= "function" then
    argerror(n, fname, "content string or chunk source function expected, got " .. t)
  end
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

--- The whole file as a string, or with `opts.on_chunk` each chunk passed to
-- it in order (then returns true): a large file never sits whole in memory.
function Filesystem:read_file(path, opts)
  check_self(self, "read_file")
  check_path(1, "read_file", path)
  opts = check_opts(2, "read_file", opts)
  return self._b:read_file(path, opts)
end

--- Writes a string or the chunks of a source function. Options:
-- overwrite (default true), recursive (create parents, default true),
-- mime_type.
function Filesystem:write_file(path, content, opts)
  check_self(self, "write_file")
  check_path(1, "write_file", path)
  check_content(2, "write_file", content)
  opts = check_opts(3, "write_file", opts)
  if self.read_only then return nil, fserrors.WorkspaceReadOnlyError("write_file") end
  return self._b:write_file(path, content, opts)
end

function Filesystem:append_file(path, content)
  check_self(self, "append_file")
  check_path(1, "append_file", path)
  check_content(2, "append_file", content)
  if self.read_only then return nil, fserrors.WorkspaceReadOnlyError("append_file") end
  return self._b:append_file(path, content)
end

function Filesystem:delete_file(path, opts)
  check_self(self, "delete_file")
  check_path(1, "delete_file", path)
  opts = check_opts(2, "delete_file", opts)
  if self.read_only then return nil, fserrors.WorkspaceReadOnlyError("delete_file") end
  return self._b:delete_file(path, opts)
end

function Filesystem:copy_file(src, dest, opts)
  check_self(self, "copy_file")
  check_path(1, "copy_file", src)
  check_path(2, "copy_file", dest)
  opts = check_opts(3, "copy_file", opts)
  if self.read_only then return nil, fserrors.WorkspaceReadOnlyError("copy_file") end
  return self._b:copy_file(src, dest, opts)
end

function Filesystem:move_file(src, dest, opts)
  check_self(self, "move_file")
  check_path(1, "move_file", src)
  check_path(2, "move_file", dest)
  opts = check_opts(3, "move_file", opts)
  if self.read_only then return nil, fserrors.WorkspaceReadOnlyError("move_file") end
  return self._b:move_file(src, dest, opts)
end

function Filesystem:mkdir(path, opts)
  check_self(self, "mkdir")
  check_path(1, "mkdir", path)
  opts = check_opts(2, "mkdir", opts)
  if self.read_only then return nil, fserrors.WorkspaceReadOnlyError("mkdir") end
  return self._b:mkdir(path, opts)
end

function Filesystem:rmdir(path, opts)
  check_self(self, "rmdir")
  check_path(1, "rmdir", path)
  opts = check_opts(2, "rmdir", opts)
  if self.read_only then return nil, fserrors.WorkspaceReadOnlyError("rmdir") end
  return self._b:rmdir(path, opts)
end

--- Entries { name, type = "file"|"directory", size?, is_symlink?,
-- symlink_target? }; recursive names are relative ("sub/x.lua").
function Filesystem:readdir(path, opts)
  check_self(self, "readdir")
  check_path(1, "readdir", path)
  opts = check_opts(2, "readdir", opts)
  return self._b:readdir(path, opts)
end

--- True or false; nil, err when the question cannot be answered (e.g. the
-- path leads outside the filesystem).
function Filesystem:exists(path)
  check_self(self, "exists")
  check_path(1, "exists", path)
  return self._b:exists(path)
end

--- { name, path, type, size, created_at, modified_at, mime_type? }
-- (times as ISO-8601 UTC strings, as in sandbox info).
function Filesystem:stat(path)
  check_self(self, "stat")
  check_path(1, "stat", path)
  return self._b:stat(path)
end

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
  ms = math.tointeger(ms) or math.floor(ms)
  return os.date("!%Y-%m-%dT%H:%M:%S", ms // 1000) .. (".%03dZ"):format(ms % 1000)
end

local function random_id(prefix)
  local now = require("sandkit.core").now()
  local chars = "0123456789abcdefghijklmnopqrstuvwxyz"
  local function b36(n)
    local s = ""
    repeat
      local d = n % 36
      s = chars:sub(d + 1, d + 1) .. s
      n = n // 36
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
