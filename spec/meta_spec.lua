-- docs/sandkit.meta.lua, the LuaLS stub (issue 12, item 12): one class per
-- provider's constructor options that lists every option
-- sandkit.providers() describes, with a matching type, and nothing else;
-- each constructor takes its class; sandkit._VERSION is declared.
local sandkit = require "sandkit"

local STUB = "docs/sandkit.meta.lua"

-- { [class] = { parent = name|nil, fields = { [name] = type } } }, plus the
-- raw text.
local function parse_stub()
  local f = assert(io.open(STUB))
  local text = f:read("a")
  f:close()
  local classes, current = {}, nil
  for line in text:gmatch("[^\n]*") do
    local name, rest = line:match("^%-%-%-@class%s+([%w%._]+)(.*)$")
    if name then
      current = { parent = rest:match("^%s*:%s*([%w%._]+)"), fields = {} }
      classes[name] = current
    else
      local field, ty = line:match("^%-%-%-@field%s+([%w_]+)%??%s+(%S+)")
      if field and current then
        -- a type may contain spaces inside braces or parentheses: take it whole
        local start = line:find(ty, 1, true)
        local depth, i = 0, start
        while i <= #line do
          local c = line:sub(i, i)
          if c == "(" or c == "{" or c == "<" then depth = depth + 1
          elseif c == ")" or c == "}" or c == ">" then depth = depth - 1
          elseif c == " " and depth == 0 then break end
          i = i + 1
        end
        current.fields[field] = line:sub(start, i - 1)
      elseif not line:match("^%-%-%-") then
        current = nil
      end
    end
  end
  return classes, text
end

local function all_fields(classes, name)
  local out, c = {}, classes[name]
  while c do
    for k, v in pairs(c.fields) do if out[k] == nil then out[k] = v end end
    c = c.parent and classes[c.parent]
  end
  return out
end

-- Whether a LuaLS annotation admits a descriptor type name.
local function admits(annotation, name, spec)
  if name == "string" then
    if spec.enum then
      for _, e in ipairs(spec.enum) do
        if not annotation:find('"' .. e .. '"', 1, true) then return false end
      end
      return true
    end
    return annotation:find("%f[%w]string%f[^%w]") ~= nil and not annotation:find("^string%[%]")
  elseif name == "number" or name == "integer" then
    return annotation:find("%f[%w]number%f[^%w]") ~= nil or annotation:find("%f[%w]integer%f[^%w]") ~= nil
  elseif name == "boolean" then
    return annotation:find("boolean", 1, true) ~= nil
  elseif name == "function" then
    return annotation:find("fun(", 1, true) ~= nil or annotation:find("function", 1, true) ~= nil
  elseif name == "env" or name == "map" then
    return annotation:find("table<string,", 1, true) ~= nil
  elseif name == "array" then
    return annotation:find("[]", 1, true) ~= nil
  elseif name == "table" then -- checked by the option's own check: a table or an array of some shape
    return annotation:find("[]", 1, true) ~= nil or annotation:find("table", 1, true) ~= nil
  end
  return false
end

describe("the LuaLS stub", function()
  local classes, text = parse_stub()

  for _, p in ipairs(sandkit.providers()) do
    local class = "sandkit." .. p.name .. "Options"

    it("has " .. class .. " with every option of " .. p.id .. " and its type", function()
      assert.is_table(classes[class], "no ---@class " .. class)
      local fields = all_fields(classes, class)
      local missing, wrong, extra = {}, {}, {}
      for key, spec in pairs(p.options) do
        local annotation = fields[key]
        if not annotation then
          missing[#missing + 1] = key
        else
          for ty in spec.type:gmatch("[^|]+") do
            if not admits(annotation, ty, spec) then
              wrong[#wrong + 1] = ("%s: %s does not admit %s"):format(key, annotation, spec.type)
            end
          end
        end
      end
      for key in pairs(fields) do
        if not p.options[key] then extra[#extra + 1] = key end
      end
      table.sort(missing)
      table.sort(extra)
      assert.are.same({}, missing, class .. " lacks options")
      assert.are.same({}, wrong)
      assert.are.same({}, extra, class .. " has fields that are not options")
    end)

    it("types the opts of sandkit." .. p.name .. " as " .. class, function()
      local pat = "%-%-%-@param opts%? " .. class:gsub("%.", "%%.") .. "\n%-%-%-@return sandkit%.Sandbox\nfunction sandkit%." .. p.name .. "%(opts%)"
      assert.truthy(text:find(pat), "sandkit." .. p.name .. "'s opts are not annotated as " .. class)
    end)
  end

  it("says each field's default once", function()
    for line in text:gmatch("[^\n]+") do
      if line:match("^%-%-%-@field") then
        local _, n = line:gsub("default_instructions", ""):gsub("%f[%w][Dd]efault%f[^%w_]", "")
        assert.is_true(n <= 1, line)
      end
    end
  end)

  it("declares sandkit._VERSION and _NAME", function()
    assert.is_table(classes.sandkit)
    assert.are.equal("string", classes.sandkit.fields._VERSION)
    assert.is_string(classes.sandkit.fields._NAME)
  end)

  it("is valid Lua that returns the module table", function()
    local chunk = assert(loadfile(STUB, "t", {}))
    assert.is_table(chunk())
  end)
end)
