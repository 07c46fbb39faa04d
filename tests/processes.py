"""Helpers for tests that start real sidecar processes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


def wait_for_passes(learning_dir: Path, timeout: float = 10.0) -> None:
    """Let any background pass a test started finish before its store is
    deleted: a pass is detached (its own session), so killing the sidecar
    does not end it, and it must not be left writing into a removed dir."""
    deadline = time.monotonic() + timeout
    for path in (learning_dir / "jobs").glob("*.json"):
        try:
            pid = json.loads(path.read_bytes()).get("pid")
        except (OSError, ValueError):
            continue
        while pid and time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)


def recording_modules(argv: list[str], out_env: str) -> str:
    """A program that runs `mecha-sidecar <argv>` in a fresh interpreter and
    writes `sys.modules` to the file `$<out_env>` names however serving ends
    (the first stage ends with `os._exit`, skipping the teardown, so that
    exit records too)."""
    return f"""\
import os, sys
def record():
    with open(os.environ[{out_env!r}], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
end = os._exit
def record_and_end(code):
    record()
    end(code)
os._exit = record_and_end
try:
    from mecha.sidecar.cli import main
    code = main({argv!r})
finally:
    record()
raise SystemExit(code)
"""


def wait_for_hook_pass(learning_dir: Path, timeout: float = 60.0) -> None:
    """Wait until the session-end hooks' queue is read: no session queued
    and no hook pass holding its lock (`agents.hookqueue`). A hook returns
    before its session is read; a test that looks at what was read waits
    here first."""
    from mecha.core.agents.hookqueue import pass_running, pending

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not (learning_dir / "hook-queue").is_dir():
            return
        # A folder under an entry's name cannot be taken out of the queue:
        # the pass passes it by, and so does this wait.
        left = [p for p in pending(str(learning_dir)) if not os.path.isdir(p)]
        if not left and not pass_running(str(learning_dir)):
            return
        time.sleep(0.02)
    raise AssertionError(f"the hook pass of {learning_dir} did not finish in {timeout:g}s")
