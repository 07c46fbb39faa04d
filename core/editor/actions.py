"""The code actions of a rules document: the fixes each finding calls for,
decided from the finding's own `data`, the reviews of pending proposals,
and the disable/enable toggle of every rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from mecha.core.editor.document import rule_spans
from mecha.core.editor.edits import remove_rule_edit, toggle_edit
from mecha.core.editor.results import (
    ATTRIBUTED_REGRESSIONS,
    DUPLICATE_RULE,
    OVER_CAP,
    OVER_CHAR_BUDGET,
    PENDING_PROPOSAL,
    QUICKFIX,
    RESTATES_USER_RULE,
    RETIRED_ENABLED,
    SOURCE,
    Act,
    CodeAction,
    Finding,
    Range,
)
from mecha.core.sessions.evidence import cut_at_word


def kind_wanted(kind: str, only: Sequence[str] | None) -> bool:
    """LSP's `context.only` filter: no filter admits every kind; a filter
    admits a kind equal to one of its entries or below one (`source`
    admits `source.fixAll`)."""
    if only is None:
        return True
    return any(kind == o or kind.startswith(o + ".") or o == "" for o in only)


def _overlaps(a: Range, start_line: int, end_line: int) -> bool:
    return a.start_line <= end_line and a.end_line >= start_line


def code_actions_for(
    text: str,
    findings: Sequence[Finding],
    start_line: int,
    end_line: int,
    only: Sequence[str] | None = None,
) -> list[CodeAction]:
    """The code actions for lines `start_line`..`end_line` of a rules
    document whose findings are `findings` (as `check_document` gave them).

    Each finding on those lines brings its fixes (`fixes_for`, decided from
    the finding's own `data`); each rule on those lines brings the
    disable/enable toggle. Pending proposals are also reviewable from
    anywhere in the file through `source` actions (VS Code's Source Action
    menu), except where the same review is already offered as a quick fix:
    a client that asks without a filter (Ctrl+., Neovim's
    `vim.lsp.buf.code_action()`) would otherwise list each action twice.
    `only` is the request's `context.only`."""
    out: list[CodeAction] = []
    here = [f for f in findings if _overlaps(f.range, start_line, end_line)]
    for f in here:
        out.extend(fixes_for(f, text))
    quick_reviewed = {a.fixes.data.get("proposal_id") for a in out if a.fixes and a.fixes.code == PENDING_PROPOSAL}
    for f in findings:
        if f.code != PENDING_PROPOSAL:
            continue
        if only is None and f.data.get("proposal_id") in quick_reviewed:
            continue
        out.extend(_review(f, SOURCE))
    out.extend(_toggles(text, start_line, end_line))
    return [a for a in out if kind_wanted(a.kind, only)]


def fixes_for(finding: Finding, text: str) -> list[CodeAction]:
    """The quick fixes a person expects on one finding, chosen from its
    code and its `data` alone:

    - `pending-proposal`: accept, reject, show the diff, and accept
      without each one of its changes (when it makes more than one);
    - `duplicate-rule`: remove this (the later) copy;
    - `restates-user-rule`: remove the learned copy, the person's own rule
      already says it;
    - `retired-enabled`: set `enabled = false`, which is what the rule
      already behaves as;
    - `over-cap`, `over-char-budget`: learn now, a pass whose consolidation
      merges rules (a proposal to review, never a silent rewrite);
    - `attributed-regressions`: propose retiring the rule (also a proposal).

    An edit that cannot be made safely (see `remove_rule_edit` and
    `toggle_edit`) is not offered."""
    data = finding.data
    domain, rule_id = data.get("domain"), data.get("rule_id")
    code = finding.code
    if code == PENDING_PROPOSAL:
        return _review(finding, QUICKFIX)
    if code in (DUPLICATE_RULE, RESTATES_USER_RULE, RETIRED_ENABLED):
        return _edit_fixes(finding, text)
    if code in (OVER_CAP, OVER_CHAR_BUDGET) and isinstance(domain, str):
        title = f"Learn now for {domain} (propose a consolidation)"
        return [CodeAction(title, QUICKFIX, act=Act.LEARN_NOW, arguments=[domain], fixes=finding)]
    if code == ATTRIBUTED_REGRESSIONS and isinstance(domain, str) and isinstance(rule_id, str):
        count = data.get("count", 0)
        reason = f"{count} attributed regression(s) in the validation ledger"
        return [
            CodeAction(
                f"Propose retiring rule {rule_id}",
                QUICKFIX,
                act=Act.PROPOSE_RETIREMENT,
                arguments=[domain, rule_id, reason],
                fixes=finding,
            )
        ]
    return []


def _edit_fixes(finding: Finding, text: str) -> list[CodeAction]:
    """The fixes that are an edit of this document: remove a copy, or set
    `enabled = false` on a retired rule."""
    index, rule_id = finding.data.get("rule_index"), finding.data.get("rule_id")
    if not isinstance(index, int):
        return []
    named = f" {rule_id}" if rule_id else ""
    if finding.code == RETIRED_ENABLED:
        edit = toggle_edit(text, index, False)
        title = f"Set enabled = false on retired rule{named}"
    else:
        edit = remove_rule_edit(text, index)
        duplicate = finding.code == DUPLICATE_RULE
        title = f"Remove duplicate rule{named}" if duplicate else f"Remove learned copy{named} of your rule"
    if edit is None:
        return []
    return [CodeAction(title, QUICKFIX, edits=[edit], fixes=finding, preferred=True)]


def _review(finding: Finding, kind: str) -> list[CodeAction]:
    """Accept, reject and show the diff of the pending proposal `finding`
    is about, as actions of `kind`."""
    data = finding.data
    pid, domain = data.get("proposal_id"), data.get("domain")
    if not isinstance(pid, str):
        return []
    before, after = data.get("active_before"), data.get("active_after")
    fixes = finding if kind == QUICKFIX else None
    return [
        CodeAction(
            f"Accept proposal {pid} ({before} → {after} active {domain} rules)",
            kind,
            act=Act.ACCEPT_PROPOSAL,
            arguments=[pid],
            fixes=fixes,
        ),
        CodeAction(f"Reject proposal {pid}", kind, act=Act.REJECT_PROPOSAL, arguments=[pid], fixes=fixes),
        CodeAction(
            f"Show diff of proposal {pid}", kind, act=Act.SHOW_PROPOSAL_DIFF, arguments=[pid], fixes=fixes
        ),
        *_without_each(pid, data.get("changes"), kind, fixes),
        *_edit_each(pid, data.get("changes"), kind, fixes),
    ]


#: How much of a change's rule a "without" action's title quotes.
WITHOUT_TITLE_CHARS = 60


def without_title(pid: str, number: int, change: str, text: str) -> str:
    """The title of the action that accepts proposal `pid` without its
    change `number`: it starts with the change, not with "Accept proposal",
    so the whole-proposal accept stays the one action that does."""
    return f"Leave out change {number} ({change}: “{_quoted(text)}”), accept the rest of proposal {pid}"


def _quoted(text: str) -> str:
    return cut_at_word(" ".join(text.split()), WITHOUT_TITLE_CHARS)


def edit_title(pid: str, number: int, change: str, text: str) -> str:
    """The title of the action that accepts proposal `pid` with its rule
    `number` in the person's words (the client asks for them)."""
    return f"Edit change {number} ({change}: “{_quoted(text)}”) in your words, accept proposal {pid}"


def _edit_each(pid: str, changes: object, kind: str, fixes: Finding | None) -> list[CodeAction]:
    """One action per rule a proposal adds or changes: accept it with that
    rule in the person's words (`accept --edit N TEXT`). The arguments carry
    the proposed words; a client asks the person for theirs in their place
    (VS Code and Neovim do, starting from the proposed words). A client that
    does not ask sends them unchanged, which accepts the proposal as made."""
    if not isinstance(changes, list):
        return []
    out = []
    for entry in changes:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], int)):
            continue
        number, change, text = entry[0], str(entry[1]), str(entry[2])
        if change not in ("added", "changed"):
            continue
        out.append(CodeAction(
            edit_title(pid, number, change, text), kind, act=Act.ACCEPT_PROPOSAL,
            arguments=[pid, {"edit": [{"number": number, "text": text}]}], fixes=fixes,
        ))
    return out


def _without_each(pid: str, changes: object, kind: str, fixes: Finding | None) -> list[CodeAction]:
    """One action per change of a proposal that makes more than one:
    accept it without that change (`accept --without N`). A proposal of one
    change has none — leaving out its only change is a rejection."""
    if not isinstance(changes, list) or len(changes) < 2:
        return []
    out = []
    for entry in changes:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], int)):
            continue
        number, change, text = entry[0], str(entry[1]), str(entry[2])
        out.append(CodeAction(
            without_title(pid, number, change, text), kind, act=Act.ACCEPT_PROPOSAL,
            arguments=[pid, {"without": [number]}], fixes=fixes,
        ))
    return out


def _toggles(text: str, start_line: int, end_line: int) -> list[CodeAction]:
    """Disable (or enable) each rule on the lines: always at hand, whatever
    the rule's findings."""
    out = []
    for span in rule_spans(text):
        if span.end_line < start_line or span.start_line > end_line or span.rule is None:
            continue
        want = not span.rule.enabled
        edit = toggle_edit(text, span.index, want)
        if edit is None:
            continue
        name = f" {span.rule.id}" if span.rule.id else ""
        out.append(CodeAction(("Enable rule" if want else "Disable rule") + name, QUICKFIX, edits=[edit]))
    return out
