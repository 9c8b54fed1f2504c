-- bench/run.lua: runs every benchmark row, sandkit side and C baseline in
-- the same run (rounds alternate which side goes first, so drift on a noisy
-- machine lands on both), and prints ONE table of medians and ratios.
--
--   lua5.4 bench/run.lua [--quick] [--only ROW[,ROW...]] [--list]
--
-- --quick uses tiny iteration counts (the smoke spec); --only runs the named
-- rows (ids from --list). Rows whose provider has not landed print `pending`.
-- The baselines are build/bench/floor_* (make bench-build); the table is also
-- written to bench/out/latest.txt. See bench/README.md for what each row
-- measures. Internal: `--child KIND ...` runs one measurement in a fresh
-- process so that its peak RSS is its own.

-- ---- paths -----------------------------------------------------------------

local unpack = table.unpack or unpack -- lua_subset: feature-tested (5.1's global)

local function shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Output, success and exit code of a shell command. Lua 5.1 and LuaJIT
-- return no exit code from close: there the command prints it after its
-- output, behind a byte the output does not hold.
local close_gives_code = select(3, io.popen("exit 3"):close()) == 3
local function read_cmd(cmd)
  local f = assert(io.popen(close_gives_code and cmd or "(" .. cmd .. "\n); printf '\1%d' $?", "r"))
  local out = f:read("*a")
  local ok, _, code = f:close()
  if not close_gives_code then
    out, code = out:match("^(.*)\1(%d+)$")
    code = tonumber(code)
    ok = code == 0 or nil
  end
  return out, ok, code
end

local function find_root()
  local src = debug.getinfo(1, "S").source
  local path = src:sub(1, 1) == "@" and src:sub(2) or "bench/run.lua"
  local dir = path:match("^(.*)/[^/]*$") or "."
  local out = read_cmd("cd " .. shell_quote(dir .. "/..") .. " && pwd")
  return (out:gsub("%s+$", ""))
end

local ROOT = find_root()
package.path = table.concat({ ROOT .. "/lua/?.lua", ROOT .. "/lua/?/init.lua", package.path }, ";")
-- build/ is Lua 5.4's; LuaJIT's, 5.1's and 5.3's are build-<lua>/ (mk/lua.mk)
local V = _VERSION:match("%d+%.%d+")
local LUA_BUILD = ROOT .. "/" .. (rawget(_G, "jit") and "build-luajit" or V ~= "5.4" and "build-lua" .. V or "build")
package.cpath = table.concat({ LUA_BUILD .. "/?.so", LUA_BUILD .. "/bench/?.so", package.cpath }, ";")
local FLOOR_DIR = ROOT .. "/build/bench"
local LUA = arg[-1] or "lua5.4"

-- ---- clock, memory -----------------------------------------------------------

local now, cpu_seconds, open_fds, raise_nofile, heap_kb
do
  local ok, clock = pcall(require, "benchclock")
  if ok then
    now, cpu_seconds, open_fds, raise_nofile, heap_kb = clock.now, clock.cpu, clock.fds, clock.raise_nofile, clock.heap_kb
  else
    local ok2, cq = pcall(require, "cqueues")
    if ok2 and cq.monotime then
      now = cq.monotime
    else
      error("bench: no monotonic clock (build build/bench/benchclock.so with make bench-build)")
    end
  end
end

-- VmRSS / VmHWM of this process, in KiB.
local function proc_status_kb(field)
  local f = io.open("/proc/self/status", "r")
  if not f then return nil end
  local text = f:read("*a")
  f:close()
  local v = text:match(field .. ":%s*(%d+)%s*kB")
  return v and tonumber(v)
end

-- Resets VmHWM to the current RSS (Linux >= 4.0); false when not allowed.
local function reset_peak_rss()
  local f = io.open("/proc/self/clear_refs", "w")
  if not f then return false end
  local ok = f:write("5")
  ok = f:close() and ok
  return ok and true or false
end

-- ---- small JSON reader (the baselines print flat objects) -------------------

local function json_decode(s)
  local pos = 1
  local value
  local function ws() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local function fail(what) error("bench: bad JSON (" .. what .. ") at " .. pos .. ": " .. s, 0) end
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local c = s:sub(pos, pos)
      if c == "" then fail("unterminated string") end
      if c == '"' then pos = pos + 1; return table.concat(out) end
      if c == "\\" then
        local e = s:sub(pos + 1, pos + 1)
        local map = { n = "\n", t = "\t", r = "\r", b = "\b", f = "\f" }
        out[#out + 1] = map[e] or e
        pos = pos + 2
      else
        out[#out + 1] = c
        pos = pos + 1
      end
    end
  end
  -- Past the character at pos; true when it is close (the object or array
  -- ends), false at a comma (another member follows).
  local function at_end(close)
    ws()
    local d = s:sub(pos, pos)
    pos = pos + 1
    if d == close then return true end
    if d ~= "," then fail(",") end
    return false
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == "{" or c == "[" then
      local t, close = {}, c == "{" and "}" or "]"
      pos = pos + 1
      ws()
      if s:sub(pos, pos) == close then pos = pos + 1; return t end
      repeat
        if c == "{" then
          ws()
          if s:sub(pos, pos) ~= '"' then fail("key") end
          local k = str()
          ws()
          if s:sub(pos, pos) ~= ":" then fail(":") end
          pos = pos + 1
          t[k] = value()
        else
          t[#t + 1] = value()
        end
      until at_end(close)
      return t
    elseif c == '"' then
      return str()
    elseif s:sub(pos, pos + 3) == "true" then pos = pos + 4; return true
    elseif s:sub(pos, pos + 4) == "false" then pos = pos + 5; return false
    elseif s:sub(pos, pos + 3) == "null" then pos = pos + 4; return nil
    end
    local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if not num or num == "" then fail("value") end
    pos = pos + #num
    return tonumber(num)
  end
  return value()
end

local function json_encode_flat(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = t[k]
    local enc
    if type(v) == "number" then enc = string.format("%.17g", v)
    elseif type(v) == "boolean" then enc = tostring(v)
    else enc = string.format("%q", tostring(v)):gsub("\\\n", "\\n") end
    parts[#parts + 1] = string.format("%q:%s", k, enc)
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

-- Runs a command whose last stdout line is one JSON object.
local function run_json(cmd)
  local out, ok, code = read_cmd(cmd .. " 2>&1")
  local last
  for line in out:gmatch("[^\n]+") do
    if line:sub(1, 1) == "{" then last = line end
  end
  if not ok or not last then
    error(string.format("bench: `%s` failed (exit %s): %s", cmd, tostring(code), out:sub(1, 400)), 0)
  end
  return json_decode(last)
end

local function floor_cmd(name, args)
  local exe = FLOOR_DIR .. "/" .. name
  local f = io.open(exe, "r")
  if not f then error("bench: baseline " .. exe .. " is missing (run make bench-build)", 0) end
  f:close()
  local parts = { shell_quote(exe) }
  for _, a in ipairs(args) do parts[#parts + 1] = shell_quote(a) end
  return table.concat(parts, " ")
end

-- ---- statistics, formatting --------------------------------------------------

local function median(xs)
  local s = {}
  for i, v in ipairs(xs) do s[i] = v end
  table.sort(s)
  local n = #s
  if n == 0 then return nil end
  if n % 2 == 1 then return s[(n + 1) / 2] end
  return (s[n / 2] + s[n / 2 + 1]) / 2
end

local function percentile(xs, p)
  local s = {}
  for i, v in ipairs(xs) do s[i] = v end
  table.sort(s)
  if #s == 0 then return nil end
  return s[math.min(#s, math.max(1, math.ceil(#s * p)))]
end

local function append(dst, src)
  for _, v in ipairs(src) do dst[#dst + 1] = v end
end

local function fmt_us(us)
  if us >= 10000 then return string.format("%.1f ms", us / 1000) end
  if us >= 1000 then return string.format("%.2f ms", us / 1000) end
  return string.format("%.0f µs", us)
end

local function fmt_ms(ms)
  if ms >= 1000 then return string.format("%.2f s", ms / 1000) end
  return string.format("%.1f ms", ms)
end

local function fmt_kib(kib)
  if kib >= 1024 then return string.format("%.1f MiB", kib / 1024) end
  return string.format("%.1f KiB", kib)
end

-- ---- sandkit -----------------------------------------------------------------

local sandkit_mod, sandkit_err
local function sandkit()
  if sandkit_mod == nil and sandkit_err == nil then
    local ok, m = pcall(require, "sandkit")
    if ok then sandkit_mod = m else sandkit_err = tostring(m) end
  end
  return sandkit_mod, sandkit_err
end

local function provider_ids()
  local sk = sandkit()
  local ids = {}
  if not sk or type(sk.providers) ~= "function" then return ids end
  local ok, list = pcall(sk.providers)
  if not ok or type(list) ~= "table" then return ids end
  for _, d in ipairs(list) do
    if type(d) == "table" and d.id then ids[d.id] = true end
  end
  return ids
end

-- Raises on a runtime failure (nil, err) so a row reports it.
local function check(v, err, ...)
  if v == nil then error(tostring(err), 0) end
  return v, err, ...
end

local function must_succeed(r, what)
  if r == nil then error(what .. ": no result", 0) end
  if r.exit_code ~= 0 then
    error(string.format("%s: exit %s, stderr %q", what, tostring(r.exit_code), tostring(r.stderr or ""):sub(1, 200)), 0)
  end
  return r
end

local function local_sandbox(workdir, extra)
  local sk = assert(sandkit())
  local opts = { working_directory = workdir }
  for k, v in pairs(extra or {}) do opts[k] = v end
  local sb = sk.LocalSandbox(opts)
  check(sb:start())
  return sb
end

-- ---- temporary directories ---------------------------------------------------

local function make_temp_dir(prefix)
  local out, ok = read_cmd("mktemp -d /tmp/" .. prefix .. "-XXXXXX")
  local dir = out:gsub("%s+$", "")
  if not ok or dir == "" then error("bench: mktemp failed", 0) end
  return dir
end

local function remove_tree(dir)
  if dir and dir:match("^/tmp/sandkit%-bench") then os.execute("rm -rf " .. shell_quote(dir)) end
end

-- ---- children (fresh processes for the memory rows) ------------------------

local scale_child -- bench/scale.lua's child, set once that file is loaded

-- Prints one JSON line; run as `lua5.4 bench/run.lua --child KIND ...`.
local function child_main(kind, a1, a2, a3, a4)
  if kind == "scale" then return scale_child(a1, a2, a3, a4) end
  local sk = assert(sandkit())
  if kind == "capture" or kind == "capture_buffer" or kind == "stream" then
    local size, workdir = a1, a2
    local sb = local_sandbox(workdir)
    must_succeed(check(sb:exec("head -c 64K /dev/zero")), "warmup")
    collectgarbage("collect")
    collectgarbage("collect")
    local reset = reset_peak_rss()
    local rss0 = proc_status_kb("VmRSS")
    local command = "head -c " .. size .. " /dev/zero"
    local bytes, r = 0, nil
    local t0 = now()
    if kind == "capture" then
      -- above the 64 MiB default cap: the row measures capturing it all
      r = must_succeed(check(sb:exec(command, nil, { max_output_bytes = 1024 * 1024 * 1024 })), command)
      bytes = #r.stdout
    elseif kind == "capture_buffer" then
      r = must_succeed(check(sb:exec(command, nil, { capture = "buffer", max_output_bytes = 1024 * 1024 * 1024 })),
        command)
      bytes = #r.stdout
    else
      r = must_succeed(check(sb:exec(command, nil, {
        capture = false,
        on_stdout = function(chunk) bytes = bytes + #chunk end,
      })), command)
    end
    local ms = (now() - t0) * 1000
    local hwm = proc_status_kb("VmHWM")
    local retained = kind == "stream" and #(r.stdout or "") or bytes
    r = nil
    sb:destroy()
    io.write(json_encode_flat({
      ms = ms, bytes = bytes, rss0_kb = rss0, hwm_kb = hwm, growth_kb = hwm - rss0,
      peak_reset = reset, retained = retained,
    }), "\n")
  elseif kind == "objects" then
    local n = tonumber(a1)
    local workdir = a2
    -- the first object pays for one-time set-up (the loop, metatables)
    local keep = { sk.LocalSandbox({ working_directory = workdir }) }
    collectgarbage("collect")
    collectgarbage("collect")
    local rss0 = proc_status_kb("VmRSS")
    for i = 1, n do keep[i + 1] = sk.LocalSandbox({ working_directory = workdir }) end
    collectgarbage("collect")
    collectgarbage("collect")
    local rss1 = proc_status_kb("VmRSS")
    io.write(json_encode_flat({ n = n, rss0_kb = rss0, rss1_kb = rss1, per_kb = (rss1 - rss0) / n, count = #keep - 1 }), "\n")
  else
    error("unknown child " .. tostring(kind))
  end
end

local function run_child(kind, ...)
  local parts = { shell_quote(LUA), shell_quote(ROOT .. "/bench/run.lua"), "--child", kind }
  for _, a in ipairs({ ... }) do parts[#parts + 1] = shell_quote(a) end
  return run_json(table.concat(parts, " "))
end

-- ---- rows ----------------------------------------------------------------------
-- Each row's run(ctx) returns a list of lines
--   { label, sk, base, ratio?, ratio_suffix?, target, result, note? }
-- or raises (the row then reads ERROR). Without a loadable sandkit
-- (ctx.sk == nil) a row still runs its baseline and shows sandkit `pending`.

local function line(label, sk_text, base_text, ratio, target, result, note)
  return { label = label, sk = sk_text, base = base_text, ratio = ratio, target = target, result = result, note = note }
end

local function verdict(value, limit)
  return value <= limit and "PASS" or "MISS"
end

-- The standard line: medians of both sample sets, their ratio, the verdict.
local function compare(label, sk, base, fmt, limit, note)
  local mb = median(base)
  local target = string.format("≤ %g×", limit)
  if #sk == 0 then return line(label, "pending", fmt(mb), nil, target, "pending", note) end
  local ms = median(sk)
  return line(label, fmt(ms), fmt(mb), ms / mb, target, verdict(ms / mb, limit), note)
end

-- As compare, for rounds run back to back: the ratio is the median of the
-- per-round ratios, so load that drifts between rounds cancels out.
local function compare_paired(label, sk, base, fmt, limit, note)
  local target = string.format("≤ %g×", limit)
  if #sk == 0 then return line(label, "pending", fmt(median(base)), nil, target, "pending", note) end
  local ratios = {}
  for r, v in ipairs(sk) do ratios[r] = v / base[r] end
  local ratio = median(ratios)
  local spread = string.format("per-round ratios %.2f–%.2f", percentile(ratios, 0), percentile(ratios, 1))
  return line(label, fmt(median(sk)), fmt(median(base)), ratio, target, verdict(ratio, limit),
    note and (note .. "; " .. spread) or spread)
end

-- Runs `rounds` rounds of a baseline chunk and a sandkit chunk, alternating
-- which goes first; the sandkit chunk is skipped when sandkit is missing.
local function interleave(ctx, rounds, base_fn, sk_fn)
  for r = 1, rounds do
    if not ctx.sk then base_fn(r)
    elseif r % 2 == 1 then base_fn(r); sk_fn(r)
    else sk_fn(r); base_fn(r) end
  end
end

local function time_execs(sb, per, command, into)
  for _ = 1, per do
    local t0 = now()
    local r, err = sb:exec(command)
    into[#into + 1] = (now() - t0) * 1e6
    must_succeed(check(r, err), command)
  end
end

-- ---- the peer: Mastra's LocalSandbox (bench/peer, run by Node) ------------------

local PEER_DIR = ROOT .. "/bench/peer"

-- nil when the peer can run, else why not (make bench runs npm ci there).
local function peer_missing()
  local f = io.open(PEER_DIR .. "/node_modules/@mastra/core/package.json", "r")
  if not f then return "npm ci in bench/peer (make bench-peer)" end
  f:close()
  local _, ok = read_cmd("command -v node >/dev/null 2>&1")
  if not ok then return "node not found" end
  return nil
end

local function peer_cmd(job, workdir, ...)
  local parts = { "node", shell_quote(PEER_DIR .. "/mastra_local.mjs"), job, shell_quote(workdir) }
  for _, a in ipairs({ ... }) do parts[#parts + 1] = shell_quote(a) end
  return table.concat(parts, " ")
end

-- The peer line under a floor line: sandkit's speed-up over Mastra (the
-- peer's median over sandkit's), and the floor's, which bounds it.
local function peer_line(label, sk, peer, base, fmt, min_speedup, why_missing, note)
  local target = string.format("≥ %g× faster", min_speedup)
  if #peer == 0 then
    return line(label, #sk > 0 and fmt(median(sk)) or "pending", "pending", nil, target, "pending",
      why_missing or "peer not run")
  end
  local mp = median(peer)
  local floor_note = string.format("the C floor is %.2f× faster than Mastra", mp / median(base))
  note = note and (floor_note .. "; " .. note) or floor_note
  if #sk == 0 then return line(label, "pending", fmt(mp), nil, target, "pending", note) end
  local l = line(label, fmt(median(sk)), fmt(mp), mp / median(sk), target, verdict(min_speedup, mp / median(sk)), note)
  l.ratio_suffix = "× faster"
  return l
end

local rows = {}

rows[#rows + 1] = {
  id = "exec", label = "local exec latency", target = "≤ 1.25×",
  run = function(ctx)
    local rounds, per = ctx.quick and 2 or 10, ctx.quick and 5 or 50
    local sb = ctx.sk and local_sandbox(ctx.tmp .. "/exec")
    if sb then time_execs(sb, 5, "true", {}) end
    local base, sk, peer = {}, {}, {}
    local no_peer = peer_missing()
    local peer_dir = ctx.tmp .. "/peer-exec"
    os.execute("mkdir -p " .. shell_quote(peer_dir))
    interleave(ctx, rounds, function()
      append(base, run_json(floor_cmd("floor_spawn", { per, 3 })).samples_us)
      if not no_peer then append(peer, run_json(peer_cmd("exec", peer_dir, per, 3)).samples_us) end
    end, function()
      time_execs(sb, per, "true", sk)
    end)
    if sb then sb:destroy() end
    local note = string.format("p90 %s vs %s", #sk > 0 and fmt_us(percentile(sk, 0.9)) or "-", fmt_us(percentile(base, 0.9)))
    return {
      compare(string.format("local exec latency (n=%d)", #base), sk, base, fmt_us, 1.25, note),
      peer_line("  vs Mastra LocalSandbox, exec", sk, peer, base, fmt_us, 1, no_peer,
        "@mastra/core's executeCommand('true') on Node, the same rounds"),
    }
  end,
}

rows[#rows + 1] = {
  id = "fanout", label = "local fan-out", target = "≤ 1.5×",
  run = function(ctx)
    local width, rounds = ctx.quick and 20 or 200, ctx.quick and 2 or 10
    local sb = ctx.sk and local_sandbox(ctx.tmp .. "/fanout")
    local function sk_round()
      local results, failures = {}, {}
      local t0 = now()
      for i = 1, width do
        ctx.sk.spawn(function()
          local r, err = sb:exec("echo", { tostring(i) })
          if r then results[i] = r else failures[#failures + 1] = tostring(err) end
        end)
      end
      ctx.sk.run()
      local ms = (now() - t0) * 1000
      if #failures > 0 then error("fan-out exec failed: " .. failures[1], 0) end
      for i = 1, width do
        local r = results[i]
        if not r or r.stdout ~= i .. "\n" then
          error(string.format("fan-out task %d: got %q", i, r and tostring(r.stdout) or "no result"), 0)
        end
      end
      return ms
    end
    if sb then sk_round() end -- warm-up
    local base, sk, peer = {}, {}, {}
    local no_peer = peer_missing()
    local peer_dir = ctx.tmp .. "/peer-fanout"
    os.execute("mkdir -p " .. shell_quote(peer_dir))
    interleave(ctx, rounds, function()
      local j = run_json(floor_cmd("floor_fanout", { width, 1, 1 }))
      append(base, j.samples_ms)
      if not no_peer then append(peer, run_json(peer_cmd("fanout", peer_dir, width)).samples_ms) end
    end, function()
      sk[#sk + 1] = sk_round()
    end)
    if sb then sb:destroy() end
    return {
      compare(string.format("local fan-out (%d at once)", width), sk, base, fmt_ms, 1.5, rounds .. " rounds"),
      peer_line("  vs Mastra LocalSandbox, fan-out", sk, peer, base, fmt_ms, 1, no_peer,
        "Promise.all of executeCommand('echo', [i]) after one warm-up round, output checked"),
    }
  end,
}

local function output_rows(ctx, kind)
  local size = ctx.quick and "1M" or "100M"
  local out_bytes = ctx.quick and 1048576 or 104857600
  local rounds = ctx.quick and 1 or 9
  local command = "head -c " .. size .. " /dev/zero"
  local base, sk, growth, base_rss = {}, {}, {}, {}
  local sk_buf, buf_growth, peer = {}, {}, {}
  local no_peer = kind == "capture" and peer_missing()
  local peer_dir = ctx.tmp .. "/peer-capture"
  if kind == "capture" then os.execute("mkdir -p " .. shell_quote(peer_dir)) end
  local workdir = ctx.tmp .. "/" .. kind
  local reset_ok = true
  local function sk_child(which, times, growths)
    local j = run_child(which, size, workdir)
    if j.bytes ~= out_bytes then error(which .. " side got " .. tostring(j.bytes) .. " bytes", 0) end
    if which == "stream" and j.retained ~= 0 then
      error("capture = false still retained " .. tostring(j.retained) .. " bytes in r.stdout", 0)
    end
    times[#times + 1] = j.ms
    growths[#growths + 1] = j.growth_kb
    reset_ok = reset_ok and j.peak_reset
  end
  interleave(ctx, rounds, function()
    local args = { 1 }
    if kind == "capture" then args[#args + 1] = "--keep" end
    args[#args + 1] = command
    local j = run_json(floor_cmd("floor_reader", args))
    if j.bytes ~= out_bytes then error("floor_reader read " .. tostring(j.bytes) .. " bytes", 0) end
    append(base, j.samples_ms)
    base_rss[#base_rss + 1] = j.maxrss_kb
    if kind == "capture" and not no_peer then
      local pj = run_json(peer_cmd("capture", peer_dir, size))
      if pj.bytes ~= out_bytes then error("Mastra LocalSandbox captured " .. tostring(pj.bytes) .. " bytes", 0) end
      append(peer, pj.samples_ms)
    end
  end, function(r)
    -- strings and buffers alternate too
    local order = r % 2 == 1 and { kind, "capture_buffer" } or { "capture_buffer", kind }
    for _, which in ipairs(order) do
      if which == kind then sk_child(kind, sk, growth)
      elseif kind == "capture" then sk_child("capture_buffer", sk_buf, buf_growth) end
    end
  end)
  local brss = median(base_rss)
  local g = median(growth)
  local how = reset_ok and "VmHWM growth during the exec" or "VmHWM growth (could not reset VmHWM: includes start-up)"
  if kind == "capture" then
    local rss_line
    if g then
      local per_output = g * 1024 / out_bytes
      rss_line = line("output capture, peak RSS", fmt_kib(g), fmt_kib(brss), per_output, "≤ 2.5× output",
        verdict(per_output, 2.5), "sandkit: " .. how .. "; baseline: the C reader's whole ru_maxrss")
      rss_line.ratio_suffix = "× output"
    else
      rss_line = line("output capture, peak RSS", "pending", fmt_kib(brss), nil, "≤ 2.5× output", "pending")
    end
    local bg = median(buf_growth)
    local buf_rss_line
    if bg then
      local per_output = bg * 1024 / out_bytes
      buf_rss_line = line("output capture, buffer, peak RSS", fmt_kib(bg), fmt_kib(brss), per_output, "≤ 1.5× output",
        verdict(per_output, 1.5), "the buffer takes over the capture allocation: no second copy")
      buf_rss_line.ratio_suffix = "× output"
    else
      buf_rss_line = line("output capture, buffer, peak RSS", "pending", fmt_kib(brss), nil, "≤ 1.5× output", "pending")
    end
    return {
      compare("output capture, time (" .. size .. ")", sk, base, fmt_ms, 1.5,
        "strings (the default); baseline keeps the bytes in one growing buffer"),
      rss_line,
      compare("output capture, buffer, time (" .. size .. ")", sk_buf, base, fmt_ms, 1.2,
        "capture = \"buffer\": r.stdout is a sandkit.Buffer, no copy into a Lua string"),
      buf_rss_line,
      peer_line("  vs Mastra LocalSandbox, capture", sk_buf, peer, base, fmt_ms, 10, no_peer,
        string.format("sandkit with capture = \"buffer\"; with strings %.2f× faster",
          (#peer > 0 and #sk > 0) and median(peer) / median(sk) or 0)),
    }
  end
  return {
    compare("output streaming, time (" .. size .. ")", sk, base, fmt_ms, 1.3, "capture = false, on_stdout counts bytes"),
    line("output streaming, RSS growth", g and fmt_kib(g) or "pending", fmt_kib(brss), nil, "≤ 16 MiB",
      g and verdict(g, 16 * 1024) or "pending", g and ("sandkit: " .. how .. "; baseline: the C reader's whole ru_maxrss")),
  }
end

rows[#rows + 1] = { id = "capture", label = "output capture", target = "≤ 1.5×; ≤ 2.5× output",
  run = function(ctx) return output_rows(ctx, "capture") end }
rows[#rows + 1] = { id = "streaming", label = "output streaming", target = "≤ 1.3×; ≤ 16 MiB",
  run = function(ctx) return output_rows(ctx, "stream") end }

-- The exact bubblewrap argv sandkit runs, read back from inside the sandbox:
-- with --unshare-pid, bwrap itself is PID 1 of the new namespace, so
-- /proc/1/cmdline is that argv; its last element is the command string.
-- sandkit binds by descriptor (--bind-fd N DEST), which the baseline has
-- not got: it binds the same directories by path (DEST, and tmpdir for
-- /tmp). Run by root, sandkit starts bwrap through setpriv as nobody; so
-- does the baseline.
local function bwrap_argv_of(sb, command, tmpdir)
  local probe = "cat /proc/1/cmdline"
  local r = must_succeed(check(sb:exec(probe)), probe)
  local argv = {}
  for part in r.stdout:gmatch("([^%z]*)%z") do argv[#argv + 1] = part end
  if argv[#argv] ~= probe or not (argv[1] or ""):match("bwrap$") then
    error("could not read the bwrap argv back (got " .. #argv .. " elements)", 0)
  end
  argv[#argv] = command
  for i = 1, #argv - 2 do
    local by_path = ({ ["--bind-fd"] = "--bind", ["--ro-bind-fd"] = "--ro-bind" })[argv[i]]
    if by_path and argv[i + 1]:match("^%d+$") then
      argv[i], argv[i + 1] = by_path, argv[i + 2] == "/tmp" and tmpdir or argv[i + 2]
    end
  end
  if io.popen("id -u"):read("*l") == "0" then
    os.execute("chown 65534:65534 " .. shell_quote(tmpdir))
    argv = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", unpack(argv) }
  end
  return argv
end

-- Without sandkit: the argv src/core/providers/local/local.c builds with default
-- options (docs/protocols/conformance.md §2 with a per-sandbox /tmp), for the baseline only.
local function bwrap_argv_default(workdir, tmpdir, command)
  local argv = { "bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
    "--proc", "/proc", "--dev", "/dev" }
  for _, p in ipairs({ "/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/alternatives", "/etc/ssl",
    "/etc/ca-certificates", "/etc/resolv.conf", "/etc/hosts", "/etc/passwd", "/etc/group",
    "/etc/nsswitch.conf", "/etc/ld.so.cache", "/etc/localtime" }) do
    append(argv, { "--ro-bind-try", p, p })
  end
  append(argv, { "--ro-bind-try", "/opt", "/opt", "--bind", tmpdir, "/tmp", "--bind", workdir, workdir,
    "--chdir", workdir, "--die-with-parent", "--", "/bin/sh", "-c", command })
  return argv
end

rows[#rows + 1] = {
  id = "bwrap", label = "bwrap exec latency", target = "≤ 1.25×",
  run = function(ctx)
    local rounds, per = ctx.quick and 2 or 10, ctx.quick and 2 or 20
    local workdir = ctx.tmp .. "/bwrap"
    os.execute("mkdir -p " .. shell_quote(workdir) .. " " .. shell_quote(ctx.tmp .. "/bwrap-tmp"))
    local sb, argv
    if ctx.sk then
      local ok, made = pcall(ctx.sk.LocalSandbox, { working_directory = workdir, isolation = "bwrap" })
      if not ok then
        return { line("bwrap exec latency", "n/a", "n/a", nil, "≤ 1.25×", "n/a", "bwrap unavailable: " .. tostring(made)) }
      end
      sb = made
      check(sb:start())
      local r0 = check(sb:exec("true"))
      if r0.exit_code ~= 0 then
        sb:destroy()
        return { line("bwrap exec latency", "n/a", "n/a", nil, "≤ 1.25×", "n/a",
          "bwrap cannot run here: " .. tostring(r0.stderr):gsub("%s+$", "")) }
      end
      argv = bwrap_argv_of(sb, "true", ctx.tmp .. "/bwrap-tmp")
      time_execs(sb, 3, "true", {})
    else
      argv = bwrap_argv_default(workdir, ctx.tmp .. "/bwrap-tmp", "true")
    end
    local base, sk = {}, {}
    interleave(ctx, rounds, function()
      local args = { per, 2, "--" }
      append(args, argv)
      -- sandkit spawns bwrap from the working directory; so does the baseline
      local j = run_json("cd " .. shell_quote(workdir) .. " && " .. floor_cmd("floor_bwrap", args))
      if j.failures ~= 0 then error("floor_bwrap: " .. j.failures .. " runs exited non-zero", 0) end
      append(base, j.samples_us)
    end, function()
      time_execs(sb, per, "true", sk)
    end)
    if sb then sb:destroy() end
    local note = sb and string.format("both sides run the same %d-element argv (read back from /proc/1/cmdline; binds by path on the baseline side)", #argv)
      or "baseline argv rebuilt from local.c's defaults"
    return { compare(string.format("bwrap exec latency (n=%d)", #base), sk, base, fmt_us, 1.25, note) }
  end,
}

rows[#rows + 1] = {
  id = "objects", label = "sandbox objects", target = "≤ 4 KiB each",
  run = function(ctx)
    local n = ctx.quick and 200 or 10000
    local label = string.format("sandbox objects (%d unstarted)", n)
    if not ctx.sk then return { line(label, "pending", "—", nil, "≤ 4 KiB each", "pending") } end
    local j = run_child("objects", n, ctx.tmp .. "/objects")
    if j.count ~= n then error("objects child built " .. tostring(j.count) .. " objects", 0) end
    return { line(label, fmt_kib(j.per_kb) .. "/obj", "—", nil, "≤ 4 KiB each", verdict(j.per_kb, 4),
      "RSS growth " .. fmt_kib(j.rss1_kb - j.rss0_kb) .. " after a full GC") }
  end,
}

-- Members of a fleet, whatever the fleet object calls its list.
local function fleet_members(fl)
  if type(fl.sandboxes) == "table" then return fl.sandboxes end
  if type(fl.members) == "table" then return fl.members end
  return fl
end

rows[#rows + 1] = {
  id = "fleet", label = "fleet", target = "≤ 2×",
  run = function(ctx)
    local n, rounds = ctx.quick and 10 or 100, ctx.quick and 1 or 10
    local label = string.format("fleet (%d: start, exec, destroy)", n)
    local base_dir = ctx.tmp .. "/fleet"
    os.execute("mkdir -p " .. shell_quote(base_dir))
    local sk_mod = ctx.sk
    if sk_mod and type(sk_mod.fleet) ~= "function" then sk_mod = nil end
    local ndirs = 0
    local function sk_round(r)
      local template = sk_mod.LocalSandbox({ working_directory = base_dir .. "/sk-" .. r })
      local t0 = now()
      local fl = check(sk_mod.fleet(template, n))
      local results = check(fl:exec("true"))
      local dirs, seen = {}, {}
      for _, sb in ipairs(fleet_members(fl)) do
        local info = sb:info()
        local wd = info and info.metadata and info.metadata.working_directory
        if wd and not seen[wd] then seen[wd] = true; dirs[#dirs + 1] = wd end
      end
      check(fl:destroy())
      -- LocalSandbox destroy leaves the working directory (as upstream
      -- does); the baseline removes its directories, so this side does too.
      for _, d in ipairs(dirs) do os.remove(d) end
      local ms = (now() - t0) * 1000
      local count = 0
      for _, res in ipairs(results) do
        count = count + 1
        must_succeed(res, "fleet exec")
      end
      if count ~= n then error("fleet exec returned " .. count .. " results", 0) end
      ndirs = #dirs
      return ms
    end
    if sk_mod then sk_round(0) end
    local base, sk = {}, {}
    interleave({ sk = sk_mod }, rounds, function()
      -- as many directories as the sandkit fleet used (its clones share the
      -- template's working directory unless told otherwise)
      append(base, run_json(floor_cmd("floor_fleet", { n, 1, base_dir, 0, ndirs > 0 and ndirs or n })).samples_ms)
    end, function(r)
      sk[#sk + 1] = sk_round(r)
    end)
    local note = sk_mod and string.format("%d distinct working director%s on both sides", ndirs, ndirs == 1 and "y" or "ies")
      or (ctx.sk and "sandkit.fleet not available")
    return { compare(label, sk, base, fmt_ms, 2, note) }
  end,
}

local function server_exists(name)
  local f = io.open(ROOT .. "/spec/servers/" .. name .. "/server.mjs", "r")
  if f then f:close() return true end
  return false
end

-- Rows whose provider or baseline has not landed: print why they wait.
local function pending_row(label, target, provider, server, baseline_ready)
  return function()
    local ids = provider_ids()
    local why
    if not ids[provider] then why = "provider '" .. provider .. "' has not landed"
    elseif not server_exists(server) then why = "reference server spec/servers/" .. server .. " missing"
    elseif not baseline_ready then why = "baseline not written yet"
    else why = "measurement not written yet" end
    return { line(label, "pending", "pending", nil, target, "pending", why) }
  end
end

-- ---- platform (spec/servers/platform on 127.0.0.1) --------------------------------

-- Starts a reference server (the shell command cmd) as
-- spec/helpers/server.lua does: the first stdout line read from a FIFO, its
-- stdin held so that it exits when we close it (or die). Returns stop and
-- the captures of pattern in that line; raises when it does not match.
local function start_server(name, cmd, pattern)
  local dir = make_temp_dir("sandkit-bench-" .. name)
  local fifo = dir .. "/ready"
  assert(os.execute("mkfifo " .. shell_quote(fifo)))
  local stdin = assert(io.popen(("exec %s > %s 2> %s"):format(cmd, shell_quote(fifo), shell_quote(dir .. "/log")), "w"))
  local ready = assert(io.open(fifo, "r"))
  local first = ready:read("*l") or ""
  local function stop()
    stdin:close()
    ready:close()
    remove_tree(dir)
  end
  if not first:match(pattern) then
    stop()
    error(name .. " reference server did not start (make npm-deps?)", 0)
  end
  return stop, first:match(pattern)
end

-- Runs fn(srv), then stops the server srv whatever fn did; fn's error is
-- raised after that.
local function with_server(srv, fn)
  local ok, res = pcall(fn, srv)
  srv.stop()
  if not ok then error(res, 0) end
  return res
end

-- A row runs as row.run(ctx), or, where it names a server (a function that
-- starts one: platform_server, modal_server), as row.run(ctx, srv) with that
-- server started for it and stopped after.
local function run_row(row, ctx)
  if not row.server then return row.run(ctx) end
  return with_server(row.server(), function(srv) return row.run(ctx, srv) end)
end

-- The Platform reference server (first line LISTENING <port>). Returns
-- { url, ws, stop, lease }.
local function platform_server()
  local stop, port = start_server("platform",
    "node " .. shell_quote(ROOT .. "/spec/servers/platform/server.mjs") .. " --quiet", "^LISTENING (%d+)")
  local url = "http://127.0.0.1:" .. port
  local srv = { url = url, ws = "ws://127.0.0.1:" .. port .. "/ws/exec", stop = stop }
  -- the baseline's lease, minted with curl (sandkit caches its own)
  function srv.lease(sandbox_id)
    local base = url .. "/v1/railway/projects/bench"
    local auth = "-H 'authorization: Bearer test-token'"
    if not sandbox_id then
      local out = read_cmd(("curl -s -m 10 -X POST %s -H 'content-type: application/json' " ..
        "--data '{\"environmentId\":\"bench\",\"env\":{}}' %s/sandbox"):format(auth, base))
      sandbox_id = assert(json_decode(out).id, "create failed: " .. out)
    end
    local out = read_cmd(("curl -s -m 10 -X POST %s %s/sandbox/%s/exec-lease"):format(auth, base, sandbox_id))
    return assert(json_decode(out).jwt, "lease failed: " .. out)
  end
  return srv
end

local function platform_sandbox(ctx, srv)
  if not ctx.sk or not provider_ids().platform then return nil end
  local sb = ctx.sk.PlatformSandbox({ access_token = "test-token", project_id = "bench", environment_id = "bench",
    base_url = srv.url })
  check(sb:start())
  return sb
end

rows[#rows + 1] = {
  id = "platform_exec", label = "platform exec", target = "≤ 1.3×", remote = true, server = platform_server,
  run = function(ctx, srv)
    local rounds, per = ctx.quick and 2 or 10, ctx.quick and 5 or 20
    local size = ctx.quick and 1048576 or 10485760
    -- 24 paired rounds: one 10 MiB exec takes ~100 ms of CPU on each
    -- side of a 2-core machine, so a burst of other load moves a single
    -- sample a lot; the row is the median of per-round ratios. An even
    -- count, as the second of a pair runs ~10 % slower, so each side goes
    -- second equally often; see
    -- docs/performance.md §"Platform 10 MiB: where the spread came from"
    local big_rounds = ctx.quick and 1 or 24
    local sb = platform_sandbox(ctx, srv)
    local jwt = srv.lease(sb and sb:info().metadata.sandbox_id)
    if sb then time_execs(sb, 5, "true", {}) end -- the lease is cached from here on
    local base, sk = {}, {}
    interleave({ sk = sb and ctx.sk }, rounds, function()
      local j = run_json(floor_cmd("floor_platform", { "exec", srv.ws, jwt, per, 2 }))
      if j.failures ~= 0 then error("floor_platform: " .. j.failures .. " execs failed", 0) end
      append(base, j.samples_us)
    end, function()
      time_execs(sb, per, "true", sk)
    end)
    -- output transfer: stdout of `head -c SIZE /dev/zero`, captured
    local command = "head -c " .. size .. " /dev/zero"
    local big_base, big_sk, cpu_base, cpu_sk = {}, {}, {}, {}
    interleave({ sk = sb and ctx.sk }, big_rounds, function(r)
      local j = run_json(floor_cmd("floor_platform", { "bytes", srv.ws, jwt, 1, 1, size }))
      if j.failures ~= 0 or j.bytes ~= size then error("floor_platform bytes: got " .. tostring(j.bytes), 0) end
      big_base[r] = j.samples_ms[1]
      cpu_base[r] = j.cpu_ms
    end, function(r)
      local c0 = cpu_seconds()
      local t0 = now()
      local res = must_succeed(check(sb:exec(command)), command)
      big_sk[r] = (now() - t0) * 1000
      cpu_sk[r] = (cpu_seconds() - c0) * 1000
      if #res.stdout ~= size then error("platform transfer: got " .. #res.stdout .. " bytes", 0) end
    end)
    if sb then sb:destroy() end
    local note = string.format("lease cached on both sides; p90 %s vs %s",
      #sk > 0 and fmt_us(percentile(sk, 0.9)) or "-", fmt_us(percentile(base, 0.9)))
    local mib = math.floor(size / 1048576)
    return {
      compare(string.format("platform exec (n=%d)", #base), sk, base, fmt_us, 1.3, note),
      compare_paired(string.format("platform exec, %d MiB stdout", mib), big_sk, big_base, fmt_ms, 1.3,
        string.format("median of %d per-round ratios (rounds alternate who goes first); sandkit captures the bytes as a string, the baseline counts them",
          big_rounds)),
      compare("  client CPU per 10 MiB", cpu_sk, cpu_base, fmt_ms, 1.3,
        "user + system time of the client process: libwebsockets' frame parser dominates both sides"),
    }
  end,
}

rows[#rows + 1] = {
  id = "platform_fanout", label = "platform fan-out", target = "≤ 1.5×", remote = true, server = platform_server,
  run = function(ctx, srv)
    local width, rounds = ctx.quick and 20 or 100, ctx.quick and 2 or 10
    local sb = platform_sandbox(ctx, srv)
    local jwt = srv.lease(sb and sb:info().metadata.sandbox_id)
    local function sk_round()
      local failures = {}
      local t0 = now()
      for i = 1, width do
        ctx.sk.spawn(function()
          local r, err = sb:exec("true")
          if not r or r.exit_code ~= 0 then failures[#failures + 1] = tostring(err or r.exit_code) end
        end)
      end
      ctx.sk.run()
      if #failures > 0 then error("platform fan-out: " .. failures[1], 0) end
      return (now() - t0) * 1000
    end
    if sb then sk_round() end -- warm-up; caches the lease
    local base, sk = {}, {}
    interleave({ sk = sb and ctx.sk }, rounds, function()
      local j = run_json(floor_cmd("floor_platform", { "fanout", srv.ws, jwt, 1, 1, width }))
      if j.failures ~= 0 then error("floor_platform fanout: " .. j.failures .. " failed", 0) end
      append(base, j.samples_ms)
    end, function()
      sk[#sk + 1] = sk_round()
    end)
    if sb then sb:destroy() end
    return { compare(string.format("platform fan-out (%d at once)", width), sk, base, fmt_ms, 1.5,
      rounds .. " rounds, one sandbox, lease cached") }
  end,
}
-- ---- modal (spec/servers/modal on 127.0.0.1) -------------------------------------

-- The Modal reference server, started like platform_server(); its first
-- line is "LISTENING <grpc-port> ADMIN <admin-port>". extra: more flags
-- (--host, --tls-cert, --tls-key for the TLS row).
local function modal_server(extra, host, scheme)
  local flags = {}
  for _, a in ipairs(extra or {}) do flags[#flags + 1] = shell_quote(a) end
  local stop, port, admin = start_server("modal", ("env MODAL_CONFIG_PATH=/nonexistent node %s --port 0 %s"):format(
    shell_quote(ROOT .. "/spec/servers/modal/server.mjs"), table.concat(flags, " ")), "^LISTENING (%d+) ADMIN (%d+)")
  local srv = { url = (scheme or "http") .. "://" .. (host or "127.0.0.1") .. ":" .. port, stop = stop }
  local admin_url = "http://127.0.0.1:" .. admin
  function srv.reset_log()
    read_cmd("curl -s -m 10 -X POST -d '{}' " .. admin_url .. "/__admin/reset")
  end
  -- Connections the exec calls came in on: distinct client address:port
  -- (the server logs the peer of every call), and how many execs started.
  function srv.exec_connections()
    local out = read_cmd("curl -s -m 30 " .. admin_url .. "/__admin/log")
    local peers, n_peers, execs = {}, 0, 0
    for _, e in ipairs(json_decode(out)) do
      if tostring(e.rpc):match("^TaskExec") then
        if not peers[e.peer] then peers[e.peer] = true; n_peers = n_peers + 1 end
        if e.rpc == "TaskExecStart" then execs = execs + 1 end
      end
    end
    return n_peers, execs
  end
  return srv
end

local function modal_sandbox(ctx, srv, extra)
  if not ctx.sk or not provider_ids().modal then return nil end
  local o = { server_url = srv.url, token_id = "ak-test", token_secret = "as-test" }
  for k, v in pairs(extra or {}) do o[k] = v end
  local sb = ctx.sk.ModalSandbox(o)
  check(sb:start())
  time_execs(sb, 5, "true", {}) -- task id and router access are cached from here on
  return sb
end

local function sdk_cmd(url, per, env)
  return ("%s MODAL_TOKEN_ID=ak-test MODAL_TOKEN_SECRET=as-test MODAL_LOGLEVEL=error NODE_NO_WARNINGS=1 node %s %s %d"):format(
    env or "", shell_quote(ROOT .. "/spec/servers/modal/bench_sdk.mjs"), shell_quote(url), per)
end

-- The SDK running n execs at once (bench/scale.lua's Modal baseline);
-- --expose-gc so that it collects before its peak RSS is reset.
local function sdk_wide_cmd(url, n, env)
  return ("%s MODAL_TOKEN_ID=ak-test MODAL_TOKEN_SECRET=as-test MODAL_LOGLEVEL=error NODE_NO_WARNINGS=1 node --expose-gc %s %s --wide %d"):format(
    env or "", shell_quote(ROOT .. "/spec/servers/modal/bench_sdk.mjs"), shell_quote(url), n)
end

-- Client CPU (user + system of the client process) against the SDK's.
local function cpu_line(label, sk, base, fmt, note)
  local l = compare(label, sk, base, fmt, 0.3, note)
  return l
end

local function fmt_conns(x) return string.format("%.2f", x) end

rows[#rows + 1] = {
  id = "modal_exec", label = "modal exec", target = "< 1×", remote = true, server = modal_server,
  run = function(ctx, srv)
    -- 4 rounds x 50 = 200 execs a side; each SDK round is one bench_sdk.mjs
    -- run (its own client and sandbox, one warm-up exec, then `per` execs),
    -- so both sides report per-round medians and the row their median.
    local rounds, per = ctx.quick and 1 or 4, ctx.quick and 5 or 50
    local size = 10485760
    local sb = modal_sandbox(ctx, srv)
    local base, sk, big_base, big_sk = {}, {}, {}, {}
    local cpu_base, cpu_sk, big_cpu_base, big_cpu_sk = {}, {}, {}, {}
    interleave({ sk = sb and ctx.sk }, rounds, function()
      local j = run_json(sdk_cmd(srv.url, per))
      base[#base + 1] = j.exec_true_median_ms * 1000
      big_base[#big_base + 1] = j.stdout_10mib_ms
      cpu_base[#cpu_base + 1] = j.exec_true_cpu_us
      big_cpu_base[#big_cpu_base + 1] = j.stdout_10mib_cpu_ms
    end, function()
      local samples = {}
      local c0 = cpu_seconds()
      time_execs(sb, per, "true", samples)
      cpu_sk[#cpu_sk + 1] = (cpu_seconds() - c0) * 1e6 / per
      sk[#sk + 1] = median(samples)
      local command = "head -c " .. size .. " /dev/zero"
      c0 = cpu_seconds()
      local t0 = now()
      local r = must_succeed(check(sb:exec(command, nil, { capture = "buffer" })), command)
      big_sk[#big_sk + 1] = (now() - t0) * 1000
      big_cpu_sk[#big_cpu_sk + 1] = (cpu_seconds() - c0) * 1000
      if #r.stdout ~= size then error("modal transfer: got " .. #r.stdout .. " bytes", 0) end
      r.stdout:close()
    end)
    -- connections per exec on h2c (127.0.0.1): each side alone, 20 execs
    local conns_sk, conns_sdk = {}, {}
    local nconn = ctx.quick and 5 or 20
    srv.reset_log()
    run_json(sdk_cmd(srv.url, nconn))
    local np, ne = srv.exec_connections()
    conns_sdk[1] = np / ne
    if sb then
      srv.reset_log()
      time_execs(sb, nconn, "true", {})
      np, ne = srv.exec_connections()
      conns_sk[1] = np / ne
      sb:destroy()
    end
    local exec_line = compare(string.format("modal exec (n=%d)", rounds * per), sk, base, fmt_us, 1,
      string.format("official SDK modal@0.7.6 on the same server; median of %d round medians (%d execs each); router access cached",
        rounds, per))
    exec_line.target = "< 1×"
    if exec_line.ratio then exec_line.result = exec_line.ratio < 1 and "PASS" or "MISS" end
    local conn_line = line("  connections per exec, h2c", conns_sk[1] and fmt_conns(conns_sk[1]) or "pending",
      fmt_conns(conns_sdk[1]), nil, "info", "info",
      "distinct client ports of the TaskExec* calls / execs (h2c: streams share connections, also on libcurl 7.88, docs/protocols/event-core.md §5); over TLS see the next row")
    return {
      exec_line,
      cpu_line("  client CPU per exec", cpu_sk, cpu_base, fmt_us,
        "user + system time of the client process (getrusage / process.cpuUsage), per exec, same rounds"),
      conn_line,
      compare("modal exec, 10 MiB stdout", big_sk, big_base, fmt_ms, 1,
        string.format("%d round(s); sandkit captures the bytes (capture = \"buffer\"), the SDK drains them", rounds)),
      cpu_line("  client CPU per 10 MiB", big_cpu_sk, big_cpu_base, fmt_ms, "user + system time of the client process"),
    }
  end,
}

-- ---- files (issue 13) ------------------------------------------------------------

-- A file of `size` bytes (every byte value) at path; returns its contents.
local function make_file(path, size)
  local t = {}
  for i = 0, 255 do t[#t + 1] = string.char(i) end
  local block = table.concat(t):rep(4096) -- 1 MiB
  local data = block:rep(math.floor(size / #block)) .. block:sub(1, size % #block)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
  return data
end

rows[#rows + 1] = {
  id = "fs_local", label = "local sb.fs 100 MiB", target = "≤ 1.3×",
  run = function(ctx)
    local size = (ctx.quick and 4 or 100) * 1048576
    local rounds = ctx.quick and 1 or 5
    local dir = ctx.tmp .. "/fs_local"
    os.execute("mkdir -p " .. shell_quote(dir))
    local data = make_file(dir .. "/src.bin", size)
    local sb = ctx.sk and local_sandbox(dir)
    local base, sk = {}, {}
    interleave(ctx, rounds, function()
      local t0 = now()
      assert(os.execute("cp " .. shell_quote(dir .. "/src.bin") .. " " .. shell_quote(dir .. "/cp.bin")))
      base[#base + 1] = (now() - t0) * 1000
    end, function()
      -- streamed both ways (the large-file path): 1 MiB chunks in and out
      local block, left = data:sub(1, 1048576), size
      local t0 = now()
      check(sb.fs:write_file("copy.bin", function()
        if left <= 0 then return nil end
        local c = left >= #block and block or block:sub(1, left)
        left = left - #c
        return c
      end))
      local got = 0
      check(sb.fs:read_file("copy.bin", { on_chunk = function(c) got = got + #c end }))
      sk[#sk + 1] = (now() - t0) * 1000
      if got ~= size then error("fs_local: read back " .. got .. " bytes", 0) end
    end)
    local whole = {}
    if sb then
      for _ = 1, rounds do
        local t0 = now()
        check(sb.fs:write_file("whole.bin", data))
        local back = check(sb.fs:read_file("whole.bin", { max_bytes = size }))
        whole[#whole + 1] = (now() - t0) * 1000
        if #back ~= size then error("fs_local: read back " .. #back .. " bytes", 0) end
      end
      sb:destroy()
    end
    local mib = math.floor(size / 1048576)
    return {
      compare(("local sb.fs: write+read %d MiB streamed vs cp"):format(mib), sk, base, fmt_ms, 1.3,
        "1 MiB chunks in (chunk source), out as sb.fs reads them (on_chunk); cp(1) copies file to file in the kernel"),
      line(("local sb.fs: write+read %d MiB as whole strings"):format(mib), #whole > 0 and fmt_ms(median(whole)) or "pending",
        fmt_ms(median(base)), #whole > 0 and median(whole) / median(base) or nil, "info", "n/a",
        "the read allocates and fills a 100 MiB Lua string (twice the memory traffic)"),
    }
  end,
}

rows[#rows + 1] = {
  id = "fs_platform", label = "PlatformFilesystem 100 MiB", target = "≤ 1.5×", remote = true, server = platform_server,
  run = function(ctx, srv)
    local size = (ctx.quick and 4 or 100) * 1048576
    -- 8 paired rounds: one round is ~0.5–3 s a side on the shared 2-core
    -- machine, and a burst of other load moves a single sample by half;
    -- the row is the median of per-round ratios (an even count, so each
    -- side goes first equally often)
    local rounds = ctx.quick and 1 or 8
    local dir = make_temp_dir("sandkit-bench-fs")
    local data = make_file(dir .. "/src.bin", size)
    local fs = ctx.sk and ctx.sk.PlatformFilesystem({ access_token = "test-token", project_id = "bench",
      bucket_name = "bench", base_url = srv.url })
    local url = srv.url .. "/v1/railway/projects/bench/fs/bench/"
    local base, sk, base_put, sk_put, base_get, sk_get, cpu_sk = {}, {}, {}, {}, {}, {}, {}
    interleave({ sk = fs and ctx.sk }, rounds, function(r)
      -- the raw transport: curl (libcurl, as sandkit) PUT then GET
      local t0 = now()
      local auth = "-H 'authorization: Bearer test-token'"
      assert(os.execute(("curl -sf %s -T %s %s >/dev/null"):format(auth, shell_quote(dir .. "/src.bin"), url .. "raw.bin")))
      local t1 = now()
      assert(os.execute(("curl -sf %s -o /dev/null %s"):format(auth, url .. "raw.bin")))
      local t2 = now()
      base[r], base_put[r], base_get[r] = (t2 - t0) * 1000, (t1 - t0) * 1000, (t2 - t1) * 1000
    end, function(r)
      local c0 = cpu_seconds()
      local t0 = now()
      check(fs:write_file("sk.bin", data))
      local t1 = now()
      local back = check(fs:read_file("sk.bin", { max_bytes = size }))
      local t2 = now()
      sk[r], sk_put[r], sk_get[r] = (t2 - t0) * 1000, (t1 - t0) * 1000, (t2 - t1) * 1000
      cpu_sk[r] = (cpu_seconds() - c0) * 1000
      if #back ~= size then error("fs_platform: read back " .. #back .. " bytes", 0) end
      back = nil -- luacheck: ignore
      collectgarbage()
    end)
    remove_tree(dir)
    local function part(label, s, b)
      local l = compare_paired(label, s, b, fmt_ms, 1.5, nil)
      l.target, l.result = "info", #s > 0 and "info" or "pending"
      return l
    end
    return {
      compare_paired(("PlatformFilesystem: PUT+GET %d MiB vs curl"):format(math.floor(size / 1048576)), sk, base, fmt_ms, 1.5,
        ("median of %d per-round ratios (rounds alternate who goes first); curl reads/writes files, sandkit writes from and reads into memory (a %d MiB string: fresh pages curl never touches)"):format(
          rounds, math.floor(size / 1048576))),
      part("  PUT alone", sk_put, base_put),
      part("  GET alone", sk_get, base_get),
      line("  client CPU per PUT+GET", #cpu_sk > 0 and fmt_ms(median(cpu_sk)) or "pending", "-", nil, "info",
        #cpu_sk > 0 and "info" or "pending", "user + system time of the sandkit process (curl runs as a child: not counted)"),
    }
  end,
}

-- The sb.fs read rows: bench.bin, size bytes, written in sb; then one read
-- of it timed into samples (ms).
local function write_bench_file(sb, size)
  check(sb.fs:write_file("bench.bin", ("\0\1\2\255"):rep(math.floor(size / 4))))
end

local function time_bench_read(sb, size, samples, what)
  local t0 = now()
  local data = check(sb.fs:read_file("bench.bin"))
  samples[#samples + 1] = (now() - t0) * 1000
  if #data ~= size then error(what .. ": read " .. #data .. " bytes", 0) end
end

rows[#rows + 1] = {
  id = "fs_platform_sb", label = "platform sb.fs read 10 MiB", target = "≤ 1.5×", remote = true, server = platform_server,
  run = function(ctx, srv)
    local rounds, size = ctx.quick and 1 or 5, 10485760
    local sb = platform_sandbox(ctx, srv)
    local jwt = srv.lease(sb and sb:info().metadata.sandbox_id)
    if sb then write_bench_file(sb, size) end
    local base, sk = {}, {}
    interleave({ sk = sb and ctx.sk }, rounds, function()
      local j = run_json(floor_cmd("floor_platform", { "bytes", srv.ws, jwt, 1, 1, size }))
      if j.failures ~= 0 or j.bytes ~= size then error("floor_platform bytes: got " .. tostring(j.bytes), 0) end
      append(base, j.samples_ms)
    end, function()
      time_bench_read(sb, size, sk, "platform sb.fs")
    end)
    if sb then sb:destroy() end
    return { compare("platform sb.fs: read 10 MiB vs C exec client", sk, base, fmt_ms, 1.5,
      "sandkit: sb.fs:read_file (exec streams, one piece); baseline: floor_platform bytes, 10 MiB of stdout") }
  end,
}

rows[#rows + 1] = {
  id = "fs_modal", label = "modal sb.fs read 10 MiB", target = "≤ 1.5×", remote = true, server = modal_server,
  run = function(ctx, srv)
    local rounds, size = ctx.quick and 1 or 3, 10485760
    local sb = modal_sandbox(ctx, srv)
    if sb then write_bench_file(sb, size) end
    local base, sk = {}, {}
    interleave({ sk = sb and ctx.sk }, rounds, function()
      base[#base + 1] = run_json(sdk_cmd(srv.url, 1)).stdout_10mib_ms
    end, function()
      time_bench_read(sb, size, sk, "modal sb.fs")
    end)
    if sb then sb:destroy() end
    return { compare("modal sb.fs: read 10 MiB vs SDK exec stdout", sk, base, fmt_ms, 1.5,
      "sandkit: sb.fs:read_file (exec streams, 8 MiB pieces); SDK: 10 MiB of exec stdout drained") }
  end,
}

-- Over TLS (as in production): a self-signed certificate made now with
-- openssl for 127.0.0.2 (another loopback address: on 127.0.0.1 both
-- clients would dial the router in plaintext, docs/protocols/modal.md §1.8), trusted by
-- sandkit through ca_file and by the SDK through grpc-js's
-- GRPC_DEFAULT_SSL_ROOTS_FILE_PATH. Checks that execs share one connection.
-- A self-signed certificate for 127.0.0.2 in a new temporary directory:
-- dir, cert, key; nil when openssl cannot make one.
local function tls_cert()
  local dir = make_temp_dir("sandkit-bench-tls")
  local cert, key = dir .. "/cert.pem", dir .. "/key.pem"
  local _, made = read_cmd(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes " ..
    "-keyout %s -out %s -days 1 -subj /CN=sandkit-bench -addext subjectAltName=IP:127.0.0.2 2>&1"):format(
    shell_quote(key), shell_quote(cert)))
  if not made then
    remove_tree(dir)
    return nil
  end
  return dir, cert, key
end

-- Its stop() also removes dir, the certificate's.
local function modal_tls_server(dir, cert, key)
  local srv = modal_server({ "--host", "127.0.0.2", "--tls-cert", cert, "--tls-key", key }, "127.0.0.2", "https")
  local stop = srv.stop
  function srv.stop()
    stop()
    remove_tree(dir)
  end
  return srv
end

rows[#rows + 1] = {
  id = "modal_tls", label = "modal over TLS", target = "1 connection", remote = true,
  run = function(ctx)
    local dir, cert, key = tls_cert()
    if not dir then
      return {
        line("modal over TLS, connections", "n/a", "n/a", nil, "1 connection", "n/a", "openssl could not make a certificate"),
        line("modal exec over TLS", "n/a", "n/a", nil, "≤ 1×", "n/a"),
        line("client CPU per exec over TLS", "n/a", "n/a", nil, "≤ 0.3×", "n/a"),
      }
    end
    return with_server(modal_tls_server(dir, cert, key), function(srv)
      local per = ctx.quick and 5 or 50
      local sdk_env = "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=" .. shell_quote(cert)
      srv.reset_log()
      local j = run_json(sdk_cmd(srv.url, per, sdk_env))
      local sdk_conns, sdk_execs = srv.exec_connections()
      local sb = modal_sandbox(ctx, srv, { ca_file = cert })
      local lines = {}
      if not sb then
        return { line(string.format("modal over TLS, connections for %d execs", per), "pending", tostring(sdk_conns),
          nil, "1 connection", "pending") }
      end
      srv.reset_log()
      local samples = {}
      local c0 = cpu_seconds()
      time_execs(sb, per, "true", samples)
      local cpu_us = (cpu_seconds() - c0) * 1e6 / per
      local conns, execs = srv.exec_connections()
      sb:destroy()
      if execs ~= per then error("TLS row: server saw " .. execs .. " execs", 0) end
      lines[#lines + 1] = line(string.format("modal over TLS, connections for %d execs", per), tostring(conns),
        tostring(sdk_conns), nil, "1 connection", conns == 1 and "PASS" or "MISS",
        string.format("server-side peers of the TaskExec* calls (SDK: %d execs incl. warm-up and 10 MiB)", sdk_execs))
      lines[#lines + 1] = compare("  modal exec over TLS", { median(samples) }, { j.exec_true_median_ms * 1000 },
        fmt_us, 1, "median of " .. per .. " execs a side")
      lines[#lines + 1] = cpu_line("  client CPU per exec over TLS", { cpu_us }, { j.exec_true_cpu_us }, fmt_us,
        "user + system time of the client process, per exec")
      return lines
    end)
  end,
}

-- ---- DockerSandbox (bench/docker.lua) ---------------------------------------------

local docker = dofile(ROOT .. "/bench/docker.lua")({
  ROOT = ROOT, now = now, cpu_seconds = cpu_seconds, line = line, median = median, compare = compare,
  compare_paired = compare_paired, fmt_us = fmt_us, fmt_ms = fmt_ms, fmt_kib = fmt_kib, append = append,
  shell_quote = shell_quote, run_json = run_json, floor_cmd = floor_cmd, json_encode = json_encode_flat,
  proc_status_kb = proc_status_kb, reset_peak_rss = reset_peak_rss, open_fds = open_fds,
})
for _, r in ipairs(docker.rows) do rows[#rows + 1] = r end

-- ---- cost as work grows (bench/scale.lua, --scale) ---------------------------------

local scale = dofile(ROOT .. "/bench/scale.lua")({
  now = now, line = line, median = median, fmt_ms = fmt_ms, fmt_kib = fmt_kib, open_fds = open_fds,
  raise_nofile = raise_nofile, sandkit = sandkit, proc_status_kb = proc_status_kb, reset_peak_rss = reset_peak_rss,
  json_encode_flat = json_encode_flat, run_child = function(...) return run_child(...) end, shell_quote = shell_quote,
  platform_server = platform_server, modal_server = modal_server, with_server = with_server, run_json = run_json, floor_cmd = floor_cmd,
  tls_cert = tls_cert, modal_tls_server = modal_tls_server, heap_kb = heap_kb,
  bwrap_argv_of = bwrap_argv_of, sdk_wide_cmd = sdk_wide_cmd,
})
scale_child = scale.child
for _, r in ipairs(docker.scale_rows) do scale.rows[#scale.rows + 1] = r end

-- ---- table -----------------------------------------------------------------------

-- Characters of UTF-8 text: the bytes that start one.
local function display_width(s)
  local _, n = s:gsub("[^\128-\191]", "")
  return n
end

local function pad(s, w)
  return s .. string.rep(" ", w - display_width(s))
end

local MAIN_HEADER = { "row", "sandkit", "baseline", "ratio", "target", "result" }

local function main_cells(l)
  local ratio = l.ratio and string.format("%.2f%s", l.ratio, l.ratio_suffix or "×") or "—"
  return { l.label, l.sk, l.base, ratio, l.target, l.result }
end

local function render(lines, header, cells_of)
  header, cells_of = header or MAIN_HEADER, cells_of or main_cells
  local cells = { header }
  for _, l in ipairs(lines) do cells[#cells + 1] = cells_of(l) end
  local widths = {}
  for _, row in ipairs(cells) do
    for i, c in ipairs(row) do widths[i] = math.max(widths[i] or 0, display_width(c)) end
  end
  local out = {}
  local function emit(row)
    local parts = {}
    for i, c in ipairs(row) do parts[i] = pad(c, widths[i]) end
    out[#out + 1] = "| " .. table.concat(parts, " | ") .. " |"
  end
  emit(header)
  local sep = {}
  for i, w in ipairs(widths) do sep[i] = string.rep("-", w) end
  out[#out + 1] = "| " .. table.concat(sep, " | ") .. " |"
  for i = 2, #cells do emit(cells[i]) end
  local notes = {}
  for _, l in ipairs(lines) do
    if l.note and l.note ~= "" then notes[#notes + 1] = "  " .. l.label .. ": " .. l.note end
  end
  return table.concat(out, "\n") .. "\n" .. (#notes > 0 and ("notes:\n" .. table.concat(notes, "\n") .. "\n") or "")
end

-- ---- main ---------------------------------------------------------------------------

local function usage()
  local ids, sids = {}, {}
  for _, r in ipairs(rows) do ids[#ids + 1] = r.id end
  for _, r in ipairs(scale.rows) do sids[#sids + 1] = r.id end
  return "usage: lua5.4 bench/run.lua [--scale] [--quick] [--only ROW[,ROW...]] [--list]\nrows: " ..
    table.concat(ids, ", ") .. "\n--scale rows: " .. table.concat(sids, ", ")
end

local function main(argv)
  local ctx = { quick = false }
  local only
  local table_rows, header, cells_of, out_name = rows, nil, nil, "latest"
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--quick" then ctx.quick = true
    elseif a == "--scale" then
      table_rows, header, cells_of, out_name = scale.rows, scale.header, scale.cells, "scale"
    elseif a == "--only" then
      i = i + 1
      only = {}
      for id in tostring(argv[i]):gmatch("[^,]+") do only[id] = true end
    elseif a == "--list" then
      for _, r in ipairs(rows) do print(r.id, r.label) end
      for _, r in ipairs(scale.rows) do print(r.id, r.label .. " (--scale)") end
      return 0
    elseif a == "--child" then
      child_main(argv[i + 1], argv[i + 2], argv[i + 3], argv[i + 4], argv[i + 5])
      return 0
    elseif a == "--help" or a == "-h" then print(usage()) return 0
    else io.stderr:write("bench: unknown argument ", a, "\n", usage(), "\n") return 2 end
    i = i + 1
  end
  if only then
    for id in pairs(only) do
      local known = false
      for _, r in ipairs(table_rows) do known = known or r.id == id end
      if not known then io.stderr:write("bench: unknown row ", id, "\n", usage(), "\n") return 2 end
    end
  end

  local sk, sk_err = sandkit()
  ctx.sk = sk
  local lines, errors = {}, 0
  if not sk then
    io.stderr:write("bench: sandkit not loadable, running baselines only: ", (tostring(sk_err):match("[^\n]*")), "\n")
  end
  -- many commands at once need descriptors: the soft limit goes to the hard one
  ctx.nofile_soft, ctx.nofile_hard = raise_nofile()
  ctx.tmp = make_temp_dir("sandkit-bench")
  -- run by root, bwrap commands run as nobody, who must be able to enter it
  os.execute("chmod 711 " .. shell_quote(ctx.tmp))
  for _, row in ipairs(table_rows) do
    if not only or only[row.id] then
      io.stderr:write("bench: ", row.id, " ...\n")
      local ok, res = pcall(run_row, row, ctx)
      if ok then
        append(lines, res)
      else
        errors = errors + 1
        lines[#lines + 1] = line(row.label, "error", "—", nil, row.target or "", "ERROR", tostring(res))
      end
    end
  end
  remove_tree(ctx.tmp)

  local text = render(lines, header, cells_of)
  io.write(text)
  -- the whole table is kept (bench/out/ is ignored by git); --only runs are not
  os.execute("mkdir -p " .. shell_quote(ROOT .. "/bench/out"))
  local f = not only and io.open(ROOT .. "/bench/out/" .. out_name .. (ctx.quick and "-quick" or "") .. ".txt", "w")
  if f then
    f:write(os.date("!%Y-%m-%dT%H:%M:%SZ"), ctx.quick and " (--quick)\n" or "\n", text)
    f:close()
  end
  return errors > 0 and 1 or 0
end

-- close the state so sandkit's finalizers reap anything still running
os.exit(main(arg), true)
