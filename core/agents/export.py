"""The rules block, written into another agent's instructions file.

Claude Code reads `~/.claude/CLAUDE.md` (and a project's `CLAUDE.md`); Codex
and other agents read `AGENTS.md`. Both are a person's own files, so the
export owns exactly one managed section between two marker comments and
leaves every other byte as it was:

- no markers yet: the section is appended (after one blank line);
- one well-formed pair: what lies between is replaced;
- a begin without an end, an end without a begin, an end before its begin,
  or either marker twice: an error naming the lines, and no write — guessing
  which part a person meant to keep is how their text gets lost;
- the section written is byte-identical when nothing changed (idempotent),
  so `--check` (for a hook) can compare and exit 1 when it is out of date;
- nothing inside the section can end it: a line of the block that would
  read as a marker is written escaped (`section`), and the rules block
  renders every rule on one line (`rules.domain_rules_section`). A learned
  rule holding a newline and the end marker once closed the section early,
  and every later export refused the file as damaged;
- a byte-order mark at the start of the file is kept, and the markers are
  found after it.

The write goes through the one writer of a person's files
(`environment.confined.rewrite_file`), which says how a file is kept safe
while it is rewritten: a person's edits meanwhile, links, other users'
folders, FIFOs.

The text inside is the block `mecha/rulesPromptBlock` renders — the same
call, so an agent outside the harness is told exactly what a run is.
"""

from __future__ import annotations

from pathlib import Path

from mecha.core.environment.confined import ExportOutcome, rewrite_file
from mecha.core.errors import ExportFailed
from mecha.core.visible import shown

BEGIN_MARKER = "<!-- mecha:rules:begin — written by `mecha-sidecar export`; edits inside are replaced -->"
END_MARKER = "<!-- mecha:rules:end -->"
#: How a marker line is recognised (its wording after the tag may change).
_BEGIN_TAG = "<!-- mecha:rules:begin"
_END_TAG = "<!-- mecha:rules:end"
#: Written between the markers when no rule is active, so the section
#: exists (and `--check` has something to compare) before the first accept.
NO_RULES = "(no learned rules are active yet)"
#: The UTF-8 byte-order mark some Windows editors put at the start of a file.
BOM = b"\xef\xbb\xbf"


def _marker_kind(line: str) -> str | None:
    stripped = line.strip()
    if stripped.startswith(_BEGIN_TAG):
        return "begin"
    if stripped.startswith(_END_TAG):
        return "end"
    return None


def section(block: str | None) -> str:
    """The managed section, markers included, ending in a newline. A line of
    the block that would read as a marker is written with a backslash before
    it (Markdown shows it as written), so the section always ends at its own
    end marker. A character that hides from a person reading the file (a
    bidi control, a zero-width character, a control character) is written
    as its escape (`visible.shown`): the file is where a person reviews
    what their agents are told."""
    body = shown(block.strip("\n"), keep_layout=True) if block else NO_RULES
    lines = [("\\" + line if _marker_kind(line) else line) for line in body.splitlines()]
    return f"{BEGIN_MARKER}\n" + "\n".join(lines) + f"\n{END_MARKER}\n"


def _marker_lines(text: str) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """(line number, start offset, end offset incl. newline) of each begin
    and end marker line."""
    begins, ends = [], []
    offset = 0
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        kind = _marker_kind(line)
        if kind == "begin":
            begins.append((number, offset, offset + len(line)))
        elif kind == "end":
            ends.append((number, offset, offset + len(line)))
        offset += len(line)
    return begins, ends


def section_lines(text: str) -> list[str]:
    """The lines inside the file's one well-formed managed section (empty
    when it has none, or its markers are damaged: `splice` names that)."""
    begins, ends = _marker_lines(text)
    if len(begins) != 1 or len(ends) != 1 or ends[0][0] < begins[0][0]:
        return []
    return text[begins[0][2] : ends[0][1]].splitlines()


def splice(existing: str, block: str | None, *, name: str = "the file") -> str:
    """`existing` with its managed section set to `block` (pure)."""
    begins, ends = _marker_lines(existing)
    new = section(block)
    if not begins and not ends:
        if not existing:
            return new
        sep = "" if existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
        return existing + sep + new
    if len(begins) != 1 or len(ends) != 1 or ends[0][0] < begins[0][0]:
        where = ", ".join(
            [f"begin marker on line {b[0]}" for b in begins] + [f"end marker on line {e[0]}" for e in ends]
        )
        raise ExportFailed(
            f"{name}: the mecha rules section's markers are damaged ({where}); "
            "expected one begin marker followed by one end marker. Fix or remove them by hand; nothing was written"
        )
    start, end = begins[0][1], ends[0][2]
    tail = existing[end:]
    replacement = new if (tail or existing[end - 1 : end] == "\n") else new.rstrip("\n")
    return existing[:start] + replacement + tail


def export_block(path: Path, block: str | None, *, check: bool = False, within: Path | None = None) -> ExportOutcome:
    """Write `block` into `path`'s managed section; with `check`, write
    nothing and say whether a write would change the file. With `within`
    (a project's root), a file that is not there, or that a symbolic link
    takes outside that folder, is refused (`reach_problem`). `ExportFailed`
    names whatever stops it; the file is then as it was."""
    name = str(path)
    return rewrite_file(path, lambda raw: _spliced(raw, block, name), check=check, within=within)


def _spliced(raw: bytes | None, block: str | None, name: str) -> bytes:
    """The file's bytes with the section set; a leading BOM is kept, and the
    markers are looked for after it."""
    bom = raw is not None and raw.startswith(BOM)
    try:
        existing = raw[len(BOM) if bom else 0 :].decode("utf-8") if raw is not None else ""
    except UnicodeDecodeError as exc:
        raise ExportFailed(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start}); nothing was written") from None
    return (BOM if bom else b"") + splice(existing, block, name=name).encode("utf-8")


