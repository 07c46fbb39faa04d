"""Why a rule exists: its *sources* — the reflections it rests on, each
one's intervention (the trigger and the person's own words), and the
session it was found in.

Named sources, not evidence: a reflection's `evidence` already says what its
reflector was shown. A learned rule names its sources by reflection id (the
learner cites them, `consolidation.gate_learned_set` checks the citations);
everything else here is looked up from the reflections on record, so what a
reviewer reads is what the store holds, never a model's account of it.

One implementation for every reader: `proposals show`, `mecha/proposal`,
`mecha-sidecar why` / `mecha/ruleSources`, and both editors' hover.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from mecha.core.domain.record import RuleRecord
from mecha.core.domain.rules import Rule, RuleDrop
from mecha.core.sessions.evidence import cut_at_word
from mecha.core.sessions.mining import bound_text
from mecha.core.store.ledger import RuleTally

if TYPE_CHECKING:
    # Annotations only: the wire module imports this one on the harness's
    # cold path, which must not load the reflector (and its providers).
    from mecha.core.domain.reflexion import Reflexion

#: How much of the person's words one source carries: enough to recognise
#: the moment, bounded like every other excerpt a client is sent.
SOURCE_TEXT_BUDGET = 400


class RuleSource(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One reflection a rule rests on, and where its intervention was found."""

    #: The reflection's id, spelled as proposals (`reflexion_ids`) and the
    #: ledger spell it.
    reflexion_id: str
    #: `False` when the rule names a reflection the store no longer holds;
    #: every other field but the id is then absent.
    on_record: bool = True
    session_id: str | None = None
    #: `steer`, `denial`, `followup` or `edit`.
    trigger: str | None = None
    #: The person's words at the intervention, bounded.
    text: str | None = None
    #: The lesson the reflector drew from it.
    lesson: str | None = None
    #: Index of the message the intervention rides in, in its session.
    at: int | None = None
    #: For an imported session: its file, and the line of that message.
    file: str | None = None
    line: int | None = None
    created_at: str | None = None
    #: Deprecated: `reflexion_id` under the spelling it had before, written
    #: (always equal to it) so a client that reads it keeps working.
    reflection_id: str = ""

    def __post_init__(self) -> None:
        self.reflection_id = self.reflexion_id


class RuleChange(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One rule a proposal adds, changes or removes, with its sources."""

    #: `added`, `changed` (it rewrites or merges live rules), `removed`,
    #: or `retired` (kept in the file as evidence, no longer rendered).
    change: str
    #: Its number in the proposal, from 1, in this order: what `proposals
    #: show` lists and `accept --without N` names.
    number: int = 0
    text: str
    rule_id: str | None = None
    sources: list[RuleSource] = msgspec.field(default_factory=list)
    #: For a changed rule: the live rules it replaces, by text.
    replaces: list[str] = msgspec.field(default_factory=list)
    #: For a removed rule: the proposed rule that absorbs it …
    absorbed_by: str | None = None
    #: … or the reflection that contradicts it.
    contradicted_by: RuleSource | None = None
    #: For a retired rule: the reason the retirement gives.
    reason: str | None = None
    #: Where the rule lives once the proposal is accepted: `global`, or the
    #: project's root (`proposals.change_scope`).
    scope: str | None = None
    #: What the validation ledger measured of the rule, per model, in a
    #: person's words (`describe_tally`; `with_measurements`).
    measured: str | None = None


ADDED = "added"
CHANGED = "changed"
REMOVED = "removed"
RETIRED = "retired"


def source_of(reflection_id: str, by_id: Mapping[str, Reflexion]) -> RuleSource:
    """The source a reflection id names, from the reflections on record."""
    r = by_id.get(reflection_id)
    if r is None:
        return RuleSource(reflexion_id=reflection_id, on_record=False)
    found = r.found
    return RuleSource(
        reflexion_id=r.id,
        session_id=r.session_id or None,
        trigger=r.trigger,
        text=bound_text(r.intervention, SOURCE_TEXT_BUDGET),
        lesson=r.reflexion_text,
        at=found.at if found is not None else None,
        file=found.file if found is not None else None,
        line=found.line if found is not None else None,
        created_at=r.created_at,
    )


#: The trigger a person's edit of a rule is named by among its sources.
PERSON_EDIT = "person_edit"


def edit_source(rule: Rule) -> RuleSource | None:
    """The person's own edit of `rule` as a source (`Rule.edited`), or
    `None` when they accepted the learner's words as they were. The id is
    the proposal's, marked so no reflection id can be confused with it."""
    e = rule.edited
    if e is None:
        return None
    return RuleSource(
        reflexion_id=f"edit:{e.proposal_id}",
        trigger=PERSON_EDIT,
        text=bound_text(rule.text, SOURCE_TEXT_BUDGET),
        lesson=f"a person wrote these words accepting proposal {e.proposal_id}; the learner had proposed: {e.was}",
        created_at=e.at,
    )


def sources_of(rule: Rule, by_id: Mapping[str, Reflexion]) -> list[RuleSource]:
    """A rule's sources: the person's own edit first when they made one
    (the strongest evidence a rule can have: they wrote it), then the
    reflections in the order it names them."""
    edit = edit_source(rule)
    return ([edit] if edit is not None else []) + [source_of(i, by_id) for i in rule.sources]


def no_sources_note(rule: Rule, kind: str) -> str | None:
    """What to say of a rule with no recorded sources, or `None` when it has
    some. A person's own rule rests on nobody's reflections; a learned rule
    without any was learned before sources were recorded."""
    if rule.sources:
        return None
    if kind == "user":
        return "your own rule: it rests on no reflection"
    return "no recorded sources: this rule was learned before sources were kept"


def proposal_changes(
    rules_before: Sequence[Rule],
    rules: Sequence[Rule],
    drops: Sequence[RuleDrop],
    by_id: Mapping[str, Reflexion],
) -> list[RuleChange]:
    """What a proposal adds, changes and removes, each with its sources.

    Numbered from 1 in the order listed: new rules, retirements, removals.
    A rule whose text the live set already holds is kept and not listed; a
    new text is `changed` when it names live rules it replaces, `added`
    otherwise; a live rule the candidate retires is `retired`, with the
    retirement's reason; a live rule the candidate leaves out is `removed`,
    with the drop's reason when the proposal recorded one.
    """
    live_texts = {r.text for r in rules_before}
    by_rule_id = {r.id: r for r in rules_before if r.id is not None}
    out: list[RuleChange] = []
    for rule in rules:
        if rule.text in live_texts or rule.retired_at is not None:
            continue
        replaced = [by_rule_id[i].text for i in rule.supersedes if i in by_rule_id]
        out.append(RuleChange(
            change=CHANGED if replaced else ADDED,
            text=rule.text,
            rule_id=rule.id,
            sources=sources_of(rule, by_id),
            replaces=replaced,
        ))
    live_ids = {r.id for r in rules_before if r.retired_at is None and r.id is not None}
    for rule in rules:
        if rule.retired_at is not None and rule.id in live_ids:
            out.append(RuleChange(
                change=RETIRED, text=rule.text, rule_id=rule.id, sources=sources_of(rule, by_id), reason=rule.retired_reason,
            ))
    kept = {r.text for r in rules}
    reasons = {d.text: d for d in drops}
    for rule in rules_before:
        if rule.text in kept or rule.retired_at is not None:
            continue
        drop = reasons.get(rule.text)
        out.append(RuleChange(
            change=REMOVED,
            text=rule.text,
            rule_id=rule.id,
            sources=sources_of(rule, by_id),
            absorbed_by=drop.absorbed_by if drop is not None else None,
            contradicted_by=(
                source_of(drop.contradicted_by, by_id) if drop is not None and drop.contradicted_by else None
            ),
        ))
    return [msgspec.structs.replace(c, number=n) for n, c in enumerate(out, start=1)]


def describe_source(s: RuleSource) -> str:
    """One source on one line, for a person: the trigger, the person's
    words, the session and where in it."""
    if not s.on_record:
        return f"{s.reflexion_id} (not on record)"
    where = []
    if s.session_id:
        where.append(f"session {s.session_id}")
    if s.file:
        where.append(f"{s.file}:{s.line}" if s.line is not None else s.file)
    if s.at is not None:
        where.append(f"message {s.at}")
    said = cut_at_word(" ".join((s.text or "").split()), 160)
    place = f" ({', '.join(where)})" if where else ""
    return f"[{s.trigger}] “{said}”{place}"


def describe_tally(tallies: Mapping[str, RuleTally] | None) -> str:
    """A rule's measured record, per model it was measured on, for a
    person: "rode in 6 probes on smollm2-135m: 4 improved, 0 regressed"."""
    if not tallies:
        return "not measured yet"
    parts = []
    for model, t in sorted(tallies.items()):
        line = f"rode in {t.observations} probe{'s' if t.observations != 1 else ''} on {model}: {t.improved} improved, {t.regressed} regressed"
        if t.attributed_regressions:
            line += f", {t.attributed_regressions} attributed regression{'s' if t.attributed_regressions != 1 else ''}"
        parts.append(line)
    return "; ".join(parts)


def describe_verdict(by_model: Mapping[str, Mapping[str, int]], stale: int = 0, reduced: int = 0) -> str:
    """A proposal's measured verdict, per model, for a person: "measured in
    3 probes on smollm2-135m against the live rules: 2 improved, 0 regressed,
    1 unchanged, 0 inconclusive"."""
    if not by_model:
        text = "not measured yet (mecha-sidecar validate DOMAIN --proposal ID)"
    else:
        parts = []
        for model, counts in sorted(by_model.items()):
            n = sum(counts.values())
            unchanged = counts.get("unchanged_pass", 0) + counts.get("unchanged_fail", 0)
            parts.append(
                f"measured in {n} probe{'s' if n != 1 else ''} on {model} against the live rules: "
                f"{counts.get('improved', 0)} improved, {counts.get('regressed', 0)} regressed, "
                f"{unchanged} unchanged, {counts.get('inconclusive', 0)} inconclusive"
            )
        text = "; ".join(parts)
    if reduced:
        text += (
            f" ({reduced} of them without the rule{'s' if reduced != 1 else ''} learned from the very correction "
            "probed, which no probe measures on its own source)"
        )
    if stale:
        text += f" ({stale} earlier probe{'s' if stale != 1 else ''} measured it against rules that have changed since)"
    return text


def with_measurements(
    changes: Sequence[RuleChange], tallies_by_model: Mapping[str, Mapping[str, RuleTally]]
) -> list[RuleChange]:
    """`changes` with each rule's measured record filled in (a rule with no
    id has none to look up)."""
    return [
        msgspec.structs.replace(c, measured=describe_tally(tallies_by_model.get(c.rule_id)))
        if c.rule_id is not None else c
        for c in changes
    ]


class RuleSources(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Everything on record about why one rule exists and how it measured."""

    rule: Rule
    domain: str
    #: `user` or `learned`: which rules file holds it.
    kind: str
    sources: list[RuleSource] = msgspec.field(default_factory=list)
    #: Said when the rule names no source (`no_sources_note`).
    note: str | None = None
    #: What the validation ledger measured of it, per model.
    tallies: dict[str, RuleTally] = msgspec.field(default_factory=dict)
    #: The same, in a person's words (`describe_tally`).
    measured: str = ""
    #: For a live learned rule: what the person's own sessions say of it
    #: since it went live (`learning.record`): the sessions it reached, the
    #: corrections that came back, and its one line.
    record: RuleRecord | None = None


def find_rule_sources(
    rule_id: str,
    rule_sets: Sequence[tuple[str, str, Sequence[Rule]]],
    by_id: Mapping[str, Reflexion],
    tallies_by_model: Mapping[str, Mapping[str, RuleTally]],
) -> RuleSources | None:
    """The sources of the rule with id `rule_id` among `(domain, kind,
    rules)` sets, or `None` when no set holds it."""
    for domain, kind, rules in rule_sets:
        for rule in rules:
            if rule.id == rule_id:
                tallies = dict(tallies_by_model.get(rule_id, {}))
                return RuleSources(
                    rule=rule,
                    domain=domain,
                    kind=kind,
                    sources=sources_of(rule, by_id),
                    note=no_sources_note(rule, kind),
                    tallies=tallies,
                    measured=describe_tally(tallies),
                )
    return None
