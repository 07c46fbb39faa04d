"""The config file's one reader and writer (`environment.settings`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mecha.core.environment.settings import Unreadable, config_path, read_table, write_table


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
