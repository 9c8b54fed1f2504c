-- The state directory: one directory per container under <state>/containers/<id>
-- holding config.json (Apple's ContainerConfiguration), emu.json (what only the
-- emulator needs), state.json (status and the init's pids) and rootfs/.
-- Named volumes live in <state>/volumes/<name>.

local cjson = require("cjson.safe")
local host = require("host")
local runtime = require("runtime")

local M = {}

local ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.%-]+$"

function M.valid_id(id)
  return type(id) == "string" and id:match(ID_PATTERN) ~= nil and #id <= 63
end

function M.new(state_dir)
  local self = setmetatable({ root = state_dir }, { __index = M })
  self.containers = state_dir .. "/containers"
  self.volumes = state_dir .. "/volumes"
  return self
end

function M:ensure()
  if not host.is_dir(self.containers) then host.mkdir_p(self.containers, "700") end
end

function M:dir(id)
  return self.containers .. "/" .. id
end

function M:next_seq()
  local path = self.root .. "/.seq"
  local n = tonumber(host.read_file(path) or "0") or 0
  n = n + 1
  host.write_file(path, tostring(n))
  return n
end

local function read_json(path)
  local text = host.read_file(path)
  if not text then return nil end
  return cjson.decode(text)
end

-- Loads a container and brings its recorded status up to date with reality:
-- a container whose init has exited is stopped (and removed if it was --rm).
function M:load(id)
  if not M.valid_id(id) then return nil end
  local dir = self:dir(id)
  local cfg = read_json(dir .. "/config.json")
  if not cfg then return nil end
  local c = {
    id = id, dir = dir, cfg = cfg,
    emu = read_json(dir .. "/emu.json") or {},
    st = M.decode_state(host.read_file(dir .. "/state.json")),
  }
  if c.st.status ~= "stopped" and not runtime.alive(c.st) then
    c.st = { status = "stopped" }
    self:save_state(c)
  end
  if c.st.status == "stopped" and c.emu.auto_remove and c.emu.started_once then
    host.remove_tree(dir)
    return nil
  end
  return c
end

-- JSON numbers come back as floats; pids must be integers again.
function M.decode_state(text)
  local st = text and cjson.decode(text) or { status = "stopped" }
  st.pid = math.tointeger(st.pid)
  st.monitor = math.tointeger(st.monitor)
  st.status = st.status or "stopped"
  return st
end

function M:save_state(c)
  host.write_file(c.dir .. "/state.json", cjson.encode(c.st))
end

function M:save_emu(c)
  host.write_file(c.dir .. "/emu.json", cjson.encode(c.emu))
end

function M:save_config(c)
  host.write_file(c.dir .. "/config.json", cjson.encode(c.cfg))
end

-- Creates the directory atomically; false when the id is taken.
function M:create_dir(id)
  self:ensure()
  return host.run({ "mkdir", "-m", "700", "--", self:dir(id) })
end

-- Only ever a direct child of <state>/containers.
function M:remove(c)
  local name = c.dir:sub(#self.containers + 2)
  if c.dir:sub(1, #self.containers + 1) ~= self.containers .. "/" or name == "" or name:find("/", 1, true)
    or name == "." or name == ".." then
    error("refusing to remove " .. c.dir, 0)
  end
  return host.remove_tree(c.dir)
end

-- Every container, in creation order.
function M:all()
  local list = {}
  if not host.is_dir(self.containers) then return list end
  for _, name in ipairs(host.list_dir(self.containers)) do
    local c = self:load(name)
    if c then list[#list + 1] = c end
  end
  table.sort(list, function(a, b) return (a.emu.seq or 0) < (b.emu.seq or 0) end)
  return list
end

function M:volume_path(name)
  local path = self.volumes .. "/" .. name
  if not host.is_dir(path) then host.mkdir_p(path, "755") end
  return path
end

return M
