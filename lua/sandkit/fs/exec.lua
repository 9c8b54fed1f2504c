--- The exec-stream backend of sb.fs (platform, modal, apple-container):
-- each operation is a short POSIX sh script run in the sandbox. Paths are
-- passed as quoted arguments, file data travels on stdin and stdout (binary
-- safe, never on a command line), and a script reports a typed failure as
-- one stderr line "sandkit-fs: <Kind> <which>" (which: 1 or 2 = the first or
-- second path, p = the first path's parent). Writes go in pieces of at most
-- PIECE bytes (the first creates or truncates, the rest append), reads in
-- pieces too, so neither side ever holds a whole large file.
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local fs = require "sandkit.fs"
local fserrors = require "sandkit.fs.errors"
local pathmod = require "sandkit.fs.path"

local M = {}

local PIECE = 8 << 20
-- Reads go in larger pieces (one command each).
local READ_PIECE = 64 << 20
local PIECE_TIMEOUT_MS = 600000

local PRELUDE = [[e(){ printf 'sandkit-fs: %s %s\n' "$1" "$2" >&2; exit 3; }; ]]

local SCRIPTS = {
  read = [[[ -e "$1" ] || e FileNotFoundError 1; [ -d "$1" ] && e IsDirectoryError 1
tail -c "+$2" -- "$1" | head -c "$3"]],
  write = [[d=$(dirname -- "$1")
if [ "$3" = 1 ]; then mkdir -p -- "$d" 2>/dev/null || e NotDirectoryError p
else [ -d "$d" ] || { [ -e "$d" ] && e NotDirectoryError p; e DirectoryNotFoundError p; }; fi
[ -d "$1" ] && e IsDirectoryError 1
case $2 in
x) set -C; cat > "$1" 2>/dev/null || { [ -e "$1" ] && e FileExistsError 1; exit 1; } ;;
w) cat > "$1" ;;
*) cat >> "$1" ;;
esac]],
  delete = [[if [ ! -e "$1" ] && [ ! -L "$1" ]; then [ "$2" = 1 ] && exit 0; e FileNotFoundError 1; fi
if [ -d "$1" ] && [ ! -L "$1" ]; then [ "$3" = 1 ] || e IsDirectoryError 1; exec rm -rf -- "$1"; fi
exec rm -f -- "$1"]],
  rmdir = [[if [ ! -e "$1" ]; then [ "$2" = 1 ] && exit 0; e DirectoryNotFoundError 1; fi
[ -d "$1" ] || e NotDirectoryError 1
[ "$3" = 1 ] && exec rm -rf -- "$1"
[ -z "$(ls -A -- "$1")" ] || e DirectoryNotEmptyError 1
exec rmdir -- "$1"]],
  mkdir = [[if [ -e "$1" ]; then [ -d "$1" ] && exit 0; e FileExistsError 1; fi
if [ "$2" = 1 ]; then mkdir -p -- "$1" 2>/dev/null || e NotDirectoryError 1; exit 0; fi
d=$(dirname -- "$1"); [ -d "$d" ] || e DirectoryNotFoundError p
exec mkdir -- "$1"]],
  copy = [[[ -e "$1" ] || e FileNotFoundError 1
if [ -d "$1" ]; then [ "$4" = 1 ] || e IsDirectoryError 1; mkdir -p -- "$2" || exit 1
  [ "$3" = 1 ] && exec cp -R -- "$1"/. "$2"/; exec cp -Rn -- "$1"/. "$2"/; fi
[ -d "$2" ] && e IsDirectoryError 2
[ "$3" = 1 ] || { [ -e "$2" ] && e FileExistsError 2; }
mkdir -p -- "$(dirname -- "$2")" && exec cp -- "$1" "$2"]],
  move = [[[ -e "$1" ] || [ -L "$1" ] || e FileNotFoundError 1
[ -d "$2" ] && [ ! -d "$1" ] && e IsDirectoryError 2
[ "$3" = 1 ] || { [ -e "$2" ] && e FileExistsError 2; }
mkdir -p -- "$(dirname -- "$2")" && exec mv -f -- "$1" "$2"]],
  -- records "<type> <size> <name>\0"; type f, d, lf or ld (l = symlink)
  readdir = [[[ -e "$1" ] || e DirectoryNotFoundError 1
[ -d "$1" ] || e NotDirectoryError 1
walk(){ for f in "$1"/* "$1"/.*; do b=${f##*/}
  { [ "$b" = . ] || [ "$b" = .. ]; } && continue
  [ -e "$f" ] || [ -L "$f" ] || continue
  l=; [ -L "$f" ] && l=l
  if [ -d "$f" ]; then t=d; s=0; else t=f; s=$(wc -c < "$f" 2>/dev/null || echo 0); fi
  printf '%s%s %s %s\0' "$l" "$t" "$s" "$2$b"
  if [ "$3" -gt 0 ] && [ "$t" = d ] && [ -z "$l" ]; then walk "$f" "$2$b/" $(($3 - 1)); fi
done; }
walk "$1" "" "$2"]],
  stat = [[[ -e "$1" ] || e FileNotFoundError 1
if [ -d "$1" ]; then t=directory; s=0; else t=file; s=$(wc -c < "$1"); fi
m=$(stat -c %Y -- "$1" 2>/dev/null || date -r "$1" +%s 2>/dev/null || echo 0)
printf '%s %s %s' "$t" "$s" "$m"]],
  exists = [[if [ -e "$1" ]; then echo yes; else echo no; fi]],
}

-- The command line of each script, quoted once (every operation runs one).
local COMMANDS = {}
for name, script in pairs(SCRIPTS) do
  COMMANDS[name] = "sh -c " .. core.quote(PRELUDE .. script) .. " sandkit-fs"
end

local Backend = {}
Backend.__index = Backend

local function fix(path)
  if path == "" then return "." end
  return path
end

-- Runs script `name` with the paths/flags in `args`; returns the result or
-- nil, typed error.
function Backend:run(name, args, paths, opts)
  local line = COMMANDS[name]
  for _, a in ipairs(args) do line = line .. " " .. core.quote(a) end
  opts = opts or {}
  -- a piece that never finishes (a stalled stream) must not hang the
  -- caller: the sandbox's own command timeout, else PIECE_TIMEOUT_MS
  opts.timeout = self.options.timeout or PIECE_TIMEOUT_MS
  local stderr = {}
  if opts.capture == false then
    -- output is streamed, not kept: keep stderr (the failure report) here
    opts.on_stderr = function(c) if #stderr < 64 then stderr[#stderr + 1] = c end end
  end
  local r, err = self.sb:exec(line, nil, opts)
  if not r then return nil, err end
  if r.exit_code == 0 then return r end
  if r.timed_out then
    return nil, errors.new("TimeoutError", ("%s of %s did not finish in time"):format(name, paths[1]),
      { path = paths[1] })
  end
  if #stderr > 0 then r.stderr = table.concat(stderr) end
  local kind, which = (r.stderr or ""):match("sandkit%-fs: (%a+) ([12p])")
  if kind and fserrors[kind] then
    local p = which == "2" and paths[2] or paths[1]
    if which == "p" then p = pathmod.dirname(p) end
    return nil, fserrors[kind](p)
  end
  local msg = ((r.stderr or ""):gsub("%s+$", ""))
  if msg == "" then msg = ("%s failed (exit %d)"):format(name, r.exit_code) end
  return nil, fserrors.FilesystemError(paths[1], "EIO", msg)
end

-- Reads in pieces (one command each) until a short piece: bounded output
-- per command, and each piece streams to on_chunk.
function Backend:read_file(path, opts)
  local p = fix(path)
  local piece = READ_PIECE
  local parts = {}
  local emit = opts.on_chunk or function(c) parts[#parts + 1] = c end
  local offset = 0
  while true do
    local got, cb_err = 0, nil
    local r, err = self:run("read", { p, tostring(offset + 1), tostring(piece) }, { path }, {
      capture = false,
      on_stdout = function(chunk)
        if cb_err then return end
        got = got + #chunk
        local ok, e = pcall(emit, chunk)
        if not ok then cb_err = e; error(e, 0) end
      end,
    })
    if cb_err then error(cb_err, 0) end
    if not r then return nil, err end
    offset = offset + got
    if got < piece then break end
  end
  if opts.on_chunk then return true end
  return table.concat(parts)
end

-- Sends content in pieces: mode for the first ("w", "x" or "a"), then "a".
function Backend:send(path, content, mode, recursive)
  local p = fix(path)
  local rec = recursive == false and "0" or "1"
  local first = true
  local function piece(data)
    local r, err = self:run("write", { p, first and mode or "a", rec }, { path }, { stdin = data })
    first = false
    return r, err
  end
  local ok, err = fs.each_piece(content, PIECE, piece)
  if not ok then return nil, err end
  if first then
    -- empty content: one empty piece still creates or truncates the file
    local r, perr = piece("")
    return r and true, perr
  end
  return true
end

function Backend:write_file(path, content, opts)
  return self:send(path, content, opts.overwrite == false and "x" or "w", opts.recursive)
end

function Backend:append_file(path, content)
  return self:send(path, content, "a", true)
end

local function flag(b) return b and "1" or "0" end

function Backend:delete_file(path, opts)
  local r, err = self:run("delete", { fix(path), flag(opts.force), flag(opts.recursive) }, { path })
  return r and true, err
end

function Backend:rmdir(path, opts)
  local r, err = self:run("rmdir", { fix(path), flag(opts.force), flag(opts.recursive) }, { path })
  return r and true, err
end

function Backend:mkdir(path, opts)
  local r, err = self:run("mkdir", { fix(path), flag(opts.recursive ~= false) }, { path })
  return r and true, err
end

function Backend:copy_file(src, dest, opts)
  local r, err = self:run("copy", { fix(src), fix(dest), flag(opts.overwrite ~= false), flag(opts.recursive) },
    { src, dest })
  return r and true, err
end

function Backend:move_file(src, dest, opts)
  local r, err = self:run("move", { fix(src), fix(dest), flag(opts.overwrite ~= false) }, { src, dest })
  return r and true, err
end

function Backend:readdir(path, opts)
  local depth = opts.recursive and math.floor(opts.max_depth or 100) or 0
  local r, err = self:run("readdir", { fix(path), tostring(depth) }, { path })
  if not r then return nil, err end
  local out = {}
  for rec in r.stdout:gmatch("([^%z]*)%z") do
    local t, size, name = rec:match("^(%a+) (%d+) (.*)$")
    if t then
      local link = t:sub(1, 1) == "l"
      local e = { name = name, type = t:sub(-1) == "d" and "directory" or "file" }
      if link then e.is_symlink = true end
      if e.type == "file" and not link then e.size = tonumber(size) end
      if e.type ~= "file" or fs.extension_matches(pathmod.basename(name), opts.extension) then
        out[#out + 1] = e
      end
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

function Backend:stat(path)
  local r, err = self:run("stat", { fix(path) }, { path })
  if not r then return nil, err end
  local t, size, mtime = r.stdout:match("^(%a+) (%d+) (%d+)")
  if not t then return nil, fserrors.FilesystemError(path, "EIO", "unreadable stat output") end
  local ms = tonumber(mtime) * 1000
  return { name = pathmod.basename(path) or "", path = path, type = t, size = tonumber(size),
    created_at = fs.iso(ms), modified_at = fs.iso(ms) }
end

function Backend:exists(path)
  local r, err = self:run("exists", { fix(path) }, { path })
  if not r then return nil, err end
  return r.stdout:sub(1, 3) == "yes"
end

function Backend:info() return { status = self.sb.status } end

function Backend:instructions()
  return ("Files of the %s sandbox as its commands see them; relative paths start at its working directory."):format(self.sb.provider)
end

function M.backend(sb, o)
  return setmetatable({ sb = sb, options = o }, Backend)
end

return M
