-- bench/docker.lua: DockerSandbox rows (issue 24), loaded by run.lua with
-- its helpers; returns { rows = ..., scale_rows = ... }. Everything runs on
-- one private Podman service that the rows start themselves (the specs'
-- spec/helpers/podman.lua), measured in the same run:
--   - exec latency: sandkit's sb:exec("true") against floor_docker.c (the
--     same Engine API calls from C over the socket, blocking, nothing else)
--     and against upstream's DockerSandbox (@mastra/docker 0.3.0, dockerode,
--     spec/servers/docker/upstream.mjs) on its own container;
--   - client CPU per exec: getrusage against Node's process.cpuUsage();
--   - a fleet of 20 containers started, exec'd and destroyed:
--     sandkit.fleet against upstream's Promise.all;
--   - (--scale) fleets of 10 and 100 containers in flight.
return function(H)
  local M = { rows = {}, scale_rows = {} }
  local line, median, fmt_ms, shell_quote = H.line, H.median, H.fmt_ms, H.shell_quote
  local ROOT = H.ROOT
  local UPSTREAM_DIR = ROOT .. "/spec/servers/docker"
  package.path = ROOT .. "/spec/?.lua;" .. package.path

  -- nil when the rows can run, else why not
  local function missing()
    local ok, podman = pcall(require, "helpers.podman")
    if not ok then return "spec/helpers/podman.lua: " .. tostring(podman) end
    local avail, why = podman.available()
    if not avail then return why end
    return nil
  end

  local function upstream_missing()
    local f = io.open(UPSTREAM_DIR .. "/node_modules/@mastra/docker/package.json", "r")
    if not f then return "@mastra/docker not installed (make npm-deps)" end
    f:close()
  end

  local function upstream(env, req)
    req.image = req.image or require("helpers.podman").IMAGE
    local json = H.json_encode(req)
    return H.run_json(("cd %s && node upstream.mjs %s %s"):format(shell_quote(UPSTREAM_DIR), shell_quote(env.socket),
      shell_quote(json)))
  end

  local function with_env(fn)
    local env = require("helpers.podman").new()
    local ok, res = pcall(fn, env)
    env:teardown()
    if not ok then error(res, 0) end
    return res
  end

  local function pending_lines(labels, why)
    local out = {}
    for _, l in ipairs(labels) do
      out[#out + 1] = line(l[1], "pending", "pending", nil, l[2], "pending", why)
    end
    return out
  end

  local EXEC_LABELS = { { "docker exec latency", "≤ 1.15×" }, { "  vs upstream DockerSandbox, exec", "faster" },
    { "client CPU per exec, docker", "≤ 0.3×" } }

  M.rows[#M.rows + 1] = {
    id = "docker_exec", label = "docker exec latency", target = "≤ 1.15×", remote = true,
    run = function(ctx)
      local why = missing() or (not ctx.sk and "sandkit not loadable")
      if why then return pending_lines(EXEC_LABELS, why) end
      local no_up = upstream_missing()
      return with_env(function(env)
        local rounds, per = ctx.quick and 2 or 6, ctx.quick and 3 or 20
        local sb = ctx.sk.DockerSandbox({ docker_host = env.docker_host, image = require("helpers.podman").IMAGE })
        assert(sb:start())
        local cid = assert(sb:info()).metadata.container_id
        local version = env:api("GET", "/version"):match('"ApiVersion":"([%d.]+)"')
        for _ = 1, 2 do assert(sb:exec("true")) end
        local base, sk, up, sk_cpu, base_cpu, up_cpu = {}, {}, {}, {}, {}, {}
        local up_id = "bench-upstream-" .. tostring(math.floor(H.now() * 1000))
        for r = 1, rounds do
          local function run_base()
            local res = H.run_json(H.floor_cmd("floor_docker", { env.socket, version, cid, per, "true" }))
            H.append(base, res.samples_us)
            base_cpu[#base_cpu + 1] = res.cpu_us / per
          end
          local function run_sk()
            local c0 = H.cpu_seconds()
            for _ = 1, per do
              local t0 = H.now()
              local res = assert(sb:exec("true"))
              assert(res.exit_code == 0, "exec failed")
              sk[#sk + 1] = (H.now() - t0) * 1e6
            end
            sk_cpu[#sk_cpu + 1] = (H.cpu_seconds() - c0) * 1e6 / per
          end
          local function run_up()
            if no_up then return end
            local res = upstream(env, { id = up_id, op = "bench", n = per, command = "true" })
            for _, ms in ipairs(res.ms) do up[#up + 1] = ms * 1000 end
            up_cpu[#up_cpu + 1] = res.cpuUs / per
          end
          if r % 2 == 1 then run_base(); run_sk(); run_up() else run_up(); run_sk(); run_base() end
        end
        assert(sb:destroy())
        if not no_up then upstream(env, { id = up_id, op = "destroy" }) end
        local out = { H.compare(string.format("docker exec latency (n=%d)", #base), sk, base, H.fmt_us, 1.15,
          "the same API calls from C over the socket (bench/floor_docker.c); Podman's exec dominates both") }
        if no_up then
          out[#out + 1] = line(EXEC_LABELS[2][1], H.fmt_us(median(sk)), "pending", nil, "faster", "pending", no_up)
          out[#out + 1] = line(EXEC_LABELS[3][1], "pending", "pending", nil, "≤ 0.3×", "pending", no_up)
          return out
        end
        local mu, ms = median(up), median(sk)
        local l = line(EXEC_LABELS[2][1], H.fmt_us(ms), H.fmt_us(mu), mu / ms, "≥ 1× faster", mu / ms >= 1 and "PASS" or "MISS",
          string.format("@mastra/docker 0.3.0's executeCommand('true') on Node (dockerode), same service; the C floor is %.2f× faster than it",
            mu / median(base)))
        l.ratio_suffix = "× faster"
        out[#out + 1] = l
        local sc, uc = median(sk_cpu), median(up_cpu)
        out[#out + 1] = line(EXEC_LABELS[3][1], H.fmt_us(sc), H.fmt_us(uc), sc / uc, "≤ 0.3×", sc / uc <= 0.3 and "PASS" or "MISS",
          string.format("user + system CPU of the client per exec: sandkit (getrusage) vs Node (process.cpuUsage); the C floor %s",
            H.fmt_us(median(base_cpu))))
        return out
      end)
    end,
  }

  -- n containers started, each running `true`, destroyed; wall in ms.
  local function sk_fleet(sk, env, n)
    local tpl = sk.DockerSandbox({ docker_host = env.docker_host, image = require("helpers.podman").IMAGE })
    local t0 = H.now()
    local fl = assert(sk.fleet(tpl, n))
    local results = assert(fl:exec("true"))
    for i = 1, n do assert(results[i] and results[i].exit_code == 0, "fleet exec failed") end
    assert(fl:destroy())
    return (H.now() - t0) * 1000
  end

  local function up_fleet(env, n)
    return upstream(env, { op = "fleet", n = n, command = "true" }).wallMs
  end

  M.rows[#M.rows + 1] = {
    id = "docker_fleet", label = "docker fleet", target = "≤ 1×", remote = true,
    run = function(ctx)
      local n = ctx.quick and 3 or 20
      local label = string.format("docker fleet of %d: start, exec, destroy", n)
      local why = missing() or (not ctx.sk and "sandkit not loadable") or upstream_missing()
      if why then return pending_lines({ { label, "≤ 1×" } }, why) end
      return with_env(function(env)
        local rounds = ctx.quick and 1 or 3
        local sk, up = {}, {}
        for r = 1, rounds do
          if r % 2 == 1 then sk[#sk + 1] = sk_fleet(ctx.sk, env, n); up[#up + 1] = up_fleet(env, n)
          else up[#up + 1] = up_fleet(env, n); sk[#sk + 1] = sk_fleet(ctx.sk, env, n) end
        end
        return { H.compare_paired(label, sk, up, fmt_ms, 1,
          "baseline: upstream's DockerSandbox, n instances started with Promise.all, executeCommand('true') each, destroyed with Promise.all") }
      end)
    end,
  }

  M.scale_rows[#M.scale_rows + 1] = {
    id = "scale_docker", label = "docker containers in flight", remote = true,
    run = function(ctx)
      local sizes = ctx.quick and { 2, 4 } or { 10, 100 }
      local why = missing() or (not ctx.sk and "sandkit not loadable")
      if why then
        local out = {}
        for _, n in ipairs(sizes) do
          out[#out + 1] = line(string.format("docker fleet, %d containers", n), "pending", "pending", nil, "", "pending", why)
        end
        return out
      end
      return with_env(function(env)
        local m = {}
        for _, n in ipairs(sizes) do
          local rss0 = H.proc_status_kb("VmRSS")
          H.reset_peak_rss()
          local fds0 = H.open_fds()
          local wall = sk_fleet(ctx.sk, env, n)
          m[n] = { wall = wall, rss = H.proc_status_kb("VmHWM") - rss0, fds = H.open_fds() - fds0 }
          if not upstream_missing() then m[n].up = up_fleet(env, n) end
        end
        local out = {}
        local small, large = sizes[1], sizes[#sizes]
        for _, n in ipairs(sizes) do
          local v = m[n]
          local l = line(string.format("docker fleet, %d containers", n), "", "", nil, "", "info")
          l.cells = { fmt_ms(v.wall), fmt_ms(v.wall / n), H.fmt_kib(math.max(v.rss, 0)), H.fmt_kib(math.max(v.rss, 0) / n),
            string.format("%d", v.fds), string.format("%.1f", v.fds / n) }
          if n == large then
            local g = (v.wall / n) / (m[small].wall / small)
            local ug = v.up and m[small].up and (v.up / n) / (m[small].up / small)
            l.growth = string.format("%.2f×%s", g, ug and string.format(" (upstream %.2f×)", ug) or "")
            l.target = "≤ 1.2×"
            l.result = g <= 1.2 and "PASS" or "MISS"
            l.note = string.format("each container started, exec'd (true) and destroyed by sandkit.fleet on the bench's Podman service; "
              .. "per-unit wall is Podman's work (2 cores)%s", ug and string.format("; upstream's Promise.all: %s per container at %d, %s at %d",
                fmt_ms(v.up / n), n, fmt_ms(m[small].up / small), small) or "")
          end
          out[#out + 1] = l
        end
        return out
      end)
    end,
  }

  return M
end
