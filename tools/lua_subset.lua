--- Checks that Lua files stay in the subset that Lua 5.1, LuaJIT 2.1, 5.3
-- and 5.4 read alike: run it under each interpreter (spec/lua_versions_spec.lua
-- does). For each file: the running interpreter must compile it (this
-- catches `//`, `<close>`, `<const>`, bitwise operators, and `goto` under
-- 5.1), and no quoted string may hold an escape that Lua 5.1 reads
-- differently (\x, \z, \u{...}: 5.1 keeps the letter and drops the
-- backslash, without an error).
--   lua5.1 tools/lua_subset.lua FILE...
-- Also, every field of a standard library table that a file names (table.unpack,
-- math.type, ...) must exist in the running interpreter, unless its line
-- ends "-- lua_subset: feature-tested" (it checks first).
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

-- `src` with its comments and strings blanked (newlines kept, so lines
-- still count), and the problems with the escapes of its quoted strings:
-- a list of { line, message }.
local function scan(src)
  local problems, code = {}, {}
  local function blank(from, to)
    code[#code + 1] = (src:sub(from, to):gsub("[^\n]", " "))
  end
  local i, n = 1, #src
  while i <= n do
    local c = src:sub(i, i)
    if c == "-" and src:sub(i, i + 1) == "--" then
      local stop = long_bracket_end(src, i + 2) or ((src:find("\n", i, true) or n + 1) - 1)
      blank(i, stop)
      i = stop + 1
    elseif c == "[" and src:match("^%[=*%[", i) then
      local stop = long_bracket_end(src, i)
      blank(i, stop)
      i = stop + 1
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
      blank(i, j)
      i = j + 1
    else
      code[#code + 1] = c
      i = i + 1
    end
  end
  return table.concat(code), problems
end

-- The standard library tables, whose fields must exist in the running
-- interpreter (table.unpack, math.type, utf8, ... do not in 5.1).
local LIBRARIES = { string = true, table = true, math = true, io = true, os = true,
  coroutine = true, debug = true, package = true, utf8 = true }
-- Globals that 5.1 lacks or reads differently, with what to use.
local GLOBALS = { rawlen = "#", utf8 = "no utf8 library before 5.3", bit32 = "arithmetic" }

-- Problems with the library functions `code` (scan's) names.
local function library_problems(code, src)
  local problems = {}
  local pos = 1
  while true do
    local s, e, lib, name = code:find("([%a_][%w_]*)%s*%.%s*([%a_][%w_]*)", pos)
    if not s then break end
    local before = s > 1 and code:sub(s - 1, s - 1) or ""
    if LIBRARIES[lib] and before ~= "." and before ~= ":" then
      local t = rawget(_G, lib)
      if type(t) ~= "table" or t[name] == nil then
        problems[#problems + 1] = { line_of(src, s), ("%s.%s is not in %s"):format(lib, name, _VERSION) }
      end
    end
    pos = e + 1
  end
  for name, instead in pairs(GLOBALS) do
    pos = 1
    while true do
      local s, e = code:find("%f[%w_]" .. name .. "%f[^%w_]", pos)
      if not s then break end
      -- a field or a key (`.utf8`, `utf8 = `) is not the global
      local is_key = code:sub(s - 1, s - 1) == "." or code:find("^%s*=[^=]", e + 1) ~= nil
      if rawget(_G, name) == nil and not is_key then
        problems[#problems + 1] = { line_of(src, s), ("%s is not in %s (%s)"):format(name, _VERSION, instead) }
      end
      pos = e + 1
    end
  end
  -- read and lines formats: 5.1 knows only "*a", "*l", "*n" (which 5.3 and
  -- 5.4 accept too), and no "L" at all
  for _, fname in ipairs({ "read", "lines" }) do
    pos = 1
    while true do
      local s, e = code:find("%f[%w_]" .. fname .. "%s*%(", pos)
      if not s then break end
      local fmt = src:match("^%s*[\"']([alnL])[\"']", e + 1)
      if fmt then
        problems[#problems + 1] = { line_of(src, s), fmt == "L" and 'format "L" is not in Lua 5.1'
          or ('format "%s": Lua 5.1 knows only "*%s"'):format(fmt, fmt) }
      end
      pos = e + 1
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
    local code, problems = scan(body)
    for _, p in ipairs(library_problems(code, body)) do problems[#problems + 1] = p end
    table.sort(problems, function(a, b) return a[1] < b[1] end)
    local lines = {}
    for line in (body .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
    for _, p in ipairs(problems) do
      -- a line that tests for what it uses says so (lua/sandkit/compat.lua)
      if not lines[p[1]]:find("-- lua_subset: feature-tested", 1, true) then
        print(("%s:%d: %s"):format(path, p[1], p[2]))
        failed = true
      end
    end
  end
end
os.exit(failed and 1 or 0)
