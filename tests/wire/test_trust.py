"""`mecha/trust` and what `mecha/importSessions` says about trust, over a
real sidecar's stdio: the unknown program that held interventions back is
named with the command that trusts it, the decision is kept in the config
file, and the next import reads the session clean."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from tests.core.ccfixture import Claude, text, use

from .client import SpawnSidecar


def _session(home: Path) -> Path:
    cc = Claude(session="bbbb0001-1111-4222-8333-444455556666")
    cc.user("Pick the next issue.").assistant(text("Listing."), use("s1", "Bash", command="bd ready --json")).result("s1", "[]")
    cc.assistant(text("Nothing is ready.")).user("Then file one for the flaky test.")
    cc.assistant(text("Filed."))
    path = home / "projects" / "-home-pat-proj" / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(cc.bytes())
    os.utime(path, (1_700_000_000, 1_700_000_000))
    return path.parent.parent


def test_an_unknown_program_is_named_trusted_once_and_kept(spawn_sidecar: SpawnSidecar, tmp_path: Path) -> None:
    # Pins: `import --dry-run` saying `(followup/untrusted 1)` and nothing
    # about which call made it so, nor what to do.
    root = _session(tmp_path / "agent")
    sidecar = spawn_sidecar()
    before = sidecar.call("mecha/importSessions", {"source": "claude", "dir": str(root), "dry_run": True})
    [session] = before["sessions"]
    assert session["counts"] == {"followup/untrusted": 1}
    [held] = session["held_back"]
    assert held["interventions"] == 1
    assert {k: held["blame"][k] for k in ("tool", "program", "command", "line", "entry")} == {
        "tool": "Bash", "program": "bd", "command": "bd ready --json", "line": 3, "entry": "Bash(bd)"}
    assert before["unknown"] == [{"entry": "Bash(bd)", "interventions": 1, "sessions": 1, "command": "mecha-sidecar trust add 'Bash(bd)'"}]

    added = sidecar.call("mecha/trust", {"action": "add", "entries": ["Bash(bd)"]})
    assert added["entries"] == ["Bash(bd)"] and added["reclassified"]["queued"] == []
    config = Path(added["path"])
    assert tomllib.loads(config.read_text())["trust"]["allow"] == ["Bash(bd)"]
    after = sidecar.call("mecha/importSessions", {"source": "claude", "dir": str(root), "dry_run": True})
    assert after["sessions"][0]["counts"] == {"followup/clean": 1} and after["unknown"] == []

    assert sidecar.call("mecha/trust", {})["entries"] == ["Bash(bd)"]
    assert sidecar.call("mecha/trust", {"action": "remove", "entries": ["Bash(bd)"]})["entries"] == []


@pytest.mark.parametrize("entry", ["Bash", "WebFetch"])
def test_a_standing_trust_of_a_strangers_text_is_refused_by_name(spawn_sidecar: SpawnSidecar, entry: str) -> None:
    sidecar = spawn_sidecar()
    error = sidecar.error("mecha/trust", {"action": "add", "entries": [entry]})
    assert error["code"] == -32602 and entry in error["message"] and "--trust-tool" in error["message"], error
