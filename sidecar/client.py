"""A small synchronous client for a sidecar process: what the Rust harness
does, in Python. Used by `mecha-sidecar demo` and by the benchmarks.

Spawns the server, frames requests, and reads replies on a thread so every
wait is bounded; notifications are kept in arrival order for `wait_for`.
"""

from __future__ import annotations

import itertools
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import msgspec

from mecha.protocol.framing import FrameReader
from mecha.protocol.plainwire import encode_frame


class ServerError(Exception):
    def __init__(self, error: dict[str, Any]):
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.error = error


class SidecarClient:
    def __init__(self, argv: Sequence[str] | None = None, *, env: dict[str, str] | None = None, timeout: float = 30.0):
        self.argv = list(argv or [sys.executable, "-m", "mecha.sidecar", "serve"])
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.timeout = timeout
        self.ids = itertools.count(1)
        self.replies: dict[Any, dict[str, Any]] = {}
        self.cond = threading.Condition()
        self.notifications: queue.Queue[dict[str, Any]] = queue.Queue()
        self.closed = False
        assert self.proc.stdout is not None
        self.reader = FrameReader(self.proc.stdout.fileno(), stall_timeout=timeout)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                frame = self.reader.read_frame()
            except OSError:  # `close()` closed the pipe under a blocked read
                frame = None
            if frame is None:
                break
            if frame.body is None:
                continue
            msg = msgspec.json.decode(frame.body)
            if "id" in msg and "method" not in msg:
                with self.cond:
                    self.replies[msg["id"]] = msg
                    self.cond.notify_all()
            else:
                self.notifications.put(msg)
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def send(self, payload: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(encode_frame(msgspec.json.encode(payload)))
        self.proc.stdin.flush()

    def request_raw(self, method: str, params: Any = None) -> dict[str, Any]:
        id = next(self.ids)
        payload: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            payload["params"] = params
        self.send(payload)
        deadline = time.monotonic() + self.timeout
        with self.cond:
            while id not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise TimeoutError(f"no reply to {method} within {self.timeout:g}s")
                self.cond.wait(left)
            return self.replies.pop(id)

    def request(self, method: str, params: Any = None) -> Any:
        reply = self.request_raw(method, params)
        if "error" in reply:
            raise ServerError(reply["error"])
        return reply.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        payload: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            payload["params"] = params
        self.send(payload)

    def wait_for(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} notification")
            try:
                msg = self.notifications.get(timeout=left)
            except queue.Empty:
                raise TimeoutError(f"no {method} notification") from None
            if msg.get("method") == method:
                return msg.get("params") or {}

    def close(self) -> int:
        """Shut down and exit politely; returns the exit code."""
        try:
            if not self.closed:
                self.request("shutdown")
                self.notify("exit")
        except (OSError, TimeoutError, ServerError):
            pass
        try:
            return self.proc.wait(timeout=self.timeout)
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

    def __enter__(self) -> SidecarClient:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.close()


def environment(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env
