--- For LocalSandbox specs that need bubblewrap: a started bwrap sandbox.
-- (Guarding a test by sh.have_bwrap() stays in the spec: busted's `it` and
-- `pending` exist only in the spec file's environment.)
local sandkit = require "sandkit"
local tmp = require "helpers.tmp"

local M = {}

--- A started LocalSandbox with isolation "bwrap" (unless opts says
-- otherwise) in a fresh working directory (unless opts names one); returns
-- it and its working directory.
function M.sandbox(opts)
  opts = opts or {}
  opts.isolation = opts.isolation or "bwrap"
  opts.working_directory = opts.working_directory or tmp.dir() .. "/ws"
  local sb = sandkit.LocalSandbox(opts)
  assert(sb:start())
  return sb, opts.working_directory
end

return M
