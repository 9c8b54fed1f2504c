--- The exec-stream backend of sb.fs (platform, modal, apple-container):
-- each operation is a short POSIX sh script run in the sandbox. Paths are
-- passed as quoted arguments, file data travels on stdin and stdout (binary
-- safe, never on a command line), and a script reports a typed failure as
-- one stderr line "sandkit-fs: <Kind> <which>" (which: 1 or 2 = the first or
-- second path, p = the first path's parent). Writes go in pieces of at most
-- PIECE bytes (the first creates or truncates, the rest append), reads in
-- pieces too, so neither side ever holds a whole large file. Nothing but a
-- regular file is ever opened: a FIFO, socket or device is refused
-- (NotRegular) before any read, write or copy, and listings take sizes from
-- stat or find, never from reading (opening a FIFO blocks until a writer
-- comes: a listing used to hang for the whole command timeout). A whole
-- read checks the size (stat) against max_bytes before it reads a byte.
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local fs = require "sandkit.fs"
local fserrors = require "sandkit.fs.errors"
local pathmod = require "sandkit.fs.path"

local M = {}

local PIECE = 8 * 1024 * 1024
-- Reads go in larger pieces (one command each).
local READ_PIECE = 64 * 1024 * 1024

local PRELUDE = [[e(){ printf 'sandkit-fs: %s %s\n' "$1" "$2" >&2; exit 3; }; ]]

-- "$1" is a regular file (symlinks followed) of at most "$2" bytes ("$2"
-- empty: any size); the size comes from stat, else from a read of what is
-- a regular file.
local REGULAR = [[[ -e "$1" ] || e FileNotFoundError 1; [ -d "$1" ] && e IsDirectoryError 1
[ -f "$1" ] || e NotRegular 1
if [ -n "$2" ]; then s=$(stat -Lc %s -- "$1" 2>/dev/null) || s=$(($(wc -c < "$1")))
if [ "$s" -gt "$2" ]; then e TooLarge 1; fi; fi
]]

local SCRIPTS = {
  probe = REGULAR,
  -- $3: offset (from 1), $4: bytes; $2 as in REGULAR
  read = REGULAR .. [[tail -c "+$3" -- "$1" | head -c "$4"]],
  -- A write that fails reads its data to the end first (f, z): a command
  -- that exits leaving stdin unread can lose its stderr on Podman, whose
  -- conmon then resets the attach socket (docs/protocols/docker.md §7).
  write = [[f(){ cat >/dev/null; e "$@"; }; z(){ cat >/dev/null; exit 1; }
d=$(dirname -- "$1")
if [ "$3" = 1 ]; then mkdir -p -- "$d" 2>/dev/null || f NotDirectoryError p
else [ -d "$d" ] || { [ -e "$d" ] && f NotDirectoryError p; f DirectoryNotFoundError p; }; fi
[ -d "$1" ] && f IsDirectoryError 1
[ -e "$1" ] && [ ! -f "$1" ] && f NotRegular 1
case $2 in
x) set -C; cat > "$1" 2>/dev/null || { [ -e "$1" ] && f FileExistsError 1; z; } ;;
w) cat > "$1" || z ;;
*) cat >> "$1" || z ;;
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
[ -f "$1" ] || e NotRegular 1
[ -d "$2" ] && e IsDirectoryError 2
[ -e "$2" ] && [ ! -f "$2" ] && e NotRegular 2
[ "$3" = 1 ] || { [ -e "$2" ] && e FileExistsError 2; }
mkdir -p -- "$(dirname -- "$2")" && exec cp -- "$1" "$2"]],
  move = [[[ -e "$1" ] || [ -L "$1" ] || e FileNotFoundError 1
[ -d "$2" ] && [ ! -d "$1" ] && e IsDirectoryError 2
[ "$3" = 1 ] || { [ -e "$2" ] && e FileExistsError 2; }
mkdir -p -- "$(dirname -- "$2")" && exec mv -f -- "$1" "$2"]],
  -- records "<y><Y> <size> <name>\0" as find's %y%Y: the entry's type
  -- (f file, d directory, l symlink, p, s, c, b ...) and its target's; the
  -- size from stat. GNU find does it in one process; elsewhere a walk with
  -- test(1) and stat(1) per entry. Neither opens an entry.
  readdir = [[[ -e "$1" ] || e DirectoryNotFoundError 1
[ -d "$1" ] || e NotDirectoryError 1
cd -- "$1" || exit 1
find . -mindepth 1 -maxdepth $(($2 + 1)) -printf '%y%Y %s %P\0' 2>/dev/null && exit 0
[ -n "$(find . -maxdepth 0 -printf x 2>/dev/null)" ] && exit 0
walk(){ for f in "$1"/* "$1"/.*; do b=${f##*/}
  { [ "$b" = . ] || [ "$b" = .. ]; } && continue
  [ -e "$f" ] || [ -L "$f" ] || continue
  if [ -d "$f" ]; then t=d; elif [ -f "$f" ]; then t=f; else t=o; fi
  y=$t; [ -L "$f" ] && y=l
  s=0; [ "$y" = f ] && { s=$(stat -c %s -- "$f" 2>/dev/null) || s=$(($(wc -c < "$f"))); }
  printf '%s%s %s %s\0' "$y" "$t" "$s" "$2$b"
  if [ "$3" -gt 0 ] && [ "$y" = d ]; then walk "$f" "$2$b/" $(($3 - 1)); fi
done; }
walk . "" "$2"]],
  -- "<type> <size> <mtime>", from stat (symlinks followed), never a read
  stat = [[[ -e "$1" ] || e FileNotFoundError 1
x=$(stat -Lc '%s %Y' -- "$1" 2>/dev/null) || x=
if [ -z "$x" ]; then s=0; [ -f "$1" ] && s=$(($(wc -c < "$1")))
x="$s $(date -r "$1" +%s 2>/dev/null || echo 0)"; fi
if [ -d "$1" ]; then printf 'directory 0 %s' "${x#* }"; else printf 'file %s' "$x"; fi]],
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

-- Starts script `name` with the paths/flags in `args`; returns a function
-- that waits for it and returns the result or nil, typed error.
function Backend:start(name, args, paths, opts)
  local line = COMMANDS[name]
  for _, a in ipairs(args) do line = line .. " " .. core.quote(a) end
  opts = opts or {}
  -- a piece that never finishes (a stalled stream) must not hang the
  -- caller: the sandbox's own command timeout, else fs's default
  opts.timeout = self.options.timeout or fs.DEFAULT_OP_TIMEOUT_MS
  local stderr = {}
  if opts.capture == false then
    -- output is streamed, not kept: keep stderr (the failure report) here
    opts.on_stderr = function(c) if #stderr < 64 then stderr[#stderr + 1] = c end end
  end
  local op = self.sb:exec_async(line, nil, opts)
  return function()
    local r, err = op:wait()
    return self:outcome(name, args, paths, r, err, stderr)
  end
end

function Backend:run(name, args, paths, opts)
  return self:start(name, args, paths, opts)()
end

-- A finished script as its result, or nil, the typed error it reported.
function Backend:outcome(name, args, paths, r, err, stderr)
  if not r then return nil, err end
  if r.exit_code == 0 then return r end
  if r.timed_out then
    return nil, errors.new("TimeoutError", ("%s of %s did not finish in time"):format(name, paths[1]),
      { path = paths[1] })
  end
  if #stderr > 0 then r.stderr = table.concat(stderr) end
  local kind, which = (r.stderr or ""):match("sandkit%-fs: (%a+) ([12p])")
  local p = which == "2" and paths[2] or paths[1]
  if which == "p" then p = pathmod.dirname(p) end
  -- the scripts that check a size get it as their second argument
  if kind == "TooLarge" then return nil, fserrors.TooLarge(p, tonumber(args[2])) end
  if kind and fserrors[kind] then return nil, fserrors[kind](p) end
  local msg = ((r.stderr or ""):gsub("%s+$", ""))
  if msg == "" then msg = ("%s failed (exit %d)"):format(name, r.exit_code) end
  return nil, fserrors.FilesystemError(paths[1], "EIO", msg)
end

--- Starts asking whether `path` is a regular file of at most `max` bytes
-- (nil: any size); the function returned waits for the answer: true, or
-- nil, the typed error (NotRegular, TooLarge, FileNotFoundError, ...).
function Backend:probe(path, max)
  local finish = self:start("probe", { fix(path), max and tostring(max) or "" }, { path })
  return function()
    local r, err = finish()
    return r and true, err
  end
end

-- Reads in pieces (one command each) until a short piece: bounded output
-- per command. With on_chunk each piece streams to it; a whole read is
-- captured (the capture's limit is the piece) and stops past max_bytes.
function Backend:read_file(path, opts)
  local p = fix(path)
  local max = opts.max_bytes
  local parts, offset = {}, 0
  while true do
    -- the first piece checks the type and the size; the rest only read
    local limit = offset == 0 and max and tostring(max) or ""
    local piece = max and math.min(READ_PIECE, max + 1 - offset) or READ_PIECE
    local args = { p, limit, tostring(offset + 1), tostring(piece) }
    local got, cb_err = 0, nil
    local r, err
    if opts.on_chunk then
      r, err = self:run("read", args, { path }, {
        capture = false,
        on_stdout = function(chunk)
          if cb_err then return end
          got = got + #chunk
          local ok, e = pcall(opts.on_chunk, chunk)
          if not ok then cb_err = e; error(e, 0) end
        end,
      })
      if cb_err then error(cb_err, 0) end
    else
      r, err = self:run("read", args, { path }, { max_output_bytes = piece })
      if r then
        got = #r.stdout
        parts[#parts + 1] = r.stdout
      end
    end
    if not r then return nil, err end
    offset = offset + got
    if max and offset > max then return nil, fserrors.TooLarge(path, max) end
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
    local y, t, size, name = rec:match("^(%a)(%S) (%d+) (.*)$")
    if y then
      local link = y == "l"
      local e = { name = name, type = t == "d" and "directory" or "file" }
      if link then e.is_symlink = true end
      if e.type == "file" and not link then e.size = y == "f" and tonumber(size) or 0 end
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

--- The backend of a provider whose own file operations (filesystem =
-- "own") do part of sb.fs: `own`'s methods where it has them, this
-- backend's for the rest; own's methods reach this one as self.exec.
function M.beneath(own, sb, o)
  local exec = M.backend(sb, o)
  return setmetatable({ sb = sb, options = o, exec = exec }, {
    __index = function(_, k)
      if own[k] then return own[k] end
      local f = exec[k]
      if type(f) == "function" then return function(_, ...) return f(exec, ...) end end
      return f
    end,
  })
end

return M
