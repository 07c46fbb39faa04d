"""`hooks install|uninstall` change a person's settings file as the export
changes their instructions file.

- **Nothing the agent writes meanwhile is lost.** Claude Code rewrites its
  `settings.json` as a person grants permissions; an install that read the
  file, changed it and renamed its version over it once lost 14 of 711 of
  those edits over 30 runs. Here a real process rewrites the file as fast
  as it can while install and uninstall run again and again, and every
  edit it made is in the file at the end.
- **Uninstall gives back the bytes install found**: the change is made on
  the text, so `1e3`, inline arrays, `\\u00e9`, a duplicate key, tabs and
  the person's own hooks (one sharing a group with ours) come back as they
  were, byte for byte.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI_TIMEOUT_S = 120

CLAUDE_SETTINGS = """{
\t"permissions": {"allow": ["Bash(npm run lint)", "Read(~/notes/**)"], "deny": []},
\t"cleanupPeriodDays": 1e3,
\t"env": {"GREETING": "h\\u00e9llo", "ANSWER": 42.50},
\t"model": "sonnet",
\t"model": "opus",
\t"hooks": {
\t\t"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/.claude/guard.sh"}]}],
\t\t"SessionEnd": [
\t\t\t{"hooks": [{"type": "command", "command": "~/bin/backup-transcript"}]}
\t\t]
\t}
}
"""

CODEX_HOOKS = '{"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}]}, "x": [1,2 ,3]}'


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    env["HOME"] = str(home)
    return env


def _hooks(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mecha.sidecar", "hooks", *argv], cwd=home, env=_env(home),
                          capture_output=True, text=True, timeout=CLI_TIMEOUT_S)


@pytest.mark.parametrize(("agent", "where", "original"), [
    ("claude", (".claude", "settings.json"), CLAUDE_SETTINGS),
    ("codex", (".codex", "hooks.json"), CODEX_HOOKS),
])
def test_uninstall_gives_back_the_bytes_install_found(tmp_path: Path, agent: str, where: tuple[str, str], original: str) -> None:
    # Pins: `1e3` back as `1000.0`, inline arrays spread over lines,
    # `\u00e9` back as `é`, a duplicate key collapsed into one.
    home = tmp_path / "home"
    settings = home.joinpath(*where)
    settings.parent.mkdir(parents=True)
    settings.write_text(original)
    installed = _hooks(home, "install", agent)
    assert installed.returncode == 0, installed.stderr
    text = settings.read_text()
    assert "hook " + agent + " session-end" in text
    for kept in ("1e3", '"h\\u00e9llo"', "42.50", '"model": "sonnet"', "[1,2 ,3]", '"allow": ["Bash(npm run lint)"'):
        assert kept in text or kept not in original, f"install re-spelled {kept}"
    again = _hooks(home, "install", agent)
    assert again.returncode == 0 and settings.read_text() == text
    removed = _hooks(home, "uninstall", agent)
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text() == original


AGENT_WRITER = r"""
import json, os, sys, time
path, stop = sys.argv[1], sys.argv[2]
n = 0
while not os.path.exists(stop):
    with open(path, "rb") as f:
        doc = json.loads(f.read())
    doc.setdefault("permissions", {}).setdefault("allow", []).append(f"Bash(tool-{n})")
    tmp = f"{path}.agent-{n}"
    with open(tmp, "w") as f:
        f.write(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)
    n += 1
    time.sleep(0.02)  # about the rate of the attack: 711 edits over 30 runs
print(n)
"""

RUNS = 20


def test_edits_the_agent_makes_while_install_and_uninstall_run_are_all_kept(tmp_path: Path) -> None:
    # Pins: install and uninstall reading, changing and renaming over
    # settings.json with no look at what was written since: 14 of 711
    # edits the agent made over 30 runs lost.
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{\n  "permissions": {"allow": []}\n}\n')
    stop = tmp_path / "stop"
    agent = subprocess.Popen([sys.executable, "-c", AGENT_WRITER, str(settings), str(stop)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.2)
        refused = 0
        for run in range(RUNS):
            done = _hooks(home, "uninstall" if run % 2 else "install", "claude")
            # A file rewritten at every one of its swaps is refused by name,
            # the agent's version kept; otherwise the change is made.
            if done.returncode != 0:
                assert "rewritten 5 times" in done.stderr and str(settings) in done.stderr, done.stderr
                refused += 1
        assert refused <= RUNS // 4, f"{refused} of {RUNS} runs refused"
    finally:
        stop.write_text("")
        out, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    made = int(out)
    assert made > 5 * RUNS, f"the agent made only {made} edits: the race was not run"
    allowed = json.loads(settings.read_text())["permissions"]["allow"]
    lost = sorted(set(f"Bash(tool-{n})" for n in range(made)) - set(allowed))
    assert lost == [], f"{len(lost)} of {made} edits the agent made were lost"
    assert not [p.name for p in settings.parent.iterdir() if ".mecha-export." in p.name], "a temp was left"
