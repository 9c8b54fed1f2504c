-- What the built module shows the outside: core.so exports its Lua entry
-- point alone (-fvisibility=hidden, SKL_EXPORT), and every external symbol
-- the C core defines for its other files is sk_-prefixed (the static
-- library the C tests link holds them all).
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
  local lib = so:gsub("sandkit/core%.so$", "libsandkit_core.a")

  it("exports luaopen_sandkit_core and nothing else", function()
    local names = {}
    for _, l in ipairs(lines("nm -D --defined-only " .. sh.quote(so))) do names[#names + 1] = l:match("(%S+)$") end
    assert.same({ "luaopen_sandkit_core" }, names)
  end)

  it("has a core whose external symbols are all sk_-prefixed", function()
    local f = io.open(lib)
    if not f then pending("no " .. lib .. " beside core.so") return end
    f:close()
    local bad = {}
    for _, l in ipairs(lines("nm -g --defined-only " .. sh.quote(lib))) do
      local kind, name = l:match("^%x+ (%a) (%S+)$")
      -- "__" names are the compiler's (ASan's __odr_asan.<global>)
      if name and not name:match("^sk_") and not name:match("^__") then bad[#bad + 1] = kind .. " " .. name end
    end
    table.sort(bad)
    assert.same({}, bad)
  end)
end)
