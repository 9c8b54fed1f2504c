-- Fault switches, read at every call from $SANDKIT_CONTAINER_FAULTS (JSON) and
-- from <state>/faults.json. Either source holds a list of rules, {"rules": [...]},
-- or a map from subcommand to one rule. A rule:
--   command   subcommand it applies to ("run", "exec", "inspect", …; "*" = any)
--   match     plain substring the space-joined argv must contain (optional)
--   skip      let this many matching calls through first (optional)
--   times     then apply to this many calls only (optional; default: all)
--   delay_ms  wait this long, then answer (normally, or with the fields below)
--   hang      never answer (sleep until killed; true = 3600 s, or a number of seconds)
--   exit      exit status of a faked answer (default 1 when stderr is given, else 0)
--   stdout    text printed instead of the real output (e.g. "not json")
--   stderr    text printed on stderr (a newline is added when missing)
-- Counters for skip/times live in <state>/faults.state.json.

local cjson = require("cjson.safe")
local host = require("host")

local M = {}

local function normalize(doc, source)
  local rules = {}
  if type(doc) ~= "table" then return rules end
  local list = doc.rules or doc
  if list[1] ~= nil or next(list) == nil then
    for i, r in ipairs(list) do
      if type(r) == "table" then r._id = source .. ":" .. i rules[#rules + 1] = r end
    end
  else
    local names = {}
    for k in pairs(list) do names[#names + 1] = k end
    table.sort(names)
    for _, k in ipairs(names) do
      local r = list[k]
      if type(r) == "table" then
        r.command = r.command or k
        r._id = source .. ":" .. k
        rules[#rules + 1] = r
      end
    end
  end
  return rules
end

local function load_rules(state_dir)
  local rules = {}
  local env = os.getenv("SANDKIT_CONTAINER_FAULTS")
  if env and env ~= "" then
    local doc, err = cjson.decode(env)
    if not doc then error("SANDKIT_CONTAINER_FAULTS is not valid JSON: " .. tostring(err), 0) end
    for _, r in ipairs(normalize(doc, "env")) do rules[#rules + 1] = r end
  end
  local text = host.read_file(state_dir .. "/faults.json")
  if text and text:match("%S") then
    local doc, err = cjson.decode(text)
    if not doc then error("faults.json is not valid JSON: " .. tostring(err), 0) end
    for _, r in ipairs(normalize(doc, "file")) do rules[#rules + 1] = r end
  end
  return rules
end

local function matches(rule, command, joined)
  local c = rule.command or "*"
  if c ~= "*" and c ~= command then return false end
  if type(rule.match) == "string" and not joined:find(rule.match, 1, true) then return false end
  return true
end

-- Returns the rule that applies to this call, counting it, or nil.
-- `resumed_id` names the rule whose delay already ran (the call is its replay).
function M.find(state_dir, command, argv, resumed_id)
  local rules = load_rules(state_dir)
  if resumed_id then
    for _, r in ipairs(rules) do if r._id == resumed_id then return r end end
    return nil
  end
  local joined = table.concat(argv, " ")
  local counters_path = state_dir .. "/faults.state.json"
  local counters
  for _, r in ipairs(rules) do
    if matches(r, command, joined) then
      local skip, times = tonumber(r.skip) or 0, tonumber(r.times)
      if skip == 0 and not times then return r end
      counters = counters or cjson.decode(host.read_file(counters_path) or "{}") or {}
      local seen = (counters[r._id] or 0) + 1
      counters[r._id] = seen
      host.write_file(counters_path, cjson.encode(counters))
      if seen > skip and (not times or seen <= skip + times) then return r end
    end
  end
  return nil
end

return M
