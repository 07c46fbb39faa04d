"""Building editors/vscode the way a release is, shared by the extension's
pipeline test and the real-VS-Code test: finding node and npm, running an npm
step with its output in the failure, and packaging the `.vsix` (its size
printed, so CI's log shows what a person would install).

A missing `node`/`npm` fails the test with what to install, never skips it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
MIN_NODE = 20

#: The `.vsix` this session already packaged (and checked), so a second test
#: that needs it installs that one instead of building again.
_packaged: Path | None = None


def sidecar_executable() -> Path:
    """The `mecha-sidecar` script of the Python running this test."""
    bindir = Path(sys.executable).parent
    for name in ("mecha-sidecar", "mecha-sidecar.exe"):
        if (bindir / name).is_file():
            return bindir / name
    pytest.fail(f"no mecha-sidecar script next to {sys.executable}: install the project (`pip install -e .`)")


def require_node() -> str:
    """`npm`, after checking `node` is there and new enough."""
    npm = shutil.which("npm")
    node = shutil.which("node")
    if npm is None or node is None:
        pytest.fail(
            f"`node` and `npm` must be on PATH to build and test editors/vscode (Node.js >= {MIN_NODE}); "
            f"found node={node}, npm={npm}"
        )
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    m = re.match(r"v(\d+)\.", version)
    if not m or int(m.group(1)) < MIN_NODE:
        pytest.fail(f"editors/vscode needs Node.js >= {MIN_NODE}; `node --version` says {version!r}")
    return npm


def run_npm(step: list[str], env: dict[str, str], timeout: float) -> float:
    """Run one npm step in editors/vscode; fail with its output unless it exits 0."""
    started = time.monotonic()
    try:
        done = subprocess.run(step, cwd=EXTENSION, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"`npm {' '.join(step[1:])}` did not finish within {timeout:.0f} s:\n{out[-6000:]}")
    if done.returncode != 0:
        pytest.fail(
            f"`npm {' '.join(step[1:])}` exited {done.returncode}\n"
            f"--- stdout (tail) ---\n{done.stdout[-8000:]}\n--- stderr (tail) ---\n{done.stderr[-4000:]}"
        )
    return time.monotonic() - started


def npm_env() -> dict[str, str]:
    env = dict(os.environ)
    env["MECHA_SIDECAR"] = str(sidecar_executable())
    env.pop("NODE_OPTIONS", None)
    return env


def vsix_path() -> Path:
    manifest = json.loads((EXTENSION / "package.json").read_text())
    return EXTENSION / f"{manifest['name']}-{manifest['version']}.vsix"


def built(vsix: Path) -> Path:
    """Record and print a `.vsix` this session built."""
    global _packaged
    _packaged = vsix
    print(f"\nvsix: {vsix.name} {vsix.stat().st_size} bytes ({vsix.stat().st_size / 1024:.1f} KiB)", flush=True)
    return vsix


def package_vsix() -> Path:
    """The extension's `.vsix`: the one this session already built, else a
    fresh `npm ci && npm run package` (the package step builds first)."""
    if _packaged is not None and _packaged.is_file():
        return _packaged
    npm = require_node()
    env = npm_env()
    vsix = vsix_path()
    vsix.unlink(missing_ok=True)
    run_npm([npm, "ci", "--no-audit", "--no-fund", "--prefer-offline"], env, timeout=900)
    run_npm([npm, "run", "package"], env, timeout=300)
    assert vsix.is_file(), f"`npm run package` made no {vsix.name}"
    return built(vsix)
