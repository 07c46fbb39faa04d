"""A real Codex terminal session is read when the person quits it.

Codex 0.169's terminal UI runs the `SessionEnd` hook as it exits — by
`/quit`, Ctrl-C or Ctrl-D — so the session's corrections are queued then,
not when the next `codex` starts. Checked here with the real `codex`, its
terminal UI driven through a pseudo-terminal (the only way a person uses
it), against a scripted model: two prompts typed, the second a correction,
then the exit; the hook `hooks install codex` wrote must have queued the
correction within seconds, with no second `codex` started. Hooks are on by
default in this Codex; `--dangerously-bypass-hook-trust` stands in for the
person trusting them once in `/hooks`.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.realparts import manifest

from .conftest import WAIT_S, wait_until

#: What a quit is, typed into the terminal UI.
EXITS = {"/quit": [b"/quit", b"\r"], "ctrl-c": [b"\x03", b"\x03"], "ctrl-d": [b"\x04", b"\x04"]}


class Terminal:
    """A program on a pseudo-terminal of 120×40, its output read and
    dropped (answering the cursor-position query a full-screen UI asks)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.screen = b""
        self.code: int | None = None

    def pump(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if not ready:
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            self.screen += data
            if b"\x1b[6n" in data:
                os.write(self.fd, b"\x1b[1;1R")

    def type(self, text: bytes) -> None:
        os.write(self.fd, text)
        self.pump(0.5)

    def wait_for(self, seen: bytes, what: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while seen not in self.screen:
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            self.pump(0.2)

    def exited(self) -> int | None:
        if self.code is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid != 0:
                self.code = os.waitstatus_to_exitcode(status)
        return self.code

    def close(self) -> None:
        if self.exited() is None:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


@pytest.mark.parametrize("exit_keys", sorted(EXITS))
def test_quitting_the_codex_terminal_ui_reads_the_session_then(tmp_path: Path, exit_keys: str) -> None:
    # Pins: a Codex session's corrections waiting for the next `codex` to
    # start before anything reads them.
    from tests.agent_server import AgentModelServer, Text
    from tests.agentcli.conftest import codex_config

    codex = str(manifest("agents")["codex"])
    home, project, store = tmp_path / "home", tmp_path / "proj", tmp_path / "store"
    (home / ".codex").mkdir(parents=True)
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    env.update({"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "TERM": "xterm-256color",
                "MECHA_SIDECAR_CONFIG": str(tmp_path / "no-such.toml")})
    with AgentModelServer(responder=lambda system, user, dialect: Text("I renamed the module.")) as model:
        (home / ".codex" / "config.toml").write_text(
            codex_config(model.url) + f'\n[projects."{project}"]\ntrust_level = "trusted"\n')
        installed = subprocess.run([sys.executable, "-m", "mecha.sidecar", "hooks", "install", "codex",
                                    "--learning-dir", str(store)], env=env, cwd=project, capture_output=True,
                                   text=True, timeout=WAIT_S)
        assert installed.returncode == 0, installed.stderr
        ui = Terminal([codex, "--dangerously-bypass-hook-trust"], env, project)
        try:
            ui.wait_for(b"Ask Codex", "the prompt")
            for said in (b"Rename the totals module.", b"No, never rename a module without asking me first."):
                answered = len(model.seen)
                ui.type(said)
                ui.type(b"\r")
                wait_until(lambda asked=answered: len(model.seen) > asked, "the model to be asked")
                ui.pump(2)
            log = store / "logs" / "hooks.log"
            assert not log.exists() or "session-end" not in log.read_text(), "read before the session ended"
            for key in EXITS[exit_keys]:
                ui.type(key)
            assert wait_until(lambda: ui.exited() is not None or None, "codex to exit") is not None
            line = wait_until(lambda: next((x for x in log.read_text().splitlines() if "session-end" in x), None)
                              if log.exists() else None, "the session-end hook's record")
        finally:
            ui.close()
    assert "codex session-end" in line and "queued 1 new intervention(s)" in line, line
    # Queued, or already claimed by the reflect pass the hook started (the
    # entry renamed `….json.claim-PID` while that pass holds it).
    queued = [p for p in (store / "inbox").iterdir() if ".json" in p.name and not p.name.endswith(".tmp")]
    assert len(queued) == 1 and "codex_" in queued[0].name
