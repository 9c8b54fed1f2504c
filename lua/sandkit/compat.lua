--- What differs between Lua 5.1, LuaJIT 2.1, 5.3 and 5.4, in one place:
-- sandkit's Lua files are written in the subset all four read alike
-- (tools/lua_subset.lua checks it) and take from here what the subset
-- lacks. Nothing here changes the globals.
local M = {}

M.unpack = table.unpack or unpack -- lua_subset: feature-tested

--- The values with their count, as table.pack.
function M.pack(...)
  return { n = select("#", ...), ... }
end

--- Whether v is a whole number that every version holds exactly (a
-- double's 53 bits): the same answer for 5 and 5.0, in every version.
function M.is_whole(v)
  return type(v) == "number" and v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53
end

--- v as an integer (5.3 and later: of the integer subtype) when it is a
-- whole number (M.is_whole), else nil.
function M.tointeger(v)
  if not M.is_whole(v) then return nil end
  return math.tointeger and math.tointeger(v) or v -- lua_subset: feature-tested
end

-- Whether a coroutine may yield from inside pcall: not in Lua 5.1 (LuaJIT
-- and 5.2 on may).
local yields_through_pcall = select(2, coroutine.resume(coroutine.create(function()
  pcall(coroutine.yield, "yielded")
end))) == "yielded"

-- Where M.pcall runs its function before 5.2: coroutine -> the coroutine
-- that called M.pcall, so that a task waiting inside is found (M.outer).
local parent = setmetatable({}, { __mode = "k" })

--- pcall, from whose function a task may wait (yield): in Lua 5.1 the
-- function runs in a coroutine of its own whose yields are passed on to the
-- caller's coroutine, and the values it is resumed with passed back.
M.pcall = pcall
if not yields_through_pcall then
  function M.pcall(f, ...)
    local outer = coroutine.running()
    if not outer then return pcall(f, ...) end -- the main program cannot yield anyway
    local co = coroutine.create(f)
    parent[co] = outer
    local res = M.pack(coroutine.resume(co, ...))
    while coroutine.status(co) == "suspended" do
      res = M.pack(coroutine.resume(co, coroutine.yield(M.unpack(res, 2, res.n))))
    end
    parent[co] = nil
    return M.unpack(res, 1, res.n)
  end
end

--- The coroutine that `co` runs on behalf of: co itself, or, inside
-- M.pcall's coroutines (Lua 5.1), the one that called M.pcall.
function M.outer(co)
  while parent[co] do co = parent[co] end
  return co
end

--- fn(obj, ...), then obj:close(), also when fn raises (the error goes on
-- up): `local x <close> = obj` in the subset. Returns what fn returns.
function M.closing(obj, fn, ...)
  local res = M.pack(M.pcall(fn, obj, ...))
  obj:close()
  if not res[1] then error(res[2], 0) end
  return M.unpack(res, 2, res.n)
end

return M
