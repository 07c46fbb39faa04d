"""The linter and the type checker, as part of the test suite: ruff over the
whole tree, mypy strict over `mecha.core`, `mecha.protocol` and
`mecha.sidecar` (settings in pyproject.toml). Any finding fails, with the tool's own report."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALL = f"{sys.executable} -m pip install -e '.[dev]'"


def _tool(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        pytest.fail(f"{module} is not installed in this interpreter; run `{INSTALL}`")


def test_ruff_finds_nothing_anywhere_in_the_tree():
    # Pins: unused imports, shadowed names and unsorted imports piling up
    # unseen because nothing ran the linter.
    _tool("ruff")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_finds_nothing_in_the_three_layers(tmp_path: Path):
    # Pins: a str written into a field typed as an enum (and the shims it
    # bred), a None match dereferenced — what a type checker would have said.
    _tool("mypy")
    # The folders install as the `mecha` namespace (pyproject's package-dir);
    # lay that tree out so mypy resolves `mecha.core` to this checkout.
    tree = tmp_path / "src" / "mecha"
    tree.mkdir(parents=True)
    for layer in ("core", "protocol", "sidecar"):
        (tree / layer).symlink_to(ROOT / layer, target_is_directory=True)
    env = {**os.environ, "MYPYPATH": str(tmp_path / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "cache"), "-p", "mecha.core", "-p", "mecha.protocol", "-p", "mecha.sidecar"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    report = done.stdout.replace(str(tree) + os.sep, "")
    assert done.returncode == 0, report + done.stderr
    assert "Success" in done.stdout
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)
