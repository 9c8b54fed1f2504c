--- References from comments and docs to document sections, and their check.
--
-- The one form: a path from the repository root, a space, the section sign,
-- then a heading number or a heading title in double quotes, on one line:
--   docs/protocols/platform.md §2.5
--   docs/reliability.md §"HTTP/2 stalls in libcurl 7.88"
-- More sections of the same document may follow, each joined by ", ",
-- " and " or " or ":
--   docs/protocols/platform.md §2.3, §2.4
-- A sign with no path is allowed only in Markdown under docs/, for a section
-- of that same document; an RFC number before the sign (RFC 6455 §7.4)
-- names an external standard.
--
-- check(root, files) returns "file:line: problem" strings for: a section
-- sign that follows no path; a path that is not a file; a section that is
-- no heading of that file; a Markdown path under docs/, spec/, bench/ ...
-- that does not exist; and any mention of a design document kept outside
-- the repository (the specs, design and style notes the project grew from).
local M = {}

local SECT = "\194\167" -- the section sign in UTF-8

-- The documents the project once cited from outside the repository, as
-- they may be named; only docs/protocols/<name> is in the repository.
-- (Built from pieces, so that this file passes its own check.)
local PROTOCOL_DOCS = {}
for _, stem in ipairs({ "platform", "modal", "event-core", "apple-container", "conformance" }) do
  PROTOCOL_DOCS[#PROTOCOL_DOCS + 1] = stem .. ".md"
end
local OUTSIDE = { "DESIGN" .. ".md", "STYLE" .. ".md", "shared" .. "/specs", "shared" .. " spec" }

-- Top-level folders whose Markdown paths must exist.
local TOP_DIRS = { docs = true, spec = true, bench = true, examples = true, src = true, lua = true, mk = true,
  rockspec = true, tools = true }

local read = require("helpers.files").read

-- { numbers = { ["2.5"] = true }, titles = { ["Secrets"] = true } } of a
-- Markdown file (headings outside fenced code), or nil when unreadable.
local heading_cache = {}
local function headings(root, path)
  local key = root .. "\0" .. path
  if heading_cache[key] ~= nil then return heading_cache[key] or nil end
  local text = read(root .. "/" .. path)
  if not text then
    heading_cache[key] = false
    return nil
  end
  local h = { numbers = {}, titles = {} }
  local fenced = false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:match("^%s*```") then
      fenced = not fenced
    elseif not fenced then
      local title = line:match("^#+%s+(.-)%s*$")
      if title then
        h.titles[title] = true
        local num = title:match("^(%d+[%.%d]*)")
        if num then h.numbers[(num:gsub("%.$", ""))] = true end
      end
    end
  end
  heading_cache[key] = h
  return h
end

local function exists(root, path)
  local f = io.open(root .. "/" .. path, "rb")
  if not f then return false end
  local ok = f:read(0) ~= nil or f:seek("end") == 0
  f:close()
  return ok
end

-- The section written after a section sign, from position i (just past it): kind
-- ("number" or "title"), value, and the position after it; nil if neither.
local function section_at(line, i)
  local num = line:match("^(%d+[%.%d]*)", i)
  if num then
    local value = num:gsub("%.+$", "")
    return "number", value, i + #value
  end
  local title = line:match('^"([^"]+)"', i)
  if title then return "title", title, i + #title + 2 end
  return nil
end

local function check_line(root, file, n, line, problems)
  local function bad(msg) problems[#problems + 1] = ("%s:%d: %s"):format(file, n, msg) end
  local in_docs_md = file:match("^docs/.*%.md$") ~= nil

  -- documents outside the repository
  for _, name in ipairs(OUTSIDE) do
    if line:find(name, 1, true) then bad(("names %s, which is not in the repository"):format(name)) end
  end
  for _, name in ipairs(PROTOCOL_DOCS) do
    local from = 1
    while true do
      local s, e = line:find(name, from, true)
      if not s then break end
      local before = line:sub(1, s - 1)
      local prev = before:sub(-1)
      -- part of a longer name (docs/modal-filesystem.md is another file)
      local longer = prev:match("[%w_%-%.]") ~= nil
      if not longer and not before:match("docs/protocols/$") then
        bad(("names %s without its path docs/protocols/%s"):format(name, name))
      end
      from = e + 1
    end
  end

  -- paths to Markdown files in the repository must exist
  for path in line:gmatch("[%w_%-%./]+%.md") do
    local clean = path:gsub("^%./", "")
    local top = clean:match("^([%w_%-]+)/")
    if (top and TOP_DIRS[top]) or clean == "README.md" then
      if not exists(root, clean) then bad(("%s does not exist"):format(clean)) end
    end
  end
  -- the older form: path, "Title"
  for path in line:gmatch('([%w_%-%./]+%.md),%s*"') do
    bad(('%s, "...": write %s %s"Title"'):format(path, path, SECT))
  end

  -- every section sign
  local doc, last_end = nil, nil -- the document of the chain being read
  local from = 1
  while true do
    local s, e = line:find(SECT, from, true)
    if not s then break end
    local before = line:sub(1, s - 1)
    local target
    local path = before:match("([%w_%-%./]+%.md) $")
    if path then
      target = path:gsub("^%./", "")
    elseif before:match("RFC %d+ $") then
      target = false -- an external standard
    elseif doc ~= nil and last_end and (
        line:sub(last_end, s - 1) == ", " or line:sub(last_end, s - 1) == " and "
        or line:sub(last_end, s - 1) == " or ") then
      target = doc
    elseif in_docs_md then
      target = file
    else
      bad(("%s without a document: write <path> %sN"):format(SECT, SECT))
      target = nil
    end
    local kind, value, after = section_at(line, e + 1)
    if not kind then
      if target ~= false then bad(("%s not followed by a section number or a quoted heading"):format(SECT)) end
      doc, last_end = nil, nil
    else
      if target then
        local h = headings(root, target)
        if not h then
          bad(("%s %s%s: %s does not exist"):format(target, SECT, value, target))
        elseif kind == "number" and not h.numbers[value] then
          bad(("%s %s%s: no heading numbered %s in %s"):format(target, SECT, value, value, target))
        elseif kind == "title" and not h.titles[value] then
          bad(('%s %s"%s": no heading "%s" in %s'):format(target, SECT, value, value, target))
        end
      end
      doc, last_end = target, after
    end
    from = e + 1
  end
end

--- Problems in the given files (paths relative to root).
function M.check(root, files)
  local problems = {}
  for _, file in ipairs(files) do
    local text = read(root .. "/" .. file)
    if text and not text:find("\0", 1, true) then
      local n = 0
      for line in (text .. "\n"):gmatch("([^\n]*)\n") do
        n = n + 1
        check_line(root, file, n, line, problems)
      end
    end
  end
  return problems
end

--- Problems in one text standing for file (for tests of the checker).
function M.check_text(root, file, text)
  local problems, n = {}, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    check_line(root, file, n, line, problems)
  end
  return problems
end

--- The repository's files (tracked and new, ignored ones left out), minus
--- the fuzz corpora (inputs, not prose).
function M.files(root)
  local p = assert(io.popen("cd '" .. root .. "' && git ls-files --cached --others --exclude-standard 2>/dev/null"))
  local out = {}
  for path in p:lines() do
    if not path:match("^spec/fuzz/corpus/") and not path:match("/node_modules/") then out[#out + 1] = path end
  end
  p:close()
  if #out == 0 then -- not a git checkout (a source tarball): every file but build output
    p = assert(io.popen("cd '" .. root .. "' && find . -type f ! -path './.git/*' ! -path './build*' "
      .. "! -path '*/node_modules/*' ! -path './spec/fuzz/corpus/*' | sed 's|^\\./||' | sort"))
    for path in p:lines() do out[#out + 1] = path end
    p:close()
  end
  return out
end

M.SECT = SECT
return M
