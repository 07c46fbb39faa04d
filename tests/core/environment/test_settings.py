"""The config file's one reader and writer (`environment.settings`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mecha.core.environment.settings import Unreadable, config_path, read_table, write_table
from mecha.core.errors import InvalidInput


def test_the_writer_changes_one_table_and_keeps_every_other_byte(tmp_path: Path):
    # Pins: a trust decision written back with the person's comments,
    # order and model settings reformatted or lost.
    path = tmp_path / "sidecar.toml"
    mine = '# my settings\n[model]\napi = "openai"   # the local server\nbase_url = "http://127.0.0.1:8080"\n'
    path.write_text(mine)
    write_table(path, "trust", {"allow": ["Bash(bd)"]})
    text = path.read_text()
    assert text.startswith(mine) and read_table(path, "trust") == {"allow": ["Bash(bd)"]}
    write_table(path, "trust", {"allow": []})
    assert path.read_text().startswith(mine) and read_table(path, "model")["api"] == "openai"


def test_a_skimming_reader_parses_no_file_that_never_names_its_table(tmp_path: Path):
    # Pins: the session hooks paying a TOML parse on every session, or a
    # broken `[model]` table failing a reader that only wants `[trust]`.
    path = tmp_path / "sidecar.toml"
    path.write_text("[model\napi = \n")
    assert read_table(path, "trust", skim=True) is None
    with pytest.raises(Unreadable):
        read_table(path, "model")
    assert read_table(tmp_path / "absent.toml", "model") is None


def test_the_config_file_is_the_environments_override_else_the_home_default(tmp_path: Path):
    assert config_path({"MECHA_SIDECAR_CONFIG": str(tmp_path / "x.toml")}) == tmp_path / "x.toml"
    assert config_path({}) == Path.home() / ".mecha" / "sidecar.toml"


MINE = '# my settings\n[model]\napi = "openai"\n'


def test_a_linked_config_file_is_written_through_its_link_onto_the_persons_file(tmp_path: Path):
    # A dotfiles checkout: the link stays a link, the file it names changes.
    kept = tmp_path / "dotfiles" / "sidecar.toml"
    kept.parent.mkdir()
    kept.write_text(MINE)
    path = tmp_path / "home" / ".mecha" / "sidecar.toml"
    path.parent.mkdir(parents=True)
    path.symlink_to(kept)
    write_table(path, "trust", {"allow": ["Bash(bd)"]})
    assert path.is_symlink() and kept.read_text().startswith(MINE)
    assert read_table(kept, "trust") == {"allow": ["Bash(bd)"]}
    assert [p.name for p in kept.parent.iterdir()] == ["sidecar.toml"]


def test_a_config_file_linked_to_nothing_is_refused_by_name_and_nothing_is_created(tmp_path: Path):
    # Pins: the write following the link to nothing, creating the folders
    # and the file wherever it named (`~/.config/autostart/…`).
    path = tmp_path / "home" / ".mecha" / "sidecar.toml"
    path.parent.mkdir(parents=True)
    nowhere = tmp_path / "elsewhere" / "autostart" / "mecha.toml"
    path.symlink_to(nowhere)
    with pytest.raises(InvalidInput, match=r"sidecar\.toml.*symbolic link.*not there.*nothing was written"):
        write_table(path, "trust", {"allow": ["Bash(bd)"]})
    assert not (tmp_path / "elsewhere").exists()


def test_a_config_file_that_is_a_fifo_is_refused_by_name_without_blocking(tmp_path: Path):
    # Pins: `read_text` on a FIFO with no writer, blocking `trust add`
    # (and every command that writes the config) forever.
    import os
    import threading

    path = tmp_path / "sidecar.toml"
    os.mkfifo(path)
    failed: list[BaseException] = []

    def write() -> None:
        try:
            write_table(path, "trust", {"allow": ["Bash(bd)"]})
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            failed.append(exc)

    worker = threading.Thread(target=write, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():
        with open(path, "wb"):  # let the blocked open go
            pass
        pytest.fail("writing a config file that is a FIFO blocked")
    assert len(failed) == 1 and isinstance(failed[0], InvalidInput), failed
    assert "FIFO" in str(failed[0]) and str(path) in str(failed[0])


def test_a_config_file_edited_while_it_is_written_keeps_the_persons_edit(tmp_path: Path, monkeypatch):
    # The confined writer's check against a person's save meanwhile.
    from mecha.core.environment import confined

    path = tmp_path / "sidecar.toml"
    path.write_text(MINE)
    real = confined._exchange
    saved: list[int] = []

    def save_then_exchange(a, b):  # type: ignore[no-untyped-def]
        if not saved:
            saved.append(1)
            path.write_text(MINE + "# typed meanwhile\n")
        return real(a, b)

    monkeypatch.setattr(confined, "_exchange", save_then_exchange)
    write_table(path, "trust", {"allow": ["Bash(bd)"]})
    assert "# typed meanwhile" in path.read_text() and read_table(path, "trust") == {"allow": ["Bash(bd)"]}
