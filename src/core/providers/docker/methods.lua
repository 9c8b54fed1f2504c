--- DockerSandbox's methods beyond upstream's 0.3.0
-- (docs/protocols/docker.md §8): sb:get_port_url(port), upstream's newer SandboxNetworking.getPortUrl
-- over the ports the `ports` option published, and sb:snapshot(), the
-- container committed to an image that a clone or a new DockerSandbox
-- starts from. Each is one Engine API call through the sandbox's own client
-- (the provider's `calls` in docker_methods.c, reached as every provider's
-- own operations are: core.ops_open(sb, "calls") / core.ops_call). The
-- descriptor lists them under `methods`.
local compat = require "sandkit.compat"
local core = require "sandkit.core"
local errors = require "sandkit.errors"
local ops = require "sandkit.ops"
local options = require "sandkit.options"

local M = {}

local SNAPSHOT_REPO = "localhost/sandkit-snapshot"
-- A commit copies the container's filesystem: minutes for a large one.
local COMMIT_TIMEOUT_MS = 10 * 60000

-- One call: status, decoded body (or the raw text); or nil, err.
local function call(sb, req)
  local status, body
  -- opened for the call: opening costs nothing (docker_methods.c), and a
  -- cache keyed by the sandbox would keep it alive under Lua 5.1, whose
  -- weak keys do not let go of a value that refers to its key
  local rec, err = ops.call(function() return core.ops_open(sb, "calls") end, req, nil,
    function(_, head) status = tonumber(head) end, function(_, data) body = data end)
  if not rec then return nil, err end
  local doc = body and body ~= "" and core.json_decode(body)
  return status, doc or body
end

local function destroyed(sb)
  return errors.new("SandboxNotReadyError", ("Sandbox '%s' has been destroyed"):format(sb.id), { sandbox_id = sb.id })
end

local function check_port(fname, port)
  port = compat.tointeger(port)
  if not port or port < 1 or port > 65535 then
    errors.misuse(("bad argument #1 to '%s' (port number 1-65535 expected)"):format(fname))
  end
  return port
end

-- The host part of a URL for a binding's HostIp: an unspecified address
-- means every interface of the daemon's machine (this one for a unix
-- socket, the tcp:// host otherwise).
local function url_host(ip, opts)
  if ip == nil or ip == "" or ip == "0.0.0.0" or ip == "::" then
    local dh = opts.docker_host or os.getenv("DOCKER_HOST") or ""
    local h = dh:match("^tcp://%[([^%]]+)%]") or dh:match("^tcp://([^:/]+)")
    if h then return h:find(":", 1, true) and "[" .. h .. "]" or h end
    return ip == "::" and "[::1]" or "127.0.0.1"
  end
  if ip:find(":", 1, true) then return "[" .. ip .. "]" end
  return ip
end

--- The URL of a container port published by the `ports` option
-- ("http://127.0.0.1:49153"), or nil when the port is not published or the
-- sandbox is not running (upstream's contract: null); nil, err when the
-- daemon cannot say.
function M.get_port_url(sb, opts, port)
  port = check_port("get_port_url", port)
  if sb.status ~= "running" then return nil end
  local status, doc = call(sb, { method = "GET", path = "/containers/{container}/json", ok = { 200, 404 },
    what = "Inspecting the Docker container" })
  if not status then return nil, doc end
  if status == 404 or type(doc) ~= "table" then return nil end
  local ports = type(doc.NetworkSettings) == "table" and doc.NetworkSettings.Ports
  local list = type(ports) == "table" and ports[port .. "/tcp"]
  if type(list) ~= "table" then return nil end
  for _, b in ipairs(list) do
    local hp = type(b) == "table" and compat.tointeger(tonumber(b.HostPort))
    if hp and hp > 0 and hp <= 65535 then
      return ("http://%s:%d"):format(url_host(type(b.HostIp) == "string" and b.HostIp or nil, opts), hp)
    end
  end
  return nil
end

-- A tag from the sandbox id: [A-Za-z0-9_.-], a first character that is
-- not '.' or '-', at most 128 characters with the time that tells
-- snapshots apart.
local function default_tag(id)
  local stamp = "-" .. ("%x"):format(math.floor(core.now() * 1000))
  local base = id:gsub("[^%w_.-]", "-"):gsub("^[.-]", "_")
  return base:sub(1, 128 - #stamp) .. stamp
end

local function snapshot_opts(o)
  if o == nil then return {} end
  if type(o) ~= "table" then errors.misuse("bad argument #1 to 'snapshot' (options table expected, got " .. type(o) .. ")") end
  for k, v in pairs(o) do
    if k ~= "image" then errors.misuse(("bad argument #1 to 'snapshot' (unknown option '%s')"):format(options.shown(k))) end
    if type(v) ~= "string" or v == "" or v:find("\0", 1, true) then
      errors.misuse("bad argument #1 to 'snapshot' (option 'image' must be a non-empty string)")
    end
  end
  return o
end

-- dockerode's parseRepoTag, as the image option is read: repo and tag.
local function split_image(image)
  local at = image:find("@[^@]*$")
  if at then return image:sub(1, at - 1), image:sub(at + 1) end
  local repo, tag = image:match("^(.*):([^:/]+)$")
  if repo then return repo, tag end
  return image, "latest"
end

local function escape(s)
  return (s:gsub("[^%w%-._~]", function(c) return ("%%%02X"):format(c:byte()) end))
end

--- Commits the container (running or stopped) to an image and returns its
-- name ("localhost/sandkit-snapshot:<id>-<time>", or opts.image), which
-- sb:clone{ image = name } or a new DockerSandbox starts from. The image
-- holds what the container's config holds, its env included (as `docker
-- commit`); it is labelled sandkit.snapshot.of=<sandbox id>.
function M.snapshot(sb, _, o)
  o = snapshot_opts(o)
  local s = sb.status
  if s == "destroyed" or s == "destroying" then return nil, destroyed(sb) end
  local image = o.image or (SNAPSHOT_REPO .. ":" .. default_tag(sb.id))
  local repo, tag = split_image(image)
  local status, doc = call(sb, {
    method = "POST",
    -- the label as a Dockerfile instruction: Podman ignores the body's Labels
    path = ("/commit?container={container}&repo=%s&tag=%s&pause=true&changes=%s"):format(escape(repo), escape(tag),
      escape(("LABEL sandkit.snapshot.of=\"%s\""):format(sb.id:gsub("[\\\"]", "\\%0")))),
    body = {}, -- Podman's compatible API wants one
    ok = { 200, 201 }, what = "Committing the Docker container", timeout_ms = COMMIT_TIMEOUT_MS })
  if not status then return nil, doc end
  if type(doc) ~= "table" or type(doc.Id) ~= "string" then
    return nil, errors.new("DockerApiError", "Committing the Docker container: the answer has no image Id",
      { sandbox_id = sb.id, status = status })
  end
  return image
end

return M
