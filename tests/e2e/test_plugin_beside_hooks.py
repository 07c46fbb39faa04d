"""mecha's Claude Code plugin and `hooks install claude` both run the same
session hooks: with both, each session was read twice. The plugin is
installed here by the real `claude` CLI (its own records, its own copy of
the plugin), `hooks status` and `hooks install claude` must see it and say
to keep one, and when both hooks fire for one session — the plugin's copy
of `bin/mecha-hook` and the settings file's command, each run as Claude Code
runs a hook — the session is queued once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.core.ccfixture import Claude, text
from tests.processes import wait_for_hook_pass
from tests.realparts import manifest

from .conftest import REPO, WAIT_S

SID = "7a0c5e2d-1b3f-4c6e-8a9d-0f1e2d3c4b5a"


@pytest.fixture
def agent_env(env: dict[str, str], store_dir: Path) -> dict[str, str]:
    """A person's machine: mecha-sidecar and claude on PATH, the store named."""
    venv_bin = os.path.dirname(sys.executable)
    return {**env, "PATH": f"{venv_bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
            "MECHA_LEARNING_DIR": str(store_dir), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "LANG": "C.UTF-8"}


def claude_cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(manifest("agents")["claude"]), "plugin", *argv], env=env, capture_output=True,
                          text=True, timeout=WAIT_S * 2)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def mecha(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "mecha.sidecar", *argv], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=WAIT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture
def plugin_copy(agent_env: dict[str, str]) -> Path:
    """The plugin installed as the README says, through the real CLI; the copy Claude Code runs."""
    claude_cli(agent_env, "marketplace", "add", str(REPO))
    claude_cli(agent_env, "install", "mecha@mecha")
    records = json.loads((Path(agent_env["HOME"]) / ".claude" / "plugins" / "installed_plugins.json").read_text())
    [record] = records["plugins"]["mecha@mecha"]
    return Path(record["installPath"])


def test_hooks_install_and_status_see_the_plugin_and_say_to_keep_one(agent_env, plugin_copy, tmp_path):
    # Pins: `hooks install claude` beside the plugin saying nothing, so every session was read twice.
    installed = mecha(agent_env, tmp_path, "hooks", "install", "claude").stdout
    assert "warning: Claude Code runs mecha's hooks twice: the plugin mecha@mecha (user)" in installed
    assert "`mecha-sidecar hooks uninstall claude`" in installed and "`claude plugin uninstall mecha@mecha`" in installed
    status = mecha(agent_env, tmp_path, "hooks", "status").stdout
    assert f"claude plugin mecha@mecha (user) {plugin_copy}: enabled" in status
    assert "warning: Claude Code runs mecha's hooks twice" in status
    wire = json.loads(mecha(agent_env, tmp_path, "hooks", "status", "--json").stdout)
    assert [(p["key"], p["scope"], p["enabled"]) for p in wire["plugins"]] == [("mecha@mecha", "user", True)]
    assert str(Path(agent_env["HOME"]) / ".claude" / "settings.json") in wire["double_reading"]

    # A plugin switched off runs no hook: nothing to warn of.
    claude_cli(agent_env, "disable", "mecha@mecha")
    status = mecha(agent_env, tmp_path, "hooks", "status").stdout
    assert "claude plugin mecha@mecha (user)" in status and "disabled: its hooks do not run" in status
    assert "warning" not in status
    # Codex's hooks are not Claude Code's: no word of the plugin.
    claude_cli(agent_env, "enable", "mecha@mecha")
    assert "warning" not in mecha(agent_env, tmp_path, "hooks", "install", "codex").stdout
    # The hooks gone, the plugin alone reads the sessions.
    mecha(agent_env, tmp_path, "hooks", "uninstall", "claude")
    assert "warning" not in mecha(agent_env, tmp_path, "hooks", "status").stdout


def test_without_the_plugin_hooks_install_says_nothing_of_reading_twice(agent_env, tmp_path):
    installed = mecha(agent_env, tmp_path, "hooks", "install", "claude").stdout
    assert "hooks installed" in installed and "twice" not in installed
    assert json.loads(mecha(agent_env, tmp_path, "hooks", "status", "--json").stdout)["double_reading"] is None


def test_both_hooks_firing_for_one_session_queue_it_once(agent_env, plugin_copy, store_dir, tmp_path):
    # Pins: each session read twice with both the plugin and `hooks install claude`.
    project = tmp_path / "src" / "ledger"
    (project / ".git").mkdir(parents=True)
    mecha(agent_env, project, "hooks", "install", "claude")
    settings = json.loads((Path(agent_env["HOME"]) / ".claude" / "settings.json").read_text())
    [group] = settings["hooks"]["SessionEnd"]
    [ours] = group["hooks"]
    c = Claude(session=SID, cwd=str(project))
    c.user("Add a --since option to the export.")
    c.assistant(text("Added --since, taking a date."))
    c.user("No: it takes a duration like 7d, as the other commands do.")
    c.assistant(text("Changed it to a duration."))
    transcript = Path(agent_env["HOME"]) / ".claude" / "projects" / "-src-ledger" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(c.bytes())
    payload = json.dumps({"session_id": SID, "transcript_path": str(transcript), "cwd": str(project),
                          "hook_event_name": "SessionEnd", "reason": "exit"}).encode()
    commands = [ours["command"], f'"{plugin_copy / "bin" / "mecha-hook"}" session-end']

    def fire(command: str) -> None:
        ran = subprocess.run(["sh", "-c", command], input=payload, cwd=project, env=agent_env, capture_output=True,
                             timeout=WAIT_S)
        assert ran.returncode == 0 and ran.stdout == b"", ran.stderr

    # As Claude Code runs the hooks of one event: at once.
    threads = [threading.Thread(target=fire, args=(command,)) for command in commands]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_for_hook_pass(store_dir)
    # And once more, a moment later, as a slow second hook would.
    fire(commands[1])
    wait_for_hook_pass(store_dir)

    entries = [json.loads(p.read_text()) for p in sorted((store_dir / "inbox").glob("*.json"))]
    assert [e["session_id"] for e in entries] == [f"claude:{SID}"] and len(entries[0]["plans"]) == 1, entries
    log = (store_dir / "logs" / "hooks.log").read_text().splitlines()
    assert sum("queued 1 new intervention(s)" in line for line in log) == 1, log
    # One line for the two hooks fired at once (one read), one for the later hook (not queued again).
    assert len([line for line in log if f"session={SID}" in line]) == 2, log
    assert "unchanged since it was last read: nothing new" in log[-1], log


def test_a_second_hook_for_a_session_read_earlier_in_the_same_pass_is_not_read_again(agent_env, store_dir, tmp_path,
                                                                                    monkeypatch):
    # The window a real pass leaves between rounds is a second; driven here round by round, as the pass drives it.
    from mecha.core.agents.hookqueue import enqueue
    from mecha.sidecar.hookrun import _read_queued

    project = tmp_path / "src" / "ledger"
    (project / ".git").mkdir(parents=True)
    c = Claude(session=SID, cwd=str(project))
    c.user("Add a --since option to the export.")
    c.assistant(text("Added --since, taking a date."))
    c.user("No: it takes a duration like 7d, as the other commands do.")
    c.assistant(text("Changed it to a duration."))
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_bytes(c.bytes())
    monkeypatch.setenv("HOME", agent_env["HOME"])
    root = str(store_dir)
    fields = {"session_id": SID, "transcript_path": str(transcript), "cwd": str(project), "event": "PreCompact"}
    said: list = []
    passed: set[str] = set()
    read: dict = {}
    enqueue(root, "claude", fields)
    _read_queued(root, said, passed, read)
    enqueue(root, "claude", fields)
    _read_queued(root, said, passed, read)
    assert "nothing new to queue" in said[0][1] or "queued" in said[0][1], said
    assert said[1][1].startswith("already read by this pass: another hook ran for the same session"), said
    # The session's end, after a compaction read it, is read again: a refusal it ended on is queued only then.
    enqueue(root, "claude", {**fields, "event": "SessionEnd"})
    _read_queued(root, said, passed, read)
    assert not said[2][1].startswith("already read"), said
    # The file grown since: read again.
    c.user("And keep the old flag as an alias.")
    transcript.write_bytes(c.bytes())
    enqueue(root, "claude", {**fields, "event": "SessionEnd"})
    _read_queued(root, said, passed, read)
    assert "queued 1 new intervention(s)" in said[3][1], said
