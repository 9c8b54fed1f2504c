-- The conformance suite against LocalSandbox, with and without bubblewrap.
local sandkit = require "sandkit"
local suite = require "conformance.suite"

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p " .. p))
  return p
end

for _, isolation in ipairs({ "none", "bwrap" }) do
  local dirs = {}
  suite({
    provider = "local",
    name = "LocalSandbox (isolation " .. isolation .. ")",
    create_sandbox = function(opts)
      local dir = tmpdir()
      dirs[#dirs + 1] = dir
      return sandkit.LocalSandbox { working_directory = dir, isolation = isolation,
        env = opts and opts.env, timeout = 30000 }
    end,
    create_invalid_sandbox = function()
      -- /proc refuses mkdir: start must fail cleanly
      return sandkit.LocalSandbox { working_directory = "/proc/sandkit-invalid/ws", isolation = isolation }
    end,
    cleanup = function(sb)
      sb:destroy()
      for _, d in ipairs(dirs) do os.execute("rm -rf " .. d) end
    end,
  }, _ENV)
end
