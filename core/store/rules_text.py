"""The text of a rules file, read and written, with no path in sight.

Read with the standard library's `tomllib` — every agent run pays for this
import — and written with `tomlkit`, imported only by the one writer (an
accept), so comments a person wrote in a learned file survive an
acceptance. Pure, so an editor checks an unsaved buffer with exactly the
parser a run uses.
"""

from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import Sequence
from typing import Any

import msgspec

from mecha.core.domain.rules import Rule, RulesFile
from mecha.core.errors import InvalidStore
from mecha.core.nesting import toml_loads, toml_problem

log = logging.getLogger(__name__)


def rules_file_project(data: bytes | str) -> str | None:
    """The project path a rules file says it belongs to (its top-level
    `project` key), or `None` (a global file, or one that does not parse)."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    if toml_problem(len(data), data) is not None:
        return None
    try:
        value = toml_loads(data).get("project")
    except tomllib.TOMLDecodeError:
        return None
    return value if isinstance(value, str) else None




# ─── Reading rules files ────────────────────────────────────────────────────

_TOML_POSITION_RE = re.compile(r"at line (\d+), column (\d+)")
_VALIDATION_PATH_RE = re.compile(r"`\$((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*)`")
_RULES_PATH_RE = re.compile(r"^\.rules(?:\[(\d+)\](?:\.([A-Za-z_][A-Za-z0-9_]*))?)?")
_RULES_HEADER_RE = re.compile(r"""^\s*\[\[\s*(?:rules|"rules"|'rules')\s*\]\]""")
_RULES_KEY_RE = re.compile(r"""^\s*(?:(?:rules|"rules"|'rules')\s*=|\[\s*(?:rules|"rules"|'rules')\s*\])""")


def parse_rules_file(data: bytes | str, name: str) -> list[Rule]:
    """The rules in one TOML rules file, or `InvalidStore` naming `name` and
    the line.

    Pure, so an editor can check an unsaved buffer with exactly the parser a
    run uses. Unknown keys are ignored (a newer writer's fields must not brick
    an older reader); a wrong-typed known key is an error, located by the
    rules table and key it sits in, because `tomllib` keeps no positions once
    a document has parsed.
    """
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise InvalidStore(
                f"{name}:{line}: not UTF-8 text ({e.reason} at byte {e.start})", path=name, line=line
            ) from None
    else:
        text = data
    problem = toml_problem(len(data) if isinstance(data, bytes) else len(text.encode("utf-8", "surrogatepass")), text)
    if problem is not None:
        raise InvalidStore(f"{name}:1: {problem}", path=name, line=1)
    try:
        raw = toml_loads(text)
    except tomllib.TOMLDecodeError as e:
        line = _toml_error_line(str(e), text)
        raise InvalidStore(f"{name}:{line}: {e}", path=name, line=line) from None
    try:
        return msgspec.convert(raw, RulesFile).rules
    except msgspec.ValidationError as e:
        line = _validation_error_line(str(e), text)
        raise InvalidStore(f"{name}:{line}: {e}", path=name, line=line) from None


def _toml_error_line(message: str, text: str) -> int:
    m = _TOML_POSITION_RE.search(message)
    if m:
        return int(m.group(1))
    # "at end of document"
    return max(1, len(text.splitlines()))


def _validation_error_line(message: str, text: str) -> int:
    """The line of the value msgspec complained about, found from its path
    (`$.rules[2].confidence`): the key's line inside the right `[[rules]]`
    table, else that table's header, else the `rules =` line, else line 1."""
    index: int | None = None
    key: str | None = None
    m = _VALIDATION_PATH_RE.search(message)
    if m:
        pm = _RULES_PATH_RE.match(m.group(1))
        if pm:
            index = int(pm.group(1)) if pm.group(1) is not None else None
            key = pm.group(2)
    lines = text.splitlines()
    if index is not None:
        seen = -1
        for n, line in enumerate(lines):
            if not _RULES_HEADER_RE.match(line):
                continue
            seen += 1
            if seen != index:
                continue
            if key is not None:
                key_re = re.compile(rf"""^\s*(?:{key}|"{key}"|'{key}')\s*=""")
                for k in range(n + 1, len(lines)):
                    if lines[k].lstrip().startswith("["):
                        break
                    if key_re.match(lines[k]):
                        return k + 1
            return n + 1
    for n, line in enumerate(lines):
        if _RULES_KEY_RE.match(line):
            return n + 1
    return 1


# ─── Writing learned rules (tomlkit, imported only here) ────────────────────


def _learned_header(domain: str, project: str | None = None) -> str:
    scope = "" if project is None else f" in the project at {project}"
    return (
        f"# Learned rules for the `{domain}` domain{scope}.\n"
        "# Changed only when a person accepts a proposal. You may edit this file:\n"
        "# set `enabled = false` to silence a rule; comments are kept where the\n"
        "# layout allows.\n"
    )


def _toml_fields(rule: Rule) -> dict[str, Any]:
    """A rule as TOML key/values: `None` and empty lineage are left out (TOML
    has no null), `enabled` is always spelled out so a person can flip it."""
    fields: dict[str, Any] = msgspec.to_builtins(rule)
    ordered = {"text": fields.pop("text"), "enabled": rule.enabled}
    fields.pop("enabled", None)
    ordered.update(fields)
    return ordered


def _rules_round_trip(text: str, rules: Sequence[Rule]) -> bool:
    try:
        return parse_rules_file(text, "<candidate>") == list(rules)
    except InvalidStore:
        return False


def render_learned_toml(existing: str | None, rules: Sequence[Rule], domain: str, project: str | None = None) -> str:
    """The text of a learned rules file holding exactly `rules`.

    When a file exists, it is edited in place so a person's comments and
    layout survive: each rule is matched to an existing table by id, else by
    text, and updated key by key (unchanged keys keep their formatting and
    inline comments; keys this code does not know are left alone); tables for
    dropped rules are removed, new rules appended, and the order made that of
    `rules`. The result is re-parsed and used only if it reads back as
    exactly `rules`; anything else — an inline `rules = [...]` array, a shape
    tomlkit cannot edit — falls back to writing the whole document fresh.
    Correct first, pretty second.
    """
    if existing is not None:
        try:
            merged = _merge_learned_toml(existing, rules)
        except Exception as e:  # any tomlkit surprise: take the simple path
            log.info("rewriting learned rules whole (could not edit in place: %s)", e)
            merged = None
        if merged is not None and _rules_round_trip(merged, rules):
            return merged
    return _fresh_learned_toml(rules, domain, project)


def _fresh_learned_toml(rules: Sequence[Rule], domain: str, project: str | None = None) -> str:
    """A whole learned file; a project's names its project's path (the
    `project` key, before any table, and the header comment): the file's
    name holds only an id, which no reader can turn back into a path."""
    import tomlkit

    doc = tomlkit.document()
    for line in _learned_header(domain, project).splitlines():
        doc.add(tomlkit.comment(line.removeprefix("# ")))
    doc.add(tomlkit.nl())
    if project is not None:
        doc["project"] = project
        doc.add(tomlkit.nl())
    if rules:
        aot = tomlkit.aot()
        for rule in rules:
            table = tomlkit.table()
            for key, value in _toml_fields(rule).items():
                table[key] = value
            aot.append(table)
        doc["rules"] = aot
    return tomlkit.dumps(doc)


def _merge_learned_toml(existing: str, rules: Sequence[Rule]) -> str | None:
    import tomlkit
    from tomlkit.items import AoT, Table

    doc = tomlkit.parse(existing)
    current = doc.get("rules")
    if current is None:
        old_tables: list[Table] = []
    elif isinstance(current, AoT):
        old_tables = list(current.body)
    else:
        return None
    old_rules = [msgspec.convert(t.unwrap(), Rule) for t in old_tables]
    assign = _match_rules(old_rules, rules)
    tails = _detach_tails(old_tables)
    leads: list[list[Any]] = [[]] + tails[:-1]
    doc_tail: list[Any] = tails[-1] if tails else []
    out = _arrange_tables(rules, assign, old_tables, leads)
    if out:
        for item in doc_tail:
            out[-1].add(item)
        aot = AoT([], name="rules", parsed=True)
        for table in out:
            aot.append(table)
        if current is None:
            doc.append("rules", aot)
        else:
            doc["rules"] = aot
    else:
        if current is not None:
            del doc["rules"]
        for item in doc_tail:
            doc.add(item)
    return tomlkit.dumps(doc)


def _detach_tails(old_tables: Sequence[Any]) -> list[list[Any]]:
    """The comments and blank lines ending each table, taken out of it.

    tomlkit files the comments and blank lines above a `[[rules]]` header
    under the *previous* table. Detached, they travel with the rule they
    were written about when rules are reordered or dropped."""
    from tomlkit.items import Comment, Whitespace

    tails: list[list[Any]] = []
    for table in old_tables:
        body = table.value.body
        tail: list[Any] = []
        while body and body[-1][0] is None and isinstance(body[-1][1], (Comment, Whitespace)):
            tail.insert(0, body.pop()[1])
        tails.append(tail)
    return tails


def _needs_gap(table: Any) -> bool:
    body = table.value.body
    return bool(body) and body[-1][0] is not None


def _arrange_tables(
    rules: Sequence[Rule], assign: Sequence[int | None], old_tables: Sequence[Any], leads: Sequence[list[Any]]
) -> list[Any]:
    """The tables of `rules` in order: an existing one updated key by key
    (with the comments that led it), a new one for a rule no table held."""
    import tomlkit
    from tomlkit.items import Comment

    out: list[Any] = []
    prev_old: int | None = None
    for rule, i in zip(rules, assign):
        if i is None:
            table = tomlkit.table()
            for key, value in _toml_fields(rule).items():
                table[key] = value
            if out and _needs_gap(out[-1]):
                out[-1].add(tomlkit.nl())
        else:
            table = old_tables[i]
            _update_table(table, rule)
            lead = leads[i]
            if out:
                for item in lead:
                    out[-1].add(item)
                if not lead and prev_old != i - 1 and _needs_gap(out[-1]):
                    out[-1].add(tomlkit.nl())
            elif lead and any(isinstance(item, Comment) for item in lead):
                table = _moved_to_top(table, lead)
        out.append(table)
        prev_old = i
    return out


def _moved_to_top(table: Any, lead: Sequence[Any]) -> Any:
    """A table moved to the top: its comment goes under its own header."""
    import tomlkit
    from tomlkit.items import Comment

    moved = tomlkit.table()
    for item in lead:
        if isinstance(item, Comment):
            moved.add(item)
    for body_key, item in table.value.body:
        if body_key is None:
            moved.add(item)  # keyless: a comment or a blank line
        else:
            moved.add(body_key, item)
    return moved


def _match_rules(old: Sequence[Rule], new: Sequence[Rule]) -> list[int | None]:
    """For each new rule, the index of the existing rule it updates: the same
    id first, then the same text (unless both carry ids that differ)."""
    assign: list[int | None] = [None] * len(new)
    used: set[int] = set()
    for j, rule in enumerate(new):
        if rule.id is None:
            continue
        for i, prev in enumerate(old):
            if i not in used and prev.id == rule.id:
                assign[j] = i
                used.add(i)
                break
    for j, rule in enumerate(new):
        if assign[j] is not None:
            continue
        for i, prev in enumerate(old):
            if i in used or prev.text != rule.text:
                continue
            if rule.id is not None and prev.id is not None and rule.id != prev.id:
                continue
            assign[j] = i
            used.add(i)
            break
    return assign


def _update_table(table: Any, rule: Rule) -> None:
    """Bring one existing `[[rules]]` table to `rule`, touching only keys
    whose value changes."""
    wanted = _toml_fields(rule)
    for name in Rule.__struct_fields__:
        present = name in table
        if name in wanted:
            value = wanted[name]
            if present:
                current = table[name]
                current = current.unwrap() if hasattr(current, "unwrap") else current
                if current == value and type(current) is type(value):
                    continue
            elif name == "enabled" and value is True:
                continue  # absent already means enabled; keep the file terse
            table[name] = value
        elif present:
            del table[name]

