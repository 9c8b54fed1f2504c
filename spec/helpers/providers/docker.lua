--- DockerSandbox's test kit (helpers.provider_kits): the specs' private
-- Podman service (helpers.podman).
local podman = require "helpers.podman"

return {
  -- constructing does no I/O; the socket is one nobody serves
  offline_options = function() return { docker_host = "unix:///nonexistent/docker.sock" } end,
  secrets = {
    {
      id = "docker", name = "DockerSandbox options",
      available = function() return podman.available() end,
      setup = function() return podman.new() end,
      options = function(c, pd) return { docker_host = pd.docker_host, image = podman.IMAGE, env = { SK_SECRET = c.env } } end,
      bad = function(c) return { docker_host = "unix:///nonexistent/docker.sock", env = { SK_SECRET = c.env } } end,
      secrets = function(c) return { c.env, c.cmd_env } end,
      teardown = function(pd) pd:teardown() end,
    },
  },
  -- README's DockerSandbox block: the service's busybox image, also named as
  -- upstream's default image (nothing is pulled); without Podman, a socket
  -- nobody serves (the block then fails, naming DOCKER_HOST)
  readme = function()
    if not podman.available() then return { vars = { DOCKER_HOST = "unix:///nonexistent/podman-not-installed.sock" } } end
    local pd = podman.new()
    local out, code = pd:run("tag " .. podman.IMAGE .. " docker.io/library/node:22-slim")
    assert(code == 0, out)
    return { vars = { DOCKER_HOST = pd.docker_host }, teardown = function() pd:teardown() end }
  end,
}
