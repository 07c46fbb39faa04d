"""`validate` end to end: Claude Code sessions imported through the real CLI,
rules learned and accepted, then the counterfactual probe run as a detached
pass against the scripted model over real HTTP — from the CLI and from a
real sidecar process — with the faults a probe meets: a judge answering
garbage, a model stalling mid-probe, the pass killed mid-way."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mecha.core.gate.candidate import is_holdout
from mecha.core.learning.validate import ASSISTANT_SYSTEM, HOLDOUT_IN, JUDGE_SYSTEM
from tests.core.ccfixture import Claude, text
from tests.model_server import ModelServer, lessons_responder, reply, request_prompts, stall

from .conftest import WAIT_S, store_lines, wait_until

#: Two sessions, each with one correction the scripted assistant gets right
#: only under the rule learned from the *other* one (the two lessons are the
#: same habit: touch only the file named); a probe never measures a rule on
#: its own correction.
TASKS = {
    "Tidy the release notes in docs/RELEASE.md.": "No, only change docs/RELEASE.md and leave the other files alone.",
    "Update the changelog for release 2.4.": "Keep the changelog edits inside CHANGELOG.md and touch nothing else.",
}
GOOD_TURN = "I will change only the one file you named."
BAD_TURN = "I will rewrite every document in the folder."


def holdout_session_ids() -> list[str]:
    ids = (f"a1b2c3d4-0000-4000-8000-{i:012d}" for i in range(10_000))
    return [s for s in ids if is_holdout(s, HOLDOUT_IN)][: len(TASKS)]


def write_sessions(folder: Path, cwd: str) -> None:
    project = folder / "-app"
    project.mkdir(parents=True)
    for session_id, (task, correction) in zip(holdout_session_ids(), TASKS.items(), strict=True):
        c = Claude(session=session_id, cwd=cwd)
        c.user(task).assistant(text("Done: I tidied it and rewrote the other documents too."))
        c.user(correction).assistant(text("Understood, I reverted the other documents."))
        (project / f"{session_id}.jsonl").write_bytes(c.bytes())


class ProbeResponder:
    """The scripted model: the lessons responder for reflector and learner
    prompts; for a probe, a good turn under learned rules and a bad one
    without; a judge that reads the new turn. `garble` and `hold` pick a
    probe by a phrase of its prompt: its judge answers garbage, or its turn
    waits (bounded) for the test to let it go, after saying it was reached."""

    def __init__(self) -> None:
        self.garble: str | None = None
        self.stall_on: str | None = None
        self.hold_on: str | None = None
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, request: Any, dialect: Any) -> Any:
        system, user = request_prompts(request, dialect)
        if system.startswith(JUDGE_SYSTEM[:60]):
            if self.garble and self.garble in user:
                return reply("It seems fine to me, more or less.")
            new = re.search(r"<new-reply>\s*(.*?)\s*</new-reply>", user, re.S)
            spared = new is not None and GOOD_TURN in new.group(1)
            return reply(json.dumps({"still_needed": not spared, "reason": "scripted"}))
        if system.startswith(ASSISTANT_SYSTEM[:60]):
            if self.stall_on and self.stall_on in user:
                return stall(5.0)
            if self.hold_on and self.hold_on in user:
                self.reached.set()
                self.release.wait(WAIT_S)
            task = next((t for t in TASKS if t in user), None)
            # Right only when the rule learned from the other correction rides along.
            others = [c for t, c in TASKS.items() if t != task]
            return reply(GOOD_TURN if task is not None and any(c[:30] in system for c in others) else BAD_TURN)
        return lessons_responder(request, dialect)


@pytest.fixture
def responder() -> ProbeResponder:
    return ProbeResponder()


@pytest.fixture
def model(responder: ProbeResponder) -> Any:
    with ModelServer(responder=responder) as server:
        yield server
        responder.release.set()


@pytest.fixture
def cli(env: dict[str, str], store_dir: Path, tmp_path: Path, model: ModelServer) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*argv: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        run_env = dict(env, MECHA_MODEL_API="openai", MECHA_MODEL_BASE_URL=model.url, MECHA_MODEL="scripted-model")
        done = subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), *argv],
            env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S * 2,
        )
        if ok:
            assert done.returncode == 0, (argv, done.stdout, done.stderr)
        return done

    return run


def learned_store(cli: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path, *, in_project: bool = False) -> list[str]:
    """Import the sessions, learn, accept every proposal; the live rule ids.
    `in_project`: the sessions ran in a project folder, so their lessons are
    that project's rules; else they recorded no usable folder (global)."""
    app = tmp_path / "app"
    app.mkdir()
    write_sessions(tmp_path / "claude", str(app) if in_project else "app")
    cli("import", "claude", str(tmp_path / "claude"))
    learned = json.loads(cli("learn", "behavior", "--min", "1", "--json").stdout)
    assert learned["job"]["state"] == "done", learned
    for p in json.loads(cli("proposals", "list", "--status", "pending", "--json").stdout)["proposals"]:
        cli("proposals", "accept", p["id"])
    block = json.loads(cli("block", "--domain", "behavior", "--project", str(app), "--json").stdout)
    assert block["rule_ids"], block
    return list(block["rule_ids"])


def test_validate_from_the_cli_says_the_cost_first_and_names_a_garbage_judge(cli, model, responder, store_dir, tmp_path):
    rule_ids = learned_store(cli, tmp_path, in_project=True)
    calls_before = len(model.completions())

    dry = cli("validate", "behavior", "--dry-run")
    assert dry.stdout.startswith("validate behavior: 2 probe(s) of the live behavior rules, at most 8 model call(s)"), dry.stdout
    assert "a dry run: nothing was called" in dry.stdout
    assert len(model.completions()) == calls_before, "a dry run calls nothing"

    responder.garble = "CHANGELOG.md"
    ran = cli("validate", "behavior")
    assert ran.stdout.index("at most 8 model call(s)") < ran.stdout.index("(validate behavior): done"), ran.stdout
    assert "2 of 2 probe(s) recorded on scripted-model: 1 improved, 1 inconclusive" in ran.stdout
    assert "the judge of the treatment arm: the reply held no JSON object that meets the reply contract" in ran.stdout

    rows = store_lines(store_dir, "validations.jsonl")
    assert sorted(r["outcome"] for r in rows) == ["improved", "inconclusive"]
    improved = next(r for r in rows if r["outcome"] == "improved")
    # Each probe measures the rule learned from the other session: never a
    # rule on its own correction.
    [measured] = improved["rule_ids"]
    assert measured in rule_ids and improved["model"] == "scripted-model"
    inconclusive = next(r for r in rows if r["outcome"] == "inconclusive")
    assert "reason" not in improved and "the judge of the baseline arm" in inconclusive["reason"]
    probe_calls = model.completions()[calls_before:]
    assert len(probe_calls) == 8 and all(c.body.get("temperature") == 0 for c in probe_calls)

    tallies = cli("tallies", "--domain", "behavior").stdout
    assert f"{measured}: rode in 1 probe on scripted-model: 1 improved, 0 regressed" in tallies, tallies
    why = cli("why", measured).stdout
    assert "measured: rode in 1 probe on scripted-model: 1 improved, 0 regressed" in why, why
    [accepted] = json.loads(cli("proposals", "list", "--json").stdout)["proposals"]
    shown = cli("proposals", "show", accepted["id"]).stdout
    assert shown.count("    measured: rode in 1 probe on scripted-model: 1 improved, 0 regressed") == 1, shown


def test_a_proposal_is_measured_before_anyone_accepts_it(cli, model, store_dir, tmp_path):
    rule_ids = learned_store(cli, tmp_path)
    first_correction = next(iter(TASKS.values()))
    [rule_id] = [i for i in rule_ids if first_correction[:30] in json.loads(cli("why", i, "--json").stdout)["rule"]["text"]]
    proposal_id = json.loads(cli("retire", "behavior", rule_id, "trying without it", "--json").stdout)["proposal"]["id"]
    shown = cli("proposals", "show", proposal_id).stdout
    assert "verdict: not measured yet" in shown

    ran = cli("validate", "behavior", "--proposal", proposal_id)
    assert f"of proposal {proposal_id} against the live rules" in ran.stdout
    # The retired rule's own correction does not measure its retirement.
    assert "not probed: 1 — the rules it would measure were all learned from it" in ran.stdout, ran.stdout
    assert "1 of 1 probe(s) recorded on scripted-model: 1 regressed" in ran.stdout, ran.stdout
    assert all(r["proposal_id"] == proposal_id for r in store_lines(store_dir, "validations.jsonl"))

    shown = cli("proposals", "show", proposal_id).stdout
    assert (
        "verdict: measured in 1 probe on scripted-model against the live rules: "
        "0 improved, 1 regressed, 0 unchanged, 0 inconclusive"
    ) in shown, shown
    verdict = json.loads(cli("proposals", "show", proposal_id, "--json").stdout)["verdict"]
    assert verdict["probes"] == 1 and verdict["by_model"] == {"scripted-model": {"regressed": 1}}


def test_a_stall_mid_probe_keeps_the_whole_probes_and_nothing_of_the_half_one(cli, model, responder, spawn, store_dir, tmp_path):
    learned_store(cli, tmp_path)
    s = spawn()
    s.initialize(store_dir, model={"api": "openai", "baseUrl": model.url, "model": "scripted-model",
                                   "timeoutS": 1, "maxRetries": 0})
    plan = s.request("mecha/validate", {"domain": "behavior", "dry_run": True})["plan"]
    first, second = plan["probes"]
    task = next(t for t, c in TASKS.items() if " ".join(c.split())[:40] in second["text"])
    responder.stall_on = task

    started = s.request("mecha/validate", {"domain": "behavior"})
    assert started["plan"]["calls"] == 8 and started["job"]["kind"] == "validate"
    final = s.job_finished(started["job"]["id"], timeout=WAIT_S * 2)
    assert final["state"] == "failed"
    assert "1 of 2 probe(s) recorded" in final["outcome"] and "nothing of the probe in progress was recorded" in final["outcome"]
    rows = store_lines(store_dir, "validations.jsonl")
    assert [r["reflexion_id"] for r in rows] == [first["reflexion_id"]]


def test_a_pass_killed_mid_probe_keeps_its_whole_probes_and_the_next_pass_measures_the_rest(cli, responder, store_dir, tmp_path):
    learned_store(cli, tmp_path)
    plan = json.loads(cli("validate", "behavior", "--dry-run", "--json").stdout)["plan"]
    first, second = plan["probes"]
    responder.hold_on = next(t for t, c in TASKS.items() if " ".join(c.split())[:40] in second["text"])

    job = json.loads(cli("validate", "behavior", "--no-wait", "--json").stdout)["job"]
    assert responder.reached.wait(WAIT_S), "the second probe's first call never came"
    record = store_dir / "jobs" / f"{job['id']}.json"
    pid = wait_until(lambda: json.loads(record.read_text()).get("pid"), "the pass to record its pid")
    os.kill(pid, signal.SIGKILL)
    responder.release.set()
    settled = wait_until(
        lambda: (j := json.loads(cli("jobs", "--json").stdout)["jobs"][0])["state"] != "running" and j,
        "the killed pass to read as ended",
    )
    assert settled["state"] == "failed" and "killed or crashed" in settled["outcome"]
    assert [r["reflexion_id"] for r in store_lines(store_dir, "validations.jsonl")] == [first["reflexion_id"]]

    responder.hold_on = None
    again = cli("validate", "behavior", "--budget", "1")
    assert second["reflexion_id"] in again.stdout, "the probe not measured yet comes first"
    assert [r["reflexion_id"] for r in store_lines(store_dir, "validations.jsonl")] == [
        first["reflexion_id"], second["reflexion_id"],
    ]
