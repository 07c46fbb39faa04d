"""The hook pass's reading rule (`agents.hookpass`), driven without a
process: a round reads each queued session once, a pass reads it once
unless it has since changed or ended."""

from __future__ import annotations

from pathlib import Path

from mecha.core.agents.hookpass import ALREADY_READ, already_read, read_round
from mecha.core.agents.hookqueue import enqueue, pending


def test_a_session_read_this_pass_is_read_again_only_when_its_file_changed_or_it_has_now_ended():
    # Pins: the plugin's and the settings file's hooks both reading one
    # session; a compaction's read swallowing the refusal the end queues.
    assert already_read((10, 5, False), (10, 5), ended=False)
    assert already_read((10, 5, True), (10, 5), ended=True)
    assert not already_read((10, 5, False), (10, 5), ended=True)
    assert not already_read((10, 5, True), (11, 6), ended=True)
    assert not already_read(None, (10, 5), ended=False)
    assert not already_read((10, 5, True), None, ended=True)


def test_a_round_reads_a_session_queued_twice_once_as_ended_and_the_next_round_not_at_all(tmp_path: Path):
    # Pins: two hooks of one session (a compaction, then the end) reading
    # it twice in one round, or again in the next round of the same pass.
    root = str(tmp_path / "store")
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("{}\n")
    fields = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(tmp_path), "event": "PreCompact"}
    enqueue(root, "claude", fields)
    enqueue(root, "claude", {**fields, "event": "SessionEnd"})
    calls: list[tuple[str, Path, bool]] = []

    def import_one(agent: str, session: Path, ended: bool) -> tuple[str, bool]:
        calls.append((agent, session, ended))
        return "read", True

    read: dict[tuple[str, str], tuple[int, int, bool]] = {}
    said = read_round(root, set(), read, import_one, lambda what: None, home=tmp_path)
    assert calls == [("claude", transcript, True)] and [s[1] for s in said] == ["read"]
    assert pending(root, set()) == []
    enqueue(root, "claude", {**fields, "event": "SessionEnd"})
    said = read_round(root, set(), read, import_one, lambda what: None, home=tmp_path)
    assert len(calls) == 1 and said[0][1] == ALREADY_READ and said[0][4] is False


def test_a_queued_file_that_is_no_entry_is_said_and_removed(tmp_path: Path):
    root = str(tmp_path / "store")
    enqueue(root, "claude", {"session_id": "s1", "transcript_path": None, "cwd": None, "event": "SessionEnd"})
    [path] = pending(root, set())
    Path(path).write_text("not json")
    notes: list[str] = []
    said = read_round(root, set(), {}, lambda *a: ("read", True), notes.append, home=tmp_path)
    assert said == [] and len(notes) == 1 and notes[0].startswith(f"skipped the queued file {path}"), notes
    assert pending(root, set()) == []
