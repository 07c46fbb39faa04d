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
import shutil
import zipfile

from .vscode_build import EXTENSION, built, npm_env, require_node, run_npm, vsix_path


def test_the_vscode_extension_installs_builds_passes_its_tests_and_packages():
    npm = require_node()
    env = npm_env()

    manifest = json.loads((EXTENSION / "package.json").read_text())
    vsix = vsix_path()
    vsix.unlink(missing_ok=True)
    shutil.rmtree(EXTENSION / "out", ignore_errors=True)

    run_npm([npm, "ci", "--no-audit", "--no-fund", "--prefer-offline"], env, timeout=900)
    run_npm([npm, "run", "build"], env, timeout=300)
    assert (EXTENSION / manifest["main"]).is_file(), f"the build made no {manifest['main']}"
    run_npm([npm, "test"], env, timeout=300)
    run_npm([npm, "run", "package"], env, timeout=300)

    assert vsix.is_file(), f"`npm run package` made no {vsix.name}"
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        packaged = json.loads(z.read("extension/package.json")) if "extension/package.json" in names else None
    assert packaged is not None, f"{vsix.name} has no extension/package.json: {sorted(names)}"
    assert packaged["version"] == manifest["version"]
    main = "extension/" + packaged["main"].removeprefix("./")
    assert main in names, f"{vsix.name} lacks its entry point {main}: {sorted(names)}"
    assert not any(n.startswith("extension/node_modules/") for n in names), "the bundle, not node_modules, is packaged"
    # The README's screenshot ships with it (its link is relative).
    assert "extension/images/quick-fix.png" in names, sorted(names)
    built(vsix)
