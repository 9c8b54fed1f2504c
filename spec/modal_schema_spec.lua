-- One schema, pinned: the C client's Modal types and field tables are
-- generated from src/core/providers/modal/third_party/modal.proto (tools/modal_gen.lua),
-- the file the reference server loads; the golden bytes in
-- spec/c/modal_goldens.txt, which the C encoders must produce
-- (spec/c/modal_msg_test.c), each carry the protoc text they encode. Here
-- protoc encodes every text with modal.proto: each request must come out byte
-- for byte, so a field number or type changed in the schema alone fails here.

local ROOT = os.getenv("R") or "."
local GOLDENS = ROOT .. "/spec/c/modal_goldens.txt"
local PROTO_DIR = ROOT .. "/src/core/providers/modal/third_party"

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local function find_protoc()
  for _, name in ipairs({ "protoc", "protoc-c" }) do
    local p = io.popen("command -v " .. name .. " 2>/dev/null")
    local path = p:read("l")
    p:close()
    if path and path ~= "" then return path end
  end
end

local read_file = require("helpers.files").must_read

-- { type, text, name, bytes } for every golden.
local function goldens()
  local out = {}
  for line in read_file(GOLDENS):gmatch("[^\n]+") do
    local name, typ, hex, text = line:match("^([%w_]+) ([%w_]+) (%S+) | ?(.*)$")
    if name then
      local bytes = hex == "-" and "" or hex:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)
      out[#out + 1] = { type = typ, text = text, name = name, bytes = bytes }
    end
  end
  return out
end

-- protoc's encoding of text as modal.client.<typ>; nil and the error if
-- the text does not parse with modal.proto.
local function protoc_encode(protoc, typ, text)
  local input, output, errors = os.tmpname(), os.tmpname(), os.tmpname()
  local f = assert(io.open(input, "wb"))
  f:write(text)
  f:close()
  local cmd = table.concat({
    shell_quote(protoc), "--deterministic_output", "--encode=modal.client." .. typ,
    "-I", shell_quote(PROTO_DIR), "modal.proto",
    "<", shell_quote(input), ">", shell_quote(output), "2>", shell_quote(errors),
  }, " ")
  local ok = os.execute(cmd)
  local bytes, err = read_file(output), read_file(errors)
  os.remove(input)
  os.remove(output)
  os.remove(errors)
  if not ok then return nil, err end
  return bytes
end

local function hex(s)
  return (s:gsub(".", function(c) return string.format("%02x ", c:byte()) end))
end

describe("modal.proto and the C codec", function()
  local protoc = find_protoc()
  local list = goldens()

  it("spec/c/modal_goldens.txt has request and response goldens with their text inputs", function()
    local requests = 0
    for _, g in ipairs(list) do
      if g.type:match("Request$") then requests = requests + 1 end
    end
    assert.is_true(requests >= 20, "request goldens found: " .. requests)
    assert.is_true(#list - requests >= 15, "response goldens found: " .. (#list - requests))
  end)

  it("the build's tables come from modal.proto: a changed field number changes the generated row", function()
    local gen = dofile(ROOT .. "/tools/modal_gen.lua")
    local proto = read_file(PROTO_DIR .. "/modal.proto")
    local function app_name_row(text)
      return gen.generate(gen.parse(text), "modal.proto"):match("\n    {(%d+), [^\n]*app_get_or_create_request, app_name%)")
    end
    assert.equal("1", app_name_row(proto))
    local changed = proto:gsub("(message AppGetOrCreateRequest {%s*string app_name = )1;", "%19;")
    assert.equal("9", app_name_row(changed))
  end)

  if not protoc then
    pending("protoc is not installed (Debian: protobuf-compiler): the goldens are not re-encoded")
    return
  end

  it("protoc encodes every request golden's text to the same bytes with modal.proto", function()
    local checked = 0
    for _, g in ipairs(list) do
      if g.type:match("Request$") then
        local bytes, err = protoc_encode(protoc, g.type, g.text)
        assert.is_not_nil(bytes, g.name .. " (" .. g.type .. ") does not parse with modal.proto: " .. tostring(err))
        assert.are.equal(hex(g.bytes), hex(bytes), g.name .. " (" .. g.type .. ")")
        checked = checked + 1
      end
    end
    assert.is_true(checked >= 20)
  end)

  it("every response golden that uses only modal.proto's fields is protoc's bytes for it", function()
    -- The others carry upstream fields the trimmed schema leaves out, which
    -- the decoders must skip; they must fail to parse for that reason only.
    local same = 0
    for _, g in ipairs(list) do
      if not g.type:match("Request$") then
        local bytes, err = protoc_encode(protoc, g.type, g.text)
        if bytes then
          assert.are.equal(hex(g.bytes), hex(bytes), g.name .. " (" .. g.type .. ")")
          same = same + 1
        else
          assert.is_truthy(err:match("has no field named") or err:match("Type not defined: modal%.client%.Status"),
            g.name .. ": " .. err)
        end
      end
    end
    assert.is_true(same >= 15, "responses matched: " .. same)
  end)

  it("a changed field number in the schema is caught", function()
    -- The check itself can fail: the AppGetOrCreateRequest golden against a
    -- copy of modal.proto whose app_name is field 9.
    local dir = os.tmpname()
    os.remove(dir)
    assert.is_true(os.execute("mkdir -m 700 " .. shell_quote(dir)))
    local proto = read_file(PROTO_DIR .. "/modal.proto")
    local changed, n = proto:gsub("(message AppGetOrCreateRequest {%s*string app_name = )1;", "%19;")
    assert.are.equal(1, n)
    local f = assert(io.open(dir .. "/modal.proto", "wb"))
    f:write(changed)
    f:close()
    local golden
    for _, g in ipairs(list) do
      if g.name == "APP_REQ" then golden = g end
    end
    assert.is_not_nil(golden)
    local saved = PROTO_DIR
    PROTO_DIR = dir
    local ok, bytes = pcall(protoc_encode, protoc, golden.type, golden.text)
    PROTO_DIR = saved
    os.remove(dir .. "/modal.proto")
    os.remove(dir)
    assert.is_true(ok)
    assert.is_not_nil(bytes)
    assert.are_not.equal(hex(golden.bytes), hex(bytes))
  end)
end)
