-- Errors as Apple's CLI prints them. A service-side failure is a
-- ContainerizationError, shown as `Error: <code>: "<message>" (cause: "<cause>")`
-- with exit status 1; raise one with fail(cz(code, message, cause)).

local M = {}

local CliError = { __name = "container.CliError" }

function M.fail(message, code)
  error(setmetatable({ message = message, code = code or 1 }, CliError), 0)
end

-- ContainerizationError's description: code: "message" (cause: "…")
function M.cz(code, message, cause)
  local s = code .. ': "' .. message .. '"'
  if cause then s = s .. ' (cause: "' .. cause .. '")' end
  return s
end

-- Real flags the emulator does not carry out are refused, never silently ignored.
function M.unsupported(what)
  M.fail(M.cz("unsupported", "the emulated container CLI does not implement " .. what))
end

function M.is_cli_error(e)
  return getmetatable(e) == CliError
end

return M
