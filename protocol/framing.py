"""LSP base-protocol framing: `Content-Length: N\\r\\n\\r\\n` then N bytes.

The reader's job is to never lose the *next* message because of a bad one.
A client bug (a lowercase header, a wrong length, a missing header, garbage
between frames) must cost exactly the broken frame:

- header names are matched case-insensitively, and `\\n\\n` is accepted as a
  terminator as well as `\\r\\n\\r\\n`;
- a header block without a usable `Content-Length` (missing, non-numeric,
  negative, two that disagree) is reported and skipped; whatever body
  followed it is discarded when the next header is found;
- bytes before a `Content-Length` header (the tail of a body whose declared
  length was too short) are discarded;
- a declared length over the frame limit is reported and its bytes are
  skipped without being held in memory (if they stop arriving first, reading
  resumes at a header among them, as for a body that is too long);
- a declared length that runs into the next frame (already in the pipe) is
  cut where that frame's `Content-Length: N` line starts: the broken frame
  is reported at once and the next one is read from its header (see
  `next_header_at` for why that can never cut a frame that was good);
- a body that stops arriving before its declared length (a length that was
  too long, and nothing behind it yet) is reported after a stall timeout,
  and reading resumes at the next header inside what was received.
- a header that stops arriving before its blank line is reported after the
  same stall timeout and discarded, so a frame sent later starts clean.

Each problem is surfaced as a `Frame` with `error` set, so the server can
answer it (JSON-RPC -32700 with id null) and carry on.
"""

from __future__ import annotations

import os
import re
import select
import threading

import msgspec

from .plainwire import CONTENT_LENGTH, encode_frame

#: Largest body accepted, so one message cannot exhaust memory. A 10k-message
#: transcript is a few MB; this leaves an order of magnitude of headroom.
MAX_FRAME_BYTES = 64 * 1024 * 1024

#: Largest header block: real ones are under 100 bytes.
MAX_HEADER_BYTES = 8 * 1024

#: Seconds without a byte, mid-body, before the frame is declared broken.
DEFAULT_STALL_TIMEOUT = float(os.environ.get("MECHA_SIDECAR_FRAME_STALL_S", "2.0"))

_NAME = re.escape(CONTENT_LENGTH.lower())
_CONTENT_LENGTH = re.compile(_NAME + rb"[ \t]*:", re.IGNORECASE)
_TERMINATOR = re.compile(rb"\r\n\r\n|\n\n")
#: A whole `Content-Length: N` header line, up to its raw line break.
_HEADER_LINE = re.compile(_NAME + rb"[ \t]*:[ \t]*[0-9]+[ \t]*\r?\n", re.IGNORECASE)
#: Longest header line `_HEADER_LINE` needs to see to decide (a length of
#: any plausible number of digits, some spaces): how far a scan for one
#: looks past the point it must start before.
_HEADER_LINE_REACH = 64


def _partial_header_line() -> re.Pattern[bytes]:
    """A header line cut short by the end of the bytes so far: any prefix of
    `Content-Length: N` up to (not including) its line feed, at the end."""
    name = CONTENT_LENGTH.lower()
    tail = rb"(?:[ \t]*(?::[ \t]*[0-9]*[ \t]*\r?)?)?"
    pattern = tail
    for ch in reversed(name[1:]):
        pattern = b"(?:" + re.escape(bytes([ch])) + pattern + b")?"
    return re.compile(re.escape(name[:1]) + pattern + rb"\Z", re.IGNORECASE)


_PARTIAL_HEADER_LINE = _partial_header_line()


def next_header_at(buf: bytes | bytearray, start: int, end: int) -> int | None:
    """Where a `Content-Length: N` header line starts in `buf[start:end]`
    (its line may run past `end`), or `None`.

    Why finding one inside a body means the frame's declared length was a
    lie: a JSON-RPC body is JSON, and JSON can hold neither the bare word
    `Content-Length` outside a string nor a raw line break inside one — so
    a body that really holds such a line is not JSON, and its length ran
    into the frame behind it. Cutting there never cuts a good body, and
    keeps the frame behind: a bad frame costs exactly that frame.

    Cheap on the hot path: the line needs a raw line feed, and a compact
    JSON body has none, so a `find` (memchr) settles most bodies at once.
    """
    if buf.find(b"\n", start, end + _HEADER_LINE_REACH) == -1:
        return None
    found = _HEADER_LINE.search(buf, start, end + _HEADER_LINE_REACH)
    if found is None or found.start() >= end:
        return None
    return found.start()


class Frame(msgspec.Struct):
    # A Struct, not a dataclass: building a dataclass compiles code at
    # import, a cost every harness run's cold start would pay.
    body: bytes | None = None
    error: str | None = None


class FrameReader:
    """Reads frames from a file descriptor (a pipe, a socket, a file)."""

    def __init__(
        self,
        fd: int,
        *,
        max_frame: int = MAX_FRAME_BYTES,
        stall_timeout: float = DEFAULT_STALL_TIMEOUT,
        chunk: int = 1 << 16,
    ):
        self.fd = fd
        self.max_frame = max_frame
        self.stall_timeout = stall_timeout
        self.chunk = chunk
        self.buf = bytearray()
        self.eof = False

    # ── low level ──
    def _fill(self, timeout: float | None = None) -> bool:
        """Read more bytes. False on EOF, or when `timeout` passed with none."""
        if self.eof:
            return False
        if timeout is not None:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return False
        try:
            data = os.read(self.fd, self.chunk)
        except InterruptedError:  # pragma: no cover - retried by the caller's loop
            return True
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    # ── frames ──
    def read_frame(self) -> Frame | None:
        """The next frame or framing error; `None` at a clean end of input."""
        while True:
            match = _TERMINATOR.search(self.buf)
            if match is None:
                if len(self.buf) > MAX_HEADER_BYTES:
                    return self._resync_after(len(self.buf), "header block too long or missing its blank line")
                # Between frames, wait as long as the peer likes; inside a
                # header, a stall means the header is broken, and it must not
                # be merged with the next frame's when that one arrives.
                inside = bool(self.buf.strip())
                if not self._fill(self.stall_timeout if inside else None):
                    if inside and not self.eof:
                        self.buf.clear()
                        return Frame(error=f"a frame header stopped arriving: no data for {self.stall_timeout:g}s")
                    rest = bytes(self.buf).strip()
                    self.buf.clear()
                    if rest:
                        return Frame(error="input ended inside a frame header")
                    return None
                continue

            header = bytes(self.buf[: match.start()])
            del self.buf[: match.end()]
            # Discard anything before the last Content-Length: the leftover of
            # a body that was declared too short, or garbage between frames.
            # When every Content-Length starts a line, though, they are all
            # headers of this frame, and two must be compared, not one
            # silently preferred.
            matches = [m.start() for m in _CONTENT_LENGTH.finditer(header)]
            if matches:
                at_line_start = all(i == 0 or header[i - 1] == 0x0A for i in matches)
                header = header[matches[0] if at_line_start else matches[-1] :]
            if not header.strip():
                continue  # blank lines between frames are not worth an error
            length, error = _parse_header(header)
            if error is not None:
                return Frame(error=error)
            assert length is not None
            if length > self.max_frame:
                self._skip(length)
                return Frame(error=f"frame of {length} bytes exceeds the limit of {self.max_frame} bytes")
            return self._read_body(length)

    def _read_body(self, length: int) -> Frame:
        scanned = 0
        while True:
            # A header line inside the declared body: the length ran into
            # the next frame. Only the new bytes are scanned each time (less
            # the reach of a line that straddled the last chunk).
            have = min(len(self.buf), length)
            cut = next_header_at(self.buf, max(0, scanned - _HEADER_LINE_REACH), have)
            if cut is not None:
                del self.buf[:cut]
                return Frame(error=f"frame declared {length} bytes but the next frame's header began after {cut}")
            scanned = have
            if len(self.buf) >= length:
                if not self._header_line_cut_short(length):
                    break
                continue
            if not self._fill(self.stall_timeout):
                got = len(self.buf)
                partial = bytes(self.buf)
                self.buf.clear()
                nxt = _CONTENT_LENGTH.search(partial)
                if nxt is not None:
                    self.buf += partial[nxt.start() :]
                why = "input ended" if self.eof else f"no data for {self.stall_timeout:g}s"
                return Frame(error=f"frame declared {length} bytes but {why} after {got}")
        body = bytes(self.buf[:length])
        del self.buf[:length]
        return Frame(body=body)

    def _header_line_cut_short(self, length: int) -> bool:
        """Whether the bytes end in what may be a header line begun inside
        the declared body, and more bytes, already sent, were just read to
        decide it. Never waits: a good frame is not held up by the guess."""
        start = max(0, length - _HEADER_LINE_REACH)
        partial = _PARTIAL_HEADER_LINE.search(self.buf, start)
        if partial is None or partial.start() >= length or len(self.buf) - partial.start() > _HEADER_LINE_REACH:
            return False
        return self._fill(0)

    def _skip(self, length: int) -> None:
        """Discard `length` body bytes without holding them.

        If they stop arriving first (the length was a lie), reading resumes
        at the first header among the skipped bytes, as it does for a body
        that is too long; that tail is kept only while it could still be
        one frame, so memory stays bounded by the frame limit."""
        remaining = length
        tail = bytearray()
        while True:
            take = min(remaining, len(self.buf))
            cut = next_header_at(self.buf, 0, take)
            if cut is not None:
                # The next frame is already here: the declared length was a
                # lie (as in `_read_body`), and that frame is not skipped.
                del self.buf[:cut]
                return
            # While more is to come, the last few bytes stay unread: they may
            # start a header line whose end has not arrived yet.
            if take < remaining:
                take = max(0, take - _HEADER_LINE_REACH)
            if tail:
                tail += self.buf[:take]
            else:
                found = _CONTENT_LENGTH.search(self.buf, 0, take)
                if found is not None:
                    tail += self.buf[found.start() : take]
            if len(tail) > self.max_frame + MAX_HEADER_BYTES:
                tail.clear()
            del self.buf[:take]
            remaining -= take
            if remaining <= 0:
                return
            if not self._fill(self.stall_timeout):
                self.buf[:0] = tail
                return

    def _resync_after(self, n: int, why: str) -> Frame:
        data = bytes(self.buf[:n])
        del self.buf[:n]
        # Keep anything from the last header onwards: it may be a good frame.
        headers = list(_CONTENT_LENGTH.finditer(data))
        last = headers[-1] if headers else None
        if last is not None and last.start() > 0:
            self.buf[:0] = data[last.start() :]
        return Frame(error=why)


def _parse_header(header: bytes) -> tuple[int | None, str | None]:
    """`(length, None)` for a usable header block, else `(None, reason)`."""
    length: int | None = None
    for raw in header.splitlines():
        line = raw.strip()
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            return None, f"malformed header line {raw[:80]!r}"
        if name.strip().lower() != CONTENT_LENGTH.lower():
            continue  # Content-Type and anything else: ignored
        value = value.strip()
        if not value.isdigit():
            return None, f"Content-Length must be a non-negative integer, got {value[:40]!r}"
        n = int(value)
        if length is not None and n != length:
            return None, f"two Content-Length headers disagree ({length} and {n})"
        length = n
    if length is None:
        return None, "missing Content-Length header"
    return length, None


class FrameWriter:
    """Writes whole frames; safe to share between threads (one lock, so
    frames from a loop and from worker threads never interleave).

    `quiet_when_gone`: a peer that closed its end loses the frame silently
    instead of raising (the editor endpoint: its reader sees the end).
    """

    def __init__(self, fd: int, *, quiet_when_gone: bool = False):
        self.fd = fd
        self.lock = threading.Lock()
        self.quiet_when_gone = quiet_when_gone

    def write(self, body: bytes) -> None:
        """Frame `body` and write it."""
        self.write_framed(encode_frame(body))

    def write_framed(self, data: bytes) -> None:
        """Write bytes that are already whole frames (a library's own)."""
        with self.lock:
            view = memoryview(data)
            while view:
                try:
                    written = os.write(self.fd, view)
                except OSError:
                    if self.quiet_when_gone:
                        return
                    raise
                view = view[written:]


