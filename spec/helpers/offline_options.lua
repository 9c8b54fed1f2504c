--- Options that construct a sandbox of each provider without I/O and
-- without credentials from the environment, for specs that set one key on
-- top and look at how it is checked: each provider's kit says them
-- (helpers.provider_kits, offline_options). Each value is a function: a
-- fresh table every call; a provider whose kit says none has no entry.
local M = {}
for _, p in ipairs(require("helpers.provider_kits").all()) do M[p.id] = p.kit.offline_options end
return M
