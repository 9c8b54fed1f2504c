-- Host helpers for a Lua without POSIX bindings: shell quoting, small commands
-- through the shell, files, and process liveness read from /proc.

local M = {}

-- One shell word, single-quoted unless made only of safe characters.
function M.quote(s)
  s = tostring(s)
  if s ~= "" and not s:find("[^%w%._/=:@,+%-]") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

function M.quote_all(list)
  local out = {}
  for i, w in ipairs(list) do out[i] = M.quote(w) end
  return table.concat(out, " ")
end

-- Runs argv (a list) through /bin/sh with stdin from /dev/null; true on exit 0.
function M.run(argv, redirect)
  local ok = os.execute(M.quote_all(argv) .. " </dev/null " .. (redirect or ">/dev/null 2>&1"))
  return ok == true
end

-- Runs argv and returns its stdout (stderr discarded), and whether it exited 0.
function M.capture(argv)
  local f = io.popen(M.quote_all(argv) .. " </dev/null 2>/dev/null", "r")
  local out = f:read("a")
  local ok = f:close()
  return out, ok == true
end

function M.sleep(seconds)
  os.execute("sleep " .. string.format("%.3f", seconds))
end

function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- Written to a temporary name then renamed, so readers never see half a file.
function M.write_file(path, data)
  local tmp = path .. ".tmp" .. tostring(math.random(1, 1 << 30))
  local f = assert(io.open(tmp, "wb"))
  f:write(data)
  f:close()
  assert(os.rename(tmp, path))
end

function M.append_file(path, data)
  local f = io.open(path, "ab")
  if not f then return false end
  f:setvbuf("full", 1 << 20)
  f:write(data)
  f:close()
  return true
end

function M.exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

-- fopen() of "dir/." succeeds only for a directory.
function M.is_dir(path)
  return M.exists(path .. "/.")
end

function M.mkdir_p(path, mode)
  return M.run({ "mkdir", "-p", "-m", mode or "755", "--", path })
end

function M.remove_tree(path)
  return M.run({ "rm", "-rf", "--", path })
end

function M.list_dir(path)
  local out = M.capture({ "ls", "-1A", "--", path })
  local names = {}
  for line in out:gmatch("[^\n]+") do names[#names + 1] = line end
  table.sort(names)
  return names
end

-- /proc/<pid>/stat fields after "comm": state, then starttime at index 20.
local function stat_fields(pid)
  local s = M.read_file("/proc/" .. tostring(pid) .. "/stat")
  if not s then return nil end
  local rest = s:match("^%d+ %(.*%) (.*)$")
  if not rest then return nil end
  local fields = {}
  for w in rest:gmatch("%S+") do fields[#fields + 1] = w end
  return fields
end

function M.start_time(pid)
  local f = stat_fields(pid)
  return f and f[20]
end

-- Alive = exists, is not a zombie, and (when given) started at the recorded time,
-- so a recycled pid never passes for the container.
function M.alive(pid, start_time)
  if not pid then return false end
  local f = stat_fields(pid)
  if not f then return false end
  if f[1] == "Z" or f[1] == "X" then return false end
  if start_time and f[20] ~= start_time then return false end
  return true
end

function M.children(pid)
  local out = M.capture({ "pgrep", "-P", tostring(pid) })
  local pids = {}
  for p in out:gmatch("%d+") do pids[#pids + 1] = tonumber(p) end
  table.sort(pids)
  return pids
end

function M.kill(pid, signal)
  return M.run({ "kill", "-s", signal, tostring(pid) })
end

-- Polls until fn() is true or the deadline (seconds) passes; returns fn()'s result.
function M.wait_until(fn, seconds, step)
  local spent, step_s = 0, step or 0.02
  while true do
    if fn() then return true end
    if spent >= seconds then return false end
    M.sleep(step_s)
    spent = spent + step_s
  end
end

function M.utc_now()
  return os.date("!%Y-%m-%dT%H:%M:%SZ")
end

function M.uuid()
  local s = M.read_file("/proc/sys/kernel/random/uuid")
  return s and s:gsub("%s+", "") or string.format("%08x-0000-4000-8000-%012x", os.time(), math.random(0, 1 << 40))
end

function M.sha256_hex(s)
  local f = io.popen("printf '%s' " .. M.quote(s) .. " | sha256sum", "r")
  local out = f:read("a")
  f:close()
  return out:match("^(%x+)") or string.rep("0", 64)
end

return M
