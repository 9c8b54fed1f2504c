--- Generates the Modal client's message types and field tables from
-- src/core/providers/modal/modal.proto, the schema the reference server
-- loads too, so that it is stated once. Run at build time (Makefile: the
-- rule for build/gen/modal_pb.h):
--   lua5.4 tools/modal_gen.lua src/core/providers/modal/modal.proto build/gen/modal_pb.h
-- Output: for every message a C struct and a field table (sk_modal_field
-- rows that modal_msg.c's one encoder and one decoder walk), a constant per
-- field number, the enums, and typed encode/decode wrappers for the RPCs.
-- A message reachable from an RPC's request is an encode type (borrowed
-- `const char *` strings), from a response a decode type (owned strings);
-- the proto subset read is the one modal.proto uses (proto3: messages,
-- enums, oneof, repeated, map<string, string>, services).
local M = {}

-- ---- the proto subset ---------------------------------------------------------

local function tokens(text)
  text = text:gsub("//[^\n]*", "")
  local out = {}
  local i = 1
  while i <= #text do
    local c = text:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif c:match("[%a_]") then
      local w = text:match("^[%w_%.]+", i)
      out[#out + 1] = w
      i = i + #w
    elseif c:match("%d") or c == "-" then
      local w = text:match("^%-?%d+", i)
      out[#out + 1] = w
      i = i + #w
    elseif c == '"' then
      local j = text:find('"', i + 1, true)
      out[#out + 1] = text:sub(i, j)
      i = j + 1
    else
      out[#out + 1] = c
      i = i + 1
    end
  end
  return out
end

--- { messages = { name -> msg }, order = { msg... }, enums = { enum... },
-- services = { { name, rpcs = { { name, input, output } } } } }.
function M.parse(text)
  local t, pos = tokens(text), 1
  local function peek() return t[pos] end
  local function take(want)
    local v = t[pos]
    if want and v ~= want then error(("modal_gen: expected %q, got %q (token %d)"):format(want, tostring(v), pos), 0) end
    pos = pos + 1
    return v
  end
  local schema = { messages = {}, order = {}, enums = {}, services = {} }

  local function enum(parent)
    local e = { name = take(), parent = parent, values = {} }
    take("{")
    while peek() ~= "}" do
      local name = take()
      take("=")
      e.values[#e.values + 1] = { name = name, number = tonumber(take()) }
      take(";")
    end
    take("}")
    schema.enums[#schema.enums + 1] = e
  end

  local function field(msg, label, oneof)
    local f = { label = label, oneof = oneof }
    if peek() == "map" then
      take("map"); take("<")
      f.key = take(); take(",")
      f.type = take(); take(">")
      f.label = "map"
    else
      f.type = take()
    end
    f.name = take()
    take("=")
    f.number = tonumber(take())
    take(";")
    msg.fields[#msg.fields + 1] = f
  end

  local function message()
    local msg = { name = take(), fields = {} }
    take("{")
    local groups = 0
    while peek() ~= "}" do
      local w = peek()
      if w == "enum" then take(); enum(msg.name)
      elseif w == "repeated" then take(); field(msg, "repeated")
      elseif w == "oneof" then
        take()
        local name = take()
        take("{")
        local first = #msg.fields + 1
        groups = groups + 1
        while peek() ~= "}" do field(msg, "single", groups) end
        take("}")
        -- protoc's lowering of `optional T f`: a oneof named _f of f alone
        if #msg.fields == first and name == "_" .. msg.fields[first].name then
          msg.fields[first].oneof, msg.fields[first].label = nil, "optional"
        else
          for i = first, #msg.fields do msg.fields[i].group = name end
        end
      elseif w == "optional" then take(); field(msg, "optional")
      else field(msg, "single") end
    end
    take("}")
    table.sort(msg.fields, function(a, b) return a.number < b.number end)
    schema.messages[msg.name] = msg
    schema.order[#schema.order + 1] = msg
  end

  local function service()
    local s = { name = take(), rpcs = {} }
    take("{")
    while peek() ~= "}" do
      take("rpc")
      local r = { name = take() }
      take("(")
      if peek() == "stream" then take() end
      r.input = take()
      take(")"); take("returns"); take("(")
      if peek() == "stream" then take(); r.stream = true end
      r.output = take()
      take(")"); take(";")
      s.rpcs[#s.rpcs + 1] = r
    end
    take("}")
    schema.services[#schema.services + 1] = s
  end

  while pos <= #t do
    local w = take()
    if w == "syntax" or w == "package" or w == "option" or w == "import" then
      while take() ~= ";" do end
    elseif w == "message" then message()
    elseif w == "enum" then enum(nil)
    elseif w == "service" then service()
    else error(("modal_gen: unexpected %q at token %d"):format(w, pos - 1), 0) end
  end
  return schema
end

-- ---- names --------------------------------------------------------------------

local function snake(name)
  return (name:gsub("(%u)(%u%l)", "%1_%2"):gsub("(%l)(%u)", "%1_%2"):gsub("(%d)(%u)", "%1_%2"):lower())
end
M.snake = snake

local function ctype(msg) return "sk_modal_" .. snake(msg) end
local function desc(msg) return "sk_modal_msg_" .. snake(msg) end

local SCALAR = {
  int32 = { c = "int32_t", kind = "INT32" }, int64 = { c = "int64_t", kind = "INT64" },
  uint32 = { c = "uint32_t", kind = "UINT32" }, uint64 = { c = "uint64_t", kind = "UINT64" },
  bool = { c = "bool", kind = "BOOL" }, float = { c = "float", kind = "FLOAT" },
}

-- ---- direction: which messages are encoded, which decoded --------------------

local function closure(schema, roots)
  local seen = {}
  local function visit(name)
    local msg = schema.messages[name]
    if not msg or seen[name] then return end
    seen[name] = true
    for _, f in ipairs(msg.fields) do visit(f.type) end
  end
  for _, r in ipairs(roots) do visit(r) end
  return seen
end

-- ---- output -------------------------------------------------------------------

local function emit_enums(schema, out)
  for _, e in ipairs(schema.enums) do
    local prefix = snake(e.name):upper() .. "_"
    out[#out + 1] = ("/* %s%s */\nenum {"):format(e.parent and (e.parent .. ".") or "", e.name)
    for _, v in ipairs(e.values) do
      local name = v.name:sub(1, #prefix) == prefix and v.name or (prefix .. v.name)
      out[#out + 1] = ("    SK_MODAL_%s = %d,"):format(name, v.number)
    end
    out[#out + 1] = "};"
  end
end

-- The struct members of field f in a message of direction dir ("encode"
-- or "decode"); nil for a field the C client does not represent.
local function members(schema, f, dir)
  local sub = schema.messages[f.type]
  local has = (f.label == "optional" or f.oneof) and ("    bool has_%s;\n"):format(f.name) or ""
  if f.label == "map" then
    if dir ~= "encode" or f.key ~= "string" or f.type ~= "string" then return nil end
    return ("    sk_modal_kvs %s;"):format(f.name)
  elseif f.label == "repeated" then
    if dir ~= "encode" then return nil end
    if f.type == "string" then return ("    sk_modal_strs %s;"):format(f.name) end
    if sub then return ("    const %s *%s;\n    size_t n_%s;"):format(ctype(f.type), f.name, f.name) end
    return nil
  elseif f.type == "string" then
    return ("    %s*%s;"):format(dir == "encode" and "const char " or "char ", f.name)
  elseif f.type == "bytes" then
    return ("    %s*%s;\n    size_t %s_len;"):format(dir == "encode" and "const void " or "uint8_t ", f.name, f.name)
  elseif sub then
    return ("    bool has_%s;\n    %s %s;"):format(f.name, ctype(f.type), f.name)
  end
  local scalar = SCALAR[f.type] or { c = "int32_t" } -- an enum
  return ("%s    %s %s;"):format(has, scalar.c, f.name)
end

-- The table row of field f in struct T.
local function row(schema, f, T)
  local sub = schema.messages[f.type]
  local r = { num = f.number, off = ("offsetof(%s, %s)"):format(T, f.name) }
  local explicit = f.label == "optional" or f.oneof
  if f.label == "map" then r.kind = "KVS"
  elseif f.label == "repeated" and f.type == "string" then r.kind = "STRS"
  elseif f.label == "repeated" then
    r.kind, r.aux, r.size = "SUBS", ("offsetof(%s, n_%s)"):format(T, f.name), ("sizeof(%s)"):format(ctype(f.type))
  elseif f.type == "string" then r.kind = "STRING"
  elseif f.type == "bytes" then r.kind, r.aux = "BYTES", ("offsetof(%s, %s_len)"):format(T, f.name)
  elseif sub then r.kind, r.has = "SUB", ("offsetof(%s, has_%s) + 1"):format(T, f.name)
  else
    r.kind = (SCALAR[f.type] or { kind = "INT32" }).kind
    if explicit then r.has = ("offsetof(%s, has_%s) + 1"):format(T, f.name) end
  end
  if sub then r.sub = "&" .. desc(f.type) end
  return ("    {%d, SK_MODAL_F_%s, %s, %d, %s, %s, %s, %s, %s},"):format(r.num, r.kind,
    explicit and "SK_PB_EXPLICIT" or "SK_PB_IMPLICIT", f.oneof or 0, r.off, r.aux or "0", r.has or "0",
    r.size or "0", r.sub or "NULL")
end

function M.generate(schema, source)
  local requests, responses, rpcs = {}, {}, {}
  for _, s in ipairs(schema.services) do
    for _, r in ipairs(s.rpcs) do
      requests[#requests + 1], responses[#responses + 1] = r.input, r.output
      rpcs[#rpcs + 1] = r
    end
  end
  local enc, dec = closure(schema, requests), closure(schema, responses)
  -- structs by value need their members' types first
  local sorted, done = {}, {}
  local function place(msg)
    if done[msg.name] then return end
    done[msg.name] = true
    for _, f in ipairs(msg.fields) do
      local sub = schema.messages[f.type]
      if sub then place(sub) end
    end
    sorted[#sorted + 1] = msg
  end
  for _, msg in ipairs(schema.order) do place(msg) end

  local out = {
    ("/* Generated by tools/modal_gen.lua from %s: do not edit (the Makefile\n"
      .. " * regenerates it when either changes). Types and field tables of the Modal\n"
      .. " * messages; modal_msg.h includes the types, modal_msg.c the tables. */"):format(source),
    "#ifndef SK_MODAL_PB_H", "#define SK_MODAL_PB_H", "",
  }
  emit_enums(schema, out)
  out[#out + 1] = ""
  for _, msg in ipairs(sorted) do
    local dir = enc[msg.name] and "encode" or dec[msg.name] and "decode" or nil
    if enc[msg.name] and dec[msg.name] then
      error("modal_gen: " .. msg.name .. " is both sent and received; give it one direction", 0)
    end
    if dir then
      msg.dir = dir
      out[#out + 1] = ("/* %s (%s) */"):format(msg.name, dir == "encode" and "sent" or "received")
      if #msg.fields > 0 then
        out[#out + 1] = "enum {"
        for _, f in ipairs(msg.fields) do
          out[#out + 1] = ("    SK_MODAL_%s_%s = %d,"):format(snake(msg.name):upper(), f.name:upper(), f.number)
        end
        out[#out + 1] = "};"
      end
      local body = {}
      for _, f in ipairs(msg.fields) do
        local m = members(schema, f, dir)
        if m then body[#body + 1] = m; f.represented = true end
      end
      if #body == 0 then body[1] = "    char unused_; /* no fields: C needs a member */" end
      out[#out + 1] = ("typedef struct %s {\n%s\n} %s;"):format(ctype(msg.name), table.concat(body, "\n"), ctype(msg.name))
      out[#out + 1] = ("extern const sk_modal_message %s;"):format(desc(msg.name))
      out[#out + 1] = ""
    end
  end
  out[#out + 1] = "/* The RPCs' requests and responses, typed. */"
  local wrapped = {}
  for _, r in ipairs(rpcs) do
    local name = snake(r.name)
    out[#out + 1] = ("static inline int sk_modal_encode_%s(sk_buf *out, const %s *m)\n{\n    return sk_modal_encode(&%s, out, m);\n}")
      :format(name, ctype(r.input), desc(r.input))
    out[#out + 1] = ("static inline int sk_modal_decode_%s(const void *data, size_t len, %s *out)\n{\n    return sk_modal_decode(&%s, data, len, out);\n}")
      :format(name, ctype(r.output), desc(r.output))
    if not wrapped[r.output] then
      wrapped[r.output] = true
      out[#out + 1] = ("static inline void %s_free(%s *m)\n{\n    sk_modal_release(&%s, m);\n}")
        :format(ctype(r.output), ctype(r.output), desc(r.output))
    end
  end
  out[#out + 1] = "/* Every message received, for tests and fuzzers: NULL-terminated. */"
  out[#out + 1] = "extern const sk_modal_message *const sk_modal_received[];"
  out[#out + 1] = "#endif"
  out[#out + 1] = ""

  -- the tables: compiled once, in modal_msg.c (SK_MODAL_PB_TABLES)
  out[#out + 1] = "#ifdef SK_MODAL_PB_TABLES"
  for _, msg in ipairs(sorted) do
    if msg.dir then
      local T = ctype(msg.name)
      local rows = {}
      for _, f in ipairs(msg.fields) do
        if f.represented then rows[#rows + 1] = row(schema, f, T) end
      end
      if #rows > 0 then
        out[#out + 1] = ("static const sk_modal_field %s_fields[] = {\n%s\n};"):format(desc(msg.name), table.concat(rows, "\n"))
        out[#out + 1] = ("const sk_modal_message %s = {\"%s\", %s_fields, %d, sizeof(%s)};")
          :format(desc(msg.name), msg.name, desc(msg.name), #rows, T)
      else
        out[#out + 1] = ("const sk_modal_message %s = {\"%s\", NULL, 0, sizeof(%s)};"):format(desc(msg.name), msg.name, T)
      end
    end
  end
  local received = {}
  for _, msg in ipairs(sorted) do
    if msg.dir == "decode" then received[#received + 1] = "    &" .. desc(msg.name) .. "," end
  end
  out[#out + 1] = ("const sk_modal_message *const sk_modal_received[] = {\n%s\n    NULL,\n};"):format(table.concat(received, "\n"))
  out[#out + 1] = "#endif"
  return table.concat(out, "\n") .. "\n"
end

if arg and arg[0] and arg[0]:match("modal_gen%.lua$") then
  local src, dst = arg[1], arg[2]
  if not src or not dst then
    io.stderr:write("usage: lua5.4 tools/modal_gen.lua modal.proto out.h\n")
    os.exit(2)
  end
  local f = assert(io.open(src, "rb"))
  local text = f:read("*a")
  f:close()
  local ok, c = pcall(function() return M.generate(M.parse(text), src:match("[^/]*$")) end)
  if not ok then
    io.stderr:write(tostring(c), "\n")
    os.exit(1)
  end
  -- written whole, then renamed: a failed run leaves no half file for make
  local tmp = dst .. ".tmp"
  f = assert(io.open(tmp, "wb"))
  f:write(c)
  f:close()
  assert(os.rename(tmp, dst))
end

return M
