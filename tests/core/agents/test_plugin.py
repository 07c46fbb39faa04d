"""What `hooks status` tells a person whose sessions a plugin of ours and
our hooks both read: the command it offers pastes as the words it names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mecha.core.agents.plugin import ClaudePlugin, double_reading


def test_the_plugin_uninstall_offered_pastes_as_one_key_whatever_its_marketplace_is_named(tmp_path: Path) -> None:
    # Pins: `claude plugin uninstall {key}` formatted bare, the key's
    # marketplace part named by whoever published the marketplace.
    key = "mecha@x';touch PWNED;'$(touch PWNED2)"
    said = double_reading([ClaudePlugin(key=key, scope="user", path=str(tmp_path))], [str(tmp_path / "settings.json")])
    assert said is not None
    command = said.rsplit("`", 2)[-2]
    assert command.startswith("claude plugin uninstall "), said
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport json, sys\nopen({str(tmp_path / 'argv.json')!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    fake.chmod(0o755)
    subprocess.run(["sh", "-c", command], cwd=tmp_path, env={"PATH": f"{fake.parent}:/usr/bin:/bin"}, check=True, timeout=30)
    assert json.loads((tmp_path / "argv.json").read_text()) == ["plugin", "uninstall", key]
    assert not list(tmp_path.glob("PWNED*"))


def test_a_plugin_key_that_hides_from_a_person_gets_no_command_to_paste(tmp_path: Path) -> None:
    said = double_reading([ClaudePlugin(key="mecha@m\u202eab", scope="user", path=str(tmp_path))], ["s.json"])
    assert said is not None and "claude plugin uninstall" not in said and "\u202e" not in said, said


def test_a_projects_settings_that_are_a_fifo_or_nested_past_any_reader_are_read_as_absent(tmp_path: Path) -> None:
    # Pins: `hooks status` reading a cloned repository's settings to see
    # whether a project's install of the plugin is on, with a plain open
    # that waited on a FIFO forever and a decoder that recursed to its end.
    import os
    import threading

    import pytest

    from mecha.core.agents.plugin import INSTALLED_FILE, find_claude_plugins

    home = tmp_path / "home"
    copy = tmp_path / "copy"
    (copy / "bin").mkdir(parents=True)
    (copy / "bin" / "mecha-hook").write_text("#!/bin/sh\n")
    projects = {"fifo": tmp_path / "fifo", "deep": tmp_path / "deep"}
    for project in projects.values():
        (project / ".claude").mkdir(parents=True)
    os.mkfifo(projects["fifo"] / ".claude" / "settings.json")
    (projects["deep"] / ".claude" / "settings.json").write_text("[" * 100_000 + "]" * 100_000)
    installed = home.joinpath(*INSTALLED_FILE)
    installed.parent.mkdir(parents=True)
    installed.write_text(json.dumps({"plugins": {"mecha@mecha": [
        {"scope": "project", "installPath": str(copy), "projectPath": str(p)} for p in projects.values()]}}))
    found: list[object] = []
    worker = threading.Thread(target=lambda: found.append(find_claude_plugins(home)), daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():
        os.close(os.open(projects["fifo"] / ".claude" / "settings.json", os.O_WRONLY | os.O_NONBLOCK))
        worker.join(10)
        pytest.fail("a project's settings FIFO was opened for reading and waited on")
    assert found and [p.project for p in found[0]] == [str(p) for p in projects.values()], found
    assert all(p.enabled for p in found[0])
