"""No dead ends at a terminal: each place a newcomer was left with nothing to
do next, run as they ran it — the real CLI in a child process, a fresh HOME,
real Claude Code session files, the scripted model server where a model is
needed — and held to a message that says what happened and what to do."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mecha.core.domain.reflexion import Reflexion
from mecha.core.store.learning_store import LearningStore
from mecha.core.store.ledger import LeapRun
from mecha.sidecar.clihelp import HIDDEN_VERBS, VERB_DOCS
from tests import builders
from tests.core.ccfixture import Claude, text
from tests.model_server import ModelServer, lessons_responder

from .conftest import WAIT_S, wait_until


@pytest.fixture
def home(env) -> Path:
    return Path(env["HOME"])


@pytest.fixture
def cli(env, store_dir, tmp_path):
    def run(*argv: str, model_url: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
        run_env = {**env, **extra}
        if model_url is not None:
            run_env.update(MECHA_MODEL_API="openai", MECHA_MODEL_BASE_URL=model_url, MECHA_MODEL="scripted-model")
        return subprocess.run([sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), *argv],
                              env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S)

    return run


def sessions(home: Path, count: int) -> Path:
    """`count` Claude Code sessions under HOME's projects folder, each with
    two corrections after answers."""
    root = home / ".claude" / "projects"
    for n in range(count):
        c = Claude(session=f"00000000-0000-4000-8000-{n:012d}", cwd=str(home / "src" / "app"))
        c.user("Tidy the release notes.")
        c.assistant(text("I rewrote the whole docs folder."))
        c.user(f"No, only touch docs/RELEASE.md ({n}).")
        c.assistant(text("Reverted the rest."))
        c.user(f"Keep entries in past tense ({n}).")
        c.assistant(text("Done."))
        path = root / "-src-app" / f"{c.session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(c.bytes())
    return root


def reflexion(n: int) -> Reflexion:
    return builders.reflexion(f"R{n}", f"Change only the files the person named, and ask before touching others ({n}).",
                              session_id=f"s{n}", context="ctx",
                              intervention=f"Only change the file you were asked to change ({n}).")


# ─── help and typos ─────────────────────────────────────────────────────────


def test_every_verb_a_person_sees_has_a_description_and_an_example_in_its_help(cli):
    # Pins: `learn --help` with no word on what a domain is or what --min does.
    listed = cli("--help").stdout
    verbs = re.findall(r"^    (\w+) ", listed.split("positional arguments:")[1].split("options:")[0], re.M)
    assert len(verbs) >= 20 and set(verbs) == set(VERB_DOCS), "every verb a person sees, and only those, has docs"
    for verb in verbs:
        shown = cli(verb, "--help")
        assert shown.returncode == 0, (verb, shown.stderr)
        description, examples = VERB_DOCS[verb]
        assert " ".join(description.split()[:6]) in " ".join(shown.stdout.split()), verb
        assert "examples:\n  mecha-sidecar " + verb in shown.stdout, verb
    assert not HIDDEN_VERBS & set(VERB_DOCS)
    explained = {
        ("learn",): ["domain", "behavior (how the agent works)", "--min N", "default: 3", "--retry"],
        ("proposals",): ["--status", "pending, accepted, rejected", "--reason", "in your words"],
        ("reflect",): ["--sessions DIR", "the folder of transcript files"],
    }
    for argv, words in explained.items():
        out = " ".join(cli(*argv, "--help").stdout.split())
        for word in words:
            assert word in out, (argv, word)


@pytest.mark.parametrize(("argv", "says"), [
    (["lern", "behavior"], "did you mean learn?"),
    (["proposals", "acept", "x"], "did you mean accept?"),
    (["learn", "behavior", "--mni", "2"], "--mni → --min"),
    (["hooks", "instal", "claude"], "did you mean install?"),
])
def test_a_typo_gets_the_nearest_spelling_and_how_to_get_help(cli, argv, says):
    # Pins: argparse's bare "invalid choice", which lists a hidden verb and no guess.
    got = cli(*argv)
    assert got.returncode == 2 and says in got.stderr, got.stderr
    assert "--help` shows what it takes" in got.stderr and "'pass'" not in got.stderr and " pass," not in got.stderr


def test_an_option_another_verb_takes_is_not_offered_as_its_own_correction(cli):
    # Pins: "unrecognized arguments: --no-wait (did you mean: --no-wait → --no-wait?)".
    got = cli("trust", "add", "Bash(bd)", "--no-wait")
    assert got.returncode == 2 and "`trust` does not take --no-wait" in got.stderr, got.stderr
    assert "→ --no-wait" not in got.stderr and "mecha-sidecar trust --help" in got.stderr


def test_a_misspelt_domain_is_refused_with_the_near_miss(cli, store_dir):
    # Pins: `learn behaviour` accepted silently ("0 learnable reflections").
    got = cli("learn", "behaviour")
    assert got.returncode == 1 and "did you mean behavior?" in got.stderr and "`mecha-sidecar learn behavior`" in got.stderr
    LearningStore.open(store_dir).append_reflexions([reflexion(1)])
    assert cli("learn", "behavior").returncode == 0
    assert cli("learn", "coding").returncode == 0, "a domain of the person's own, near nothing, is theirs to name"


# ─── learn ──────────────────────────────────────────────────────────────────


def test_a_scope_whose_last_pass_kept_the_rules_can_be_asked_again_with_retry(cli, store_dir, server):
    # Pins: after one pass that changed nothing, every later `learn` refused
    # ("no learnable reflection has arrived since") with no way to try again.
    store = LearningStore.open(store_dir)
    store.append_reflexions([reflexion(n) for n in range(3)])
    store.append_run(LeapRun(id="run-1", domain="behavior", reflexions_processed=0, rules_before=0, rules_after=0,
                             created_at="2026-11-02T00:00:00.000000Z", unchanged=True,
                             reflexion_ids=["R0", "R1", "R2"]))
    refused = cli("learn", "behavior", model_url=server.url)
    assert refused.returncode == 0 and "nothing started" in refused.stdout
    assert "`mecha-sidecar learn behavior --retry` asks the model again" in refused.stdout
    again = cli("learn", "behavior", "--retry", model_url=server.url)
    assert again.returncode == 0, again.stderr
    assert "proposal" in again.stdout and "pending review" in again.stdout, again.stdout


# ─── waiting on a pass ──────────────────────────────────────────────────────


def _ctrl_c_as_at_a_terminal() -> None:
    """Ctrl-C reaches the command as it does at a terminal, even when these
    tests run in the background (a shell starts a background job with SIGINT
    ignored, the child inherits that, and Python then never raises
    KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_while_import_waits_says_the_pass_goes_on_and_how_to_watch_and_stop_it(env, home, store_dir, tmp_path):
    # Pins: Ctrl-C printing `^C` while the pass went on unseen.
    sessions(home, 1)
    with ModelServer(responder=lessons_responder, latency_s=5.0) as slow:
        run_env = {**env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": slow.url, "MECHA_MODEL": "m"}
        proc = subprocess.Popen([sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), "import",
                                 "claude"], env=run_env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, preexec_fn=_ctrl_c_as_at_a_terminal)
        wait_until(lambda: slow.completions(), "the pass's first model call")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT_S)
        assert proc.returncode == 130, (out, err)
        assert "stopped waiting; the reflect pass" in err and "goes on in the background" in err, err
        assert "`mecha-sidecar jobs` shows how far it has got" in err and "`kill " in err
        assert "Traceback" not in err
        (job,) = [json.loads(p.read_text()) for p in (store_dir / "jobs").glob("*.json")]
        assert f"(pid {job['pid']})" in err and f"`kill {job['pid']}` stops it" in err
        # `jobs` shows how far it has got, in its one line.
        shown = subprocess.run([sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), "jobs"],
                               env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S).stdout
        assert f"job {job['id']} (reflect): running — 0 of 2 intervention(s) answered" in shown, shown
        assert "`kill PID` stops one" in shown
        # It did go on: the pass finishes by itself.
        wait_until(lambda: json.loads(next((store_dir / "jobs").glob("*.json")).read_text())["state"] == "done",
                   "the pass to finish by itself")


def test_import_again_while_a_pass_is_at_work_reports_that_pass_rather_than_nothing(env, home, store_dir, tmp_path):
    # Pins: "nothing new … done — 0 reflection(s)" while 60 interventions were in flight.
    sessions(home, 2)
    with ModelServer(responder=lessons_responder, latency_s=1.0) as slow:
        run_env = {**env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": slow.url, "MECHA_MODEL": "m"}

        def run(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), *argv],
                                  env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S * 2)

        first = run("--json", "import", "claude", "--no-wait")
        job = json.loads(first.stdout)["job"]
        again = run("import", "claude")
        assert again.returncode == 0, again.stderr
        assert f"nothing new to queue; reflect pass {job['id']} is still at work on what was queued before" in again.stdout
        assert "4 reflection(s) written" in again.stdout, again.stdout
        assert len(list((store_dir / "jobs").glob("*.json"))) == 1, "no second pass to find everything taken"


def test_jobs_shows_a_failed_pass_in_one_line_with_its_reason(cli, home, store_dir):
    # Pins: `jobs` reprinting the 25-line NoModel help for every failed pass.
    sessions(home, 1)
    cli("import", "claude")  # no model: the pass fails
    sessions(home, 2)
    cli("import", "claude")
    wait_until(lambda: all(json.loads(p.read_text())["state"] == "failed" for p in (store_dir / "jobs").glob("*.json")),
               "both passes to fail")
    shown = cli("jobs").stdout.strip().splitlines()
    failed = [line for line in shown if line.startswith("job ")]
    assert len(failed) == 2 and all(": failed — NoModel: " in line for line in failed), shown
    assert all(line.endswith("(the whole of it: mecha-sidecar jobs --json)") for line in failed)
    assert any(line.startswith("inbox: ") for line in shown) and len(shown) == 3, shown


def test_a_pass_outcome_names_only_commands_that_work(cli, home, store_dir, tmp_path):
    # Pins: "run `mecha-sidecar reflect` again", which fails without --sessions.
    def unusable(request: object, dialect: object):  # type: ignore[no-untyped-def]
        from tests.model_server import reply

        return reply('{"skip": false, "reflexion": "", "error_type": "other", "confidence": 0.5}')

    sessions(home, 1)
    with ModelServer(responder=unusable) as model:  # type: ignore[arg-type]
        done = cli("import", "claude", model_url=model.url)
    assert "pending: the next reflect pass asks them again: `mecha-sidecar inbox retry` starts one now" in done.stdout
    with ModelServer(responder=lessons_responder) as model:
        retried = cli("inbox", "retry", model_url=model.url)
    assert retried.returncode == 0 and "2 reflection(s) written" in retried.stdout, retried.stdout + retried.stderr
    nothing = cli("inbox", "retry")
    assert nothing.returncode == 0 and nothing.stdout.startswith("nothing waits in the inbox")


# ─── accept, export, hooks, doctor ──────────────────────────────────────────


def test_accept_says_whether_an_instructions_file_changed(cli, store_dir, server):
    # Pins: an accept that never says CLAUDE.md was left as it was.
    LearningStore.open(store_dir).append_reflexions([reflexion(n) for n in range(3)])
    learned = cli("learn", "behavior", model_url=server.url)
    proposal = json.loads(cli("--json", "proposals").stdout)["proposals"][0]["id"]
    assert f"review it: mecha-sidecar proposals show {proposal}" in learned.stdout
    accepted = cli("proposals", "accept", proposal)
    assert accepted.returncode == 0, accepted.stderr
    assert "no agent's instructions changed: neither Claude Code nor Codex is connected" in accepted.stdout
    assert "`mecha-sidecar export claude` writes the rules where Claude Code reads yours now" in accepted.stdout
    # The config file it names is the one this process reads, not a default
    # the person may not be using.
    config = cli("--json", "trust", "list")
    assert f"[export] in {json.loads(config.stdout)['path']} changes where" in accepted.stdout


def test_show_or_accept_without_an_id_names_the_pending_proposals(cli, store_dir, server):
    # Pins: `proposals show` with no id answering only "needs a proposal id".
    bare = cli("proposals", "show")
    assert bare.returncode != 0 and "none is pending (`mecha-sidecar learn` files one)" in bare.stderr, bare.stderr
    LearningStore.open(store_dir).append_reflexions([reflexion(n) for n in range(3)])
    cli("learn", "behavior", model_url=server.url)
    proposal = json.loads(cli("--json", "proposals").stdout)["proposals"][0]["id"]
    bare = cli("proposals", "show")
    assert bare.returncode != 0 and f"pending now: {proposal}" in bare.stderr, bare.stderr


def test_a_learn_pass_that_filed_several_proposals_points_at_all_of_them():
    # Pins: a pass over several scopes naming only its first proposal to review.
    from mecha.sidecar import humane

    job = {"id": "j1", "kind": "learn", "domain": "behavior", "state": "done", "proposal_id": "20261203T091333-99e57d61",
           "outcome": "project a: proposal 20261203T091333-99e57d61 proposed: 0 -> 1 active behavior rules; "
                      "project b: proposal 20261203T091347-3a1e9685 proposed: 0 -> 1 active behavior rules"}
    assert humane.job_line(job).endswith("[2 proposals] — review them: mecha-sidecar proposals list --status pending")
    one = {**job, "outcome": "proposal 20261203T091333-99e57d61 proposed: 0 -> 1 active behavior rules"}
    assert humane.job_line(one).endswith("review it: mecha-sidecar proposals show 20261203T091333-99e57d61")


def test_export_with_no_rules_creates_no_file(cli, home):
    # Pins: `export claude` on a fresh machine creating ~/.claude/CLAUDE.md.
    got = cli("export", "claude")
    assert got.returncode == 0, got.stderr
    assert not (home / ".claude").exists()
    assert "no rule for this scope yet, so no file was made; accept a proposal first" in got.stdout


def test_hooks_install_names_the_model_it_found_or_what_to_do(cli, home, tmp_path):
    # Pins: "configure a model" printed when one is configured.
    config = tmp_path / "sidecar.toml"
    config.write_text('[model]\napi = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "llama3.1"\n')
    got = cli("hooks", "install", "claude", MECHA_SIDECAR_CONFIG=str(config))
    assert got.returncode == 0, got.stderr
    assert "model: the passes will use the openai model 'llama3.1'" in got.stdout and "configure one" not in got.stdout
    by_env = cli("hooks", "install", "claude", MECHA_MODEL_API="openai", MECHA_MODEL_BASE_URL="http://127.0.0.1:9/v1",
                 MECHA_MODEL="qwen")
    assert "but the hooks run in your agent's environment" in by_env.stdout
    none = cli("hooks", "install", "claude", PATH="/usr/bin:/bin")
    assert "no model is configured" in none.stdout and "then `mecha-sidecar doctor`" in none.stdout


def test_doctor_on_a_fresh_install_has_no_bad_store(cli, store_dir):
    # Pins: `BAD store` as the first line a newcomer sees.
    got = cli("doctor")
    assert got.stdout.startswith("ok   store") and "the first import, hook or pass creates it" in got.stdout
    assert not store_dir.exists()
