"""Finding the agent command lines a person has installed: the real
`claude` and `codex` programs from the realparts cache, laid out as an
install would leave them."""

from __future__ import annotations

import os
from pathlib import Path

from mecha.core.environment.agents import CLAUDE, CODEX
from mecha.core.environment.installed import find_agent, find_agents
from tests.realparts import manifest


def _bin_with(tmp_path: Path, **programs: str) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, target in programs.items():
        (folder / name).symlink_to(target)
    return folder


def _env(path: str, home: Path) -> dict[str, str]:
    # codex.js is run by node: keep the system's folders after ours.
    return {"PATH": path, "HOME": str(home)}


def test_both_installed_agents_are_found_on_path_with_the_version_they_report(tmp_path: Path):
    # Pins: an agent offered by its file alone, whose program does not run.
    parts = manifest("agents")
    folder = _bin_with(tmp_path, claude=parts["claude"], codex=parts["codex"])
    found = find_agents(_env(f"{folder}{os.pathsep}/usr/bin:/bin", tmp_path))
    assert [f.agent for f in found] == [CLAUDE, CODEX]
    assert found[0].version.startswith(parts["claude_version"])
    assert found[1].version.endswith(parts["codex_version"])
    assert found[0].path == str(folder / "claude")
    assert "Claude Code" in found[0].describe()


def test_no_agent_on_path_or_in_the_installers_places_means_none(tmp_path: Path):
    assert find_agents(_env(str(tmp_path / "empty"), tmp_path)) == []


def test_claude_codes_native_install_is_found_without_being_on_path(tmp_path: Path):
    # The native installer puts `claude` in ~/.local/bin, which many shells
    # only add to PATH in a login profile the sidecar never read.
    parts = manifest("agents")
    local = tmp_path / ".local" / "bin"
    local.mkdir(parents=True)
    (local / "claude").symlink_to(parts["claude"])
    found = find_agent(CLAUDE, _env("/usr/bin:/bin", tmp_path))
    assert found is not None and found.path == str(local / "claude")


def test_a_program_that_does_not_run_is_not_offered(tmp_path: Path):
    # A file named `claude` that exits non-zero (a half-removed install).
    folder = tmp_path / "bin"
    folder.mkdir()
    broken = folder / "claude"
    broken.write_text("#!/bin/sh\necho 'claude: missing module' >&2\nexit 1\n")
    broken.chmod(0o755)
    assert find_agent(CLAUDE, _env(f"{folder}:/usr/bin:/bin", tmp_path)) is None


def test_no_model_leads_with_the_agent_installed_here(tmp_path: Path):
    # Pins: a person with Claude Code told to find an API key.
    import pytest

    from mecha.core.errors import NoModel
    from mecha.core.providers import NO_MODEL_HELP, require_provider

    parts = manifest("agents")
    folder = _bin_with(tmp_path, codex=parts["codex"])
    with pytest.raises(NoModel) as caught:
        require_provider(None, env=_env(f"{folder}{os.pathsep}/usr/bin:/bin", tmp_path))
    message = str(caught.value)
    assert message.startswith("Codex CLI is installed here") and "MECHA_MODEL_API=codex" in message
    assert message.endswith(NO_MODEL_HELP)
    with pytest.raises(NoModel) as bare:
        require_provider(None, env=_env(str(tmp_path / "empty"), tmp_path))
    assert str(bare.value) == NO_MODEL_HELP
