"""Real exchanges with a real sidecar, one or more per method.

`capture()` starts `python -m mecha.sidecar` over stdio against a throwaway
learning dir (seeded with the bundled sample rules) and a scripted model
server on 127.0.0.1, drives every `mecha/*` method and a few error cases,
and returns each request with the reply (or notification) it got. The schema
tests validate every captured payload; `python -m tests.protocol.wire_examples`
prints them as Markdown, which is where `protocol/README.md`'s examples came
from; with `--fix-readme` it mends the README's examples that no longer meet
the schema from a fresh recording, and adds one for a method that has none
(`readme_contract.refresh`), leaving the prose to a person.

Machine-specific values (the temp dir, the model server's port) are replaced
by the placeholders a reader would expect (`~/.mecha/learning`,
`http://127.0.0.1:8080`) when printed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mecha.core.sessions.files import samples_dir
from mecha.protocol.framing import FrameReader, encode_frame
from tests.model_server import ModelServer, _learner_rules, reply, request_prompts, status
from tests.processes import wait_for_passes

TIMEOUT = 30.0
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# ─── a transcript small enough to read ──────────────────────────────────────

MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "Rename load_config to read_config in src/config.rs and update its callers."},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "I'll read the loader first."},
            {"type": "tool_use", "id": "t1", "name": "fs_read", "input": {"path": "src/config.rs"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "pub fn load_config() -> Config { ... }", "is_error": False}
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Renamed in three files. Pushing the branch."},
            {"type": "tool_use", "id": "t2", "name": "shell", "input": {"command": "git push origin main"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t2",
                "content": "Denied by the user: never push without asking",
                "is_error": True,
            }
        ],
    },
    {"role": "assistant", "content": "Understood, I won't push. The rename is done in three files."},
    {"role": "user", "content": "Keep the old name as a deprecated alias too."},
    {"role": "assistant", "content": "Added load_config as a deprecated alias of read_config."},
]

TIMELINE = [{"at": 0, "taint": {"private": False, "untrusted": False}}]

STATS = {"turns": 4, "tool_calls": 2, "tool_errors": 1, "tool_denied": 1, "stop_cause": "completed"}

DRAFT = {
    "id": "ob-7f3a",
    "status": "sent",
    "tool": "send_email",
    "kind": "message",
    "args": {"to": "dana@example.com", "subject": "Release 2.3", "body": "Hi Dana, release 2.3 is out. Thanks, Sam"},
    "args_before": {
        "to": "dana@example.com",
        "subject": "Release 2.3",
        "body": "Dear Dana,\n\nI am delighted to let you know that release 2.3 has now shipped.\n\nKind regards,\nSam",
    },
    "summary": "Tell Dana that release 2.3 shipped",
    "session_id": "run-0142",
    "taint": {"private": False, "untrusted": False},
    "created_at": "2026-11-03T09:12:00.000000Z",
    "resolved_at": "2026-11-03T09:14:30.000000Z",
}

LESSONS = {
    "never push without asking": "Ask before pushing to any remote branch; a finished change is not permission to publish it.",
    "deprecated alias": "When renaming a public function, keep the old name as a deprecated alias unless told otherwise.",
    "Hi Dana": "Keep emails short and plain: a one-line greeting, the news, a first-name sign-off.",
}


#: A steer the scripted model refuses with a 400, as a real server refuses a
#: prompt longer than its context: what gets an inbox entry set aside.
TOO_LONG = "here is the whole build log"

PASTED: list[dict[str, Any]] = [
    {"role": "user", "content": "Why does the nightly build fail?"},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Reading the build script."},
        {"type": "tool_use", "id": "b1", "name": "fs_read", "input": {"path": "ci/nightly.sh"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "b1", "content": "make all", "is_error": False},
        {"type": "text", "text": f"Stop guessing, {TOO_LONG}: …"},
    ]},
    {"role": "assistant", "content": "Reading the log instead."},
]


def _responder(request: Any, dialect: str) -> Any:
    system, user = request_prompts(request, dialect)  # type: ignore[arg-type]
    if '"reflexion"' in system and TOO_LONG in user:
        return status(400, body=json.dumps({"error": {"message": "the prompt is longer than the model's context"}}))
    if '"reflexion"' in system:
        lesson = next((v for k, v in LESSONS.items() if k in user), None)
        if lesson is None:
            return reply(json.dumps({"skip": True, "reflexion": ""}))
        answer = {"skip": False, "reflexion": lesson, "error_type": "other", "confidence": 0.8}
        return reply(json.dumps(answer))
    rules = [{**rule, "confidence": 0.7, "based_on_count": 1} for rule in _learner_rules(user)]
    return reply(json.dumps({"rules": rules, "dropped": []}))


# ─── a recording client ─────────────────────────────────────────────────────


@dataclass
class Exchange:
    """One thing that happened on the wire: a request and its reply, a
    notification the client sent (reply `None`), or one the server sent
    (request `None`)."""

    title: str
    request: dict[str, Any] | None
    reply: dict[str, Any] | None
    #: Raw bytes sent instead of a JSON request (a malformed frame).
    raw: bytes | None = None
    tags: set[str] = field(default_factory=set)


class Recorder:
    def __init__(self, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mecha.sidecar"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self.proc.stdout is not None
        self.reader = FrameReader(self.proc.stdout.fileno(), stall_timeout=TIMEOUT)
        self.cond = threading.Condition()
        self.replies: dict[Any, dict[str, Any]] = {}
        self.null_replies: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        self.exchanges: list[Exchange] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            frame = self.reader.read_frame()
            if frame is None:
                return
            if frame.body is None:
                continue
            msg = json.loads(frame.body)
            with self.cond:
                if "method" in msg:
                    self.notifications.append(msg)
                elif msg.get("id") is None:
                    self.null_replies.append(msg)
                else:
                    self.replies[msg["id"]] = msg
                self.cond.notify_all()

    def _write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _wait(self, ready: Any) -> Any:
        deadline = time.monotonic() + TIMEOUT
        with self.cond:
            while True:
                value = ready()
                if value is not None:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no reply from the sidecar")
                self.cond.wait(left)

    def call(self, method: str, params: Any = None, *, title: str = "", id: Any = None, tags: set[str] | None = None) -> dict[str, Any]:
        if id is None:
            self.next_id += 1
            id = self.next_id
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self._write(encode_frame(json.dumps(msg).encode()))
        reply = self._wait(lambda: self.replies.pop(id, None))
        self.exchanges.append(Exchange(title or method, msg, reply, tags=set(tags or ())))
        return reply

    def result(self, method: str, params: Any = None, **kw: Any) -> Any:
        reply = self.call(method, params, **kw)
        if "error" in reply:
            raise AssertionError(f"{method} failed: {reply['error']}")
        return reply["result"]

    def notify(self, method: str, params: Any = None, *, title: str = "", record: bool = True) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._write(encode_frame(json.dumps(msg).encode()))
        if record:
            self.exchanges.append(Exchange(title or method, msg, None))

    def cancelled_behind(self, ahead: str, method: str, params: Any, *, id: Any, title: str) -> dict[str, Any]:
        """A request queued behind another and cancelled before it is served:
        all three frames go in one write, so the cancel is read while the
        first request is still being served."""
        first = {"jsonrpc": "2.0", "id": f"{id}-ahead", "method": ahead, "params": {}}
        msg = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
        cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}}
        self._write(b"".join(encode_frame(json.dumps(m).encode()) for m in (first, msg, cancel)))
        self._wait(lambda: self.replies.pop(first["id"], None))
        reply = self._wait(lambda: self.replies.pop(id, None))
        self.exchanges.append(Exchange(title, msg, reply, tags={"error"}))
        self.exchanges.append(Exchange("$/cancelRequest", cancel, None))
        return reply

    def send_raw(self, data: bytes, *, title: str) -> dict[str, Any]:
        count = len(self.null_replies)
        self._write(data)
        reply = self._wait(lambda: self.null_replies[count] if len(self.null_replies) > count else None)
        self.exchanges.append(Exchange(title, None, reply, raw=data))
        return reply

    def wait_notification(self, method: str, *, title: str = "") -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            for i, msg in enumerate(self.notifications):
                if msg.get("method") == method:
                    return self.notifications.pop(i)
            return None

        msg = self._wait(found)
        self.exchanges.append(Exchange(title or method, None, msg))
        return msg

    def finish(self) -> int:
        try:
            return self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    stream.close()


# ─── the session ────────────────────────────────────────────────────────────


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    (tmp / "home").mkdir(exist_ok=True)
    env["HOME"] = str(tmp / "home")
    env["MECHA_SIDECAR_CONFIG"] = str(tmp / "no-such-sidecar.toml")
    return env


@dataclass
class Capture:
    exchanges: list[Exchange]
    exit_code: int
    root: Path
    model_url: str


def _held_session(folder: Path) -> None:
    """A Claude Code session in `folder`: a program of the person's the reader does not know holds
    back one correction, and a `curl` after it the next."""
    from tests.core.ccfixture import Claude, text, use

    cc = Claude(session="eeee0001-1111-4222-8333-444455556666", cwd="/home/dana/src/parser")
    cc.user("Speed up the parser.").assistant(text("Measuring."), use("s1", "Bash", command="benchtool --quick parser"))
    cc.result("s1", "12 ms").assistant(text("12 ms a file.")).user("Always measure three runs, not one.")
    cc.assistant(text("Reading the guide."), use("s2", "Bash", command="curl -s https://example.org/guide")).result("s2", "Guide.")
    cc.assistant(text("The guide says to cache.")).user("Cache the tokenizer only.").assistant(text("Done."))
    folder.mkdir(parents=True)
    path = folder / "eeee0001-1111-4222-8333-444455556666.jsonl"
    path.write_bytes(cc.bytes())
    os.utime(path, (1_700_000_000, 1_700_000_000))  # an ended session, not one still being written


def capture(tmp: Path) -> Capture:
    """Drive a real sidecar through every method; `tmp` holds its store."""
    root = tmp / "learning"
    (root / "rules").mkdir(parents=True)
    for path in sorted((samples_dir() / "rules").glob("*.toml")):
        shutil.copyfile(path, root / "rules" / path.name)
        (root / "rules" / path.name).chmod(0o600)
    for directory in (root, root / "rules"):
        directory.chmod(0o700)

    with ModelServer(responder=_responder, models=("local",)) as server:
        rec = Recorder(_env(tmp))
        try:
            _drive(rec, root, server.url)
        finally:
            code = rec.finish()
            wait_for_passes(root)
        return Capture(rec.exchanges, code, root, server.url)


def _drive(rec: Recorder, root: Path, model_url: str) -> None:
    # Before initialize: -32002.
    rec.call("mecha/rulesPromptBlock", {}, title="before initialize", tags={"error"})

    rec.result(
        "initialize",
        {
            "processId": 4242,
            "clientInfo": {"name": "mecha", "version": "0.9.0"},
            "initializationOptions": {
                "learningDir": str(root),
                "harnessVoices": ["[context compacted]", "[task notice]"],
                "model": {"api": "openai", "baseUrl": model_url, "model": "local", "timeoutS": 30},
            },
        },
    )
    rec.notify("initialized", {})

    rec.result("mecha/rulesPromptBlock", {})
    rec.result("mecha/extractInterventions", {"messages": MESSAGES})
    rec.result("mecha/locateFollowup", {"messages": MESSAGES, "text": "Keep the old name as a deprecated alias too."})
    rec.result("mecha/liveAffect", {"session_id": "run-0142", "stats": STATS, "messages": MESSAGES, "run_started_at": 0})
    rec.result(
        "mecha/appraiseSession",
        {
            "session_id": "run-0142",
            "stats": STATS,
            "messages": MESSAGES,
            "goal": "task:01J8ZK",
            "taint_timeline": TIMELINE,
            "probes": [{"at": 4, "verdict": "mattered"}],
        },
    )

    ended = rec.result("mecha/sessionEnded", {"session_id": "run-0142", "messages": MESSAGES, "taint_timeline": TIMELINE})
    if ended["job"]:
        rec.wait_notification("mecha/jobFinished")
    drafted = rec.result("mecha/draftResolved", {"item": DRAFT})
    if drafted["job"]:
        rec.wait_notification("mecha/jobFinished", title="mecha/jobFinished (draft)")
    unstaged = {**DRAFT, "id": "ob-7f3b", "args_before": None}
    rec.result("mecha/draftResolved", {"item": unstaged}, title="mecha/draftResolved (nothing staged)")
    rec.result("mecha/sessionEnded", {"session_id": "run-0142", "messages": MESSAGES, "taint_timeline": TIMELINE},
               title="mecha/sessionEnded (again)")

    rec.result("mecha/learn", {"domain": "writing", "min": 5}, title="mecha/learn (refused)")
    rec.result("mecha/learn", {"domain": "behavior", "project": str(root.parent / "home" / "src" / "app")},
               title="mecha/learn (one project)", tags={"aux"})
    learned = rec.result("mecha/learn", {"domain": "behavior", "min": 1})
    proposal_id = None
    if learned.get("job"):
        finished = rec.wait_notification("mecha/jobFinished", title="mecha/jobFinished (learn)")
        proposal_id = finished["params"]["job"].get("proposal_id")
    rec.result("mecha/jobs", {})

    # A session whose prompt the model refuses outright is set aside, not
    # retried by every later pass; a person retries or drops it.
    pasted = rec.result("mecha/sessionEnded", {"session_id": "run-0143", "messages": PASTED, "taint_timeline": TIMELINE},
                        title="mecha/sessionEnded (refused by the model)", tags={"aux"})
    if pasted["job"]:
        rec.wait_notification("mecha/jobFinished", title="mecha/jobFinished (set aside)")
    aside = rec.result("mecha/inbox", {})
    entry = aside["set_aside"][0]["id"]
    rec.result("mecha/inboxRetry", {"id": entry[:16]})
    rec.wait_notification("mecha/jobFinished", title="mecha/jobFinished (retried)")
    rec.result("mecha/inboxDrop", {"id": entry})
    rec.result("mecha/proposals", {"status": "pending"})
    assert proposal_id, "the learn pass made no proposal"
    rec.result("mecha/proposal", {"id": proposal_id[:12]})
    rec.result("mecha/renderCandidate", {"proposal_id": proposal_id})
    rec.result("mecha/acceptProposal", {"id": proposal_id})
    rec.call("mecha/acceptProposal", {"id": proposal_id}, title="mecha/acceptProposal (again)", tags={"error"})
    rec.result("mecha/rulesPromptBlock", {"domain": "triage"}, title="mecha/rulesPromptBlock (after accept)")

    learned_rules = _learned_rule_ids(root, "behavior")
    retired = rec.result(
        "mecha/proposeRetirement",
        {"domain": "behavior", "rule_id": learned_rules[0], "reason": "regressed in 3 of 4 probes"},
    )
    rec.result("mecha/rejectProposal", {"id": retired["proposal"]["id"], "reason": "keep it for now; the probes were noisy"})

    # Two pending proposals made against the same live rules: an id prefix
    # both share is ambiguous, and accepting one makes the other stale.
    first = rec.result("mecha/proposeRetirement", {"domain": "behavior", "rule_id": learned_rules[1], "reason": "superseded"},
                       title="mecha/proposeRetirement (second)", tags={"aux"})["proposal"]["id"]
    second = rec.result("mecha/proposeRetirement", {"domain": "behavior", "rule_id": learned_rules[2], "reason": "superseded"},
                        title="mecha/proposeRetirement (third)", tags={"aux"})["proposal"]["id"]
    shared = os.path.commonprefix([first, second])
    if shared and shared not in (first, second):
        rec.call("mecha/proposal", {"id": shared}, title="Ambiguous", tags={"error"})
    rec.result("mecha/acceptProposal", {"id": first}, title="mecha/acceptProposal (second)", tags={"aux"})
    rec.call("mecha/acceptProposal", {"id": second}, title="Stale", tags={"error"})

    block = rec.result("mecha/rulesPromptBlock", {}, title="mecha/rulesPromptBlock (for a probe)", tags={"aux"})
    rec.result(
        "mecha/recordValidation",
        {
            "reflexion_id": _first_reflexion_id(root),
            "trigger": "denial",
            "domain": "behavior",
            "rules_hash": block["rules_hash"],
            "rule_ids": block["rule_ids"],
            "outcome": "improved",
            "model": "local",
            "created_at": "2026-11-03T10:00:00.000000Z",
        },
    )
    rec.result("mecha/ruleTallies", {"domain": "behavior"})
    rec.result("mecha/lessons", {"scope": "global", "domain": "behavior", "limit": 2})
    rec.result("mecha/ruleSources", {"rule_id": _learned_rule_ids(root, "behavior")[-1]})
    rec.call("mecha/ruleSources", {"rule_id": "r-20991231-00000000"}, title="mecha/ruleSources (no such rule)", tags={"error"})
    rec.result("mecha/rules", {"domain": "behavior", "scope": "global"})
    rec.result("mecha/validate", {"domain": "behavior", "budget": 3, "dry_run": True})

    prediction = {"metric": "tool_error_rate", "rationale": "The rule stops pushes the person then denies."}

    def stats(errors: int, calls: int = 6) -> dict[str, Any]:
        return {"turns": 5, "tool_calls": calls, "tool_errors": errors, "stop_cause": "completed"}

    rec.result(
        "mecha/judge",
        {
            "class": "prose",
            "prediction": prediction,
            "baseline": {"run-0139": stats(2), "run-0140": stats(1), "run-0141": stats(3)},
            "candidate": {"run-0139": stats(0), "run-0140": stats(1), "run-0141": stats(1)},
            "holdout_in": 4,
        },
    )
    rec.result(
        "mecha/judgeDrawn",
        {
            "class": "architecture",
            "prediction": prediction,
            "selection": [
                {"episode": f"run-01{i}", "baseline": stats(2), "candidate": stats(0, calls=2)} for i in (20, 21, 22)
            ],
            "holdout": [{"episode": "run-0130", "baseline": stats(1), "candidate": stats(0, calls=3)}],
        },
    )
    rec.result("mecha/doctor", {})

    # Another agent's sessions in (the person's home is the capture's), and
    # the rules out into its instructions file.
    home = root.parent / "home"
    shutil.copytree(FIXTURES / "claude-code" / "projects", home / ".claude" / "projects")
    rec.result("mecha/importSessions", {"source": "claude", "dry_run": True})
    rec.result("mecha/trust", {"action": "add", "entries": ["Bash(bd)"]})
    rec.result("mecha/trust", {}, title="mecha/trust (list)")
    # A session whose corrections a program the reader does not know held back,
    # then a `curl`: imported, listed, and vouched for where the person may.
    _held_session(home / "held-sessions" / "-home-dana-src-parser")
    rec.result("mecha/importSessions", {"source": "claude", "dir": str(home / "held-sessions")},
               title="mecha/importSessions (a session to vouch for)")
    rec.wait_notification("mecha/jobFinished", title="mecha/jobFinished (its corrections recorded unasked)")
    held = rec.result("mecha/heldCorrections", {})
    rec.result("mecha/vouch", {"ids": [h["id"] for h in held["held"]], "by": "dana"})
    agents = home / "src" / "AGENTS.md"
    agents.parent.mkdir(parents=True)
    agents.write_text("# Working on this repository\n\nRun `make check` before pushing.\n")
    rec.result("mecha/exportRules", {"target": "agents", "path": str(agents)})
    rec.result("mecha/exportRules", {"target": "agents", "path": str(agents), "check": True},
               title="mecha/exportRules (check)")
    rec.result("mecha/installHooks", {"agent": "claude"})
    rec.result("mecha/hookStatus", {"agent": "claude", "scope": "user"})
    rec.result("mecha/exportRules", {"target": "claude", "check": True}, title="mecha/exportRules (every scope)")
    # A global learned rule shared with a repository's team.
    from mecha.core.store.learning_store import LearningStore

    store = LearningStore.open(root)
    rule_id = next(r.id for d in store.domains() for r in store.learned_rules(d) if r.id and not r.retired_at)
    app = home / "src" / "app"
    app.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(app)], check=True)
    (app / "CLAUDE.md").write_text("# App\n\nRun `make check` before pushing.\n")
    rec.result("mecha/shareRules", {"rules": [rule_id], "project": str(app)})

    # Errors.
    rec.call("mecha/proposal", {"id": "20991231"}, title="NotFound", tags={"error"})
    rec.call("mecha/learn", {"domain": "../etc"}, title="InvalidDomain", tags={"error"})
    rec.call("mecha/locateFollowup", {"messages": [{"role": "system", "content": "hi"}], "text": "x"},
             title="invalid params", tags={"error"})
    rec.call("mecha/frobnicate", {}, title="method not found", tags={"error"})
    rec.cancelled_behind("mecha/doctor", "mecha/doctor", {}, id=900, title="cancelled")
    rec.send_raw(encode_frame(b'{"jsonrpc": "2.0", "id": 7, "method": '), title="invalid JSON")
    rec.send_raw(b"Content-Length: nine\r\n\r\n{}", title="bad frame")
    (root / "rules" / "triage.user.toml").write_text('[[rules]]\ntext = "Archive newsletters\n')
    rec.call("mecha/rulesPromptBlock", {"domain": "triage"}, title="InvalidStore", tags={"error"})

    rec.result("shutdown", None)
    rec.call("mecha/rulesPromptBlock", {}, title="after shutdown", tags={"error"})
    rec.notify("exit")


def _learned_rule_ids(root: Path, domain: str) -> list[str]:
    import tomllib

    data = tomllib.loads((root / "rules" / f"{domain}.learned.toml").read_text())
    return [r["id"] for r in data.get("rules", []) if "retired_at" not in r]


def _first_reflexion_id(root: Path) -> str:
    for line in (root / "reflections.jsonl").read_text().splitlines():
        if line.strip():
            return json.loads(line)["id"]
    raise AssertionError("no reflections were written")


# ─── printing ───────────────────────────────────────────────────────────────


def _placeholders(text: str, cap: Capture) -> str:
    text = text.replace(str(cap.root), "~/.mecha/learning").replace(str(cap.root.parent / "home"), "~")
    # The interpreter the hooks name is this machine's.
    text = text.replace(sys.executable, "/usr/bin/python3")
    return text.replace(cap.model_url, "http://127.0.0.1:8080")


class _Raw:
    """Printed as is, inside otherwise valid JSON (an elision comment)."""

    def __init__(self, text: str):
        self.text = text


def pretty(value: Any, level: int = 0, lead: int = 0, width: int = 100) -> str:
    """JSON laid out for reading: a container that fits on its line within
    `width` stays on one line; anything longer is broken up, two spaces a
    level. `lead` is what precedes the value on its line (a key)."""
    if isinstance(value, _Raw):
        return value.text
    flat = _flat(value)
    if flat is not None and 2 * level + lead + len(flat) <= width:
        return flat
    pad, close = "  " * (level + 1), "  " * level
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            key = json.dumps(k) + ": "
            items.append(pad + key + pretty(v, level + 1, len(key), width))
        return "{\n" + ",\n".join(items) + "\n" + close + "}"
    if isinstance(value, list):
        return "[\n" + ",\n".join(pad + pretty(v, level + 1, 0, width) for v in value) + "\n" + close + "]"
    return json.dumps(value, ensure_ascii=False)


def _flat(value: Any) -> str | None:
    if isinstance(value, _Raw):
        return None
    if isinstance(value, dict):
        parts = [_flat(v) for v in value.values()]
        if any(p is None for p in parts):
            return None
        return "{" + ", ".join(f"{json.dumps(k)}: {p}" for k, p in zip(value, parts)) + "}"
    if isinstance(value, list):
        parts = [_flat(v) for v in value]
        if any(p is None for p in parts):
            return None
        return "[" + ", ".join(parts) + "]"  # type: ignore[arg-type]
    return json.dumps(value, ensure_ascii=False)


def _elide_transcripts(message: dict[str, Any] | None, shown: list[bool]) -> Any:
    """After the first full transcript, `messages` equal to it print as a
    comment pointing back at it."""
    if message is None:
        return None
    params = message.get("params")
    if isinstance(params, dict) and params.get("messages") == MESSAGES:
        if shown[0]:
            return {**message, "params": {**params, "messages": _Raw("[ /* the transcript shown under mecha/extractInterventions */ ]")}}
        shown[0] = True
    return message


def to_markdown(cap: Capture) -> str:
    out: list[str] = []
    shown = [False]
    for ex in cap.exchanges:
        out.append(f"### {ex.title}\n")
        if ex.raw is not None:
            out.append("```\n" + ex.raw.decode("utf-8", "replace") + "\n```\n")
        elif ex.request is not None:
            out.append("```jsonc\n" + pretty(_elide_transcripts(ex.request, shown)) + "\n```\n")
        if ex.reply is not None:
            out.append("```json\n" + pretty(ex.reply) + "\n```\n")
    return _placeholders("\n".join(out), cap)


def schema_problems() -> Any:
    """`(payload, method, "params" | "result")` → what the schema (as the
    code generates it) says is wrong with it."""
    from jsonschema import Draft202012Validator

    from mecha.protocol.initialize import LIFECYCLE
    from mecha.protocol.schema import schema

    doc = schema()

    def problems(payload: Any, method: str, part: str) -> list[str]:
        section = "lifecycle" if method in LIFECYCLE else "methods"
        if method not in doc[section]:
            return []
        pointer = "#/" + section + "/" + method.replace("~", "~0").replace("/", "~1") + "/" + part
        v = Draft202012Validator({**doc, "$ref": pointer})
        return [f"{list(e.absolute_path)}: {e.message}" for e in v.iter_errors(payload)]

    return problems


def fix_readme(markdown: str) -> list[str]:
    """Mend protocol/README.md's examples from `markdown`, a fresh recording
    (`readme_contract.refresh`); what changed, a line each."""
    from mecha.protocol import methods as m
    from tests.protocol.readme_contract import README, refresh

    text, report = refresh(README.read_text(encoding="utf-8"), markdown, schema_problems(), [*m.METHODS, "initialize"])
    README.write_text(text, encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    tmp = Path(tempfile.mkdtemp(prefix="mecha-wire-examples-"))
    try:
        markdown = to_markdown(capture(tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if "--fix-readme" in args:
        report = fix_readme(markdown)
        sys.stdout.write("".join(line + "\n" for line in report) or "protocol/README.md: every example meets the schema\n")
        return 0
    sys.stdout.write(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
