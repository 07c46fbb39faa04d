"""Real parts the test suite runs against: where they are installed, and how
a test finds them.

`python -m tests.realparts` installs each part once (idempotent: a rerun on
the same machine finds what an earlier run built or downloaded) into the
cache folder `$MECHA_REALPARTS`, default `~/.cache/mecha-sidecar/realparts`,
and writes one manifest per part, `<cache>/<part>.json`, naming what a test
needs (paths of programs and files, versions).

A test that needs a part calls `manifest(part)`. A missing manifest fails the
test with the command that installs it: a real part that is silently skipped
is a real part nobody is testing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    override = os.environ.get("MECHA_REALPARTS", "").strip()
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "mecha-sidecar" / "realparts"


def manifest_path(part: str) -> Path:
    return cache_dir() / f"{part}.json"


def write_manifest(part: str, data: dict[str, Any]) -> Path:
    path = manifest_path(part)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


class MissingPart(AssertionError):
    """A real part a test needs is not installed."""


def manifest(part: str) -> dict[str, Any]:
    """The installed part's manifest; `MissingPart` (a test failure, never a
    skip) naming the command that installs it."""
    path = manifest_path(part)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MissingPart(
            f"the real part {part!r} is not installed (no {path}); "
            f"run `python -m tests.realparts {part}` first"
        ) from None
