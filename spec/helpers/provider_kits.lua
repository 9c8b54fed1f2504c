--- Each provider's test kit: spec/helpers/providers/<dir>.lua, where <dir>
-- is the provider's folder (its id with "-" written "_"), read by the specs
-- that run over every provider (sandkit.providers()), so that a provider's
-- rows in them live beside each other and not in each spec. A kit returns
-- a table; each field is optional:
--   offline_options()  options that construct a sandbox without I/O and
--                      without credentials from the environment (servers
--                      on a closed port, a CLI that does not exist), for
--                      specs that set one key on top (helpers.offline_options)
--   secrets            rows of spec/secrets_spec.lua (the fields are said there)
--   readme(root)       what README's blocks for it need, started:
--                      { vars = { NAME = value }, path = dir put first on PATH,
--                      teardown = function() } (spec/readme_spec.lua)
-- A provider without a kit file has none of them.
local M = {}

function M.dir_of(id) return (id:gsub("-", "_")) end

--- The kit of provider `id` ({} when it has none).
function M.of(id)
  local name = "helpers.providers." .. M.dir_of(id)
  if not package.searchpath(name, package.path) then return {} end
  return require(name)
end

--- { id, kit } of every provider the build has, in sandkit.providers() order.
function M.all()
  local out = {}
  for _, d in ipairs(require("sandkit").providers()) do out[#out + 1] = { id = d.id, kit = M.of(d.id) } end
  return out
end

return M
