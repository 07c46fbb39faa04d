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
- a write is a temp sibling renamed over the file (through a symlink, onto
  its target, which keeps a dotfiles checkout linked), keeping the file's
  mode.

The text inside is the block `mecha/rulesPromptBlock` renders — the same
call, so an agent outside the harness is told exactly what a run is.
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import msgspec

from mecha.core.errors import InvalidInput

BEGIN_MARKER = "<!-- mecha:rules:begin — written by `mecha-sidecar export`; edits inside are replaced -->"
END_MARKER = "<!-- mecha:rules:end -->"
#: How a marker line is recognised (its wording after the tag may change).
_BEGIN_TAG = "<!-- mecha:rules:begin"
_END_TAG = "<!-- mecha:rules:end"
#: Written between the markers when no rule is active, so the section
#: exists (and `--check` has something to compare) before the first accept.
NO_RULES = "(no learned rules are active yet)"

DEFAULT_TARGETS = {"claude": Path("~/.claude/CLAUDE.md"), "agents": Path("AGENTS.md")}


class ExportOutcome(msgspec.Struct, frozen=True):
    path: str
    changed: bool


def section(block: str | None) -> str:
    """The managed section, markers included, ending in a newline."""
    body = block.strip("\n") if block else NO_RULES
    return f"{BEGIN_MARKER}\n{body}\n{END_MARKER}\n"


def _marker_lines(text: str) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """(line number, start offset, end offset incl. newline) of each begin
    and end marker line."""
    begins, ends = [], []
    offset = 0
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        stripped = line.strip()
        if stripped.startswith(_BEGIN_TAG):
            begins.append((number, offset, offset + len(line)))
        elif stripped.startswith(_END_TAG):
            ends.append((number, offset, offset + len(line)))
        offset += len(line)
    return begins, ends


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
        raise InvalidInput(
            f"{name}: the mecha rules section's markers are damaged ({where}); "
            "expected one begin marker followed by one end marker. Fix or remove them by hand; nothing was written"
        )
    start, end = begins[0][1], ends[0][2]
    tail = existing[end:]
    replacement = new if (tail or existing[end - 1 : end] == "\n") else new.rstrip("\n")
    return existing[:start] + replacement + tail


def export_block(path: Path, block: str | None, *, check: bool = False) -> ExportOutcome:
    """Write `block` into `path`'s managed section; with `check`, write
    nothing and say whether a write would change the file."""
    target = path.resolve() if path.is_symlink() else path
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        raw = None
    except OSError as exc:
        raise InvalidInput(f"{path}: {exc.strerror or exc}") from None
    try:
        existing = raw.decode("utf-8") if raw is not None else ""
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); nothing was written") from None
    updated = splice(existing, block, name=str(path))
    changed = raw is None or updated != existing
    if check or not changed:
        return ExportOutcome(path=str(path), changed=changed)
    replace_file(target, updated.encode("utf-8"))
    return ExportOutcome(path=str(path), changed=True)


def replace_file(target: Path, data: bytes) -> None:
    """Write `data` as `target` through a temp sibling renamed over it,
    keeping its mode (0644 for a new file): a person's file is never seen
    half written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
    tmp = target.with_name(f".{target.name}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# ─── configured targets ─────────────────────────────────────────────────────


def configured_targets(config_path: Path) -> list[Path]:
    """The `[export]` table of `sidecar.toml`: `claude = "<file>"`,
    `agents = ["<file>", …]` (`claude = true` for its default file); a
    relative path is relative to the config file's folder. A file with no
    such table (or none at all) configures nothing. Read only when an accept
    asks, never on a run's path.
    """
    try:
        data = config_path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise InvalidInput(f"{config_path}: {exc.strerror or exc}") from None
    if b"[export" not in data:
        return []
    try:
        table = tomllib.loads(data.decode("utf-8")).get("export")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{config_path}: {exc}") from None
    if table is None:
        return []
    if not isinstance(table, dict):
        raise InvalidInput(f"{config_path}: [export] must be a table")
    out: list[Path] = []
    for key, value in table.items():
        if key not in DEFAULT_TARGETS:
            raise InvalidInput(f"{config_path}: [export] {key}: unknown target (known: {', '.join(DEFAULT_TARGETS)})")
        values = value if isinstance(value, list) else [value]
        for v in values:
            if v is True and key == "claude":
                v = str(DEFAULT_TARGETS[key])
            if not isinstance(v, str) or not v:
                raise InvalidInput(f"{config_path}: [export] {key}: expected a file path or a list of them")
            target = Path(v).expanduser()
            out.append(target if target.is_absolute() else config_path.parent / target)
    return out
