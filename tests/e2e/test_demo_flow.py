"""`mecha-sidecar demo` end to end, as a person runs it: the real CLI in a
child process, a fresh HOME, and — where a model answers — the scripted
model server on 127.0.0.1 behind the configuration a person would set.
What is pinned is the demo's last word: where the loop got to, and an exit
status that says whether it reached an accept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.model_server import ModelServer, Reply, reply

from .conftest import WAIT_S


def demo(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mecha.sidecar", "demo", "--no-local", "--timeout", "60", *argv],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=WAIT_S * 4)


def test_with_a_model_that_answers_the_demo_reaches_an_accept_and_exits_0(env, tmp_path, server):
    # Pins: a demo that ends without saying whether the loop completed.
    run = demo({**env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": server.url, "MECHA_MODEL": "scripted"},
               tmp_path)
    out = run.stdout
    assert run.returncode == 0, out[-3000:] + run.stderr[-2000:]
    assert "→ mecha/acceptProposal" in out and "The loop is complete" in out
    assert "Traceback" not in out + run.stderr and "{'" not in out, "no Python repr on screen"


def test_with_no_model_the_demo_says_where_the_loop_stopped_and_exits_1_unless_that_is_expected(env, tmp_path):
    # Pins: every demo run exiting 0 with no word on where it stopped (0
    # accepts in 4 runs went unnoticed), and a stop that names no next step.
    run = demo(env, tmp_path)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    last = run.stdout.strip().splitlines()[-2:]
    assert last[0].startswith("The loop stopped at the reflect pass: NoModel"), last
    assert "mecha-sidecar doctor" in last[1] and "run the demo again" in last[1], last
    assert "cite turn" in run.stdout and "{'" not in run.stdout, "no Python repr on screen"

    expected = demo(env, tmp_path, "--accept-optional")
    assert expected.returncode == 0 and "The loop stopped at the reflect pass" in expected.stdout


def test_a_learn_pass_that_files_nothing_is_named_as_where_the_loop_stopped(env, tmp_path):
    # Pins: a model whose rules the learn gate refuses (what the 135M model
    # does) reported as a finished demo.
    def answers(request: object, dialect: object) -> Reply:
        from tests.model_server import lessons_responder, request_prompts

        system, _ = request_prompts(request, dialect)  # type: ignore[arg-type]
        if '"reflexion"' in system:
            return lessons_responder(request, dialect)  # type: ignore[arg-type,return-value]
        return reply('{"rules": [], "dropped": []}')

    with ModelServer(responder=answers) as model:  # type: ignore[arg-type]
        run = demo({**env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": model.url, "MECHA_MODEL": "m"},
                   tmp_path)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]
    assert "The loop stopped at the learn pass: it filed no proposal" in run.stdout, run.stdout[-2000:]
    assert "→ mecha/acceptProposal" not in run.stdout


def test_with_the_persons_agent_the_demo_runs_the_loop_through_the_real_cli_to_an_accept(env, tmp_path):
    # Pins: a demo that asks a person who runs Claude Code every day for an
    # API key or a 135M model, and one that spends their calls unannounced.
    import os

    from tests.agent_server import AgentModelServer
    from tests.realparts import manifest

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").symlink_to(manifest("agents")["claude"])
    with AgentModelServer() as model:
        agent_env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
                     "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "scripted-key-not-a-secret",
                     "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        offered = demo(agent_env, tmp_path, "--accept-optional")
        assert "`mecha-sidecar demo --agent` runs this loop with it (4 calls on your account)" in offered.stdout
        assert not model.model_calls(), "offered, not used"
        run = subprocess.run([sys.executable, "-m", "mecha.sidecar", "demo", "--agent", "--timeout", "120"],
                             env=agent_env, cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S * 8)
        calls = len(model.model_calls())
    out = run.stdout
    assert run.returncode == 0, out[-3000:] + run.stderr[-2000:]
    assert "Using Claude Code: `claude` 2.1.328" in out and "4 headless calls on your account" in out
    assert "The loop is complete" in out and calls == 4, (calls, out[-2000:])
