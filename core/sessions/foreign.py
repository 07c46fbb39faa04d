"""Sessions recorded by other agents: which format a file is, and the one
entry point every CLI verb reads a session through (`read_session`).

The readers live in `claude_code.py` and `codex_cli.py`, over the core they
share (`reader.py`: the result, the taint policy, the line loop). This
module sits above them: it detects a file's format from its first record and
hands the file to its reader. It also holds the **harness-voice profiles**:
text each agent records in the person's voice that no person wrote. The
readers already drop what they recognise; the profile is the second line,
applied by the miner to whatever slips through (a new wrapper in a newer
release).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO

import msgspec

from mecha.core.environment.agents import AGENTS
from mecha.core.errors import InvalidInput
from mecha.core.sessions.lines import LINE_FAULTS, OverlongLine, SessionFormat, Source, numbered_lines
from mecha.core.sessions.reader import ReadSession, TaintPolicy
from mecha.core.sessions.trust import Trust

#: The formats `read_session` knows, in the spelling `--format` takes.
FORMATS = tuple(f.value for f in SessionFormat)

# ─── harness voices ─────────────────────────────────────────────────────────

#: Text each agent records as a user turn that no person wrote, matched as a
#: prefix by the miner (`Voices.harness_prefixes`). `--voices claude` or
#: `--voices codex` names a profile; the profile of the format being read is
#: always applied.
HARNESS_VOICE_PROFILES: dict[str, tuple[str, ...]] = {a.name: a.voices for a in AGENTS}


def expand_voices(values: Iterable[str]) -> tuple[str, ...]:
    """`--voices` values as prefixes: a profile name expands to its
    profile, anything else is a prefix as written. Empty values are dropped."""
    out: list[str] = []
    for value in values:
        for prefix in HARNESS_VOICE_PROFILES.get(value, (value,)):
            if prefix and prefix not in out:
                out.append(prefix)
    return tuple(out)


def voices_from_env_value(raw: str | None) -> tuple[str, ...]:
    """`MECHA_HARNESS_VOICES` as the CLI reads it: a JSON list of strings, or
    (for a shell) one prefix or profile name per line."""
    if not raw or not raw.strip():
        return ()
    stripped = raw.strip()
    if stripped.startswith("["):
        try:
            values = msgspec.json.decode(stripped)
        except msgspec.DecodeError as exc:
            raise InvalidInput(f"MECHA_HARNESS_VOICES: not a JSON list of strings: {exc}") from None
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InvalidInput("MECHA_HARNESS_VOICES: not a JSON list of strings")
        return expand_voices(values)
    return expand_voices(line.strip() for line in stripped.splitlines())


# ─── detection and the one entry point ──────────────────────────────────────

_CLAUDE_TYPES = frozenset(
    {"user", "assistant", "summary", "system", "attachment", "queue-operation", "file-history-snapshot", "custom-title", "permission-mode"}
)
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})


class _Head(msgspec.Struct):
    type: object = None
    role: object = None
    payload: msgspec.Raw = msgspec.Raw()
    messages: msgspec.Raw = msgspec.Raw()
    sessionId: object = None
    parentUuid: object = None
    record_type: object = None
    instructions: msgspec.Raw = msgspec.Raw()


#: How many lines detection reads looking for the first record (a file whose
#: first lines are all unreadable is still its format).
SNIFF_LINES = 64


def _line_head(source: Source, skip: int = 0) -> _Head | None:
    """The first line of `source` (after `skip` non-blank ones) that decodes
    as the head of a record of a known format, within `SNIFF_LINES` lines;
    with `skip` 0, the first line's head, whatever it is."""
    lines = numbered_lines(source)
    for i in range(SNIFF_LINES):
        item = next(lines, None)
        if item is None:
            return None
        if i < skip:
            continue
        try:
            if isinstance(item[1], OverlongLine):
                raise msgspec.DecodeError("a line too long to read")
            head = msgspec.json.decode(item[1], type=_Head)
        except LINE_FAULTS:
            if skip == 0:
                return None  # the first line alone, first: see `detect_format`
            continue
        if skip == 0 or _format_of(head) is not None:
            return head
    return None


def detect_format(data: Source) -> SessionFormat | None:
    """Which format a file is, from its first record; `None` when it is
    none of them. Decided on structure, not on the file's name: a person
    renames files, and every format here is `.jsonl`. The first line is
    tried, then the whole file as one object (a pretty-printed transcript),
    then the next lines (a session whose first line is not a record — or
    is JSON of no format's shape: a line of objects nested 40 deep first
    once made a whole Claude Code session "not a session file"). Given an
    open file, it reads the head and leaves the file where it found it."""
    if not isinstance(data, bytes | bytearray | memoryview):
        start = data.tell()
        try:
            fmt = _format_of(_line_head(data))
            if fmt is None and _size_from(data, start) <= _WHOLE_OBJECT_LIMIT:
                data.seek(start)
                whole = data.read(_WHOLE_OBJECT_LIMIT + 1)
                fmt = _format_of(_whole_object_head(whole)) if len(whole) <= _WHOLE_OBJECT_LIMIT else None
                del whole
            if fmt is None:
                data.seek(start)
                fmt = _format_of(_line_head(data, skip=1))
        finally:
            data.seek(start)
        return fmt
    stripped = bytes(data).lstrip()
    if not stripped:
        return None
    fmt = _format_of(_line_head(stripped))
    if fmt is None:
        fmt = _format_of(_whole_object_head(stripped))
    if fmt is None:
        fmt = _format_of(_line_head(stripped, skip=1))
    return fmt


#: A pretty-printed transcript (one JSON object over many lines) is looked
#: at whole only up to this size when detecting from an open file.
_WHOLE_OBJECT_LIMIT = 64 * 2**20


def _size_from(data: IO[bytes], start: int) -> int:
    """How many bytes an open file holds from `start` (0 when it cannot
    tell): a file too big to be looked at whole is not read to find out."""
    try:
        return os.fstat(data.fileno()).st_size - start
    except (OSError, AttributeError, ValueError):
        return 0


def _whole_object_head(data: bytes) -> _Head | None:
    # A pretty-printed JSON object spans lines: try the whole file.
    try:
        return msgspec.json.decode(data, type=_Head)
    except LINE_FAULTS:
        return None


def _format_of(head: _Head | None) -> SessionFormat | None:
    if head is None:
        return None
    if head.messages:
        return SessionFormat.MECHA
    if head.role in ("user", "assistant"):
        return SessionFormat.MECHA
    if head.payload and head.type in _CODEX_TYPES:
        return SessionFormat.CODEX
    if head.type is None and (head.record_type is not None or bool(head.instructions)):
        return SessionFormat.CODEX  # the older rollout shape: a bare meta line first
    if head.type in _CLAUDE_TYPES or head.sessionId is not None or head.parentUuid is not None:
        return SessionFormat.CLAUDE
    return None


def read_session(
    path: Path,
    fmt: str | None = None,
    *,
    trust: Trust | None = None,
    policy: TaintPolicy | None = None,
    data: Source | None = None,
) -> ReadSession:
    """Read one session file in any known format (`fmt` forces one), from
    `data` when given (its bytes, or the file already open), else from
    `path`, line by line.

    With no `policy`, the reader's own lists and `trust` — the person's
    standing trust decisions, which the caller loads
    (`environment.trust.load_trust`) and hands in — decide the taint; with
    no `trust` either, the reader's own lists alone. The reader never opens
    the config file itself.

    Errors are `InvalidInput` naming the file, the format tried and, where
    there is one, the line — a session id the store could never record
    (`identity.record_id_problem`) included.
    """
    session = _read_session(path, fmt, policy=policy, trust=trust, data=data)
    from mecha.core.identity import validate_record_id

    validate_record_id(session.session_id, f"{path}: session_id")
    return session


def _read_session(
    path: Path,
    fmt: str | None,
    *,
    policy: TaintPolicy | None,
    trust: Trust | None,
    data: Source | None,
) -> ReadSession:
    if fmt is not None and fmt not in FORMATS:
        raise InvalidInput(f"--format {fmt!r}: must be one of {', '.join(FORMATS)}")
    forced = None if fmt is None else SessionFormat(fmt)
    if data is None:
        # Read line by line from the file: a session of hundreds of MB is
        # never held whole.
        try:
            with path.open("rb") as f:
                return _read_source(path, forced, policy, trust, f)
        except OSError as exc:
            raise InvalidInput(f"{path}: {exc.strerror or exc}") from None
    return _read_source(path, forced, policy, trust, data)


def _read_source(
    path: Path, fmt: SessionFormat | None, policy: TaintPolicy | None, trust: Trust | None, data: Source
) -> ReadSession:
    found = fmt or detect_format(data)
    if found is None:
        raise InvalidInput(
            f"{path}: not a session file: its first record is neither a mecha transcript, "
            "a Claude Code session line nor a Codex CLI rollout line (use --format to force one)"
        )
    if policy is None and found is not SessionFormat.MECHA:
        # The reader's own lists with the person's standing decisions, as
        # the caller handed them in.
        policy = (Trust() if trust is None else trust).policy(found.value)
    if found is SessionFormat.CLAUDE:
        from mecha.core.sessions.claude_code import read_claude_code

        return read_claude_code(data, name=str(path), path=path, policy=policy)
    if found is SessionFormat.CODEX:
        from mecha.core.sessions.codex_cli import read_codex

        return read_codex(data, name=str(path), path=path, policy=policy)
    from mecha.core.sessions.files import parse_transcript

    if not isinstance(data, bytes):
        # A mecha transcript is one record (an object, or messages read
        # together): bounded as a whole, and never read past the bound.
        whole = data.read(_WHOLE_OBJECT_LIMIT + 1)
        if len(whole) > _WHOLE_OBJECT_LIMIT:
            raise InvalidInput(
                f"{path}: a mecha transcript larger than {_WHOLE_OBJECT_LIMIT // 2**20} MiB, more than one session "
                "holds; it was not read"
            )
        data = whole
    session = parse_transcript(path, data)
    return ReadSession(
        source=SessionFormat.MECHA,
        session_id=session.session_id,
        messages=session.messages,
        taint_timeline=session.taint_timeline,
        interactive=session.interactive,
    )
