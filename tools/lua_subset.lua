--- Checks that Lua files stay in the subset that Lua 5.1, LuaJIT 2.1, 5.3
-- and 5.4 read alike: run it under each interpreter (spec/lua_versions_spec.lua
-- does). For each file: the running interpreter must compile it (this
-- catches `//`, `<close>`, `<const>`, bitwise operators, and `goto` under
-- 5.1), and no quoted string may hold an escape that Lua 5.1 reads
-- differently (\x, \z, \u{...}: 5.1 keeps the letter and drops the
-- backslash, without an error).
--   lua5.1 tools/lua_subset.lua FILE...
-- Prints one line per problem, "FILE:LINE: what"; exits 1 if any.
-- Written in the subset itself.

-- Escapes that mean the same in every version after a backslash.
local PORTABLE_ESCAPE = {
  a = true, b = true, f = true, n = true, r = true, t = true, v = true,
  ["\\"] = true, ['"'] = true, ["'"] = true, ["\n"] = true, ["\r"] = true,
}

-- The line of byte `pos` in `src`.
local function line_of(src, pos)
  local n = 1
  for _ in src:sub(1, pos - 1):gmatch("\n") do n = n + 1 end
  return n
end

-- Where the long bracket opened at `pos` ("[", "=" * level, "[") ends, or nil.
local function long_bracket_end(src, pos)
  local eqs = src:match("^%[(=*)%[", pos)
  if not eqs then return nil end
  local _, stop = src:find("]" .. eqs .. "]", pos + #eqs + 2, true)
  return stop or #src
end

-- Problems with the escapes of the quoted strings of `src`: a list of
-- { line, message }.
local function escape_problems(src)
  local problems = {}
  local i, n = 1, #src
  while i <= n do
    local c = src:sub(i, i)
    if c == "-" and src:sub(i, i + 1) == "--" then
      local stop = long_bracket_end(src, i + 2)
      if stop then
        i = stop + 1
      else
        i = (src:find("\n", i, true) or n) + 1
      end
    elseif c == "[" and src:match("^%[=*%[", i) then
      i = long_bracket_end(src, i) + 1
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n do
        local d = src:sub(j, j)
        if d == "\\" then
          local e = src:sub(j + 1, j + 1)
          if not (PORTABLE_ESCAPE[e] or e:match("%d")) then
            problems[#problems + 1] = { line_of(src, j),
              ("escape \\%s: Lua 5.1 reads it as %q (use a decimal escape)"):format(e, e) }
          end
          j = j + 2
        elseif d == c or d == "\n" then
          break
        else
          j = j + 1
        end
      end
      i = j + 1
    else
      i = i + 1
    end
  end
  return problems
end

local failed = false
for _, path in ipairs(arg) do
  local f, err = io.open(path, "rb")
  if not f then
    print(err)
    failed = true
  else
    local src = f:read("*a")
    f:close()
    -- a first line "#!..." is skipped by loadfile; skip it here too
    local body = src:gsub("^#![^\n]*", "")
    local ok, msg = loadfile(path)
    if not ok then
      print(msg)
      failed = true
    end
    for _, p in ipairs(escape_problems(body)) do
      print(("%s:%d: %s"):format(path, p[1], p[2]))
      failed = true
    end
  end
end
os.exit(failed and 1 or 0)
