"""Long work shows itself: a verb that waits on a pass prints how far it has
got, and a pass that left answers pending ends `done`, saying how they are
retried — a real CLI process, its output a pipe, against the scripted model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.model_server import lessons_responder, reply

from .conftest import WAIT_S, store_lines


def steered(n: int) -> dict[str, Any]:
    """A clean transcript with one steer in it."""
    return {
        "session_id": f"steered-{n}",
        "messages": [
            {"role": "user", "content": f"Tidy the release notes, part {n}."},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Reading them."},
                {"type": "tool_use", "id": "t1", "name": "fs_read", "input": {"path": "docs/RELEASE.md"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "# Release", "is_error": False},
                {"type": "text", "text": f"Only touch the docs folder, part {n}."},
            ]},
            {"role": "assistant", "content": "Understood."},
        ],
        "taint_timeline": [{"at": 0, "taint": {"private": False, "untrusted": False}}],
    }


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for n in range(3):
        (folder / f"s{n}.json").write_text(json.dumps(steered(n)))
    return folder


@pytest.fixture
def cli(env, store_dir, tmp_path, server):
    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        run_env = dict(env)
        run_env.update(MECHA_MODEL_API="openai", MECHA_MODEL_BASE_URL=server.url, MECHA_MODEL="scripted-model",
                       MECHA_MODEL_CONCURRENCY="1")
        # stdout is a pipe, as in a log or CI: plain lines, never a bar redrawn in place.
        return subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), *argv],
            env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S * 2,
        )

    return run


def test_a_waiting_verb_prints_answered_of_all_time_waited_and_what_is_left(cli, server, sessions):
    # Pins: 8 min 13 s of an import with not one line of progress.
    def slow(request: Any, dialect: Any) -> Any:
        time.sleep(0.8)
        return lessons_responder(request, dialect)

    server.responder = slow
    done = cli("reflect", "--sessions", str(sessions))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "\r" not in done.stdout and "█" not in done.stdout
    progress = [line for line in lines if line.startswith("reflect: ")]
    assert any(re.fullmatch(r"reflect: 1 of 3 intervention\(s\) answered, \d+ s waited, about \d+ s left", p) for p in progress), lines
    assert any(re.fullmatch(r"reflect: 2 of 3 intervention\(s\) answered, \d+ s waited, about \d+ s left", p) for p in progress), lines
    assert len(progress) == len(set(progress)), "one line each time the count moves, not one per poll"
    assert "(reflect): done — 3 reflection(s) written (3 learnable)" in lines[-1]

    # With --json, stdout is the result alone; the progress goes to stderr.
    (sessions / "s3.json").write_text(json.dumps(steered(3)))
    as_json = cli("--json", "reflect", "--sessions", str(sessions))
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["job"]["state"] == "done"
    assert re.search(r"^reflect: .*waited", as_json.stderr, re.M), as_json.stderr


def test_a_pass_that_left_answers_pending_ends_done_and_the_next_verb_retries_them(cli, server, sessions, store_dir):
    # Pins: `failed — UnusableReply: 20 reflection(s) written …, 6 unusable answer(s)` — a pass that
    # wrote what it could, read as one that could not run.
    unusable = {"on": True}

    def answers(request: Any, dialect: Any) -> Any:
        if unusable["on"] and "part 1." in json.dumps(request):
            return reply("I would rather not say.")
        return lessons_responder(request, dialect)

    server.responder = answers
    first = cli("reflect", "--sessions", str(sessions))
    assert first.returncode == 0, first.stderr
    last = first.stdout.splitlines()[-1]
    assert "(reflect): done — 2 reflection(s) written" in last, last
    assert "1 unusable answer(s)" in last and "1 intervention(s) pending: the next reflect pass asks them again" in last
    assert "failed" not in last
    assert len(store_lines(store_dir, "reflections.jsonl")) == 2

    # Nothing new to queue, but the pending one waits in the inbox: the verb asks it again.
    unusable["on"] = False
    again = cli("reflect", "--sessions", str(sessions))
    assert again.returncode == 0, again.stderr
    assert "(reflect): done — 1 reflection(s) written" in again.stdout.splitlines()[-1], again.stdout
    assert len(store_lines(store_dir, "reflections.jsonl")) == 3
