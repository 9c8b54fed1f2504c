-- Smoke test for the benchmark suite (issue 6): `bench/run.lua --quick` runs
-- every row with tiny iteration counts and prints its line. No timing is
-- asserted (benchmarks are not tests): a row that has landed must show
-- figures and a verdict, a row that has not must say `pending`.

local function find_root()
  local src = debug.getinfo(1, "S").source
  local path = src:sub(1, 1) == "@" and src:sub(2) or "spec/bench_smoke_spec.lua"
  local dir = path:match("^(.*)/[^/]*$") or "."
  local f = assert(io.popen("cd '" .. dir .. "/..' && pwd"))
  local root = f:read("l")
  f:close()
  return root
end

local ROOT = find_root()
local LUA = os.getenv("LUA") or "lua5.4"

-- Row label prefixes in table order; `remote` rows wait for their provider.
local EXPECTED = {
  { prefix = "local exec latency" },
  { prefix = "local fan-out" },
  { prefix = "output capture, time" },
  { prefix = "output capture, peak RSS" },
  { prefix = "output streaming, time" },
  { prefix = "output streaming, RSS growth" },
  { prefix = "bwrap exec latency", may_be_na = true },
  { prefix = "sandbox objects", no_baseline = true },
  { prefix = "fleet" },
  { prefix = "platform exec", remote = true },
  { prefix = "platform exec, ", remote = true }, -- its MiB-of-stdout line
  { prefix = "platform fan-out", remote = true },
  { prefix = "modal exec", remote = true },
  { prefix = "modal exec, ", remote = true }, -- its MiB-of-stdout line
  { prefix = "local sb.fs: write+read" },
  { prefix = "local sb.fs: write+read", may_be_na = true }, -- whole strings: informative
  { prefix = "PlatformFilesystem: PUT+GET", remote = true },
  { prefix = "platform sb.fs: read", remote = true },
  { prefix = "modal sb.fs: read", remote = true },
}

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

local function parse_table(text)
  local rows = {}
  for l in text:gmatch("[^\n]+") do
    if l:sub(1, 2) == "| " and not l:match("^| %-") then
      local cells = {}
      for c in l:gmatch("|([^|]*)") do cells[#cells + 1] = trim(c) end
      if cells[#cells] == "" then cells[#cells] = nil end
      if cells[1] ~= "row" then
        rows[#rows + 1] = { label = cells[1], sk = cells[2], base = cells[3], ratio = cells[4],
          target = cells[5], result = cells[6] }
      end
    end
  end
  return rows
end

local function sandkit_loadable()
  local saved_path, saved_cpath = package.path, package.cpath
  package.path = ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;" .. package.path
  package.cpath = ROOT .. "/build/?.so;" .. package.cpath
  local ok = pcall(require, "sandkit")
  package.path, package.cpath = saved_path, saved_cpath
  return ok
end

describe("bench/run.lua --quick", function()
  local output, exit_ok, rows

  setup(function()
    local f = io.open(ROOT .. "/build/bench/floor_spawn", "r")
    if f then
      f:close()
    else
      os.execute("cd '" .. ROOT .. "' && make --no-print-directory -s bench-build >/dev/null")
    end
    -- stderr carries progress lines only; keep it out of the table
    local p = assert(io.popen("cd '" .. ROOT .. "' && " .. LUA .. " bench/run.lua --quick 2>/dev/null"))
    output = p:read("a")
    exit_ok = p:close()
    rows = parse_table(output)
  end)

  it("exits successfully (no row raised an error)", function()
    assert.is_true(exit_ok == true, output)
    assert.is_nil(output:find("| ERROR", 1, true), output)
  end)

  it("prints each row once, in order", function()
    assert.are.equal(#EXPECTED, #rows, output)
    for i, e in ipairs(EXPECTED) do
      assert.are.equal(e.prefix, rows[i].label:sub(1, #e.prefix), output)
    end
  end)

  it("gives every row a verdict or says pending", function()
    local allowed = { PASS = true, MISS = true, pending = true, ["n/a"] = true }
    for _, r in ipairs(rows) do
      assert.is_true(allowed[r.result] == true, r.label .. ": result " .. tostring(r.result))
      if r.result == "pending" then
        assert.are.equal("pending", r.sk, r.label)
      end
    end
  end)

  it("shows figures for rows with a verdict", function()
    for i, r in ipairs(rows) do
      if r.result == "PASS" or r.result == "MISS" then
        assert.is_truthy(r.sk:match("%d"), r.label .. ": sandkit " .. r.sk)
        if not EXPECTED[i].no_baseline then
          assert.is_truthy(r.base:match("%d"), r.label .. ": baseline " .. r.base)
        end
      end
    end
  end)

  it("measures every local row once sandkit loads", function()
    if not sandkit_loadable() then
      pending("sandkit is not built")
      return
    end
    for i, r in ipairs(rows) do
      local e = EXPECTED[i]
      if not e.remote then
        local ok = r.result == "PASS" or r.result == "MISS" or (e.may_be_na and r.result == "n/a")
        assert.is_true(ok, r.label .. ": " .. tostring(r.result) .. "\n" .. output)
      end
    end
  end)
end)
