"""The hover on a rules document: what the rule under the cursor is, where
it came from, what the ledger measured of it, its record in the person's
own sessions, and its retirement.
"""

from __future__ import annotations

from collections.abc import Mapping

from mecha.core.domain.reflexion import Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.editor.document import rule_spans, span_at
from mecha.core.learning.sources import describe_source, describe_tally, no_sources_note, sources_of
from mecha.core.store.layout import GLOBAL_SCOPE, LEARNED_KIND
from mecha.core.store.ledger import RuleTally
from mecha.core.visible import shown


def hover_for(
    text: str,
    line: int,
    col: int,
    *,
    domain: str,
    kind: str,
    reflections_by_id: Mapping[str, Reflexion],
    tallies: Mapping[str, Mapping[str, RuleTally]],
    scope: str = GLOBAL_SCOPE,
    records: Mapping[str, str] | None = None,
) -> str | None:
    """Markdown for the rule under the cursor: its identity and the scope it
    applies in (`scope`, as `store_view.document_scope` names it), lineage (the
    lessons it was learned from, not bare ids), what the ledger measured
    (`tallies`: rule id → model → tally), its record from the person's own
    sessions (`records`: rule id → `record.record_line`), and its
    retirement. `None` outside any rule, or on a table that does not
    decode (its diagnostics say why). A rule is a block of whole lines, so
    `col` does not narrow it; it is taken for the editor's call shape."""
    del col
    span = span_at(rule_spans(text), line)
    if span is None or span.rule is None:
        return None
    rule = span.rule
    who = "Learned rule" if kind == LEARNED_KIND else "Your rule"
    name = f"`{rule.id}`" if rule.id else f"{span.index + 1} (no id)"
    state = "retired" if rule.retired_at is not None else ("active" if rule.enabled else "disabled")
    out = [f"**{who} {name}** · `{domain}` · {state} · {scope}", ""]
    facts = _facts(rule)
    if facts:
        out += [" · ".join(facts), ""]
    out += _lineage(rule, kind, reflections_by_id)
    out += _ledger(rule, tallies)
    if records and rule.id is not None and rule.id in records:
        out += [f"**In your sessions** {records[rule.id]}", ""]
    if rule.retired_at is not None:
        reason = f": {_one_line(rule.retired_reason)}" if rule.retired_reason else ""
        out += [f"**Retired** {rule.retired_at}{reason}", ""]
    return shown("\n".join(out).rstrip(), keep_layout=True) + "\n"  # what hides is spelled out (`visible`)


def _facts(rule: Rule) -> list[str]:
    facts: list[str] = []
    if rule.created_at:
        facts.append(f"created {rule.created_at}")
    if rule.confidence is not None:
        facts.append(f"confidence {rule.confidence:.2f}")
    if rule.based_on_count is not None:
        facts.append(f"based on {rule.based_on_count} reflection{'s' if rule.based_on_count != 1 else ''}")
    return facts


def _lineage(rule: Rule, kind: str, reflections_by_id: Mapping[str, Reflexion]) -> list[str]:
    """The lessons the rule was learned from, or why it has none."""
    if not rule.sources:
        return [f"*{no_sources_note(rule, kind)}*", ""]
    out = ["**Learned from**"]
    for source in sources_of(rule, reflections_by_id):
        lesson = f" — lesson: {_one_line(source.lesson)}" if source.lesson else ""
        out.append(f"- {describe_source(source)}{lesson}")
    out.append("")
    return out


def _ledger(rule: Rule, tallies: Mapping[str, Mapping[str, RuleTally]]) -> list[str]:
    """What the validation ledger measured of the rule, per model it was
    measured on, in the words every reader of the ledger uses
    (`sources.describe_tally`), and when it was last measured. A rule
    without an id cannot be measured, and gets no line."""
    if rule.id is None:
        return []
    by_model = tallies.get(rule.id) or {}
    last = max((t.last_validated for t in by_model.values() if t.last_validated), default=None)
    when = f" · last validated {last}" if last else ""
    return [f"**Measured**: {describe_tally(by_model)}{when}", ""]


def _one_line(text: str) -> str:
    return " ".join(text.split())
