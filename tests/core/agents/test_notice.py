"""The session-start notice's words about a model nobody configured, and the
program its commands name."""

from __future__ import annotations

import os
from pathlib import Path

from mecha.core.agents import notice


def test_corrections_waiting_on_no_model_are_told_once_until_a_pass_has_a_model(tmp_path: Path):
    # Pins: every session repeating the same line (told is told), and a
    # model that goes missing again never being told.
    root = str(tmp_path / "store")
    assert notice.no_model_line(root, "claude") is None
    notice.note_no_model(root, 3)
    line = notice.no_model_line(root, "codex")
    assert line is not None and line.startswith("mecha: corrections from 3 sessions wait to be learned from")
    assert "`mecha-sidecar model use codex` makes Codex CLI the model" in line
    assert notice.no_model_line(root, "codex") is None
    notice.note_no_model(root, 4)  # another pass fails the same way: still told
    assert notice.no_model_line(root, "codex") is None
    notice.clear_no_model(root)
    notice.clear_no_model(root)  # nothing to clear is fine
    notice.note_no_model(root, 1)
    again = notice.no_model_line(root, "claude")
    assert again is not None and "from 1 session wait" in again and "model use claude-code" in again


def test_an_unreadable_note_tells_nothing(tmp_path: Path):
    root = tmp_path / "store"
    (root / "cache").mkdir(parents=True)
    (root / "cache" / "no-model.json").write_text("{not json")
    assert notice.no_model_line(str(root), "claude") is None


def _script(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "mecha-sidecar"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    return script


def test_a_command_names_the_program_by_its_path_unless_path_finds_this_one(tmp_path: Path):
    # Pins: a notice telling a person to run `mecha-sidecar …` from a hook
    # installed out of a virtual environment their shell does not have.
    venv = tmp_path / "venv" / "bin"
    script = _script(venv)
    python = str(venv / "python")
    assert notice.typed_program({"PATH": str(venv)}, python) == "mecha-sidecar"
    assert notice.typed_program({"PATH": "/usr/bin"}, python) == str(script)
    other = _script(tmp_path / "elsewhere")
    assert notice.typed_program({"PATH": os.pathsep.join([str(other.parent), str(venv)])}, python) == str(script)
    assert notice.typed_program({"PATH": str(venv)}, str(tmp_path / "bare" / "python")) == "mecha-sidecar"
