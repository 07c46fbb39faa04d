"""Does a rule change what the agent does? A rule's record, end to end: the
real CLI, the hooks as Claude Code runs them (`sh -c`, the JSON on stdin,
the project as the working directory), detached passes answered by the
scripted model server, and Claude Code session files as the agent writes
them.

A rule is learned from one session and accepted; two later sessions in its
project correct the same thing again; a third corrects something else."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.core.ccfixture import Claude, text

from .conftest import store_lines, wait_until
from .test_hooks_flow import cli, commands, jobs_settled, run_hook

RULE_WORDS = "Never push to main; open a pull request for every change."
SESSIONS = {
    "first": "6a1e0c3a-0000-4b8e-9c11-000000000001",
    "again-1": "6a1e0c3a-0000-4b8e-9c11-000000000002",
    "again-2": "6a1e0c3a-0000-4b8e-9c11-000000000003",
    "other": "6a1e0c3a-0000-4b8e-9c11-000000000004",
}


@pytest.fixture
def home(env) -> Path:
    return Path(env["HOME"])


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "src" / "invoices"
    (root / ".git").mkdir(parents=True)
    return root


def session(sid: str, cwd: Path, correction: str) -> bytes:
    """A Claude Code session where the assistant pushes and the person
    corrects it after the turn."""
    c = Claude(session=sid, cwd=str(cwd))
    # Dated now, as the agent dates each line it writes: a correction counts
    # against a rule only when it was made after the rule's accept.
    now = {"timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")}
    c.user("Fix the rounding in the invoice totals and ship it.", **now)
    c.assistant(text("Fixed the rounding and pushed the commit to main."), **now)
    c.user(correction, **now)
    c.assistant(text("Understood; done that way now."), **now)
    return c.bytes()


class Agent:
    """One person's Claude Code with mecha's hooks: each session starts (the
    session-start hook), is written, and ends (the session-end hook)."""

    def __init__(self, env: dict[str, str], home: Path, project: Path, store: Path, server: Any):
        self.home, self.project, self.store = home, project, store
        self.env = {**env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": server.url, "MECHA_MODEL": "scripted-model"}
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in env["PYTHONPATH"].split(os.pathsep) if p)
        self.hooks = commands(home / ".claude" / "settings.json")

    def run(self, sid: str, correction: str) -> None:
        payload = {"session_id": sid, "cwd": str(self.project), "hook_event_name": "SessionStart", "source": "startup"}
        started = run_hook(self.hooks["SessionStart"], payload, cwd=self.project, env=self.env)
        assert started.returncode == 0, started.stderr
        transcript = self.home / ".claude" / "projects" / str(self.project).replace("/", "-") / f"{sid}.jsonl"
        transcript.parent.mkdir(parents=True, exist_ok=True)
        transcript.write_bytes(session(sid, self.project, correction))
        end = {"session_id": sid, "transcript_path": str(transcript), "cwd": str(self.project),
               "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}
        ended = run_hook(self.hooks["SessionEnd"], end, cwd=self.project, env=self.env)
        assert ended.returncode == 0 and ended.stdout == b"", ended.stderr
        jobs_settled(self.store)

    def cli(self, *argv: str) -> str:
        done = cli(self.env, self.project, "--learning-dir", str(self.store), *argv)
        assert done.returncode == 0, done.stderr
        return done.stdout


def test_a_rule_corrected_again_in_two_later_sessions_says_so_and_gets_a_rewrite_proposal(env, home, project, store_dir, server):
    # Pins: a saved rule the agent keeps breaking, with nothing anywhere to
    # say so — the most-filed complaint about every agent's memory.
    done = cli(env, project, "hooks", "install", "claude", "--learning-dir", str(store_dir))
    assert done.returncode == 0, done.stderr
    agent = Agent(env, home, project, store_dir, server)

    # A rule, learned from the first session and accepted by the person.
    agent.run(SESSIONS["first"], RULE_WORDS)
    learned = json.loads(agent.cli("learn", "behavior", "--min", "1", "--json"))
    proposal = learned["proposal_id"] if "proposal_id" in learned else learned["job"]["proposal_id"]
    agent.cli("proposals", "accept", proposal)
    agent.cli("export", "claude")
    [live] = json.loads(agent.cli("rules", "--json"))["rules"]
    rule_id = live["rule"]["id"]
    assert live["scope"] == str(project) and "corrected_again" not in live["record"]

    # Two later sessions in its project: the person corrects the same thing again.
    agent.run(SESSIONS["again-1"], "You pushed to main again; open a pull request.")
    agent.run(SESSIONS["again-2"], "Again straight to main! Open a pull request for this change.")
    why = agent.cli("why", rule_id)
    assert "corrected again 2×" in why and "in 2 sessions" in why, why
    assert f"session claude:{SESSIONS['again-1']}" in why and f"session claude:{SESSIONS['again-2']}" in why
    assert "'Again straight to main! Open a pull request for this change.'" in why
    record = json.loads(agent.cli("why", rule_id, "--json"))["record"]
    assert [r["session_id"] for r in record["corrected_again"]] == [f"claude:{SESSIONS['again-1']}", f"claude:{SESSIONS['again-2']}"]
    assert record["session_ids"] == [f"claude:{SESSIONS['again-2']}", f"claude:{SESSIONS['again-1']}"]

    # A rewrite proposal waits, its lessons the two new corrections; nothing was applied.
    pending = json.loads(agent.cli("proposals", "list", "--json"))["proposals"]
    [rewrite] = [p for p in pending if p["status"] == "pending"]
    assert rewrite["rewrite_of"] == [rule_id] and record["rewrite_proposal"] == rewrite["id"]
    lessons = {r["id"]: r["session_id"] for r in store_lines(store_dir, "reflections.jsonl")}
    assert sorted(lessons[i] for i in rewrite["reflexion_ids"]) == [f"claude:{SESSIONS['again-1']}", f"claude:{SESSIONS['again-2']}"]
    assert [r["rule"]["id"] for r in json.loads(agent.cli("rules", "--json"))["rules"]] == [rule_id]
    assert "a rewrite waits: mecha-sidecar proposals show" in why

    # A third session corrects something else: the rule's record is as it was.
    agent.run(SESSIONS["other"], "Again: the Makefile needs tabs, not spaces.")
    wait_until(lambda: len(store_lines(store_dir, "reflections.jsonl")) == 4, "the unrelated lesson")
    after = json.loads(agent.cli("why", rule_id, "--json"))["record"]
    assert len(after["corrected_again"]) == 2 and after["sessions"] == 3
    print(f"\n$ mecha-sidecar rules\n{agent.cli('rules')}")
    assert [r["rule_id"] for r in store_lines(store_dir, "repeats.jsonl")] == [rule_id, rule_id]
