"""End-to-end fixtures: the real sidecar as a subprocess, a framed JSON-RPC
client for it, a real HTTP fake model, and transcripts to feed it.

Every wait here is bounded (`WAIT_S` at most), so a hang fails the test with
what was seen instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mecha.core.store.files import process_alive
from tests.model_server import ModelServer, lessons_responder

#: The longest any single wait may take.
WAIT_S = 30.0

REPO = Path(__file__).resolve().parents[2]


# ─── environment ────────────────────────────────────────────────────────────


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The process environment with every model source removed: no
    MECHA_MODEL_* variables, no learning dir, and a config file path that
    does not exist — so the only model a test's sidecar sees is the one the
    test gives it."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MECHA_") and k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")
    }
    env["MECHA_SIDECAR_CONFIG"] = str(tmp_path / "no-such-sidecar.toml")
    env["HOME"] = str(tmp_path / "home")  # never the developer's ~/.mecha
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = WAIT_S, interval: float = 0.05) -> Any:
    """Poll `predicate` until it returns something truthy; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


# ─── the framed client ──────────────────────────────────────────────────────


class RpcFailed(Exception):
    def __init__(self, error: dict[str, Any]):
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message", "")
        self.error = error


class Sidecar:
    """`python -m mecha.sidecar` on pipes, spoken to in LSP framing.

    A reader thread splits stdout into frames; responses are routed by id,
    notifications into their own queue. Every wait is bounded."""

    def __init__(self, env: dict[str, str], cwd: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mecha.sidecar"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self._next_id = 0
        self._responses: dict[Any, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self.notifications: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen_notifications: list[dict[str, Any]] = []
        self.stderr_lines: list[str] = []
        self._reader = threading.Thread(target=self._read, name="e2e-sidecar-reader", daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_err, name="e2e-sidecar-stderr", daemon=True)
        self._err_reader.start()

    # reading

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            headers: dict[str, str] = {}
            while True:
                line = out.readline()
                if not line:
                    with self._cond:
                        self._cond.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = out.read(int(headers["content-length"]))
            msg = json.loads(body)
            if "method" in msg and "id" not in msg:
                self.seen_notifications.append(msg)
                self.notifications.put(msg)
            else:
                with self._cond:
                    self._responses[msg.get("id")] = msg
                    self._cond.notify_all()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace"))

    # writing

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request_async(self, method: str, params: Any = None) -> int:
        self._next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self._next_id

    def response(self, id: int, timeout: float = WAIT_S) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while id not in self._responses:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no response to request {id} within {timeout:.0f}s; stderr: {self.stderr()}")
                if self.proc.poll() is not None and not self._reader.is_alive():
                    raise AssertionError(f"the sidecar exited ({self.proc.returncode}) before answering {id}; stderr: {self.stderr()}")
                self._cond.wait(min(left, 0.2))
            return self._responses.pop(id)

    def request(self, method: str, params: Any = None, timeout: float = WAIT_S) -> Any:
        msg = self.response(self.request_async(method, params), timeout)
        if "error" in msg:
            raise RpcFailed(msg["error"])
        return msg["result"]

    def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def initialize(self, learning_dir: Path, model: dict[str, Any] | None = None, **options: Any) -> Any:
        opts: dict[str, Any] = {"learningDir": str(learning_dir), **options}
        if model is not None:
            opts["model"] = model
        result = self.request("initialize", {"processId": os.getpid(), "initializationOptions": opts})
        self.notify("initialized", {})
        return result

    def job_finished(self, job_id: str, timeout: float = WAIT_S) -> dict[str, Any]:
        """Wait for `mecha/jobFinished` for `job_id`; other notifications are
        kept in `seen_notifications`."""
        for seen in self.seen_notifications:
            if seen["method"] == "mecha/jobFinished" and seen["params"]["job"]["id"] == job_id:
                return seen["params"]["job"]
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"no mecha/jobFinished for {job_id} within {timeout:.0f}s; "
                    f"seen: {[n['method'] for n in self.seen_notifications]}; stderr: {self.stderr()}"
                )
            try:
                msg = self.notifications.get(timeout=left)
            except queue.Empty:
                continue
            if msg["method"] == "mecha/jobFinished" and msg["params"]["job"]["id"] == job_id:
                return msg["params"]["job"]

    # ending

    def stderr(self) -> str:
        return "".join(self.stderr_lines)[-4000:]

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def wait_exit(self, timeout: float = WAIT_S) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the sidecar did not exit within {timeout:.0f}s") from None

    def shutdown(self) -> int:
        self.request("shutdown")
        self.notify("exit")
        self.close_stdin()
        return self.wait_exit()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=WAIT_S)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


# ─── fixtures ───────────────────────────────────────────────────────────────


@pytest.fixture
def server() -> Iterator[ModelServer]:
    """The fake model, answering reflector and learner prompts by content."""
    with ModelServer(responder=lessons_responder) as s:
        yield s


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "learning"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "home").mkdir(exist_ok=True)
    return clean_env(tmp_path)


@pytest.fixture
def spawn(env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., Sidecar]]:
    """Start sidecars; every one still running at teardown is killed, and
    every detached pass they started is waited for (bounded), so no test
    leaves a process behind writing into a deleted directory."""
    started: list[Sidecar] = []

    def start(env_override: dict[str, str] | None = None) -> Sidecar:
        s = Sidecar(env_override or env, tmp_path)
        started.append(s)
        return s

    yield start
    for s in started:
        s.kill()


@pytest.fixture(autouse=True)
def _no_pass_left_running(store_dir: Path) -> Iterator[None]:
    yield
    jobs = store_dir / "jobs"
    if not jobs.is_dir():
        return

    def all_settled() -> bool:
        for path in jobs.glob("*.json"):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            pid = record.get("pid")
            if record.get("state") == "running" and pid and process_alive(pid):
                return False
        return True

    wait_until(all_settled, "every background pass to finish")


# ─── transcripts ────────────────────────────────────────────────────────────

CLEAN = [{"at": 0, "taint": {"private": False, "untrusted": False}}]


def steer_session(steer: str, *, task: str = "Tidy the release notes in docs/.") -> list[dict[str, Any]]:
    """A four-message run where the person steers mid-tool-call: one steer."""
    return [
        {"role": "user", "content": task},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll read the notes first."},
                {"type": "tool_use", "id": "t1", "name": "fs_read", "input": {"path": "docs/RELEASE.md"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "# Release 2.3\n- faster sync", "is_error": False},
                {"type": "text", "text": steer},
            ],
        },
        {"role": "assistant", "content": "Understood; I rewrote only docs/RELEASE.md."},
    ]


def store_lines(store: Path, name: str) -> list[dict[str, Any]]:
    path = store / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def store_ids(store: Path, name: str) -> list[str]:
    """The ids in a `mined*.jsonl` ledger (one id per line), in order."""
    path = store / name
    if not path.exists():
        return []
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


def git_log(store: Path) -> list[str]:
    """Commit subjects in the store's own repository, oldest first."""
    result = subprocess.run(
        ["git", "--git-dir", str(store / ".git"), "log", "--reverse", "--format=%s"],
        capture_output=True, text=True, timeout=WAIT_S, check=True,
    )
    return result.stdout.splitlines()


def fnv1a_64(text: str) -> str:
    """Written out here, independent of the implementation under test."""
    h = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) % (1 << 64)
    return f"{h:016x}"


def completion_texts(server: ModelServer) -> list[str]:
    """Every completion request body the fake model received, as raw text."""
    return [r.raw.decode("utf-8", "replace") for r in server.completions()]


def multi_steer_session(steers: list[str], *, denial: str | None = None) -> list[dict[str, Any]]:
    """A run where the person steers once per entry of `steers` (each riding
    beside a tool result), optionally refusing one more tool call."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Clean up the project's docs."}]
    for n, steer in enumerate(steers):
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"s{n}", "name": "fs_read", "input": {"n": n}}]}
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"s{n}", "content": "ok", "is_error": False},
                    {"type": "text", "text": steer},
                ],
            }
        )
    if denial is not None:
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": "d", "name": "shell", "input": {"command": "rm -r x"}}]}
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "d", "content": f"Denied by the user: {denial}", "is_error": True}],
            }
        )
    messages.append({"role": "assistant", "content": "Done, and nothing else was touched."})
    return messages


class GatedResponder:
    """`lessons_responder`, held at the gate until the test opens it (bounded:
    after `WAIT_S` it answers anyway, so a forgotten gate costs seconds)."""

    def __init__(self) -> None:
        self.gate = threading.Event()

    def __call__(self, request: Any, dialect: Any) -> Any:
        self.gate.wait(WAIT_S)
        return lessons_responder(request, dialect)


def model_options(server: ModelServer) -> dict[str, Any]:
    """`initializationOptions.model` pointing at the fake model."""
    return {"api": "openai", "baseUrl": server.url, "model": "scripted-model"}
