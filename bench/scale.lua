-- bench/scale.lua: cost as work grows (issue 15), the table of
-- `make bench-scale` (`lua5.4 bench/run.lua --scale`). Loaded by run.lua,
-- which passes its helpers; returns { rows = ..., child = ... }.
--
-- Each measurement runs in a fresh lua5.4 (`run.lua --child scale KIND N
-- ARG [probe]`) so that its peak RSS and descriptors are its own: the
-- child raises its soft RLIMIT_NOFILE to the hard limit, warms up, resets
-- VmHWM, then runs N commands at once in tasks. A timed child measures
-- only the wall and VmHWM, which cost nothing while it runs; a probe child
-- (once per size) also samples open descriptors and malloc'd bytes every
-- 5 ms. Those probes are not free and their cost grows with the work
-- (listing /proc/self/fd is O(open descriptors), mallinfo2 O(free
-- chunks): at 1,000 WebSockets they took 3/4 of the client's CPU), so they
-- stay out of the timed wall. Per-unit cost is wall / N, (VmHWM - VmRSS
-- before) / N and (peak descriptors - descriptors before) / N; growth is
-- the per-unit cost at the large size over the one at the small size.
return function(H)
  local M = {}
  local now, line, median, fmt_ms, fmt_kib = H.now, H.line, H.median, H.fmt_ms, H.fmt_kib
  local function append(dst, src) for _, v in ipairs(src) do dst[#dst + 1] = v end end

  -- ---- the child ---------------------------------------------------------------

  -- probe: descriptors (and malloc'd bytes, the Lua heap) are sampled by a
  -- task every 5 ms and by every (n/20)th task right after its command was
  -- launched (short commands can end between two samples); otherwise
  -- nothing runs beside the n commands.
  local function run_wide(sk, n, one, probe)
    local failures, first_err = 0, nil
    local done, peak_fds = false, H.open_fds()
    local function sample()
      local f = H.open_fds()
      if f > peak_fds then peak_fds = f end
      local kb = collectgarbage("count")
      if kb > M.peak_lua_kb then M.peak_lua_kb = kb end
      local heap = H.heap_kb()
      if heap > M.peak_heap_kb then M.peak_heap_kb = heap end
    end
    if probe then
      sk.spawn(function()
        while not done do
          sample()
          sk.sleep(0.005)
        end
      end)
    end
    local step = probe and math.max(1, math.floor(n / 20)) or math.huge
    local left = n
    local t0 = now()
    for i = 1, n do
      sk.spawn(function()
        local ok, err = one(i, (i % step == 0 or i == n) and sample or nil)
        if not ok then
          failures = failures + 1
          first_err = first_err or tostring(err)
        end
        left = left - 1
        if left == 0 then done = true end
      end)
    end
    sk.run()
    return (now() - t0) * 1000, peak_fds, failures, first_err
  end

  local function exec_ok(sb, command, after_launch)
    local op = sb:exec_async(command)
    if after_launch then after_launch() end
    local r, err = op:wait()
    if not r then return false, err end
    if r.exit_code ~= 0 then return false, "exit " .. r.exit_code .. ": " .. tostring(r.stderr):sub(1, 200) end
    return true
  end

  -- KIND: local | fleet_none | fleet_bwrap | platform | modal; ARG: a
  -- working directory (local, fleets) or the server URL (remote).
  M.peak_lua_kb, M.peak_heap_kb = 0, 0

  function M.child(kind, n_arg, arg, mode)
    local probe = mode == "probe"
    local sk = assert(H.sandkit())
    local n = tonumber(n_arg)
    local soft, hard = H.raise_nofile()
    local sb, one, fl_template
    if kind == "local" then
      sb = sk.LocalSandbox({ working_directory = arg })
      assert(sb:start())
      -- the C floor's job: `echo i` through /bin/sh
      one = function(i, after_launch) return exec_ok(sb, "echo " .. i, after_launch) end
    elseif kind == "platform" then
      sb = sk.PlatformSandbox({ access_token = "test-token", project_id = "bench", environment_id = "bench", base_url = arg })
      assert(sb:start())
      one = function(_, after_launch) return exec_ok(sb, "true", after_launch) end
    elseif kind == "modal" or kind == "modal_tls" then
      -- modal_tls: ARG is "URL CA_FILE"
      local url, ca = arg:match("^(%S+) (.+)$")
      sb = sk.ModalSandbox({ server_url = url or arg, ca_file = ca, token_id = "ak-test", token_secret = "as-test" })
      assert(sb:start())
      one = function(_, after_launch) return exec_ok(sb, "true", after_launch) end
    elseif kind == "fleet_none" or kind == "fleet_bwrap" then
      fl_template = sk.LocalSandbox({ working_directory = arg,
        isolation = kind == "fleet_bwrap" and "bwrap" or "none" })
    else
      error("unknown scale child " .. tostring(kind))
    end
    if sb then
      for w = 1, 3 do assert(one(w)) end -- warm-up: leases, router access, first spawn
    else
      -- warm-up: one small fleet, so one-time set-up is not charged to n
      local fl = assert(sk.fleet(fl_template, 2))
      fl:exec("true")
      fl:destroy()
    end
    collectgarbage("collect")
    collectgarbage("collect")
    local reset = H.reset_peak_rss()
    local lua_kb0, heap_kb0 = collectgarbage("count"), H.heap_kb()
    M.peak_lua_kb, M.peak_heap_kb = lua_kb0, heap_kb0
    local rss0, fds0 = H.proc_status_kb("VmRSS"), H.open_fds()
    local wall, peak_fds, failures, first_err
    if sb then
      wall, peak_fds, failures, first_err = run_wide(sk, n, one, probe)
    else
      -- the whole fleet: start n clones, one exec on each, destroy
      local done, pf = false, fds0
      local t0 = now()
      local function sample()
        local f = H.open_fds()
        if f > pf then pf = f end
        M.peak_lua_kb = math.max(M.peak_lua_kb, collectgarbage("count"))
        M.peak_heap_kb = math.max(M.peak_heap_kb, H.heap_kb())
      end
      if probe then
        sk.spawn(function()
          while not done do
            sample()
            sk.sleep(0.005)
          end
        end)
      end
      failures = 0
      sk.spawn(function()
        local fl, err = sk.fleet(fl_template, n)
        if not fl then
          failures, first_err = n, tostring(err)
        else
          local results
          if probe then
            -- what Fleet:exec does, with a sample once every exec is
            -- launched: the loop takes all their events in one turn,
            -- closing the descriptors before any task (the sampler's
            -- timer included) runs again
            local ops = {}
            for i = 1, #fl do ops[i] = fl[i]:exec_async("true") end
            sample()
            results = {}
            for i, op in ipairs(ops) do
              local r, e = op:wait()
              results[i] = r or e
            end
          else
            results = fl:exec("true")
          end
          for _, r in ipairs(results) do
            if type(r) ~= "table" or r.exit_code ~= 0 then
              failures = failures + 1
              first_err = first_err or tostring(r.kind and r or r.stderr)
            end
          end
          fl:destroy()
        end
        done = true
      end)
      sk.run()
      wall, peak_fds = (now() - t0) * 1000, pf
    end
    local hwm = H.proc_status_kb("VmHWM")
    if sb then sb:destroy() end
    io.write(H.json_encode_flat({
      n = n, wall_ms = wall, growth_kb = hwm - rss0, lua_growth_kb = M.peak_lua_kb - lua_kb0,
      heap_growth_kb = M.peak_heap_kb - heap_kb0, fds0 = fds0, peak_fds = peak_fds, failures = failures,
      first_error = first_err or "", peak_reset = reset, probe = probe, nofile_soft = soft, nofile_hard = hard,
    }), "\n")
  end

  -- ---- rows --------------------------------------------------------------------------

  -- One measurement at each size (median of `rounds` children). The sizes
  -- take turns within each round, so that drift in the machine's speed
  -- over the row reaches all of them alike: growth is their ratio.
  -- floor_of(n), when given, is a baseline command doing the same n at
  -- once, run in the same rounds (alternating who goes first), so the table
  -- can tell growth that is the machine's (or the server's) from growth
  -- that is sandkit's: a C floor printing samples_ms, or the official Modal
  -- SDK printing wall_ms and growth_kb (its peak RSS growth). base_name
  -- names it. srv, when given (the Modal rows), counts the connections the
  -- probe child's exec calls came in on (the server logs each call's peer).
  local function measure(kind, sizes, rounds, arg_of, floor_of, base_name, srv)
    base_name = base_name or "C floor"
    local out, at = {}, {}
    for _, n in ipairs(sizes) do at[n] = { walls = {}, rss = {}, floors = {}, floor_rss = {} } end
    for r = 1, rounds do
      for _, n in ipairs(sizes) do
        local a = at[n]
        local floor = floor_of and floor_of(n)
        local function run_floor()
          if floor then
            local fj = H.run_json(floor)
            if (fj.failures or 0) ~= 0 then
              error(string.format("%s x%d: %d failed: %s", base_name, n, fj.failures, fj.first_error or ""), 0)
            end
            if fj.samples_ms then append(a.floors, fj.samples_ms) else a.floors[#a.floors + 1] = fj.wall_ms end
            if fj.growth_kb then a.floor_rss[#a.floor_rss + 1] = fj.growth_kb end
          end
        end
        if r % 2 == 1 then run_floor() end
        local j = H.run_child("scale", kind, n, arg_of(n))
        if r % 2 == 0 then run_floor() end
        if j.failures ~= 0 then
          error(string.format("%s x%d: %d failed: %s", kind, n, j.failures, j.first_error), 0)
        end
        a.walls[#a.walls + 1] = j.wall_ms
        a.rss[#a.rss + 1] = j.growth_kb
        a.limit = j.nofile_soft
      end
    end
    for _, n in ipairs(sizes) do
      local a = at[n]
      local walls, rss, floors, floor_rss, limit = a.walls, a.rss, a.floors, a.floor_rss, a.limit
      local fds, heaps, luas = {}, {}, {}
      -- descriptors and malloc'd bytes: one probe child (they vary little)
      if srv then srv.reset_log() end
      local pj = H.run_child("scale", kind, n, arg_of(n), "probe")
      if pj.failures ~= 0 then
        error(string.format("%s x%d (probe): %d failed: %s", kind, n, pj.failures, pj.first_error), 0)
      end
      fds[1], heaps[1], luas[1] = pj.peak_fds - pj.fds0, pj.heap_growth_kb, pj.lua_growth_kb
      out[n] = { wall = median(walls), rss = median(rss), fds = median(fds), nofile = limit,
        floor = #floors > 0 and median(floors) or nil, floor_rss = #floor_rss > 0 and median(floor_rss) or nil,
        heap = median(heaps), lua = median(luas) }
      if srv then out[n].conns, out[n].execs = srv.exec_connections() end
    end
    out.base_name = base_name
    return out
  end

  -- "connections: 1 for 103 execs at 100, ..." (warm-up execs included)
  local function conns_note(m, sizes)
    local parts = {}
    for _, n in ipairs(sizes) do
      if m[n].conns then parts[#parts + 1] = string.format("%d for %d execs at %d", m[n].conns, m[n].execs, n) end
    end
    return #parts > 0 and ("connections the exec calls came in on (probe child): " .. table.concat(parts, ", ")) or ""
  end

  local function fmt_per_ms(ms)
    if ms >= 1 then return string.format("%.2f ms", ms) end
    return string.format("%.0f µs", ms * 1000)
  end

  -- Lines for one kind: a line per size, the growth on the large one.
  local function scale_lines(title, unit, m, sizes, small, large, mem_limit_kib, note)
    local lines = {}
    for _, n in ipairs(sizes) do
      local v = m[n]
      local l = line(string.format("%s, %d %s", title, n, unit), "", "", nil, "", "")
      l.cells = { fmt_ms(v.wall), fmt_per_ms(v.wall / n), fmt_kib(math.max(v.rss, 0)), fmt_kib(math.max(v.rss, 0) / n),
        string.format("%d", v.fds), string.format("%.1f", v.fds / n) }
      if n == large and m[small] then
        local g = (v.wall / n) / (m[small].wall / small)
        local gm = (math.max(v.rss, 1) / n) / (math.max(m[small].rss, 1) / small)
        local ok = g <= 1.2
        local mem_ok = true
        if mem_limit_kib then mem_ok = v.rss / n <= mem_limit_kib end
        local fg = v.floor and m[small].floor and (v.floor / n) / (m[small].floor / small)
        local base = m.base_name or "C floor"
        l.growth = string.format("%.2f× (mem %.2f×%s)", g, gm, fg and string.format(", %s %.2f×", base, fg) or "")
        l.target = mem_limit_kib and string.format("≤ 1.2×; ≤ %d KiB/exec", mem_limit_kib) or "≤ 1.2×"
        l.result = (ok and mem_ok) and "PASS" or "MISS"
        -- Whose growth: the baseline doing the same n at once on the same
        -- machine (and, for the SDK, the same server) grows as much (within
        -- 0.1×), some of it, or not at all (then it is sandkit's own).
        local why = ""
        local whose = base == "C floor" and "the machine's" or "the server's / the machine's"
        if not ok and fg and fg > 1.1 and fg >= g - 0.1 then
          why = string.format("; %s: the %s doing the same %d at once grows %.2f× too (2 cores)", whose, base, n, fg)
        elseif not ok and fg and fg > 1.1 then
          why = string.format("; partly %s: the %s doing the same %d at once grows %.2f×, sandkit %.2f×", whose, base, n,
            fg, g)
        elseif not ok and fg then
          why = string.format("; sandkit's own: the %s doing the same %d at once grows %.2f×", base, n, fg)
        end
        local base_mem = ""
        if v.floor_rss then
          base_mem = string.format("; the %s's peak RSS growth %s per unit (%s at %d)", base,
            fmt_kib(math.max(v.floor_rss, 0) / n), fmt_kib(math.max(m[small].floor_rss or 0, 0) / small), small)
        end
        local base_wall = fg and string.format(" (%s: %s vs %s)", base, fmt_per_ms(v.floor / n),
          fmt_per_ms(m[small].floor / small)) or ""
        l.note = string.format("per-unit wall %s at %d vs %s at %d%s%s; malloc'd in use at the peak %s per unit (Lua heap %s)%s%s",
          fmt_per_ms(v.wall / n), n, fmt_per_ms(m[small].wall / small), small, base_wall, why,
          fmt_kib(math.max(v.heap or 0, 0) / n), fmt_kib(math.max(v.lua or 0, 0) / n), base_mem, note and ("; " .. note) or "")
      else
        l.growth, l.target, l.result = "—", "", "info"
      end
      lines[#lines + 1] = l
    end
    return lines
  end

  local function nofile_note(m, n)
    return m[n] and m[n].nofile and string.format("RLIMIT_NOFILE %d", m[n].nofile) or nil
  end

  M.rows = {}

  M.rows[#M.rows + 1] = {
    id = "scale_local", label = "local exec in flight",
    run = function(ctx)
      local sizes = ctx.quick and { 1, 4, 8 } or { 1, 10, 100, 1000 }
      local small, large = sizes[#sizes - 1], sizes[#sizes]
      local dir = ctx.tmp .. "/scale-local"
      os.execute("mkdir -p " .. H.shell_quote(dir))
      local m = measure("local", sizes, ctx.quick and 1 or 3, function() return dir end,
        function(n) return H.floor_cmd("floor_fanout", { n, 1, 1 }) end)
      return scale_lines("local exec", "in flight", m, sizes, small, large, nil,
        "2 cores: 1000 children of /bin/sh compete with the runner; " .. (nofile_note(m, large) or ""))
    end,
  }

  for _, iso in ipairs({ "none", "bwrap" }) do
    M.rows[#M.rows + 1] = {
      id = "scale_fleet_" .. iso, label = "fleet (" .. iso .. ")",
      run = function(ctx)
        local sizes = ctx.quick and { 2, 4 } or { 100, 1000 }
        if iso == "bwrap" and ctx.sk then
          local ok, sb = pcall(ctx.sk.LocalSandbox, { working_directory = ctx.tmp, isolation = "bwrap" })
          if not ok then
            local lines = {}
            for _, n in ipairs(sizes) do
              lines[#lines + 1] = line(("fleet, bwrap, %d sandboxes"):format(n), "n/a", "n/a", nil, "", "n/a",
                "bwrap unavailable: " .. tostring(sb))
            end
            return lines
          end
        end
        local dir = ctx.tmp .. "/scale-fleet-" .. iso
        os.execute("mkdir -p " .. H.shell_quote(dir))
        local seq = 0
        -- the floor: n of the same command at once (for bwrap, the argv
        -- sandkit runs, read back from inside the sandbox)
        local floor_argv = { "/bin/sh", "-c", "true" }
        if iso == "bwrap" and ctx.sk then
          -- the floor's /tmp: a directory of its own (sandkit's is private)
          os.execute("mkdir -p " .. H.shell_quote(dir .. "/probe") .. " " .. H.shell_quote(dir .. "/floor-tmp"))
          local sb = ctx.sk.LocalSandbox({ working_directory = dir .. "/probe", isolation = "bwrap" })
          assert(sb:start())
          floor_argv = H.bwrap_argv_of(sb, "true", dir .. "/floor-tmp")
          sb:destroy()
        end
        -- none: a round at 100 is about 0.1 s, where the machine's noise
        -- is a fifth of the figure; five rounds make the median hold
        local rounds = ctx.quick and 1 or iso == "none" and 5 or 3
        local m = measure("fleet_" .. iso, sizes, rounds, function()
          seq = seq + 1
          local d = dir .. "/" .. seq
          os.execute("mkdir -p " .. H.shell_quote(d))
          return d
        end, function(n)
          local args = { n, 1, 1, "--" }
          append(args, floor_argv)
          return "cd " .. H.shell_quote(dir) .. " && " .. H.floor_cmd("floor_fanout", args)
        end)
        return scale_lines("fleet, " .. iso, "sandboxes", m, sizes, sizes[1], sizes[2], nil,
          "start + exec(\"true\") + destroy of every member; RSS includes the sandbox objects")
      end,
    }
  end

  M.rows[#M.rows + 1] = {
    id = "scale_platform", label = "platform execs in flight", remote = true,
    run = function(ctx)
      local srv = H.platform_server()
      local ok, res = pcall(function()
        local sizes = ctx.quick and { 4, 8 } or { 100, 1000 }
        local jwt = srv.lease()
        local m = measure("platform", sizes, ctx.quick and 1 or 3, function() return srv.url end,
          function(n) return H.floor_cmd("floor_platform", { "fanout", srv.ws, jwt, 1, 1, n }) end)
        return scale_lines("platform exec", "in flight (one WebSocket each)", m, sizes, sizes[1], sizes[2], 64,
          "client memory per in-flight exec = peak RSS growth / n; " .. (nofile_note(m, sizes[2]) or ""))
      end)
      srv.stop()
      if not ok then error(res, 0) end
      return res
    end,
  }

  M.rows[#M.rows + 1] = {
    id = "scale_modal", label = "modal execs in flight", remote = true,
    run = function(ctx)
      local srv = H.modal_server()
      local ok, res = pcall(function()
        local sizes = ctx.quick and { 4, 8 } or { 100, 500 }
        -- the server runs every command: its rounds spread by a quarter
        local m = measure("modal", sizes, ctx.quick and 1 or 5, function() return srv.url end,
          function(n) return H.sdk_wide_cmd(srv.url, n) end, "SDK", srv)
        return scale_lines("modal exec", "in flight", m, sizes, sizes[1], sizes[2], 64,
          "h2c: streams share connections; SDK = official modal@0.7.6 running the same n at once (Promise.all) against the same server in the same rounds; "
            .. conns_note(m, sizes) .. "; " .. (nofile_note(m, sizes[2]) or ""))
      end)
      srv.stop()
      if not ok then error(res, 0) end
      return res
    end,
  }

  -- As production runs it: TLS, where HTTP/2 streams share connections.
  M.rows[#M.rows + 1] = {
    id = "scale_modal_tls", label = "modal execs in flight over TLS", remote = true,
    run = function(ctx)
      local sizes = ctx.quick and { 4, 8 } or { 100, 500 }
      local dir, cert, key = H.tls_cert()
      if not dir then
        local lines = {}
        for _, n in ipairs(sizes) do
          lines[#lines + 1] = line(("modal exec over TLS, %d in flight"):format(n), "n/a", "n/a", nil, "", "n/a",
            "openssl could not make a certificate")
        end
        return lines
      end
      local srv = H.modal_tls_server(cert, key)
      local ok, res = pcall(function()
        local m = measure("modal_tls", sizes, ctx.quick and 1 or 5, function() return srv.url .. " " .. cert end,
          function(n) return H.sdk_wide_cmd(srv.url, n, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=" .. H.shell_quote(cert)) end,
          "SDK", srv)
        return scale_lines("modal exec over TLS", "in flight", m, sizes, sizes[1], sizes[2], 64,
          "self-signed certificate for 127.0.0.2, trusted through ca_file; streams share connections, at most 96 on one (docs/protocols/event-core.md §5); SDK = official modal@0.7.6, the same n at once, same rounds; "
            .. conns_note(m, sizes))
      end)
      srv.stop()
      H.remove_tree(dir)
      if not ok then error(res, 0) end
      return res
    end,
  }

  M.header = { "row", "wall", "per unit", "peak RSS", "per unit", "fds", "per unit", "growth", "target", "result" }

  function M.cells(l)
    local c = l.cells or { l.sk, l.base, "", "", "", "" }
    return { l.label, c[1], c[2], c[3], c[4], c[5], c[6], l.growth or "—", l.target or "", l.result }
  end

  return M
end
