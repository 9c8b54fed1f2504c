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

-- Row label prefixes in table order (as parsed: trimmed); `remote` rows
-- wait for their provider,
-- `peer` rows for Mastra's LocalSandbox in bench/peer (make bench-peer).
local EXPECTED = {
  { prefix = "local exec latency" },
  { prefix = "vs Mastra LocalSandbox, exec", peer = true },
  { prefix = "local fan-out" },
  { prefix = "vs Mastra LocalSandbox, fan-out", peer = true },
  { prefix = "output capture, time" },
  { prefix = "output capture, peak RSS" },
  { prefix = "output capture, buffer, time" },
  { prefix = "output capture, buffer, peak RSS" },
  { prefix = "vs Mastra LocalSandbox, capture", peer = true },
  { prefix = "output streaming, time" },
  { prefix = "output streaming, RSS growth" },
  { prefix = "bwrap exec latency", may_be_na = true },
  { prefix = "sandbox objects", no_baseline = true },
  { prefix = "fleet" },
  { prefix = "platform exec", remote = true },
  { prefix = "platform exec, ", remote = true }, -- its MiB-of-stdout line
  { prefix = "client CPU per 10 MiB", remote = true },
  { prefix = "platform fan-out", remote = true },
  { prefix = "modal exec", remote = true },
  { prefix = "client CPU per exec", remote = true },
  { prefix = "connections per exec, h2c", remote = true, info = true },
  { prefix = "modal exec, ", remote = true }, -- its MiB-of-stdout line
  { prefix = "client CPU per 10 MiB", remote = true },
  { prefix = "local sb.fs: write+read" },
  { prefix = "local sb.fs: write+read", may_be_na = true }, -- whole strings: informative
  { prefix = "PlatformFilesystem: PUT+GET", remote = true },
  { prefix = "PUT alone", remote = true, info = true },
  { prefix = "GET alone", remote = true, info = true },
  { prefix = "client CPU per PUT+GET", remote = true, info = true },
  { prefix = "platform sb.fs: read", remote = true },
  { prefix = "modal sb.fs: read", remote = true },
  { prefix = "modal over TLS, connections", remote = true, may_be_na = true },
  { prefix = "modal exec over TLS", remote = true },
  { prefix = "client CPU per exec over TLS", remote = true },
  { prefix = "docker exec latency", remote = true },
  { prefix = "vs upstream DockerSandbox, exec", remote = true },
  { prefix = "client CPU per exec, docker", remote = true },
  { prefix = "docker fleet of", remote = true },
}

-- The --scale table: per size a line (`info`), the largest with a verdict.
local EXPECTED_SCALE = {
  { prefix = "local exec, 1 in flight" },
  { prefix = "local exec, 4 in flight" },
  { prefix = "local exec, 8 in flight", verdict = true, baseline = "C floor" },
  { prefix = "fleet, none, 2 sandboxes" },
  { prefix = "fleet, none, 4 sandboxes", verdict = true, baseline = "C floor" },
  { prefix = "fleet, bwrap, 2 sandboxes", may_be_na = true },
  { prefix = "fleet, bwrap, 4 sandboxes", verdict = true, may_be_na = true, baseline = "C floor" },
  { prefix = "platform exec, 4 in flight" },
  { prefix = "platform exec, 8 in flight", verdict = true, baseline = "C floor" },
  { prefix = "modal exec, 4 in flight" },
  { prefix = "modal exec, 8 in flight", verdict = true, baseline = "SDK" },
  { prefix = "modal exec over TLS, 4 in flight", may_be_na = true },
  { prefix = "modal exec over TLS, 8 in flight", verdict = true, may_be_na = true, baseline = "SDK" },
  { prefix = "docker fleet, 2 containers" },
  { prefix = "docker fleet, 4 containers", verdict = true, baseline = "upstream" },
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
          target = cells[5], result = cells[6],
          -- the --scale table's columns (row, wall, per unit, RSS, per unit, fds, per unit, growth, target, result)
          growth = cells[8], scale_result = cells[10] }
      end
    end
  end
  return rows
end

-- Asked of a separate Lua, as the bench runs: this process keeps no loop,
-- thread or exit handler of the bench's build.
local function sandkit_loadable()
  local cmd = ("cd '%s' && LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH='build/?.so;;' %s -e 'require \"sandkit\"' >/dev/null 2>&1"):format(ROOT, LUA)
  return os.execute(cmd) == true
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
    local allowed = { PASS = true, MISS = true, pending = true, ["n/a"] = true, info = true }
    for i, r in ipairs(rows) do
      assert.is_true(allowed[r.result] == true, r.label .. ": result " .. tostring(r.result))
      -- a peer row without its peer (bench/peer not installed) still shows sandkit's figure
      if r.result == "pending" and not EXPECTED[i].peer then
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
    local peer_installed = io.open(ROOT .. "/bench/peer/node_modules/@mastra/core/package.json", "r")
    if peer_installed then peer_installed:close() end
    for i, r in ipairs(rows) do
      local e = EXPECTED[i]
      if not e.remote and (not e.peer or peer_installed) then
        local ok = r.result == "PASS" or r.result == "MISS" or (e.may_be_na and r.result == "n/a")
        assert.is_true(ok, r.label .. ": " .. tostring(r.result) .. "\n" .. output)
      end
    end
  end)

  it("measures the remote rows (their servers are started by the bench)", function()
    if not sandkit_loadable() then
      pending("sandkit is not built")
      return
    end
    for i, r in ipairs(rows) do
      local e = EXPECTED[i]
      if e.remote then
        local want = e.info and { info = true } or { PASS = true, MISS = true, ["n/a"] = e.may_be_na or nil }
        assert.is_true(want[r.result] == true, r.label .. ": " .. tostring(r.result) .. "\n" .. output)
        if e.info or r.result ~= "n/a" then assert.is_truthy(r.sk:match("%d"), r.label .. ": sandkit " .. r.sk) end
      end
    end
  end)
end)

describe("bench/run.lua --scale --quick", function()
  local output, exit_ok, rows

  setup(function()
    local p = assert(io.popen("cd '" .. ROOT .. "' && " .. LUA .. " bench/run.lua --scale --quick 2>/dev/null"))
    output = p:read("a")
    exit_ok = p:close()
    rows = parse_table(output)
  end)

  it("exits successfully and prints each size once, in order", function()
    assert.is_true(exit_ok == true, output)
    assert.are.equal(#EXPECTED_SCALE, #rows, output)
    for i, e in ipairs(EXPECTED_SCALE) do
      assert.are.equal(e.prefix, rows[i].label:sub(1, #e.prefix), output)
    end
  end)

  it("gives figures for every size and a verdict with the growth on the largest", function()
    for i, r in ipairs(rows) do
      local e = EXPECTED_SCALE[i]
      if not (e.may_be_na and r.sk == "n/a") then
        -- columns: wall, per unit, peak RSS, per unit, fds, per unit, growth, target, result
        assert.is_truthy(r.sk:match("%d"), r.label .. ": wall " .. r.sk)
        assert.is_truthy(r.base:match("%d"), r.label .. ": per unit " .. r.base)
        if e.verdict then
          assert.is_truthy(r.growth:match("%d%.%d+×"), r.label .. ": growth " .. r.growth)
          -- the baseline measured in the same rounds, with its own growth
          assert.is_truthy(r.growth:find(e.baseline .. " %d+%.%d+×"), r.label .. ": growth " .. r.growth)
          assert.is_true(r.scale_result == "PASS" or r.scale_result == "MISS", r.label .. ": " .. r.scale_result)
        else
          assert.are.equal("info", r.scale_result, r.label)
        end
      end
    end
  end)
end)
