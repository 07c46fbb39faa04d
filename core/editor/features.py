"""Everything an editor shows about one rules document, decided here and pure.

The editor endpoint (`mecha-sidecar lsp`) publishes diagnostics, hovers, code
lenses and code actions on `rules/<domain>.{user,learned}.toml`. Every one of
those is a decision about the domain — is this rule over the cap, does it
restate the person's own rule, what did the ledger pin on it, which fix does
a finding call for, is a proposal waiting — so the decisions live here, in
`core`, and the server only converts positions and wraps results in LSP
types. Nothing here imports pygls or lsprotocol. A finding's `data` carries
what its fix needs (the round trip ruff-lsp makes), so the code actions for a
diagnostic are decided from the diagnostic alone.

Positions are 0-based lines and 0-based *character* columns (Python `str`
indices). Lines are separated by `"\\n"`; a `"\\r"` before it is not part of
the line. That is LSP's own view of any file TOML accepts (TOML allows LF and
CRLF only); the server converts columns to UTF-16 at the edge.

`tomllib` keeps no positions once a document has parsed, so a light line
scanner (`rule_spans`) finds where each `[[rules]]` table, key and value sits.
It knows just enough TOML to not be fooled: basic, literal and multi-line
strings (a `key =` inside a `\"\"\"` text is text, not a key), arrays that span
lines, inline tables, comments, and dotted or quoted keys. It is tolerant: on
a line it cannot read it skips to the next, so a half-typed buffer still has
spans to hover over. What a span *decodes to* always comes from `tomllib` and
`msgspec`, the parser and converter a run uses (`parse_rules_file`), never
from the scanner — the scanner only says where.

A table owns its header, its keys and every line up to its last key's value
(the closing line of a multi-line string included). Comment lines directly
above a header, with no blank line between, belong to that table: a comment
sits above the rule it is about. So trailing comments of one table belong to
the next, never to the one above them — the same assumption the store's
writer makes when it moves comments with their tables.

Diagnostics sit where a person would fix them: a problem with one key on that
key (`invalid-value`, `unknown-key`, an empty `text`, `retired-enabled`), a
problem with the rule as a whole on the rule's table (header through last
key), a problem with the domain on line 0.
"""

from __future__ import annotations

import bisect
import enum
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from mecha.core.errors import InvalidDomain
from mecha.core.learning.proposals import is_pending, pending_for
from mecha.core.learning.reflection import Reflexion
from mecha.core.learning.rules import (
    MAX_ACTIVE_RULES_PER_DOMAIN,
    RULES_CHAR_BUDGET,
    Rule,
    RulesFile,
    active_count,
    domain_rules_section,
    routed_domains,
    validate_domain,
)
from mecha.core.learning.sources import describe_source, no_sources_note, sources_of
from mecha.core.store.layout import LEARNED_KIND, USER_KIND, rules_file_name, sibling_kind
from mecha.core.store.learning_store import (
    LearningStore,
    Proposal,
    parse_rules_file,
    rules_file_path,
)
from mecha.core.store.ledger import RuleTally, rule_tallies

# ─── Codes and severities (the contract in editors/README.md) ───────────────

ERROR = "error"
WARNING = "warning"
INFORMATION = "information"
HINT = "hint"

TOML_SYNTAX = "toml-syntax"
INVALID_VALUE = "invalid-value"
UNKNOWN_KEY = "unknown-key"
MISSING_TEXT = "missing-text"
DUPLICATE_RULE = "duplicate-rule"
RESTATES_USER_RULE = "restates-user-rule"
OVER_CAP = "over-cap"
OVER_CHAR_BUDGET = "over-char-budget"
RETIRED_ENABLED = "retired-enabled"
ATTRIBUTED_REGRESSIONS = "attributed-regressions"
UNROUTED_DOMAIN = "unrouted-domain"
PENDING_PROPOSAL = "pending-proposal"

#: Each code's severity, spelled once. The editors' README is the contract;
#: a finding takes its severity from here and nowhere else.
SEVERITIES: dict[str, str] = {
    TOML_SYNTAX: ERROR,
    INVALID_VALUE: ERROR,
    UNKNOWN_KEY: WARNING,
    MISSING_TEXT: ERROR,
    DUPLICATE_RULE: WARNING,
    RESTATES_USER_RULE: WARNING,
    OVER_CAP: WARNING,
    OVER_CHAR_BUDGET: WARNING,
    RETIRED_ENABLED: INFORMATION,
    ATTRIBUTED_REGRESSIONS: WARNING,
    UNROUTED_DOMAIN: WARNING,
    PENDING_PROPOSAL: INFORMATION,
}


class Act(enum.Enum):
    """What a lens or a code action asks the server to do when chosen.

    Core decides which intention fixes which finding; the command id an
    editor runs it by is wire, spelled in `mecha.protocol.commands` (which
    maps every member to one id), so no wire string lives here."""

    #: Lenses: show the rules block a run would get; list the proposals.
    SHOW_RULES_BLOCK = enum.auto()
    LIST_PROPOSALS = enum.auto()
    #: Code actions: review a pending proposal, or ask for a new one.
    ACCEPT_PROPOSAL = enum.auto()
    REJECT_PROPOSAL = enum.auto()
    SHOW_PROPOSAL_DIFF = enum.auto()
    PROPOSE_RETIREMENT = enum.auto()
    LEARN_NOW = enum.auto()


#: Code action kinds (LSP's spelling). A `quickfix` is what Ctrl+. and the
#: lightbulb list; a `source` action only the Source Action menu does.
QUICKFIX = "quickfix"
SOURCE = "source"

#: The keys a `[[rules]]` table may hold, with the type each must convert to —
#: read off `Rule` itself so a new field is known here the day it exists.
_RULE_FIELDS: dict[str, Any] = {f.encode_name: f.type for f in msgspec.structs.fields(Rule)}


# ─── Results ────────────────────────────────────────────────────────────────


class Range(msgspec.Struct, frozen=True):
    """A span of text: 0-based lines, 0-based character columns, end
    exclusive."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int


class Finding(msgspec.Struct):
    """One diagnostic, without LSP types. `data` carries what the code
    action needs: always `domain`; `rule_index` (and `rule_id` when the rule
    has one) when the finding is about a rule."""

    code: str
    severity: str
    message: str
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    data: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def range(self) -> Range:
        return Range(self.start_line, self.start_col, self.end_line, self.end_col)


class TextEdit(msgspec.Struct, frozen=True):
    """Replace `[start, end)` with `new_text` (an insertion when start ==
    end)."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int
    new_text: str


class RuleSpan(msgspec.Struct):
    """Where one `[[rules]]` table sits in a document, and what it decodes to.

    `start_line` is the first line of the comment block directly above the
    header (the header itself when there is none); `end_line` (inclusive) is
    the last line of the table's last value. `key_lines` gives the line of
    each key the table sets (a dotted `a.b = …` or a `[rules.a]` sub-table
    counts as `a`); `key_ranges` runs from a key to the end of its value,
    `value_ranges` covers just the value, quotes included (plain keys only).
    `rule` is the table decoded as a run decodes it, or `None` when it cannot
    be (a wrong-typed value, no `text`, a syntax error inside it).
    """

    index: int
    start_line: int
    end_line: int
    header_line: int
    key_lines: dict[str, int] = msgspec.field(default_factory=dict)
    key_ranges: dict[str, Range] = msgspec.field(default_factory=dict)
    value_ranges: dict[str, Range] = msgspec.field(default_factory=dict)
    rule: Rule | None = None

    @property
    def text_range(self) -> Range | None:
        """The `text` value's range, quotes included; several lines for a
        multi-line string."""
        return self.value_ranges.get("text")


class Lens(msgspec.Struct, frozen=True):
    """One code lens at the top of a rules file: its title and what
    clicking it does (`act`, with `arguments`)."""

    title: str
    act: Act
    arguments: list[Any] = msgspec.field(default_factory=list)


class PendingProposal(msgspec.Struct, frozen=True):
    """What the editor needs to know of one pending proposal for the
    document's domain: its id and how many active rules it takes the
    domain from and to (the accept action's title says so)."""

    id: str
    active_before: int
    active_after: int


class CodeAction(msgspec.Struct, frozen=True):
    """One code action, without LSP types: a title, a kind (`QUICKFIX` or
    `SOURCE`), and what choosing it does — `edits` on this document, an
    `act` with `arguments`, or both (edits first). `fixes` is the
    finding it resolves, when it resolves one: the editor lists the action
    under that diagnostic's lightbulb. `preferred` marks the fix a person
    most likely wants (VS Code's "auto fix" applies it)."""

    title: str
    kind: str
    edits: list[TextEdit] = msgspec.field(default_factory=list)
    act: Act | None = None
    arguments: list[Any] = msgspec.field(default_factory=list)
    fixes: Finding | None = None
    preferred: bool = False


# ─── Which files are rules documents ────────────────────────────────────────


def rules_document_of(path: Path, root: Path) -> tuple[str, str] | None:
    """`(domain, kind)` when `path` is a rules file of the store at `root`:
    directly under `<root>/rules/`, named `<domain>.user.toml` or
    `<domain>.learned.toml` with a valid domain. Anything else — a file in a
    sub-folder, `notes.toml`, `../x.user.toml` — is not a rules document and
    gets no diagnostics (and is never loaded by a run)."""
    path = Path(path)
    if not _same_dir(path.parent, LearningStore(root).rules_dir):
        return None
    for kind in (USER_KIND, LEARNED_KIND):
        suffix = f".{kind}.toml"
        if path.name.endswith(suffix):
            try:
                return validate_domain(path.name[: -len(suffix)]), kind
            except InvalidDomain:
                return None
    return None


def sibling_path(root: Path, domain: str, kind: str) -> Path:
    """The domain's other rules file: a document is checked against it
    (restating a person's rule, the shared budget), so an editor rechecks
    it when this one changes."""
    return rules_file_path(Path(root), domain, sibling_kind(kind))


def sibling_rules(root: Path, domain: str, kind: str, open_text: Callable[[Path], str | None]) -> list[Rule]:
    """The rules of the document's sibling (`sibling_path`), as the person
    sees them: the editor's open buffer when there is one (`open_text`
    gives its text, or `None` when the file is not open), else the file
    on disk, else none.

    A sibling that does not parse counts as no rules: its breakage is that
    file's own `toml-syntax` diagnostic, and guessing at its rules here would
    put a second, misplaced complaint on this one."""
    path = sibling_path(root, domain, kind)
    try:
        text = open_text(path)
        if text is not None:
            return parse_rules_file(text, path.name)
        if path.exists():
            return parse_rules_file(path.read_bytes(), path.name)
    except Exception:  # unreadable, not TOML, not rules, nested past the parser's depth: no rules
        return []
    return []


def _same_dir(a: Path, b: Path) -> bool:
    if Path(os.path.abspath(a)) == Path(os.path.abspath(b)):
        return True
    try:  # an editor may hand over the resolved path of a symlinked store
        return a.resolve() == b.resolve()
    except OSError:
        return False


# ─── Text plumbing ──────────────────────────────────────────────────────────


def document_lines(text: str) -> list[str]:
    """The document's lines as LSP sees them and every position here counts
    them: split on `\\n`, a trailing `\\r` dropped. Not `str.splitlines`,
    which also breaks at characters a TOML string may hold (U+2028, form
    feed) and drops the empty line after a final newline."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def apply_edit(text: str, edit: TextEdit) -> str:
    """`text` with `edit` applied."""
    starts = _line_starts(text)
    start = starts[edit.start_line] + edit.start_col
    end = starts[edit.end_line] + edit.end_col
    return text[:start] + edit.new_text + text[end:]


#: Sentence punctuation a rule may end with or not. Only these: a trailing
#: `/`, `%` or `)` is part of what the rule says.
_TRAILING_PUNCTUATION = ".,;:!?\u2026\u3002\uff01\uff1f"


def normalize_rule_text(text: str) -> str:
    """What makes two rules the same rule: casefolded, whitespace collapsed,
    trailing sentence punctuation stripped. "Never edit reports/." and
    "never edit  reports/" say one thing and cost the budget twice."""
    return " ".join(text.casefold().split()).rstrip(_TRAILING_PUNCTUATION + " ")


# ─── The scanner ────────────────────────────────────────────────────────────

_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")
#: A date-time written with a space for `T` (TOML allows it): one value.
_DATE_SPACE_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2} (?=\d{2}:)")
_SCALAR_RE = re.compile(r"""[^\s,\]\}\[\{#"']+""")

_BLANK, _COMMENT, _CONTENT = 0, 1, 2


class _Layout(msgspec.Struct):
    spans: list[RuleSpan]
    #: Top-level keys (and `[table]` headers other than `[[rules]]`): the
    #: statement's range, first occurrence.
    top_keys: dict[str, Range]


class _Scanner:
    """Walks TOML statements, recording where things are. Never raises on
    bad input: an unreadable line is skipped."""

    def __init__(self, text: str):
        self.s = text
        self.n = len(text)
        self.starts = _line_starts(text)
        self.kinds = [_BLANK] * len(self.starts)

    # positions

    def at(self, offset: int) -> tuple[int, int]:
        """(line, column) of an offset; a column never lands inside the
        line break (a `\\r` before `\\n` is not part of the line)."""
        line = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[line]
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else self.n
        if end > start and self.s[end - 1] == "\r" and line + 1 < len(self.starts):
            end -= 1
        return line, min(offset, end) - start

    def range(self, start: int, end: int) -> Range:
        return Range(*self.at(start), *self.at(end))

    # lexing

    def skip_ws(self, i: int) -> int:
        while i < self.n and self.s[i] in " \t":
            i += 1
        return i

    def eol(self, i: int) -> int:
        j = self.s.find("\n", i)
        return self.n if j == -1 else j

    def skip_blank_and_comments(self, i: int) -> int:
        while i < self.n:
            c = self.s[i]
            if c in " \t\r\n":
                i += 1
            elif c == "#":
                i = self.eol(i)
            else:
                break
        return i

    def basic_string(self, i: int) -> int:
        j = i + 1
        while j < self.n:
            c = self.s[j]
            if c == "\\":
                j += 2
                continue
            if c == '"':
                return j + 1
            if c == "\n":
                return j  # unterminated: the line ends it
            j += 1
        return self.n

    def literal_string(self, i: int) -> int:
        j = self.s.find("'", i + 1)
        nl = self.eol(i + 1)
        return nl if j == -1 or j > nl else j + 1

    def multiline_string(self, i: int, quotes: str) -> int:
        j = i + 3
        while j < self.n:
            if quotes[0] == '"' and self.s[j] == "\\":
                j += 2
                continue
            if self.s.startswith(quotes, j):
                k = j + 3
                # up to two more quote characters are content before the close
                while k < self.n and k - j < 5 and self.s[k] == quotes[0]:
                    k += 1
                return k
            j += 1
        return self.n

    def key(self, i: int) -> tuple[list[str], int] | None:
        """A dotted key's parts and the offset after it (and after trailing
        blanks), or `None` when there is no key at `i`."""
        parts: list[str] = []
        while True:
            i = self.skip_ws(i)
            if i >= self.n:
                return None
            c = self.s[i]
            if c == '"':
                end = self.basic_string(i)
                raw = self.s[i:end]
                try:
                    part = tomllib.loads(f"k = {raw}")["k"]
                except tomllib.TOMLDecodeError:
                    part = raw.strip('"')
            elif c == "'":
                end = self.literal_string(i)
                part = self.s[i + 1 : end - 1] if self.s[end - 1 : end] == "'" else self.s[i + 1 : end]
            else:
                m = _BARE_KEY_RE.match(self.s, i)
                if m is None:
                    return None
                part, end = m.group(), m.end()
            parts.append(part)
            i = self.skip_ws(end)
            if i < self.n and self.s[i] == ".":
                i += 1
                continue
            return parts, i

    def value(self, i: int) -> int:
        """The offset just past the value starting at `i` (`i` itself when
        there is none)."""
        s = self.s
        if i >= self.n:
            return i
        if s.startswith('"""', i):
            return self.multiline_string(i, '"""')
        if s.startswith("'''", i):
            return self.multiline_string(i, "'''")
        c = s[i]
        if c == '"':
            return self.basic_string(i)
        if c == "'":
            return self.literal_string(i)
        if c == "[":
            j = i + 1
            while True:
                j = self.skip_blank_and_comments(j)
                if j >= self.n:
                    return self.n
                if s[j] == "]":
                    return j + 1
                if s[j] == ",":
                    j += 1
                    continue
                k = self.value(j)
                if k == j:
                    return j
                j = k
        if c == "{":
            j = i + 1
            while True:
                j = self.skip_ws(j)
                if j >= self.n or s[j] in "\r\n":
                    return j
                if s[j] == "}":
                    return j + 1
                if s[j] == ",":
                    j += 1
                    continue
                found = self.key(j)
                if found is None or found[1] >= self.n or s[found[1]] != "=":
                    return j
                j = self.skip_ws(found[1] + 1)
                k = self.value(j)
                if k == j:
                    return j
                j = k
        m = _DATE_SPACE_TIME_RE.match(s, i)
        if m is not None:
            i = m.end()
        m = _SCALAR_RE.match(s, i)
        return m.end() if m is not None else i

    def mark(self, start: int, end: int, kind: int) -> None:
        first, _ = self.at(start)
        last, _ = self.at(max(start, end - 1)) if end > start else (first, 0)
        for line in range(first, last + 1):
            self.kinds[line] = max(self.kinds[line], kind)

    def rest_of_line(self, i: int) -> int:
        """Past blanks and a trailing comment; to the end of the line when
        anything else follows (not ours to judge: tomllib will)."""
        i = self.skip_ws(i)
        if i < self.n and self.s[i] == "#":
            return self.eol(i)
        if i < self.n and self.s[i] not in "\r\n":
            end = self.eol(i)
            self.mark(i, end, _CONTENT)
            return end
        return i


def _scan(text: str) -> _Layout:
    sc = _Scanner(text)
    s, n = sc.s, sc.n
    spans: list[RuleSpan] = []
    top_keys: dict[str, Range] = {}
    #: "top" before any header, "rule" in a [[rules]] table, "sub" in a
    #: [rules.x] sub-table of the current rule, "other" in any other table.
    context = "top"
    current: RuleSpan | None = None

    def extend(line: int) -> None:
        if current is not None and context in ("rule", "sub"):
            current.end_line = max(current.end_line, line)

    i = 0
    while i < n:
        i = sc.skip_ws(i)
        if i >= n:
            break
        c = s[i]
        if c in "\r\n":
            i += 1
            continue
        line = sc.at(i)[0]
        if c == "#":
            end = sc.eol(i)
            sc.mark(i, end, _COMMENT)
            i = end
            continue
        if c == "[":
            aot = s.startswith("[[", i)
            found = sc.key(i + (2 if aot else 1))
            if found is None:
                end = sc.eol(i)
                sc.mark(i, end, _CONTENT)
                extend(line)
                i = end
                continue
            parts, j = found
            close = "]]" if aot else "]"
            if s.startswith(close, j):
                j += len(close)
            header = sc.range(i, j)
            sc.mark(i, j, _CONTENT)
            if parts == ["rules"] and aot:
                current = RuleSpan(index=len(spans), start_line=line, end_line=line, header_line=line)
                spans.append(current)
                context = "rule"
            elif parts[0] == "rules" and len(parts) > 1 and current is not None and context in ("rule", "sub"):
                current.key_lines.setdefault(parts[1], line)
                current.key_ranges.setdefault(parts[1], header)
                context = "sub"
                extend(line)
            else:
                top_keys.setdefault(parts[0], header)
                context = "other"
            i = sc.rest_of_line(j)
            continue
        found = sc.key(i)
        if found is None or found[1] >= n or s[found[1]] != "=":
            end = sc.eol(i)
            sc.mark(i, end, _CONTENT)
            extend(line)
            i = end
            continue
        parts, j = found
        vstart = sc.skip_ws(j + 1)
        vend = sc.value(vstart)
        statement = sc.range(i, vend)
        sc.mark(i, max(vend, i + 1), _CONTENT)
        if context == "rule" and current is not None:
            current.key_lines.setdefault(parts[0], line)
            current.key_ranges.setdefault(parts[0], statement)
            if len(parts) == 1:
                current.value_ranges.setdefault(parts[0], sc.range(vstart, vend))
        elif context == "top":
            top_keys.setdefault(parts[0], statement)
        extend(statement.end_line)
        i = sc.rest_of_line(vend)

    # Comment lines directly above a header travel with it.
    for span in spans:
        start = span.header_line
        while start > 0 and sc.kinds[start - 1] == _COMMENT:
            start -= 1
        span.start_line = start
    _decode_spans(text, spans)
    return _Layout(spans=spans, top_keys=top_keys)


def _decode_spans(text: str, spans: list[RuleSpan]) -> None:
    """Fill each span's `rule` from tomllib: from the whole document when it
    parses and its tables line up with the spans, else from each table's own
    lines (so one broken table leaves the others readable)."""
    try:
        raw = tomllib.loads(text).get("rules")
    except tomllib.TOMLDecodeError:
        raw = None
    if isinstance(raw, list) and len(raw) == len(spans):
        for span, item in zip(spans, raw):
            span.rule = _decode_rule(item)
        return
    lines = text.split("\n")
    for span in spans:
        chunk = "\n".join(lines[span.header_line : span.end_line + 1])
        try:
            tables = tomllib.loads(chunk).get("rules")
        except tomllib.TOMLDecodeError:
            continue
        if isinstance(tables, list) and len(tables) == 1:
            span.rule = _decode_rule(tables[0])


def _decode_rule(item: object) -> Rule | None:
    try:
        return msgspec.convert(item, Rule)
    except msgspec.ValidationError:
        return None


def rule_spans(text: str) -> list[RuleSpan]:
    """Every `[[rules]]` table in `text`, in order, with where its parts sit
    and what it decodes to."""
    return _scan(text).spans


def span_at(spans: Sequence[RuleSpan], line: int) -> RuleSpan | None:
    """The span whose lines (leading comments included) hold `line`."""
    for span in spans:
        if span.start_line <= line <= span.end_line:
            return span
    return None


# ─── Diagnostics ────────────────────────────────────────────────────────────

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

    A document that does not parse gets only `toml-syntax` (and
    `unrouted-domain` and `pending-proposal`): every other check needs the
    rules, and guessing at them would flicker as a person types.
    """
    domain = validate_domain(domain)
    if kind not in (USER_KIND, LEARNED_KIND):
        raise ValueError(f"unknown rules kind {kind!r}")
    lines = document_lines(text)
    out: list[Finding] = []
    top = {"domain": domain}
    if domain not in routed_domains():
        out.append(
            _finding(
                UNROUTED_DOMAIN,
                f"no run or pass loads the `{domain}` domain (routed: {', '.join(routed_domains())}); "
                "these rules reach a run only if it names this domain",
                _line_range(lines, 0),
                dict(top),
            )
        )
    if kind == LEARNED_KIND:
        out.extend(pending_findings(domain, pending, _line_range(lines, 0)))
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        message = _TOML_AT_END_RE.sub("", _TOML_AT_RE.sub("", str(e))).strip()
        out.append(
            _finding(TOML_SYNTAX, f"not valid TOML: {message}", _syntax_range(str(e), lines), dict(top))
        )
        return _sorted(out)

    layout = _scan(text)
    line0 = _line_range(lines, 0)
    for key in raw:
        if key == "rules":
            continue
        out.append(
            _finding(
                UNKNOWN_KEY,
                f"unknown top-level key `{key}`: a rules file holds only `[[rules]]` tables",
                layout.top_keys.get(key, line0),
                {**top, "key": key},
            )
        )

    rules_at = layout.top_keys.get("rules")
    if rules_at is None and layout.spans:
        first = layout.spans[0]
        rules_at = Range(first.header_line, 0, first.header_line, len(lines[first.header_line]))
    rules_at = rules_at or line0
    items = raw.get("rules", [])
    if not isinstance(items, list):
        out.append(
            _finding(
                INVALID_VALUE,
                f"`rules` must be an array of `[[rules]]` tables, not {_toml_type(items)}",
                rules_at,
                dict(top),
            )
        )
        items = []
    spans: list[RuleSpan | None] = list(layout.spans) if len(layout.spans) == len(items) else [None] * len(items)

    decoded: list[Rule | None] = []
    for index, item in enumerate(items):
        span = spans[index]
        whole = _rule_range(span, lines) if span is not None else rules_at
        data: dict[str, Any] = {**top, "rule_index": index}
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            data["rule_id"] = item["id"]
        if not isinstance(item, dict):
            out.append(
                _finding(
                    INVALID_VALUE,
                    f"{_describe(index, span)} must be a table, not {_toml_type(item)}",
                    whole,
                    data,
                )
            )
            decoded.append(None)
            continue
        bad = False
        for key, value in item.items():
            key_at = span.key_ranges.get(key, whole) if span is not None else whole
            expected = _RULE_FIELDS.get(key)
            if expected is None:
                out.append(
                    _finding(
                        UNKNOWN_KEY,
                        f"unknown key `{key}` in {_describe(index, span)}: runs ignore it",
                        key_at,
                        {**data, "key": key},
                    )
                )
                continue
            try:
                msgspec.convert(value, expected)
            except msgspec.ValidationError as e:
                bad = True
                value_at = span.value_ranges.get(key, key_at) if span is not None else whole
                reason = _MSGSPEC_AT_RE.sub("", str(e))
                out.append(
                    _finding(
                        INVALID_VALUE,
                        f"`{key}` has the wrong type: {reason}",
                        value_at,
                        {**data, "key": key},
                    )
                )
        if "text" not in item:
            bad = True
            out.append(
                _finding(MISSING_TEXT, f"{_describe(index, span)} has no `text`", whole, data)
            )
        rule = None if bad else _decode_rule(item)
        if rule is not None and not rule.text.strip():
            text_at = span.value_ranges.get("text", whole) if span is not None else whole
            out.append(_finding(MISSING_TEXT, f"{_describe(index, span)} has an empty `text`", text_at, data))
        decoded.append(rule)

    if not any(f.severity == ERROR for f in out):
        # The per-key checks above should have caught whatever the run's own
        # conversion refuses; if not, say what it says rather than nothing.
        try:
            msgspec.convert(raw, RulesFile)
        except msgspec.ValidationError as e:
            out.append(_finding(INVALID_VALUE, str(e), _path_range(str(e), spans, lines, rules_at), dict(top)))

    out.extend(_rule_findings(domain, kind, decoded, spans, lines, rules_at, other_rules, tallies))

    present = [r for r in decoded if r is not None]
    user, learned = (present, list(other_rules)) if kind == USER_KIND else (list(other_rules), present)
    chars = _section_chars(domain, user, learned)
    if chars > RULES_CHAR_BUDGET:
        out.append(
            _finding(
                OVER_CHAR_BUDGET,
                f"the `{domain}` section renders to {chars} characters, over the budget of "
                f"{RULES_CHAR_BUDGET}: every run carries it in its prompt",
                line0,
                {**top, "chars": chars, "budget": RULES_CHAR_BUDGET},
            )
        )
    return _sorted(out)


def _rule_findings(
    domain: str,
    kind: str,
    decoded: Sequence[Rule | None],
    spans: Sequence[RuleSpan | None],
    lines: Sequence[str],
    fallback: Range,
    other_rules: Sequence[Rule],
    tallies: Mapping[str, RuleTally],
) -> list[Finding]:
    """The checks on decoded rules: duplicates, restating, the cap,
    retirement, the ledger."""
    out: list[Finding] = []
    user_texts = {normalize_rule_text(r.text) for r in other_rules if r.text.strip()}
    first_of: dict[str, int] = {}
    active_seen = 0
    for index, rule in enumerate(decoded):
        if rule is None:
            continue
        span = spans[index]
        whole = _rule_range(span, lines) if span is not None else fallback
        data: dict[str, Any] = {"domain": domain, "rule_index": index}
        if rule.id is not None:
            data["rule_id"] = rule.id
        norm = normalize_rule_text(rule.text)
        if norm:
            if norm in first_of:
                other = first_of[norm]
                out.append(
                    _finding(
                        DUPLICATE_RULE,
                        f"the same rule as {_describe(other, spans[other])}",
                        whole,
                        {**data, "duplicate_of": other},
                    )
                )
            else:
                first_of[norm] = index
        if rule.retired_at is not None and rule.enabled:
            where = (
                span.key_ranges.get("enabled") or span.key_ranges.get("retired_at") or whole
                if span is not None
                else whole
            )
            out.append(
                _finding(
                    RETIRED_ENABLED,
                    f"retired {rule.retired_at}, so this rule rides in no prompt whatever `enabled` says",
                    where,
                    data,
                )
            )
        if kind != LEARNED_KIND:
            continue
        if rule.active():
            active_seen += 1
            if norm and norm in user_texts:
                out.append(
                    _finding(
                        RESTATES_USER_RULE,
                        "restates one of your own rules: the prompt carries it twice",
                        whole,
                        data,
                    )
                )
            if active_seen > MAX_ACTIVE_RULES_PER_DOMAIN:
                out.append(
                    _finding(
                        OVER_CAP,
                        f"active learned rule {active_seen} of a cap of {MAX_ACTIVE_RULES_PER_DOMAIN} "
                        f"in `{domain}`: disable or retire rules to get under it",
                        whole,
                        {**data, "active": active_seen, "cap": MAX_ACTIVE_RULES_PER_DOMAIN},
                    )
                )
        tally = tallies.get(rule.id) if rule.id is not None else None
        if tally is not None and tally.attributed_regressions > 0 and rule.retired_at is None:
            count = tally.attributed_regressions
            out.append(
                _finding(
                    ATTRIBUTED_REGRESSIONS,
                    f"the validation ledger pins {count} regression{'s' if count != 1 else ''} on this rule "
                    f"({tally.observations} observation{'s' if tally.observations != 1 else ''})",
                    whole,
                    {"domain": domain, "rule_id": rule.id, "rule_index": index, "count": count},
                )
            )
    return out


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


def _section_chars(domain: str, user: Sequence[Rule], learned: Sequence[Rule]) -> int:
    section = domain_rules_section(domain, user, learned)
    return 0 if section is None else len(section)


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.start_line, f.start_col, f.end_line, f.end_col, f.code))


def pending_of(domain: str, proposals: Sequence[Proposal]) -> list[PendingProposal]:
    """The pending proposals for `domain` among `proposals`, as the editor
    needs them: the ones a person still has to decide on, with the active
    rule counts before and after."""
    return [
        PendingProposal(p.id, active_count(p.rules_before), active_count(p.rules))
        for p in proposals
        if p.domain == domain and is_pending(p)
    ]


def pending_in(store: LearningStore | None, domain: str) -> list[PendingProposal]:
    """`domain`'s pending proposals in `store` (`pending_for`), as the editor
    needs them; none in a store that does not exist yet."""
    return pending_of(domain, pending_for(store, domain)) if store is not None else []


def tallies_in(store: LearningStore | None) -> dict[str, RuleTally]:
    """What the validation ledger of `store` measured of each rule, by id;
    nothing in a store that does not exist yet."""
    return rule_tallies(store.validations()) if store is not None else {}


def pending_findings(domain: str, pending: Sequence[PendingProposal], where: Range) -> list[Finding]:
    """One `pending-proposal` finding per pending proposal, at `where`
    (line 0 of the learned file). Its `data` is the round trip its actions
    need — the proposal's id and its before/after counts — so choosing an
    action never has to look the proposal up again."""
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
            },
        )
        for p in pending
    ]


# ─── The disable/enable edit ───────────────────────────────────────────


def _checked_rule(text: str, rule_index: int) -> tuple[RuleSpan, dict[str, Any], list[Any]] | None:
    """What an edit of rule `rule_index` is checked against: its span, the
    document as parsed, and its rules table — or `None` when the document
    does not parse or its tables do not line up with the spans found in the
    text, and then no edit is offered. Shared by every quick-fix edit."""
    spans = rule_spans(text)
    if not 0 <= rule_index < len(spans):
        return None
    try:
        before = tomllib.loads(text)
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
    import tomlkit  # only this quick fix pays for it

    checked = _checked_rule(text, rule_index)
    if checked is None:
        return None
    span, before, rules_before = checked
    literal = "true" if enabled else "false"
    lines = text.split("\n")
    if "enabled" in span.value_ranges:
        r = span.value_ranges["enabled"]
        edit = TextEdit(r.start_line, r.start_col, r.end_line, r.end_col, literal)
    elif "enabled" in span.key_lines:
        return None  # a dotted or sub-table `enabled`: not ours to rewrite
    else:
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
        edit = TextEdit(anchor, end, anchor, end, f"{newline}{indent}enabled = {literal}")
    after_text = apply_edit(text, edit)
    try:
        after = tomllib.loads(after_text)
        kit = tomlkit.parse(after_text).unwrap()
    except Exception:  # tomllib or any tomlkit complaint: not safe
        return None
    rules_after = after.get("rules")
    if not isinstance(rules_after, list) or len(rules_after) != len(rules_before):
        return None
    target = rules_after[rule_index]
    if not isinstance(target, dict) or target.get("enabled") is not enabled:
        return None
    try:
        if kit["rules"][rule_index]["enabled"] is not enabled:
            return None
    except (KeyError, IndexError, TypeError):
        return None
    for index, (old, new) in enumerate(zip(rules_before, rules_after)):
        if index == rule_index:
            old = {k: v for k, v in old.items() if k != "enabled"}
            new = {k: v for k, v in new.items() if k != "enabled"}
        if not _same(old, new):
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


# ─── Code actions ───────────────────────────────────────────────────────────


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

    - `pending-proposal`: accept, reject, show the diff;
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
    domain = data.get("domain")
    index = data.get("rule_index")
    rule_id = data.get("rule_id")
    named = f" {rule_id}" if rule_id else ""
    code = finding.code
    if code == PENDING_PROPOSAL:
        return _review(finding, QUICKFIX)
    if code in (DUPLICATE_RULE, RESTATES_USER_RULE) and isinstance(index, int):
        edit = remove_rule_edit(text, index)
        if edit is None:
            return []
        title = (
            f"Remove duplicate rule{named}" if code == DUPLICATE_RULE else f"Remove learned copy{named} of your rule"
        )
        return [CodeAction(title, QUICKFIX, edits=[edit], fixes=finding, preferred=True)]
    if code == RETIRED_ENABLED and isinstance(index, int):
        edit = toggle_edit(text, index, False)
        if edit is None:
            return []
        return [CodeAction(f"Set enabled = false on retired rule{named}", QUICKFIX, edits=[edit], fixes=finding, preferred=True)]
    if code in (OVER_CAP, OVER_CHAR_BUDGET) and isinstance(domain, str):
        return [
            CodeAction(
                f"Learn now for {domain} (propose a consolidation)",
                QUICKFIX,
                act=Act.LEARN_NOW,
                arguments=[domain],
                fixes=finding,
            )
        ]
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
    ]


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
        after = tomllib.loads(after_text)
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


# ─── Hover ──────────────────────────────────────────────────────────────────


def hover_for(
    text: str,
    line: int,
    col: int,
    *,
    domain: str,
    kind: str,
    reflections_by_id: Mapping[str, Reflexion],
    tallies: Mapping[str, RuleTally],
) -> str | None:
    """Markdown for the rule under the cursor: its identity, lineage (the
    lessons it was learned from, not bare ids), what the ledger measured,
    and its retirement. `None` outside any rule, or on a table that does not
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
    out = [f"**{who} {name}** · `{domain}` · {state}", ""]

    facts: list[str] = []
    if rule.created_at:
        facts.append(f"created {rule.created_at}")
    if rule.confidence is not None:
        facts.append(f"confidence {rule.confidence:.2f}")
    if rule.based_on_count is not None:
        facts.append(f"based on {rule.based_on_count} reflection{'s' if rule.based_on_count != 1 else ''}")
    if facts:
        out += [" · ".join(facts), ""]

    if rule.sources:
        out.append("**Learned from**")
        for source in sources_of(rule, reflections_by_id):
            lesson = f" — lesson: {_one_line(source.lesson)}" if source.lesson else ""
            out.append(f"- {describe_source(source)}{lesson}")
        out.append("")
    else:
        out += [f"*{no_sources_note(rule, kind)}*", ""]

    if rule.id is not None:
        tally = tallies.get(rule.id)
        if tally is None:
            out += ["**Ledger**: no validation recorded yet", ""]
        else:
            last = tally.last_validated or "never"
            out += [
                f"**Ledger**: {tally.observations} observations · {tally.improved} improved · "
                f"{tally.regressed} regressed · {tally.attributed_regressions} attributed · "
                f"last validated {last}",
                "",
            ]

    if rule.retired_at is not None:
        reason = f": {_one_line(rule.retired_reason)}" if rule.retired_reason else ""
        out += [f"**Retired** {rule.retired_at}{reason}", ""]
    return "\n".join(out).rstrip() + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ─── Code lens ──────────────────────────────────────────────────────────────


def lens_for(domain: str, user_rules: Sequence[Rule], learned_rules: Sequence[Rule], pending: int) -> list[Lens]:
    """The lenses at the top of a rules file: active learned rules against
    the cap, the domain's rendered section against the character budget,
    and pending proposals when there are any."""
    active = active_count(learned_rules)
    chars = _section_chars(domain, user_rules, learned_rules)
    show = [domain]
    out = [
        Lens(f"{active}/{MAX_ACTIVE_RULES_PER_DOMAIN} active rules", Act.SHOW_RULES_BLOCK, show),
        Lens(f"{chars}/{RULES_CHAR_BUDGET} chars", Act.SHOW_RULES_BLOCK, list(show)),
    ]
    if pending > 0:
        out.append(
            Lens(
                f"{pending} pending proposal{'s' if pending != 1 else ''}",
                Act.LIST_PROPOSALS,
                [{"status": "pending", "domain": domain}],
            )
        )
    return out


def document_lenses(domain: str, kind: str, text: str, sibling: Sequence[Rule], pending: int) -> list[Lens]:
    """The lenses of one rules document as typed (`lens_for`): its rules
    on its own side of the pair, the sibling's (`sibling_rules`) on the
    other, and the domain's `pending` proposal count.

    A document that does not parse gets no lenses at all: counts over
    rules that cannot be read would be guesses that flicker as a person
    types, and its `toml-syntax` diagnostic already says what is wrong."""
    try:
        mine = parse_rules_file(text, rules_file_name(domain, kind))
    except Exception:  # not TOML, not rules, nested past the parser's depth
        return []
    user, learned = (mine, sibling) if kind == USER_KIND else (sibling, mine)
    return lens_for(domain, user, learned, pending)
