"""A 600 MB reply to a real pass process, over real HTTP.

The same pass process and server as benchmark figure 12
(`tests/bench/huge_reply.py`), asserting what the figure does not: the pass
ends `failed` with the reply named an `UnusableReply` (what bound it broke,
and that it was not retried), it read a few megabytes of the 600, and the
store is whole — nothing written, nothing half-written, the session still
waiting in the inbox, the writer lock free — so the next pass against a
healthy model finishes the work.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from mecha.core.learning.reflection import BEHAVIOR_CONTRACT
from mecha.core.providers._http import reply_byte_bound
from mecha.core.store.inbox import inbox_dir, list_set_aside
from mecha.core.store.learning_store import LearningStore
from tests.bench.huge_reply import REPLY_MB, huge_reply, run_pass_process, seed_learn_store, seed_store
from tests.e2e.conftest import clean_env
from tests.model_server import ModelServer, lesson_for, lessons_responder

WORDS = "Only touch the docs folder."


def _files(root: Path) -> dict[str, bytes]:
    """Every file of the store outside git's own directory and the jobs
    (the pass rewrites its job record and log by design)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and rel.parts[0] not in (".git", "jobs"):
            out[str(rel)] = path.read_bytes()
    return out


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("sized", [False, True], ids=["unsized", "content-length"])
def test_a_600_mb_reply_ends_the_pass_process_as_a_named_unusable_reply_and_the_store_is_whole(
    tmp_path: Path, sized: bool
) -> None:
    root = tmp_path / "learning"
    seed_store(root, WORDS)
    store = LearningStore(root)
    [entry] = [p.name for p in inbox_dir(store).iterdir() if not p.name.startswith(".")]
    before = _files(root)
    assert _git(root, "rev-list", "--all", "--count") == "0\n"
    env = clean_env(tmp_path)
    with ModelServer() as server:
        server.script(huge_reply(sized=sized))
        r = run_pass_process(root, server.url, env=env, timeout_s=60)
        assert r.code == 1, r.log[-2000:]
        assert r.job["state"] == "failed" and r.job.get("pid") is None and r.job["finished_at"], r.job
        outcome = r.job["outcome"]
        assert outcome.startswith("UnusableReply: no usable answer from the model"), outcome
        # The bound follows the reflector's reply budget, which its contract sizes.
        budget = BEHAVIOR_CONTRACT.max_tokens
        assert f"the reply body is larger than {reply_byte_bound(budget):,} bytes" in outcome
        assert f"max_tokens ({budget})" in outcome
        assert "not retried" in outcome and "1 intervention(s) pending" in outcome
        if sized:
            assert "declares 6" in outcome and "none of it read" in outcome
        assert len(server.completions()) == 1, "an oversized reply is not asked for again"
        assert server.sent < 16 << 20 < REPLY_MB * 1_000_000, f"{server.sent:,} bytes sent"
        assert "Traceback" not in r.log, r.log[-2000:]

        # Whole: the only change is the attempts ledger's note of one
        # unusable answer (and the writer lock's file, made on first use),
        # committed as such; nothing was set aside, nothing is left
        # uncommitted, the entry waits unclaimed, and the lock is free.
        after = _files(root)
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        assert "reflect_attempts.jsonl" in changed and changed <= {"reflect_attempts.jsonl", ".lock"}, changed
        assert b"larger than" in after["reflect_attempts.jsonl"]
        assert [p.name for p in inbox_dir(store).iterdir() if not p.name.startswith(".")] == [entry]
        assert list_set_aside(store) == [] and store.reflexions() == []
        assert _git(root, "log", "--format=%s") == "reflect session bench-huge-reply: 0 reflection(s) so far, 1 intervention(s) pending\n"
        assert _git(root, "status", "--porcelain") == "" and _git(root, "fsck", "--no-progress") == ""
        lock = store.try_lock()
        assert lock is not None, "the pass left the writer lock held"
        lock.release()

        server.responder = lessons_responder
        again = run_pass_process(root, server.url, env=env, timeout_s=60)
    assert again.job["state"] == "done", again.job
    [kept] = store.reflexions()
    assert kept.reflexion_text == lesson_for(WORDS, edit=False)
    assert "bench-huge-reply" in store.mined_sessions()
    assert not [p for p in inbox_dir(store).iterdir() if not p.name.startswith(".")]
    assert os.listdir(root / "jobs")


def test_a_600_mb_reply_to_the_learn_pass_process_leaves_the_pool_whole_and_proposes_nothing(tmp_path: Path) -> None:
    from mecha.core.learning.learn import learnable_pool

    root = tmp_path / "learning"
    seed_learn_store(root)
    store = LearningStore(root)
    env = clean_env(tmp_path)
    with ModelServer() as server:
        server.script(huge_reply(sized=False, learner=True))
        r = run_pass_process(root, server.url, env=env, timeout_s=60, kind="learn")
        assert r.code == 1 and r.job["state"] == "failed", r.log[-2000:]
        outcome = r.job["outcome"]
        assert outcome.startswith("UnusableReply: ") and re.search(r"larger than [\d,]+ bytes, .*max_tokens \(\d+\)", outcome)
        assert len(server.completions()) == 1 and server.sent < 16 << 20
        assert "Traceback" not in r.log, r.log[-2000:]
        assert len(learnable_pool(store, "behavior")) == 2 and store.proposals() == []
        assert _git(root, "status", "--porcelain") == ""
        lock = store.try_lock()
        assert lock is not None, "the pass left the writer lock held"
        lock.release()

        server.responder = lessons_responder
        again = run_pass_process(root, server.url, env=env, timeout_s=60, kind="learn")
    assert again.job["state"] == "done" and again.job["proposal_id"], again.job
    [proposal] = store.proposals()
    assert proposal.status == "pending" and len(proposal.rules) >= 1
