"""The learning store: plain files under one owner-only directory.

Files rather than a database, on purpose: the person this system learns from
must be able to read, grep, edit and revert everything it knows, with the
tools they already have. The layout is the Rust harness's, so both can share
one directory:

```text
reflections.jsonl            append-only evidence, one reflection per line
mined.jsonl                  session ids already mined, one per line
mined_outbox.jsonl           outbox item ids already mined, one per line
distilled.jsonl              session ids already distilled, one per line
runs.jsonl                   one LeapRun per consolidation pass
validations.jsonl            one ValidationRecord per probe
imported.jsonl               one ImportRecord per session file imported from another agent
proposals/<id>.json          rule changes waiting for a person
rules/<domain>.user.toml     the person's own rules — never written by code
rules/<domain>.learned.toml  written only when a person accepts a proposal
rules/<domain>@<project>.learned.toml   the same for one project's rules (`layout`)
jobs/<id>.json, logs/        background passes
```

The directory is a git repository when git is available (`git log` is the
audit trail, `git revert` the undo for a bad acceptance); without git the
history is lost and nothing else is.

Concurrency has two halves. Writers — a reflect pass, a learn pass, an
accept — take the advisory `flock` on `.lock` *before reading the state they
act on*, because the read is where the race lives (two passes that both read
`mined.jsonl` before either marks it would mine one session twice). Readers
take nothing: an agent run reads the rules block at startup and must never
wait on a pass. That is only safe because every rewrite is a temp sibling
renamed into place, so a reader sees the old file or the new one, and every
append is one write of whole lines (see `_files`). The store's methods do
not take the lock themselves; the pass that strings several of them together
does, around the whole read-decide-write sequence.

Damage stays local. One corrupt line in a JSONL file costs that record and
is logged; an unreadable proposal file is skipped; a rules file that does not
parse raises `InvalidStore` naming the file and line, because silently
dropping a person's rules would change what every run is told.

The rules files are read with the standard library's `tomllib` on the cold
path — every agent run pays for this import — and written with `tomlkit`,
imported only by the one writer, so comments a person wrote in a learned
file survive an acceptance.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import tomllib
from collections.abc import Iterable, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from mecha.core.errors import Ambiguous, InvalidDomain, InvalidInput, InvalidStore, NotFound
from mecha.core.learning.rules import (
    MAX_ACTIVE_RULES_PER_DOMAIN,
    Refusal,
    Rule,
    RuleDrop,
    RulesFile,
    active_count,
    domain_rules_section,
    rules_hash,
    run_domains_including,
    validate_domain,
    wrap_rules_block,
)
from mecha.core.store import files as _files
from mecha.core.store.layout import (
    ATTEMPTS_FILE,
    DISTILLED_FILE,
    GIT_DIR,
    GITIGNORE_ENTRIES,
    GITIGNORE_FILE,
    IMPORTED_FILE,
    INBOX_DIR,
    JOBS_DIR,
    LEARNED_KIND,
    LOCAL_MODEL_LOG,
    LOCK_FILE,
    LOGS_DIR,
    MINED_FILE,
    MINED_OUTBOX_FILE,
    PROPOSALS_DIR,
    REFLECTIONS_FILE,
    RULES_DIR,
    RULES_SUFFIX,
    RUNS_FILE,
    SET_ASIDE_DIR,
    STRUCTURED_MODES_FILE,
    TMP_SUFFIX,
    USER_KIND,
    VALIDATIONS_FILE,
    default_root,
    project_id,
    resolve_root,
    rules_file_name,
    rules_fingerprint,
    split_rules_name,
)
from mecha.core.store.ledger import LeapRun, ValidationRecord

if TYPE_CHECKING:
    # Imported where used: an agent run reads its rules block at startup and
    # needs neither git (`subprocess`) nor reflections.
    import subprocess

    from mecha.core.learning.reflection import Reflexion

log = logging.getLogger(__name__)

T = TypeVar("T")

def parse_rules_name(name: str) -> tuple[str, str, str | None] | None:
    """`(domain, kind, project id or None)` for a rules file's name, or
    `None` when it names no rules file (an invalid domain or project id)."""
    found = split_rules_name(name, (USER_KIND, LEARNED_KIND))
    if found is None:
        return None
    try:
        validate_domain(found[0])
    except InvalidDomain:
        return None
    return found


def rules_file_path(root: Path, domain: str, kind: str, project: str | None = None) -> Path:
    """`<root>/rules/<domain>[@<project id>].<kind>.toml`, after the domain is
    validated."""
    return root / RULES_DIR / rules_file_name(validate_domain(domain), kind, project)


def rules_file_project(data: bytes | str) -> str | None:
    """The project path a rules file says it belongs to (its top-level
    `project` key), or `None` (a global file, or one that does not parse)."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    try:
        value = tomllib.loads(data).get("project")
    except tomllib.TOMLDecodeError:
        return None
    return value if isinstance(value, str) else None


#: The store's parts whose every file an editor shows something of: a
#: proposal as a diagnostic and a lens, a job as progress.
_WATCHED_DIRS = (PROPOSALS_DIR, JOBS_DIR)
#: The ledgers an editor shows something of: tallies and lessons in a hover.
_WATCHED_FILES = (VALIDATIONS_FILE, REFLECTIONS_FILE)


def _stat_key(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_ino, st.st_mtime_ns, st.st_size


def store_identity(root: Path) -> tuple[Any, ...]:
    """What changes when anything an editor shows of the store at `root`
    could: the rules files (by `rules_fingerprint`), every proposal and job
    record, the validation ledger and the reflections. Comparable with `==`
    and cheap (stats, no reads), so a watcher polls it and recomputes only
    when it moved, whoever moved it (a pass, the CLI, another editor).

    A write in progress (a `*.tmp` file beside its target) is left out: it
    is not a change until it is renamed into place, and counting it would
    announce the same change twice. A part that does not exist yet is
    simply absent, so a store that does not exist has an identity too."""
    ident: list[Any] = [(RULES_DIR, repr(rules_fingerprint(root)))]
    for sub in _WATCHED_DIRS:
        try:
            with os.scandir(root / sub) as it:
                for e in it:
                    if e.name.endswith(TMP_SUFFIX):
                        continue
                    ident.append((sub, e.name, *_stat_key(e.stat(follow_symlinks=False))))
        except FileNotFoundError:
            continue
    for name in _WATCHED_FILES:
        try:
            ident.append((name, *_stat_key((root / name).stat())))
        except FileNotFoundError:
            pass
    ident.sort()
    return tuple(ident)

#: A proposal id becomes a file name, so it is checked before any path is
#: built: no separators, no leading dot, a length a filesystem accepts.
_PROPOSAL_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

#: The one identity every store commit is made under, so a commit works on a
#: machine with no git configuration and the history says who wrote it.
GIT_IDENTITY: tuple[str, ...] = ("-c", "user.name=mecha", "-c", "user.email=mecha@localhost")

#: Environment a store's git must not inherit: any of these would point git
#: at another repository (a harness run from inside a git hook has GIT_DIR
#: set) or put another name on the store's history.
_GIT_ENV_SCRUB: tuple[str, ...] = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
)
_GIT_TIMEOUT_S = 60
#: An index lock older than this was left by a git that died (see `commit`).
_STALE_GIT_LOCK_S = 600


# ─── Proposals and the rendered block ───────────────────────────────────────


class ProposalStatus(str, Enum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    #: The paired gate measured the candidate and refused it; its reflections
    #: return to the pool to be argued again.
    REJECTED_BY_GATE = "rejected_by_gate"


class Proposal(msgspec.Struct, kw_only=True):
    """A rule change waiting for a person, with what argues for it.

    Unattended learning may only *propose*: the live learned file changes
    when a person accepts. `rules_before` is the learned set the candidate
    was generated (and measured) against, so review shows the diff that was
    measured, and an accept can see that the live rules moved underneath it.
    """

    id: str
    domain: str
    status: ProposalStatus
    #: The reflections the candidate was learned from; marked processed only
    #: when a person resolves the proposal.
    reflexion_ids: list[str]
    rules_before: list[Rule]
    rules: list[Rule]
    #: What the gate measured, for a person to read. Empty: nothing in the
    #: batch was measurable — review by reading, not by score.
    evidence: str
    created_at: str
    resolved_at: str | None = None
    reason: str | None = None
    #: The scope whose learned rules `rules_before` and `rules` are: a
    #: project's root, or `None` — global, which is also what a proposal
    #: written before scopes reads as.
    project: str | None = None
    #: Set on a *promotion*: the projects whose live rules each hold the
    #: lesson this global proposal adds (`learning.proposals`); accepting it
    #: moves the lesson out of their files into the global one.
    promoted_from: list[str] = msgspec.field(default_factory=list)
    #: Set when a person accepted a project's lesson as global (`accept
    #: --global`): its new rules went to the global file instead.
    accepted_as_global: bool = False
    #: Live learned rules the candidate leaves out, each with why (a rule of
    #: the candidate absorbs it, or a reflection contradicts it).
    drops: list[RuleDrop] = msgspec.field(default_factory=list)
    #: What the learn gate refused of the learner's answer, and why.
    refusals: list[Refusal] = msgspec.field(default_factory=list)


class RenderedBlock(msgspec.Struct, kw_only=True):
    """The rules block a run's system prompt carries, and what is in it."""

    #: `None` when no loaded domain has an active rule: an empty section would
    #: spend cached-prefix tokens on a heading.
    block: str | None
    #: `rules_hash(block)`; what the validation ledger keys on.
    rules_hash: str | None
    #: Ids of the active learned rules riding in `block`, in block order.
    rule_ids: list[str]
    #: The domains loaded, in order, whether or not each contributed.
    domains: list[str]


RuleSet = tuple[str, Sequence[Rule], Sequence[Rule]]


def render_rules(rule_sets: Sequence[RuleSet], project_sets: Sequence[RuleSet] = ()) -> RenderedBlock:
    """Render `(domain, user rules, learned rules)` sets into the block: the
    global ones, then one project's (`project_sets`, each under its
    `(this project)` heading) — global first, so what holds everywhere
    reads before what one repository adds.

    The one rendering every caller shares — a run's block, a proposal's
    before/after diff, a counterfactual probe's candidate — because a gate's
    measurement of a candidate means something about the deployment that
    follows acceptance only if both render identically.

    Each scope keeps its own cap (`MAX_ACTIVE_RULES_PER_DOMAIN` is enforced
    per learned file), so a domain's part of the block is at most the
    global cap plus the project's.
    """
    sections: list[str] = []
    rule_ids: list[str] = []
    domains: list[str] = []
    for sets, in_project in ((rule_sets, False), (project_sets, True)):
        for domain, user, learned in sets:
            if domain not in domains:
                domains.append(domain)
            section = domain_rules_section(domain, user, learned, project=in_project)
            if section is None:
                continue
            sections.append(section)
            for rule in learned:
                if rule.active() and rule.id is not None and rule.id not in rule_ids:
                    rule_ids.append(rule.id)
    block = wrap_rules_block(sections)
    return RenderedBlock(
        block=block,
        rules_hash=rules_hash(block) if block is not None else None,
        rule_ids=rule_ids,
        domains=domains,
    )


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
    try:
        raw = tomllib.loads(text)
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
    from tomlkit.items import AoT, Comment, Table, Whitespace

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

    # tomlkit files the comments and blank lines above a `[[rules]]` header
    # under the *previous* table. Detach them so they travel with the rule
    # they were written about when rules are reordered or dropped.
    tails: list[list[Any]] = []
    for table in old_tables:
        body = table.value.body
        tail: list[Any] = []
        while body and body[-1][0] is None and isinstance(body[-1][1], (Comment, Whitespace)):
            tail.insert(0, body.pop()[1])
        tails.append(tail)
    leads: list[list[Any]] = [[]] + tails[:-1]
    doc_tail: list[Any] = tails[-1] if tails else []

    def needs_gap(table: Table) -> bool:
        body = table.value.body
        return bool(body) and body[-1][0] is not None

    out: list[Table] = []
    prev_old: int | None = None
    for rule, i in zip(rules, assign):
        if i is None:
            table = tomlkit.table()
            for key, value in _toml_fields(rule).items():
                table[key] = value
            if out and needs_gap(out[-1]):
                out[-1].add(tomlkit.nl())
        else:
            table = old_tables[i]
            _update_table(table, rule)
            lead = leads[i]
            if out:
                for item in lead:
                    out[-1].add(item)
                if not lead and prev_old != i - 1 and needs_gap(out[-1]):
                    out[-1].add(tomlkit.nl())
            elif lead and any(isinstance(item, Comment) for item in lead):
                # Moved to the top: its comment goes under its own header.
                moved = tomlkit.table()
                for item in lead:
                    if isinstance(item, Comment):
                        moved.add(item)
                for body_key, item in table.value.body:
                    if body_key is None:
                        moved.add(item)  # type: ignore[call-overload]  # keyless: a comment or a blank line
                    else:
                        moved.add(body_key, item)
                table = moved
        out.append(table)
        prev_old = i

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


# ─── Ledger encoding ────────────────────────────────────────────────────────

_ENCODER = msgspec.json.Encoder()
_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {}


class _ReflexionHead(msgspec.Struct):
    """What a pass filters reflections by, read without the rest of the line.
    Same names, types and defaults as `Reflexion`'s (origin as its string)."""

    domain: str
    is_processed: bool = False
    origin: str = "untrusted"
    project: str | None = None


class _MarkHead(msgspec.Struct):
    """What marking needs to know of a line before deciding to touch it."""

    id: str
    is_processed: bool = False


def _decoder(type_: type[T]) -> msgspec.json.Decoder[T]:
    """The typed decoder for `type_`, built on first use and kept: building
    one inspects the type, and the harness's cold path decodes none of these."""
    decoder = _DECODERS.get(type_)
    if decoder is None:
        decoder = _DECODERS[type_] = msgspec.json.Decoder(type_)
    return decoder


def _reflexion_decoder() -> msgspec.json.Decoder[Reflexion]:
    from mecha.core.learning.reflection import Reflexion

    return _decoder(Reflexion)


def _mark_lines(data: bytes, wanted: set[str], run_id: str) -> tuple[list[bytes | memoryview], int]:
    """The reflections file with the `wanted`, unprocessed ones marked, as
    chunks to write in order, and how many were marked. Blank lines are
    dropped; every other line not being marked — a corrupt one included — is
    kept byte for byte, each followed by a newline.

    The file is walked line by line without splitting it into a list, and
    the chunks are runs of untouched lines as views into `data`, so a large
    file is neither copied line by line nor joined back together."""
    view = memoryview(data)
    chunks: list[bytes | memoryview] = []
    marked = 0
    head, decoder = _decoder(_MarkHead), _reflexion_decoder()
    run: int | None = None  # where the current run of untouched lines starts
    size = len(data)
    pos = 0
    while pos <= size:
        end = data.find(b"\n", pos)
        if end == -1:
            end = size
        line = data[pos:end].strip()
        replacement: bytes | None = None
        if line:
            try:
                # The id and flag first; a line that would be marked is then
                # decoded whole, so only a valid reflection is ever marked.
                h = head.decode(line)
                if h.id in wanted and not h.is_processed:
                    r = decoder.decode(line)
                    if r.id in wanted and not r.is_processed:
                        # Re-encoded from the raw object, not the struct, so
                        # fields a newer writer added survive the marking.
                        obj = msgspec.json.decode(line)
                        obj["is_processed"] = True
                        obj["leap_run_id"] = run_id
                        replacement = _ENCODER.encode(obj) + b"\n"
            except msgspec.DecodeError:
                pass
        if line and replacement is None:
            if run is None:
                run = pos
        else:
            if run is not None:
                chunks.append(view[run:pos])  # through the newline before this line
                run = None
            if replacement is not None:
                chunks.append(replacement)
                marked += 1
        pos = end + 1
    if run is not None:
        # The last line had no newline after it.
        chunks.extend((view[run:size], b"\n"))
    return chunks, marked


# ─── Reflector attempts ─────────────────────────────────────────────────────

#: An intervention whose reflector gave this many unusable answers (counted
#: across passes) is set aside rather than asked again: a model that cannot
#: answer it must not be retried for ever, and three tries is enough to tell
#: bad luck from a prompt the model cannot handle.
MAX_UNUSABLE_ANSWERS = 3

AttemptKind = Literal["answered", "unusable", "set_aside", "retry"]


class Attempt(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One line of the attempts ledger."""

    #: The intervention: `<session id>#<message index>:<trigger>`, or
    #: `draft:<outbox item id>` (see `passes.intervention_key`).
    key: str
    state: AttemptKind
    at: str
    #: Why an answer was unusable, or why the intervention was set aside.
    reason: str | None = None


class AttemptState(msgspec.Struct):
    """Where one intervention stands, folded from its attempt lines."""

    answered: bool = False
    unusable: int = 0
    set_aside: str | None = None

    def apply(self, rec: Attempt) -> None:
        if rec.state == "answered":
            self.answered = True
        elif rec.state == "unusable":
            self.unusable += 1
        elif rec.state == "set_aside":
            self.set_aside = rec.reason or "set aside"
        elif rec.state == "retry":
            self.answered, self.unusable, self.set_aside = False, 0, None

    @property
    def settled(self) -> bool:
        """Nothing more to ask the model: answered, or set aside."""
        return self.answered or self.set_aside is not None


class SetAside(msgspec.Struct, kw_only=True):
    """Why an inbox entry was set aside, kept beside it."""

    id: str
    reason: str
    set_aside_at: str
    #: The interventions set aside (attempts-ledger keys); empty when the
    #: whole entry was (unreadable, an id that can never be recorded).
    interventions: list[str] = msgspec.field(default_factory=list)
    #: `session <id>` / `draft <id>`, when the entry could be read.
    label: str | None = None


# ─── The lock ───────────────────────────────────────────────────────────────


class StoreLock:
    """The store's writer lock, held until `release()`, the end of a `with`
    block, garbage collection, or the death of the process — the kernel drops
    an `flock` when its file closes, so a crashed pass can never wedge the
    store."""

    def __init__(self, fd: int):
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            # Explicit unlock first: a forked child may share this open file
            # description, and closing our copy alone would not free it.
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> StoreLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:
            pass


# ─── The store ──────────────────────────────────────────────────────────────


class LearningStore:
    """The learning directory, as methods. Constructing one touches nothing
    on disk; `open` creates the layout, `open_existing` refuses to."""

    def __init__(self, root: str | os.PathLike[str]):
        self._root = Path(root)

    def __repr__(self) -> str:
        return f"LearningStore({str(self._root)!r})"

    @property
    def root(self) -> Path:
        return self._root

    # ── paths: the layout is `layout`'s, joined to the root here alone ──

    @property
    def rules_dir(self) -> Path:
        return self._root / RULES_DIR

    @property
    def reflections_path(self) -> Path:
        return self._root / REFLECTIONS_FILE

    @property
    def inbox_path(self) -> Path:
        return self._root / INBOX_DIR

    @property
    def set_aside_path(self) -> Path:
        return self._root / SET_ASIDE_DIR

    @property
    def structured_modes_path(self) -> Path:
        """Which structured reply mode each model server accepted
        (`providers.structured.ModeMemory`)."""
        return self._root / STRUCTURED_MODES_FILE

    @property
    def local_model_log_path(self) -> Path:
        """The log of a local model server started for this store (the demo's)."""
        return self._root / LOCAL_MODEL_LOG

    def has_history(self) -> bool:
        """Whether the store is a git repository (its audit trail)."""
        return (self._root / GIT_DIR).is_dir()

    def loose_entries(self) -> list[str]:
        """What in the store others could read or that is a symbolic link,
        each as `<path relative to the root> (<mode>)`, the root itself
        first (as `.`); git's own folder is git's business and not walked."""
        import stat

        loose = []
        for dirpath, dirnames, filenames in os.walk(self._root):
            if GIT_DIR in dirnames:
                dirnames.remove(GIT_DIR)
            for name in [*dirnames, *filenames]:
                path = Path(dirpath, name)
                try:
                    mode = path.lstat().st_mode
                except OSError:
                    continue
                if stat.S_ISLNK(mode):
                    loose.append(f"{path.relative_to(self._root)} (symlink)")
                elif mode & 0o077:
                    loose.append(f"{path.relative_to(self._root)} ({stat.filemode(mode)})")
        try:
            root_mode = self._root.stat().st_mode
            if root_mode & 0o077:
                loose.insert(0, f". ({stat.filemode(root_mode)})")
        except OSError:
            pass
        return loose

    def seed_rules_from(self, other_root: Path) -> list[Path]:
        """Copy every rules file of the store-shaped folder `other_root` (the
        bundled samples) into this store's rules, creating the folder: how a
        throwaway store starts with rules. Returns the files written."""
        source = other_root / RULES_DIR
        _files.ensure_private_dir(self._root)
        _files.ensure_private_dir(self._root / RULES_DIR, root=self._root)
        written = []
        for path in sorted(source.glob("*" + RULES_SUFFIX)):
            dest = _files.refuse_links(self._root, self._root / RULES_DIR / path.name)
            _files.write_atomic(dest, path.read_bytes())
            written.append(dest)
        return written

    # ── opening ──

    @staticmethod
    def default_root() -> Path:
        """`$MECHA_LEARNING_DIR`, else `~/.mecha/learning`, as an absolute
        path (`layout.default_root`)."""
        return Path(default_root())

    @staticmethod
    def resolve_root(given: str | os.PathLike[str] | None) -> Path:
        """The store root `given` names, else the default, made absolute
        once where it enters (`layout.resolve_root` says why)."""
        return Path(resolve_root(given))

    @classmethod
    def open(cls, root: str | os.PathLike[str] | None = None) -> LearningStore:
        """Open the store for writing, creating its layout if missing.

        Every directory is made owner-only, and a git repository is created
        best-effort: git being absent degrades to plain files — the audit
        trail is lost, the data is not.
        """
        store = cls(cls.default_root() if root is None else root)
        # The root holds reflections and ledgers directly, so it gets the
        # owner-only mode itself, not only through its subdirectories.
        _files.ensure_private_dir(store._root)
        for sub in (RULES_DIR, PROPOSALS_DIR, JOBS_DIR, LOGS_DIR):
            _files.ensure_private_dir(store._root / sub, root=store._root)
        store._ensure_gitignore()
        if not (store._root / GIT_DIR).exists():
            store._git_init()
        return store

    @classmethod
    def open_existing(cls, root: str | os.PathLike[str] | None = None) -> LearningStore | None:
        """The store at `root` (default location if `None`) if that directory
        exists, else `None`. For read paths — a run's prompt assembly — that
        must not create state as a side effect."""
        path = Path(cls.default_root() if root is None else root)
        return cls(path) if path.is_dir() else None

    def _ensure_gitignore(self) -> None:
        path = _files.refuse_links(self._root, self._root / GITIGNORE_FILE)
        data = _files.read_bytes(path)
        present = set() if data is None else {line.strip() for line in data.decode("utf-8", "replace").splitlines()}
        missing = [entry.encode() for entry in GITIGNORE_ENTRIES if entry not in present]
        if not missing:
            return
        if data is None:
            _files.write_atomic(path, b"\n".join(missing) + b"\n")
        else:
            _files.append_lines(path, missing)

    # ── git ──

    def _git(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        import subprocess

        env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_SCRUB}
        env["LC_ALL"] = "C"  # "nothing to commit" is matched in English
        env["GIT_TERMINAL_PROMPT"] = "0"
        return subprocess.run(
            ["git", *args],
            cwd=self._root,
            env=env,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            # What git creates (objects, the index, COMMIT_EDITMSG) is as
            # private as the rest of the store, whatever the caller's umask.
            umask=0o077,
        )

    def _git_init(self) -> None:
        import subprocess

        try:
            result = self._git("-c", "init.defaultBranch=main", "init", "--quiet")
        except (OSError, subprocess.SubprocessError) as e:
            log.warning("git unavailable (%s); the learning store keeps no history", e)
            return
        if result.returncode != 0:
            log.warning("git init failed in the learning store: %s", result.stderr.strip())

    def commit(self, message: str) -> bool:
        """Commit the store's current state; `True` if a commit was made.

        Best effort, always: losing git loses the audit trail, never the
        data, so a failure is a logged warning and "nothing to commit" is not
        even that. Runs with a fixed identity and without hooks, against this
        directory's own repository only — never one it happens to sit in.
        """
        import subprocess

        # The message goes to git on its standard input (`-F -`), never as an
        # argument: the kernel caps one argument at 128 KiB, and a long
        # message (a proposal's evidence) would skip the commit of a change
        # already written. A NUL would end it early there too.
        message = message.replace("\x00", "\\0")
        git_dir = self._root / GIT_DIR
        if not git_dir.exists():
            log.warning("the learning store is not a git repository; not committing %r", message)
            return False
        if git_dir.is_symlink() or not git_dir.is_dir():
            # A link, or a `gitdir:` file, would put the commit somewhere else.
            log.warning("%s is not the store's own directory; not committing %r", git_dir, message)
            return False
        self._clear_stale_git_lock()
        repo = ("--git-dir", str(self._root / GIT_DIR), "--work-tree", str(self._root))
        config = (*GIT_IDENTITY, "-c", "commit.gpgsign=false", "-c", f"core.hooksPath={os.devnull}")
        try:
            added = self._git(*repo, "add", "-A")
            if added.returncode != 0:
                log.warning("learning store commit: git add failed: %s", added.stderr.strip())
                return False
            done = self._git(*repo, *config, "commit", "--quiet", "-F", "-", stdin=message)
        except (OSError, subprocess.SubprocessError) as e:
            log.warning("learning store commit skipped (%s)", e)
            return False
        if done.returncode == 0:
            return True
        said = f"{done.stdout}\n{done.stderr}"
        if "nothing to commit" in said or "nothing added to commit" in said:
            return False
        log.warning("learning store commit failed: %s", said.strip())
        return False

    def _clear_stale_git_lock(self) -> None:
        """Remove the `index.lock` of a git that died mid-command (power loss,
        a killed process group): left in place it fails every later commit,
        and the audit trail stops for good. Mecha runs git only under the
        writer lock, so an old index lock is a dead git's; a young one may be
        a person's own git at work, and is left alone."""
        import time

        lock = self._root / GIT_DIR / "index.lock"
        try:
            age = time.time() - lock.stat().st_mtime
        except OSError:
            return
        if age > _STALE_GIT_LOCK_S:
            log.warning("removing %s, left %.0fs ago by a git that did not finish", lock, age)
            lock.unlink(missing_ok=True)

    # ── locking ──

    def lock(self) -> StoreLock:
        """Take the writer lock, blocking until it is free.

        Take it before reading the state a pass will act on. Advisory, so it
        orders mecha's own writers and does nothing to a person's editor.
        Each call opens its own file description, so a second call contends
        even within one process.
        """
        held = self._flock(blocking=True)
        assert held is not None
        return held

    def try_lock(self) -> StoreLock | None:
        """The writer lock if it is free now, else `None`."""
        return self._flock(blocking=False)

    def refuse_links(self, *paths: Path) -> None:
        """`InvalidStore` naming the first of `paths` that is, or sits in a
        directory of the store that is, a symbolic link (see
        `_files.refuse_links`): for a writer to check every file it will
        touch before it changes any."""
        for path in paths:
            _files.refuse_links(self._root, path)

    def _flock(self, *, blocking: bool) -> StoreLock | None:
        path = _files.refuse_links(self._root, self._root / LOCK_FILE)
        with _files.writing(path if path.exists() else self._root):
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, _files.FILE_MODE)
        try:
            _files.refuse_hard_link(path, os.fstat(fd))
            os.fchmod(fd, _files.FILE_MODE)
            fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        return StoreLock(fd)

    # ── JSONL plumbing ──

    def _read_jsonl(self, name: str, decoder: msgspec.json.Decoder[T], what: str) -> list[T]:
        path = self._root / name
        data = _files.read_bytes(path)
        if not data:
            return []
        out: list[T] = []
        with _files.gc_paused():
            for number, line in _files.nonblank_lines(data):
                try:
                    out.append(decoder.decode(line))
                except msgspec.DecodeError as e:
                    # One corrupt line costs one record, not the file.
                    log.warning("skipping corrupt %s at %s line %d: %s", what, path, number, e)
        return out

    def _append_records(self, name: str, records: Iterable[Any]) -> None:
        lines = [_ENCODER.encode(r) for r in records]
        _files.append_lines(_files.refuse_links(self._root, self._root / name), lines)

    def _read_ids(self, name: str) -> set[str]:
        data = _files.read_bytes(self._root / name)
        if not data:
            return set()
        return {line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()}

    def _append_id(self, name: str, record_id: str) -> None:
        from mecha.core.identity import validate_record_id

        validate_record_id(record_id, "id")
        _files.append_lines(_files.refuse_links(self._root, self._root / name), [record_id.encode("utf-8")])

    # ── reflections ──

    def append_reflexion(self, r: Reflexion) -> None:
        self.append_reflexions([r])

    def append_reflexions(self, rs: Iterable[Reflexion]) -> None:
        """Append reflections in one write. Each one's domain is checked first:
        a later pass builds a rules path from it."""
        rs = list(rs)
        for r in rs:
            validate_domain(r.domain)
        self._append_records(REFLECTIONS_FILE, rs)

    def reflexions(self) -> list[Reflexion]:
        """Every readable reflection, in file order."""
        return self._read_jsonl(REFLECTIONS_FILE, _reflexion_decoder(), "reflection")

    def learnable_unprocessed(self, domain: str) -> list[Reflexion]:
        """A domain's learnable, unprocessed reflections, in file order: what
        `[r for r in reflexions() if r.domain == domain and not
        r.is_processed and r.learnable()]` returns, without building every
        other record. Each line's domain, flag and origin are read first;
        only the lines that pass are decoded whole (and so validated whole,
        as before). A corrupt line that the filter rules out costs nothing
        and is not reported here."""
        path = self._root / REFLECTIONS_FILE
        data = _files.read_bytes(path)
        if not data:
            return []
        head, full = _decoder(_ReflexionHead), _reflexion_decoder()
        out: list[Reflexion] = []
        with _files.gc_paused():
            for number, line in _files.nonblank_lines(data):
                try:
                    h = head.decode(line)
                    if h.domain != domain or h.is_processed or h.origin != "clean":
                        continue
                    r = full.decode(line)
                except msgspec.DecodeError as e:
                    log.warning("skipping corrupt reflection at %s line %d: %s", path, number, e)
                    continue
                if r.learnable():
                    out.append(r)
        return out

    def mark_reflexions_processed(self, ids: Iterable[str], run_id: str) -> int:
        """Mark the named, not yet processed reflections as consumed by
        `run_id`; returns how many changed.

        The file is rewritten through a temp sibling and rename, so a crash
        loses the marking, never a reflection. Only the changed lines are
        re-encoded, and from their raw JSON, so fields this version does not
        know survive; every other line — including one that does not parse —
        is kept byte for byte. Callers hold the writer lock; as a second
        guard, if the file changes between the read and the rename (an
        append that did not take the lock), the marking is redone on the new
        contents rather than overwriting it.
        """
        wanted = set(ids)
        path = self._root / REFLECTIONS_FILE
        if not wanted:
            return 0
        _files.refuse_links(self._root, path)
        for _attempt in range(5):
            try:
                with open(path, "rb") as f:
                    before = os.fstat(f.fileno())
                    data = f.read()
            except FileNotFoundError:
                return 0
            with _files.gc_paused():
                chunks, marked = _mark_lines(data, wanted, run_id)
            if marked == 0:
                return 0
            after = os.stat(path)
            if (after.st_ino, after.st_size, after.st_mtime_ns) != (
                before.st_ino,
                before.st_size,
                before.st_mtime_ns,
            ):
                continue
            _files.write_atomic(path, chunks)
            return marked
        raise RuntimeError(f"{path} kept changing while it was being marked; is a writer running without the lock?")

    # ── mining ledgers ──

    def mined_sessions(self) -> set[str]:
        """Sessions already mined, so a reflect pass never re-reads one."""
        return self._read_ids(MINED_FILE)

    def mark_mined(self, session_id: str) -> None:
        self._append_id(MINED_FILE, session_id)

    def mined_outbox(self) -> set[str]:
        """Outbox items already mined for writing reflections. A separate
        ledger from sessions: an id in one never satisfies the other."""
        return self._read_ids(MINED_OUTBOX_FILE)

    def mark_outbox_mined(self, item_id: str) -> None:
        self._append_id(MINED_OUTBOX_FILE, item_id)

    def distilled_sessions(self) -> set[str]:
        """Sessions already distilled to the knowledge graph — its own ledger,
        so marking a session mined never makes it look distilled."""
        return self._read_ids(DISTILLED_FILE)

    def mark_distilled(self, session_id: str) -> None:
        self._append_id(DISTILLED_FILE, session_id)

    # ── rules ──

    # ── reflector answers, per intervention ──

    def attempt_states(self, keys: Iterable[str] | None = None) -> dict[str, AttemptState]:
        """What the reflector has answered so far for each intervention key
        (all keys on file when `keys` is `None`): folded from the attempts
        ledger, oldest line first, so a `retry` line resets what came
        before it."""
        wanted = None if keys is None else set(keys)
        states: dict[str, AttemptState] = {}
        if wanted is not None and not wanted:
            return states
        for rec in self._read_jsonl(ATTEMPTS_FILE, _decoder(Attempt), "reflector attempt"):
            if wanted is not None and rec.key not in wanted:
                continue
            state = states.setdefault(rec.key, AttemptState())
            state.apply(rec)
        return states

    def record_attempts(self, records: Iterable[Attempt]) -> None:
        """Append reflector answers to the attempts ledger. Caller holds the lock."""
        self._append_records(ATTEMPTS_FILE, records)

    def rules_path(self, domain: str, kind: str, project: str | None = None) -> Path:
        """`rules/<domain>.<kind>.toml`, or the file of the project whose root
        is `project` (`layout`), after the domain is validated."""
        return rules_file_path(self._root, domain, kind, project)

    def _load_rules(self, path: Path) -> list[Rule]:
        data = _files.read_bytes(path)
        if data is None:
            return []
        return parse_rules_file(data, str(path))

    def user_rules(self, domain: str, project: str | None = None) -> list[Rule]:
        """The person's own rules (globally, or for one project). Nothing in
        this codebase writes that file: the learner is told these are
        immutable, and this is that made structural rather than left to a
        model."""
        return self._load_rules(self.rules_path(domain, USER_KIND, project))

    def learned_rules(self, domain: str, project: str | None = None) -> list[Rule]:
        """A domain's learned rules in one scope: global, or the project
        whose root is `project`."""
        return self._load_rules(self.rules_path(domain, LEARNED_KIND, project))

    def write_learned_rules(self, domain: str, rules: Sequence[Rule], project: str | None = None) -> None:
        """Replace a domain's learned rules. Only accepting a proposal calls
        this — unattended learning proposes, it never applies.

        Written through a temp sibling and rename because runs read this file
        with no lock: a torn TOML here would fail an unrelated run at startup.
        An existing file is edited in place where possible, keeping a
        person's comments (`render_learned_toml`).
        """
        path = self.rules_path(domain, LEARNED_KIND, project)
        _files.ensure_private_dir(path.parent, root=self._root)
        _files.refuse_links(self._root, path)
        data = _files.read_bytes(path)
        existing: str | None = None
        if data is not None:
            try:
                existing = data.decode("utf-8")
            except UnicodeDecodeError:
                existing = None
        text = render_learned_toml(existing, rules, domain, project)
        _files.write_atomic(path, text.encode("utf-8"))

    def _rules_names(self) -> list[tuple[str, str, str, str | None]]:
        """`(file name, domain, kind, project id)` of every rules file."""
        try:
            names = os.listdir(self._root / RULES_DIR)
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for name in sorted(names):
            found = parse_rules_name(name)
            if found is not None:
                out.append((name, *found))
        return out

    def domains(self) -> list[str]:
        """Every domain with a rules file on disk, in any scope, sorted. A
        file whose name is not a valid domain is not a domain (and is never
        loaded)."""
        return sorted({domain for _, domain, _, _ in self._rules_names()})

    def projects(self) -> dict[str, str | None]:
        """Every project with a rules file on disk: its id → its root as the
        file names it (`project` key), or `None` where no file of it does
        (a file a person wrote by hand without the key)."""
        out: dict[str, str | None] = {}
        for name, _, _, pid in self._rules_names():
            if pid is None:
                continue
            if out.get(pid) is None:
                data = _files.read_bytes(self._root / RULES_DIR / name)
                out[pid] = None if data is None else rules_file_project(data)
        return out

    def project_domains(self, project: str) -> list[str]:
        """The domains with a rules file for the project whose root is `project`."""
        pid = project_id(project)
        return sorted({d for _, d, _, p in self._rules_names() if p == pid})

    def rules_fingerprint(self) -> list[list[Any]] | None:
        """The identity of every rules file, `None` without a rules directory
        (`layout.rules_fingerprint`): what a cached rules block is keyed by,
        in this process and across runs."""
        return rules_fingerprint(self._root)

    # ── the rules block ──

    def render_block(self, domain: str | None = None, project: str | None = None) -> RenderedBlock:
        """The block a run exercising `domain` carries: `RUN_DOMAINS` in
        order, then `domain` if it is not one of them; per domain the user's
        rules first, then active learned ones — the global scope's, then,
        when the run is in a project (its root, `layout.project_root`), that
        project's (`render_rules`)."""
        return self.render_candidate(None if domain is None else validate_domain(domain), None, project)

    def rules_prompt_block(self, domain: str | None = None, project: str | None = None) -> str | None:
        """Just the text of `render_block(domain, project)`."""
        return self.render_block(domain, project).block

    def render_candidate(
        self,
        domain: str | None,
        learned_rules: Sequence[Rule] | None,
        project: str | None = None,
        *,
        scope: str | None = None,
    ) -> RenderedBlock:
        """The block a run exercising `domain` in `project` (or in no
        project) would carry if the learned rules of `domain` in `scope` (a
        project root; `None`: global) were `learned_rules`, rendered without
        writing anything — for a proposal's diff and for a counterfactual
        probe. `learned_rules=None` renders the live rules."""
        if domain is not None:
            domain = validate_domain(domain)
        run_domains = run_domains_including(domain)

        def learned(d: str, where: str | None) -> list[Rule]:
            if learned_rules is not None and d == domain and where == scope:
                return list(learned_rules)
            return self.learned_rules(d, where)

        sets: list[RuleSet] = [(d, self.user_rules(d), learned(d, None)) for d in run_domains]
        in_project: list[RuleSet] = []
        if project is not None:
            in_project = [(d, self.user_rules(d, project), learned(d, project)) for d in run_domains]
        return render_rules(sets, in_project)

    def over_budget_domains(self) -> list[tuple[str, int]]:
        """Domains on disk whose *global* active learned rules exceed the
        cap, with the count. User rules and retired rules cost the budget
        nothing."""
        return [(d, n) for d, p, n in self.over_budget_scopes(None) if p is None]

    def over_budget_scopes(self, project: str | None) -> list[tuple[str, str | None, int]]:
        """`(domain, scope, active)` for every learned file over the cap, in
        the global scope and, given a project root, in that project (each
        scope has its own cap)."""
        out: list[tuple[str, str | None, int]] = []
        scopes: list[tuple[str | None, list[str]]] = [(None, self.domains())]
        if project is not None:
            scopes.append((project, self.project_domains(project)))
        for where, domains in scopes:
            for domain in domains:
                if where is None and not self.rules_path(domain, LEARNED_KIND).exists():
                    continue
                active = active_count(self.learned_rules(domain, where))
                if active > MAX_ACTIVE_RULES_PER_DOMAIN:
                    out.append((domain, where, active))
        return out

    # ── proposals ──

    def proposal_path(self, proposal_id: str) -> Path:
        """`proposals/<id>.json`, after `proposal_id` is checked to be an id."""
        return self._proposal_path(proposal_id)

    def _proposal_path(self, proposal_id: str) -> Path:
        if not isinstance(proposal_id, str) or not _PROPOSAL_ID_RE.fullmatch(proposal_id):
            raise InvalidInput(
                f"invalid proposal id {proposal_id!r}: an id is letters, digits, '.', '_' and '-', "
                "starting with a letter or digit"
            )
        return self._root / PROPOSALS_DIR / f"{proposal_id}.json"

    def write_proposal(self, p: Proposal) -> None:
        """Write or rewrite one proposal, atomically: a listing never reads
        a half-written file from a running pass. Resolving a proposal
        rewrites the same file."""
        path = self._proposal_path(p.id)
        validate_domain(p.domain)
        _files.ensure_private_dir(path.parent, root=self._root)
        _files.refuse_links(self._root, path)
        _files.write_atomic(path, msgspec.json.format(_ENCODER.encode(p), indent=2) + b"\n")

    def proposals(self) -> list[Proposal]:
        """Every readable proposal, oldest first (ids sort by creation time).
        An unreadable file is skipped with a warning; temp files are never
        read."""
        directory = self._root / PROPOSALS_DIR
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out: list[Proposal] = []
        decoder = _decoder(Proposal)
        for entry in entries:
            if not entry.name.endswith(".json") or entry.name.startswith("."):
                continue
            try:
                found = decoder.decode(Path(entry.path).read_bytes())
            except (OSError, msgspec.DecodeError) as e:
                log.warning("skipping unreadable proposal %s: %s", entry.path, e)
                continue
            if not _PROPOSAL_ID_RE.fullmatch(found.id):
                # Its id names its file when it is resolved: one that is not
                # an id (`../x`) could never be, so it is not offered.
                log.warning("skipping proposal %s: its id %r is not an id", entry.path, found.id)
                continue
            out.append(found)
        out.sort(key=lambda p: p.id)
        return out

    def proposal(self, id_or_prefix: str) -> Proposal:
        """One proposal by exact id, else by unique prefix.

        An exact id always wins, even when it is also a prefix of another
        id. No match is `NotFound`; several are `Ambiguous`, listing them —
        a guess would accept the wrong rule change.
        """
        if not id_or_prefix:
            raise NotFound("no proposal id given")
        from mecha.core.identity import by_id_or_prefix

        matches = by_id_or_prefix(self.proposals(), id_or_prefix, lambda p: p.id)
        if not matches:
            raise NotFound(f"no proposal matching `{id_or_prefix}`")
        if len(matches) > 1:
            ids = [p.id for p in matches]
            raise Ambiguous(f"`{id_or_prefix}` matches {len(ids)} proposals: {', '.join(ids)}", ids)
        return matches[0]

    # ── runs and the validation ledger ──

    def append_run(self, run: LeapRun) -> None:
        self._append_records(RUNS_FILE, [run])

    def runs(self) -> list[LeapRun]:
        return self._read_jsonl(RUNS_FILE, _decoder(LeapRun), "run record")

    def append_validation(self, rec: ValidationRecord) -> None:
        validate_domain(rec.domain)
        self._append_records(VALIDATIONS_FILE, [rec])

    def validations(self) -> list[ValidationRecord]:
        return self._read_jsonl(VALIDATIONS_FILE, _decoder(ValidationRecord), "validation record")

    # ── sessions imported from other agents ──

    def append_imports(self, records: Iterable[Any]) -> None:
        """Record what an import queued. Caller holds the lock."""
        self._append_records(IMPORTED_FILE, records)

    def imports(self) -> list[Any]:
        """Every import record, oldest first (see `importing.ImportRecord`)."""
        from mecha.core.agents.importing import ImportRecord

        return self._read_jsonl(IMPORTED_FILE, _decoder(ImportRecord), "import record")


class ReflectionsById:
    """A store's reflections by id, read again only when the file changed.

    A hover names the lessons a rule was learned from, and an editor asks
    for a hover at every pause of the cursor: reading and decoding the
    whole reflections file each time would cost more than everything else
    a hover does. The file only ever changes by a write that moves its
    inode, mtime or size (an append, or a rename into place), so those,
    with the store's root, key the copy kept here."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._by_id: dict[str, Reflexion] = {}

    def of(self, store: LearningStore | None) -> dict[str, Reflexion]:
        """The reflections of `store` by id; empty when there is no store or
        no reflections file yet."""
        if store is None:
            return {}
        try:
            key = (store.root, *_stat_key((store.root / REFLECTIONS_FILE).stat()))
        except FileNotFoundError:
            return {}
        if key != self._key:
            self._by_id = {r.id: r for r in store.reflexions()}
            self._key = key
        return self._by_id
