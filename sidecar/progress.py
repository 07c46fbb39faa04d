"""How a person waiting on a background pass sees it move.

A pass writes how far it has got into its own job record
(`jobs.JobProgress`); every verb that waits on one — `import`, `reflect`,
`learn`, `inbox retry`, the demo — shows it through `ProgressView`, in the
words `jobs.progress_text` gives every watcher (an editor's `$/progress`
included): interventions answered of all, time waited, an estimate of what
is left. On a terminal that is one bar redrawn in place; anywhere else (a
pipe, a log, CI) plain lines, one each time the count moves and one every
`PLAIN_EVERY_S` while it does not, so a log shows the pass is alive without
a line per tick. Which of the two is decided by `isatty` on the stream.

The first real import a person ran — 13 sessions, 47 interventions, a local
model — printed nothing for eight minutes; that is what this is for.
"""

from __future__ import annotations

import time
from typing import TextIO

from mecha.core.store.jobs import Job, progress_text

#: A plain line at least this often while nothing moves.
PLAIN_EVERY_S = 30.0
#: The bar's width in cells.
BAR_CELLS = 24


def bar(done: int, total: int, cells: int = BAR_CELLS) -> str:
    """`[█████░░░░░]`: `done` of `total`, in `cells` cells."""
    filled = 0 if total <= 0 else min(cells, done * cells // total)
    return "[" + "█" * filled + "░" * (cells - filled) + "]"


class ProgressView:
    """Shows one running pass on `stream`: a bar on a terminal, plain lines
    otherwise (`tty` forces one or the other)."""

    def __init__(self, stream: TextIO, *, tty: bool | None = None, every_s: float = PLAIN_EVERY_S) -> None:
        self.stream = stream
        self.tty = _isatty(stream) if tty is None else tty
        self.every_s = every_s
        self._drawn = 0
        self._last_line: str | None = None
        self._last_progress: object = None
        self._last_at = 0.0

    def line_for(self, job: Job) -> str:
        title = f"{job.kind}" + (f" {job.domain}" if job.domain else "")
        return f"{title}: {progress_text(job)}"

    def show(self, job: Job) -> None:
        """The pass as it stands now (call as often as you poll)."""
        text = self.line_for(job)
        if self.tty:
            p = job.progress
            drawn = f"{bar(p.done, p.total)} {text}" if p is not None and p.total > 0 else text
            self._draw(drawn)
            return
        now = time.monotonic()
        moved = job.progress != self._last_progress
        if (moved and job.progress is not None) or now - self._last_at >= self.every_s:
            self._last_progress = job.progress
            self._last_at = now
            self.stream.write(text + "\n")
            self.stream.flush()

    def say(self, text: str) -> None:
        """A line of its own (what the pass found, say), kept clear of the bar."""
        redraw = self._last_line if self.tty else None
        self.clear()
        self.stream.write(text + "\n")
        if redraw:
            self._draw(redraw)
        self.stream.flush()

    def clear(self) -> None:
        """Take the bar off the terminal (before the final line)."""
        if self.tty and self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self.stream.flush()
            self._drawn = 0
            self._last_line = None

    def _draw(self, text: str) -> None:
        if text == self._last_line:
            return
        pad = max(self._drawn - len(text), 0)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._drawn = len(text)
        self._last_line = text


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
