--- Temporary directories for specs, removed by cleanup().
local M = {}
local made = {}

function M.dir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p '" .. p .. "'"))
  made[#made + 1] = p
  return p
end

--- A fresh directory of mode 0700 (mktemp -d), left for the caller to
-- remove.
function M.mktemp()
  local d = require("helpers.sh").capture("mktemp -d"):gsub("\n$", "")
  return assert(d ~= "" and d, "mktemp -d failed")
end

function M.cleanup()
  for _, d in ipairs(made) do os.execute("rm -rf '" .. d .. "'") end
  made = {}
end

return M
