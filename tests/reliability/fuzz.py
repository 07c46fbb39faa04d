"""The long fuzz: `python -m tests.reliability.fuzz [--cases N] [--seed S]`.

Drives the sidecar's in-process layers — the frame reader, the envelope and
params decoders, and dispatch to the real handlers against a real, populated
store in a temp dir — with mutated valid requests and random bytes, and
checks after every case that:

- nothing raised but an `RpcError` or a domain error (`LearningError`): any
  other exception is what a client would see as -32603, a crash in waiting;
- a result encodes to the wire as the server would send it;
- a request to a method that only reads changed no file of the store (each
  file's and directory's identity: inode, size, mtime);
- nothing appeared next to the store (nothing was written outside it);
- a body refused as JSON only for a lone surrogate escape (`"\\ud800"`)
  has its error addressed to its id, which can be read;
- in a framed stream of broken frames, the valid frame sent after a pause
  was recovered whole, and so was every well-framed frame sent in the same
  write right behind a broken one (an overlong length, a bad or missing
  length, a short one): a bad frame costs exactly that frame;
- a shell command line from an imported session's tool call (the
  command-line corpus's spellings, then mutated bytes) gets a yes or no from
  the trust decision, never an exception, in bounded time — and an
  unmutated line whose commands include one not on the allowlist is never
  called local, nor a line of only allowlisted ones untrusted;
- the hostile shapes (`tests/reliability/fuzz_shapes.py`): JSON nested past
  every depth a reader follows, in frames, in imported session lines and in
  model replies; replies with unbalanced braces, unclosed strings, numbers
  past a float's range, or 600 MB long, through a real reflect pass against
  the scripted model server over real HTTP; rule text that tries to end the
  section an export writes — each with the same checks (a named error, no
  hang, nothing lost) and its own.

Background passes are not spawned: `jobs.start_pass` is replaced by one that
writes the job record a real start would, so a request that would start a
pass is served exactly as it is, minus the child process.

Prints the number of cases and failures (with a replayable description of
the first few) and exits non-zero on any failure. `--start I --cases 1`
replays case I of a seed on its own: each case draws from its own
`Random(f"{seed}:{i}")`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from mecha.core.domain.rules import Rule
from mecha.core.errors import LearningError
from mecha.core.identity import mint_job_id, now
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.learning_store import LearningStore, ProposalStatus
from mecha.core.store.ledger import ValidationRecord
from mecha.protocol import errors as codes
from mecha.protocol.errors import RpcError, rpc_error_from
from mecha.protocol.framing import MAX_FRAME_BYTES, encode_frame, next_header_at
from mecha.protocol.jsonrpc import decode_envelope, request_id_of
from mecha.sidecar import handlers
from mecha.sidecar import jobs as background
from mecha.sidecar.context import Context
from mecha.sidecar.rpc import Cancel, _encode_result
from tests import builders
from tests.builders import write_learned_rules
from tests.core.shellcorpus import BROKEN, generate_line
from tests.model_server import ModelServer, lessons_responder
from tests.reliability.cases import RUN_METHODS, StallingReader, valid_params
from tests.reliability.fuzz_shapes import ReplyCases, run_shape

#: Methods that must never change the store.
READ_ONLY = frozenset(
    {
        "mecha/rulesPromptBlock",
        "mecha/extractInterventions",
        "mecha/liveAffect",
        "mecha/appraiseSession",
        "mecha/renderCandidate",
        "mecha/locateFollowup",
        "mecha/jobs",
        "mecha/proposals",
        "mecha/proposal",
        "mecha/ruleTallies",
        "mecha/heldCorrections",
        "mecha/rules",
        "mecha/judge",
        "mecha/judgeDrawn",
        "mecha/doctor",
    }
)

PENDING_ID = "20260101T000000-0000aaaa"
ACCEPTED_ID = "20260101T000000-0000bbbb"
WHEN = "2026-01-01T00:00:00.000000Z"
#: The held corrections' ids in a template built with `sessions`
#: (`held_corrections`): the first a program of the person's own held back
#: (vouchable), the second a stranger's text (`curl`) held back (refused).
HELD_IDS = ("20260101T000000-held0001", "20260101T000000-held0002")

#: Strings that have hurt path-building code before.
TRICKY = [
    "",
    " ",
    ".",
    "..",
    "../x",
    "../../etc/passwd",
    "/etc/passwd",
    "/tmp/x",
    "a/b",
    "a\\b",
    "a\x00b",
    "behavior\x00",
    "behavior/../../x",
    "behavior\n",
    " behavior",
    "BEHAVIOR",
    "ｂｅｈａｖｉｏｒ",
    "behavior\u200b",
    "behavi\u0307or",
    "\u202ebehavior",
    "b" * 64,
    "b" * 65,
    "~",
    "$HOME",
    "%2e%2e%2fx",
    "behavior.user",
    "behavior.learned.toml",
    "writing",
    "triage",
    "behavior",
    PENDING_ID,
    ACCEPTED_ID,
    "2026",
    "r-1",
    "r-2",
    "😀" * 10,
]


# ─── the store ──────────────────────────────────────────────────────────────


def build_template(root: Path, sessions: Path | None = None) -> None:
    """A store with something in every file a request can touch; with
    `sessions` (a folder outside the store), also two corrections held back
    as untrusted, read from Claude Code session files written there."""
    store = LearningStore.open(root)
    rules = root / "rules"
    (rules / "behavior.user.toml").write_text('# mine\n[[rules]]\ntext = "Answer in English"\n')
    (rules / "behavior.user.toml").chmod(0o600)
    write_learned_rules(
        store,
        "behavior", [Rule(text="Ask before pushing", id="r-1"), Rule(text="Keep the old name as an alias", id="r-2")]
    )
    write_learned_rules(store, "writing", [Rule(text="Keep emails short", id="r-3")])
    before = store.learned_rules("behavior")
    store.write_proposal(
        builders.proposal(
            PENDING_ID, [*before, Rule(text="Run the tests before committing", id="r-4")], rules_before=before,
            reflexion_ids=["refl-1"], created_at=WHEN,
        )
    )
    store.write_proposal(
        builders.proposal(
            ACCEPTED_ID, store.learned_rules("writing"), domain="writing", status=ProposalStatus.ACCEPTED,
            created_at=WHEN, resolved_at=WHEN,
        )
    )
    store.append_reflexions(
        [
            builders.reflexion(
                f"refl-{i}", "When asked to stop, stop.", domain="behavior" if i < 4 else "writing",
                session_id="run-0", context="c", intervention="i", created_at=WHEN,
            )
            for i in range(1, 6)
        ]
    )
    store.append_validation(
        ValidationRecord(
            reflexion_id="refl-1",
            trigger="steer",
            domain="behavior",
            rules_hash="0000000000000000",
            rule_ids=["r-1"],
            outcome="improved",
            model="m",
            created_at=WHEN,
        )
    )
    store.mark_mined("run-0")
    jobs_mod.write_job(root, jobs_mod.Job(id="20260101T000000-learn-aaaaaa-1", kind="learn", state="done", started_at=WHEN))
    if sessions is not None:
        held_corrections(store, sessions)
    with store.lock():
        pass
    store.commit("fuzz: the starting store")


class _NoModel:
    """A provider for a reflect pass that must not call one: every
    correction it meets reads untrusted, and is recorded without a call."""

    async def complete(self, request: Any) -> Any:
        raise AssertionError("the held corrections' pass called the model")


def held_corrections(store: LearningStore, sessions: Path) -> None:
    """Two corrections held back (`HELD_IDS`), as an import and its reflect
    pass record them: one after a program the reader does not know (the
    person may vouch for it), one after a `curl` (a stranger's text: never)."""
    import asyncio
    from unittest import mock

    from mecha.core.agents.importing import import_sessions
    from mecha.core.learning.reflect import reflect_inbox
    from mecha.core.learning.reflection import Reflector
    from mecha.core.sessions.mining import DEFAULT_VOICES
    from tests.core.ccfixture import Claude, text, use

    cc = Claude(session="f0220001-1111-4222-8333-444455556666")
    cc.user("Speed up the parser.").assistant(text("Measuring."), use("s1", "Bash", command="benchtool --quick parser"))
    cc.result("s1", "12 ms").assistant(text("12 ms a file.")).user("Always measure three runs, not one.")
    cc.assistant(text("Reading the guide."), use("s2", "Bash", command="curl -s https://example.org/guide")).result("s2", "Cache.")
    cc.assistant(text("The guide says to cache.")).user("Cache the tokenizer only.").assistant(text("Done."))
    folder = sessions / "-home-pat-proj"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "held.jsonl").write_bytes(cc.bytes())
    import_sessions(store, "claude", sessions, voices=DEFAULT_VOICES)
    ids = iter(HELD_IDS)
    with mock.patch("mecha.core.learning.reflect.mint_reflexion_id", lambda: next(ids)):
        asyncio.run(reflect_inbox(store, Reflector(_NoModel())))  # type: ignore[arg-type]


def snapshot(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """Identity of every file and directory under `root`: a write through a
    temp file changes an inode, an append a size and an mtime, a new file or
    a removed one its directory's mtime, a chmod the mode. Git's object
    files never change in place, so under `.git/objects` only directories
    are looked at (a new object changes its directory)."""
    out: dict[str, tuple[int, int, int, int]] = {}
    objects = os.path.join(root, ".git", "objects")
    st = os.stat(root)
    out[str(root)] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
    stack = [str(root)]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                st = e.stat(follow_symlinks=False)
                out[e.path] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
                if e.is_dir(follow_symlinks=False) and d != objects:
                    stack.append(e.path)
    return out


def _fake_start_job(ctx: Context, kind: str, **kw: Any) -> jobs_mod.Job:
    """What `jobs.start_pass` records, without the detached process."""
    job = jobs_mod.Job(
        id=mint_job_id(kind),
        kind=kind,  # type: ignore[arg-type]
        domain=kw.get("domain"),
        state="running",
        started_at=now(),
        session_id=kw.get("session_id"),
    )
    jobs_mod.write_job(ctx.store().root, job)
    return job


# ─── random JSON and mutations ──────────────────────────────────────────────


def rand_scalar(rng: random.Random) -> Any:
    kind = rng.randrange(8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, 1, -1, 2**31, -(2**63), 2**63 - 1, 2**64, rng.randint(-1000, 1000)])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e-300, 3.0, rng.uniform(-1e6, 1e6)])
    if kind == 4:
        return rng.choice(TRICKY)
    if kind == 5:
        return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x2FFF)])) for _ in range(rng.randrange(12)))
    if kind == 6:
        return "x" * rng.choice([1000, 100_000])
    return rng.choice(["user", "assistant", "text", "tool_use", "tool_result", "message", "sent", "self", "clean"])


def rand_json(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 3 or r < 0.55:
        return rand_scalar(rng)
    if r < 0.75:
        return [rand_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice([*TRICKY[:8], "id", "type", "role", "content", "text", "domain"]): rand_json(rng, depth + 1) for _ in range(rng.randrange(4))}


def _containers(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    out = []
    if isinstance(value, (dict, list)):
        out.append((path, value))
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            out.extend(_containers(v, (*path, k)))
    return out


def same_kind(rng: random.Random, old: Any) -> Any:
    """A different value of the same JSON kind: what gets past the type
    checks and into the handlers."""
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return rng.choice([0, -1, 1, old + 1, old - 1, 2**31, -(2**63), 2**63 - 1, 10**6])
    if isinstance(old, float):
        return rng.choice([0.0, -0.0, -1.5, 1e308, 5e-324])
    if isinstance(old, str):
        if rng.random() < 0.6:
            return rng.choice(TRICKY)
        cut = rng.randrange(len(old) + 1)
        return old[:cut] + rng.choice(TRICKY) + old[cut:]
    return rand_json(rng)


def mutate_value(rng: random.Random, value: Any) -> Any:
    """One change somewhere inside `value` (a copy is changed): half the time
    a scalar replaced by another of its kind, else a structural change."""
    value = json.loads(json.dumps(value))
    targets = _containers(value)
    if targets and rng.random() < 0.5:
        leaves = [(node, k) for _, node in targets for k in (node if isinstance(node, dict) else range(len(node)))
                  if not isinstance(node[k], (dict, list))]
        if leaves:
            node, k = rng.choice(leaves)
            node[k] = same_kind(rng, node[k])
            return value
    if not targets:
        return rand_json(rng)
    _, node = rng.choice(targets)
    if isinstance(node, dict):
        op = rng.randrange(4)
        if node and op == 0:
            node.pop(rng.choice(list(node)))
        elif node and op == 1:
            node[rng.choice(list(node))] = rand_json(rng)
        elif node and op == 2:
            node[rng.choice(list(node))] = rng.choice(TRICKY)
        else:
            node[rng.choice([*TRICKY[:6], "extra", "id"])] = rand_json(rng)
    else:
        op = rng.randrange(4)
        if node and op == 0:
            node.pop(rng.randrange(len(node)))
        elif node and op == 1:
            node[rng.randrange(len(node))] = rand_json(rng)
        elif node and op == 2:
            node.extend(node[: rng.randrange(1, len(node) + 1)] * rng.randrange(1, 4))
        else:
            node.append(rand_json(rng))
    return value


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randrange(1, 5)):
        if not b:
            break
        at = rng.randrange(len(b))
        op = rng.randrange(6)
        if op == 0:
            b[at] = rng.randrange(256)
        elif op == 1:
            del b[at : at + rng.randrange(1, 8)]
        elif op == 2:
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6)))
        elif op == 3:
            b[at:at] = rng.choice([b"{", b"}", b"[", b"]", b'"', b",", b":", b"\\", b"\\u0000", b"\\ud800", b"null", b"1e999"])
        elif op == 4:
            del b[at:]
        else:
            b[at:at] = b[at : at + rng.randrange(1, 40)]
    return bytes(b)


def valid_request(rng: random.Random, method: str | None = None) -> dict[str, Any]:
    method = method or rng.choice(RUN_METHODS)
    id_ = rng.choice([rng.randrange(1 << 31), f"id-{rng.randrange(1000)}"])
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": valid_params(method)}


def make_body(rng: random.Random) -> tuple[str, bytes]:
    """One message body and the name of how it was made."""
    kind = rng.choices(
        ["valid", "params", "params2", "member", "bytes-mutated", "random-bytes", "random-json", "deep", "surrogate"],
        weights=[6, 30, 10, 10, 22, 8, 8, 2, 3],
    )[0]
    msg = valid_request(rng)
    if kind == "surrogate":
        # Half a UTF-16 pair, escaped, in a string of the params: not JSON,
        # but the id is readable and must be answered at.
        half = rng.choice(["\\ud800", "\\udfff", "\\uDBFF", "\\ud83d"])
        text = json.dumps({**msg, "params": {**msg["params"], "note": "@"}})
        return kind, text.replace('"@"', f'"a{half}b"').encode()
    if kind == "params":
        msg["params"] = mutate_value(rng, msg["params"])
    elif kind == "params2":
        for _ in range(rng.randrange(2, 6)):
            msg["params"] = mutate_value(rng, msg["params"])
    elif kind == "member":
        key = rng.choice(["jsonrpc", "id", "method", "params", "result", "error"])
        if rng.random() < 0.3:
            msg.pop(key, None)
        else:
            msg[key] = rng.choice([rand_json(rng), rng.choice(RUN_METHODS), rng.choice(TRICKY)])
    elif kind == "random-bytes":
        return kind, bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
    elif kind == "random-json":
        return kind, json.dumps(rand_json(rng)).encode()
    elif kind == "deep":
        depth = rng.choice([500, 997, 1000, 5000])
        msg["params"] = {"messages": "@"}
        text = json.dumps(msg).replace('"@"', "[" * depth + "]" * depth)
        return kind, text.encode()
    data = json.dumps(msg, ensure_ascii=rng.random() < 0.5).encode()
    if kind == "bytes-mutated":
        data = mutate_bytes(rng, data)
    return kind, data


#: Stream faults after which the frame right behind, sent in the same write,
#: may be lost with it: a header cut off before its blank line merges with
#: the next frame's header (two lengths that disagree), and a frame mutated
#: byte by byte can be anything, that included.
MAY_COST_THE_NEXT = frozenset({5, 6})
#: A well-framed frame.
INTACT = 7


def make_stream(rng: random.Random) -> tuple[list[bytes], bytes, list[bytes]]:
    """Bytes of one to six frames, each possibly broken at the framing
    level; the sentinel body sent after a pause; and the bodies of the
    well-framed frames that must be recovered (see `MAY_COST_THE_NEXT`)."""
    parts = []
    must = []
    previous = None
    for _ in range(rng.randrange(1, 7)):
        _, body = make_body(rng)
        fault = rng.randrange(12)
        if fault == 0:
            parts.append(b"Content-Length: %d\r\n\r\n" % max(0, len(body) - rng.randrange(1, 20)) + body)
        elif fault == 1:
            # Overlong, and most often into the frames pipelined behind it.
            over = rng.choice([rng.randrange(1, 30), rng.randrange(1, 200), rng.randrange(1, 5000)])
            parts.append(b"Content-Length: %d\r\n\r\n" % (len(body) + over) + body)
        elif fault == 8:
            # Over the frame limit: skipped, except for what is pipelined behind it.
            parts.append(b"Content-Length: %d\r\n\r\n" % (MAX_FRAME_BYTES + rng.randrange(1, 1 << 20)) + body[: rng.randrange(64)])
        elif fault == 2:
            parts.append(rng.choice([b"content-length:", b"Content-Length :", b"CONTENT-LENGTH: "]) + b"%d\n\n" % len(body) + body)
        elif fault == 3:
            parts.append(b"Content-Length: " + rng.choice([b"-1", b"x", b"", b"1.5", b"99999999999999"]) + b"\r\n\r\n" + body)
        elif fault == 4:
            parts.append(b"Content-Type: x\r\n\r\n" + body)
        elif fault == 5:
            parts.append(mutate_bytes(rng, encode_frame(body)))
        elif fault == 6:
            parts.append(b"Content-Length: %d\r\n" % len(body))
        else:
            fault = INTACT
            parts.append(encode_frame(body))
            # A body that itself holds a header line is not JSON: the reader
            # may rightly read a frame from it (see `next_header_at`).
            if previous not in MAY_COST_THE_NEXT and next_header_at(body, 0, len(body)) is None:
                must.append(body)
        previous = fault
    sentinel = json.dumps({"jsonrpc": "2.0", "id": f"sentinel-{rng.randrange(1 << 30)}", "method": "mecha/jobs"}).encode()
    return parts, sentinel, must


def _lenient_id(body: bytes) -> Any:
    """The id of a body that is JSON but for lone surrogate escapes, read
    independently of the implementation (the standard library takes them),
    or `None`."""
    if not re.search(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", body):
        return None
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    value = obj.get("id")
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _missing_in_order(wanted: list[bytes], got: list[bytes]) -> list[bytes]:
    """The bodies of `wanted` not found in `got` in that order."""
    missing = []
    at = 0
    for body in wanted:
        try:
            at = got.index(body, at) + 1
        except ValueError:
            missing.append(body)
    return missing


# ─── running cases ──────────────────────────────────────────────────────────


@dataclass
class Failure:
    case: int
    kind: str
    what: str
    body: bytes

    def describe(self, seed: int) -> str:
        return (
            f"case {self.case} ({self.kind}; replay: --seed {seed} --start {self.case} --cases 1): {self.what}\n"
            f"    body: {self.body[:300]!r}{' …' if len(self.body) > 300 else ''}"
        )


@dataclass
class Fuzzer:
    seed: int
    work: Path
    template: Path
    failures: list[Failure] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    dispatched: int = 0
    #: The scripted model server the reply shapes talk to.
    server: ModelServer | None = None
    replies: ReplyCases | None = None
    ctx: Context = field(init=False)
    dispatch: Callable[..., Any] = field(init=False)

    def reset(self) -> None:
        root = self.work / "store"
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(self.template, root, symlinks=True)
        self.ctx = Context(root=root)
        self.dispatch = handlers.make_dispatch(self.ctx)

    @property
    def root(self) -> Path:
        return self.ctx.root

    def fail(self, case: int, kind: str, what: str, body: bytes) -> None:
        self.failures.append(Failure(case, kind, what, body))

    def run_body(self, case: int, kind: str, body: bytes) -> None:
        try:
            msg = decode_envelope(body)
        except RpcError as err:
            if err.code not in (codes.PARSE_ERROR, codes.INVALID_REQUEST):
                self.fail(case, kind, f"envelope error with code {err.code}: {err.message}", body)
            try:
                found = request_id_of(body)
            except Exception as exc:
                self.fail(case, kind, f"request_id_of raised {type(exc).__name__}: {exc}", body)
                return
            readable = _lenient_id(body)
            if readable is not None and found != readable:
                self.fail(case, kind, f"the id {readable!r} could be read but the error went to {found!r}", body)
            return
        except Exception as exc:
            self.fail(case, kind, f"decode_envelope raised {type(exc).__name__}: {exc}", body)
            return
        if not msg.is_request or not isinstance(msg.method, str):
            return
        method = msg.method
        before = snapshot(self.root) if method in READ_ONLY else None
        raw = None if msg.params is msgspec.UNSET else msg.params
        self.dispatched += 1
        try:
            result = self.dispatch(method, raw, Cancel())
            _encode_result(msg.id, result)
        except (RpcError, LearningError) as exc:
            err = rpc_error_from(exc)
            if err.code == codes.INTERNAL_ERROR:
                self.fail(case, kind, f"{method}: internal error {err.message}", body)
        except Exception as exc:
            tb = traceback.format_exception(exc)
            self.fail(case, kind, f"{method}: {type(exc).__name__}: {exc}\n    {''.join(tb[-3:]).strip()}", body)
        if before is not None:
            after = snapshot(self.root)
            if after != before:
                changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                self.fail(case, kind, f"{method} only reads, but changed {changed[:5]}", body)
                self.reset()

    def run_stream(self, case: int, rng: random.Random) -> None:
        parts, sentinel, must = make_stream(rng)
        data = b"".join(parts)
        r, w = os.pipe()
        reader = StallingReader(r, w, encode_frame(sentinel), chunk=rng.choice([1, 7, 64, 4096, 1 << 16]), stall_timeout=5)
        bodies: list[bytes] = []
        try:
            if len(data) > 60_000:  # past the pipe's buffer: not this kind of case
                os.close(w)
                reader.sent = True
                return
            os.write(w, data)
            for _ in range(1000):
                frame = reader.read_frame()
                if frame is None:
                    break
                if frame.body is not None:
                    bodies.append(frame.body)
            else:
                self.fail(case, "stream", "the reader did not reach the end of input", data)
        except Exception as exc:
            self.fail(case, "stream", f"the frame reader raised {type(exc).__name__}: {exc}", data)
            return
        finally:
            os.close(r)
            if not reader.sent:
                os.close(w)
        if not bodies or bodies[-1] != sentinel:
            self.fail(case, "stream", f"the frame sent after a pause was lost (last bodies {bodies[-2:]!r})", data)
        lost = _missing_in_order(must, bodies)
        if lost:
            self.fail(case, "stream", f"{len(lost)} well-framed frame(s) sent behind a broken one were lost: {lost[0][:120]!r}", data)
        for body in bodies:
            self.run_body(case, "stream", body)

    def run_shell(self, case: int, rng: random.Random) -> None:
        from mecha.core.sessions.shell import command_stays_local

        line = generate_line(rng, rng.random() < 0.5)
        command: str | list[str] = line.text
        if rng.random() < 0.6:  # mutated: no answer is known, only that there is one
            roll = rng.random()
            if roll < 0.6:
                command = mutate_bytes(rng, line.text.encode()).decode("utf-8", "replace")
            elif roll < 0.8:
                command = line.text + rng.choice(BROKEN)
            elif roll < 0.9:
                at = rng.randrange(len(line.text) + 1)
                command = line.text[:at] + "\ud800" + line.text[at:]  # a lone surrogate, as JSON can carry one
            else:
                command = line.text.split(" ")  # an argv array
        shown = repr(command).encode("utf-8", "backslashreplace")
        started = time.monotonic()
        try:
            local = command_stays_local(command)
        except Exception as exc:
            self.fail(case, "shell", f"the trust decision raised {type(exc).__name__}: {exc}", shown)
            return
        took = time.monotonic() - started
        if took > 2.0:
            self.fail(case, "shell", f"the trust decision took {took:.1f}s", shown)
        if not isinstance(local, bool):
            self.fail(case, "shell", f"the trust decision answered {local!r}", shown)
        elif command == line.text and local is not line.local:
            wanted = "local" if line.local else "untrusted"
            self.fail(case, "shell", f"a line built {wanted} from {line.parts} was judged the other way", shown)

    def run_case(self, case: int) -> None:
        rng = random.Random(f"{self.seed}:{case}")
        roll = rng.random()
        if roll < 0.15:
            kind = "stream"
            self.run_stream(case, rng)
        elif roll < 0.2:
            kind = "shell"
            self.run_shell(case, rng)
        elif roll < 0.3:
            kind = run_shape(self, case, rng)
        else:
            kind, body = make_body(rng)
            self.run_body(case, kind, body)
        self.counts[kind] = self.counts.get(kind, 0) + 1
        outside = sorted(p.name for p in self.work.iterdir() if p.name != "store")
        if outside:
            self.fail(case, kind, f"files appeared next to the store: {outside}", b"")
            for name in outside:
                path = self.work / name
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


def run(cases: int, seed: int, start: int = 0, reset_every: int = 500, out: Any = sys.stdout) -> list[Failure]:
    """Run `cases` cases from `start`; the failures."""
    logging.disable(logging.CRITICAL)  # corrupt-line warnings are expected by the thousand
    saved = background.start_pass
    background.start_pass = _fake_start_job  # type: ignore[assignment]
    env_saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("MECHA_")}
    tmp = Path(tempfile.mkdtemp(prefix="mecha-fuzz-"))
    server = ModelServer(responder=lessons_responder).start()
    try:
        os.environ["MECHA_SIDECAR_CONFIG"] = str(tmp / "no-config.toml")
        template = tmp / "template"
        build_template(template, sessions=tmp / "held-sessions")
        work = tmp / "work"
        work.mkdir()
        fuzzer = Fuzzer(seed=seed, work=work, template=template, server=server)
        fuzzer.reset()
        started = time.monotonic()
        for i in range(start, start + cases):
            if i > start and (i - start) % reset_every == 0:
                fuzzer.reset()
            fuzzer.run_case(i)
            if out is not None and (i - start + 1) % 10_000 == 0:
                rate = (i - start + 1) / (time.monotonic() - started)
                print(f"  {i - start + 1} cases, {len(fuzzer.failures)} failures ({rate:.0f}/s)", file=out, flush=True)
        elapsed = time.monotonic() - started
        if out is not None:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(fuzzer.counts.items()))
            print(
                f"cases: {cases}  failures: {len(fuzzer.failures)}  dispatched: {fuzzer.dispatched}  "
                f"seed: {seed}  time: {elapsed:.1f}s\n  by kind: {kinds}",
                file=out,
            )
            for f in fuzzer.failures[:20]:
                print(f.describe(seed), file=out)
        return fuzzer.failures
    finally:
        server.stop()
        background.start_pass = saved  # type: ignore[assignment]
        os.environ.pop("MECHA_SIDECAR_CONFIG", None)
        os.environ.update(env_saved)
        logging.disable(logging.NOTSET)
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.reliability.fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=100_000, help="how many cases (default 100000)")
    p.add_argument("--seed", type=int, default=None, help="the seed (default: random, printed)")
    p.add_argument("--start", type=int, default=0, help="the first case's index (to replay one)")
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    print(f"fuzzing {args.cases} cases from {args.start}, seed {seed}", flush=True)
    failures = run(args.cases, seed, args.start)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
