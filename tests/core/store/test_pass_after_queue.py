"""`inbox.pass_after_queue`: the one answer every door that hands sessions
over gives to "which reflect pass now" — new work starts one, a pass still
running answers for nothing new, waiting work left by an earlier pass is
asked again, and an empty inbox starts nothing."""

from __future__ import annotations

import os
from pathlib import Path

from mecha.core.identity import mint_job_id, now
from mecha.core.sessions.transcript import Message
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.inbox import count_waiting, enqueue, pass_after_queue, session_entry
from mecha.core.store.learning_store import LearningStore


class Starts:
    """A `start` that writes the running job record a real start writes,
    and counts its calls."""

    def __init__(self, store: LearningStore) -> None:
        self.store = store
        self.jobs: list[jobs_mod.Job] = []

    def __call__(self) -> jobs_mod.Job:
        job = running_job(self.store.root, "reflect")
        self.jobs.append(job)
        return job


def running_job(root: Path, kind: jobs_mod.JobKind) -> jobs_mod.Job:
    job = jobs_mod.Job(id=mint_job_id(kind), kind=kind, state="running", started_at=now(), pid=os.getpid())
    jobs_mod.write_job(root, job)
    return job


def queue_a_steer(store: LearningStore) -> None:
    messages = [
        Message(role="user", content="Write the weekly report."),
        Message(role="assistant", content="Here is the report, with every figure in miles."),
        Message(role="user", content="No, stop: always use kilometres in reports."),
    ]
    entry = session_entry("s-steer", messages, None)
    assert entry.plans, "the transcript holds a steer"
    enqueue(store, entry)


def test_new_work_starts_a_pass_even_while_one_runs(tmp_path: Path) -> None:
    store = LearningStore.open(tmp_path / "learning")
    running_job(store.root, "reflect")
    start = Starts(store)
    after = pass_after_queue(store, True, start)
    assert after.job is not None and start.jobs == [after.job] and not after.in_flight


def test_nothing_new_and_a_pass_running_answers_with_that_pass(tmp_path: Path) -> None:
    store = LearningStore.open(tmp_path / "learning")
    queue_a_steer(store)
    running = running_job(store.root, "reflect")
    start = Starts(store)
    after = pass_after_queue(store, False, start)
    assert after.job == running and after.in_flight and start.jobs == []


def test_nothing_new_and_work_waiting_asks_it_again(tmp_path: Path) -> None:
    store = LearningStore.open(tmp_path / "learning")
    queue_a_steer(store)
    running_job(store.root, "learn")  # a pass of another kind holds no inbox work
    start = Starts(store)
    assert count_waiting(store) == 1
    after = pass_after_queue(store, False, start)
    assert after.job is not None and start.jobs == [after.job] and not after.in_flight


def test_nothing_new_and_nothing_waiting_starts_nothing(tmp_path: Path) -> None:
    store = LearningStore.open(tmp_path / "learning")
    start = Starts(store)
    after = pass_after_queue(store, False, start)
    assert after.job is None and not after.in_flight and start.jobs == []
