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

function M.cleanup()
  for _, d in ipairs(made) do os.execute("rm -rf '" .. d .. "'") end
  made = {}
end

return M
