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
