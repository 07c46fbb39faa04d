"""What is installed here, and how a person adds to it."""

from __future__ import annotations

from pathlib import Path


def test_the_local_extras_install_command_is_the_one_that_works_for_this_install(tmp_path):
    # Pins: `pip install 'mecha-sidecar[local]'` named to a person who
    # installed from a checkout, where no package index serves that name.
    import shlex

    from mecha.core.environment.installed import install_command

    words = shlex.split(install_command("local", executable=str(tmp_path / "bin" / "python")))
    assert words[:4] == [str(tmp_path / "bin" / "python"), "-m", "pip", "install"]
    checkout = Path(__file__).resolve().parents[3]
    assert words[4:] == ["-e", f"{checkout}[local]"]
