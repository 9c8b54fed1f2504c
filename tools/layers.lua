--- The layering of the C tree, checked (docs/architecture.md §"Layers"):
-- which file may include or call which. Every C file belongs to a layer;
-- an #include or a call (an undefined symbol of its object that another
-- object defines, as nm reports them) may only go to the same layer or a
-- lower one, never up. Besides:
--   * src/core never includes Lua (lua.h, lauxlib.h, lualib.h) nor src/lua;
--   * a provider folder includes and calls no other provider's files;
--   * the binding (src/lua) includes no provider's header and not
--     provider.h: it drives sandboxes through sandbox.h alone;
--   * no #include cycle at all, and no call cycle between objects except
--     the UNITS below, each one module split into files.
-- Used by spec/layering_spec.lua; run as a script it prints the problems:
--   lua5.4 tools/layers.lua [BUILD_DIR]
local M = {}

-- Lowest first. A file not listed takes the layer of its folder.
M.LAYERS = {
  { name = "base", files = { "compat", "buf", "error", "secrets", "log", "shell" } },
  { name = "loop", files = { "loop" } },
  -- what the system gives, one call at a time: cgroups, starting a child,
  -- files beneath a directory
  { name = "system", files = { "cgroup", "child", "proc_opts", "fs_local" } },
  -- children on the loop
  { name = "process", files = { "proc" } },
  { name = "transport", files = { "http", "ws", "grpc_frame", "grpc" } },
  { name = "sandbox", files = { "sandbox", "provider", "provider_ops" } },
  { name = "providers", dir = "src/core/providers/" },
  { name = "binding", dir = "src/lua/" },
}

-- Call cycles that are one module split into files, with why.
M.UNITS = {
  {
    files = { "src/core/providers/modal/modal.c", "src/core/providers/modal/modal_exec.c",
      "src/core/providers/modal/modal_fs.c" },
    why = "ModalSandbox over one state (modal_state.h): its vtable in modal.c names the command and file "
      .. "operations, which provision and revive the sandbox through modal.c",
  },
  {
    files = { "src/core/providers/platform/platform.c", "src/core/providers/platform/platform_exec.c" },
    why = "PlatformSandbox over one state (platform_state.h): its vtable in platform.c names the command "
      .. "half, which forgets a destroyed sandbox through platform.c",
  },
  {
    files = { "src/lua/core.c", "src/lua/buffer_ud.c", "src/lua/process_ud.c", "src/lua/sandbox_ud.c",
      "src/lua/ops_ud.c", "src/lua/fs_ud.c" },
    why = "the module sandkit.core: luaopen_sandkit_core (core.c) registers its classes, which queue "
      .. "their events on the state core.c owns and delivers from step",
  },
}

local LUA_HEADERS = { ["lua.h"] = true, ["lauxlib.h"] = true, ["lualib.h"] = true, ["luaconf.h"] = true }

local function stem(path) return path:match("([^/]+)%.[ch]$") end

--- The layer index of a file of the tree, or nil.
function M.layer_of(path)
  for i, l in ipairs(M.LAYERS) do
    if l.dir and path:sub(1, #l.dir) == l.dir then return i end
    if l.files and path:match("^src/core/[^/]+$") then
      for _, f in ipairs(l.files) do
        if stem(path) == f then return i end
      end
    end
  end
end

-- The provider folder a file belongs to ("modal"), or nil.
local function provider_of(path) return path:match("^src/core/providers/([^/]+)/") end

local function normalize(path)
  local out = {}
  for seg in path:gmatch("[^/]+") do
    if seg == ".." then out[#out] = nil elseif seg ~= "." then out[#out + 1] = seg end
  end
  return table.concat(out, "/")
end

--- The #include lines of a C file's text: { quoted = { path... }, system = { name... } },
-- quoted paths resolved from the file's directory.
function M.includes(path, text)
  local dir = path:match("^(.*)/") or "."
  local out = { quoted = {}, system = {} }
  for line in text:gmatch("[^\n]+") do
    local q = line:match('^%s*#%s*include%s+"([^"]+)"')
    local s = line:match("^%s*#%s*include%s+<([^>]+)>")
    -- the registry's computed include is providers.def unless a test
    -- build says otherwise
    if line:match("^%s*#%s*include%s+SK_PROVIDERS_DEF") then q = "providers.def" end
    if q then out.quoted[#out.quoted + 1] = normalize(dir .. "/" .. q) end
    if s then out.system[#out.system + 1] = s end
  end
  return out
end

local function unit_of(path)
  for i, u in ipairs(M.UNITS) do
    for _, f in ipairs(u.files) do if f == path then return i end end
  end
end

-- Strongly connected components of graph (node -> { node, ... }) with more
-- than one node, each sorted.
local function cycles(graph)
  local index, low, on, stack, out, n = {}, {}, {}, {}, {}, 0
  local function visit(v)
    n = n + 1
    index[v], low[v] = n, n
    stack[#stack + 1], on[v] = v, true
    for _, w in ipairs(graph[v] or {}) do
      if not index[w] then
        visit(w)
        low[v] = math.min(low[v], low[w])
      elseif on[w] then
        low[v] = math.min(low[v], index[w])
      end
    end
    if low[v] == index[v] then
      local comp = {}
      repeat
        local w = table.remove(stack)
        on[w] = nil
        comp[#comp + 1] = w
      until w == v
      if #comp > 1 then table.sort(comp); out[#out + 1] = comp end
    end
  end
  local nodes = {}
  for v in pairs(graph) do nodes[#nodes + 1] = v end
  table.sort(nodes)
  for _, v in ipairs(nodes) do if not index[v] then visit(v) end end
  return out
end

--- Problems ("file: what") of a tree described by
--   includes[file] = { quoted = {...}, system = {...} }  (every C file)
--   calls[file] = { file, ... }  (.c files whose objects' symbols it uses)
function M.check(includes, calls)
  local problems = {}
  local function add(fmt, ...) problems[#problems + 1] = fmt:format(...) end
  local function edge(kind, from, to)
    local lf, lt = M.layer_of(from), M.layer_of(to)
    if not lf then add("%s: belongs to no layer (tools/layers.lua)", from) return end
    if not lt then return end -- outside the tree (a test's file)
    if lt > lf then
      add("%s (%s) %s %s (%s): up from a lower layer to a higher one", from, M.LAYERS[lf].name, kind, to,
        M.LAYERS[lt].name)
    end
    local pf, pt = provider_of(from), provider_of(to)
    if pf and pt and pf ~= pt then add("%s %s %s: a provider reaches into another", from, kind, to) end
    if from:match("^src/lua/") and (pt or to == "src/core/provider.h") then
      add("%s %s %s: the binding uses sandbox.h, never a provider's side", from, kind, to)
    end
  end
  local graph = {}
  for file, inc in pairs(includes) do
    graph[file] = inc.quoted
    for _, to in ipairs(inc.quoted) do
      if file:match("^src/core/") and to:match("^src/lua/") then add("%s includes %s: the core has no Lua", file, to) end
      edge("includes", file, to)
    end
    for _, s in ipairs(inc.system) do
      if file:match("^src/core/") and LUA_HEADERS[s] then add("%s includes <%s>: the core has no Lua", file, s) end
    end
  end
  for _, comp in ipairs(cycles(graph)) do add("an #include cycle: %s", table.concat(comp, " -> ")) end
  for file, tos in pairs(calls) do
    for _, to in ipairs(tos) do edge("calls", file, to) end
  end
  for _, comp in ipairs(cycles(calls)) do
    local u = unit_of(comp[1])
    local whole = u ~= nil
    for _, f in ipairs(comp) do whole = whole and unit_of(f) == u end
    if not whole then add("a call cycle that is no declared unit: %s", table.concat(comp, " <-> ")) end
  end
  table.sort(problems)
  return problems
end

-- ---- reading the tree ------------------------------------------------------

local function lines_of(cmd)
  local p = assert(io.popen(cmd))
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

--- includes and calls of the tree at the current directory, the calls from
-- the objects under build_dir/obj (nil when they are missing).
function M.scan(build_dir)
  local includes, sources = {}, {}
  for _, f in ipairs(lines_of("find src -name '*.[ch]' -o -name '*.def' | sort")) do
    local h = assert(io.open(f))
    includes[f] = M.includes(f, h:read("a"))
    h:close()
    if f:match("%.c$") then sources[#sources + 1] = f end
  end
  local defined, undefined = {}, {}
  for _, src in ipairs(sources) do
    local obj = build_dir .. "/obj/" .. src:gsub("%.c$", ".o")
    local f = io.open(obj)
    if not f then return includes, nil, obj end
    f:close()
    undefined[src] = {}
    for _, l in ipairs(lines_of("nm -P " .. obj)) do
      local name, t = l:match("^(%S+) (%a)")
      if t == "U" or t == "w" then undefined[src][#undefined[src] + 1] = name -- w: a weak reference
      elseif t and t:match("[TDBRV]") then defined[name] = src end
    end
  end
  local calls = {}
  for src, names in pairs(undefined) do
    local seen, list = {}, {}
    for _, name in ipairs(names) do
      local to = defined[name]
      if to and to ~= src and not seen[to] then seen[to] = true; list[#list + 1] = to end
    end
    table.sort(list)
    calls[src] = list
  end
  return includes, calls
end

if select("#", ...) > 0 or arg and arg[0] and arg[0]:match("layers%.lua$") then
  local includes, calls, missing = M.scan((...) or "build")
  if not calls then io.stderr:write("no object ", missing, " (build first)\n") os.exit(2) end
  local problems = M.check(includes, calls)
  for _, p in ipairs(problems) do print(p) end
  os.exit(#problems == 0 and 0 or 1)
end
return M
