"""`doctor` finds the agents installed and says which would serve; with
an agent configured it checks its program runs, and spends no call."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.agent_server import AgentModelServer
from tests.agentcli.conftest import AgentEnv
from tests.e2e.conftest import clean_env


def _doctor(env: dict[str, str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, object]]]:
    argv = [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(tmp_path / "store")]
    shown = subprocess.run([*argv, "doctor"], env=env, capture_output=True, text=True, timeout=120)
    checks = json.loads(subprocess.run([*argv, "--json", "doctor"], env=env, capture_output=True, text=True, timeout=120).stdout)
    return shown, {c["name"]: c for c in checks["checks"]}


def test_with_no_model_configured_doctor_offers_the_installed_agent(
    server: AgentModelServer, agent_env: AgentEnv, tmp_path: Path
):
    env = {**clean_env(tmp_path), **agent_env(server)}
    shown, checks = _doctor(env, tmp_path)
    assert shown.returncode == 1
    assert re.search(r"^ok   agents .*Claude Code: `claude` .*Codex CLI: `codex` .*Claude Code would serve", shown.stdout, re.M)
    model = checks["model"]
    assert model["ok"] is False and "Claude Code is installed: set MECHA_MODEL_API=claude-code" in str(model["detail"])
    assert list(checks)[-1] == "model"
    assert server.seen == []  # finding an agent asks it nothing


def test_an_agent_configured_and_installed_is_a_healthy_model_with_no_call_spent(
    server: AgentModelServer, agent_env: AgentEnv, tmp_path: Path
):
    env = {**clean_env(tmp_path), **agent_env(server), "MECHA_MODEL_API": "codex"}
    shown, checks = _doctor(env, tmp_path)
    assert checks["model"]["ok"] is True, shown.stdout
    assert "Codex CLI: `codex` codex-cli" in str(checks["model"]["detail"])
    assert "structured" not in checks
    assert server.seen == []


def test_an_agent_configured_but_missing_is_a_bad_model_saying_what_to_do(
    server: AgentModelServer, agent_env: AgentEnv, tmp_path: Path
):
    env = {**clean_env(tmp_path), **agent_env(server), "MECHA_MODEL_API": "claude-code"}
    env["PATH"] = "/usr/bin:/bin"
    shown, checks = _doctor(env, tmp_path)
    assert shown.returncode == 1
    assert checks["model"]["ok"] is False
    assert "not installed or does not run; install it, or configure another model" in str(checks["model"]["detail"])
    assert "no Claude Code or Codex command line found" in str(checks["agents"]["detail"])
