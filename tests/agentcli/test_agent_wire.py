"""The harness names an agent's command line in `initializationOptions.model`
and hands a run over: the detached reflect pass runs the real `claude -p` /
`codex exec`, and the job record it ends with — over the wire, in
`mecha/jobFinished` and `mecha/jobs` — says the calls stated and made."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent_server import AgentModelServer
from tests.agentcli.conftest import AgentEnv
from tests.e2e.conftest import CLEAN, Sidecar, clean_env, steer_session, store_lines

STEER = "Only touch docs/RELEASE.md, leave the other files alone."
ACCOUNT = {"claude-code": "Claude Code", "codex": "Codex CLI"}


@pytest.mark.parametrize("api", ["claude-code", "codex"])
def test_a_run_handed_over_is_reflected_on_by_the_agent_the_harness_named(
    api: str, server: AgentModelServer, agent_env: AgentEnv, tmp_path: Path
):
    env = {**clean_env(tmp_path), **agent_env(server)}
    store = tmp_path / "learning"
    sc = Sidecar(env, tmp_path)
    try:
        sc.initialize(store, {"api": api})
        ended = sc.request("mecha/sessionEnded", {"session_id": "run-1", "messages": steer_session(STEER),
                                                  "taint_timeline": CLEAN})
        finished = sc.job_finished(ended["job"]["id"], timeout=120)
        assert finished["state"] == "done", finished
        assert finished["account_calls"] == {"account": ACCOUNT[api], "stated": 1, "made": 1}
        assert f"1 call(s) on your {ACCOUNT[api]} account stated, 1 made" in finished["outcome"]
        listed = {j["id"]: j for j in sc.request("mecha/jobs", {})["jobs"]}
        assert listed[finished["id"]]["account_calls"] == finished["account_calls"]
        [reflection] = store_lines(store, "reflections.jsonl")
        assert "Only touch docs/RELEASE.md" in reflection["reflexion_text"]
        (call,) = server.model_calls()
        assert STEER in call.user
    finally:
        sc.kill()
