--- `:checkhealth mecha`: the things that stop the plugin from working, each
--- with the fix.

local M = {}

function M.check()
  local health = vim.health
  health.start("mecha")

  if vim.fn.has("nvim-0.11") == 1 then
    health.ok("Neovim ≥ 0.11: vim.lsp.config / vim.lsp.enable")
  elseif vim.fn.has("nvim-0.10") == 1 then
    health.warn("Neovim < 0.11: using the vim.lsp.start fallback", { "Upgrade to Neovim 0.11 or later" })
  else
    health.error("Neovim 0.10 or later is required")
  end

  local mecha = require("mecha")
  local dir = mecha.learning_dir()
  if not dir then
    health.error('setup() has not run', { 'Call require("mecha").setup({}) from your config' })
    return
  end

  local cmd = mecha.server_cmd()
  if type(cmd) == "table" and cmd[1] then
    if vim.fn.executable(cmd[1]) == 1 then
      health.ok(("server command: %s"):format(table.concat(cmd, " ")))
    else
      health.error(("`%s` is not executable"):format(cmd[1]), {
        "Install mecha-sidecar so it is on PATH, or pass `cmd = { '/path/to/mecha-sidecar', 'lsp' }` to setup()",
      })
    end
  end

  if vim.fn.isdirectory(dir .. "/rules") == 1 then
    health.ok(("learning store: %s"):format(dir))
  else
    health.warn(("no rules directory under %s"):format(dir), {
      "Set `learning_dir` in setup() or $MECHA_LEARNING_DIR to the store the harness uses",
    })
  end

  local clients = vim.lsp.get_clients({ name = "mecha" })
  if #clients > 0 then
    health.ok(("server running (client %d); %d pending proposals"):format(clients[1].id, mecha.pending()))
  else
    health.info("server not running (it starts when a rules file is opened)")
  end
end

return M
