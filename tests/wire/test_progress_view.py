"""What a person at a terminal sees of a running pass, and what a log gets."""

from __future__ import annotations

import io

from mecha.core.store.jobs import Job, JobProgress
from mecha.sidecar.progress import ProgressView, bar


def running(done: int, total: int) -> Job:
    return Job(id="j", kind="reflect", state="running", started_at="2026-12-01T10:00:00.000000Z",
               progress=JobProgress(done=done, total=total))


def test_on_a_terminal_one_bar_is_redrawn_in_place_and_a_line_of_its_own_keeps_clear_of_it():
    out = io.StringIO()
    view = ProgressView(out, tty=True)
    view.show(running(1, 4))
    view.show(running(2, 4))
    view.say("    lesson: keep to docs/")
    view.clear()
    text = out.getvalue()
    assert "\n" not in text.split("    lesson")[0], "the bar is redrawn with a carriage return, not new lines"
    assert text.count(bar(2, 4)) == 2 and bar(1, 4) in text  # redrawn after the line said
    assert "    lesson: keep to docs/\n" in text
    assert text.endswith("\r"), "cleared before the final line"


def test_anywhere_else_plain_lines_one_each_time_the_count_moves():
    # Pins: a log or a pipe filled with carriage returns and bar glyphs, or with a line per poll.
    out = io.StringIO()
    view = ProgressView(out, tty=False, every_s=3600)
    for done in (0, 0, 1, 1, 1, 2):
        view.show(running(done, 3))
    lines = out.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "reflect: 0 of 3 intervention(s) answered",
        "reflect: 1 of 3 intervention(s) answered",
        "reflect: 2 of 3 intervention(s) answered",
    ]
    assert "\r" not in out.getvalue() and "█" not in out.getvalue()


def test_a_stream_that_is_not_a_terminal_gets_plain_lines():
    assert ProgressView(io.StringIO()).tty is False
