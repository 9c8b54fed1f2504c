-- Soak (issue 7): many local execs mixing normal and failing exits,
-- timeouts, kills of background processes, large outputs and cancellations
-- across 50 sandboxes (spec/helpers/soak.lua). Every operation settles
-- exactly once (counted where the core hands events to Lua), outputs arrive
-- whole, and descriptors, child processes and RSS come back to where they
-- were; the figures are printed as "# soak" lines.
-- Scale: SANDKIT_SOAK_N (default 2,000; `make soak` runs 10,000).
-- Tagged #soak: `busted --tags=soak` runs only this.
--
-- The workload runs in a child lua5.4 whose glibc allocator returns freed
-- memory at once (mmap for blocks over 64 KiB, trimming past 64 KiB): with
-- the defaults, RSS after a run wanders by up to ~20 MiB with how outputs
-- happened to interleave, while the heap in use grows by < 64 KiB.
local cjson = require "cjson"

local N = tonumber(os.getenv("SANDKIT_SOAK_N")) or 2000
local TUNABLES = "glibc.malloc.mmap_threshold=65536:glibc.malloc.trim_threshold=65536"
-- Under ASan the allocator is ASan's (and freed memory sits in quarantine);
-- under valgrind RSS is valgrind's: printed there, not bounded.
local INSTRUMENTED = require("helpers.procs").instrumented()
local RSS_SLACK_KIB = 8 * 1024

local sh_quote = require("helpers.sh").quote

local function show(label, s)
  print(("# soak %s: %d descriptors, %d children (%d zombies), RSS %d KiB, Lua heap %d KiB"):format(
    label, s.fds, s.children, s.zombies, s.rss_kib, s.lua_kib))
end

describe("soak #soak", function()
  it(("settles %d mixed operations across 50 sandboxes exactly once and leaks nothing"):format(N), function()
    local errfile = os.tmpname()
    local code = 'print(require("cjson").encode(require("helpers.soak").run(' .. N .. ')))'
    local cmd = ("env GLIBC_TUNABLES=%s LUA_PATH=%s LUA_CPATH=%s timeout -k 10 1200 lua5.4 -e %s 2>%s"):format(
      sh_quote(TUNABLES), sh_quote(package.path), sh_quote(package.cpath), sh_quote(code), sh_quote(errfile))
    local p = assert(io.popen(cmd))
    local out = p:read("a")
    local ok, _, status = p:close()
    local f = io.open(errfile)
    local stderr = f and f:read("a") or ""
    if f then f:close() end
    os.remove(errfile)
    assert(ok, ("the soak child failed (status %s):\n%s\n%s"):format(tostring(status), out, stderr:sub(1, 4000)))
    local report = cjson.decode(out:match("([^\n]*)\n?$"))

    show("before", report.before)
    local parts = {}
    for _, k in ipairs({ "normal", "failing", "timeout", "kill", "large", "cancel" }) do
      parts[#parts + 1] = ("%s %d"):format(k, report.counts[k])
    end
    print(("# soak: %d operations in %.1f s (%s)"):format(report.n, report.took_s, table.concat(parts, ", ")))
    show("after", report.after)

    local total = 0
    for _, k in pairs(report.counts) do total = total + k end
    assert.equal(N, total)
    assert.same({}, report.failures)
    assert.same({}, report.unsettled)
    assert.same({}, report.settled_twice)
    assert.equal(0, report.after.children)
    assert.equal(0, report.after.zombies)
    assert.equal(0, report.markers_left)
    assert.is_true(report.after.fds <= report.before.fds,
      ("descriptors: %d before, %d after"):format(report.before.fds, report.after.fds))
    if INSTRUMENTED then
      print("# soak: RSS not bounded under a sanitizer or valgrind")
    else
      assert.is_true(report.after.rss_kib <= report.before.rss_kib + RSS_SLACK_KIB,
        ("RSS grew from %d to %d KiB (bound +%d)"):format(report.before.rss_kib, report.after.rss_kib, RSS_SLACK_KIB))
    end
  end)
end)
