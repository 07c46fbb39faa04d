"""Reading a session file's lines, for every reader of a line-per-record
format (`reader.ReaderCore` and the readers above it): a line that is not a
record is skipped with a warning naming the file and the line, never the
session (`LineReader`); a line longer than any record (`MAX_LINE_BYTES`) is
read through without being held, so memory follows the longest line kept,
never the file; and the formats a file comes in, as a message names them
(`SessionFormat`, `FORMAT_NAMES`).
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from typing import IO, TypeVar

import msgspec

from mecha.core.environment import agents
from mecha.core.errors import InvalidInput


class SessionFormat(str, Enum):
    """The formats a session file comes in, spelled as `--format` takes them."""

    MECHA = "mecha"
    CLAUDE = agents.CLAUDE.name
    CODEX = agents.CODEX.name


#: What each format is called in a message about one of its files (looked
#: up by member or by its spelling alike).
FORMAT_NAMES: dict[str, str] = {
    SessionFormat.MECHA: "a mecha transcript",
    SessionFormat.CLAUDE: agents.CLAUDE.format_name,
    SessionFormat.CODEX: agents.CODEX.format_name,
}



#: What a reader reads: a file's bytes, or the file itself (read line by
#: line, so memory follows the longest line and the transcript, not the file).
Source = bytes | IO[bytes]


#: The longest line a reader takes in, in bytes. Memory follows the line:
#: read whole, a transcript of one 1 GB line once took the session-end
#: hook to 2,168 MB and past its timeout. A longer line is skipped by name,
#: read through in `_DRAIN_CHUNK` pieces and never held (`OverlongLine`).
#: Why 32 MiB: the longest a real record gets is a message carrying images
#: (Claude Code keeps them base64, up to about 6.7 MB each); four of those
#: fit, and a line this long decodes within about 100 MB.
MAX_LINE_BYTES = 32 * 2**20
#: How much of an overlong line is read at a time while looking for its end.
_DRAIN_CHUNK = 2**20
#: How much of an overlong line is kept: enough to tell whether it spoke of
#: a tool (`ReaderCore.unread_line`), never the line.
OVERLONG_HEAD = 64 * 2**10


class OverlongLine(bytes):
    """The head of a line longer than `MAX_LINE_BYTES` (its first
    `OVERLONG_HEAD` bytes), yielded in its place: a reader skips it by name
    (`LineReader.lines`), and the rest of it was never held."""


def overlong_why(limit: int = MAX_LINE_BYTES) -> str:
    return f"longer than {limit // 2**20} MiB, more than any record of it holds; it was not read"


def numbered_lines(source: Source, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes, bool]]:
    """`(line number, line, is_last_unterminated)` for each non-blank line.
    The flag lets a reader forgive a last line an agent is still writing.
    A line longer than `limit` comes as an `OverlongLine`."""
    if not isinstance(source, bytes | bytearray | memoryview):
        number = 0
        while True:
            chunk = source.readline(limit + 1)
            if not chunk:
                return
            number += 1
            if len(chunk) > limit and not chunk.endswith(b"\n"):
                head = OverlongLine(chunk[:OVERLONG_HEAD])
                del chunk
                torn = _drain_line(source)
                yield number, head, torn
                continue
            torn = not chunk.endswith(b"\n")
            line = chunk if torn else chunk[:-1]
            if line and not line.isspace():
                yield number, line, torn
    data = bytes(source)
    number = 0
    start = 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        torn = end < 0
        if torn:
            end = size
        number += 1
        if end - start > limit:
            yield number, OverlongLine(data[start : start + OVERLONG_HEAD]), torn
        else:
            line = data[start:end]
            if line and not line.isspace():
                yield number, line, torn
        start = end + 1


def _drain_line(source: IO[bytes]) -> bool:
    """Read `source` through the end of the current line, a piece at a
    time; whether the file ended first (the line is its unterminated last)."""
    while True:
        piece = source.readline(_DRAIN_CHUNK)
        if not piece:
            return True
        if piece.endswith(b"\n"):
            return False


def line_error(path: str, fmt: SessionFormat, number: int, why: str) -> InvalidInput:
    return InvalidInput(f"{path}:{number}: reading as {FORMAT_NAMES[fmt]}: {why}")


#: How many skipped lines of one file are named one by one; the rest are
#: counted in one more warning. A file of a million bad lines must not make a
#: million warnings.
NAMED_SKIPS = 20

T = TypeVar("T")

#: What decoding a line can raise: not JSON (a bad byte and a lone surrogate
#: included — msgspec refuses both), JSON of the wrong shape, or nesting
#: deeper than the decoder follows (msgspec raises `RecursionError` near the
#: interpreter's recursion limit; one such line once took a whole import down).
LINE_FAULTS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def line_fault(exc: BaseException) -> str:
    """A decoding failure in words, for the warning that names the line."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return str(exc)


#: How deep a tool call's arguments are kept. A line may nest as deep as
#: the decoder follows (near the interpreter's recursion limit); kept that
#: deep, the transcript could not be written to the inbox and read back by a
#: pass with a deeper stack. No real call nests past a few levels.
MAX_INPUT_DEPTH = 32
DEEP_PLACEHOLDER = "[nested too deeply to keep]"


def bounded(value: object, depth: int = MAX_INPUT_DEPTH) -> object:
    """`value` with anything nested deeper than `depth` replaced by a
    placeholder; the same object when nothing is (the common case costs a
    walk, not a copy)."""
    if isinstance(value, dict):
        if depth <= 0:
            return DEEP_PLACEHOLDER
        out = {k: bounded(v, depth - 1) for k, v in value.items()}
        return value if all(out[k] is value[k] for k in value) else out
    if isinstance(value, list):
        if depth <= 0:
            return DEEP_PLACEHOLDER
        items = [bounded(v, depth - 1) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


class LineReader:
    """What every reader of a line-per-record format shares: a line that is
    not a record of the format is skipped with a warning naming the file and
    the line, and counted; a file is refused only when no line of it was a
    record at all (`finish`). One odd line — a torn write, a bad byte, a
    field of a shape a newer release writes — costs that line, never the
    session."""

    def __init__(self, name: str, fmt: SessionFormat) -> None:
        self.name = name
        self.fmt = fmt
        self.warnings: list[str] = []
        self.skipped = 0
        self.seen = 0
        self._first_fault: tuple[int, str] | None = None

    def decode(self, decoder: msgspec.json.Decoder[T], number: int, raw: bytes | msgspec.Raw, torn: bool = False) -> T | None:
        """`raw` decoded, counted as a record; `None` (the line skipped) when
        it is not one."""
        try:
            return decoder.decode(raw)
        except LINE_FAULTS as exc:
            self.skip(number, line_fault(exc), torn=torn)
            return None

    def skip(self, number: int, why: str, *, torn: bool = False) -> None:
        self.skipped += 1
        if self._first_fault is None:
            self._first_fault = (number, why)
        if self.skipped > NAMED_SKIPS:
            return
        if torn:
            self.warnings.append(f"{self.name}:{number}: skipped a last line cut off mid-write")
        else:
            self.warnings.append(f"{self.name}:{number}: skipped a line that is not a record of {FORMAT_NAMES[self.fmt]}: {why}")

    def lines(self, source: Source) -> Iterator[tuple[int, bytes, bool]]:
        """`numbered_lines(source)`, counting them for `finish`; a line too
        long to read is skipped here, by name, and still yielded (as its
        `OverlongLine` head) for the reader to fail closed on."""
        for item in numbered_lines(source):
            self.seen += 1
            if isinstance(item[1], OverlongLine):
                self.skip(item[0], overlong_why())
            yield item

    def finish(self) -> None:
        """Refuse the file when nothing in it was readable; otherwise say
        how many skipped lines went unnamed."""
        if self.seen == self.skipped and self._first_fault is not None:
            number, why = self._first_fault
            raise line_error(self.name, self.fmt, number, f"no line of the file is a readable record (the first: {why})")
        if self.skipped > NAMED_SKIPS:
            self.warnings.append(f"{self.name}: {self.skipped - NAMED_SKIPS} more line(s) skipped as not records of {FORMAT_NAMES[self.fmt]}")
