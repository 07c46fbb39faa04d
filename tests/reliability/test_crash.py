"""Crashes: a pass or an accept SIGKILLed at every durable step it takes.

Each operation — a reflect pass, a learn pass, an accept, a reject, a
proposed retirement — is first run once in a child process that records its
durable steps (every write, rename, unlink and git command under the store;
see `crashkit`). Then, for every step and every way of dying there, a fresh
copy of the same store is handed to a new child that stops dead at exactly
that point and is SIGKILLed. Nothing is timing-lucky: the child reports the
step it stopped at, and the test checks it is the step the trace named.

After each kill the store must load; nothing written before the kill may be
lost; no temp file may be read as data; the writer lock must be free; a
half-finished job must read as failed, never as running for ever. Then the
same operation is run again, unharmed, and must finish the work exactly once:
no reflection lost, none doubled, every session mined once.

Last, real `python -m mecha.sidecar pass …` processes are killed in the
middle of a model call (the fake model stalls) and a later pass picks up the
work.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mecha.core.domain.reflexion import Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.identity import now
from mecha.core.learning.learn import learnable_pool
from mecha.core.sessions.outbox import OutboxItem
from mecha.core.sessions.survey import survey_draft
from mecha.core.sessions.transcript import Block, Message, Taint, TaintCheckpoint
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.inbox import DraftEntry, enqueue, session_entry
from mecha.core.store.learning_store import LearningStore, Proposal
from tests import builders
from tests.builders import write_learned_rules
from tests.e2e.conftest import REPO, WAIT_S, clean_env, wait_until

#: Figures the report quotes; filled as the tests run.
KILL_POINTS: dict[str, int] = {}

CLEAN = [TaintCheckpoint(at=0, taint=Taint())]
STEERS = ("Only touch docs/RELEASE.md, nothing else.", "Ask before running any shell command.")
SESSION = "crash-session"
DRAFT = "crash-draft"


# ─── the child that dies on cue ─────────────────────────────────────────────


@dataclass
class Trial:
    pid: int
    messages: list[dict[str, Any]] = field(default_factory=list)

    def last(self, key: str) -> dict[str, Any] | None:
        for m in reversed(self.messages):
            if key in m:
                return m
        return None


class Zygote:
    """`python -m tests.reliability.crashkit`: forks one child per trial."""

    def __init__(self, tmp: Path):
        self.log = tmp / "crashkit.log"
        self._log = open(self.log, "wb")
        env = clean_env(tmp)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.crashkit"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=REPO,
            env=env,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name="crashkit-reader").start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(json.loads(raw))

    def _next(self) -> dict[str, Any]:
        try:
            return self.lines.get(timeout=WAIT_S)
        except queue.Empty:
            raise AssertionError(f"crashkit said nothing for {WAIT_S:.0f}s; log: {self.tail()}") from None

    def tail(self) -> str:
        self._log.flush()
        return self.log.read_text(errors="replace")[-3000:]

    def run(self, op: str, root: Path, args: dict[str, Any], kill: dict[str, Any] | None = None) -> Trial:
        assert self.proc.stdin is not None
        cmd = {"op": op, "root": str(root), "args": args, "kill": kill}
        self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
        self.proc.stdin.flush()
        first = self._next()
        trial = Trial(pid=first["pid"])
        while True:
            msg = self._next()
            trial.messages.append(msg)
            if "hit" in msg:
                os.kill(trial.pid, signal.SIGKILL)
            if "exit" in msg:
                return trial

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=WAIT_S)
        self._log.close()


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    tmp = tmp_path_factory.mktemp("crashkit")
    (tmp / "home").mkdir()
    z = Zygote(tmp)
    yield z
    z.close()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


# ─── the stores each operation starts from ──────────────────────────────────

OLD_RULES = [
    Rule(text="Keep diffs small.", id="r-old-1", created_at="2026-11-01T00:00:00.000000Z"),
    Rule(text="Say which files you touched.", id="r-old-2", created_at="2026-11-01T00:00:00.000000Z"),
]
NEW_RULES = [
    *OLD_RULES,
    Rule(text="Ask before deleting anything.", id="r-new-1", created_at="2026-11-02T00:00:00.000000Z", sources=["old-1"]),
]
PROPOSAL_ID = "20261102T000000-c0ffee01"


def _reflexion(n: int, *, session: str = "old-session") -> Reflexion:
    return builders.reflexion(f"old-{n}", f"Say which step of the plan you are on before acting on step {n}.",
                              session_id=session, context=f"context {n}", intervention=f"person said {n}")


def _session_messages() -> list[Message]:
    msgs = [Message.user("Tidy the release notes.")]
    for n, steer in enumerate(STEERS):
        msgs.append(Message.assistant([Block.tool_use(f"t{n}", "fs_read", {"n": n})]))
        msgs.append(Message.tool_results([Block.tool_result(f"t{n}", "ok"), Block.text_block(steer)]))
    msgs.append(Message.assistant("Done; only docs/RELEASE.md changed."))
    return msgs


def _draft() -> OutboxItem:
    return OutboxItem(
        id=DRAFT,
        status="sent",
        tool="send_message",
        args={"body": "Hello Sam,\n\nCould you send me the report?\n\nBest regards"},
        args_before={"body": "hey sam can u send the report"},
        session_id="writer-run",
    )


def _base_store(root: Path) -> LearningStore:
    """What every template holds before the operation: three learnable
    reflections, a mined session, learned rules, all committed."""
    store = LearningStore.open(root)
    store.append_reflexions([_reflexion(n) for n in range(3)])
    store.mark_mined("old-session")
    write_learned_rules(store, "behavior", OLD_RULES)
    assert store.commit("seed the store")
    return store


def _job(root: Path, job_id: str, kind: str, domain: str | None = None) -> None:
    jobs_mod.write_job(root, jobs_mod.Job(id=job_id, kind=kind, domain=domain, state="running", started_at=now()))  # type: ignore[arg-type]


def template_handover(root: Path) -> dict[str, Any]:
    _base_store(root)
    messages = msgspec.to_builtins(_session_messages())
    return {"session": SESSION, "messages": messages, "timeline": msgspec.to_builtins(CLEAN)}


def template_reflect(root: Path) -> dict[str, Any]:
    store = _base_store(root)
    enqueue(store, session_entry(SESSION, _session_messages(), CLEAN))
    draft = _draft()
    plan = survey_draft(draft)
    assert plan is not None, "the draft holds an edit"
    enqueue(store, DraftEntry(draft, plan))
    _job(root, "reflect-job", "reflect")
    return {"job": "reflect-job"}


def template_learn(root: Path) -> dict[str, Any]:
    _base_store(root)
    _job(root, "learn-job", "learn", "behavior")
    return {"job": "learn-job", "domain": "behavior"}


def _with_proposal(root: Path) -> LearningStore:
    store = _base_store(root)
    store.write_proposal(
        builders.proposal(
            PROPOSAL_ID, NEW_RULES, rules_before=OLD_RULES, reflexion_ids=["old-0", "old-1", "old-2"],
            evidence="consolidated from 3 learnable reflection(s)", created_at="2026-11-02T00:00:00.000000Z",
        )
    )
    assert store.commit("learn behavior: propose")
    return store


def template_accept(root: Path) -> dict[str, Any]:
    # Its one new rule cites one lesson of its batch of three (`old-1`):
    # the accept uses that one and sends the other two back to the pool.
    _with_proposal(root)
    return {"id": PROPOSAL_ID}


def template_reject(root: Path) -> dict[str, Any]:
    _with_proposal(root)
    # Its one change named wrong: its lesson marked rejected, the rest back in the pool.
    return {"id": PROPOSAL_ID, "reason": "too broad", "wrong": [1]}


def template_retire(root: Path) -> dict[str, Any]:
    _base_store(root)
    return {"domain": "behavior", "rule_id": "r-old-2", "reason": "regressed in two probes"}


# ─── what must hold after a kill ────────────────────────────────────────────


@dataclass
class Snapshot:
    reflections: dict[str, dict[str, Any]]
    mined: set[str]
    mined_outbox: set[str]
    proposals: dict[str, Proposal]
    learned: list[Rule]
    runs: int


def _raw_reflections(root: Path) -> list[dict[str, Any]]:
    """Every line that decodes, as written (a torn line does not)."""
    path = root / "reflections.jsonl"
    out = []
    for line in path.read_bytes().split(b"\n") if path.exists() else []:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def snapshot(root: Path) -> Snapshot:
    store = LearningStore(root)
    # Loading is the first thing checked: each of these raises on a store
    # that a crash left unreadable.
    store.reflexions()
    store.render_block()
    return Snapshot(
        reflections={r["id"]: r for r in _raw_reflections(root)},
        mined=store.mined_sessions(),
        mined_outbox=store.mined_outbox(),
        proposals={p.id: p for p in store.proposals()},
        learned=store.learned_rules("behavior"),
        runs=len(store.runs()),
    )


_SAME = ("domain", "session_id", "trigger", "context", "intervention", "reflexion_text", "origin", "created_at")


def check_nothing_lost(before: Snapshot, after: Snapshot, where: str) -> None:
    for rid, r in before.reflections.items():
        assert rid in after.reflections, f"{where}: reflection {rid} was lost"
        assert {k: after.reflections[rid].get(k) for k in _SAME} == {k: r.get(k) for k in _SAME}, where
        if r.get("is_processed"):
            assert after.reflections[rid].get("is_processed"), f"{where}: {rid} lost its processed mark"
    assert before.mined <= after.mined, f"{where}: mined sessions lost"
    assert before.mined_outbox <= after.mined_outbox, f"{where}: mined drafts lost"
    for pid, p in before.proposals.items():
        assert pid in after.proposals, f"{where}: proposal {pid} was lost"
        q = after.proposals[pid]
        assert (q.rules_before, q.rules, q.reflexion_ids) == (p.rules_before, p.rules, p.reflexion_ids), where
        if p.status != "pending":
            assert q.status == p.status, f"{where}: resolved proposal {pid} changed status"
    assert after.runs >= before.runs, where


def check_store_sound(root: Path, where: str, allowed_rules: list[list[Rule]]) -> None:
    store = LearningStore(root)
    lock = store.try_lock()
    assert lock is not None, f"{where}: the writer lock is still held"
    lock.release()
    # No temp file is read as data: every record a reader returns is backed
    # by a real (non-temp) file, and every temp file is invisible.
    assert {p.id for p in store.proposals()} <= {f.stem for f in (root / "proposals").glob("*.json")}, where
    assert all(not d.endswith(".tmp") for d in store.domains()), where
    job_files = {f.stem for f in (root / "jobs").glob("*.json")}
    assert {j.id for j in jobs_mod.list_jobs(root)} == job_files, where
    assert store.learned_rules("behavior") in allowed_rules, f"{where}: learned rules are neither old nor new"
    block = store.render_block().block or ""
    assert ".tmp" not in block, where


def check_job_settled(root: Path, job_id: str, where: str) -> None:
    job = jobs_mod.read_job(root, job_id)
    if job.state == "running":
        # Killed before it recorded its pid: it reads as running only within
        # the spawn grace, then as failed — never as running for ever.
        assert job.pid is None, f"{where}: a dead pass still reads as running: {job}"
        late = msgspec.structs.replace(job, started_at="2000-01-01T00:00:00.000000Z")
        assert jobs_mod.settle(late).state == "failed", where
    else:
        assert job.state in ("failed", "done"), where
        if job.state == "failed":
            assert job.outcome, where


def wait_for_git(root: Path, trial: Trial, where: str) -> None:
    hit = trial.last("hit")
    assert hit is not None
    if hit.get("git_pid"):
        wait_until(lambda: not _alive(hit["git_pid"]), f"{where}: the orphaned git to finish", timeout=WAIT_S)
    index_lock = root / ".git" / "index.lock"
    if hit["phase"] == "with-git":
        # Git died holding its index lock. The machine comes back later: the
        # lock is old by the time the next pass runs.
        assert index_lock.exists(), where
        an_hour_ago = time.time() - 3600
        os.utime(index_lock, (an_hour_ago, an_hour_ago))
    else:
        assert not index_lock.exists(), f"{where}: git left its index lock behind"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(root / ".git"), "--work-tree", str(root), *args],
        capture_output=True, text=True, timeout=WAIT_S, check=True,
    ).stdout


# ─── the final state of a recovered operation ───────────────────────────────


def final_reflect(root: Path, where: str) -> None:
    raw = _raw_reflections(root)
    session = [r for r in raw if r["session_id"] == SESSION]
    assert sorted(r["intervention"] for r in session) == sorted(STEERS), f"{where}: {[r['intervention'] for r in session]}"
    drafts = [r for r in raw if r["trigger"] == "edit"]
    assert len(drafts) == 1 and "Hello Sam" in drafts[0]["intervention"], f"{where}: {len(drafts)} edit reflections"
    mined = [line.strip() for line in (root / "mined.jsonl").read_text().splitlines()]
    assert mined.count(SESSION) == 1, f"{where}: mined {mined}"
    outbox = [line.strip() for line in (root / "mined_outbox.jsonl").read_text().splitlines()]
    assert outbox.count(DRAFT) == 1, f"{where}: {outbox}"
    left = [p.name for p in (root / "inbox").iterdir() if not p.name.startswith(".") and not p.name.endswith(".tmp")]
    assert left == [], f"{where}: inbox still holds {left}"


def final_handover(root: Path, where: str) -> None:
    raw = _raw_reflections(root)
    session = [r for r in raw if r["session_id"] == SESSION]
    assert sorted(r["intervention"] for r in session) == sorted(STEERS), f"{where}: {[r['intervention'] for r in session]}"
    mined = [line.strip() for line in (root / "mined.jsonl").read_text().splitlines()]
    assert mined.count(SESSION) == 1, f"{where}: mined {mined}"
    left = [p.name for p in (root / "inbox").iterdir() if not p.name.startswith(".") and not p.name.endswith(".tmp")]
    assert left == [], f"{where}: inbox still holds {left}"


def final_learn(root: Path, where: str) -> None:
    store = LearningStore(root)
    pending = [p for p in store.proposals() if p.status == "pending"]
    assert len(pending) == 1, f"{where}: {pending}"
    assert sorted(pending[0].reflexion_ids) == ["old-0", "old-1", "old-2"], where
    assert all(not r.is_processed for r in store.reflexions()), where
    assert store.learned_rules("behavior") == OLD_RULES, where


def final_accept(root: Path, where: str) -> None:
    store = LearningStore(root)
    p = store.proposal(PROPOSAL_ID)
    assert p.status == "accepted", f"{where}: {p.status}"
    assert store.learned_rules("behavior") == NEW_RULES, where
    # Only the lesson its new rule cites is used up; the batch's other two
    # were not used, so they wait in the pool for the next learn pass — a
    # kill anywhere must neither mark them nor lose the one mark.
    marks = {r.id: (r.is_processed, r.rejected) for r in store.reflexions()}
    assert marks == {"old-0": (False, None), "old-1": (True, None), "old-2": (False, None)}, f"{where}: {marks}"
    assert [r.id for r in learnable_pool(store, "behavior")] == ["old-0", "old-2"], where
    # Finished once: the history holds one accept, saying the other two are back.
    accepts = [m for m in _git(root, "log", "--format=%B%x00").split("\0") if m.strip().startswith(f"accept proposal {PROPOSAL_ID}")]
    assert len(accepts) == 1, f"{where}: {len(accepts)} accepts in the history"
    assert "1 reflection(s) used and marked processed; 2 back in the pool" in accepts[0], f"{where}: {accepts[0]}"


def final_reject(root: Path, where: str) -> None:
    store = LearningStore(root)
    p = store.proposal(PROPOSAL_ID)
    assert p.status == "rejected" and p.reason == "too broad", f"{where}: {p}"
    assert store.learned_rules("behavior") == OLD_RULES, where
    marks = {r.id: (r.is_processed, r.rejected) for r in store.reflexions() if r.id in p.reflexion_ids}
    assert marks == {"old-0": (False, None), "old-1": (True, "too broad"), "old-2": (False, None)}, where


def final_retire(root: Path, where: str) -> None:
    store = LearningStore(root)
    pending = [p for p in store.proposals() if p.status == "pending"]
    assert pending, where
    for p in pending:
        [retired] = [r for r in p.rules if r.retired_at is not None]
        assert retired.id == "r-old-2" and p.rules_before == OLD_RULES, where
    assert store.learned_rules("behavior") == OLD_RULES, where


@dataclass
class Op:
    name: str
    template: Callable[[Path], dict[str, Any]]
    final: Callable[[Path, str], None]
    allowed_rules: list[list[Rule]]
    #: The job a pass records itself under, if the op is a pass.
    job: bool = False
    #: May the retry find the work already finished (and say so)?
    retry_may_refuse: tuple[str, ...] = ()


OPS = [
    Op("handover", template_handover, final_handover, [OLD_RULES]),
    Op("reflect", template_reflect, final_reflect, [OLD_RULES], job=True),
    Op("learn", template_learn, final_learn, [OLD_RULES], job=True),
    Op("accept", template_accept, final_accept, [OLD_RULES, NEW_RULES], retry_may_refuse=("NotPending",)),
    Op("reject", template_reject, final_reject, [OLD_RULES], retry_may_refuse=("NotPending",)),
    Op("retire", template_retire, final_retire, [OLD_RULES]),
]


def phases(event: str) -> list[str]:
    """The distinct states a SIGKILL can leave at one step. `start` of a step
    is the same state as `after` of the one before, so only the first step
    gets it."""
    if event.startswith("write "):
        return ["torn", "after"]
    if event.startswith("git "):
        return ["during", "with-git", "after"]
    return ["after"]


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_a_kill_at_any_step_loses_nothing_and_a_retry_finishes_the_work(op: Op, zygote: Zygote, tmp_path: Path) -> None:
    template = tmp_path / "template"
    args = op.template(template)
    before = snapshot(template)

    # The trace: the op, run whole, names its durable steps in order.
    traced = tmp_path / "traced"
    shutil.copytree(template, traced, symlinks=True)
    trace = zygote.run(op.name, traced, args)
    done = trace.last("done")
    assert done is not None, f"the traced {op.name} failed: {trace.messages}; log: {zygote.tail()}"
    events: list[str] = done["events"]
    op.final(traced, f"{op.name} (uninterrupted)")
    assert any(e.startswith("git commit") for e in events), events
    points = [(0, "start")] + [(i, ph) for i, e in enumerate(events) for ph in phases(e)]

    failures: list[str] = []
    for n, (index, phase) in enumerate(points):
        where = f"{op.name}: kill {phase} step {index} ({events[index]})"
        root = tmp_path / f"k{n}"
        shutil.copytree(template, root, symlinks=True)
        try:
            trial = zygote.run(op.name, root, args, {"at": index, "phase": phase})
            hit = trial.last("hit")
            assert hit is not None, f"{where}: the child never reached its kill point: {trial.messages}"
            assert hit["event"] == events[index], f"{where}: stopped at {hit['event']} instead"
            assert os.WIFSIGNALED(trial.last("exit")["exit"]), where
            wait_for_git(root, trial, where)

            after_kill = snapshot(root)
            check_nothing_lost(before, after_kill, where)
            check_store_sound(root, where, op.allowed_rules)
            if op.job:
                check_job_settled(root, args["job"], where)

            # The same work again, unharmed: it must finish, exactly once.
            retry_args = dict(args)
            if op.job:
                retry_args["job"] = f"retry-{n}"
                _job(root, retry_args["job"], op.name, args.get("domain"))
            retry = zygote.run(op.name, root, retry_args)
            finished = retry.last("done")
            refused = retry.last("error")
            if finished is None:
                assert refused is not None and refused["error"].split(":")[0] in op.retry_may_refuse, (
                    f"{where}: the retry failed: {retry.messages}"
                )
            elif op.job:
                assert finished["result"]["job"]["state"] == "done", f"{where}: retry {finished['result']}"
            after_retry = snapshot(root)
            check_nothing_lost(after_kill, after_retry, where + " then retried")
            check_store_sound(root, where + " then retried", op.allowed_rules + [NEW_RULES])
            op.final(root, where + " then retried")
            # The history goes on: the next commit takes in everything, and
            # neither temp files nor process state enter it.
            store = LearningStore(root)
            with store.lock():
                store.commit("after the crash")
            assert _git(root, "status", "--porcelain") == "", f"{where}: the store's history stopped"
            tracked = _git(root, "ls-files").split()
            assert not [t for t in tracked if t.endswith(".tmp") or t.startswith(("inbox/", "jobs/", ".lock"))], where
        except AssertionError as exc:
            failures.append(str(exc).splitlines()[0])
        finally:
            shutil.rmtree(root, ignore_errors=True)

    KILL_POINTS[op.name] = len(points)
    print(f"\n{op.name}: {len(points)} kill points over {len(events)} steps; {len(failures)} failed")
    assert not failures, "\n".join(failures)


# ─── real passes, killed in the middle of a model call ──────────────────────

from tests.e2e.conftest import (  # noqa: E402 - fixtures for the real-process tests below
    _no_pass_left_running,  # noqa: F401 - autouse: no pass outlives its test
    env,  # noqa: F401
    model_options,
    spawn,  # noqa: F401
    steer_session,
    store_dir,  # noqa: F401
    store_ids,
    store_lines,
)
from tests.model_server import ModelServer, lessons_responder, stall  # noqa: E402


def _pass_pid(store: Path, job_id: str) -> int:
    def pid() -> int | None:
        try:
            return json.loads((store / "jobs" / f"{job_id}.json").read_text()).get("pid")
        except (OSError, ValueError):
            return None

    return wait_until(pid, f"job {job_id} to record its pid")


def _inbox(store: Path) -> list[str]:
    return sorted(p.name for p in (store / "inbox").iterdir() if not p.name.startswith("."))


def test_a_reflect_pass_killed_mid_model_call_reads_failed_and_its_session_waits(spawn, store_dir):  # noqa: F811
    with ModelServer(responder=lessons_responder) as server:
        server.script(stall(10))
        sc = spawn()
        sc.initialize(store_dir, {**model_options(server), "timeoutS": 60})
        ended = sc.request(
            "mecha/sessionEnded",
            {"session_id": "killed", "messages": steer_session("Leave the tests alone."), "taint_timeline": [
                {"at": 0, "taint": {"private": False, "untrusted": False}}]},
        )
        job_id = ended["job"]["id"]
        pid = _pass_pid(store_dir, job_id)
        wait_until(lambda: server.completions(), "the pass to call the model")
        os.kill(pid, signal.SIGKILL)

        finished = sc.job_finished(job_id)
        assert finished["state"] == "failed", finished
        assert "killed or crashed" in finished["outcome"]
        listed = {j["id"]: j for j in sc.request("mecha/jobs", {})["jobs"]}
        assert listed[job_id]["state"] == "failed"
        assert jobs_mod.read_job(store_dir, job_id).state == "failed"
        # Nothing was written for it, the lock is free, and its transcript is
        # still in the inbox (claimed by a pass that is gone).
        assert store_lines(store_dir, "reflections.jsonl") == []
        assert store_ids(store_dir, "mined.jsonl") == []
        [waiting] = _inbox(store_dir)
        assert waiting.endswith(f"-killed.json.claim-{pid}"), waiting
        lock = LearningStore(store_dir).try_lock()
        assert lock is not None
        lock.release()

        # The next pass, with the model healthy, takes the orphaned work too.
        again = sc.request(
            "mecha/sessionEnded",
            {"session_id": "next", "messages": steer_session("Keep the changelog short."), "taint_timeline": [
                {"at": 0, "taint": {"private": False, "untrusted": False}}]},
        )
        done = sc.job_finished(again["job"]["id"])
        assert done["state"] == "done" and "from 2 session(s)" in done["outcome"], done
        by_session = {r["session_id"]: r["intervention"] for r in store_lines(store_dir, "reflections.jsonl")}
        assert by_session == {"killed": "Leave the tests alone.", "next": "Keep the changelog short."}
        assert sorted(store_ids(store_dir, "mined.jsonl")) == ["killed", "next"]
        assert _inbox(store_dir) == []
        assert sc.shutdown() == 0


def test_a_learn_pass_killed_mid_model_call_reads_failed_and_leaves_the_pool_whole(spawn, store_dir):  # noqa: F811
    store = _base_store(store_dir)
    pool = [r.id for r in learnable_pool(store, "behavior")]
    assert len(pool) == 3
    with ModelServer(responder=lessons_responder) as server:
        server.script(stall(10))
        sc = spawn()
        sc.initialize(store_dir, {**model_options(server), "timeoutS": 60})
        job_id = sc.request("mecha/learn", {"domain": "behavior"})["job"]["id"]
        pid = _pass_pid(store_dir, job_id)
        wait_until(lambda: server.completions(), "the learn pass to call the model")
        os.kill(pid, signal.SIGKILL)

        finished = sc.job_finished(job_id)
        assert finished["state"] == "failed" and "killed or crashed" in finished["outcome"], finished
        assert {j["id"]: j["state"] for j in sc.request("mecha/jobs", {})["jobs"]}[job_id] == "failed"
        assert store.proposals() == [] and store.runs() == []
        assert [r.id for r in learnable_pool(store, "behavior")] == pool
        assert store.learned_rules("behavior") == OLD_RULES
        lock = store.try_lock()
        assert lock is not None
        lock.release()

        later = sc.request("mecha/learn", {"domain": "behavior"})
        done = sc.job_finished(later["job"]["id"])
        assert done["state"] == "done" and done["proposal_id"], done
        assert sorted(store.proposal(done["proposal_id"]).reflexion_ids) == sorted(pool)
        assert sc.shutdown() == 0


def test_a_young_git_index_lock_is_left_alone_and_an_old_one_is_cleared(tmp_path: Path) -> None:
    # A young lock may be a person's own git at work in the store: a commit
    # skips (nothing is lost, the next one takes the change in). An old one
    # is a dead git's, and would otherwise stop the history for good.
    store = _base_store(tmp_path / "learning")
    index_lock = store.root / ".git" / "index.lock"
    index_lock.write_bytes(b"")
    store.append_reflexions([_reflexion(9, session="later")])
    with store.lock():
        assert store.commit("while a person's git holds the index") is False
    assert index_lock.exists()
    old = time.time() - 3600
    os.utime(index_lock, (old, old))
    with store.lock():
        assert store.commit("after the dead git's lock aged") is True
    assert not index_lock.exists()
    assert _git(store.root, "status", "--porcelain") == ""
    assert "old-9" in _git(store.root, "show", "HEAD:reflections.jsonl")


@pytest.mark.parametrize("lock", ["HEAD.lock", "refs/heads/main.lock", "packed-refs.lock", "index.lock", "config.lock"])
def test_every_lock_a_dead_git_leaves_is_cleared_and_the_history_goes_on(tmp_path: Path, lock: str) -> None:
    # Pins: a killed `git commit` left `HEAD.lock`, which nothing cleared;
    # every later commit failed for good while the store went on changing.
    store = _base_store(tmp_path / "learning")
    left = store.root / ".git" / lock
    left.write_bytes(b"")
    eleven_minutes_ago = time.time() - 11 * 60
    os.utime(left, (eleven_minutes_ago, eleven_minutes_ago))
    store.append_reflexions([_reflexion(9, session="later")])
    with store.lock():
        assert store.commit("after a dead git's lock") is True
    assert not left.exists()
    assert _git(store.root, "status", "--porcelain") == ""
    assert "old-9" in _git(store.root, "show", "HEAD:reflections.jsonl")


def test_the_locks_of_mechas_own_killed_commit_are_cleared_within_seconds(tmp_path: Path) -> None:
    # Pins: a kill loop over accepts whose history stopped at the first
    # killed commit; the in-flight marker says the lock is a dead git's.
    store = _base_store(tmp_path / "learning")
    store.append_reflexions([_reflexion(8, session="later")])
    real_run = subprocess.run

    def killed_git(argv: list[str], *args: Any, **kw: Any) -> Any:
        if argv[:1] == ["git"] and "commit" in argv:
            (store.root / ".git" / "HEAD.lock").write_bytes(b"")
            raise subprocess.TimeoutExpired(argv, 0)  # git gone mid-commit, its lock left
        return real_run(argv, *args, **kw)

    with store.lock():
        subprocess.run = killed_git  # type: ignore[assignment]
        try:
            marker = store.root / ".git" / "mecha-commit-in-flight"
            assert store.commit("killed") is False
        finally:
            subprocess.run = real_run  # type: ignore[assignment]
    marker.write_bytes(b"1\n")  # what a process killed inside git leaves
    ten_s_ago = time.time() - 10
    os.utime(store.root / ".git" / "HEAD.lock", (ten_s_ago, ten_s_ago))
    with store.lock():
        assert store.commit("after the killed commit") is True
    assert not (store.root / ".git" / "HEAD.lock").exists() and not marker.exists()
    assert "old-8" in _git(store.root, "show", "HEAD:reflections.jsonl")


def test_a_commit_tried_while_a_killed_commits_lock_is_young_keeps_it_known_as_mechas(tmp_path: Path) -> None:
    # Pins: the kill loop (200 kills, seed 5) ending with every commit
    # refused behind `index.lock` for ten minutes: the accept right after a
    # killed `git add` found its lock too young to clear, yet removed the
    # in-flight marker (and its own failed try removed the one it wrote),
    # so the lock was taken for a person's git from then on.
    store = _base_store(tmp_path / "learning")
    store.append_reflexions([_reflexion(6, session="later")])
    git_dir = store.root / ".git"
    (git_dir / "index.lock").write_bytes(b"")  # what a process group killed inside `git add` leaves
    (git_dir / "mecha-commit-in-flight").write_bytes(b"1\n")
    with store.lock():
        assert store.commit("right after the kill") is False
    assert (git_dir / "mecha-commit-in-flight").exists(), "the dead commit's marker was dropped"
    ten_s_ago = time.time() - 10
    os.utime(git_dir / "index.lock", (ten_s_ago, ten_s_ago))
    with store.lock():
        assert store.commit("seconds later") is True
    assert not (git_dir / "index.lock").exists() and not (git_dir / "mecha-commit-in-flight").exists()
    assert "old-6" in _git(store.root, "show", "HEAD:reflections.jsonl")


def test_doctor_names_a_git_lock_that_stops_the_history_and_what_waits_outside_it(tmp_path: Path) -> None:
    # Pins: doctor saying "ok git history kept" while every commit failed
    # behind a lock, 17 changed files outside the history.
    from mecha.core.doctor import run_checks

    store = _base_store(tmp_path / "learning")
    (store.root / ".git" / "HEAD.lock").write_bytes(b"")
    store.append_reflexions([_reflexion(7, session="later")])
    with store.lock():
        assert store.commit("while a git holds HEAD") is False
    (git,) = [c for c in run_checks(store.root, env={}) if c.name == "git"]
    assert not git.ok and "HEAD.lock" in git.detail and "1 changed file(s)" in git.detail, git
    (store.root / ".git" / "HEAD.lock").unlink()
    with store.lock():
        assert store.commit("once it is gone") is True
    (git,) = [c for c in run_checks(store.root, env={}) if c.name == "git"]
    assert git.ok, git


# ─── temp files left by a writer that died ──────────────────────────────────


def _dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _plant_temp(directory: Path, name: str, *, age_s: float, data: bytes = b'{"partial": tr') -> Path:
    import time

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(data)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_the_next_writer_sweeps_the_temp_files_a_dead_writer_left_and_keeps_a_live_ones(tmp_path: Path) -> None:
    # Pins: `*.tmp` files (whole transcripts) left in inbox/ and jobs/ by a
    # killed pass or a read-only window, which nothing ever removed.
    from tests.wire.client import SIDECAR_ARGV, Sidecar, clean_env
    from tests.wire.helpers import steered

    root = tmp_path / "learning"
    LearningStore.open(root)
    dead, live = _dead_pid(), os.getpid()
    stale = [
        _plant_temp(root / "inbox", f"20260101T000000-s1.json.{dead}-0badc0de.tmp", age_s=3600),
        _plant_temp(root / "jobs", f"20260101T000000-reflect-aaaaaa-{dead}.json.{dead}-0badc0df.tmp", age_s=3600),
        # Written before temp names carried their writer's pid: age decides.
        _plant_temp(root / "inbox", "20260101T000000-s0.json.deadbeef.tmp", age_s=3600),
    ]
    kept = [
        _plant_temp(root / "inbox", f"20260101T000000-s2.json.{live}-0badc0e0.tmp", age_s=3600),  # its writer lives
        _plant_temp(root / "jobs", f"x.json.{dead}-0badc0e1.tmp", age_s=1),  # too young to judge
        _plant_temp(root / "inbox", "notes.tmp", age_s=3600),  # not a name the store makes
    ]
    sc = Sidecar(SIDECAR_ARGV, env=clean_env(tmp_path), cwd=tmp_path, learning_dir=root)
    try:
        sc.initialize()
        ended = sc.call("mecha/sessionEnded", {"session_id": "sweep-1", "messages": steered(), "taint_timeline": [{"at": 0, "taint": {}}]})
        assert ended["job"] is not None
        sc.notification("mecha/jobFinished", lambda p: p["job"]["id"] == ended["job"]["id"], timeout=30)
    finally:
        sc.close()
    assert [p for p in stale if p.exists()] == []
    assert [p for p in kept if not p.exists()] == []
