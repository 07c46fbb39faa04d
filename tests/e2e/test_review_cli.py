"""Review rule by rule at a terminal: `proposals show` numbers the changes,
`accept --without N` leaves some out, `reject --wrong N` names the wrong
lessons and returns the rest to the pool — each a real `mecha-sidecar`
process over a real store, the same handlers as the wire."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mecha.core.domain.rules import Rule
from mecha.core.store.learning_store import LearningStore
from tests import builders

from .conftest import WAIT_S


def run(env: dict[str, str], store_dir: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), *argv],
        env=env, capture_output=True, text=True, timeout=WAIT_S,
    )


def seeded(store_dir: Path, pid: str) -> LearningStore:
    store = LearningStore.open(store_dir)
    said = {"r-a": "Quote the exact error message.", "r-b": "Use pnpm in this workspace.", "r-c": "Never force-push to main."}
    store.append_reflexions([
        builders.reflexion(i, t, session_id="s", trigger="followup", context="", intervention=t,
                           created_at="2026-12-01T00:00:00Z")
        for i, t in said.items()
    ])
    rules = [Rule(text=t, id=f"rule-{i}", sources=[i]) for i, t in said.items()]
    store.write_proposal(builders.proposal(pid, rules, reflexion_ids=list(said), created_at="2026-12-01T00:00:00Z"))
    return store


def test_accept_without_a_numbered_change_from_the_command_line(env, store_dir):
    pid = "20261201T000000-cli00001"
    store = seeded(store_dir, pid)
    shown = run(env, store_dir, "proposals", "show", pid)
    assert shown.returncode == 0, shown.stderr
    assert "  1. added (global): Quote the exact error message." in shown.stdout
    assert "  3. added (global): Never force-push to main." in shown.stdout
    assert "proposals accept ID --without N" in shown.stdout

    bad = run(env, store_dir, "proposals", "accept", pid, "--without", "7")
    assert bad.returncode != 0 and "without: 7 is not a change of proposal" in bad.stderr

    done = run(env, store_dir, "proposals", "accept", pid, "--without", "2", "--reason", "npm is fine here")
    assert done.returncode == 0, done.stderr
    assert "left out 2 (added): “Use pnpm in this workspace.”\n" in done.stdout, done.stdout
    assert "2 lesson(s) used; 1 back in the pool for a later pass" in done.stdout
    assert [r.id for r in store.learned_rules("behavior")] == ["rule-r-a", "rule-r-c"]
    again = run(env, store_dir, "proposals", "show", pid)
    assert "left out 2 (added): “Use pnpm in this workspace.”" in again.stdout, again.stdout
    lessons = json.loads(run(env, store_dir, "--json", "lessons").stdout)["lessons"]
    assert {x["id"]: (x["processed"], x["rejected"]) for x in lessons} == {
        "r-a": (True, None), "r-b": (False, None), "r-c": (True, None),
    }, "leaving a rule out rejects no lesson"


def test_accept_naming_a_change_wrong_from_the_command_line_rejects_its_lesson(env, store_dir):
    pid = "20261201T000000-cli00003"
    store = seeded(store_dir, pid)
    done = run(env, store_dir, "proposals", "accept", pid, "--wrong", "2", "--reason", "npm is fine here")
    assert done.returncode == 0, done.stderr
    assert "left out 2 (added): “Use pnpm in this workspace.”; 1 lesson(s) marked rejected" in done.stdout
    marks = {r.id: (r.is_processed, r.rejected) for r in store.reflexions()}
    assert marks == {"r-a": (True, None), "r-b": (True, "npm is fine here"), "r-c": (True, None)}


def test_accept_with_an_edit_puts_the_persons_words_in_the_rules_file_and_in_why(env, store_dir):
    pid = "20261201T000000-cli00004"
    seeded(store_dir, pid)
    mine = "Quote the error message word for word, never a summary."
    refused = run(env, store_dir, "proposals", "accept", pid, "--edit", "2", "Ask @pat-lee first.")
    assert refused.returncode != 0 and "edit: change 2: the edited rule carries personal data (an account handle)" in refused.stderr
    done = run(env, store_dir, "proposals", "accept", pid, "--edit", "1", mine)
    assert done.returncode == 0, done.stderr
    assert f"in your words: “{mine}” (proposed: “Quote the exact error message.”)" in done.stdout, done.stdout
    assert mine in (store_dir / "rules" / "behavior.learned.toml").read_text()
    why = run(env, store_dir, "why", "rule-r-a")
    assert why.returncode == 0, why.stderr
    lines = why.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if "person_edit" in line)
    assert mine in lines[first] and all("followup" not in line for line in lines[:first]), why.stdout


def test_reject_names_the_wrong_lessons_and_returns_the_rest_to_the_pool(env, store_dir):
    pid = "20261201T000000-cli00002"
    store = seeded(store_dir, pid)
    done = run(env, store_dir, "proposals", "reject", pid, "--reason", "the push rule is wrong", "--wrong", "3")
    assert done.returncode == 0, done.stderr
    assert "wrong: 3 (added): “Never force-push to main.”; 1 lesson(s) marked rejected" in done.stdout
    assert "2 lesson(s) back in the pool" in done.stdout
    marks = {r.id: (r.is_processed, r.rejected) for r in store.reflexions()}
    assert marks == {"r-a": (False, None), "r-b": (False, None), "r-c": (True, "the push rule is wrong")}


def waiting_batch(store: LearningStore) -> None:
    """Three learnable lessons no proposal cites: the batch a pass too big
    for one call left waiting for the first proposal's answer."""
    said = {"r-d": "Run the linter before a commit.", "r-e": "Keep each commit to one change.",
            "r-f": "Write the test before the fix."}
    store.append_reflexions([
        builders.reflexion(i, t, session_id="s2", trigger="followup", context="", intervention=t,
                           created_at="2026-12-01T00:00:01Z")
        for i, t in said.items()
    ])


def test_an_accept_that_leaves_lessons_waiting_starts_the_next_learn_pass(env, store_dir):
    from tests.model_server import ModelServer, lessons_responder

    from .conftest import wait_until

    pid = "20261201T000000-cli00009"
    store = seeded(store_dir, pid)
    waiting_batch(store)
    with ModelServer(responder=lessons_responder) as server:
        modelled = {**env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": server.url, "MECHA_MODEL": "scripted-model"}
        done = run(modelled, store_dir, "proposals", "accept", pid)
        assert done.returncode == 0, done.stderr
        said = [line for line in done.stdout.splitlines() if "more lesson(s) wait" in line]
        assert len(said) == 1 and said[0].startswith("3 more lesson(s) wait in behavior; a learn pass started: job "), done.stdout
        job_id = said[0].rsplit(" ", 1)[1]

        def finished() -> dict | None:
            jobs = json.loads(run(env, store_dir, "--json", "jobs").stdout)["jobs"]
            job = next((j for j in jobs if j["id"] == job_id), None)
            return job if job is not None and job["state"] != "running" else None

        job = wait_until(finished, "the learn pass the accept started")
    assert job["kind"] == "learn" and job["state"] == "done", job
    filed = [p for p in store.proposals() if p.id != pid]
    assert len(filed) == 1 and job["proposal_id"] == filed[0].id, (job, filed)
    assert sorted(filed[0].reflexion_ids) == ["r-d", "r-e", "r-f"]
    assert server.requests, "the learner was asked over HTTP"


def test_an_accept_with_no_model_says_the_lessons_wait_and_starts_nothing(env, store_dir):
    pid = "20261201T000000-cli00010"
    store = seeded(store_dir, pid)
    waiting_batch(store)
    done = run(env, store_dir, "proposals", "accept", pid)
    assert done.returncode == 0, done.stderr
    assert "3 more lesson(s) wait in behavior; no model is configured, so no learn pass started: `" in done.stdout
    assert "model use " in done.stdout, done.stdout
    assert json.loads(run(env, store_dir, "--json", "jobs").stdout)["jobs"] == []


def test_a_rejection_says_its_lessons_wait_and_starts_no_pass_by_itself(env, store_dir):
    # Pins: a reject starting a learn pass at once over the very lessons the
    # person had just turned down, spending a call to argue them again.
    pid = "20261201T000000-cli00011"
    seeded(store_dir, pid)
    done = run(env, store_dir, "proposals", "reject", pid, "--reason", "not now")
    assert done.returncode == 0, done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.startswith("3 more lesson(s) wait in behavior; after a rejection no learn pass starts by itself: `"), done.stdout
    assert "learn behavior` learns them again" in last, done.stdout
    assert json.loads(run(env, store_dir, "--json", "jobs").stdout)["jobs"] == []
