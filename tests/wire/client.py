"""A small synchronous client for the real sidecar process, for wire tests.

It spawns `python -m mecha.sidecar` (or any argv) with its stdin and stdout as
pipes, writes LSP base-protocol frames, and reads frames back on a thread
into a queue, so every wait in a test is bounded: a server that hangs fails
the test after `timeout` seconds instead of hanging the suite. Responses are
kept by id and notifications in arrival order; replies with `"id": null`
(framing and parse errors) are kept apart, in order, because nothing else
can match them to what provoked them.

The process is always killed when the client is closed.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: Every wait is bounded by this many seconds unless a test says otherwise.
TIMEOUT = 10.0

#: The first answer also waits for the interpreter to start and import the
#: server, which on a loaded machine takes far longer than serving does.
STARTUP_TIMEOUT = 30.0

#: Environment variables a wire test must not inherit: they would point the
#: sidecar at a real store or a real model.
SCRUBBED_PREFIXES = ("MECHA_",)

SIDECAR_ARGV: tuple[str, ...] = (sys.executable, "-m", "mecha.sidecar")


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def encode(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def clean_env(tmp: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment without any `MECHA_*` variable, with a config file
    path that does not exist (so no `[model]` table is found) and a private
    HOME (so nothing defaults into the real `~/.mecha`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_PREFIXES)}
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(home)
    env["MECHA_SIDECAR_CONFIG"] = str(tmp / "no-such-sidecar.toml")
    env["PYTHONUNBUFFERED"] = "1"
    if extra:
        env.update(extra)
    return env


class WireError(AssertionError):
    """The server answered a request with an error where a result was wanted."""

    def __init__(self, method: str, error: dict[str, Any]):
        super().__init__(f"{method} failed: {error}")
        self.error = error


class Sidecar:
    """One sidecar process and the test's end of its pipes."""

    def __init__(
        self,
        argv: Sequence[str] = SIDECAR_ARGV,
        *,
        env: Mapping[str, str],
        cwd: str | os.PathLike[str] | None = None,
        learning_dir: Path | None = None,
        timeout: float = TIMEOUT,
    ):
        self.learning_dir = learning_dir
        self.timeout = timeout
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
        )
        self._incoming: queue.Queue[dict[str, Any] | bytes | None] = queue.Queue()
        self._responses: dict[Any, dict[str, Any]] = {}
        self._null_id: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        self._stderr = bytearray()
        self._next_id = 0
        self._eof = False
        self._heard = False
        self._out = threading.Thread(target=self._read_stdout, name="sidecar-stdout", daemon=True)
        self._err = threading.Thread(target=self._read_stderr, name="sidecar-stderr", daemon=True)
        self._out.start()
        self._err.start()

    # ── reading ──
    def _read_stdout(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        try:
            while True:
                length = None
                while True:
                    line = stream.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.decode("ascii").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                if length is None:
                    self._incoming.put(b"frame without Content-Length")
                    continue
                body = stream.read(length)
                if len(body) < length:
                    return
                try:
                    self._incoming.put(json.loads(body))
                except ValueError:
                    self._incoming.put(b"undecodable body: " + body[:200])
        finally:
            self._incoming.put(None)

    def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        for chunk in iter(lambda: stream.read1(65536), b""):
            self._stderr += chunk

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    def _deadline(self, timeout: float | None) -> float:
        """When a wait that may take `timeout` (default `self.timeout`) ends.
        Until the process has said anything, the wait also covers its start."""
        wait = self.timeout if timeout is None else timeout
        if not self._heard:
            wait = max(wait, STARTUP_TIMEOUT)
        return time.monotonic() + wait

    def _pump(self, deadline: float, what: str) -> None:
        """Take one message off the pipe and file it, or fail at `deadline`."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out waiting for {what}; stderr:\n{self.stderr[-4000:]}")
        if self._eof:
            raise AssertionError(
                f"the sidecar closed its output while the test waited for {what} "
                f"(exit code {self.proc.poll()}); stderr:\n{self.stderr[-4000:]}"
            )
        try:
            msg = self._incoming.get(timeout=remaining)
        except queue.Empty:
            raise AssertionError(f"timed out waiting for {what}; stderr:\n{self.stderr[-4000:]}") from None
        self._heard = True
        if msg is None:
            self._eof = True
            return
        if isinstance(msg, bytes):
            raise AssertionError(f"the sidecar wrote a broken frame: {msg!r}")
        if "method" in msg and "id" not in msg:
            self.notifications.append(msg)
        elif msg.get("id") is None:
            self._null_id.append(msg)
        else:
            self._responses[msg["id"]] = msg

    # ── writing ──
    def send_raw(self, data: bytes) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(data)
        stdin.flush()

    def send(self, message: Mapping[str, Any]) -> None:
        self.send_raw(frame(encode(message)))

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def request_frame(self, method: str, params: Any = None, id: Any = None) -> tuple[Any, bytes]:
        """A request's id and its frame, for a test that batches writes."""
        id = self.new_id() if id is None else id
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        return id, frame(encode(msg))

    def request(self, method: str, params: Any = None) -> Any:
        """Send a request; its id."""
        id, data = self.request_frame(method, params)
        self.send_raw(data)
        return id

    def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    # ── waiting ──
    def response(self, id: Any, timeout: float | None = None) -> dict[str, Any]:
        deadline = self._deadline(timeout)
        while id not in self._responses:
            self._pump(deadline, f"the response to request {id!r}")
        return self._responses.pop(id)

    def null_id_reply(self, timeout: float | None = None) -> dict[str, Any]:
        """The next reply with `"id": null` (a framing or parse error)."""
        deadline = self._deadline(timeout)
        while not self._null_id:
            self._pump(deadline, "a reply with id null")
        return self._null_id.pop(0)

    def notification(
        self,
        method: str,
        where: Callable[[dict[str, Any]], bool] = lambda params: True,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """The params of the first notification `method` matching `where`
        (already received or still to come); it is removed from the list."""
        deadline = self._deadline(timeout)
        while True:
            for i, n in enumerate(self.notifications):
                if n.get("method") == method and where(n.get("params")):
                    return self.notifications.pop(i)["params"]
            self._pump(deadline, f"a {method} notification")

    def call(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        """A request's result; a `WireError` if it was answered with an error."""
        reply = self.response(self.request(method, params), timeout)
        if "error" in reply:
            raise WireError(method, reply["error"])
        assert "result" in reply, reply
        return reply["result"]

    def error(self, method: str, params: Any = None, timeout: float | None = None) -> dict[str, Any]:
        """A request's error, failing the test if it succeeded."""
        reply = self.response(self.request(method, params), timeout)
        assert "error" in reply, f"{method} was expected to fail, got {reply}"
        assert "result" not in reply, reply
        return reply["error"]

    def wait_exit(self, timeout: float | None = None) -> int:
        try:
            return self.proc.wait(self._deadline(timeout) - time.monotonic())
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the sidecar did not exit; stderr:\n{self.stderr[-4000:]}") from None

    def assert_no_output(self, within: float) -> None:
        """Nothing at all arrives on stdout for `within` seconds."""
        try:
            msg = self._incoming.get(timeout=within)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected output from the sidecar: {msg!r}")

    # ── lifecycle ──
    def initialize(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        opts = dict(options or {})
        if self.learning_dir is not None:
            opts.setdefault("learningDir", str(self.learning_dir))
        result = self.call(
            "initialize",
            {"processId": os.getpid(), "capabilities": {}, "initializationOptions": opts},
        )
        self.notify("initialized", {})
        return result

    def shutdown_and_exit(self) -> int:
        assert self.call("shutdown") is None
        self.notify("exit")
        return self.wait_exit()

    def close(self) -> None:
        """Kill the process (if it still runs) and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a kill that did not take
            pass
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self._out.join(2)
        self._err.join(2)

    def __enter__(self) -> Sidecar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: The `spawn_sidecar` fixture: `spawn(options=, env=, argv=, initialize=)`.
SpawnSidecar = Callable[..., Sidecar]
