--- mecha for Neovim: the `mecha-sidecar lsp` language server on the learning
--- store's rules files, and commands to review what the learner proposes.
---
--- The server does the work — diagnostics, code actions, code lens, accepting
--- and rejecting proposals — and this plugin is wiring around it (the
--- contract is `editors/README.md`):
---
--- * it attaches only to `<learning_dir>/rules/<domain>.{user,learned}.toml`,
---   never to the other TOML files in a session (`mecha.paths` decides);
--- * `:MechaProposals`, `:MechaAccept`, `:MechaReject`, `:MechaLearn`,
---   `:MechaDiff` and `:MechaRulesBlock` call the server's `mecha.*`
---   commands, so they mean exactly what the CLI and the VS Code extension
---   mean;
--- * a proposal's diff opens as a read-only `mecha-proposal:/<id>.diff`
---   scratch buffer, the Neovim form of the contract's virtual document;
--- * `mecha/proposalsChanged` keeps a pending count a statusline can read
---   (`require("mecha").pending()`), and `mecha/jobFinished` says when a
---   background pass ends.
---
--- Neovim ≥ 0.11 gets `vim.lsp.config` + `vim.lsp.enable` with a `root_dir`
--- function that only hands back a root for rules files; older versions get
--- the equivalent `vim.lsp.start` from a `FileType toml` autocmd.

local paths = require("mecha.paths")
local rpc = require("mecha.client")

local M = {}

--- The scheme of a proposal's diff document (shared with VS Code's
--- `TextDocumentContentProvider`): `mecha-proposal:/<id>.diff`.
M.DIFF_SCHEME = "mecha-proposal"
--- Where `:MechaRulesBlock` shows a rules block: `mecha-rules:/<domain>.md`.
M.RULES_SCHEME = "mecha-rules"

---@class mecha.Config
---@field cmd string[] the server command; `mecha-sidecar` must be on PATH unless this names it
---@field learning_dir string? the store root; default `$MECHA_LEARNING_DIR`, else `~/.mecha/learning`
---@field init_options table? more `initializationOptions` (`model`, `finalAnswerNudge`, `harnessVoices`)
---@field notify_jobs boolean announce finished background passes with `vim.notify`
---@field diff_window "edit"|"split"|"vsplit"|"tab" where a diff or rules block opens
---@field on_attach fun(client: vim.lsp.Client, bufnr: integer)?
---@field capabilities table?
---@field start_timeout_ms integer how long a command waits for a server it had to start
---@field codelens boolean show the server's code lens (active rules, budget, pending) in rules buffers
local defaults = {
  cmd = { "mecha-sidecar", "lsp" },
  learning_dir = nil,
  init_options = {},
  notify_jobs = true,
  diff_window = "split",
  on_attach = nil,
  capabilities = nil,
  start_timeout_ms = 10000,
  codelens = true,
}

local state = {
  ---@type mecha.Config?
  config = nil,
  ---@type string? resolved store root
  learning_dir = nil,
  ---@type table? the client config both start paths use
  lsp_config = nil,
  pending = 0,
  ---@type table<string, integer>
  by_domain = {},
}

local function notify(msg, level)
  vim.notify("mecha: " .. msg, level or vim.log.levels.INFO)
end

--- JSON `null` arrives as `vim.NIL`; both it and a missing key mean absent.
local function present(v)
  return v ~= nil and v ~= vim.NIL
end

local function first_line(text)
  if not present(text) then
    return nil
  end
  return (tostring(text):match("^[^\n]*"))
end

--- How much of a proposal's evidence a picker line shows.
local EVIDENCE_WIDTH = 80

--- One line describing a proposal, for pickers: its id, the server's
--- summary of it (`mecha.listProposals`' `summaries`, e.g. `behavior · 3 → 4
--- active rules`; the domain when there is none) and its evidence.
---@param p table a `Proposal` as the wire has it
---@param title string? the server's `ProposalSummary.title` for it
---@return string
function M.describe(p, title)
  local line = ("%s  %s"):format(p.id, present(title) and title or p.domain)
  local evidence = first_line(p.evidence)
  if evidence and evidence ~= "" then
    if vim.fn.strchars(evidence) > EVIDENCE_WIDTH then
      evidence = vim.fn.strcharpart(evidence, 0, EVIDENCE_WIDTH - 1) .. "…"
    end
    line = line .. "  " .. evidence
  end
  return line
end

-- ─── code lens ─────────────────────────────────────────────────────────────

--- Neovim does not advertise `workspace/codeLens/refresh`, so the server
--- cannot ask it to redraw the lens; the plugin refreshes on the events
--- that change what the lens says (attach, writes, proposals changing).
local function refresh_codelens(bufnr)
  if state.config and state.config.codelens and vim.lsp.codelens and vim.api.nvim_buf_is_loaded(bufnr) then
    pcall(vim.lsp.codelens.refresh, { bufnr = bufnr })
  end
end

local function refresh_all_codelens()
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if rpc.get_attached(bufnr) then
      refresh_codelens(bufnr)
    end
  end
end

-- ─── pending count (statusline) ────────────────────────────────────────────

local function set_pending(pending, by_domain)
  state.pending = tonumber(pending) or 0
  state.by_domain = type(by_domain) == "table" and by_domain or {}
  pcall(vim.api.nvim_exec_autocmds, "User", {
    pattern = "MechaProposalsChanged",
    data = { pending = state.pending, by_domain = state.by_domain },
  })
  pcall(vim.cmd.redrawstatus)
  refresh_all_codelens()
end

--- How many proposals are pending, as last heard from the server.
---@return integer
function M.pending()
  return state.pending
end

--- Pending proposals per domain, as last heard from the server.
---@return table<string, integer>
function M.pending_by_domain()
  return vim.deepcopy(state.by_domain)
end

--- A statusline component: `mecha: 2 pending`, or "" when nothing waits.
---@return string
function M.statusline()
  if state.pending == 0 then
    return ""
  end
  return ("mecha: %d pending"):format(state.pending)
end

-- ─── the client ────────────────────────────────────────────────────────────

--- Calls `fn(client)` with a running, initialised mecha client, starting one
--- (attached to no buffer) when none is up.
---@param fn fun(client: vim.lsp.Client)
local function with_client(fn)
  if not state.lsp_config then
    notify('call require("mecha").setup() first', vim.log.levels.ERROR)
    return
  end
  local client = rpc.get(vim.api.nvim_get_current_buf())
  if client then
    fn(client)
    return
  end
  if not rpc.modern() then
    notify(
      ("no server running: open a rules file under %s/rules first"):format(state.learning_dir),
      vim.log.levels.WARN
    )
    return
  end
  local config = vim.tbl_extend("force", state.lsp_config, { name = rpc.NAME, root_dir = state.learning_dir })
  local id = vim.lsp.start(config, { attach = false })
  if not id then
    notify(("could not start %s"):format(table.concat(state.config.cmd, " ")), vim.log.levels.ERROR)
    return
  end
  local deadline = vim.uv.now() + state.config.start_timeout_ms
  local function poll()
    local started = vim.lsp.get_client_by_id(id)
    if started and started.initialized then
      fn(started)
    elseif not started or vim.uv.now() > deadline then
      notify("the server did not start; see :LspLog and :checkhealth mecha", vim.log.levels.ERROR)
    else
      vim.defer_fn(poll, 50)
    end
  end
  poll()
end

-- ─── proposals ─────────────────────────────────────────────────────────────

--- Says the server's line for an accept, a rejection or a retirement
--- (`ReviewedProposalResult.message`): the counts and words are the server's.
local function report_resolution(verb)
  return function(err, result)
    if err then
      notify(("%s failed: %s"):format(verb, rpc.error_text(err)), vim.log.levels.ERROR)
    elseif type(result) == "table" and present(result.message) then
      notify(result.message)
    end
  end
end

--- Accept a pending proposal (an id or a unique prefix): its rules become
--- the domain's learned rules — all but the changes numbered in
--- `opts.without` (as `:MechaDiff` and `proposals show` number them), whose
--- lessons go back to the pool, and `opts.wrong`, whose lessons are marked
--- rejected; `opts.edit` puts rules in the person's words
--- (`{ { number = N, text = "…" } }`).
---@param id string
---@param opts { without: integer[]?, wrong: integer[]?, edit: table[]?, reason: string? }|integer[]?
function M.accept(id, opts)
  local args = { id }
  if type(opts) == "table" and opts[1] ~= nil then
    opts = { without = opts } -- the list of numbers it once took
  end
  if type(opts) == "table" and next(opts) ~= nil then
    local options = {}
    for _, key in ipairs({ "without", "wrong", "edit" }) do
      if type(opts[key]) == "table" and #opts[key] > 0 then
        options[key] = opts[key]
      end
    end
    if present(opts.reason) then
      options.reason = opts.reason
    end
    if next(options) ~= nil then
      args[2] = options
    end
  end
  with_client(function(client)
    rpc.execute(client, "mecha.acceptProposal", args, report_resolution("accept"))
  end)
end

--- Before an accept from a code action runs, what it asks the person:
--- whether a change left out is wrong in itself or by its lesson (only the
--- second marks the lesson rejected, and asks why), and each edited rule
--- in their words, starting from the proposed ones. `done(options)` gets
--- the options to send; `nil` when the person cancelled.
---@param id string
---@param options table
---@param done fun(options: table?)
function M.complete_accept(id, options, done)
  local out = vim.deepcopy(options)
  local edits = type(options.edit) == "table" and vim.deepcopy(options.edit) or {}
  local function ask_edits(i)
    if i > #edits then
      if #edits > 0 then
        out.edit = edits
      end
      done(out)
      return
    end
    vim.ui.input({ prompt = ("Rule %d in your words: "):format(edits[i].number), default = edits[i].text }, function(text)
      if text == nil then
        done(nil)
        return
      end
      text = vim.trim(text)
      if text == "" or text:find("[\r\n]") then
        notify("a rule is one line of words; the accept was not sent", vim.log.levels.ERROR)
        done(nil)
        return
      end
      edits[i].text = text
      ask_edits(i + 1)
    end)
  end
  local without = options.without
  if type(without) ~= "table" or #without == 0 or present(options.reason) then
    ask_edits(1)
    return
  end
  local choices = { "Only this rule (its lessons return to the pool)", "Its lesson is wrong (mark it rejected)" }
  vim.ui.select(choices, { prompt = ("Leave out change %s of %s: what is wrong?"):format(table.concat(without, ", "), id) },
    function(_, index)
      if index == nil then
        done(nil)
      elseif index == 1 then
        ask_edits(1)
      else
        vim.ui.input({ prompt = "Why is the lesson wrong? (optional) " }, function(reason)
          if reason == nil then
            done(nil)
            return
          end
          out.without = nil
          out.wrong = without
          if vim.trim(reason) ~= "" then
            out.reason = vim.trim(reason)
          end
          ask_edits(1)
        end)
      end
    end)
end

--- Reject a pending proposal, with an optional reason.
---@param id string
---@param reason string?
function M.reject(id, reason)
  local args = { id }
  if reason and reason ~= "" then
    args[2] = reason
  end
  with_client(function(client)
    rpc.execute(client, "mecha.rejectProposal", args, report_resolution("reject"))
  end)
end

--- Start a consolidation pass for `domain`; it proposes, never applies, and
--- `mecha/jobFinished` says when it is done.
---@param domain string
function M.learn(domain)
  with_client(function(client)
    rpc.execute(client, "mecha.learnNow", { domain }, function(err, result)
      if err then
        notify(("learn %s failed: %s"):format(domain, rpc.error_text(err)), vim.log.levels.ERROR)
        return
      end
      local job = type(result) == "table" and result.job or nil
      if not present(job) then
        local reason = type(result) == "table" and present(result.reason) and result.reason or "no reason given"
        notify(("no learn pass started for %s: %s"):format(domain, reason))
        return
      end
      notify(("started learn pass %s for %s"):format(job.id, domain))
    end)
  end)
end

-- ─── the diff document ─────────────────────────────────────────────────────

---@param id string
---@return string
function M.diff_name(id)
  return ("%s:/%s.diff"):format(M.DIFF_SCHEME, id)
end

local function find_buffer(name)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_name(buf) == name then
      return buf
    end
  end
  return nil
end

--- Fills `buf` with `text`: read-only, never written, wiped when hidden.
local function fill_scratch(buf, text, filetype)
  local bo = vim.bo[buf]
  bo.buftype = "nofile"
  bo.bufhidden = "wipe"
  bo.swapfile = false
  bo.readonly = false
  bo.modifiable = true
  local lines = vim.split(text or "", "\n", { plain = true })
  if lines[#lines] == "" and #lines > 1 then
    lines[#lines] = nil
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  bo.modifiable = false
  bo.readonly = true
  bo.modified = false
  bo.filetype = filetype
end

local WINDOW_COMMANDS = { split = "split", vsplit = "vsplit", tab = "tabnew" }

--- Shows `text` in the scratch buffer called `name` (reused if it exists)
--- and returns the buffer.
local function show_scratch(name, text, filetype)
  local buf = find_buffer(name)
  if not buf then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  fill_scratch(buf, text, filetype)
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
    return buf
  end
  local open = WINDOW_COMMANDS[state.config and state.config.diff_window or "split"]
  if open then
    vim.cmd(open)
  end
  local scratch = open == "tabnew" and vim.api.nvim_get_current_buf() or nil
  vim.api.nvim_win_set_buf(0, buf)
  if scratch and scratch ~= buf and vim.api.nvim_buf_get_name(scratch) == "" then
    pcall(vim.api.nvim_buf_delete, scratch, {})
  end
  return buf
end

--- Shows `text` as the diff document of proposal `id` and returns its buffer.
---@param id string
---@param text string
---@param name string? the document's name (default `mecha-proposal:/<id>.diff`)
---@return integer bufnr
function M.show_diff(id, text, name)
  return show_scratch(name or M.diff_name(id), text, "diff")
end

--- Fetches proposal `id`'s diff (`mecha/proposal`) and calls
--- `fn(proposal, diff)`; errors are reported and `fn` is not called.
local function fetch_diff(id, fn)
  with_client(function(client)
    rpc.request(client, "mecha/proposal", { id = id }, function(err, result)
      if err then
        notify(("diff of %s failed: %s"):format(id, rpc.error_text(err)), vim.log.levels.ERROR)
      elseif type(result) ~= "table" or type(result.proposal) ~= "table" then
        notify(("diff of %s: the server sent no proposal"):format(id), vim.log.levels.ERROR)
      else
        fn(result.proposal, present(result.diff) and result.diff or "")
      end
    end)
  end)
end

--- Opens the read-only diff of proposal `id` (an id or a unique prefix).
---@param id string
function M.diff(id)
  fetch_diff(id, function(proposal, diff)
    M.show_diff(proposal.id, diff)
  end)
end

--- Lists pending proposals (optionally one domain's) in `vim.ui.select`, then
--- offers accept, reject or the diff for the one picked.
---@param domain string?
function M.proposals(domain)
  local filter = { status = "pending" }
  if domain and domain ~= "" then
    filter.domain = domain
  end
  with_client(function(client)
    rpc.execute(client, "mecha.listProposals", { filter }, function(err, result)
      if err then
        notify("listing proposals failed: " .. rpc.error_text(err), vim.log.levels.ERROR)
        return
      end
      local list = type(result) == "table" and result.proposals or {}
      local titles = {}
      for _, s in ipairs(type(result) == "table" and result.summaries or {}) do
        titles[s.id] = s.title
      end
      if #list == 0 then
        notify("no pending proposals" .. (filter.domain and (" for " .. filter.domain) or ""))
        return
      end
      local function describe(p)
        return M.describe(p, titles[p.id])
      end
      vim.ui.select(list, { prompt = "Pending mecha proposals", format_item = describe }, function(p)
        if not p then
          return
        end
        local choices = { "Accept", "Reject", "Show diff" }
        vim.ui.select(choices, { prompt = "Proposal " .. p.id }, function(choice)
          if choice == "Accept" then
            M.accept(p.id)
          elseif choice == "Reject" then
            vim.ui.input({ prompt = "Reason (optional): " }, function(reason)
              if reason ~= nil then
                M.reject(p.id, reason)
              end
            end)
          elseif choice == "Show diff" then
            M.diff(p.id)
          end
        end)
      end)
    end)
  end)
end

local function show_rules_block(domain, err, result)
  if err then
    notify("rules block failed: " .. rpc.error_text(err), vim.log.levels.ERROR)
    return
  end
  local block = type(result) == "table" and present(result.block) and result.block or nil
  if not block then
    notify("no rules block: no active rule in " .. ((domain and domain ~= "") and domain or "the run domains"))
    return
  end
  local name = ("%s:/%s.md"):format(M.RULES_SCHEME, (domain and domain ~= "") and domain or "run")
  show_scratch(name, block, "markdown")
end

--- Shows the rules block a run exercising `domain` would carry (all run
--- domains when nil), read-only, in `mecha-rules:/<domain>.md`.
---@param domain string?
function M.rules_block(domain)
  local args = (domain and domain ~= "") and { domain } or {}
  with_client(function(client)
    rpc.execute(client, "mecha.showRulesBlock", args, function(err, result)
      show_rules_block(domain, err, result)
    end)
  end)
end

-- ─── notifications and client-side commands ────────────────────────────────

local function on_proposals_changed(_, params)
  if type(params) == "table" then
    set_pending(params.pending, params.by_domain)
  end
end

local JOB_LEVELS = { done = vim.log.levels.INFO, failed = vim.log.levels.WARN }

local function on_job_finished(_, params)
  local job = type(params) == "table" and params.job or nil
  if type(job) ~= "table" then
    return
  end
  pcall(vim.api.nvim_exec_autocmds, "User", { pattern = "MechaJobFinished", data = job })
  if not (state.config and state.config.notify_jobs) then
    return
  end
  local msg = ("%s pass%s %s"):format(
    job.kind or "background",
    present(job.domain) and (" for " .. job.domain) or "",
    job.state or "finished"
  )
  local outcome = first_line(job.outcome)
  if outcome and outcome ~= "" then
    msg = msg .. ": " .. outcome
  end
  if present(job.proposal_id) then
    msg = msg .. (" — review with :MechaDiff %s"):format(job.proposal_id)
  end
  notify(msg, JOB_LEVELS[job.state] or vim.log.levels.INFO)
end

--- Code actions run these through `client:exec_cmd`; handling them here
--- forwards them unchanged and shows what came back, which Neovim would
--- otherwise drop (a diff result has nowhere else to go).
local function forward(command_name, on_result)
  return function(command, ctx)
    local client = vim.lsp.get_client_by_id(ctx.client_id) or rpc.get(ctx.bufnr)
    if not client then
      notify("no server running", vim.log.levels.ERROR)
      return
    end
    rpc.execute(client, command_name, command.arguments or {}, on_result, ctx.bufnr)
  end
end

local client_commands = {
  ["mecha.acceptProposal"] = function(command, ctx)
    local args = command.arguments or {}
    if type(args[1]) ~= "string" or type(args[2]) ~= "table" then
      return forward("mecha.acceptProposal", report_resolution("accept"))(command, ctx)
    end
    M.complete_accept(args[1], args[2], function(options)
      if options ~= nil then
        local asked = vim.deepcopy(command)
        asked.arguments = { args[1], options }
        forward("mecha.acceptProposal", report_resolution("accept"))(asked, ctx)
      end
    end)
  end,
  ["mecha.rejectProposal"] = forward("mecha.rejectProposal", report_resolution("reject")),
  ["mecha.showProposalDiff"] = forward("mecha.showProposalDiff", function(err, result)
    if err then
      notify("diff failed: " .. rpc.error_text(err), vim.log.levels.ERROR)
    elseif type(result) == "table" and present(result.id) then
      M.show_diff(result.id, present(result.diff) and result.diff or "", present(result.uri) and result.uri or nil)
    end
  end),
  ["mecha.proposeRetirement"] = forward("mecha.proposeRetirement", function(err, result)
    if err then
      notify("proposing the retirement failed: " .. rpc.error_text(err), vim.log.levels.ERROR)
    elseif type(result) == "table" and present(result.message) and type(result.proposal) == "table" then
      notify(("%s (:MechaDiff %s)"):format(result.message, result.proposal.id))
    end
  end),
  -- The code lens's commands: a pending count opens the picker, the rule
  -- and character counts show the rules block they count.
  ["mecha.listProposals"] = function(command)
    local filter = command.arguments and command.arguments[1]
    M.proposals(type(filter) == "table" and present(filter.domain) and filter.domain or nil)
  end,
  ["mecha.showRulesBlock"] = function(command, ctx)
    local domain = command.arguments and command.arguments[1]
    domain = present(domain) and domain or nil
    forward("mecha.showRulesBlock", function(err, result)
      show_rules_block(domain, err, result)
    end)(command, ctx)
  end,
}

-- ─── setup ─────────────────────────────────────────────────────────────────

local function is_rules_buffer(bufnr)
  if vim.bo[bufnr].buftype ~= "" then
    return false
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  return name ~= "" and paths.rules_file(paths.resolve(name), state.learning_dir) ~= nil
end

--- Whether `bufnr` is one of the store's rules files (the buffers mecha
--- attaches to).
---@param bufnr integer?
---@return boolean
function M.is_rules_buffer(bufnr)
  return state.learning_dir ~= nil and is_rules_buffer(bufnr or vim.api.nvim_get_current_buf())
end

--- The server command in use.
---@return string[]?
function M.server_cmd()
  return state.config and state.config.cmd
end

--- The resolved store root in use.
---@return string?
function M.learning_dir()
  return state.learning_dir
end

local function complete_domains(arglead)
  return vim.tbl_filter(function(d)
    return vim.startswith(d, arglead)
  end, paths.domains(state.learning_dir))
end

local function complete_pending(arglead)
  local client = rpc.get()
  if not client then
    return {}
  end
  local response = rpc.request_sync(
    client,
    "workspace/executeCommand",
    { command = "mecha.listProposals", arguments = { { status = "pending" } } },
    1000
  )
  local result = response and response.result
  local ids = {}
  for _, p in ipairs(type(result) == "table" and result.proposals or {}) do
    if vim.startswith(p.id, arglead) then
      ids[#ids + 1] = p.id
    end
  end
  return ids
end

local function create_commands()
  local command = vim.api.nvim_create_user_command
  command("MechaProposals", function(o)
    M.proposals(o.args)
  end, { nargs = "?", complete = complete_domains, desc = "mecha: review pending proposals" })
  command("MechaAccept", function(o)
    -- :MechaAccept ID [N …] [wrong N …] [edit N words…]
    local opts = { without = {}, wrong = {} }
    local rest = vim.list_slice(o.fargs, 2)
    local into = opts.without
    local i = 1
    while i <= #rest do
      local word = rest[i]
      if word == "wrong" then
        into = opts.wrong
      elseif word == "edit" then
        local number = tonumber(rest[i + 1] or "")
        local text = table.concat(vim.list_slice(rest, i + 2), " ")
        if not number or text == "" then
          notify("MechaAccept: say `edit N the rule in your words`", vim.log.levels.ERROR)
          return
        end
        opts.edit = { { number = number, text = text } }
        break
      else
        local number = tonumber(word)
        if not number then
          notify(("MechaAccept: %s is not a change number (see the proposal's numbered changes)"):format(word), vim.log.levels.ERROR)
          return
        end
        into[#into + 1] = number
      end
      i = i + 1
    end
    M.accept(o.fargs[1], opts)
  end, {
    nargs = "+",
    complete = complete_pending,
    desc = "mecha: accept a proposal [without change N …] [wrong N …] [edit N words…]",
  })
  command("MechaReject", function(o)
    local reason = table.concat(vim.list_slice(o.fargs, 2), " ")
    M.reject(o.fargs[1], reason)
  end, { nargs = "+", complete = complete_pending, desc = "mecha: reject a proposal [reason]" })
  command("MechaLearn", function(o)
    M.learn(o.fargs[1])
  end, { nargs = 1, complete = complete_domains, desc = "mecha: start a learn pass for a domain" })
  command("MechaDiff", function(o)
    M.diff(o.fargs[1])
  end, { nargs = 1, complete = complete_pending, desc = "mecha: show a proposal's diff" })
  command("MechaRulesBlock", function(o)
    M.rules_block(o.args)
  end, { nargs = "?", complete = complete_domains, desc = "mecha: show the rules block a run would get" })
end

local function create_autocmds(group)
  -- `:edit mecha-proposal:/<id>.diff` works too, like VS Code's provider.
  vim.api.nvim_create_autocmd("BufReadCmd", {
    group = group,
    pattern = M.DIFF_SCHEME .. ":/*",
    callback = function(args)
      local id = args.match:match("^" .. vim.pesc(M.DIFF_SCHEME) .. ":/(.+)%.diff$")
      if not id then
        return
      end
      fill_scratch(args.buf, "", "diff")
      fetch_diff(id, function(_, diff)
        if vim.api.nvim_buf_is_valid(args.buf) then
          fill_scratch(args.buf, diff, "diff")
        end
      end)
    end,
  })
end

--- Configure and enable the mecha language server.
---@param opts mecha.Config?
function M.setup(opts)
  opts = opts or {}
  local config = vim.tbl_extend("force", defaults, opts)
  config.init_options = vim.tbl_extend("force", {}, defaults.init_options, opts.init_options or {})
  state.config = config
  state.learning_dir = paths.resolve(config.learning_dir or paths.default_learning_dir())

  local init_options = vim.tbl_extend("force", config.init_options, { learningDir = state.learning_dir })
  state.lsp_config = {
    cmd = config.cmd,
    filetypes = { "toml" },
    init_options = init_options,
    -- This client handles the `mecha/*` notifications and shows command
    -- results itself; the server sends neither to a client that does not
    -- say so (it shows those through `window/showMessage` and
    -- `window/showDocument` instead).
    capabilities = vim.tbl_deep_extend(
      "force",
      vim.lsp.protocol.make_client_capabilities(),
      config.capabilities or {},
      { experimental = { mecha = { notifications = true, showsResults = true } } }
    ),
    handlers = {
      ["mecha/proposalsChanged"] = on_proposals_changed,
      ["mecha/jobFinished"] = on_job_finished,
    },
    commands = client_commands,
    on_attach = function(client, bufnr)
      if config.codelens then
        refresh_codelens(bufnr)
        vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave", "BufWritePost" }, {
          group = vim.api.nvim_create_augroup("mecha_codelens_" .. bufnr, { clear = true }),
          buffer = bufnr,
          callback = function()
            refresh_codelens(bufnr)
          end,
        })
      end
      if config.on_attach then
        config.on_attach(client, bufnr)
      end
    end,
  }

  local group = vim.api.nvim_create_augroup("mecha", { clear = true })
  create_autocmds(group)
  create_commands()

  if rpc.modern() then
    local lsp_config = vim.tbl_extend("force", state.lsp_config, {
      root_dir = function(bufnr, on_dir)
        if is_rules_buffer(bufnr) then
          on_dir(state.learning_dir)
        end
      end,
    })
    vim.lsp.config(rpc.NAME, lsp_config)
    vim.lsp.enable(rpc.NAME)
    return
  end

  -- Neovim < 0.11: start (or reuse) the client from each rules buffer.
  local function start(bufnr)
    if is_rules_buffer(bufnr) then
      local config_for_buf = vim.tbl_extend("force", state.lsp_config, { name = rpc.NAME, root_dir = state.learning_dir })
      vim.lsp.start(config_for_buf, { bufnr = bufnr })
    end
  end
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "toml",
    callback = function(args)
      start(args.buf)
    end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].filetype == "toml" then
      start(bufnr)
    end
  end
end

return M
