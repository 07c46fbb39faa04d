"""Which passes an editor shows progress for, and the words every watcher
shows, from the job records alone.

Each test pins one way a person could be shown a pass running that ended, or
not shown one that runs.
"""

from __future__ import annotations

import msgspec

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


def test_progress_text_says_answered_of_all_time_waited_and_what_is_left():
    from mecha.core.store.jobs import JobProgress, progress_text, time_left

    started = "2026-12-01T10:00:00.000000Z"
    running = Job(id="j", kind="reflect", state="running", started_at=started)
    # No count yet: only the time waited.
    assert progress_text(running).endswith("waited")
    assert time_left(JobProgress(done=0, total=47), 30.0) is None
    # At the rate so far: 12 done in 190 s leaves 35 × 190/12 s.
    assert time_left(JobProgress(done=12, total=47), 190.0) == 190.0 / 12 * 35
    assert time_left(JobProgress(done=47, total=47), 190.0) == 0.0
    finished = msgspec.structs.replace(
        running, state="done", finished_at="2026-12-01T10:03:10.000000Z", progress=JobProgress(done=12, total=47)
    )
    assert progress_text(finished) == "12 of 47 intervention(s) answered, 3 min 10 s waited, about 9 min 14 s left"
    call = msgspec.structs.replace(finished, progress=JobProgress(done=0, total=1, unit="call"))
    assert progress_text(call) == "0 of 1 model call(s) answered, 3 min 10 s waited, no estimate yet"


def test_a_pass_ends_in_one_line_however_long_its_outcome():
    # Pins: an editor's progress ended on NoModel's whole twenty-line help.
    from mecha.core.providers.config import NO_MODEL_HELP
    from mecha.core.store.jobs import end_text

    failed = Job(id="j1", kind="learn", state="failed", started_at="2026-01-15T09:30:00Z", outcome=f"NoModel: {NO_MODEL_HELP}")
    line = end_text(failed)
    assert "\n" not in line
    assert line == "failed: NoModel: No model is configured, and this pass needs one. (`mecha-sidecar jobs` shows all of it)"


def test_a_one_sentence_outcome_is_shown_whole_and_points_nowhere_else():
    from mecha.core.store.jobs import end_text, outcome_headline

    done = Job(id="j2", kind="learn", state="done", started_at="2026-01-15T09:30:00Z", outcome="filed proposal p-1 (1 → 2 active rules)")
    assert end_text(done) == "done: filed proposal p-1 (1 → 2 active rules)"
    assert end_text(msgspec.structs.replace(done, outcome=None)) == "done"
    # A version number's dot is no sentence end; a wrapped line is joined.
    assert outcome_headline("model v1.2 refused\nthe schema") == ("model v1.2 refused the schema", False)
