"""The VS Code extension, built, tested and packaged the way a release is.

`editors/vscode` is a TypeScript project; its tests run in plain Node
(`node --test`), because there is no VS Code binary to run an extension host
in. This test runs its whole pipeline as real subprocesses — `npm ci`,
`npm run build`, `npm test`, `npm run package` — so the repository's one test
command covers the Node side too. `npm test` includes the extension's
real-server test: VS Code's `vscode-jsonrpc` driving this checkout's
`mecha-sidecar lsp --stdio` (passed in as `$MECHA_SIDECAR`) through
diagnostics, the accept code action and its command.

A missing `node`/`npm` fails the test with what to install, never skips it:
a skipped editor test is an editor nobody is testing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
MIN_NODE = 20


def _sidecar_executable() -> Path:
    """The `mecha-sidecar` script of the Python running this test."""
    bindir = Path(sys.executable).parent
    for name in ("mecha-sidecar", "mecha-sidecar.exe"):
        if (bindir / name).is_file():
            return bindir / name
    pytest.fail(f"no mecha-sidecar script next to {sys.executable}: install the project (`pip install -e .`)")


def _require_node() -> str:
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


def _run(step: list[str], env: dict[str, str], timeout: float) -> float:
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


def test_the_vscode_extension_installs_builds_passes_its_tests_and_packages():
    npm = _require_node()
    env = dict(os.environ)
    env["MECHA_SIDECAR"] = str(_sidecar_executable())
    env.pop("NODE_OPTIONS", None)

    manifest = json.loads((EXTENSION / "package.json").read_text())
    vsix = EXTENSION / f"{manifest['name']}-{manifest['version']}.vsix"
    vsix.unlink(missing_ok=True)
    shutil.rmtree(EXTENSION / "out", ignore_errors=True)

    _run([npm, "ci", "--no-audit", "--no-fund", "--prefer-offline"], env, timeout=900)
    _run([npm, "run", "build"], env, timeout=300)
    assert (EXTENSION / manifest["main"]).is_file(), f"the build made no {manifest['main']}"
    _run([npm, "test"], env, timeout=300)
    _run([npm, "run", "package"], env, timeout=300)

    assert vsix.is_file(), f"`npm run package` made no {vsix.name}"
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        packaged = json.loads(z.read("extension/package.json")) if "extension/package.json" in names else None
    assert packaged is not None, f"{vsix.name} has no extension/package.json: {sorted(names)}"
    assert packaged["version"] == manifest["version"]
    main = "extension/" + packaged["main"].removeprefix("./")
    assert main in names, f"{vsix.name} lacks its entry point {main}: {sorted(names)}"
    assert not any(n.startswith("extension/node_modules/") for n in names), "the bundle, not node_modules, is packaged"
