"""A child process that runs one store operation and stops dead at a chosen
point, for the crash tests (`test_crash.py`).

Run as `python -m tests.reliability.crashkit`. It imports the store, the
passes and the proposal functions once, then serves commands, one JSON
object per stdin line. For each it *forks*: the forked child is the process
that does the work and gets SIGKILLed, so every trial is a real process
dying, without paying the interpreter's import time per trial. Nothing here
changes product code: the kill points are made by wrapping `os.write`,
`os.replace`, `os.unlink` and `subprocess.run` inside the forked child only.

A command:

    {"op": "reflect" | "learn" | "accept" | "reject" | "retire" | "handover",
     "root": "/path/to/store", "args": {...},
     "kill": null | {"at": <event index>, "phase": "start" | "torn" | "after" | "during"}}

What comes back on stdout, one JSON object per line:

    {"pid": N}                          the forked child, before it starts
    {"hit": i, "event": ..., "phase": p, "git_pid": M?}
                                        the child reached its kill point and is
                                        blocked there, waiting to be killed
    {"done": true, "events": [...], "result": ...}   or   {"error": "..."}
    {"exit": status}                    the child is gone (reaped)

Events are the store's durable steps, in order, with paths relative to the
store and the random parts of temp names, claims and proposal ids
normalised, so a trace run and a kill run can be checked to agree on what
event `i` is. Phases:

- `start`  — before the event: nothing of it has happened.
- `torn`   — a write: the first half of its bytes is written, then stop (what
             a crash mid-write leaves in the worst case).
- `after`  — the event has completed; stop before the next line of code.
- `during` — a git command: git is started and keeps running on its own; the
             pass is killed while git works (git finishes, as it would when
             only the pass is killed).
- `with-git` — a git command dies with the pass (power loss, a killed
             process group), leaving git's `index.lock` behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import msgspec

from mecha.core.learning import proposals
from mecha.core.learning.consolidation import Learner
from mecha.core.learning.learn import learn_domain
from mecha.core.learning.reflect import reflect_inbox
from mecha.core.learning.reflection import Reflector
from mecha.core.providers.base import CompletionRequest, CompletionResponse
from mecha.core.sessions.transcript import Message, TaintCheckpoint
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.inbox import enqueue, session_entry
from mecha.core.store.learning_store import LearningStore
from mecha.sidecar import passrun
from tests.model_server import lessons_responder

#: The longest a child waits at its kill point for the parent to kill it.
BLOCK_S = 30.0

_real_write = os.write
_real_replace = os.replace
_real_unlink = os.unlink
_real_open = os.open
_real_close = os.close
_real_run = subprocess.run

_TMP = re.compile(r"\.(?:\d+-)?[0-9a-f]{8}\.tmp$")
_CLAIM = re.compile(r"\.claim-\d+$")
_PROPOSAL = re.compile(r"^proposals/[^/]+\.json")
_INBOX = re.compile(r"^inbox/\d{8}T\d{6}\.\d{6}Z-")


class LessonsProvider:
    """The fake model's `lessons` responder, answered in-process: the crash
    tests are about what the store does around a model call, not HTTP."""

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        body = {"messages": [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]}
        answer = lessons_responder(body, "openai")
        return CompletionResponse(text=answer.text or "")


class Tracer:
    def __init__(self, root: Path, kill: dict[str, Any] | None, out: int):
        self.root = str(root.resolve())
        self.kill = kill
        self.out = out
        self.events: list[str] = []
        self.fds: dict[int, str] = {}

    # ── bookkeeping ──

    def rel(self, path: Any) -> str | None:
        try:
            p = os.path.realpath(os.fspath(path))
        except TypeError:
            return None
        if not (p == self.root or p.startswith(self.root + os.sep)):
            return None
        rel = os.path.relpath(p, self.root)
        rel = _TMP.sub(".*.tmp", rel)
        rel = _CLAIM.sub(".claim-*", rel)
        rel = _PROPOSAL.sub("proposals/*.json", rel)
        rel = _INBOX.sub("inbox/<when>-", rel)
        return rel

    def say(self, msg: dict[str, Any]) -> None:
        data = (json.dumps(msg) + "\n").encode()
        view = memoryview(data)
        while view:
            n = _real_write(self.out, view)
            view = view[n:]

    def block(self, index: int, event: str, phase: str, **extra: Any) -> None:
        self.say({"hit": index, "event": event, "phase": phase, **extra})
        time.sleep(BLOCK_S)
        os._exit(9)  # never killed: the parent gave up; leave loudly

    def step(self, event: str, phase_fn: Any) -> Any:
        """Record `event` and run it, stopping at the kill point if this is it."""
        index = len(self.events)
        self.events.append(event)
        kill = self.kill
        if kill is not None and kill["at"] == index:
            phase = kill["phase"]
            if phase == "start":
                self.block(index, event, phase)
            return phase_fn(phase, lambda **extra: self.block(index, event, phase, **extra))
        return phase_fn(None, None)

    # ── the wrapped calls ──

    def open(self, path: Any, flags: int, mode: int = 0o777, *, dir_fd: Any = None) -> int:
        fd = _real_open(path, flags, mode, dir_fd=dir_fd) if dir_fd is not None else _real_open(path, flags, mode)
        rel = self.rel(path)
        if rel is not None and flags & (os.O_WRONLY | os.O_RDWR):
            self.fds[fd] = rel
        else:
            self.fds.pop(fd, None)
        return fd

    def close(self, fd: int) -> None:
        self.fds.pop(fd, None)
        _real_close(fd)

    def write(self, fd: int, data: Any) -> int:
        rel = self.fds.get(fd)
        if rel is None or rel == ".lock":
            return _real_write(fd, data)

        def go(phase: str | None, stop: Any) -> int:
            if phase == "torn":
                whole = bytes(data)
                half = whole[: max(1, len(whole) // 2)]
                _real_write(fd, half)
                stop(bytes=len(half), of=len(whole))
            n = _real_write(fd, data)
            if phase == "after":
                stop()
            return n

        return self.step(f"write {rel}", go)

    def replace(self, src: Any, dst: Any, **kw: Any) -> None:
        rel = self.rel(dst)
        if rel is None:
            return _real_replace(src, dst, **kw)

        def go(phase: str | None, stop: Any) -> None:
            _real_replace(src, dst, **kw)
            if phase is not None:
                stop()

        return self.step(f"replace {rel}", go)

    def unlink(self, path: Any, **kw: Any) -> None:
        rel = self.rel(path)
        if rel is None:
            return _real_unlink(path, **kw)

        def go(phase: str | None, stop: Any) -> None:
            _real_unlink(path, **kw)
            if phase is not None:
                stop()

        return self.step(f"unlink {rel}", go)

    def run(self, args: Any, *a: Any, **kw: Any) -> Any:
        if not (isinstance(args, (list, tuple)) and args and args[0] == "git"):
            return _real_run(args, *a, **kw)
        sub = _git_subcommand(list(args))

        def go(phase: str | None, stop: Any) -> Any:
            if phase == "with-git":
                # Git itself dies mid-command (power loss, a killed process
                # group): what it leaves is its index lock.
                cwd = kw.get("cwd") or "."
                fd = _real_open(os.path.join(cwd, ".git", "index.lock"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                _real_close(fd)
                stop()
            if phase == "during":
                proc = subprocess.Popen(
                    list(args),
                    cwd=kw.get("cwd"),
                    env=kw.get("env"),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
                stop(git_pid=proc.pid)
            result = _real_run(args, *a, **kw)
            if phase == "after":
                stop()
            return result

        return self.step(f"git {sub}", go)

    def install(self) -> None:
        os.open = self.open  # type: ignore[assignment]
        os.close = self.close  # type: ignore[assignment]
        os.write = self.write  # type: ignore[assignment]
        os.replace = self.replace  # type: ignore[assignment]
        os.unlink = self.unlink  # type: ignore[assignment]
        subprocess.run = self.run  # type: ignore[assignment]


def _git_subcommand(args: list[str]) -> str:
    i = 1
    while i < len(args):
        a = args[i]
        if a in ("--git-dir", "--work-tree", "-c", "-C"):
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return a
    return "?"


# ─── the operations ─────────────────────────────────────────────────────────


def _run_op(op: str, root: Path, args: dict[str, Any]) -> Any:
    if op in ("reflect", "learn"):
        # The real pass body, with the model answered in-process.
        os.environ["MECHA_LEARNING_DIR"] = str(root)
        passrun._provider = lambda *_: (LessonsProvider(), None)  # type: ignore[assignment]
        code = passrun.run_pass(op, args["job"], args.get("domain"), args.get("min"))
        return {"code": code, "job": msgspec.to_builtins(jobs_mod.read_job(root, args["job"]))}
    store = LearningStore(root)
    if op == "accept":
        return msgspec.to_builtins(proposals.accept_proposal(store, args["id"]))
    if op == "reject":
        return msgspec.to_builtins(proposals.reject_proposal(store, args["id"], args.get("reason"), wrong=args.get("wrong", [])))
    if op == "retire":
        return msgspec.to_builtins(proposals.propose_retirement(store, args["domain"], args["rule_id"], args["reason"]))
    if op == "handover":
        # What `mecha/sessionEnded` and the pass it starts do: the transcript
        # into the inbox, then a reflect pass over it.
        entry = session_entry(
            args["session"],
            msgspec.convert(args["messages"], list[Message]),
            msgspec.convert(args["timeline"], list[TaintCheckpoint]),
        )
        enqueue(store, entry)
        return msgspec.to_builtins(asyncio.run(reflect_inbox(store, Reflector(LessonsProvider()))))
    if op == "reflect-inline":
        outcome = asyncio.run(reflect_inbox(store, Reflector(LessonsProvider())))
        return msgspec.to_builtins(outcome)
    if op == "learn-inline":
        outcome = asyncio.run(learn_domain(store, args["domain"], Learner(LessonsProvider()), minimum=args.get("min")))
        return msgspec.to_builtins(outcome)
    raise ValueError(f"unknown op {op!r}")


def _child(cmd: dict[str, Any], go_fd: int) -> None:
    os.read(go_fd, 1)  # wait until the parent has announced our pid
    _real_close(go_fd)
    root = Path(cmd["root"])
    tracer = Tracer(root, cmd.get("kill"), sys.stdout.fileno())
    try:
        # Logs go to this process's stderr (the server's log file).
        tracer.install()
        result = _run_op(cmd["op"], root, cmd.get("args") or {})
    except BaseException as exc:  # noqa: BLE001 - reported, then the child exits
        tracer.say({"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:], "events": tracer.events})
        os._exit(1)
    tracer.say({"done": True, "events": tracer.events, "result": result})
    os._exit(0)


def main() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        r, w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _real_close(w)
            _child(cmd, r)
            os._exit(0)  # pragma: no cover - _child never returns
        _real_close(r)
        sys.stdout.write(json.dumps({"pid": pid}) + "\n")
        sys.stdout.flush()
        _real_write(w, b"g")
        _real_close(w)
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(json.dumps({"exit": status}) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
