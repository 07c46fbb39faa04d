"""The whole loop at a terminal with the agent's own command line as the
model: `reflect`, `learn`, `proposals accept` as a person types them, the
passes detached as always, each model call a real `claude -p` or `codex
exec` run against a scripted model on 127.0.0.1.

What is pinned beyond the loop itself: each pass states the calls it will
make on the person's account before its first, and the record of the
ended pass holds the calls made beside them — equal, and equal to what
the model server saw."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.agent_server import AgentModelServer
from tests.agentcli.conftest import AgentEnv
from tests.e2e.conftest import CLEAN, clean_env, multi_steer_session, store_lines

#: Real programs start in about half a second each; a pass of five calls
#: two at a time, on a busy machine, stays far inside this.
CLI_TIMEOUT_S = 300

LABEL = {"claude-code": "Claude Code", "codex": "Codex CLI"}


def _sessions(directory: Path) -> list[str]:
    steers = [
        "Keep the changelog entries in past tense.",
        "Do not reformat files you were not asked to edit.",
        "Run the tests before you say you are done.",
    ]
    directory.mkdir()
    (directory / "alpha.json").write_text(
        json.dumps({"session_id": "alpha", "messages": multi_steer_session(steers), "taint_timeline": CLEAN})
    )
    return steers


@pytest.mark.parametrize("api", ["claude-code", "codex"])
def test_reflect_learn_and_accept_through_the_agents_real_command_line(
    api: str, server: AgentModelServer, agent_env: AgentEnv, tmp_path: Path
):
    env = {**clean_env(tmp_path), **agent_env(server), "MECHA_MODEL_API": api}
    store = tmp_path / "store"

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store), *argv],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
        )

    steers = _sessions(tmp_path / "sessions")
    started = time.monotonic()
    reflected = cli("reflect", "--sessions", str(tmp_path / "sessions"))
    assert reflected.returncode == 0, reflected.stdout + reflected.stderr
    said = reflected.stdout + reflected.stderr
    assert f"3 call(s) on your {LABEL[api]} account" in said, said
    assert re.search(r"done — 3 reflection\(s\) written \(3 learnable\)", said), said
    assert f"3 call(s) on your {LABEL[api]} account stated, 3 made" in said, said
    assert len(server.model_calls()) == 3
    lessons = [r["reflexion_text"] for r in store_lines(store, "reflections.jsonl")]
    assert len(lessons) == 3 and all(any(s.rstrip(".") in lesson for s in steers) for lesson in lessons)

    learned = cli("learn", "behavior")
    assert learned.returncode == 0, learned.stdout + learned.stderr
    match = re.search(r"proposal (\S+) pending review", learned.stdout)
    assert match, learned.stdout
    assert len(server.model_calls()) == 4
    accepted = cli("proposals", "accept", match.group(1))
    assert accepted.returncode == 0, accepted.stderr
    elapsed = time.monotonic() - started
    block = cli("block").stdout
    assert "Run the tests before you say you are done" in block

    jobs = json.loads(cli("--json", "jobs").stdout)["jobs"]
    calls = {j["kind"]: j["account_calls"] for j in jobs}
    assert calls == {
        "reflect": {"account": LABEL[api], "stated": 3, "made": 3},
        "learn": {"account": LABEL[api], "stated": 1, "made": 1},
    }
    # The passes' own calls left no session the importer could read back.
    home = Path(env["HOME"])
    assert not list((home / ".claude" / "projects").rglob("*.jsonl"))
    assert not list((home / ".codex" / "sessions").rglob("*.jsonl"))
    print(f"\n{api}: fresh store to an accepted rule in {elapsed:.1f} s, 4 calls stated, 4 made")
