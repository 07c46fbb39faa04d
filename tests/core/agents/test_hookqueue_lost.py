"""Session ends a hook could not queue (`hookqueue.lost_ends`, `requeue`):
read back from the hook log whole, whatever the paths hold, resolved by
the next line about the same session or an import after the hook, and
queued again once under a name of their own."""

from __future__ import annotations

from pathlib import Path

from mecha.core.agents.hookqueue import lost_ends, not_queued_words, pending, read_entry, requeue
from mecha.core.agents.hooks import imported_since, log_hook_run, lost_session_ends
from mecha.core.store.records import ImportRecord

FULL = OSError(28, "No space left on device")


def _told(sid: str, path: str = "/home/pat/a  b/s.jsonl", cwd: str | None = "/home/pat/my proj") -> dict[str, object]:
    return {"session_id": sid, "transcript_path": path, "cwd": cwd, "event": "SessionEnd"}


def _lost_line(root: Path, sid: str, **kw: object) -> dict[str, object]:
    told = _told(sid, **kw)  # type: ignore[arg-type]
    log_hook_run(root, "claude", "session-end", not_queued_words(told, FULL), session_id=sid,
                 cwd=told["cwd"] if isinstance(told["cwd"], str) else None)
    return told


def test_what_the_hook_was_told_comes_back_whole_from_its_log_line(tmp_path: Path) -> None:
    # Pins: a path with two spaces or a quote cut at the first space, since
    # the log's one-line form folds whitespace.
    told = _lost_line(tmp_path, "s-1", path='/home/pat/we  "ird"\t\\u0020/s.jsonl')
    [end] = lost_ends(str(tmp_path))
    assert (end.agent, end.fields) == ("claude", told)


def test_a_later_line_about_the_same_session_ends_it_and_other_sessions_stay(tmp_path: Path) -> None:
    _lost_line(tmp_path, "s-1")
    _lost_line(tmp_path, "s-2")
    log_hook_run(tmp_path, "claude", "session-end", "queued 1 new intervention(s) as claude:s-1", session_id="s-1",
                 cwd="/home/pat/my proj")
    assert [e.session_id for e in lost_ends(str(tmp_path))] == ["s-2"]
    # A failure of another kind (a transcript not there) is not a lost end.
    log_hook_run(tmp_path, "claude", "session-end", "failed: InvalidInput: its transcript is not there",
                 session_id="s-3")
    assert [e.session_id for e in lost_ends(str(tmp_path))] == ["s-2"]


def test_an_import_after_the_hook_reads_the_session_but_one_before_it_does_not(tmp_path: Path) -> None:
    _lost_line(tmp_path, "s-1")
    [end] = lost_ends(str(tmp_path))

    def record(at: str) -> ImportRecord:
        return ImportRecord(source="claude", path="/p", size=1, mtime_ns=1, session_id="s-1", imported_at=at)

    assert lost_session_ends(tmp_path, imported_since([record("2000-01-01T00:00:00.000000Z")])) == [end]
    assert lost_session_ends(tmp_path, imported_since([record("2999-01-01T00:00:00.000000Z")])) == []


def test_a_lost_end_is_queued_again_once_while_it_waits(tmp_path: Path) -> None:
    told = _lost_line(tmp_path, "s-1", cwd=None)
    [end] = lost_ends(str(tmp_path))
    assert requeue(str(tmp_path), end) is True
    assert requeue(str(tmp_path), end) is False
    [queued] = pending(str(tmp_path))
    assert read_entry(queued) == {"agent": "claude", **told}
    assert not [p for p in (tmp_path / "hook-queue").iterdir() if p.name.endswith(".tmp")]
