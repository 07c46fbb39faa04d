"""Which passes an editor shows progress for, from the job records alone.

Each test pins one way a person could be shown a pass running that ended, or
not shown one that runs.
"""

from __future__ import annotations

from mecha.core.store.jobs import Job, JobState, progress_moves


def job(jid: str, state: JobState) -> Job:
    return Job(id=jid, kind="learn", domain="behavior", state=state, started_at="2026-08-04T06:00:00Z")


def test_progress_begins_for_a_job_first_seen_running_and_ends_when_it_leaves_running():
    # Pins: a pass started by the CLI or the harness never shown (progress
    # tied to the editor's own request), or a bar left spinning after the
    # record says the pass is done or failed.
    begin, end = progress_moves({}, [job("j-1", "running")])
    assert ([j.id for j in begin], end) == (["j-1"], [])
    for final in ("done", "failed"):
        begin, end = progress_moves({"j-1": "running"}, [job("j-1", final)])
        assert (begin, [j.id for j in end]) == ([], ["j-1"]), final


def test_a_job_seen_before_is_neither_begun_again_nor_ended_twice():
    # Pins: a second progress bar for the same pass at every poll, or an
    # end sent for a bar already ended.
    assert progress_moves({"j-1": "running"}, [job("j-1", "running")]) == ([], [])
    assert progress_moves({"j-1": "done"}, [job("j-1", "done")]) == ([], [])


def test_a_job_first_seen_already_ended_gets_no_progress():
    # Pins: an editor opened after a day of passes flashing a bar for each.
    assert progress_moves({}, [job("j-1", "done"), job("j-2", "failed")]) == ([], [])
