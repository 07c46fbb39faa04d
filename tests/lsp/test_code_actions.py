"""Every code action of the contract, applied or run, then checked against
the store and the rules block a run would get (`mecha/rulesPromptBlock`,
through the same client)."""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Sequence

from lsprotocol import types as lsp

from tests.builders import rule

from .conftest import MechaClient, Store, has_code


def by_title(actions: Sequence[lsp.CodeAction]) -> dict[str, lsp.CodeAction]:
    titles = [a.title for a in actions]
    assert len(set(titles)) == len(titles), f"an action listed twice: {titles}"
    return {a.title: a for a in actions}


class Ask:
    """One way an editor asks for code actions, as its source spells it:
    the `context.only` it sends, its trigger, and whether it then hides
    `source` actions itself."""

    def __init__(self, name: str, only: list[str] | None, trigger: lsp.CodeActionTriggerKind, hides_source: bool):
        self.name, self.only, self.trigger, self.hides_source = name, only, trigger, hides_source

    async def shown(self, client: MechaClient, uri: str, line: int, end_line: int | None = None) -> list[lsp.CodeAction]:
        got = await client.code_actions(uri, line, end_line, only=self.only, trigger=self.trigger)
        if self.hides_source:
            got = [a for a in got if not str(a.kind or "").startswith("source")]
        return got

    def __repr__(self) -> str:
        return self.name


INVOKED, AUTOMATIC = lsp.CodeActionTriggerKind.Invoked, lsp.CodeActionTriggerKind.Automatic
#: How each editor asks. VS Code (`editor.action.quickFix`, Ctrl+.) and its
#: lightbulb send no filter and drop `source` kinds from what they list; the
#: "Quick Fix…" link in a diagnostic's hover sends `only: ["quickfix"]`; the
#: Source Action… menu `only: ["source"]`. Neovim's
#: `vim.lsp.buf.code_action()` sends `only` only when its caller passes one.
CTRL_DOT = Ask("VS Code Ctrl+.", None, INVOKED, hides_source=True)
LIGHTBULB = Ask("VS Code lightbulb", None, AUTOMATIC, hides_source=True)
HOVER_QUICK_FIX = Ask("VS Code hover Quick Fix", ["quickfix"], INVOKED, hides_source=True)
SOURCE_ACTION = Ask("VS Code Source Action", ["source"], INVOKED, hides_source=False)
NEOVIM = Ask("Neovim code_action()", None, INVOKED, hides_source=False)
EDITOR_ASKS = [CTRL_DOT, LIGHTBULB, HOVER_QUICK_FIX, SOURCE_ACTION, NEOVIM]


async def run(client: MechaClient, action: lsp.CodeAction) -> dict:
    assert action.command is not None, action
    return await client.command(action.command.command, *(action.command.arguments or []))


def offset(text: str, pos: lsp.Position) -> int:
    """A UTF-16 position as an index into `text`."""
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[: pos.line])
    units = 0
    for i, ch in enumerate(lines[pos.line] if pos.line < len(lines) else ""):
        if units >= pos.character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(lines[pos.line]) if pos.line < len(lines) else len(text)


def apply_workspace_edit(text: str, uri: str, edit: lsp.WorkspaceEdit | None) -> str:
    """What an editor does with a quick fix's edit: the text edits for
    `uri`, applied from the last to the first."""
    assert edit is not None and edit.changes is not None and set(edit.changes) == {uri}, edit
    for e in sorted(edit.changes[uri], key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(text, e.range.start)] + e.new_text + text[offset(text, e.range.end) :]
    return text


def changed_lines(before: str, after: str) -> set[int]:
    """Lines of `before` that the edit replaced or inserted beside."""
    out: set[int] = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, before.split("\n"), after.split("\n")).get_opcodes():
        if tag != "equal":
            out.update(range(i1, max(i2, i1 + 1)))
    return out


# ─── proposals: accept, reject, show diff ───────────────────────────────────


async def test_accept_writes_the_proposals_rules_and_the_block_carries_them(
    client: MechaClient, store: Store
) -> None:
    store.reflexion("refl-a", "Keep replies short when the person is in a hurry.")
    learned = store.learned("behavior", [rule("Ask before deleting files", "r-1")])
    wanted = [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2", sources=["refl-a"])]
    store.proposal("p-acc", wanted, reflexion_ids=["refl-a"])
    uri, diags = await client.open(learned)
    assert [d.code for d in diags] == ["pending-proposal"]
    assert "Keep replies short" not in (await client.block("behavior") or "")

    (pending,) = diags
    actions = by_title(await CTRL_DOT.shown(client, uri, 0))
    accept = actions["Accept proposal p-acc (1 → 2 active behavior rules)"]
    for title in ("Accept proposal p-acc (1 → 2 active behavior rules)", "Reject proposal p-acc", "Show diff of proposal p-acc"):
        assert actions[title].kind == lsp.CodeActionKind.QuickFix
        # attached to the diagnostic, so its lightbulb and hover list it
        assert list(actions[title].diagnostics or []) == [pending]
    assert accept.command is not None and accept.command.command == "mecha.acceptProposal"
    source = by_title(await SOURCE_ACTION.shown(client, uri, 0))
    assert source["Accept proposal p-acc (1 → 2 active behavior rules)"].kind == lsp.CodeActionKind.Source

    events, since = client.event_mark(), client.mark()
    result = await run(client, accept)
    assert result["proposal"]["id"] == "p-acc" and result["proposal"]["status"] == "accepted"

    # The store: learned.toml holds the proposal's rules, the proposal is
    # accepted, its reflection is processed.
    assert [(r.text, r.id) for r in store.store.learned_rules("behavior")] == [(r.text, r.id) for r in wanted]
    assert store.status("p-acc") == "accepted"
    assert all(r.is_processed for r in store.store.reflexions() if r.id == "refl-a")
    # The block a run gets now carries the new rule.
    block = await client.block("behavior")
    assert block is not None and "- Keep replies short" in block and "- Ask before deleting files" in block

    # The editor hears of it: no pending proposal, and no more accept action.
    changed = await client.event("mecha/proposalsChanged", since=events, where=lambda p: p["pending"] == 0)
    assert changed == {"pending": 0, "by_domain": {}}
    assert await client.wait_diagnostics(uri, since=since, where=lambda d: not d) == []
    assert not [a for a in await client.code_actions(uri, 0) if "p-acc" in a.title]


async def test_a_code_action_per_change_accepts_the_proposal_without_it(client: MechaClient, store: Store) -> None:
    # Pins: review all or nothing from an editor — one doubtful rule meant
    # rejecting the batch, or accepting and retiring.
    store.reflexion("refl-a", "Keep replies short when the person is in a hurry.")
    store.reflexion("refl-b", "Quote the exact error message.")
    learned = store.learned("behavior", [rule("Ask before deleting files", "r-1")])
    wanted = [
        rule("Ask before deleting files", "r-1"),
        rule("Keep replies short", "r-2", sources=["refl-a"]),
        rule("Quote the exact error message", "r-3", sources=["refl-b"]),
    ]
    store.proposal("p-wo", wanted, reflexion_ids=["refl-a", "refl-b"])
    uri, diags = await client.open(learned)
    for ask in EDITOR_ASKS:
        titles = [a.title for a in await ask.shown(client, uri, 0) if "p-wo" in a.title]
        assert [t for t in titles if t.startswith("Leave out")] == [
            "Leave out change 1 (added: “Keep replies short”), accept the rest of proposal p-wo",
            "Leave out change 2 (added: “Quote the exact error message”), accept the rest of proposal p-wo",
        ], ask
    leave = by_title(await CTRL_DOT.shown(client, uri, 0))[
        "Leave out change 1 (added: “Keep replies short”), accept the rest of proposal p-wo"
    ]
    assert leave.command is not None and list(leave.command.arguments or []) == ["p-wo", {"without": [1]}]
    assert list(leave.diagnostics or []) == diags
    result = await run(client, leave)
    assert result["proposal"]["status"] == "accepted"
    assert [r.id for r in store.store.learned_rules("behavior")] == ["r-1", "r-3"]
    marks = {r.id: (r.is_processed, r.rejected) for r in store.store.reflexions()}
    assert marks == {"refl-a": (False, None), "refl-b": (True, None)}, "a rule left out returns its lesson to the pool"


async def test_an_edit_action_carries_the_proposed_words_and_lands_the_persons(client: MechaClient, store: Store) -> None:
    # Pins: an editor that could accept, leave out or reject a rule, but not
    # fix its words.
    store.reflexion("refl-a", "Keep replies short.")
    learned = store.learned("behavior", [rule("Ask before deleting files", "r-1")])
    wanted = [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2", sources=["refl-a"])]
    store.proposal("p-ed", wanted, reflexion_ids=["refl-a"])
    uri, _ = await client.open(learned)
    edit = by_title(await NEOVIM.shown(client, uri, 0))[
        "Edit change 1 (added: “Keep replies short”) in your words, accept proposal p-ed"
    ]
    assert edit.command is not None
    pid, options = list(edit.command.arguments or [])
    assert (pid, options) == ("p-ed", {"edit": [{"number": 1, "text": "Keep replies short"}]})
    # What a client sends once the person has typed their words.
    result = await client.command(edit.command.command, pid, {"edit": [{"number": 1, "text": "Answer in three lines or fewer."}]})
    assert result["proposal"]["status"] == "accepted"
    assert [r.text for r in store.store.learned_rules("behavior")] == ["Ask before deleting files", "Answer in three lines or fewer."]


async def test_reject_leaves_the_learned_file_alone(client: MechaClient, store: Store) -> None:
    learned = store.learned("behavior", [rule("Ask before deleting files", "r-1")])
    before = learned.read_bytes()
    store.proposal("p-rej", [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2")])
    uri, _ = await client.open(learned)

    reject = by_title(await NEOVIM.shown(client, uri, 0))["Reject proposal p-rej"]
    assert reject.command is not None and reject.command.command == "mecha.rejectProposal"
    since = client.mark()
    result = await run(client, reject)
    assert result["proposal"]["status"] == "rejected"

    assert store.status("p-rej") == "rejected"
    assert learned.read_bytes() == before
    assert "Keep replies short" not in (await client.block("behavior") or "")
    assert await client.wait_diagnostics(uri, since=since, where=lambda d: not d) == []

    # A reason travels with the command (`[id, reason?]`).
    store.proposal("p-rej2", [rule("Keep replies short", "r-2")])
    result = await client.command("mecha.rejectProposal", "p-rej2", "too vague")
    assert result["proposal"]["reason"] == "too vague"
    assert store.store.proposal("p-rej2").reason == "too vague"


async def test_show_diff_returns_the_virtual_document(client: MechaClient, store: Store) -> None:
    learned = store.learned("behavior", [rule("Ask before deleting files", "r-1")])
    store.proposal("p-diff", [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2")])
    uri, _ = await client.open(learned)

    show = by_title(await HOVER_QUICK_FIX.shown(client, uri, 0))["Show diff of proposal p-diff"]
    result = await run(client, show)
    assert result["uri"] == "mecha-proposal:/p-diff.diff"
    assert result["id"] == "p-diff"
    diff = result["diff"]
    lines = diff.splitlines()
    assert lines[0].startswith("--- ") and lines[1].startswith("+++ ") and lines[2].startswith("@@ ")
    assert "+- Keep replies short" in lines
    assert " - Ask before deleting files" in lines
    # The same text `mecha/proposal` gives: one handler behind both.
    assert (await client.request("mecha/proposal", {"id": "p-diff"}))["diff"] == diff
    # Showing changes nothing.
    assert store.status("p-diff") == "pending"


async def test_one_set_of_actions_per_pending_proposal_only_on_the_learned_file(
    client: MechaClient, store: Store
) -> None:
    learned = store.learned("behavior", [rule("Ask first", "r-1")])
    user = store.write("behavior", "user", '[[rules]]\ntext = "Answer in English"\n')
    store.proposal("p-1", [rule("Ask first", "r-1"), rule("Two", "r-2")])
    store.proposal("p-2", [rule("Three", "r-3")])
    store.proposal("p-w", [rule("Sign with the first name", "w-1")], domain="writing", rules_before=[])
    luri, _ = await client.open(learned)
    uuri, _ = await client.open(user)

    # Pins: a proposal reviewable only from line 0, or listed once per line.
    lines = learned.read_text().count("\n")
    titles = sorted(a.title for a in await SOURCE_ACTION.shown(client, luri, lines - 1))
    assert titles == [
        "Accept proposal p-1 (1 → 2 active behavior rules)",
        "Accept proposal p-2 (1 → 1 active behavior rules)",
        # Each rule a proposal adds can be put in the person's words.
        "Edit change 1 (added: “Three”) in your words, accept proposal p-2",
        "Edit change 1 (added: “Two”) in your words, accept proposal p-1",
        # p-2 makes two changes: each can be left out (p-1's one cannot).
        "Leave out change 1 (added: “Three”), accept the rest of proposal p-2",
        "Leave out change 2 (removed: “Ask first”), accept the rest of proposal p-2",
        "Reject proposal p-1",
        "Reject proposal p-2",
        "Show diff of proposal p-1",
        "Show diff of proposal p-2",
    ]
    assert not [a for a in await SOURCE_ACTION.shown(client, uuri, 0, 1)]
    # Ctrl+. on line 0 lists each pending proposal's review once, as quick fixes.
    quick = sorted(a.title for a in await CTRL_DOT.shown(client, luri, 0) if "proposal" in a.title)
    assert quick == titles


# ─── propose retirement ─────────────────────────────────────────────────────


async def test_propose_retirement_on_a_rule_with_attributed_regressions(client: MechaClient, store: Store) -> None:
    learned = store.learned("behavior", [rule("Ask first", "r-1"), rule("Run every test after each edit", "r-2")])
    store.regressions("r-2", 2)
    uri, diags = await client.open(learned)
    (flagged,) = [d for d in diags if d.code == "attributed-regressions"]
    first, last = flagged.range.start.line, flagged.range.end.line

    # Offered on that rule's lines, and not on the clean rule's.
    on_r2 = by_title(await client.code_actions(uri, first, last))
    retire = on_r2["Propose retiring rule r-2"]
    assert retire.kind == lsp.CodeActionKind.QuickFix
    assert retire.command is not None and retire.command.command == "mecha.proposeRetirement"
    lines = learned.read_text().splitlines()
    r1_line = lines.index('text = "Ask first"')
    assert not [a for a in await client.code_actions(uri, r1_line) if a.title.startswith("Propose retiring")]

    events, since = client.event_mark(), client.mark()
    result = await run(client, retire)
    proposal = result["proposal"]
    assert proposal["status"] == "pending" and proposal["domain"] == "behavior"

    # A new pending proposal whose only change is retiring r-2.
    p = store.store.proposal(proposal["id"])
    assert p.status.value == "pending"
    assert [r.id for r in p.rules_before] == ["r-1", "r-2"]
    after = {r.id: r for r in p.rules}
    assert after["r-1"].retired_at is None
    assert after["r-2"].retired_at is not None
    assert "2 attributed regression" in (after["r-2"].retired_reason or "")
    # The live rules are untouched until a person accepts.
    assert all(r.retired_at is None for r in store.store.learned_rules("behavior"))

    await client.event("mecha/proposalsChanged", since=events, where=lambda p: p["pending"] == 1)
    diags = await client.wait_diagnostics(uri, since=since, where=has_code("pending-proposal"))
    assert [d.data["proposal_id"] for d in diags if d.code == "pending-proposal"] == [p.id]
    assert f"Reject proposal {p.id}" in by_title(await CTRL_DOT.shown(client, uri, 0))


# ─── disable / enable quick fixes ───────────────────────────────────────────

COMMENTED = '''\
# Learned rules, with my notes.

# keep this one
[[rules]]
text = "Ask before deleting files"
enabled = true   # I checked this
id = "r-1"

# this one is noisy
[[rules]]
text = """
Keep replies short
and to the point"""
id = "r-2"

[[rules]]
text = "Sign with the first name"
id = "r-3"
'''


async def toggle(client: MechaClient, uri: str, path, title: str, line: int) -> tuple[str, str]:
    """Find the quick fix `title` on `line`, apply its edit to the buffer,
    send it as an edit, save it: `(before, after)`."""
    before = client.texts[uri]
    action = by_title(await client.code_actions(uri, line))[title]
    assert action.kind == lsp.CodeActionKind.QuickFix
    assert action.command is None
    after = apply_workspace_edit(before, uri, action.edit)
    await client.change(uri, after)
    await client.save(uri, path)
    return before, after


def rule_lines(text: str, needle: str) -> range:
    """The lines of the `[[rules]]` table holding `needle` (header to its last line)."""
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if needle in line)
    header = max(i for i in range(at + 1) if lines[i] == "[[rules]]")
    end = next((i for i in range(at, len(lines)) if lines[i] == "" or lines[i].startswith("#")), len(lines))
    return range(header, end)


async def test_disable_and_enable_touch_only_that_rule_and_keep_comments(client: MechaClient, store: Store) -> None:
    path = store.write("behavior", "learned", COMMENTED)
    uri, diags = await client.open(path)
    assert diags == []
    block = await client.block("behavior")
    assert block is not None and "- Ask before deleting files" in block and "Keep replies short" in block

    # r-1 has `enabled = true # …`: the value is replaced, the comment stays.
    before, after = await toggle(client, uri, path, "Disable rule r-1", 4)
    assert changed_lines(before, after) <= set(rule_lines(before, "Ask before deleting"))
    assert "enabled = false   # I checked this" in after
    assert [line for line in after.split("\n") if line.startswith("#")] == [
        line for line in before.split("\n") if line.startswith("#")
    ]
    assert tomllib.loads(after)["rules"][0]["enabled"] is False
    block = await client.block("behavior")
    assert block is not None and "Ask before deleting files" not in block and "Keep replies short" in block

    # r-2 has no `enabled` and a multi-line text: a line is inserted after
    # the string's closing line, and nothing else moves.
    before, after = await toggle(client, uri, path, "Disable rule r-2", 11)
    assert changed_lines(before, after) <= set(rule_lines(before, "Keep replies short"))
    assert 'and to the point"""\nenabled = false\nid = "r-2"' in after
    assert before.replace('and to the point"""\n', 'and to the point"""\nenabled = false\n') == after
    block = await client.block("behavior")
    assert block is not None and "Keep replies short" not in block and "- Sign with the first name" in block

    # And back: enabling restores exactly what the rule said, comments and all.
    _, after = await toggle(client, uri, path, "Enable rule r-1", 5)
    _, after = await toggle(client, uri, path, "Enable rule r-2", 12)
    # r-1's value is back to `true`; r-2 keeps the line it gained, now `true`.
    assert after.replace('enabled = true\nid = "r-2"', 'id = "r-2"') == COMMENTED
    block = await client.block("behavior")
    assert block is not None and "- Ask before deleting files" in block and "Keep replies short" in block
    assert path.read_text() == after


async def test_quick_fixes_on_the_persons_own_file(client: MechaClient, store: Store) -> None:
    text = '# mine\n[[rules]]\ntext = "Answer in English" # always\n\n[[rules]]\ntext = "Use metric units"\n'
    path = store.write("behavior", "user", text)
    uri, _ = await client.open(path)
    actions = await client.code_actions(uri, 2)
    # A rule without an id: the plain title; no proposal actions on a user file.
    assert [a.title for a in actions] == ["Disable rule"]
    before, after = await toggle(client, uri, path, "Disable rule", 2)
    assert after == text.replace("# always\n", "# always\nenabled = false\n")
    block = await client.block("behavior")
    assert block is not None and "Answer in English" not in block and "- Use metric units" in block


async def test_no_quick_fix_on_a_document_that_does_not_parse(client: MechaClient, store: Store) -> None:
    path = store.write("behavior", "user", '[[rules]]\ntext = "Answer in English"\n')
    uri, _ = await client.open(path)
    await client.change(uri, '[[rules]]\ntext = "Answer in English"\n[[rules\n')
    assert await client.code_actions(uri, 0, 2) == []


# ─── proposal review under the lightbulb, however the editor asks ──────────


async def test_every_way_an_editor_asks_lists_a_pending_proposals_review_once(
    client: MechaClient, store: Store
) -> None:
    # Pins: accept/reject/diff reachable only through the Source Action menu
    # (Ctrl+. hides `source` kinds), or listed twice to a client asking unfiltered.
    learned = store.learned("behavior", [rule("Ask first", "r-1")])
    store.proposal("p-1", [rule("Ask first", "r-1"), rule("Two", "r-2")])
    uri, _ = await client.open(learned)
    review = {"Accept proposal p-1 (1 → 2 active behavior rules)", "Reject proposal p-1", "Show diff of proposal p-1"}
    for ask in EDITOR_ASKS:
        shown = by_title(await ask.shown(client, uri, 0))
        assert review <= set(shown), (ask, sorted(shown))
        want = lsp.CodeActionKind.Source if ask is SOURCE_ACTION else lsp.CodeActionKind.QuickFix
        assert {shown[t].kind for t in review} == {want}, ask
    # Off line 0 only the Source Action menu (and an unfiltered Neovim) reach it.
    assert review <= {a.title for a in await SOURCE_ACTION.shown(client, uri, 2)}
    assert review <= {a.title for a in await NEOVIM.shown(client, uri, 2)}
    assert not review & {a.title for a in await CTRL_DOT.shown(client, uri, 2)}


# ─── quick fixes on the other diagnostics ──────────────────────────────────

DUPLICATED = '''\
# My learned rules.

# the original
[[rules]]
text = "Never edit reports/."
id = "r-1"

# a copy a pass left behind
[[rules]]
text = "never edit  reports/"
id = "r-2"

# keep this note: it is about nothing above
[[rules]]
text = "Sign with the first name"  # mine
id = "r-3"
'''


async def fix(client: MechaClient, uri: str, code: str, ask: Ask = CTRL_DOT) -> tuple[lsp.Diagnostic, list[lsp.CodeAction]]:
    """The diagnostic `code` now published on `uri`, and the actions
    attached to it that `ask` lists on its lines."""
    (d,) = [d for d in client.diagnostics_of(uri) if d.code == code]
    actions = await ask.shown(client, uri, d.range.start.line, d.range.end.line)
    return d, [a for a in actions if list(a.diagnostics or []) == [d]]


async def apply(client: MechaClient, uri: str, path, action: lsp.CodeAction) -> str:
    before = client.texts[uri]
    after = apply_workspace_edit(before, uri, action.edit)
    since = client.mark()
    await client.change(uri, after)
    await client.save(uri, path)
    await client.wait_diagnostics(uri, since=since, version=client.versions[uri])
    return after


async def test_remove_duplicate_rule_deletes_the_copy_and_its_comment_only(client: MechaClient, store: Store) -> None:
    # Pins: a duplicate that can only be fixed by hand, or a fix that takes
    # the original, a neighbour's comment or the file's layout with it.
    path = store.write("behavior", "learned", DUPLICATED)
    uri, diags = await client.open(path)
    assert [d.code for d in diags] == ["duplicate-rule"]
    for ask in (HOVER_QUICK_FIX, NEOVIM):
        _, attached = await fix(client, uri, "duplicate-rule", ask)
        assert [a.title for a in attached] == ["Remove duplicate rule r-2"], ask
    _, (remove,) = await fix(client, uri, "duplicate-rule")
    assert remove.kind == lsp.CodeActionKind.QuickFix and remove.is_preferred and remove.command is None
    after = await apply(client, uri, path, remove)
    assert after == DUPLICATED.replace('# a copy a pass left behind\n[[rules]]\ntext = "never edit  reports/"\nid = "r-2"\n\n', "")
    assert client.diagnostics_of(uri) == []
    assert [r.id for r in store.store.learned_rules("behavior")] == ["r-1", "r-3"]
    block = await client.block("behavior")
    assert block is not None and block.count("ever edit") == 1 and "- Sign with the first name" in block


async def test_remove_the_learned_copy_of_a_persons_own_rule(client: MechaClient, store: Store) -> None:
    # Pins: the prompt carrying a person's rule twice with no one-step way out.
    store.write("behavior", "user", '[[rules]]\ntext = "Answer in English"\n')
    text = '[[rules]]\ntext = "Keep replies short"\nid = "r-0"\n\n[[rules]]\ntext = "answer in english."\nid = "r-1"\n'
    path = store.write("behavior", "learned", text)
    uri, diags = await client.open(path)
    assert [d.code for d in diags] == ["restates-user-rule"]
    _, (remove,) = await fix(client, uri, "restates-user-rule")
    assert remove.title == "Remove learned copy r-1 of your rule"
    after = await apply(client, uri, path, remove)
    assert after == '[[rules]]\ntext = "Keep replies short"\nid = "r-0"\n'
    assert client.diagnostics_of(uri) == []
    block = await client.block("behavior")
    assert block is not None and block.lower().count("answer in english") == 1


async def test_a_retired_rule_left_enabled_gets_enabled_false(client: MechaClient, store: Store) -> None:
    # Pins: `retired-enabled` with no fix, or a fix that un-retires the rule.
    text = (
        '[[rules]]\ntext = "Ask first"\nid = "r-1"\n\n'
        '[[rules]]\ntext = "Run every test"\nid = "r-2"\nenabled = true  # was on\n'
        'retired_at = "2026-01-10T00:00:00Z"\n'
    )
    path = store.write("behavior", "learned", text)
    uri, diags = await client.open(path)
    assert [d.code for d in diags] == ["retired-enabled"]
    _, (off,) = await fix(client, uri, "retired-enabled")
    assert off.title == "Set enabled = false on retired rule r-2"
    after = await apply(client, uri, path, off)
    assert after == text.replace("enabled = true  # was on", "enabled = false  # was on")
    assert client.diagnostics_of(uri) == []
    (r2,) = [r for r in store.store.learned_rules("behavior") if r.id == "r-2"]
    assert r2.enabled is False and r2.retired_at is not None


async def test_over_the_cap_or_the_budget_offers_learn_now_for_the_domain(client: MechaClient, store: Store) -> None:
    # Pins: a domain over its limits with nothing to do about it but hand-edit;
    # the fix starts a pass, whose consolidation is a proposal to review.
    from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, RULES_CHAR_BUDGET

    many = [rule(f"Rule number {i} about topic {i}", f"r-{i}") for i in range(MAX_ACTIVE_RULES_PER_DOMAIN + 1)]
    learned = store.learned("behavior", many)
    uri, diags = await client.open(learned)
    assert "over-cap" in {d.code for d in diags}
    _, (learn,) = await fix(client, uri, "over-cap")
    assert learn.title == "Learn now for behavior (propose a consolidation)"
    assert learn.command is not None and learn.command.command == "mecha.learnNow"
    assert list(learn.command.arguments or []) == ["behavior"]

    words = " ".join(f"word{i}" for i in range(RULES_CHAR_BUDGET // 6 + 20))
    user = store.write("writing", "user", f'[[rules]]\ntext = "{words}"\n')
    wuri, wdiags = await client.open(user)
    assert "over-char-budget" in {d.code for d in wdiags}
    _, (wlearn,) = await fix(client, wuri, "over-char-budget")
    assert wlearn.command is not None and list(wlearn.command.arguments or []) == ["writing"]

    for i, lesson in enumerate(["Ask before deleting files.", "Keep status lines short.", "Wait when narrowed."]):
        store.reflexion(f"refl-{i}", lesson)
    events = client.event_mark()
    result = await run(client, learn)
    job = result["job"]
    assert job["kind"] == "learn" and job["domain"] == "behavior", result
    await client.event("mecha/jobFinished", since=events, where=lambda p: p["job"]["id"] == job["id"])
