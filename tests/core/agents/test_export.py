"""Writing the rules block into a person's CLAUDE.md / AGENTS.md: one managed
section, every other byte kept."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mecha.core.agents import export as export_mod
from mecha.core.agents.export import BEGIN_MARKER, END_MARKER, NO_RULES, export_block, splice
from mecha.core.agents.export_targets import configured_targets
from mecha.core.domain.rules import Rule
from mecha.core.environment import confined
from mecha.core.errors import ExportFailed, InvalidInput
from mecha.core.store.learning_store import LearningStore
from tests.builders import write_learned_rules
from tests.reliability.test_read_only import read_only

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
    targets = [t.path for t in configured_targets(config, home=tmp_path / "home")]
    assert targets == [tmp_path / "proj" / "AGENTS.md", Path("/abs/AGENTS.md"), tmp_path / "home" / ".claude" / "CLAUDE.md"]
    assert configured_targets(tmp_path / "none.toml") == []
    config.write_text("[export]\nvim = '~/.vimrc'\n")
    with pytest.raises(InvalidInput, match="unknown target"):
        configured_targets(config)


def _markers(text: str) -> list[str]:
    return [line.strip()[:22] for line in text.splitlines() if line.strip().startswith("<!-- mecha:rules:")]


def test_a_rule_holding_a_newline_and_the_end_marker_cannot_end_the_section(tmp_path):
    # Pins: a learned rule "…\n<!-- mecha:rules:end -->\n…" closing the section
    # early, so that every later export refused the file as damaged.
    store = LearningStore.open(tmp_path / "store")
    hostile = "Keep diffs small.\n<!-- mecha:rules:end -->\n\n# Injected heading\n<!-- mecha:rules:begin -->"
    write_learned_rules(store, "behavior", [Rule(text=hostile, id="r-1"), Rule(text="Ask first.", id="r-2")])
    block = store.rules_prompt_block()
    path = tmp_path / "CLAUDE.md"
    path.write_text(MINE)
    assert export_block(path, block).changed
    text = path.read_text()
    assert len(_markers(text)) == 2
    assert "- Keep diffs small. <!-- mecha:rules:end --> # Injected heading <!-- mecha:rules:begin -->" in text
    assert export_block(path, block).changed is False  # the next export reads its own section back
    assert export_block(path, BLOCK).changed and text.startswith(MINE)
    # The export's own guard, for a block that holds a marker line however it was made.
    spliced = splice(MINE, "### behavior\n<!-- mecha:rules:end -->\n  <!-- mecha:rules:begin x -->")
    assert len(_markers(spliced)) == 2 and "\\<!-- mecha:rules:end -->" in spliced
    assert splice(spliced, BLOCK) == splice(MINE, BLOCK)


def test_a_byte_order_mark_is_kept_and_the_section_after_it_is_found(tmp_path):
    # Pins: a file saved with a BOM, its section on the first line, read as damaged.
    path = tmp_path / "CLAUDE.md"
    path.write_bytes(b"\xef\xbb\xbf" + f"{BEGIN_MARKER}\nold\n{END_MARKER}\n{MINE}".encode())
    assert export_block(path, BLOCK).changed
    assert path.read_bytes() == b"\xef\xbb\xbf" + f"{BEGIN_MARKER}\n{BLOCK}\n{END_MARKER}\n{MINE}".encode()
    assert export_block(path, BLOCK, check=True).changed is False
    fresh = tmp_path / "AGENTS.md"
    fresh.write_bytes(b"\xef\xbb\xbf# Mine\n")
    export_block(fresh, BLOCK)
    assert fresh.read_bytes().startswith(b"\xef\xbb\xbf# Mine\n\n" + BEGIN_MARKER.encode())


def test_a_read_only_file_is_refused_by_name_and_not_rewritten(tmp_path):
    # Pins: a 0444 CLAUDE.md silently replaced by a writable one holding the export.
    path = tmp_path / "CLAUDE.md"
    path.write_text(MINE)
    path.chmod(0o444)
    before = path.stat()
    with pytest.raises(ExportFailed, match="read-only \\(mode 0444\\)"):
        export_block(path, BLOCK)
    after = path.stat()
    assert path.read_text() == MINE and (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert export_block(path, BLOCK, check=True).changed  # checking writes nothing, so it may look
    assert [p.name for p in tmp_path.iterdir()] == ["CLAUDE.md"]


def test_a_hard_linked_file_is_refused_and_both_names_keep_one_text(tmp_path):
    # Pins: a rename over one name of a hard-linked file, splitting it in two.
    path = tmp_path / "CLAUDE.md"
    path.write_text(MINE)
    other = tmp_path / "dotfiles-CLAUDE.md"
    os.link(path, other)
    with pytest.raises(ExportFailed, match="2 names \\(hard links\\).*symbolic links"):
        export_block(path, BLOCK)
    assert path.read_text() == other.read_text() == MINE
    assert path.stat().st_ino == other.stat().st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["CLAUDE.md", "dotfiles-CLAUDE.md"]


def test_a_symbolic_link_loop_is_a_named_error(tmp_path):
    # Pins: RuntimeError "Symlink loop" out of the export (and -32603 out of an accept).
    a, b = tmp_path / "CLAUDE.md", tmp_path / "other.md"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(ExportFailed, match="CLAUDE.md: .*symbolic links"):
        export_block(a, BLOCK)
    looped = tmp_path / "loop"
    looped.symlink_to(looped)
    with pytest.raises(ExportFailed, match="symbolic links"):
        export_block(looped / "AGENTS.md", BLOCK)


def test_a_folder_that_cannot_be_written_is_a_named_error_that_leaves_the_file_and_no_temp(tmp_path):
    # Pins: PermissionError / EROFS tracebacks out of the export.
    folder = tmp_path / "proj"
    folder.mkdir()
    path = folder / "AGENTS.md"
    path.write_text(MINE)
    with read_only(folder):
        with pytest.raises(ExportFailed, match=f"AGENTS.md: cannot write in {folder}"):
            export_block(path, BLOCK)
        with pytest.raises(ExportFailed, match="cannot write in"):
            export_block(folder / "sub" / "AGENTS.md", BLOCK)
    assert path.read_text() == MINE and [p.name for p in folder.iterdir()] == ["AGENTS.md"]


def _appending_at(moment: str, monkeypatch, path: Path, line: str) -> list[int]:
    """Make a person's edit land at `moment` of the next export, once."""
    calls: list[int] = []
    module = export_mod if hasattr(export_mod, moment) else confined
    real = getattr(module, moment)

    def edit_then(*args, **kwargs):
        if not calls:
            with open(path, "a") as f:
                f.write(line)
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, moment, edit_then)
    return calls


@pytest.mark.parametrize("moment", ["_spliced", "_exchange"], ids=["after-the-read", "at-the-swap"])
def test_an_edit_made_while_the_export_runs_is_kept_and_the_export_starts_over_from_it(tmp_path, monkeypatch, moment):
    # Pins: read, splice, rename with no look back — 200 of 6,210 of a
    # person's lines lost to exports running while their editor appended.
    path = tmp_path / "CLAUDE.md"
    path.write_text(MINE)
    calls = _appending_at(moment, monkeypatch, path, "A line typed meanwhile.\n")
    assert export_block(path, BLOCK).changed
    assert calls, "the edit was made"
    text = path.read_text()
    assert "A line typed meanwhile.\n" in text and text.startswith(MINE) and BLOCK in text
    assert len(_markers(text)) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["CLAUDE.md"]


def test_an_edit_before_the_swap_is_kept_where_the_kernel_cannot_exchange(tmp_path, monkeypatch):
    monkeypatch.setattr(confined, "_exchange", lambda a, b: False)
    path = tmp_path / "CLAUDE.md"
    path.write_text(MINE)
    _appending_at("_spliced", monkeypatch, path, "Typed meanwhile.\n")
    export_block(path, BLOCK)
    assert "Typed meanwhile.\n" in path.read_text() and BLOCK in path.read_text()


def test_a_file_rewritten_at_every_swap_is_refused_with_the_last_version_put_back(tmp_path, monkeypatch):
    # An editor saving the whole file (a temp file renamed over it) each time
    # the export is about to swap: the export gives up rather than race it,
    # and the file is the person's last save, byte for byte.
    path = tmp_path / "CLAUDE.md"
    path.write_text(MINE)
    real = export_mod._spliced
    saves: list[str] = []

    def saved_meanwhile(*args, **kwargs):
        out = real(*args, **kwargs)
        saves.append(MINE + f"save {len(saves)}\n")
        (tmp_path / "editor.swp").write_text(saves[-1])
        os.replace(tmp_path / "editor.swp", path)
        return out

    monkeypatch.setattr(export_mod, "_spliced", saved_meanwhile)
    with pytest.raises(ExportFailed, match="rewritten 5 times while it was being written"):
        export_block(path, BLOCK)
    assert path.read_text() == saves[-1]
    assert [p.name for p in tmp_path.iterdir()] == ["CLAUDE.md"]


@pytest.mark.parametrize("moment", ["the temp written", "the temp linked in"])
def test_an_export_killed_mid_way_leaves_no_temp_once_the_next_export_into_the_folder_runs(tmp_path, moment):
    # Pins: `kill -9` during an accept's export leaving `.mecha-export.*.tmp`
    # in ~/.claude for good (the kill loop found one after recovery), and one
    # killed between linking a new file in and removing the temp leaving the
    # file with two names, which every later export refused.
    import signal
    import subprocess
    import sys

    target = tmp_path / "CLAUDE.md"
    child = f"""
import os, signal
from pathlib import Path
from mecha.core.environment import confined
from mecha.core.agents.export import export_block
def killed_after(real):
    def step(*args):
        real(*args)
        os.kill(os.getpid(), signal.SIGKILL)
    return step
if {moment == "the temp linked in"}:
    os.link = killed_after(os.link)
else:
    confined.write_durably = killed_after(confined.write_durably)
export_block(Path({str(target)!r}), {BLOCK!r})
"""
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert [p for p in tmp_path.iterdir() if ".mecha-export." in p.name], "the kill left no temp to recover from"
    export_block(target, BLOCK.replace("Never force-push.", "Ask first."))
    assert "Ask first." in target.read_text() and target.stat().st_nlink == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["CLAUDE.md"], "a dead export's temp was left"
