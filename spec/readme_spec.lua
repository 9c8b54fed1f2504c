-- The README and the reference in docs/ run as written (issue 12, item 11;
-- issue 25, item 9). Every ```lua block of README.md and of every Markdown
-- page under docs/ is a complete script: each runs, page by page (README
-- first), in order, in a fresh lua5.4 in a scratch
-- directory, and must exit 0 and print what its `--> text` comments say
-- (in order; runs of blanks compare equal). Blocks for the remote
-- providers read the same environment a user sets, which this spec points
-- at what each provider's kit starts (helpers.provider_kits, `readme`):
-- the reference servers' addresses and credentials in the variables a user
-- sets (MASTRA_WORKSPACE_PROXY_URL, MODAL_SERVER_URL, ...), the emulated
-- `container` CLI on PATH, the specs' private Podman service as DOCKER_HOST.
-- The scratch directory is mode 0700, as /root is for a root shell there.
-- A ```sh block whose every line starts with `sandkit ` runs too, line by
-- line, under /bin/sh (dash on Debian), with bin/ on PATH: each line must
-- exit 0 and write nothing to stderr.
-- A block that genuinely cannot run here is preceded by the line
-- `<!-- readme: skip: <reason> -->`; none is today.
local kits = require "helpers.provider_kits"

local ROOT = os.getenv("R") or (io.popen("pwd"):read("l"))

local q = require("helpers.sh").quote

local function run(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  local _, _, code = p:close()
  return code, out
end

-- { lang, code, line, skip } for every fenced block, indentation removed.
local function blocks_of(path)
  local f = assert(io.open(path))
  local out, cur, prev = {}, nil, ""
  local n = 0
  for line in f:lines() do
    n = n + 1
    if cur then
      if line:match("^%s*```%s*$") then
        out[#out + 1] = cur
        cur = nil
      else
        local body = line:sub(1, #cur.indent) == cur.indent and line:sub(#cur.indent + 1) or line
        cur.code[#cur.code + 1] = body
      end
    else
      local indent, lang = line:match("^(%s*)```(%w*)%s*$")
      if indent then
        cur = { lang = lang, indent = indent, code = {}, line = n,
          skip = prev:match("^%s*<!%-%- readme: skip: (.-) %-%->%s*$") }
      elseif line:match("%S") then
        prev = line
      end
    end
  end
  f:close()
  for _, b in ipairs(out) do b.code = table.concat(b.code, "\n") .. "\n" end
  return out
end

local function normalize(s) return (s:gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")) end

-- README.md, then every Markdown page under docs/, in name order.
local PAGES = { "README.md" }
do
  local p = assert(io.popen("cd " .. q(ROOT) .. " && find docs -name '*.md' | LC_ALL=C sort"))
  for path in p:lines() do PAGES[#PAGES + 1] = path end
  p:close()
end
local blocks = {}
for _, page in ipairs(PAGES) do
  for _, b in ipairs(blocks_of(ROOT .. "/" .. page)) do
    b.page = page
    blocks[#blocks + 1] = b
  end
end

describe("README and docs/", function()
  local envs, scratch = {}, nil
  local env_prefix

  setup(function()
    local vars, path = {}, {}
    for _, p in ipairs(kits.all()) do
      if p.kit.readme then
        local e = p.kit.readme(ROOT)
        envs[#envs + 1] = e
        for k, v in pairs(e.vars or {}) do vars[k] = v end
        if e.path then path[#path + 1] = e.path end
      end
    end
    scratch = os.tmpname()
    os.remove(scratch)
    -- mode 0700, as /root is: the blocks run as written from a root shell
    -- in /root (the usual container shell), where bwrap's sandbox user may
    -- not enter the current directory (a relative working_directory is
    -- relayed, docs/providers.md §"LocalSandbox (`local`)")
    assert(os.execute("mkdir -p " .. q(scratch) .. " && chmod 700 " .. q(scratch)))
    path[#path + 1] = ROOT .. "/bin"
    path[#path + 1] = os.getenv("PATH")
    vars.PATH = table.concat(path, ":")
    local parts = { "cd " .. q(scratch) .. " && env" }
    for k, v in pairs(vars) do parts[#parts + 1] = k .. "=" .. q(v) end
    env_prefix = table.concat(parts, " ") .. " timeout -k 5 120 "
  end)

  -- every kit's teardown runs, whichever fails
  teardown(function()
    local failed
    for _, e in ipairs(envs) do
      local ok, err = pcall(e.teardown or function() end)
      failed = failed or (not ok and err)
    end
    if scratch then os.execute("rm -rf " .. q(scratch)) end
    assert(not failed, failed)
  end)

  local n_lua = {}
  for i, b in ipairs(blocks) do
    local at = b.page .. ":" .. b.line
    if b.lang == "lua" then
      n_lua[b.page] = (n_lua[b.page] or 0) + 1
      local title = ("lua block %d (%s) runs as written"):format(n_lua[b.page], at)
      if b.skip then
        pending(title .. ": skipped: " .. b.skip)
      else
        it(title, function()
          local file = ("%s/readme_block_%d.lua"):format(scratch, i)
          local f = assert(io.open(file, "w"))
          f:write(b.code)
          f:close()
          local code, out = run(env_prefix .. "lua5.4 " .. q(file) .. " 2>&1")
          assert.are.equal(0, code, at .. " failed:\n" .. out)
          -- each `--> text` comment, in order
          local rest = normalize(out)
          for expected in b.code:gmatch("%-%->%s*([^\n]-)%s*\n") do
            expected = normalize(expected)
            local found = rest:find(expected, 1, true)
            assert.is_truthy(found, ("%s: expected output %q, got:\n%s"):format(at, expected, out))
            rest = rest:sub(found + #expected)
          end
        end)
      end
    elseif b.lang == "sh" then
      local runnable = b.code:match("%S") ~= nil
      for line in b.code:gmatch("[^\n]+") do
        if not line:match("^sandkit ") then runnable = false end
      end
      if runnable then
        for line in b.code:gmatch("[^\n]+") do
          it(("sh line of %s runs under /bin/sh: %s"):format(at, line), function()
            local errfile = scratch .. "/stderr"
            local code, out = run(env_prefix .. "/bin/sh -c " .. q(line) .. " 2>" .. q(errfile))
            local ef = assert(io.open(errfile))
            local err = ef:read("a")
            ef:close()
            assert.are.equal(0, code, out .. err)
            assert.are.equal("", err)
          end)
        end
      end
    end
  end

  it("has Lua blocks for every provider in README.md, and runs every page of docs/", function()
    local text = {}
    for _, b in ipairs(blocks) do
      if b.page == "README.md" and b.lang == "lua" and not b.skip then text[#text + 1] = b.code end
    end
    text = table.concat(text)
    for _, d in ipairs(require("sandkit").providers()) do
      assert.is_truthy(text:find("sandkit." .. d.name, 1, true), "no runnable block of README.md uses " .. d.name)
    end
    -- the reference pages are among the pages read, and their blocks run
    local pages, lua_pages = {}, {}
    for _, p in ipairs(PAGES) do pages[p] = true end
    for _, b in ipairs(blocks) do if b.lang == "lua" then lua_pages[b.page] = true end end
    for _, p in ipairs({ "docs/api.md", "docs/sandbox.md", "docs/errors.md", "docs/files.md", "docs/providers.md",
      "docs/cli.md", "docs/protocols/platform.md" }) do
      assert.is_true(pages[p], p .. " is not read")
    end
    assert.is_true(lua_pages["docs/api.md"] and lua_pages["docs/files.md"], "docs/ blocks are not run")
  end)

  -- The option tables of docs/providers.md say each default; sandkit.providers()
  -- is where the provider's own descriptor says it. A row's cells split at
  -- ", " outside braces; a row whose key and default counts differ, or whose
  -- descriptor has no default, is prose ("—", an environment variable).
  it("gives the descriptors' defaults in its provider option tables", function()
    local sandkit = require "sandkit"
    local function split(cell)
      local out, depth, cur = {}, 0, {}
      local i = 1
      while i <= #cell do
        local c = cell:sub(i, i)
        if c == "{" then depth = depth + 1 elseif c == "}" then depth = depth - 1 end
        if depth == 0 and cell:sub(i, i + 1) == ", " then
          out[#out + 1] = table.concat(cur); cur = {}; i = i + 2
        else
          cur[#cur + 1] = c; i = i + 1
        end
      end
      out[#out + 1] = table.concat(cur)
      return out
    end
    local render = dofile("tools/generate.lua").render
    local by_id = {}
    for _, d in ipairs(sandkit.providers()) do by_id[d.id] = d end
    local f = assert(io.open(ROOT .. "/docs/providers.md"))
    local id, checked = nil, 0
    for line in f:lines() do
      local h = line:match("^## %a+ %(`([%w-]+)`%)")
      if h then id = h elseif line:match("^##? ") then id = nil end
      local keys_cell, default_cell = line:match("^| (`[^|]-) | ([^|]-) |")
      if id and by_id[id] and keys_cell then
        local keys, defaults = split(keys_cell), split(default_cell)
        if #keys == #defaults then
          for n, k in ipairs(keys) do
            local spec = by_id[id].options[k:match("^`([%w_]+)`$") or ""]
            if spec and spec.default ~= nil then
              local want = render(spec.default)
              local said = defaults[n]:match("^`(.-)`") or defaults[n]:match("^(%S+)")
              assert.are.equal(want, said, ("docs/providers.md, %s option %s: default"):format(id, k))
              checked = checked + 1
            end
          end
        end
      end
    end
    f:close()
    assert.is_true(checked >= 12, "only " .. checked .. " defaults found")
  end)

  it("uses no bashisms in its shell examples (Debian's sh is dash)", function()
    for _, b in ipairs(blocks) do
      if b.lang == "sh" then
        for _, bad in ipairs({ "$RANDOM", "[[", "<<<", "${!", "function ", "source " }) do
          assert.is_falsy(b.code:find(bad, 1, true), ("%s:%d uses %s"):format(b.page, b.line, bad))
        end
      end
    end
  end)
end)
