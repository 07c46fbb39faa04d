"""The VS Code extension's wire types are generated from protocol/'s JSON
Schema (editors/vscode/scripts/generate_wire.py); these fail when the
checked-in `src/wire.ts` no longer matches."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from mecha.protocol.commands import COMMANDS, PROPOSALS_CHANGED
from mecha.protocol.schema import schema_json

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "editors" / "vscode" / "scripts" / "generate_wire.py"
WIRE_TS = REPO / "editors" / "vscode" / "src" / "wire.ts"
REGENERATE = "mecha-sidecar schema > protocol/schema/mecha-sidecar.schema.json && python editors/vscode/scripts/generate_wire.py"


def _generator():
    spec = importlib.util.spec_from_file_location("generate_wire", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_checked_in_wire_types_are_what_the_schema_generates():
    # Pins: the extension's TypeScript types hand-written beside the schema,
    # free to drift from the Structs the server encodes.
    checked = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, f"{checked.stderr} — run: {REGENERATE}"
    assert WIRE_TS.read_text(encoding="utf-8") == _generator().generate(json.loads(schema_json())), f"stale: run {REGENERATE}"


def test_the_check_fails_on_a_stale_file(tmp_path, monkeypatch, capsys):
    # Pins: a --check that passes whatever the file holds.
    gen = _generator()
    stale = tmp_path / "wire.ts"
    stale.write_text(WIRE_TS.read_text(encoding="utf-8").replace('"pending"', '"waiting"'), encoding="utf-8")
    monkeypatch.setattr(gen, "OUT", stale)
    assert gen.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    monkeypatch.setattr(gen, "OUT", tmp_path / "absent.ts")
    assert gen.main(["--check"]) == 1


def test_every_command_and_the_proposals_notification_reach_the_typescript():
    text = WIRE_TS.read_text(encoding="utf-8")
    for cid in COMMANDS:
        assert f'"{cid}"' in text
    assert f'"{PROPOSALS_CHANGED}"' in text
    assert 'export type ProposalStatus = "accepted" | "pending" | "rejected" | "rejected_by_gate";' in text


def test_the_editor_endpoint_executes_exactly_the_contracts_commands():
    from mecha.sidecar import lsp

    assert set(lsp.COMMANDS) == set(COMMANDS)
