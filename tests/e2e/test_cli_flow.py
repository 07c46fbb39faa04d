"""The same loop at a terminal: every verb a real `python -m mecha.sidecar`
subprocess, the model configured the way a person would (environment
variables), passes detached as they are for the harness."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import (
    CLEAN,
    WAIT_S,
    fnv1a_64,
    git_log,
    multi_steer_session,
    steer_session,
    store_ids,
    store_lines,
)


@pytest.fixture
def cli(env, store_dir, tmp_path):
    """Run one CLI verb; `model_url` configures the fake model through the
    environment, as a person would."""

    def run(*argv: str, model_url: str | None = None) -> subprocess.CompletedProcess[str]:
        run_env = dict(env)
        if model_url is not None:
            run_env.update(MECHA_MODEL_API="openai", MECHA_MODEL_BASE_URL=model_url, MECHA_MODEL="scripted-model")
        return subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), *argv],
            env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S,
        )

    return run


def _sessions(directory: Path) -> dict[str, list[str]]:
    """Three transcript files in both shapes; returns each session's steers."""
    directory.mkdir()
    alpha = ["Keep the changelog entries in past tense.", "Do not reformat files you were not asked to edit."]
    (directory / "alpha.json").write_text(
        json.dumps({"session_id": "alpha", "messages": multi_steer_session(alpha), "taint_timeline": CLEAN})
    )
    beta_steer = "Run the tests before you say you are done."
    beta_denial = "never push to main without asking"
    (directory / "beta.json").write_text(
        json.dumps(
            {
                "session_id": "beta",
                "messages": multi_steer_session([beta_steer], denial=beta_denial),
                "taint_timeline": CLEAN,
                "interactive": True,
            }
        )
    )
    # JSONL: one message per line, no taint timeline at all.
    gamma = "Stop and ask before touching the database."
    (directory / "gamma.jsonl").write_text("\n".join(json.dumps(m) for m in steer_session(gamma)) + "\n")
    (directory / "notes.txt").write_text("not a transcript")
    return {"alpha": alpha, "beta": [beta_steer, beta_denial], "gamma": [gamma]}


def test_the_whole_loop_through_the_cli_verbs(cli, server, store_dir, tmp_path):
    url = server.url
    sessions = _sessions(tmp_path / "sessions")

    reflected = cli("reflect", "--sessions", str(tmp_path / "sessions"), model_url=url)
    assert reflected.returncode == 0, reflected.stderr
    assert "3 session(s) queued for reflection" in reflected.stdout
    assert re.search(r"job \S+ \(reflect\): done — 5 reflection\(s\) written \(4 learnable\)", reflected.stdout), reflected.stdout
    # One per intervention the model may learn from: gamma's, untrusted, is
    # recorded without a call.
    assert len(server.completions()) == 4

    reflections = store_lines(store_dir, "reflections.jsonl")
    by_session = {s: [r for r in reflections if r["session_id"] == s] for s in sessions}
    for session, said in sessions.items():
        assert sorted(r["intervention"] for r in by_session[session]) == sorted(said)
    assert {r["origin"] for r in by_session["alpha"] + by_session["beta"]} == {"clean"}
    # A JSONL transcript carries no taint timeline: it fails closed.
    [gamma] = by_session["gamma"]
    assert gamma["origin"] == "untrusted" and gamma["evidence"] == "intervention_only" and gamma["context"] == ""
    assert sorted(store_ids(store_dir, "mined.jsonl")) == ["alpha", "beta", "gamma"]

    again = cli("reflect", "--sessions", str(tmp_path / "sessions"), model_url=url)
    assert again.returncode == 0 and "3 already mined" in again.stdout and "0 session(s) queued" in again.stdout
    assert len(server.completions()) == 4

    learned = cli("learn", "behavior", model_url=url)
    assert learned.returncode == 0, learned.stderr
    match = re.search(r"\(learn behavior\): done — proposal (\S+) pending review: 0 -> 4 active behavior rules", learned.stdout)
    assert match, learned.stdout
    proposal_id = match.group(1)
    assert f"[proposal {proposal_id}]" in learned.stdout
    assert not (store_dir / "rules" / "behavior.learned.toml").exists()

    listed = cli("proposals")
    assert listed.returncode == 0
    [line] = listed.stdout.splitlines()
    assert line.split()[:5] == [proposal_id, "pending", "behavior", "0", "->"]
    listed_json = json.loads(cli("--json", "proposals", "--status", "pending").stdout)
    assert [p["id"] for p in listed_json["proposals"]] == [proposal_id]

    shown = cli("proposals", "show", proposal_id)
    assert shown.returncode == 0
    assert "--- behavior rules block (live when proposed)" in shown.stdout
    assert "+## Learned rules" in shown.stdout and "+### behavior" in shown.stdout
    assert "Run the tests before you say you are done" in shown.stdout
    assert "Stop and ask before touching the database" not in shown.stdout  # untrusted: never a rule
    shown_json = json.loads(cli("--json", "proposals", "show", proposal_id).stdout)
    assert shown_json["proposal"]["status"] == "pending" and shown_json["diff"].startswith("---")

    accepted = cli("proposals", "accept", proposal_id[:-3])
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.startswith(f"accepted {proposal_id}  accepted")

    block = cli("block")
    assert block.returncode == 0
    assert block.stdout.startswith("## Learned rules\n")
    assert "- When the person says something like \"Keep the changelog entries in past tense\"" in block.stdout
    block_json = json.loads(cli("--json", "block").stdout)
    assert block_json["rules_hash"] == fnv1a_64(block_json["block"])
    assert f"rules_hash {block_json['rules_hash']}" in block.stdout
    assert len(block_json["rule_ids"]) == 4 and block_json["domains"] == ["behavior", "writing"]

    jobs_json = json.loads(cli("--json", "jobs").stdout)
    assert sorted((j["kind"], j["state"]) for j in jobs_json["jobs"]) == [("learn", "done"), ("reflect", "done")]

    twice = cli("proposals", "accept", proposal_id)
    assert twice.returncode == 1
    assert "NotPending" in twice.stderr and "already accepted" in twice.stderr

    subjects = git_log(store_dir)
    assert [s.split(":")[0].split(" (")[0] for s in subjects] == [
        "reflect session alpha",
        "reflect session beta",
        "reflect session gamma",
        "learn behavior",
        f"accept proposal {proposal_id}",
    ], subjects
    assert "2 reflection(s), 2 learnable" in subjects[0]
    assert "1 reflection(s), 0 learnable" in subjects[2]
    assert "propose 0 -> 4 active rules" in subjects[3]


def test_learning_below_the_minimum_says_why_and_succeeds(cli, server):
    result = cli("learn", "behavior", model_url=server.url)
    assert result.returncode == 0, result.stderr
    # What to do about it, by name: the floor is `--min`.
    assert result.stdout.strip() == (
        "nothing started: behavior has 0 learnable unprocessed reflection(s); a learn pass needs at least 3 "
        "(`--min N` sets that floor; more come from `mecha-sidecar import claude` or the hooks)"
    )
    assert json.loads(cli("--json", "learn", "behavior").stdout)["job"] is None
    assert server.completions() == []


def test_bad_ids_and_domains_fail_by_name(cli, store_dir):
    missing = cli("proposals", "accept", "nope")
    assert missing.returncode == 1
    assert "NotFound" in missing.stderr and "nope" in missing.stderr
    assert missing.stdout == ""

    bad = cli("learn", "../x")
    assert bad.returncode == 1
    assert "InvalidDomain" in bad.stderr and "'../x'" in bad.stderr
    assert not (store_dir.parent / "x").exists()


def test_mine_with_no_file_reads_the_bundled_sample(cli):
    result = cli("mine")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "3 intervention(s):"
    triggers = re.findall(r"^  \[(\w+)\] at message (\d+): (.*)$", result.stdout, re.M)
    assert triggers == [
        ("steer", "2", "Only touch docs/RELEASE.md, leave the other files alone."),
        ("denial", "4", "never delete files I did not ask you to touch"),
        ("followup", "10", "Too long: give me two sentences, and skip the suggestions."),
    ]
    # The hook's refusal and the slash command are not a person.
    assert "Blocked by a hook" not in result.stdout and "/exit" not in result.stdout
    as_json = json.loads(cli("--json", "mine").stdout)
    assert [i["trigger"] for i in as_json["interventions"]] == ["steer", "denial", "followup"]


def test_doctor_without_a_model_fails_and_shows_every_check(cli, server, store_dir, tmp_path):
    # Give it a store to look at first.
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "s.json").write_text(
        json.dumps({"session_id": "s", "messages": steer_session("Use tabs."), "taint_timeline": CLEAN})
    )
    assert cli("reflect", "--sessions", str(tmp_path / "one"), model_url=server.url).returncode == 0

    result = cli("doctor")
    assert result.returncode != 0
    rows = {name: mark for mark, name in re.findall(r"^(ok |BAD)  (\S+)", result.stdout, re.M)}
    assert len(rows) == len(result.stdout.splitlines())
    assert set(rows) >= {"store", "permissions", "git", "budget", "routing", "learner", "proposals", "jobs", "model"}
    assert rows["model"] == "BAD" and rows["store"] == "ok " and rows["git"] == "ok "
    assert "no model configured" in result.stdout

    checks = json.loads(cli("--json", "doctor").stdout)["checks"]
    assert [c["name"] for c in checks][-1] == "model" and checks[-1]["ok"] is False

    healthy = cli("doctor", model_url=server.url)
    assert healthy.returncode == 0, healthy.stdout
    assert re.search(r"^ok   model", healthy.stdout, re.M)


def test_the_pass_verb_honours_learning_dir_and_refuses_a_bad_job_id(tmp_path: Path) -> None:
    # A pass started by hand must act on the store it is pointed at, and an
    # id that could climb out of jobs/ is refused before anything is written.
    import subprocess
    import sys

    store = tmp_path / "elsewhere"
    base = [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store), "pass", "learn", "--domain", "behavior"]
    bad = subprocess.run([*base, "--job", "../escape"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1 and "invalid job id" in bad.stderr
    assert not (tmp_path / "escape.json").exists()
    ok = subprocess.run([*base, "--job", "j1"], capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    assert '"state":"done"' in (store / "jobs" / "j1.json").read_text()


def test_a_set_aside_session_is_named_by_jobs_doctor_and_inbox_and_retried_or_dropped_from_the_cli(cli, store_dir, tmp_path):
    # Pins: a session the model server refuses outright (a paste longer than
    # its context) blocking every later pass, with no way out but editing
    # files by hand.
    from tests.model_server import ModelServer, lessons_responder, request_prompts, status

    refused = {"on": True}

    def responder(request, dialect):
        if refused["on"] and "PASTED-LOG" in request_prompts(request, dialect)[1]:
            return status(400, body=json.dumps({"error": {"message": "context length exceeded"}}))
        return lessons_responder(request, dialect)

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for sid, steer in (("huge", "PASTED-LOG: never deploy on fridays"), ("after", "Run the linter before committing.")):
        (sessions / f"{sid}.json").write_text(
            json.dumps({"session_id": sid, "messages": steer_session(steer), "taint_timeline": CLEAN})
        )
    with ModelServer(responder=responder) as server:
        reflected = cli("reflect", "--sessions", str(sessions), model_url=server.url)
        assert reflected.returncode == 0, reflected.stdout + reflected.stderr
        assert "1 set aside" in reflected.stdout
        assert set(store_ids(store_dir, "mined.jsonl")) == {"huge", "after"}, "the session behind it was not blocked"

        listed = cli("--json", "inbox")
        [entry] = json.loads(listed.stdout)["set_aside"]
        assert entry["label"] == "session huge" and "HTTP 400" in entry["reason"]
        assert "1 set aside" in cli("jobs").stdout
        doctor = cli("doctor", model_url=server.url).stdout
        assert entry["id"] in doctor and "mecha-sidecar inbox retry ID" in doctor

        refused["on"] = False
        retried = cli("inbox", "retry", entry["id"][:20], model_url=server.url)
        assert retried.returncode == 0, retried.stdout + retried.stderr
        assert json.loads(cli("--json", "inbox").stdout) == {"waiting": 0, "set_aside": [], "withheld": 0, "withheld_recent": []}
        lessons = [r["reflexion_text"] for r in store_lines(store_dir, "reflections.jsonl")]
        assert any("never deploy on fridays" in text for text in lessons)

    # Dropping: set aside once more, then gone for good.
    (sessions / "huge.json").unlink()
    (sessions / "other.json").write_text(
        json.dumps({"session_id": "other", "messages": steer_session("PASTED-LOG again"), "taint_timeline": CLEAN})
    )
    refused["on"] = True
    with ModelServer(responder=responder) as server:
        cli("reflect", "--sessions", str(sessions), model_url=server.url)
    [entry] = json.loads(cli("--json", "inbox").stdout)["set_aside"]
    dropped = cli("inbox", "drop", entry["id"])
    assert dropped.returncode == 0 and "dropped" in dropped.stdout
    assert json.loads(cli("--json", "inbox").stdout)["set_aside"] == []
    missing = cli("inbox", "retry", "no-such-entry")
    assert missing.returncode == 1 and "NotFound" in missing.stderr


def test_the_global_options_work_after_the_verb_as_before_it(env, server, tmp_path: Path) -> None:
    # Pins: `reflect --sessions DIR --learning-dir X` refused with
    # "unrecognized arguments" although the README says every verb takes them.
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "s.json").write_text(
        json.dumps({"session_id": "after", "messages": steer_session("Use tabs."), "taint_timeline": CLEAN})
    )
    store = tmp_path / "after-store"
    run_env = {**env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": server.url, "MECHA_MODEL": "scripted-model"}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", *argv],
            env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S,
        )

    reflected = run("reflect", "--sessions", str(tmp_path / "sessions"), "--learning-dir", str(store), "--json")
    assert reflected.returncode == 0, reflected.stderr
    summary = json.loads(reflected.stdout)
    assert summary["queued"] == ["after"] and summary["job"]["state"] == "done"
    assert [r["session_id"] for r in store_lines(store, "reflections.jsonl")] == ["after"]
    # Before the verb still works, and names the same store.
    listed = run("--learning-dir", str(store), "jobs", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [j["id"] for j in json.loads(listed.stdout)["jobs"]] == [summary["job"]["id"]]
    assert not (tmp_path / "home" / ".mecha").exists()  # never the default store


def test_the_help_lists_every_verb_a_person_types_and_not_the_detached_pass(env, tmp_path: Path):
    # Pins: `mecha-sidecar --help` listed the internal `pass` verb as
    # "==SUPPRESS==".
    shown = subprocess.run([sys.executable, "-m", "mecha.sidecar", "--help"], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "SUPPRESS" not in shown.stdout
    listed = set(re.findall(r"^    (\w+) ", shown.stdout, flags=re.M))
    assert {"serve", "lsp", "demo", "import", "export", "validate", "why", "hooks"} <= listed
    assert "pass" not in listed
