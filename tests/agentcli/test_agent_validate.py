"""`validate` with the person's own agent as the model: Claude Code
sessions imported, a proposal learned, then measured before anyone accepts
it — each of the four calls of each probe a real `claude -p` run against a
scripted model on 127.0.0.1 — and `proposals show` reading the verdict.

Each probe's correction is the source of one of the proposal's two rules,
so each measures the candidate without that rule (no rule is measured on
its own sources): the verdict is read as the proposal's all the same."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from mecha.core.learning.validate import ASSISTANT_SYSTEM, JUDGE_SYSTEM
from tests.agent_server import Action, AgentModelServer, Answer, Text, lessons
from tests.agentcli.conftest import AgentEnv
from tests.core.ccfixture import Claude, text
from tests.e2e.conftest import clean_env, store_lines

CLI_TIMEOUT_S = 600
#: Two sessions, each with one correction; the scripted assistant gets a
#: task right only under the rule learned from the *other* correction.
TASKS = {
    "Tidy the release notes in docs/RELEASE.md.": "No, only change docs/RELEASE.md and leave the other files alone.",
    "Update the changelog for release 2.4.": "Keep the changelog edits inside CHANGELOG.md and touch nothing else.",
}
GOOD_TURN = "I will change only the one file you named."
BAD_TURN = "I will rewrite every document in the folder."


def probe_responder(system: str, user: str, dialect: str) -> Action:
    """Lessons and rule sets for the reflector and the learner; for a probe,
    a good turn when the other correction's rule rides in the system prompt,
    and a judge that reads the new turn."""
    if JUDGE_SYSTEM[:60] in system:
        new = re.search(r"<new-reply>\s*(.*?)\s*</new-reply>", user, re.S)
        spared = new is not None and GOOD_TURN in new.group(1)
        return Answer({"still_needed": not spared, "reason": "scripted"})
    if ASSISTANT_SYSTEM[:60] in system:
        task = next((t for t in TASKS if t in user), None)
        others = [c for t, c in TASKS.items() if t != task]
        return Text(GOOD_TURN if task is not None and any(c[:30] in system for c in others) else BAD_TURN)
    return lessons(system, user, dialect)


def write_sessions(folder: Path) -> None:
    project = folder / "-app"
    project.mkdir(parents=True)
    for n, (task, correction) in enumerate(TASKS.items()):
        sid = f"b7c8d9e0-0000-4000-8000-{n:012d}"
        c = Claude(session=sid, cwd="app")
        c.user(task).assistant(text("Done: I tidied it and rewrote the other documents too."))
        c.user(correction).assistant(text("Understood, I reverted the other documents."))
        (project / f"{sid}.jsonl").write_bytes(c.bytes())


def test_a_proposal_measured_through_claude_code_says_its_cost_first_and_proposals_show_prints_the_verdict(
    agent_env: AgentEnv, tmp_path: Path
):
    # Pins: a probe that left out the rule resting on its own correction
    # recorded under a hash no whole candidate has, so `proposals show`
    # said "not measured yet" right after the proposal was measured.
    with AgentModelServer(responder=probe_responder) as server:
        env = {**clean_env(tmp_path), **agent_env(server), "MECHA_MODEL_API": "claude-code"}
        store = tmp_path / "store"

        def cli(*argv: str) -> str:
            done = subprocess.run(
                [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store), *argv],
                env=env, cwd=tmp_path, capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
            )
            assert done.returncode == 0, (argv, done.stdout, done.stderr)
            return done.stdout

        write_sessions(tmp_path / "claude")
        cli("import", "claude", str(tmp_path / "claude"))
        learned = cli("learn", "behavior", "--min", "1")
        match = re.search(r"proposal (\S+) pending review", learned)
        assert match, learned
        proposal = match.group(1)

        dry = cli("validate", "behavior", "--proposal", proposal, "--dry-run")
        assert dry.startswith(f"validate behavior: 2 probe(s) of proposal {proposal} against the live rules, "
                              "at most 8 model call(s)"), dry
        assert "cost: 8 run(s) of `claude -p` on your own Claude Code account" in dry, dry
        before = len(server.model_calls())
        ran = cli("validate", "behavior", "--proposal", proposal)
        assert ran.index("cost: 8 run(s) of `claude -p`") < ran.index("(validate behavior): done"), ran
        assert len(server.model_calls()) - before == 8
        rows = store_lines(store, "validations.jsonl")
        assert sorted(r["outcome"] for r in rows) == ["improved", "improved"]
        assert all(r["proposal_id"] == proposal and len(r["left_out"]) == 1 for r in rows)

        shown = cli("proposals", "show", proposal)
        verdict = re.search(r"^verdict: (.*)$", shown, re.M)
        assert verdict is not None and verdict.group(1).startswith("measured in 2 probes on Claude Code against the live rules"), shown
        assert "2 improved, 0 regressed, 0 unchanged, 0 inconclusive" in verdict.group(1)
        assert "2 of them without the rules learned from the very correction probed" in verdict.group(1)
        as_json = json.loads(cli("proposals", "show", proposal, "--json"))["verdict"]
        assert as_json["probes"] == 2 and as_json["reduced"] == 2 and as_json["stale"] == 0
        print(f"\nproposals show {proposal}:\nverdict: {verdict.group(1)}")
