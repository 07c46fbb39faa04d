"""What every figure shares: the interpreter and console script under test,
a clean environment for children, stores made to measure, a synchronous
stdio client for latency, and the statistics."""

from __future__ import annotations

import compileall
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from mecha.protocol.framing import FrameReader, encode_frame

#: Environment variables a child must not inherit: they would point it at a
#: real store or a real model.
_SCRUB_PREFIXES = ("MECHA_",)


@dataclass
class Figure:
    """One row of the table: a subject measured against a baseline."""

    key: str
    title: str
    subject: float
    baseline: float
    unit: str
    subject_label: str
    baseline_label: str
    #: `subject / baseline` unless a figure defines it otherwise (throughput).
    ratio: float
    goal: str
    met: bool | None
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


# ─── the things under test ──────────────────────────────────────────────────


def python() -> str:
    return sys.executable


def console_script() -> str:
    """The `mecha-sidecar` script installed beside this interpreter."""
    beside = Path(sys.executable).with_name("mecha-sidecar")
    if beside.exists():
        return str(beside)
    found = shutil.which("mecha-sidecar")
    if found is None:
        raise SystemExit("mecha-sidecar is not installed beside this interpreter; pip install -e . first")
    return found


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB_PREFIXES)}
    env.update(extra)
    return env


def compile_bytecode() -> None:
    """Compile the project's modules first, as installing a wheel does: an
    editable checkout run with PYTHONDONTWRITEBYTECODE would otherwise
    measure the compiler on every cold start."""
    import mecha.core
    import mecha.protocol
    import mecha.sidecar

    for package in (mecha.core, mecha.protocol, mecha.sidecar):
        for directory in package.__path__:
            compileall.compile_dir(directory, quiet=1)


# ─── stores made to measure ─────────────────────────────────────────────────

RULES_DOMAINS = ("behavior", "writing", "coding")


def make_rules_store(root: Path, domains: Sequence[str] = RULES_DOMAINS, per_domain: int = 15) -> Path:
    """A store holding `per_domain` active learned rules in each domain."""
    rules = root / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    for d in domains:
        (rules / f"{d}.learned.toml").write_text(rules_toml(d, per_domain))
    return root


def rules_toml(domain: str, n: int) -> str:
    parts = [f"# Learned rules for the `{domain}` domain.\n"]
    for i in range(n):
        parts.append(
            "\n[[rules]]\n"
            f'id = "r-20261101-{domain[:2]}{i:06x}"\n'
            f'text = "When working on {domain} task {i}, confirm the scope before editing more than one file."\n'
            "confidence = 0.8\n"
            "based_on_count = 3\n"
            'created_at = "2026-11-01T08:00:00.000000Z"\n'
            f'sources = ["20261030T101500-{i:08x}"]\n'
        )
    return "".join(parts)


def initialize_params(root: Path, **options: Any) -> dict[str, Any]:
    return {"processId": os.getpid(), "initializationOptions": {"learningDir": str(root), **options}}


# ─── a synchronous client for latency figures ───────────────────────────────


class RawClient:
    """Writes a frame and reads the reply on the calling thread: no reader
    thread on the client side, so a round trip measures the server and the
    pipes, not a thread hand-off. Notifications met while waiting are kept."""

    def __init__(self, argv: Sequence[str], env: dict[str, str] | None = None):
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.out_fd = self.proc.stdin.fileno()
        self.reader = FrameReader(self.proc.stdout.fileno(), stall_timeout=60.0)
        self.next_id = 1
        self.notifications: list[dict[str, Any]] = []

    def write(self, payload: dict[str, Any] | bytes) -> None:
        body = payload if isinstance(payload, bytes) else msgspec.json.encode(payload)
        data = memoryview(encode_frame(body))
        while data:
            n = os.write(self.out_fd, data)
            data = data[n:]

    def request_body(self, method: str, params: Any = None) -> tuple[int, bytes]:
        id = self.next_id
        self.next_id += 1
        payload: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            payload["params"] = params
        return id, msgspec.json.encode(payload)

    def send_and_wait(self, id: int, body: bytes) -> dict[str, Any]:
        self.write(body)
        return self.wait_reply(id)

    def wait_reply(self, id: int) -> dict[str, Any]:
        while True:
            frame = self.reader.read_frame()
            if frame is None:
                raise EOFError("the server closed its output")
            if frame.body is None:
                raise RuntimeError(f"bad frame from the server: {frame.error}")
            msg = msgspec.json.decode(frame.body)
            if "method" in msg:
                self.notifications.append(msg)
                continue
            if msg.get("id") == id:
                return msg

    def request(self, method: str, params: Any = None) -> Any:
        id, body = self.request_body(method, params)
        reply = self.send_and_wait(id, body)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        payload: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            payload["params"] = params
        self.write(payload)

    def close(self) -> int:
        try:
            if self.proc.poll() is None:
                self.request("shutdown")
                self.notify("exit")
        except (OSError, EOFError, RuntimeError):
            pass
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    if stream:
                        stream.close()
                except OSError:
                    pass


#: A stdio peer that answers every request with a fixed result, read and
#: framed with the sidecar's own framing: the floor under any round trip a
#: sidecar can offer over the same pipes with the same client.
ECHO_SERVER = r"""
import os, sys
from mecha.protocol.framing import FrameReader, FrameWriter
import msgspec
pad = "x" * int(sys.argv[1])
reader, writer = FrameReader(0), FrameWriter(1)
class Env(msgspec.Struct):
    id: object = None
    method: str = ""
dec = msgspec.json.Decoder(Env)
while True:
    frame = reader.read_frame()
    if frame is None:
        break
    msg = dec.decode(frame.body)
    if msg.method == "exit":
        break
    if msg.id is not None:
        writer.write(msgspec.json.encode({"jsonrpc": "2.0", "id": msg.id, "result": pad if msg.method != "shutdown" else None}))
"""


def echo_server_argv(reply_chars: int) -> list[str]:
    return [python(), "-c", ECHO_SERVER, str(reply_chars)]


# ─── statistics ─────────────────────────────────────────────────────────────


def median(xs: Iterable[float]) -> float:
    return statistics.median(list(xs))


def percentile(xs: Iterable[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    data = sorted(xs)
    if not data:
        return float("nan")
    k = max(0, min(len(data) - 1, int(-(-p * len(data) // 100)) - 1))
    return data[k]


def interleaved(rounds: int, runners: dict[str, Callable[[], float]]) -> dict[str, list[float]]:
    """Run each runner once per round, in order, `rounds` times: a load spike
    on the machine lands on baseline and subject alike."""
    out: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            out[name].append(run())
    return out


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def vm_hwm_kib(pid: int) -> int:
    """Peak resident set size of a live process, from /proc (kB)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc status")
