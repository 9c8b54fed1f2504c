--- A provider's own operations called from Lua (core.ops_open /
-- core.ops_call, src/lua/ops_ud.c): the record a call's events complete,
-- and one call started and waited for.
local core = require "sandkit.core"
local scheduler = require "sandkit.scheduler"

local M = {}

--- A record for one call (its handle goes in r.handle): on_head(r, data)
-- receives the call's head (its output on stream 0), on_data(r, data)
-- (optional) the bytes after it, and the call's end completes the record
-- (true, or nil, err). An error on_data raises (the caller's callback,
-- say) cancels the call, and M.await raises it.
function M.record(on_head, on_data)
  return scheduler.record(function(r, kind, stream, data)
    if kind == "output" and stream == 0 then
      on_head(r, data)
    elseif kind == "output" then
      if not on_data or r.cb_err then return end
      local ok, e = pcall(on_data, r, data)
      if not ok then r.cb_err = e; r.handle:cancel(); scheduler.complete(r, nil) end
    elseif kind == "lifecycle" then
      scheduler.complete(r, stream == nil and true or nil, stream)
    end
  end)
end

--- Waits for a started call: true, or nil, err; raises what its on_data
-- raised.
function M.await(rec)
  local ok, err = scheduler.await(rec)
  if rec.cb_err then error(rec.cb_err, 0) end
  return ok, err
end

--- One call, waited for: req and body go to core.ops_call on the table
-- open() returns; on_head and on_data as for M.record. Returns the record
-- (its handle, and whatever on_head and on_data kept in it), or nil, err.
-- A typed error that open() or the call raises (a sandbox with no
-- container: never started, or destroyed) is returned; anything else is
-- raised again.
function M.call(open, req, body, on_head, on_data)
  local rec = M.record(on_head, on_data)
  local started, handle = pcall(function() return core.ops_call(open(), req, body, rec.token) end)
  if not started then
    if type(handle) == "table" and handle.kind then return nil, handle end
    error(handle, 0)
  end
  rec.handle = handle
  local ok, err = M.await(rec)
  if not ok then return nil, err end
  return rec
end

return M
