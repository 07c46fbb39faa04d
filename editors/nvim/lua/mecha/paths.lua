--- Where the learning store is, and which buffers are its rules files.
---
--- The server only understands `<learning_dir>/rules/<domain>.user.toml` and
--- `<learning_dir>/rules/<domain>.learned.toml`, and a project's
--- `<domain>@<project id>.user.toml` / `.learned.toml`; every other TOML file in the
--- editor (Cargo.toml, pyproject.toml, …) must never see it. This module is
--- that decision, kept pure so it can be tested and reasoned about alone.
--- Paths are compared after resolving symlinks, because a temp or home
--- directory reached through a link (macOS `/tmp`, a dotfiles symlink) would
--- otherwise make the same file look like two.

local M = {}

local uv = vim.uv or vim.loop

--- The environment variable the sidecar itself reads for the store root
--- (`core/store/learning_store.py`, `LEARNING_DIR_ENV`): one name, both readers.
M.LEARNING_DIR_ENV = "MECHA_LEARNING_DIR"

--- The rules files' kinds, as they appear in `<domain>.<kind>.toml`.
M.KINDS = { user = true, learned = true }

--- A domain name as `core/learning/rules.py` validates it: 1-64 of `[a-z0-9_-]`,
--- starting with a letter or digit.
local DOMAIN_MAX = 64

---@param domain string
---@return boolean
function M.valid_domain(domain)
  return type(domain) == "string"
    and #domain <= DOMAIN_MAX
    and domain:match("^[a-z0-9][a-z0-9_%-]*$") ~= nil
end

--- A project id as `core/store/layout.py` spells one: `<slug>-<16 hex digits>`,
--- the slug 1-40 of `[a-z0-9_-]` starting with a letter or digit.
---@param id string
---@return boolean
function M.valid_project_id(id)
  local slug, digest = id:match("^(.+)%-(%x+)$")
  return slug ~= nil
    and #slug <= 40
    and slug:match("^[a-z0-9][a-z0-9_%-]*$") ~= nil
    and #digest == 16
    and digest:match("^[0-9a-f]+$") ~= nil
end

--- `domain, kind, project id or nil` of a rules file's name, or nil.
---@param name string
---@return string? domain
---@return string? kind
---@return string? project
local function split_name(name)
  local stem, kind = name:match("^(.+)%.(%a+)%.toml$")
  if not stem or not M.KINDS[kind] then
    return nil
  end
  local domain, project = stem:match("^([^@]+)@(.+)$")
  if domain == nil then
    domain = stem
  elseif not M.valid_project_id(project) then
    return nil
  end
  if not M.valid_domain(domain) then
    return nil
  end
  return domain, kind, project
end

--- `$MECHA_LEARNING_DIR`, else `~/.mecha/learning` — the sidecar's default.
---@return string
function M.default_learning_dir()
  local env = vim.env[M.LEARNING_DIR_ENV]
  if env and env ~= "" then
    return env
  end
  local home = vim.env.HOME or uv.os_homedir()
  return home .. "/.mecha/learning"
end

--- An absolute, normalised path with symlinks resolved where they exist. A
--- path not yet on disk (a new buffer) resolves through its directory.
---@param path string
---@return string
function M.resolve(path)
  path = vim.fs.normalize(path)
  path = vim.fn.fnamemodify(path, ":p")
  if #path > 1 then
    path = path:gsub("/+$", "")
  end
  local real = uv.fs_realpath(path)
  if real then
    return vim.fs.normalize(real)
  end
  local dir = uv.fs_realpath(vim.fs.dirname(path))
  if dir then
    return vim.fs.normalize(dir) .. "/" .. vim.fs.basename(path)
  end
  return path
end

--- The `domain` and `kind` of a rules file (and its project id, for a
--- project's), or nil when `path` is not one.
--- Both arguments are expected resolved (`M.resolve`).
---@param path string
---@param learning_dir string
---@return string? domain
---@return string? kind
---@return string? project
function M.rules_file(path, learning_dir)
  if type(path) ~= "string" or path == "" then
    return nil
  end
  if vim.fs.dirname(path) ~= learning_dir .. "/rules" then
    return nil
  end
  return split_name(vim.fs.basename(path))
end

--- The domains with a rules file on disk, sorted (for command completion).
---@param learning_dir string
---@return string[]
function M.domains(learning_dir)
  local seen, out = {}, {}
  local handle = uv.fs_scandir(learning_dir .. "/rules")
  while handle do
    local name = uv.fs_scandir_next(handle)
    if not name then
      break
    end
    local domain = split_name(name)
    if domain and not seen[domain] then
      seen[domain] = true
      out[#out + 1] = domain
    end
  end
  table.sort(out)
  return out
end

return M
