-- The filesystem conformance suite against LocalFilesystem (openat2 and the
-- fallback walk) and sb.fs of LocalSandbox (with and without bubblewrap).
local sandkit = require "sandkit"
local core = require "sandkit.core"
local tmp = require "helpers.tmp"
local suite = require "conformance.fs_suite"

local function symlinker(base)
  return function(link, target)
    assert(os.execute(("ln -s '%s' '%s/%s'"):format(target, base, link)))
  end
end

for _, mode in ipairs({ "openat2", "fallback" }) do
  local base, outside
  suite({
    name = "LocalFilesystem (" .. mode .. ")",
    create = function()
      core.fs_force_fallback(mode == "fallback")
      base, outside = tmp.dir() .. "/ws", tmp.dir()
      return sandkit.LocalFilesystem { base_path = base }
    end,
    create_read_only = function() return sandkit.LocalFilesystem { base_path = base, read_only = true } end,
    cleanup = function()
      core.fs_force_fallback(false)
      tmp.cleanup()
    end,
    escapes = {
      symlink = function(link, target) symlinker(base)(link, target) end,
      outside_dir = function() return outside end,
    },
    big = mode == "openat2",
  }, _ENV)
end

for _, isolation in ipairs({ "none", "bwrap" }) do
  local sb, outside
  suite({
    name = "LocalSandbox sb.fs (isolation " .. isolation .. ")",
    create = function()
      outside = tmp.dir()
      sb = sandkit.LocalSandbox { working_directory = tmp.dir() .. "/ws", isolation = isolation }
      assert(sb:start())
      return sb.fs
    end,
    cleanup = function()
      sb:destroy()
      tmp.cleanup()
    end,
    escapes = {
      symlink = function(link, target)
        assert(sb:exec("ln -s " .. sandkit.quote(target) .. " " .. sandkit.quote(link)).success)
      end,
      outside_dir = function() return outside end,
    },
  }, _ENV)
end
