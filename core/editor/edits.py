"""The edits a quick fix makes to a rules document: set a rule's `enabled`,
or remove a rule's table. Each is the smallest change that does it, and each
is checked, not trusted: applied, parsed with tomllib and tomlkit, and
offered only when every other value in the document is unchanged.
"""

from __future__ import annotations

import math
import tomllib
from typing import Any

from mecha.core.editor.document import apply_edit, document_lines, rule_spans
from mecha.core.editor.results import RuleSpan, TextEdit
from mecha.core.nesting import toml_loads


def _checked_rule(text: str, rule_index: int) -> tuple[RuleSpan, dict[str, Any], list[Any]] | None:
    """What an edit of rule `rule_index` is checked against: its span, the
    document as parsed, and its rules table — or `None` when the document
    does not parse or its tables do not line up with the spans found in the
    text, and then no edit is offered. Shared by every quick-fix edit."""
    spans = rule_spans(text)
    if not 0 <= rule_index < len(spans):
        return None
    try:
        before = toml_loads(text)
    except tomllib.TOMLDecodeError:
        return None
    rules_before = before.get("rules")
    if not isinstance(rules_before, list) or len(rules_before) != len(spans):
        return None
    return spans[rule_index], before, rules_before


def toggle_edit(text: str, rule_index: int, enabled: bool) -> TextEdit | None:
    """The smallest edit that sets rule `rule_index`'s `enabled`, touching
    only that rule's lines; `None` when it cannot be done safely.

    An existing `enabled = …` has its value replaced (a trailing comment
    stays); otherwise `enabled = <value>` goes on a new line right after the
    `text` value (after the closing line of a multi-line string), indented
    like `text`. The result is then *checked*, not trusted: applied, parsed
    with tomllib and tomlkit, and used only if the rule now says `enabled`
    the wanted way and every other value in the document is unchanged. A
    document that does not parse is never edited.
    """
    checked = _checked_rule(text, rule_index)
    if checked is None:
        return None
    span, before, rules_before = checked
    edit = _enabled_edit(text, span, "true" if enabled else "false")
    if edit is None or not _toggle_holds(apply_edit(text, edit), rule_index, enabled, before, rules_before):
        return None
    return edit


def _enabled_edit(text: str, span: RuleSpan, literal: str) -> TextEdit | None:
    """Where `enabled = <literal>` goes in `span`'s table: over an existing
    value, else on a new line after `text`'s; `None` for a dotted or
    sub-table `enabled`, which is not ours to rewrite."""
    if "enabled" in span.value_ranges:
        r = span.value_ranges["enabled"]
        return TextEdit(r.start_line, r.start_col, r.end_line, r.end_col, literal)
    if "enabled" in span.key_lines:
        return None
    lines = text.split("\n")
    text_at = span.value_ranges.get("text")
    anchor = text_at.end_line if text_at is not None else span.header_line
    key_at = span.key_ranges.get("text")
    indent = ""
    if key_at is not None:
        lead = lines[key_at.start_line][: key_at.start_col]
        indent = lead if not lead.strip() else ""
    raw_line = lines[anchor]
    # the line's own ending; on a last line that has none, the document's
    crlf = raw_line.endswith("\r") or (anchor == len(lines) - 1 and "\r\n" in text)
    newline = "\r\n" if crlf else "\n"
    end = len(raw_line.removesuffix("\r"))
    return TextEdit(anchor, end, anchor, end, f"{newline}{indent}enabled = {literal}")


def _toggle_holds(after_text: str, rule_index: int, enabled: bool, before: dict[str, Any], rules_before: list[Any]) -> bool:
    """Whether `after_text` says rule `rule_index` is `enabled` (to tomllib
    and tomlkit alike) and differs from `before` in nothing else."""
    import tomlkit  # only this quick fix pays for it

    try:
        after = toml_loads(after_text)
        kit = tomlkit.parse(after_text).unwrap()
    except Exception:  # tomllib or any tomlkit complaint: not safe
        return False
    rules_after = after.get("rules")
    if not isinstance(rules_after, list) or len(rules_after) != len(rules_before):
        return False
    target = rules_after[rule_index]
    if not isinstance(target, dict) or target.get("enabled") is not enabled:
        return False
    try:
        if kit["rules"][rule_index]["enabled"] is not enabled:
            return False
    except (KeyError, IndexError, TypeError):
        return False
    for index, (old, new) in enumerate(zip(rules_before, rules_after)):
        if index == rule_index:
            old = {k: v for k, v in old.items() if k != "enabled"}
            new = {k: v for k, v in new.items() if k != "enabled"}
        if not _same(old, new):
            return False
    return _same({k: v for k, v in before.items() if k != "rules"}, {k: v for k, v in after.items() if k != "rules"})


def remove_rule_edit(text: str, rule_index: int) -> TextEdit | None:
    """The edit that deletes rule `rule_index`'s table — with the comment
    lines directly above its header (they are about it) and the blank lines
    after it — and nothing else; `None` when it cannot be done safely.

    A comment separated from the table by a blank line is not the table's
    and stays. When the table is the file's last, the blank lines before it
    go instead, so the file does not end in a gap. Like `toggle_edit`, the
    result is checked, not trusted: it must parse (tomllib and tomlkit), and
    its rules must be exactly the others, in order."""
    import tomlkit  # only the quick fixes pay for it

    checked = _checked_rule(text, rule_index)
    if checked is None:
        return None
    span, before, rules_before = checked
    lines = document_lines(text)
    end = span.end_line + 1
    while end < len(lines) and not lines[end].strip():
        end += 1
    start = span.start_line
    if end < len(lines):
        edit = TextEdit(start, 0, end, 0, "")
    else:
        # the last table: take the gap before it too, keep a final newline
        while start > 0 and not lines[start - 1].strip():
            start -= 1
        last = len(lines) - 1
        if start == 0:
            edit = TextEdit(0, 0, last, len(lines[last]), "")
        else:
            newline = ("\r\n" if text.endswith("\r\n") else "\n") if text.endswith("\n") else ""
            edit = TextEdit(start - 1, len(lines[start - 1]), last, len(lines[last]), newline)
    after_text = apply_edit(text, edit)
    try:
        after = toml_loads(after_text)
        tomlkit.parse(after_text)
    except Exception:  # tomllib or any tomlkit complaint: not safe
        return None
    wanted = [r for i, r in enumerate(rules_before) if i != rule_index]
    rules_after = after.get("rules", [])
    if not _same(rules_after, wanted):
        return None
    if not _same({k: v for k, v in before.items() if k != "rules"}, {k: v for k, v in after.items() if k != "rules"}):
        return None
    return edit


def _same(a: object, b: object) -> bool:
    """Equal, with NaN equal to itself (a `nan` confidence must not make
    every edit look unsafe)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b
