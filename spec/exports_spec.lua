-- What the built module shows the outside: core.so exports its Lua entry
-- point alone (-fvisibility=hidden, SKL_EXPORT).
local sh = require "helpers.sh"

local function lines(cmd)
  local code, out = sh.run(cmd)
  assert.equal(0, code, out)
  local t = {}
  for l in out:gmatch("[^\n]+") do t[#t + 1] = l end
  return t
end

describe("core.so", function()
  local so = assert(package.searchpath("sandkit.core", package.cpath))

  it("exports luaopen_sandkit_core and nothing else", function()
    local names = {}
    for _, l in ipairs(lines("nm -D --defined-only " .. sh.quote(so))) do names[#names + 1] = l:match("(%S+)$") end
    assert.same({ "luaopen_sandkit_core" }, names)
  end)
end)
