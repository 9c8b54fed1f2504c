--- The module under test, copied where any user can read it, for a spec that
-- runs Lua as another user: the checkout may sit under a mode-0700
-- directory (`mktemp -d` makes one; so does many a CI system) that this
-- user cannot enter. The copy is of what this run loads (package.path and
-- package.cpath: the plain, sanitized or portable build).
local sh = require "helpers.sh"
local tmp = require "helpers.tmp"

local M = {}

local copied -- { path, cpath } once made

--- Returns LUA_PATH and LUA_CPATH values that find sandkit in a fresh copy
-- readable by everyone (made once per spec file), and system modules as
-- before.
function M.paths()
  if copied and os.execute("test -d " .. sh.quote(copied.dir)) == true then return copied.path, copied.cpath end
  local init = assert(package.searchpath("sandkit", package.path), "sandkit is not on package.path")
  local core = assert(package.searchpath("sandkit.core", package.cpath), "sandkit.core is not on package.cpath")
  local dir = tmp.dir()
  local q = sh.quote
  local lua_dir = init:match("^(.*)/init%.lua$")
  assert(os.execute(("mkdir -p %s/lua %s/lib/sandkit && cp -R %s %s/lua/sandkit && cp %s %s/lib/sandkit/core.so"
    .. " && chmod -R a+rX %s"):format(q(dir), q(dir), q(lua_dir), q(dir), q(core), q(dir), q(dir))),
    "cannot copy the module to " .. dir)
  -- the provider folders' Lua (descriptors, fs.lua), as sandkit.registry
  -- finds them beside a checkout's lua/
  local root = lua_dir:match("^(.*)/lua/sandkit$") or (lua_dir == "lua/sandkit" and ".")
  local providers = assert(root, "sandkit is not loaded from a checkout's lua/") .. "/src/core/providers"
  assert(os.execute(("mkdir -p %s/src/core/providers && cd %s && cp --parents providers.def */*.lua %s/src/core/providers"
    .. " && chmod -R a+rX %s/src"):format(q(dir), q(providers), q(dir), q(dir))), "cannot copy the providers to " .. dir)
  copied = { dir = dir, path = dir .. "/lua/?.lua;" .. dir .. "/lua/?/init.lua;;", cpath = dir .. "/lib/?.so;;" }
  return copied.path, copied.cpath
end

--- Why a child run as `uid` cannot load this run's build, or nil when it
-- can: under a sanitizer wrapper (SANDKIT_WRAP, `make test-asan`) the
-- wrapper and the libraries it preloads live in the checkout, which that
-- user may not enter, and the sanitized core.so aborts without them.
function M.blocked_for(uid)
  local wrap = os.getenv("SANDKIT_WRAP")
  local prog = wrap and wrap:match("^%S+")
  if not prog then return nil end
  if sh.ok(("setpriv --reuid=%d --regid=%d --clear-groups sh -c 'test -x \"$(command -v \"$1\")\"' sh %s"
    .. " >/dev/null 2>&1"):format(uid, uid, sh.quote(prog))) then
    return nil
  end
  return "uid " .. uid .. " cannot run the sanitizer wrapper " .. prog .. " inside this checkout"
end

return M
