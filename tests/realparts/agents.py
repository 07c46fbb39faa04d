"""The agents' own command lines, real: Claude Code (`claude`) and the Codex
CLI (`codex`) as npm publishes them.

Both are installed with npm into one cache folder whose package.json pins
their versions and allows Claude Code's install script (npm 11 runs none
otherwise; the script links the platform's native binary into place). A
stamp written after a good install makes a rerun a no-op. Nothing here
logs in: the tests point each binary at a scripted model server on
127.0.0.1 (`ANTHROPIC_BASE_URL` for claude, a model provider's `base_url`
for codex), so the real flags and the real output are exercised and only
the model's answers are fake.

Versions are pinned because the flags a headless call relies on
(`claude -p --json-schema`, `codex exec --output-schema`) have moved
between releases; the manifest records the version each binary reports.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from . import cache_dir

CLAUDE_CODE_VERSION = "2.1.328"
CODEX_VERSION = "0.169.0"


def _say(msg: str) -> None:
    print(f"realparts: agents: {msg}", flush=True)


def _wanted() -> dict[str, Any]:
    return {
        "name": "mecha-realparts-agents",
        "private": True,
        "allowScripts": {"@anthropic-ai/claude-code": True},
        "dependencies": {
            "@anthropic-ai/claude-code": CLAUDE_CODE_VERSION,
            "@openai/codex": CODEX_VERSION,
        },
    }


def _version(binary: Path) -> str:
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=120, check=False)
    return (done.stdout.strip() or done.stderr.strip()).splitlines()[-1] if (done.stdout or done.stderr) else ""


def install() -> dict[str, Any]:
    if shutil.which("npm") is None:
        raise SystemExit("realparts: agents: npm is not on PATH; install Node.js (20 or newer) with npm")
    folder = cache_dir() / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    wanted = _wanted()
    stamp = folder / ".installed.json"
    claude = folder / "node_modules" / ".bin" / "claude"
    codex = folder / "node_modules" / ".bin" / "codex"
    cached = stamp.is_file() and json.loads(stamp.read_text()) == wanted and claude.exists() and codex.exists()
    if cached:
        _say(f"claude-code {CLAUDE_CODE_VERSION} + codex {CODEX_VERSION} cached at {folder}")
    else:
        (folder / "package.json").write_text(json.dumps(wanted, indent=2) + "\n")
        cmd = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"]
        _say("$ " + " ".join(cmd))
        started = time.monotonic()
        env = dict(os.environ)
        env.pop("NODE_OPTIONS", None)
        subprocess.run(cmd, cwd=folder, env=env, check=True)
        _say(f"  done in {time.monotonic() - started:.0f} s")
        for binary in (claude, codex):
            if not binary.exists():
                raise SystemExit(f"realparts: agents: npm install finished but {binary} is missing")
    claude_version = _version(claude)
    codex_version = _version(codex)
    if not claude_version.startswith(CLAUDE_CODE_VERSION):
        raise SystemExit(f"realparts: agents: `claude --version` said {claude_version!r}, expected {CLAUDE_CODE_VERSION}")
    if not codex_version.endswith(CODEX_VERSION):
        raise SystemExit(f"realparts: agents: `codex --version` said {codex_version!r}, expected {CODEX_VERSION}")
    if not cached:
        stamp.write_text(json.dumps(wanted))
    _say(f"claude --version: {claude_version}; codex --version: {codex_version}")
    return {
        "claude": str(claude),
        "claude_version": CLAUDE_CODE_VERSION,
        "codex": str(codex),
        "codex_version": CODEX_VERSION,
        "node_modules": str(folder / "node_modules"),
    }
