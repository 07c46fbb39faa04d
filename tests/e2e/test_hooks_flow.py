"""The agents' hooks as the agents run them: `hooks install` through the
real CLI into settings files shaped as the agents write them, then each
installed command run the way Claude Code runs it — `sh -c COMMAND`, the
hook's JSON on stdin, the project as the working directory, HOME a temp dir —
against real-shaped session files, the pass detached and answered by the
scripted model server."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import builders
from tests.core.ccfixture import REJECTION, Claude, Codex, text, use
from tests.processes import wait_for_hook_pass

from .conftest import WAIT_S, store_lines, wait_until

SID = "5d1e0c3a-7f42-4b8e-9c11-2a6b3e8f0d44"


@pytest.fixture
def home(env) -> Path:
    return Path(env["HOME"])


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "src" / "invoices"
    (root / ".git").mkdir(parents=True)
    return root


def cli(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mecha.sidecar", *argv], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=WAIT_S)


def commands(settings: Path) -> dict[str, str]:
    """Event → the command of our hook for it, as the file holds it."""
    doc = json.loads(settings.read_text())
    out = {}
    for event, groups in doc["hooks"].items():
        for group in groups:
            for entry in group["hooks"]:
                if " hook " in entry["command"]:
                    out[event] = entry["command"]
    return out


def run_hook(command: str, payload: Any, *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """As the agent runs a command hook: a shell, the JSON on stdin."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    ran = subprocess.run(["sh", "-c", command], input=data, cwd=cwd, env=env, capture_output=True, timeout=WAIT_S)
    argv = shlex.split(command)
    if "session-end" in argv and "--learning-dir" in argv:
        # The hook returns once the session is queued; what it queued is
        # read by the hook pass it started.
        wait_for_hook_pass(Path(argv[argv.index("--learning-dir") + 1]))
    return ran


def claude_session(cwd: Path) -> Claude:
    """A Claude Code session with a refusal given its reason and a
    correction after an answer."""
    c = Claude(session=SID, cwd=str(cwd))
    c.user("Fix the rounding in the invoice totals.")
    c.assistant(text("Reading the totals module."), use("t1", "Read", file_path=f"{cwd}/totals.py"))
    c.result("t1", "def total(xs): return round(sum(xs), 2)")
    c.assistant(use("t2", "Bash", command="git push --force"))
    c.result("t2", REJECTION, is_error=True)
    c.user([text("[Request interrupted by user for tool use]")])
    c.user("Never force-push; open a pull request instead.")
    c.assistant(text("Understood. I changed total() to round half-even and opened a PR."))
    c.user("No: totals must round half-up, the accountants said so.")
    c.assistant(text("Changed to half-up."))
    return c


def hook_log(store: Path) -> list[str]:
    path = store / "logs" / "hooks.log"
    return path.read_text().splitlines() if path.exists() else []


def jobs_settled(store: Path) -> list[dict[str, Any]]:
    """Every pass's final record, once none is running (bounded)."""
    def settled() -> list[dict[str, Any]] | None:
        records = sorted((json.loads(p.read_text()) for p in (store / "jobs").glob("*.json")),
                         key=lambda r: r["started_at"])
        return records if records and all(r["state"] != "running" for r in records) else None

    return wait_until(settled, "every reflect pass to finish")


def inbox_entries(store: Path) -> list[dict[str, Any]]:
    inbox = store / "inbox"
    return [json.loads(p.read_text()) for p in sorted(inbox.glob("*.json"))] if inbox.is_dir() else []


def test_claude_settings_keep_everything_else_and_uninstall_gives_the_bytes_back(env, home, project):
    # Pins: an install that loses a person's permission, env key or hook, or
    # reformats the file; an uninstall that takes more than it put.
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    original = json.dumps({
        "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"], "defaultMode": "acceptEdits"},
        "env": {"ANTHROPIC_MODEL": "claude-opus-4-1", "BASH_DEFAULT_TIMEOUT_MS": "120000"},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/.claude/guard.sh"}]}],
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "cat ~/notes/today.md"}]}],
        },
        "includeCoAuthoredBy": False,
        "cleanupPeriodDays": 60,
    }, indent=2) + "\n"
    settings.write_text(original)

    done = cli(env, project, "hooks", "install", "claude")
    assert done.returncode == 0, done.stderr
    doc = json.loads(settings.read_text())
    before = json.loads(original)
    assert list(doc) == list(before) and doc["permissions"] == before["permissions"] and doc["env"] == before["env"]
    assert doc["hooks"]["PreToolUse"] == before["hooks"]["PreToolUse"]
    assert doc["hooks"]["SessionStart"][0] == before["hooks"]["SessionStart"][0]
    ours = commands(settings)
    assert sorted(ours) == ["PreCompact", "SessionEnd", "SessionStart"]
    program = ours["SessionEnd"].split()[0]
    assert os.path.isabs(program) and os.access(program, os.X_OK)  # what the agent's shell will run

    stamp = settings.stat().st_mtime_ns, settings.stat().st_ino
    again = cli(env, project, "hooks", "install", "claude")
    assert again.returncode == 0 and "already installed" in again.stdout
    assert (settings.stat().st_mtime_ns, settings.stat().st_ino) == stamp  # not even rewritten

    status = cli(env, project, "hooks", "status")
    assert status.returncode == 0 and f"claude (user) {settings}: " in status.stdout

    gone = cli(env, project, "hooks", "uninstall", "claude")
    assert gone.returncode == 0, gone.stderr
    assert settings.read_text() == original


def test_a_settings_file_that_is_not_json_is_refused_by_name_and_left_alone(env, home, project):
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    broken = '{\n  "permissions": {"allow": ["Bash(ls)"],\n}\n'
    settings.write_text(broken)
    done = cli(env, project / ".", "hooks", "install", "claude", "--scope", "project")
    assert done.returncode == 1 and str(settings) in done.stderr and "not valid JSON" in done.stderr
    assert settings.read_text() == broken
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.json"]  # no temp file left


def test_session_end_queues_the_new_interventions_once_and_the_pass_reflects_them(env, home, project, store_dir, server):
    # Pins: the loop not running when a session ends, a second run queueing
    # again, or a grown session queueing its old interventions twice.
    done = cli(env, project, "hooks", "install", "claude", "--learning-dir", str(store_dir))
    assert done.returncode == 0, done.stderr
    ours = commands(home / ".claude" / "settings.json")
    assert "--learning-dir" in ours["SessionEnd"]
    session = claude_session(project)
    transcript = home / ".claude" / "projects" / str(project).replace("/", "-") / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(session.bytes())
    agent_env = {**env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": server.url, "MECHA_MODEL": "scripted-model"}
    # The test harness's PYTHONPATH ends in an empty entry, which Python reads
    # as the working directory; a person's agent has no such entry.
    agent_env["PYTHONPATH"] = os.pathsep.join(p for p in env["PYTHONPATH"].split(os.pathsep) if p)
    payload = {"session_id": SID, "transcript_path": str(transcript), "cwd": str(project),
               "hook_event_name": "SessionEnd", "reason": "prompt_input_exit", "permission_mode": "default"}

    # The project has modules of its own the hook must not pick up from its
    # working directory.
    (project / "msgspec.py").write_text("raise SystemExit('the project shadowed msgspec')\n")
    (project / "mecha").mkdir()
    (project / "mecha" / "__init__.py").write_text("raise SystemExit('the project shadowed mecha')\n")
    ran = run_hook(ours["SessionEnd"], payload, cwd=project, env=agent_env)
    assert ran.returncode == 0 and ran.stdout == b"", ran.stderr
    (line,) = hook_log(store_dir)
    assert f"session={SID}" in line and f"cwd={project}" in line and "queued 2 new intervention(s)" in line
    (job,) = jobs_settled(store_dir)
    assert job["kind"] == "reflect" and job["state"] == "done", job
    said = sorted(r["intervention"] for r in store_lines(store_dir, "reflections.jsonl"))
    assert len(said) == 2 and any(s.startswith("Never force-push") for s in said)
    assert any(s.startswith("No: totals must round half-up") for s in said)

    again = run_hook(ours["SessionEnd"], payload, cwd=project, env=agent_env)
    assert again.returncode == 0 and again.stdout == b""
    assert "nothing new" in hook_log(store_dir)[-1] and len(list((store_dir / "jobs").glob("*.json"))) == 1

    # The session goes on, is compacted: only the new turn's correction is queued.
    session.assistant(text("I also reformatted the module."))
    session.user("Don't reformat files you were not asked to touch.")
    transcript.write_bytes(session.bytes())
    compact = {**payload, "hook_event_name": "PreCompact", "trigger": "auto", "custom_instructions": ""}
    ran = run_hook(ours["PreCompact"], compact, cwd=project, env=agent_env)
    assert ran.returncode == 0 and ran.stdout == b""
    assert "queued 1 new intervention(s)" in hook_log(store_dir)[-1]
    # Three lessons now: the seeds' minimum, so the reflect pass starts a learn pass.
    assert [(j["kind"], j["state"]) for j in jobs_settled(store_dir)] == [
        ("reflect", "done"), ("reflect", "done"), ("learn", "done")]
    said = [r["intervention"] for r in store_lines(store_dir, "reflections.jsonl")]
    assert len(said) == 3 and said[-1].startswith("Don't reformat files")
    assert len(server.completions()) == 4  # each intervention asked about once, then one learner call


def test_a_hook_that_cannot_do_its_work_exits_0_says_nothing_to_the_agent_and_logs_why(env, home, project, store_dir):
    cli(env, project, "hooks", "install", "claude", "--learning-dir", str(store_dir))
    end = commands(home / ".claude" / "settings.json")["SessionEnd"]
    cases = [
        (b"\x00garbage", "not JSON"),
        (b"", "no input"),
        ({"session_id": SID, "transcript_path": str(home / "gone.jsonl"), "cwd": str(project)}, "is not there"),
        ({"session_id": SID, "cwd": str(project), "hook_event_name": "SessionEnd"}, "names no transcript_path"),
    ]
    for payload, says in cases:
        ran = run_hook(end, payload, cwd=project, env=env)
        assert ran.returncode == 0 and ran.stdout == b"" and ran.stderr == b"", (payload, ran.stderr)
        assert "failed: InvalidInput" in hook_log(store_dir)[-1] and says in hook_log(store_dir)[-1]
    assert inbox_entries(store_dir) == [] and not (store_dir / "jobs").exists()

    # A store that cannot be written: still 0 and nothing on stdout; the
    # reason goes to stderr, the one place left.
    blocker = home / "not-a-dir"
    blocker.write_text("")
    cli(env, project, "hooks", "install", "claude", "--learning-dir", str(blocker / "store"))
    end = commands(home / ".claude" / "settings.json")["SessionEnd"]
    transcript = home / "s.jsonl"
    transcript.write_bytes(claude_session(project).bytes())
    ran = run_hook(end, {"session_id": SID, "transcript_path": str(transcript), "cwd": str(project)}, cwd=project, env=env)
    assert ran.returncode == 0 and ran.stdout == b""
    assert b"failed:" in ran.stderr and b"hook log could not be written" in ran.stderr


def test_codex_finds_the_rollout_by_session_id_when_transcript_path_is_null(env, home, project, store_dir):
    sid = "0199aaaa-bbbb-7ccc-8ddd-0000000000c1"
    rollout = home / ".codex" / "sessions" / "2026" / "11" / "01" / f"rollout-2026-11-01T10-00-00-{sid}.jsonl"
    rollout.parent.mkdir(parents=True)
    c = Codex(session=sid)
    c.add("response_item", type="message", role="user", content=[{"type": "input_text", "text": "Add a --dry-run flag."}])
    c.add("response_item", type="message", role="assistant", content=[{"type": "output_text", "text": "Added --dry-run to the CLI."}])
    c.add("response_item", type="message", role="user", content=[{"type": "input_text", "text": "No, call it --check like the other tools."}])
    c.add("response_item", type="message", role="assistant", content=[{"type": "output_text", "text": "Renamed it to --check."}])
    rollout.write_text("".join(json.dumps(line) + "\n" for line in c.lines))
    done = cli(env, project, "hooks", "install", "codex", "--learning-dir", str(store_dir))
    assert done.returncode == 0 and "trust it: open /hooks" in done.stdout, done.stderr
    ours = commands(home / ".codex" / "hooks.json")
    assert sorted(ours) == ["PreCompact", "SessionEnd", "SessionStart"]
    payload = {"session_id": sid, "transcript_path": None, "cwd": str(project), "hook_event_name": "SessionEnd",
               "reason": "other"}
    ran = run_hook(ours["SessionEnd"], payload, cwd=project, env=env)
    assert ran.returncode == 0 and ran.stdout == b""
    assert "queued 1 new intervention(s)" in hook_log(store_dir)[-1], hook_log(store_dir)
    assert [j["state"] for j in jobs_settled(store_dir)] == ["failed"]  # no model configured here
    (entry,) = inbox_entries(store_dir)  # no model here: the pass failed, the entry waits
    assert entry["session_id"] == f"codex:{sid}" and len(entry["plans"]) == 1


def test_session_start_tells_the_person_of_pending_proposals_and_nothing_else(env, home, project, store_dir):
    from mecha.core.store.learning_store import LearningStore

    cli(env, project, "hooks", "install", "claude", "--learning-dir", str(store_dir))
    start = commands(home / ".claude" / "settings.json")["SessionStart"]
    payload = {"session_id": SID, "transcript_path": "/x.jsonl", "cwd": str(project), "hook_event_name": "SessionStart",
               "source": "startup", "model": "claude-opus-4-1"}
    ran = run_hook(start, payload, cwd=project, env=env)
    assert ran.returncode == 0 and ran.stdout == b"" and ran.stderr == b""

    store = LearningStore.open(store_dir)
    store.write_proposal(builders.proposal("p-1", created_at="2026-11-01T10:00:00Z"))
    ran = run_hook(start, payload, cwd=project, env=env)
    assert ran.returncode == 0 and ran.stderr == b""
    out = json.loads(ran.stdout)
    assert list(out) == ["systemMessage"] and "1 rule proposal awaits your review" in out["systemMessage"]
    assert ran.stdout.count(b"\n") == 1


def test_a_refusal_the_session_ended_on_is_queued_at_its_end_and_held_before_a_compaction(env, home, project, store_dir):
    # Pins: a session that ends on a silent refusal never having it queued
    # (the next session end never comes for it), or a compaction queueing a
    # refusal whose reason the person is about to type.
    cli(env, project, "hooks", "install", "claude", "--learning-dir", str(store_dir))
    ours = commands(home / ".claude" / "settings.json")
    c = Claude(session=SID, cwd=str(project))
    c.user("Deploy the branch.")
    c.assistant(text("Pushing it."), use("t1", "Bash", command="git push --force origin main"))
    c.result("t1", REJECTION, is_error=True)
    c.user([text("[Request interrupted by user for tool use]")])
    transcript = home / "s.jsonl"
    transcript.write_bytes(c.bytes())
    payload = {"session_id": SID, "transcript_path": str(transcript), "cwd": str(project)}
    ran = run_hook(ours["PreCompact"], {**payload, "hook_event_name": "PreCompact", "trigger": "manual"}, cwd=project, env=env)
    assert ran.returncode == 0 and ran.stdout == b""
    assert "nothing new to queue; 1 refusal(s) wait for the reason you give next" in hook_log(store_dir)[-1]
    ran = run_hook(ours["SessionEnd"], {**payload, "hook_event_name": "SessionEnd", "reason": "clear"}, cwd=project, env=env)
    assert ran.returncode == 0 and ran.stdout == b""
    assert "queued 1 new intervention(s)" in hook_log(store_dir)[-1]
    jobs_settled(store_dir)
    (entry,) = inbox_entries(store_dir)
    assert [p["intervention"]["trigger"] for p in entry["plans"]] == ["denial"]


def test_a_settings_file_kept_in_a_dotfiles_checkout_stays_linked(env, home, project, tmp_path):
    # Pins: install replacing the person's symbolic link with a plain file.
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{\n  "model": "opus"\n}\n')
    dotfiles.chmod(0o644)
    link = home / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    done = cli(env, project, "hooks", "install", "claude")
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and link.resolve() == dotfiles
    assert sorted(commands(dotfiles)) == ["PreCompact", "SessionEnd", "SessionStart"]
    assert dotfiles.stat().st_mode & 0o777 == 0o644
    assert cli(env, project, "hooks", "uninstall", "claude").returncode == 0
    assert dotfiles.read_text() == '{\n  "model": "opus"\n}\n' and link.is_symlink()


def test_the_loop_runs_by_itself_from_session_end_to_the_next_sessions_notice(env, home, project, store_dir, server):
    # Pins: a session-end hook whose reflections never become a proposal
    # because nothing starts a learn pass (the notice never fired), a learn
    # pass started below the seeds' minimum, and a notice that sends the
    # person to a terminal when the plugin's review command is at hand.
    done = cli(env, project, "hooks", "install", "claude", "--learning-dir", str(store_dir))
    assert done.returncode == 0, done.stderr
    ours = commands(home / ".claude" / "settings.json")
    agent_env = {**env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": server.url, "MECHA_MODEL": "scripted-model"}
    transcript = home / "sessions" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    session = claude_session(project)  # two corrections: below the minimum of 3
    transcript.write_bytes(session.bytes())
    payload = {"session_id": SID, "transcript_path": str(transcript), "cwd": str(project), "hook_event_name": "SessionEnd"}
    assert run_hook(ours["SessionEnd"], payload, cwd=project, env=agent_env).returncode == 0
    assert [j["kind"] for j in jobs_settled(store_dir)] == ["reflect"]
    assert "learn pass" not in jobs_settled(store_dir)[0]["outcome"]

    session.assistant(text("I also renamed the module."))
    session.user("Don't rename modules without asking first.")
    transcript.write_bytes(session.bytes())
    assert run_hook(ours["SessionEnd"], payload, cwd=project, env=agent_env).returncode == 0
    jobs = jobs_settled(store_dir)
    assert [(j["kind"], j["domain"] if j["kind"] == "learn" else None) for j in jobs] == [
        ("reflect", None), ("reflect", None), ("learn", "behavior")]
    learn = jobs[-1]
    assert learn["state"] == "done" and learn["proposal_id"], learn
    assert f"learn pass {learn['id']} started for behavior" in jobs[1]["outcome"]

    start = {"session_id": "next", "transcript_path": None, "cwd": str(project), "hook_event_name": "SessionStart",
             "source": "startup"}
    told = json.loads(run_hook(ours["SessionStart"], start, cwd=project, env=agent_env).stdout)["systemMessage"]
    assert "1 rule proposal awaits your review" in told and "proposals" in told
    plugin = ours["SessionStart"] + " --review /mecha:review"
    told = json.loads(run_hook(plugin, start, cwd=project, env=agent_env).stdout)["systemMessage"]
    assert "type /mecha:review to go through it here" in told, told

    # Nothing new, nothing asked again: the pending proposal holds the scope.
    before = len(server.completions())
    session.assistant(text("Put the old module name back."))
    session.user("No, leave the changelog alone too.")
    transcript.write_bytes(session.bytes())
    assert run_hook(ours["SessionEnd"], payload, cwd=project, env=agent_env).returncode == 0
    jobs = jobs_settled(store_dir)
    assert [j["kind"] for j in jobs].count("learn") == 1 and len(server.completions()) == before + 1


def test_hooks_status_says_what_held_a_sessions_words_back_and_what_trusts_it(env, home, project, store_dir):
    # Pins: a hook that queued untrusted words and left the person no way
    # to learn why.
    cli(env, project, "hooks", "install", "claude", "--learning-dir", str(store_dir))
    end = commands(home / ".claude" / "settings.json")["SessionEnd"]
    c = Claude(session=SID, cwd=str(project))
    c.user("Pick the next issue.").assistant(text("Listing."), use("t1", "Bash", command="bd ready --json")).result("t1", "[]")
    c.assistant(text("Nothing is ready.")).user("Then file one for the flaky test.")
    transcript = home / "s.jsonl"
    transcript.write_bytes(c.bytes())
    ran = run_hook(end, {"session_id": SID, "transcript_path": str(transcript), "cwd": str(project), "hook_event_name": "SessionEnd"},
                   cwd=project, env={**env, "MECHA_MODEL_BASE_URL": "http://127.0.0.1:9", "MECHA_MODEL_API": "openai", "MECHA_MODEL": "none"})
    assert ran.returncode == 0, ran.stderr
    status = cli(env, project, "hooks", "status", "--learning-dir", str(store_dir))
    assert "1 held back as untrusted by line 3: Bash `bd ready --json` — bd: not in the table" in status.stdout, status.stdout
    assert "to trust it: mecha-sidecar trust add 'Bash(bd)'" in status.stdout


def test_a_reflect_pass_that_wrote_no_lesson_starts_no_learn_pass(env, store_dir, server):
    # Pins: a scope whose proposal the learn gate refused asked the same
    # question again after every session, though nothing new was learned.
    from mecha.core.store.learning_store import LearningStore

    LearningStore.open(store_dir).append_reflexions([
        builders.reflexion(f"R{n}", f"Ask before deleting files ({n}).", session_id=f"s{n}", context="ctx",
                           intervention=f"Ask before deleting files ({n}).")
        for n in range(3)
    ])
    agent_env = {**env, "MECHA_LEARNING_DIR": str(store_dir), "MECHA_MODEL_API": "openai",
                 "MECHA_MODEL_BASE_URL": server.url, "MECHA_MODEL": "scripted-model"}
    ran = subprocess.run([sys.executable, "-m", "mecha.sidecar", "pass", "reflect", "--job", "reflect-1", "--learn-after"],
                         env=agent_env, cwd=store_dir, capture_output=True, text=True, timeout=WAIT_S)
    assert ran.returncode == 0, ran.stderr
    (job,) = jobs_settled(store_dir)
    assert job["kind"] == "reflect" and "learn pass" not in (job.get("outcome") or "")
    assert server.completions() == []


def test_a_session_end_with_nothing_new_asks_again_what_an_earlier_pass_left_waiting(
    env, home, project, store_dir, server
):
    # Pins: the hook pass starting a reflect pass only for what its own
    # sessions queued, so work left waiting (a pass that met a dead model)
    # waited for the next session with a correction in it.
    from mecha.core.sessions.transcript import Message
    from mecha.core.store.inbox import enqueue, session_entry
    from mecha.core.store.learning_store import LearningStore

    waiting = [
        Message(role="user", content="Draft the release notes."),
        Message(role="assistant", content="Here are the notes, in the passive voice throughout."),
        Message(role="user", content="No: write release notes in the active voice."),
    ]
    enqueue(LearningStore.open(store_dir), session_entry("left-waiting", waiting, None))
    cli(env, project, "hooks", "install", "claude", "--learning-dir", str(store_dir))
    end = commands(home / ".claude" / "settings.json")["SessionEnd"]
    quiet = Claude(session=SID, cwd=str(project))
    quiet.user("What does total() return?")
    quiet.assistant(text("The sum of the amounts, rounded to cents."))
    transcript = home / "quiet.jsonl"
    transcript.write_bytes(quiet.bytes())
    agent_env = {**env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": server.url, "MECHA_MODEL": "scripted-model"}
    agent_env["PYTHONPATH"] = os.pathsep.join(p for p in env["PYTHONPATH"].split(os.pathsep) if p)

    ran = run_hook(end, {"session_id": SID, "transcript_path": str(transcript), "cwd": str(project),
                         "hook_event_name": "SessionEnd"}, cwd=project, env=agent_env)
    assert ran.returncode == 0 and ran.stdout == b"", ran.stderr
    (line,) = hook_log(store_dir)
    assert "nothing new to queue" in line and "reflect pass" in line and "started" in line, line
    (job,) = jobs_settled(store_dir)
    assert job["kind"] == "reflect" and job["state"] == "done", job
    said = [r["intervention"] for r in store_lines(store_dir, "reflections.jsonl")]
    assert said == ["No: write release notes in the active voice."]


def test_a_newcomer_with_no_model_is_told_once_at_the_next_session_start_with_the_command_that_fixes_it(
    env, home, project, store_dir, tmp_path
):
    # Pins: the silent loop — hooks installed, no model configured, every
    # pass failing with NoModel, the next session showing nothing, and only
    # `doctor` (which said "ok" beside the failed passes) knowing.
    done = cli(env, project, "hooks", "install", "claude", "--learning-dir", str(store_dir))
    assert done.returncode == 0, done.stderr
    ours = commands(home / ".claude" / "settings.json")
    transcript = home / "sessions" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    session = claude_session(project)
    transcript.write_bytes(session.bytes())
    end = {"session_id": SID, "transcript_path": str(transcript), "cwd": str(project), "hook_event_name": "SessionEnd"}
    start = {"session_id": "next", "transcript_path": None, "cwd": str(project), "hook_event_name": "SessionStart",
             "source": "startup"}
    assert run_hook(ours["SessionEnd"], end, cwd=project, env=env).returncode == 0
    (job,) = jobs_settled(store_dir)
    assert job["state"] == "failed" and job["outcome"].startswith("NoModel"), job

    ran = run_hook(ours["SessionStart"], start, cwd=project, env=env)
    assert ran.returncode == 0 and ran.stderr == b"", ran.stderr
    told = json.loads(ran.stdout)["systemMessage"]
    assert "corrections from 1 session wait to be learned from, but no model is configured" in told, told
    command = told.split("`")[1]
    assert command.endswith("model use claude-code") and "Claude Code the model" in told, told

    # Once: the next session hears nothing, even after another pass fails the same way.
    assert run_hook(ours["SessionStart"], start, cwd=project, env=env).stdout == b""
    session.assistant(text("Renamed it."))
    session.user("Don't rename modules without asking first.")
    transcript.write_bytes(session.bytes())
    assert run_hook(ours["SessionEnd"], end, cwd=project, env=env).returncode == 0
    assert [j["state"] for j in jobs_settled(store_dir)] == ["failed", "failed"]
    assert run_hook(ours["SessionStart"], start, cwd=project, env=env).stdout == b""

    # doctor lists the failed pass as failed.
    doctor = cli(env, project, "doctor", "--learning-dir", str(store_dir))
    jobs_line = next(line for line in doctor.stdout.splitlines() if " jobs " in line)
    assert jobs_line.startswith("BAD") and "the last reflect pass failed" in jobs_line and "NoModel" in jobs_line

    # The command works as written, in a shell, and the config file then names the agent.
    ran_command = subprocess.run(["sh", "-c", command], cwd=project, env=env, capture_output=True, text=True,
                                 timeout=WAIT_S)
    assert ran_command.returncode == 0, ran_command.stderr
    assert 'api = "claude-code"' in Path(env["MECHA_SIDECAR_CONFIG"]).read_text()
