"""Figure 18: from a fresh store to a first accepted rule with an agent's own
command line as the model, and the calls each pass stated against those made.

The loop a person runs at a terminal — `reflect --sessions DIR` over one
session with 3 corrections, `learn behavior`, `proposals accept` — each a
real `mecha-sidecar` process, the passes detached as always, every model
call a real `claude -p` (Claude Code 2.1.328) or `codex exec` (0.169.0) from
the realparts cache against the scripted model on 127.0.0.1
(`tests/agent_server.py`), which answers at once. The baseline is the same
loop in the same run, interleaved, with the passes calling that scripted
model over HTTP in the OpenAI dialect (`tests/model_server.py`): the
difference is what running the agent's program costs per call. A real
model's own answering time comes on top of both.

Notes record, per agent, the calls each pass stated before its first and
the calls it made (from the job records), and the calls the model server
saw. Needs `python -m tests.realparts agents`; runs only when named.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import Figure, child_env, median

AGENTS = {"claude-code": "agent_cli_claude", "codex": "agent_cli_codex"}
STEERS = [
    "Keep the changelog entries in past tense.",
    "Do not reformat files you were not asked to edit.",
    "Run the tests before you say you are done.",
]


def _session(folder: Path) -> None:
    from tests.e2e.conftest import CLEAN, multi_steer_session

    folder.mkdir(parents=True)
    (folder / "alpha.json").write_text(
        json.dumps({"session_id": "alpha", "messages": multi_steer_session(STEERS), "taint_timeline": CLEAN})
    )


def _loop(tmp: Path, env: dict[str, str]) -> tuple[float, list[dict[str, Any]]]:
    """Seconds from the first verb to the accept; the job records."""
    store = tmp / "store"
    _session(tmp / "sessions")

    def cli(*argv: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store), *argv],
            env=env, cwd=tmp, capture_output=True, text=True, timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stdout}{done.stderr}")
        return done.stdout

    started = time.perf_counter()
    cli("reflect", "--sessions", str(tmp / "sessions"))
    learned = cli("learn", "behavior")
    match = re.search(r"proposal (\S+) pending review", learned)
    if match is None:
        raise RuntimeError(f"no proposal: {learned}")
    cli("proposals", "accept", match.group(1))
    elapsed = time.perf_counter() - started
    return elapsed, json.loads(cli("--json", "jobs"))["jobs"]


def _agent_env(tmp: Path, url: str) -> dict[str, str]:
    from tests.agentcli.conftest import codex_config
    from tests.realparts import manifest

    parts = manifest("agents")
    home = tmp / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(codex_config(url))
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name in ("claude", "codex"):
        (bin_dir / name).symlink_to(parts[name])
    return {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home), "CODEX_HOME": str(home / ".codex"),
        "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "scripted", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def _through_agent(api: str, tmp: Path) -> tuple[float, list[dict[str, Any]], int]:
    from tests.agent_server import AgentModelServer

    with AgentModelServer() as server:
        env = child_env(MECHA_SIDECAR_CONFIG=str(tmp / "none.toml"), MECHA_MODEL_API=api, **_agent_env(tmp, server.url))
        elapsed, jobs = _loop(tmp, env)
        return elapsed, jobs, len(server.model_calls())


def _over_http(tmp: Path) -> float:
    from tests.model_server import ModelServer, lessons_responder

    with ModelServer(responder=lessons_responder) as server:
        env = child_env(
            MECHA_SIDECAR_CONFIG=str(tmp / "none.toml"), HOME=str(tmp / "home"),
            MECHA_MODEL_API="openai", MECHA_MODEL_BASE_URL=server.url, MECHA_MODEL="scripted-model",
        )
        return _loop(tmp, env)[0]


def run(rounds: int) -> list[Figure]:
    times: dict[str, list[float]] = {api: [] for api in AGENTS}
    http: list[float] = []
    calls: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as root:
        for n in range(rounds):
            http.append(_over_http(Path(root) / f"http-{n}"))
            for api in AGENTS:
                elapsed, jobs, seen = _through_agent(api, Path(root) / f"{api}-{n}")
                times[api].append(elapsed)
                stated = sum(j["account_calls"]["stated"] for j in jobs)
                made = sum(j["account_calls"]["made"] for j in jobs)
                calls[api] = f"calls stated before each pass {stated}, made {made}, seen by the model server {seen}"
    baseline = median(http)
    figures = []
    for api, key in AGENTS.items():
        subject = median(times[api])
        program = {"claude-code": "claude -p (Claude Code 2.1.328)", "codex": "codex exec (0.169.0)"}[api]
        figures.append(Figure(
            key=key,
            title=(f"fresh store → first accepted rule (reflect 3 corrections, learn, accept) with api = \"{api}\": "
                   f"each model call a real {program} against a scripted model"),
            subject=subject * 1000, baseline=baseline * 1000, unit="ms",
            subject_label=f"through {api}", baseline_label="the same loop over HTTP (openai dialect)",
            ratio=subject / baseline, goal="reported", met=None,
            notes=[calls[api]], extra={"rounds": rounds, "runs_s": times[api], "http_runs_s": http},
        ))
    return figures


if __name__ == "__main__":
    for f in run(1):
        print(json.dumps(f.__dict__, default=str))
