--- Talking to the running `mecha` client, across Neovim versions.
---
--- Neovim 0.11 moved client methods to method-call style (`client:request`)
--- and deprecated the field style (`client.request`) that 0.10 has; the two
--- are not interchangeable, so the choice is made once, here.
---
--- Commands go out as plain `workspace/executeCommand` requests rather than
--- through `client:exec_cmd`: the plugin registers client-side handlers for
--- the `mecha.*` commands (so a code action's result reaches the person),
--- and `exec_cmd` would route straight back into them. A request also always
--- answers — `exec_cmd` silently does nothing for a command the server did
--- not advertise, which would leave a caller waiting forever.

local M = {}

--- The client name, in `vim.lsp.config`, `vim.lsp.get_clients` and logs.
M.NAME = "mecha"

local has_011 = vim.fn.has("nvim-0.11") == 1

---@return boolean
function M.modern()
  return has_011
end

---@param filter table
---@return vim.lsp.Client[]
local function get_clients(filter)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients(filter)
  end
  return vim.lsp.get_active_clients(filter) ---@diagnostic disable-line: deprecated
end

--- The running mecha client, if any (the one attached to `bufnr` first).
---@param bufnr integer?
---@return vim.lsp.Client?
function M.get(bufnr)
  if bufnr then
    local attached = get_clients({ name = M.NAME, bufnr = bufnr })
    if attached[1] then
      return attached[1]
    end
  end
  for _, client in ipairs(get_clients({ name = M.NAME })) do
    if not (client.is_stopped and client:is_stopped()) then
      return client
    end
  end
  return nil
end

--- Whether a mecha client is attached to `bufnr`.
---@param bufnr integer
---@return boolean
function M.get_attached(bufnr)
  return get_clients({ name = M.NAME, bufnr = bufnr })[1] ~= nil
end

---@param client vim.lsp.Client
---@param method string
---@param params table?
---@param handler fun(err: table?, result: any, ctx: table?)
---@param bufnr integer?
function M.request(client, method, params, handler, bufnr)
  local ok
  if has_011 then
    ok = client:request(method, params, handler, bufnr)
  else
    ok = client.request(method, params, handler, bufnr) ---@diagnostic disable-line: deprecated
  end
  if not ok then
    handler({ message = ("the %s server is not running"):format(M.NAME) }, nil, nil)
  end
end

--- A blocking request, for command-line completion only; nil on timeout.
---@param client vim.lsp.Client
---@param method string
---@param params table?
---@param timeout_ms integer
---@return {err: table?, result: any}?
function M.request_sync(client, method, params, timeout_ms)
  if has_011 then
    return client:request_sync(method, params, timeout_ms)
  end
  return client.request_sync(method, params, timeout_ms) ---@diagnostic disable-line: deprecated
end

--- `workspace/executeCommand` with `command` and `arguments`; `handler`
--- receives `(err, result)`.
---@param client vim.lsp.Client
---@param command string
---@param arguments any[]
---@param handler fun(err: table?, result: any)
---@param bufnr integer?
function M.execute(client, command, arguments, handler, bufnr)
  M.request(client, "workspace/executeCommand", { command = command, arguments = arguments }, function(err, result)
    handler(err, result)
  end, bufnr)
end

--- A readable one-line message from an LSP error (or any error value).
---@param err any
---@return string
function M.error_text(err)
  if type(err) == "table" then
    local text = err.message or vim.inspect(err)
    if err.code then
      text = ("%s (%s)"):format(text, err.code)
    end
    return text
  end
  return tostring(err)
end

return M
