"""One rules document as text: its lines, where each `[[rules]]` table sits,
and what each decodes to — the parsed document every feature reads.

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
"""

from __future__ import annotations

import bisect
import re
import tomllib
from collections.abc import Sequence

import msgspec

from mecha.core.domain.rules import Rule, domain_rules_section
from mecha.core.editor.results import Range, RuleSpan, TextEdit
from mecha.core.nesting import toml_loads

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


def section_chars(domain: str, user: Sequence[Rule], learned: Sequence[Rule], *, project: bool = False) -> int:
    """How many characters the domain's section of the rules block renders
    to from these rules (0 when it renders to nothing), in a project's
    block when `project`: what the character budget is measured on, per
    scope."""
    section = domain_rules_section(domain, user, learned, project=project)
    return 0 if section is None else len(section)


# ─── The scanner ────────────────────────────────────────────────────────────

_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")
#: A date-time written with a space for `T` (TOML allows it): one value.
_DATE_SPACE_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2} (?=\d{2}:)")
_SCALAR_RE = re.compile(r"""[^\s,\]\}\[\{#"']+""")

_BLANK, _COMMENT, _CONTENT = 0, 1, 2


class Layout(msgspec.Struct):
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
                    part = toml_loads(f"k = {raw}")["k"]
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


class _Walk:
    """One pass over a document's statements with a `_Scanner`, collecting
    the rule spans and the top-level keys."""

    def __init__(self, text: str):
        self.sc = _Scanner(text)
        self.spans: list[RuleSpan] = []
        self.top_keys: dict[str, Range] = {}
        #: "top" before any header, "rule" in a [[rules]] table, "sub" in a
        #: [rules.x] sub-table of the current rule, "other" in any other table.
        self.context = "top"
        self.current: RuleSpan | None = None

    def extend(self, line: int) -> None:
        if self.current is not None and self.context in ("rule", "sub"):
            self.current.end_line = max(self.current.end_line, line)

    def run(self) -> None:
        sc = self.sc
        i = 0
        while i < sc.n:
            i = sc.skip_ws(i)
            if i >= sc.n:
                break
            c = sc.s[i]
            if c in "\r\n":
                i += 1
            elif c == "#":
                end = sc.eol(i)
                sc.mark(i, end, _COMMENT)
                i = end
            elif c == "[":
                i = self.header(i)
            else:
                i = self.statement(i)

    def skip_line(self, i: int, line: int) -> int:
        """An unreadable line: content, skipped."""
        end = self.sc.eol(i)
        self.sc.mark(i, end, _CONTENT)
        self.extend(line)
        return end

    def header(self, i: int) -> int:
        """A `[table]` or `[[array]]` header at `i`; the offset after it."""
        sc, line = self.sc, self.sc.at(i)[0]
        aot = sc.s.startswith("[[", i)
        found = sc.key(i + (2 if aot else 1))
        if found is None:
            return self.skip_line(i, line)
        parts, j = found
        close = "]]" if aot else "]"
        if sc.s.startswith(close, j):
            j += len(close)
        header = sc.range(i, j)
        sc.mark(i, j, _CONTENT)
        current = self.current
        if parts == ["rules"] and aot:
            self.current = RuleSpan(index=len(self.spans), start_line=line, end_line=line, header_line=line)
            self.spans.append(self.current)
            self.context = "rule"
        elif parts[0] == "rules" and len(parts) > 1 and current is not None and self.context in ("rule", "sub"):
            current.key_lines.setdefault(parts[1], line)
            current.key_ranges.setdefault(parts[1], header)
            self.context = "sub"
            self.extend(line)
        else:
            self.top_keys.setdefault(parts[0], header)
            self.context = "other"
        return sc.rest_of_line(j)

    def statement(self, i: int) -> int:
        """A `key = value` statement at `i`; the offset after it."""
        sc, line = self.sc, self.sc.at(i)[0]
        found = sc.key(i)
        if found is None or found[1] >= sc.n or sc.s[found[1]] != "=":
            return self.skip_line(i, line)
        parts, j = found
        vstart = sc.skip_ws(j + 1)
        vend = sc.value(vstart)
        statement = sc.range(i, vend)
        sc.mark(i, max(vend, i + 1), _CONTENT)
        current = self.current
        if self.context == "rule" and current is not None:
            current.key_lines.setdefault(parts[0], line)
            current.key_ranges.setdefault(parts[0], statement)
            if len(parts) == 1:
                current.value_ranges.setdefault(parts[0], sc.range(vstart, vend))
        elif self.context == "top":
            self.top_keys.setdefault(parts[0], statement)
        self.extend(statement.end_line)
        return sc.rest_of_line(vend)


def scan(text: str) -> Layout:
    """Where every rule table and top-level key of `text` sits, each span
    decoded (`_decode_spans`)."""
    walk = _Walk(text)
    walk.run()
    # Comment lines directly above a header travel with it.
    for span in walk.spans:
        start = span.header_line
        while start > 0 and walk.sc.kinds[start - 1] == _COMMENT:
            start -= 1
        span.start_line = start
    _decode_spans(text, walk.spans)
    return Layout(spans=walk.spans, top_keys=walk.top_keys)


def _decode_spans(text: str, spans: list[RuleSpan]) -> None:
    """Fill each span's `rule` from tomllib: from the whole document when it
    parses and its tables line up with the spans, else from each table's own
    lines (so one broken table leaves the others readable)."""
    try:
        raw = toml_loads(text).get("rules")
    except tomllib.TOMLDecodeError:
        raw = None
    if isinstance(raw, list) and len(raw) == len(spans):
        for span, item in zip(spans, raw):
            span.rule = decode_rule(item)
        return
    lines = text.split("\n")
    for span in spans:
        chunk = "\n".join(lines[span.header_line : span.end_line + 1])
        try:
            tables = toml_loads(chunk).get("rules")
        except tomllib.TOMLDecodeError:
            continue
        if isinstance(tables, list) and len(tables) == 1:
            span.rule = decode_rule(tables[0])


def decode_rule(item: object) -> Rule | None:
    try:
        return msgspec.convert(item, Rule)
    except msgspec.ValidationError:
        return None


def rule_spans(text: str) -> list[RuleSpan]:
    """Every `[[rules]]` table in `text`, in order, with where its parts sit
    and what it decodes to."""
    return scan(text).spans


def span_at(spans: Sequence[RuleSpan], line: int) -> RuleSpan | None:
    """The span whose lines (leading comments included) hold `line`."""
    for span in spans:
        if span.start_line <= line <= span.end_line:
            return span
    return None


