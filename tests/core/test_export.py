"""Writing the rules block into a person's CLAUDE.md / AGENTS.md: one managed
section, every other byte kept."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mecha.core.agents.export import BEGIN_MARKER, END_MARKER, NO_RULES, configured_targets, export_block, splice
from mecha.core.errors import InvalidInput

BLOCK = "## Learned rules\n\nFollow these.\n\n### behavior\n- Never force-push."
MINE = "# My notes\n\nAlways answer in English.\n"


def test_a_file_without_markers_gets_the_section_appended_and_keeps_every_byte():
    # Pins: an export rewriting the person's own instructions.
    out = splice(MINE, BLOCK)
    assert out.startswith(MINE)
    assert out[len(MINE):] == f"\n{BEGIN_MARKER}\n{BLOCK}\n{END_MARKER}\n"


def test_an_existing_section_is_replaced_and_the_text_around_it_kept_byte_for_byte():
    # Pins: text after the section (or its missing final newline) changed by a rewrite.
    before = "intro\r\n\n" + f"{BEGIN_MARKER}\nold rules\n{END_MARKER}\n" + "outro without newline"
    out = splice(before, BLOCK)
    assert out == "intro\r\n\n" + f"{BEGIN_MARKER}\n{BLOCK}\n{END_MARKER}\n" + "outro without newline"


def test_splicing_twice_is_the_same_as_once():
    # Pins: every export growing the file (a `--check` hook that always fails).
    once = splice(MINE, BLOCK)
    assert splice(once, BLOCK) == once
    assert splice(splice("", None), None) == splice("", None)
    assert NO_RULES in splice("", None)


@pytest.mark.parametrize(
    "damaged",
    [
        f"{BEGIN_MARKER}\nrules\n",
        f"rules\n{END_MARKER}\n",
        f"{END_MARKER}\n{BEGIN_MARKER}\n",
        f"{BEGIN_MARKER}\na\n{END_MARKER}\n{BEGIN_MARKER}\nb\n{END_MARKER}\n",
    ],
)
def test_damaged_or_doubled_markers_are_an_error_and_nothing_is_written(tmp_path, damaged):
    # Pins: guessing which half to keep, and losing what a person wrote.
    path = tmp_path / "CLAUDE.md"
    path.write_text(damaged)
    with pytest.raises(InvalidInput, match="markers are damaged.*line"):
        export_block(path, BLOCK)
    assert path.read_text() == damaged


def test_check_reports_out_of_date_without_writing_then_up_to_date_after_export(tmp_path):
    # Pins: --check writing, or passing on a stale file.
    path = tmp_path / "AGENTS.md"
    path.write_text(MINE)
    assert export_block(path, BLOCK, check=True).changed is True
    assert path.read_text() == MINE
    assert export_block(path, BLOCK).changed is True
    assert export_block(path, BLOCK, check=True).changed is False
    assert export_block(path, BLOCK).changed is False


def test_a_write_keeps_the_mode_and_writes_through_a_symlink(tmp_path):
    # Pins: a dotfiles symlink replaced by a plain file; a 0644 file turned 0600.
    real = tmp_path / "dotfiles" / "CLAUDE.md"
    real.parent.mkdir()
    real.write_text(MINE)
    os.chmod(real, 0o640)
    link = tmp_path / "CLAUDE.md"
    link.symlink_to(real)
    export_block(link, BLOCK)
    assert link.is_symlink()
    assert BLOCK in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert [p.name for p in real.parent.iterdir()] == ["CLAUDE.md"]  # no temp left behind


def test_a_missing_file_and_folder_are_created(tmp_path):
    # Pins: a fresh machine without ~/.claude failing the first export.
    path = tmp_path / ".claude" / "CLAUDE.md"
    assert export_block(path, BLOCK).changed is True
    assert path.read_text() == f"{BEGIN_MARKER}\n{BLOCK}\n{END_MARKER}\n"


def test_export_targets_come_from_the_export_table_only(tmp_path):
    # Pins: a broken [model] table (or none) breaking exports; relative paths resolved against the cwd.
    config = tmp_path / "sidecar.toml"
    config.write_text('[model]\napi = "openai"\n\n[export]\nagents = ["proj/AGENTS.md", "/abs/AGENTS.md"]\nclaude = true\n')
    targets = configured_targets(config)
    assert targets[:2] == [tmp_path / "proj" / "AGENTS.md", Path("/abs/AGENTS.md")]
    assert targets[2].name == "CLAUDE.md" and targets[2].is_absolute()
    assert configured_targets(tmp_path / "none.toml") == []
    config.write_text("[export]\nvim = '~/.vimrc'\n")
    with pytest.raises(InvalidInput, match="unknown target"):
        configured_targets(config)
