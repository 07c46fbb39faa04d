"""The diagnostics of one rules document: every finding, where a person
would fix it.

A problem with one key sits on that key (`invalid-value`, `unknown-key`, an
empty `text`, `retired-enabled`), a problem with the rule as a whole on the
rule's table (header through last key), a problem with the domain on line 0.
A finding's `data` carries what its fix needs (the round trip ruff-lsp
makes), so the code actions for a diagnostic are decided from the diagnostic
alone (`actions`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from mecha.core.domain.rules import (
    MAX_ACTIVE_RULES_PER_DOMAIN,
    RULES_CHAR_BUDGET,
    Rule,
    RulesFile,
    routed_domains,
    rule_key,
    validate_domain,
)
from mecha.core.editor.document import Layout, decode_rule, document_lines, scan, section_chars
from mecha.core.editor.results import (
    ATTRIBUTED_REGRESSIONS,
    DUPLICATE_RULE,
    ERROR,
    INVALID_VALUE,
    MISSING_TEXT,
    OVER_CAP,
    OVER_CHAR_BUDGET,
    PENDING_PROPOSAL,
    RESTATES_USER_RULE,
    RETIRED_ENABLED,
    SEVERITIES,
    TOML_SYNTAX,
    UNKNOWN_KEY,
    UNROUTED_DOMAIN,
    Finding,
    PendingProposal,
    Range,
    RuleSpan,
)
from mecha.core.nesting import toml_loads
from mecha.core.store.layout import LEARNED_KIND, USER_KIND
from mecha.core.store.ledger import RuleTally

#: The top-level key a project's rules file names its project's root by
#: (the store's writer puts it there; `rules_text.rules_file_project` reads it).
PROJECT_KEY = "project"

#: The keys a `[[rules]]` table may hold, with the type each must convert to —
#: read off `Rule` itself so a new field is known here the day it exists.
_RULE_FIELDS: dict[str, Any] = {f.encode_name: f.type for f in msgspec.structs.fields(Rule)}

_TOML_AT_RE = re.compile(r"\(at line (\d+), column (\d+)\)")
_TOML_AT_END_RE = re.compile(r"\s*\(at end of document\)")
_PATH_RE = re.compile(r"`\$((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*)`")
_RULES_PATH_RE = re.compile(r"^\.rules(?:\[(\d+)\](?:\.([A-Za-z_][A-Za-z0-9_]*))?)?")
_MSGSPEC_AT_RE = re.compile(r"\s*-\s*at\s*`\$[^`]*`")


def _finding(code: str, message: str, where: Range, data: dict[str, Any]) -> Finding:
    return Finding(
        code, SEVERITIES[code], message, where.start_line, where.start_col, where.end_line, where.end_col, data
    )


def _line_range(lines: Sequence[str], line: int) -> Range:
    line = min(max(line, 0), len(lines) - 1)
    return Range(line, 0, line, len(lines[line]))


def _syntax_finding(domain: str, e: tomllib.TOMLDecodeError, lines: Sequence[str]) -> Finding:
    """`toml-syntax` where tomllib says the document broke, in its words
    without its position (the range says where)."""
    message = _TOML_AT_END_RE.sub("", _TOML_AT_RE.sub("", str(e))).strip()
    return _finding(TOML_SYNTAX, f"not valid TOML: {message}", _syntax_range(str(e), lines), {"domain": domain})


def _syntax_range(message: str, lines: Sequence[str]) -> Range:
    """Where tomllib says the document broke: its 1-based line and column as
    one character, or the last non-blank line for "at end of document"."""
    m = _TOML_AT_RE.search(message)
    if m is not None:
        line = min(int(m.group(1)) - 1, len(lines) - 1)
        width = len(lines[line])
        col = min(int(m.group(2)) - 1, width)
        return Range(line, col, line, min(col + 1, width))
    last = max((k for k, text in enumerate(lines) if text.strip()), default=0)
    return _line_range(lines, last)


def _describe(rule_index: int, span: RuleSpan | None) -> str:
    return f"rule {rule_index + 1}" + (f" (line {span.header_line + 1})" if span is not None else "")


def check_document(
    domain: str,
    kind: str,
    text: str,
    *,
    other_rules: Sequence[Rule],
    tallies: Mapping[str, RuleTally],
    pending: Sequence[PendingProposal] = (),
    in_project: bool = False,
) -> list[Finding]:
    """Every finding on one rules document, sorted by position.

    `kind` is `"user"` or `"learned"`; `other_rules` are the sibling file's
    rules (the user rules when checking a learned file, the learned rules
    when checking a user file), so domain-wide checks — the character
    budget, restating a user rule — see the document as it is being typed
    against the sibling as it is on disk. `tallies` are the ledger's, by
    rule id. `pending` are the domain's pending proposals: a learned file
    gets one `pending-proposal` finding for each, on line 0, whose `data`
    carries what accepting, rejecting and showing it need.

    `in_project` says the document is one project's (`rules/<domain>@<id>…`):
    it may then name its project (a top-level `project` string), and its
    section is measured as a project's section of the block.

    A document that does not parse gets only `toml-syntax` (and
    `unrouted-domain` and `pending-proposal`): every other check needs the
    rules, and guessing at them would flicker as a person types.
    """
    domain = validate_domain(domain)
    if kind not in (USER_KIND, LEARNED_KIND):
        raise ValueError(f"unknown rules kind {kind!r}")
    lines = document_lines(text)
    out = _domain_findings(domain, kind, lines, pending)
    try:
        raw = toml_loads(text)
    except tomllib.TOMLDecodeError as e:
        return _sorted([*out, _syntax_finding(domain, e, lines)])
    doc = _Doc(domain, kind, lines, scan(text), in_project)
    out.extend(_top_key_findings(doc, raw))
    decoded = _each_table(doc, raw, out)
    if not any(f.severity == ERROR for f in out):
        out.extend(_conversion_findings(doc, raw))
    out.extend(_rule_findings(doc, decoded, other_rules, tallies))
    out.extend(_budget_findings(doc, decoded, other_rules))
    return _sorted(out)


def _each_table(doc: _Doc, raw: dict[str, Any], out: list[Finding]) -> list[Rule | None]:
    """Each `[[rules]]` table checked (its findings added to `out`), as the
    rule it decodes to, or `None` where it does not."""
    items = raw.get("rules", [])
    if not isinstance(items, list):
        message = f"`rules` must be an array of `[[rules]]` tables, not {_toml_type(items)}"
        out.append(_finding(INVALID_VALUE, message, doc.rules_at, dict(doc.top)))
        items = []
    doc.line_up(len(items))
    decoded: list[Rule | None] = []
    for index, item in enumerate(items):
        found, rule = _table_findings(doc, index, item)
        out.extend(found)
        decoded.append(rule)
    return decoded


class _Doc:
    """What every check of one parsed document reads: its domain and kind,
    its lines, where its tables sit, and where a finding about the rules as
    a whole goes (`rules_at`)."""

    def __init__(self, domain: str, kind: str, lines: list[str], layout: Layout, in_project: bool):
        self.domain = domain
        self.in_project = in_project
        self.kind = kind
        self.lines = lines
        self.layout = layout
        self.top: dict[str, Any] = {"domain": domain}
        self.line0 = _line_range(lines, 0)
        rules_at = layout.top_keys.get("rules")
        if rules_at is None and layout.spans:
            first = layout.spans[0].header_line
            rules_at = Range(first, 0, first, len(lines[first]))
        self.rules_at = rules_at or self.line0
        #: One per `rules` item: its span, or `None` for all when the tables
        #: the scanner found do not line up with what tomllib read.
        self.spans: list[RuleSpan | None] = []

    def line_up(self, count: int) -> None:
        spans = self.layout.spans
        self.spans = list(spans) if len(spans) == count else [None] * count

    def whole(self, index: int) -> Range:
        """Rule `index`'s table, or `rules_at` when its place is unknown."""
        span = self.spans[index]
        return _rule_range(span, self.lines) if span is not None else self.rules_at

    def rule_data(self, index: int, rule_id: object) -> dict[str, Any]:
        data: dict[str, Any] = {**self.top, "rule_index": index}
        if isinstance(rule_id, str):
            data["rule_id"] = rule_id
        return data


def _domain_findings(domain: str, kind: str, lines: Sequence[str], pending: Sequence[PendingProposal]) -> list[Finding]:
    """What holds of the domain whatever the text: a domain no run loads,
    the proposals waiting (on a learned file)."""
    out: list[Finding] = []
    if domain not in routed_domains():
        message = (
            f"no run or pass loads the `{domain}` domain (routed: {', '.join(routed_domains())}); "
            "these rules reach a run only if it names this domain"
        )
        out.append(_finding(UNROUTED_DOMAIN, message, _line_range(lines, 0), {"domain": domain}))
    if kind == LEARNED_KIND:
        out.extend(pending_findings(domain, pending, _line_range(lines, 0)))
    return out


def _top_key_findings(doc: _Doc, raw: Mapping[str, Any]) -> list[Finding]:
    """Top-level keys other than `rules`: a project's file may name its
    project's root (a string); nothing else belongs there."""
    out: list[Finding] = []
    for key, value in raw.items():
        where = doc.layout.top_keys.get(key, doc.line0)
        if key == "rules":
            continue
        if key == PROJECT_KEY and doc.in_project:
            if not isinstance(value, str):
                message = f"`{PROJECT_KEY}` must be a string, the root of the project these rules belong to, not {_toml_type(value)}"
                out.append(_finding(INVALID_VALUE, message, where, {**doc.top, "key": key}))
            continue
        holds = "only `[[rules]]` tables" + (f" and its `{PROJECT_KEY}`" if doc.in_project else "")
        message = f"unknown top-level key `{key}`: a rules file holds {holds}"
        out.append(_finding(UNKNOWN_KEY, message, where, {**doc.top, "key": key}))
    return out


def _table_findings(doc: _Doc, index: int, item: object) -> tuple[list[Finding], Rule | None]:
    """The findings on one `[[rules]]` item's keys and values, and the rule
    it decodes to (`None` when it does not)."""
    span = doc.spans[index]
    whole = doc.whole(index)
    data = doc.rule_data(index, item.get("id") if isinstance(item, dict) else None)
    if not isinstance(item, dict):
        message = f"{_describe(index, span)} must be a table, not {_toml_type(item)}"
        return [_finding(INVALID_VALUE, message, whole, data)], None
    out = _key_findings(doc, index, item, data)
    bad = any(f.code == INVALID_VALUE for f in out)
    if "text" not in item:
        bad = True
        out.append(_finding(MISSING_TEXT, f"{_describe(index, span)} has no `text`", whole, data))
    rule = None if bad else decode_rule(item)
    if rule is not None and not rule.text.strip():
        text_at = span.value_ranges.get("text", whole) if span is not None else whole
        out.append(_finding(MISSING_TEXT, f"{_describe(index, span)} has an empty `text`", text_at, data))
    return out, rule


def _key_findings(doc: _Doc, index: int, item: Mapping[str, Any], data: dict[str, Any]) -> list[Finding]:
    """Keys a rule does not have, and values of the wrong type."""
    span = doc.spans[index]
    whole = doc.whole(index)
    out: list[Finding] = []
    for key, value in item.items():
        key_at = span.key_ranges.get(key, whole) if span is not None else whole
        expected = _RULE_FIELDS.get(key)
        if expected is None:
            message = f"unknown key `{key}` in {_describe(index, span)}: runs ignore it"
            out.append(_finding(UNKNOWN_KEY, message, key_at, {**data, "key": key}))
            continue
        try:
            msgspec.convert(value, expected)
        except msgspec.ValidationError as e:
            value_at = span.value_ranges.get(key, key_at) if span is not None else whole
            reason = _MSGSPEC_AT_RE.sub("", str(e))
            message = f"`{key}` has the wrong type: {reason}"
            out.append(_finding(INVALID_VALUE, message, value_at, {**data, "key": key}))
    return out


def _conversion_findings(doc: _Doc, raw: Mapping[str, Any]) -> list[Finding]:
    """The per-key checks should have caught whatever the run's own
    conversion refuses; if not, say what it says rather than nothing."""
    try:
        msgspec.convert(raw, RulesFile)
    except msgspec.ValidationError as e:
        where = _path_range(str(e), doc.spans, doc.lines, doc.rules_at)
        return [_finding(INVALID_VALUE, str(e), where, dict(doc.top))]
    return []


def _budget_findings(doc: _Doc, decoded: Sequence[Rule | None], other_rules: Sequence[Rule]) -> list[Finding]:
    """The domain's section against the character budget, this document's
    rules as typed with the sibling's."""
    present = [r for r in decoded if r is not None]
    user, learned = (present, list(other_rules)) if doc.kind == USER_KIND else (list(other_rules), present)
    chars = section_chars(doc.domain, user, learned, project=doc.in_project)
    if chars <= RULES_CHAR_BUDGET:
        return []
    message = (
        f"the `{doc.domain}` section renders to {chars} characters, over the budget of "
        f"{RULES_CHAR_BUDGET}: every run carries it in its prompt"
    )
    return [_finding(OVER_CHAR_BUDGET, message, doc.line0, {**doc.top, "chars": chars, "budget": RULES_CHAR_BUDGET})]


def _rule_findings(
    doc: _Doc, decoded: Sequence[Rule | None], other_rules: Sequence[Rule], tallies: Mapping[str, RuleTally]
) -> list[Finding]:
    """The checks on decoded rules: duplicates, restating, the cap,
    retirement, the ledger."""
    out: list[Finding] = []
    user_texts = {rule_key(r.text) for r in other_rules if r.text.strip()}
    first_of: dict[str, int] = {}
    active_seen = 0
    for index, rule in enumerate(decoded):
        if rule is None:
            continue
        data = doc.rule_data(index, rule.id)
        norm = rule_key(rule.text)
        if norm and norm in first_of:
            other = first_of[norm]
            message = f"the same rule as {_describe(other, doc.spans[other])}"
            out.append(_finding(DUPLICATE_RULE, message, doc.whole(index), {**data, "duplicate_of": other}))
        elif norm:
            first_of[norm] = index
        out.extend(_retired_findings(doc, index, rule, data))
        if doc.kind != LEARNED_KIND:
            continue
        if rule.active():
            active_seen += 1
            out.extend(_active_findings(doc, index, data, restates=bool(norm) and norm in user_texts, nth=active_seen))
        out.extend(_ledger_findings(doc, index, rule, tallies))
    return out


def _retired_findings(doc: _Doc, index: int, rule: Rule, data: dict[str, Any]) -> list[Finding]:
    if rule.retired_at is None or not rule.enabled:
        return []
    span = doc.spans[index]
    whole = doc.whole(index)
    where = span.key_ranges.get("enabled") or span.key_ranges.get("retired_at") or whole if span is not None else whole
    message = f"retired {rule.retired_at}, so this rule rides in no prompt whatever `enabled` says"
    return [_finding(RETIRED_ENABLED, message, where, data)]


def _active_findings(doc: _Doc, index: int, data: dict[str, Any], *, restates: bool, nth: int) -> list[Finding]:
    """An active learned rule, the `nth` of its file: restating one of the
    person's rules, or over the cap."""
    out: list[Finding] = []
    whole = doc.whole(index)
    if restates:
        message = "restates one of your own rules: the prompt carries it twice"
        out.append(_finding(RESTATES_USER_RULE, message, whole, data))
    if nth > MAX_ACTIVE_RULES_PER_DOMAIN:
        message = (
            f"active learned rule {nth} of a cap of {MAX_ACTIVE_RULES_PER_DOMAIN} "
            f"in `{doc.domain}`: disable or retire rules to get under it"
        )
        out.append(_finding(OVER_CAP, message, whole, {**data, "active": nth, "cap": MAX_ACTIVE_RULES_PER_DOMAIN}))
    return out


def _ledger_findings(doc: _Doc, index: int, rule: Rule, tallies: Mapping[str, RuleTally]) -> list[Finding]:
    """What the validation ledger pins on a rule still in service."""
    tally = tallies.get(rule.id) if rule.id is not None else None
    if tally is None or tally.attributed_regressions <= 0 or rule.retired_at is not None:
        return []
    count = tally.attributed_regressions
    message = (
        f"the validation ledger pins {count} regression{'s' if count != 1 else ''} on this rule "
        f"({tally.observations} observation{'s' if tally.observations != 1 else ''})"
    )
    data = {"domain": doc.domain, "rule_id": rule.id, "rule_index": index, "count": count}
    return [_finding(ATTRIBUTED_REGRESSIONS, message, doc.whole(index), data)]


def _rule_range(span: RuleSpan, lines: Sequence[str]) -> Range:
    """A rule's own range: its header through the end of its last value."""
    return Range(span.header_line, 0, span.end_line, len(lines[span.end_line]))


def _path_range(message: str, spans: Sequence[RuleSpan | None], lines: Sequence[str], fallback: Range) -> Range:
    """Where msgspec's `$.rules[N].key` path points: that key's value, else
    that rule, else `fallback`."""
    m = _PATH_RE.search(message)
    pm = _RULES_PATH_RE.match(m.group(1)) if m else None
    if pm is None or pm.group(1) is None:
        return fallback
    index = int(pm.group(1))
    span = spans[index] if index < len(spans) else None
    if span is None:
        return fallback
    key = pm.group(2)
    if key is not None and key in span.value_ranges:
        return span.value_ranges[key]
    return _rule_range(span, lines)


def _toml_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date or time"


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.start_line, f.start_col, f.end_line, f.end_col, f.code))


def pending_findings(domain: str, pending: Sequence[PendingProposal], where: Range) -> list[Finding]:
    """One `pending-proposal` finding per pending proposal, at `where`
    (line 0 of the learned file). Its `data` is the round trip its actions
    need — the proposal's id, its before/after counts and its numbered
    changes — so choosing an action never has to look the proposal up again."""
    return [
        _finding(
            PENDING_PROPOSAL,
            f"proposal {p.id} for {domain} is pending: accept, reject or show its diff",
            where,
            {
                "domain": domain,
                "proposal_id": p.id,
                "active_before": p.active_before,
                "active_after": p.active_after,
                "changes": [list(c) for c in p.changes],
            },
        )
        for p in pending
    ]

