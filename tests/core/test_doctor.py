"""`doctor`'s reading of the store's passes: a pass whose latest run failed
is listed as failed."""

from __future__ import annotations

from pathlib import Path

from mecha.core import doctor
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.learning_store import LearningStore


def _job(n: int, kind: str, state: str, outcome: str = "") -> jobs_mod.Job:
    return jobs_mod.Job(id=f"20261201T00000{n}-{kind}-abc{n}", kind=kind, state=state,  # type: ignore[arg-type]
                        started_at=f"2026-12-01T00:00:0{n}.000000Z", finished_at=f"2026-12-01T00:00:0{n}.500000Z",
                        outcome=outcome or None)


def test_a_pass_kind_whose_latest_run_failed_is_failing_and_one_a_later_run_got_past_is_not():
    jobs = [_job(4, "reflect", "failed", "NoModel: no model"), _job(3, "learn", "done"),
            _job(2, "learn", "failed", "ModelFailure: 500"), _job(1, "reflect", "done")]
    assert [j.kind for j in doctor.failing_passes(jobs)] == ["reflect"]
    assert doctor.failing_passes([_job(2, "reflect", "done"), _job(1, "reflect", "failed")]) == []


def test_doctor_lists_a_failed_pass_as_failed_with_its_outcome(tmp_path: Path):
    # Pins: `ok  jobs  0 running, 2 failed` while every pass failed with
    # NoModel — the one place a person looks said all was well.
    root = tmp_path / "store"
    LearningStore.open(root)
    for job in (_job(1, "reflect", "failed", "NoModel: no model is configured"),
                _job(2, "reflect", "failed", "NoModel: no model is configured")):
        jobs_mod.write_job(root, job)
    [check] = [c for c in doctor.run_checks(root, env={}) if c.name == "jobs"]
    assert check.ok is False
    assert "the last reflect pass failed (20261201T000002-reflect-abc2): NoModel" in check.detail
    jobs_mod.write_job(root, _job(3, "reflect", "done", "2 reflection(s) written"))
    [check] = [c for c in doctor.run_checks(root, env={}) if c.name == "jobs"]
    assert check.ok is True and "2 failed among the last 3" in check.detail
