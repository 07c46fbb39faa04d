"""Figure 12: peak RSS of a reflect pass whose model sends a 600 MB reply.

The pass is the real one as a sidecar detaches it — `python -m
mecha.sidecar pass reflect --job ID` in its own process, with the store and
the harness's model options in its environment — over one session with one
intervention, against the scripted model server over real HTTP
(`tests/model_server.py`, in this process: its memory is not the pass's).
The server streams the reply (`huge`: a reflector answer whose lesson runs
on for 600 MB) and stops writing when the pass hangs up.

Each run's peak RSS is the pass process's own (its highest `VmHWM` while it ran),
in three shapes, interleaved:

- **the reply, unsized** (the subject): no `Content-Length`, so the pass can
  only learn how large the body is by reading it — the worst case;
- **the reply, sized**: `Content-Length` declares the 600 MB up front (a note);
- **a small reply** (the baseline): the same pass answered with a lesson
  of one sentence, the floor of any pass at all;
- **the learn pass** (a note), answered with a rule set whose one rule runs
  on for 600 MB, unsized.

Goal: ≤ 300 MB. Once, reading a 600 MB reply whole took a pass to 1,833 MB.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import Figure, child_env, interleaved, median, python

REPLY_MB = 600
GOAL_MB = 300
#: The reflector answer the reply opens and closes as: its lesson is the fill.
HEAD = '{"skip": false, "reflexion": "'
FILL = "All work and no play makes a long lesson. "
TAIL = '", "error_type": "other", "confidence": 0.8}'
#: The learner's answer, likewise: its one rule is the fill.
LEARN_HEAD = '{"rules": [{"rule": "'
LEARN_TAIL = '", "based_on": ["R1"], "replaces": [], "confidence": 0.7, "based_on_count": 2}], "dropped": []}'
#: The job's id in every store (each run has a store of its own).
JOB_ID = "20260101T000000-reflect-bench12-1"


@dataclass(frozen=True)
class PassRun:
    """One pass process: its exit code, peak RSS (KiB), final job record
    and log."""

    code: int
    maxrss_kib: int
    job: dict[str, Any]
    log: str


def huge_reply(sized: bool, megabytes: int = REPLY_MB, *, learner: bool = False) -> Any:
    """The reply, as the reflector's answer (or with `learner`, the learner's)."""
    from tests.model_server import huge

    head, tail = (LEARN_HEAD, LEARN_TAIL) if learner else (HEAD, TAIL)
    return huge(head, FILL, megabytes * 1_000_000 // len(FILL), tail, sized=sized)


def seed_store(root: Path, words: str = "Only touch the docs folder.") -> None:
    """A store whose inbox holds one clean session with one steer, and the
    job record a sidecar writes before it spawns a pass."""
    from mecha.core.identity import now
    from mecha.core.sessions.transcript import Block, Message, Taint, TaintCheckpoint
    from mecha.core.store import jobs as jobs_mod
    from mecha.core.store.inbox import enqueue, session_entry
    from mecha.core.store.learning_store import LearningStore

    store = LearningStore.open(root)
    messages = [
        Message.user("Tidy the docs."),
        Message.assistant([Block.tool_use("t1", "fs_read", {"path": "a.md"})]),
        Message.tool_results([Block.tool_result("t1", "contents"), Block.text_block(words)]),
        Message.assistant("Done."),
    ]
    enqueue(store, session_entry("bench-huge-reply", messages, [TaintCheckpoint(at=0, taint=Taint())]))
    jobs_mod.write_job(root, jobs_mod.Job(id=JOB_ID, kind="reflect", state="running", started_at=now()))


def seed_learn_store(root: Path) -> None:
    """A store holding two learnable reflections for the learn pass, and
    the job record a sidecar writes before it spawns the pass."""
    from mecha.core.domain.reflexion import Origin, Reflexion
    from mecha.core.identity import now
    from mecha.core.store import jobs as jobs_mod
    from mecha.core.store.learning_store import LearningStore

    store = LearningStore.open(root)
    store.append_reflexions([
        Reflexion(id=f"pool-{i}", domain="behavior", session_id=f"s{i}", trigger="steer", context="ctx",
                  intervention="Only touch the docs folder.", created_at=now(), origin=Origin.CLEAN,
                  reflexion_text=f"Only touch the docs folder unless told otherwise, part {i}.")
        for i in range(2)
    ])
    store.commit("bench: a learnable pool")
    jobs_mod.write_job(root, jobs_mod.Job(id=JOB_ID, kind="learn", domain="behavior", state="running", started_at=now()))


def model_options(url: str) -> dict[str, Any]:
    return {"api": "openai", "baseUrl": url, "model": "scripted-model", "timeoutS": 30, "maxRetries": 1, "maxBackoffS": 0.05}


def run_pass_process(
    root: Path, url: str, *, env: dict[str, str] | None = None, timeout_s: float = 120.0, kind: str = "reflect"
) -> PassRun:
    """Run the reflect pass (or with `kind="learn"`, the learn pass of the
    `behavior` domain) over `root` as its own process, its model at `url`;
    wait for it and return what it came to."""
    pass_env = dict(child_env() if env is None else env)
    pass_env.update(
        MECHA_LEARNING_DIR=str(root),
        MECHA_SIDECAR_CONFIG=str(root.parent / "no-such-sidecar.toml"),
        MECHA_MODEL_OPTIONS=json.dumps(model_options(url)),
    )
    log = root.parent / f"{root.name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [python(), "-m", "mecha.sidecar", "pass", kind, "--job", JOB_ID,
             *(["--domain", "behavior", "--min", "1"] if kind == "learn" else [])],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=root, env=pass_env,
        )
        code, maxrss = _wait(proc, timeout_s)
    job = json.loads((root / "jobs" / f"{JOB_ID}.json").read_bytes())
    return PassRun(code=code, maxrss_kib=maxrss, job=job, log=log.read_text(errors="replace"))


def _wait(proc: subprocess.Popen[bytes], timeout_s: float) -> tuple[int, int]:
    """Reap `proc`, killing it past `timeout_s`; its exit code and its own
    peak RSS (KiB): the highest `VmHWM` its /proc status showed while it ran.
    Not `wait4`'s `ru_maxrss`: a child's counts what its parent held when
    it was forked, so later in a bench run, after figures that grew this
    process, every pass read as the bench's own 250 MiB."""
    import time

    deadline = time.monotonic() + timeout_s
    peak = 0
    while True:
        peak = max(peak, _hwm_kib(proc.pid))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, peak or usage.ru_maxrss
        if time.monotonic() > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            raise TimeoutError(f"the pass ran past {timeout_s:.0f}s (peak RSS {peak} KiB)")
        time.sleep(0.01)


def _hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def run(rounds: int) -> list[Figure]:
    from tests.model_server import ModelServer, lessons_responder

    got: dict[str, list[PassRun]] = {"small": [], "unsized": [], "sized": [], "learn": []}
    sent: dict[str, list[int]] = {"unsized": [], "sized": [], "learn": []}
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp, ModelServer(responder=lessons_responder) as server:
        runs = 0

        def one(shape: str) -> Callable[[], float]:
            def go() -> float:
                nonlocal runs
                runs += 1
                root = Path(tmp) / f"store-{runs}"
                (seed_learn_store if shape == "learn" else seed_store)(root)
                before = server.sent
                if shape != "small":
                    server.script(huge_reply(sized=shape == "sized", learner=shape == "learn"))
                r = run_pass_process(root, server.url, kind="learn" if shape == "learn" else "reflect")
                if shape == "small":
                    assert r.job["state"] == "done", r.job
                else:
                    assert r.job["state"] == "failed" and r.job["outcome"].startswith("UnusableReply:"), r.job
                    sent[shape].append(server.sent - before)
                got[shape].append(r)
                return float(r.maxrss_kib)

            return go

        interleaved(rounds, {s: one(s) for s in ("small", "unsized", "sized", "learn")})

    def mib(shape: str) -> float:
        return median(r.maxrss_kib for r in got[shape]) / 1024

    subject, baseline, sized, learn = mib("unsized"), mib("small"), mib("sized"), mib("learn")
    read_kb = median(sent["unsized"]) / 1e3
    return [
        Figure(
            key="huge_reply_rss",
            title=f"peak RSS of a reflect pass process whose model sends a {REPLY_MB} MB reply",
            subject=subject,
            baseline=baseline,
            unit="MiB",
            subject_label="pass, reply unsized",
            baseline_label="same pass, a one-sentence reply",
            ratio=subject / baseline,
            goal=f"≤ {GOAL_MB} MB",
            met=subject * 2**20 <= GOAL_MB * 1e6,
            notes=[
                f"with Content-Length declared: {sized:.1f} MiB; the server got {read_kb:.0f} kB of "
                f"{REPLY_MB} MB out before the unsized pass hung up",
                f"a learn pass answered the same way, unsized: {learn:.1f} MiB",
            ],
            extra={
                "rounds": rounds,
                "unsized_rss_mib": subject,
                "sized_rss_mib": sized,
                "small_rss_mib": baseline,
                "learn_rss_mib": learn,
                "unsized_bytes_sent": sent["unsized"],
                "sized_bytes_sent": sent["sized"],
                "learn_bytes_sent": sent["learn"],
                "outcome": got["unsized"][0].job["outcome"],
            },
        )
    ]


if __name__ == "__main__":
    for f in run(1):
        print(json.dumps(f.__dict__, default=str))
