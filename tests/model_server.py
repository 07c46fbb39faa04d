"""A real model server for tests: HTTP on 127.0.0.1, scripted, recording.

The providers' whole job is HTTP behaviour — headers, timeouts, retries,
what a garbled body does — and an in-process fake of httpx would test the
fake. This is a real `ThreadingHTTPServer` on an ephemeral port that speaks
both dialects (`/v1/chat/completions`, `/v1/messages`, `/v1/models`).

Each completion request consumes the next *action* of the script, in order:
`reply`, `stall`, `status`, `garbage`, `truncated_json`, `refusal`,
`echo_auth`, `huge`. With the script empty it asks the `responder`, a callable
`(request_json, dialect) -> action` that can answer by content (end-to-end
tests answer reflector and learner prompts this way); with neither, it
answers 500 "script exhausted", which no test mistakes for a reply. Every
request is recorded (method, path, headers, parsed JSON body, monotonic
arrival time), so a test asserts both what was sent and when.

Bounded on purpose: it binds 127.0.0.1 only; a stall waits at most
`MAX_STALL_S` and is cut short by `stop()`; each connection serves one request
(HTTP/1.0), so a client that keeps a connection open cannot hold shutdown.

From another process:

    python -m tests.model_server --port 0 --responder lessons [--record FILE]

prints `listening on http://127.0.0.1:<port>` as its first stdout line, serves
until SIGTERM or SIGINT, and (with `--record`) appends one JSON line per
request with the credentials headers redacted.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

Dialect = Literal["openai", "anthropic"]

#: The longest any stall may last, whatever a test asks for, so a mistake in a
#: test costs seconds, not a hung suite.
MAX_STALL_S = 10.0

#: Headers that carry credentials; redacted in `--record` files.
SECRET_HEADERS = ("authorization", "x-api-key")

HOST = "127.0.0.1"


# ─── Actions ────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Reply:
    text: str | None
    stop: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class Stall:
    seconds: float
    #: What to send once the stall is over; `None` closes the connection unanswered.
    then: Action | None = None


@dataclass(frozen=True)
class Status:
    code: int
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Garbage:
    data: bytes
    #: `True`: the bytes go straight onto the socket, no HTTP at all.
    raw: bool = False


@dataclass(frozen=True)
class TruncatedJson:
    pass


@dataclass(frozen=True)
class Refusal:
    message: str = "I can't help with that."
    category: str | None = None


@dataclass(frozen=True)
class EchoAuth:
    code: int = 401


@dataclass(frozen=True)
class Huge:
    #: The reply text is `head`, then `fill` repeated `count` times, then `tail`.
    head: str
    fill: str
    count: int
    tail: str
    #: `False`: no `Content-Length`; the body ends when the server closes
    #: the connection, so a client learns its size only by reading it.
    sized: bool = True


Action = Reply | Stall | Status | Garbage | TruncatedJson | Refusal | EchoAuth | Huge
Responder = Callable[[Any, Dialect], "Action"]


def reply(text: str | None, stop: str | None = None, *, model: str | None = None) -> Reply:
    """A completion. `stop` in either dialect's spelling ("stop"/"end_turn",
    "length"/"max_tokens", …) is translated for the dialect asked; `None` is
    a normal end of turn. `text=None` is OpenAI's `content: null`."""
    return Reply(text, stop, model)


def stall(seconds: float, then: Action | None = None) -> Stall:
    """Say nothing for `seconds` (capped at `MAX_STALL_S`), then send `then`
    or hang up."""
    return Stall(min(seconds, MAX_STALL_S), then)


def status(code: int, *, retry_after: float | str | None = None, body: str | bytes | None = None) -> Status:
    """An error status with a small JSON error body (or `body`), and a
    `Retry-After` header when `retry_after` is given (a number or an HTTP-date)."""
    headers: tuple[tuple[str, str], ...] = ()
    if retry_after is not None:
        headers = (("Retry-After", str(retry_after)),)
    if body is None:
        body = json.dumps({"error": {"type": "scripted", "message": f"scripted status {code}"}})
    return Status(code, body.encode() if isinstance(body, str) else body, headers)


def garbage(data: bytes = b"\x00\xffnot json at all{{", *, raw: bool = False) -> Garbage:
    """A 200 whose body is `data` (declared as JSON), or with `raw` the bytes
    alone on the socket in place of any HTTP response."""
    return Garbage(data, raw)


def truncated_json() -> TruncatedJson:
    """A 200 whose body is a well-formed reply cut off halfway."""
    return TruncatedJson()


def huge(head: str, fill: str, count: int, tail: str = "", *, sized: bool = True) -> Huge:
    """A well-formed completion whose text is `head + fill * count + tail`,
    streamed in chunks with its `Content-Length` declared up front (with
    `sized=False`, none: the body runs to the connection's close): a reply
    of hundreds of megabytes without the server holding it in memory. The
    server stops writing when the client hangs up; `ModelServer.sent` says
    how far it got."""
    return Huge(head, fill, count, tail, sized)


def refusal(message: str = "I can't help with that.", *, category: str | None = None) -> Refusal:
    """The dialect's refusal: OpenAI's `message.refusal`, Anthropic's
    `stop_reason: "refusal"`."""
    return Refusal(message, category)


def echo_auth(code: int = 401) -> EchoAuth:
    """An error whose body quotes the credentials the request carried, as
    careless servers do; for proving the key never leaks through a message."""
    return EchoAuth(code)


# ─── Records ────────────────────────────────────────────────────────────────


@dataclass
class RecordedRequest:
    method: str
    path: str
    #: Lower-cased names.
    headers: dict[str, str]
    #: The parsed JSON body; `None` for no body or one that is not JSON.
    body: Any
    raw: bytes
    #: `time.monotonic()` when the request had been read.
    at: float
    dialect: Dialect | None = None

    def to_json(self, *, redact: bool = True) -> dict[str, Any]:
        headers = dict(self.headers)
        if redact:
            for name in SECRET_HEADERS:
                if name in headers:
                    headers[name] = "[redacted]"
        return {"method": self.method, "path": self.path, "headers": headers, "body": self.body, "at": self.at}


# ─── Replies in each dialect ────────────────────────────────────────────────

_TO_OPENAI = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "refusal": "content_filter"}
_TO_ANTHROPIC = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal"}


def _completion_json(dialect: Dialect, action: Reply | Refusal, request: Any) -> dict[str, Any]:
    asked = request.get("model") if isinstance(request, dict) else None
    if isinstance(action, Reply):
        model = action.model or asked or "scripted-model"
        if dialect == "openai":
            finish = _TO_OPENAI.get(action.stop or "stop", action.stop or "stop")
            message = {"role": "assistant", "content": action.text}
            return _openai(model, message, finish)
        stop = _TO_ANTHROPIC.get(action.stop or "end_turn", action.stop or "end_turn")
        blocks = [] if action.text is None else [{"type": "text", "text": action.text}]
        forced = _forced_tool(request)
        if forced is not None and action.text is not None and stop == "end_turn":
            # A forced tool call is answered as the API does: the JSON object
            # the reply holds becomes the tool's input.
            try:
                found = json.loads(action.text[action.text.index("{") : action.text.rindex("}") + 1])
            except ValueError:
                found = None
            if isinstance(found, dict):
                blocks = [{"type": "tool_use", "id": "toolu_scripted", "name": forced, "input": found}]
                stop = "tool_use"
        return _anthropic(model, blocks, stop)
    model = asked or "scripted-model"
    if dialect == "openai":
        message = {"role": "assistant", "content": None, "refusal": action.message}
        return _openai(model, message, "stop")
    body = _anthropic(model, [], "refusal")
    if action.category:
        body["stop_details"] = {"type": "refusal", "category": action.category}
    return body


def _forced_tool(request: Any) -> str | None:
    """The tool an Anthropic request forces with `tool_choice`, if any."""
    choice = request.get("tool_choice") if isinstance(request, dict) else None
    if isinstance(choice, dict) and choice.get("type") == "tool" and isinstance(choice.get("name"), str):
        return choice["name"]
    return None


def structured_mode(request: Any, dialect: Dialect) -> str:
    """How a request asked for its reply to be constrained: the
    `response_format` type (`json_schema`, `json_object`), `tool` for a forced
    Anthropic tool, `off` for none."""
    if not isinstance(request, dict):
        return "off"
    if dialect == "anthropic":
        return "tool" if _forced_tool(request) else "off"
    fmt = request.get("response_format")
    if isinstance(fmt, dict) and isinstance(fmt.get("type"), str):
        return fmt["type"]
    return "off"


def refusal_body(mode: str) -> dict[str, Any]:
    """The error body a server that does not take `mode` answers with, as
    real ones word it: llama-cpp-python's validation error for `json_schema`
    (sent with HTTP 500), OpenAI's for a `response_format` a model does not
    take, and a tool-less Messages server's for `tools`."""
    if mode == "json_schema":
        message = ("1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be "
                   "'text' or 'json_object' [type=literal_error, input_value='json_schema', input_type=str]")
        return {"error": {"message": message, "type": "internal_server_error", "param": None, "code": None}}
    if mode == "tool":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": "tools: tool use is not supported"}}
    return {"error": {"message": f"Invalid parameter: 'response_format' of type '{mode}' is not supported with this model.",
                      "type": "invalid_request_error", "param": "response_format", "code": None}}


def _openai(model: str, message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _anthropic(model: str, blocks: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


# ─── The server ─────────────────────────────────────────────────────────────


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"
    #: A socket read that waits longer than this gives up (a client that
    #: connects and says nothing must not hold a thread for ever).
    timeout = 15

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
        pass  # quiet: the recorded requests are the log

    def do_GET(self) -> None:  # noqa: N802 - stdlib's name
        self._record(b"")
        if self.path.rstrip("/") == "/v1/models":
            self._send_json(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.server.owner.models]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib's name
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        dialect: Dialect | None = {
            "/v1/chat/completions": "openai",
            "/v1/messages": "anthropic",
        }.get(self.path.split("?")[0].rstrip("/"))
        record = self._record(raw, dialect)
        if dialect is None:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        owner = self.server.owner
        mode = structured_mode(record.body, dialect)
        if mode in owner.rejects:
            # As a server that takes no such reply mode answers: an error,
            # every time, and no script step consumed.
            if owner.reject_body is not None:
                self._send(owner.reject_status, owner.reject_body, "application/json")
            else:
                self._send_json(owner.reject_status, refusal_body(mode))
            return
        if owner.latency_s and owner._closing.wait(owner.latency_s):
            return
        action = owner._next_action(record.body, dialect)
        self._perform(action, record.body, dialect, record.headers)

    def _record(self, raw: bytes, dialect: Dialect | None = None) -> RecordedRequest:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
            at=time.monotonic(),
            dialect=dialect,
        )
        self.server.owner._add_record(record)
        return record

    def _perform(self, action: Action | None, request: Any, dialect: Dialect, headers: Mapping[str, str]) -> None:
        if action is None:
            self._send_json(500, {"error": {"message": "model server: script exhausted and no responder"}})
        elif isinstance(action, (Reply, Refusal)):
            self._send_json(200, _completion_json(dialect, action, request))
        elif isinstance(action, Stall):
            if self.server.owner._closing.wait(action.seconds):
                return  # shutting down: hang up
            if action.then is not None:
                self._perform(action.then, request, dialect, headers)
        elif isinstance(action, Status):
            self._send(action.code, action.body, "application/json", action.headers)
        elif isinstance(action, Garbage):
            if action.raw:
                self.wfile.write(action.data)
                self.close_connection = True
            else:
                self._send(200, action.data, "application/json")
        elif isinstance(action, TruncatedJson):
            full = json.dumps(_completion_json(dialect, Reply("this reply is cut off"), request)).encode()
            self._send(200, full[: len(full) // 2], "application/json")
        elif isinstance(action, Huge):
            self._send_huge(action, request, dialect)
        elif isinstance(action, EchoAuth):
            seen = headers.get("authorization") or headers.get("x-api-key") or "(none)"
            body = {"error": {"type": "authentication_error", "message": f"invalid credentials: {seen}"}}
            self._send_json(action.code, body)
        else:  # pragma: no cover - a test passed something that is not an action
            self._send_json(500, {"error": {"message": f"model server: not an action: {action!r}"}})

    def _send_huge(self, action: Huge, request: Any, dialect: Dialect) -> None:
        # The envelope around a one-character placeholder, split at it: the
        # text's JSON-escaped bytes stream in between.
        marker = "\u0000"
        envelope = json.dumps(_completion_json(dialect, Reply(marker), request)).encode()
        before, after = envelope.split(json.dumps(marker)[1:-1].encode(), 1)
        head = json.dumps(action.head)[1:-1].encode()
        fill = json.dumps(action.fill)[1:-1].encode()
        tail = json.dumps(action.tail)[1:-1].encode()
        repeat = max(1, (1 << 20) // max(1, len(fill)))
        chunk = fill * repeat
        length = len(before) + len(head) + len(fill) * action.count + len(tail) + len(after)
        owner = self.server.owner
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if action.sized:
                self.send_header("Content-Length", str(length))
            self.end_headers()
            self.wfile.write(before + head)
            owner._sent_add(len(before) + len(head))
            left = action.count
            while left > 0:
                n = min(left, repeat)
                self.wfile.write(chunk if n == repeat else fill * n)
                owner._sent_add(len(fill) * n)
                left -= n
            self.wfile.write(tail + after)
            owner._sent_add(len(tail) + len(after))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: what it was meant to do

    def _send_json(self, code: int, body: Any) -> None:
        self._send(code, json.dumps(body).encode(), "application/json")

    def _send(self, code: int, body: bytes, content_type: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to tell it


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ModelServer


class ModelServer:
    """The scripted server. Use as a context manager, or `start()`/`stop()`.

        with ModelServer() as server:
            server.script(status(429, retry_after=0.2), reply("hi"))
            cfg = server.config("openai")
            ...
            assert len(server.requests) == 2
    """

    def __init__(
        self,
        *,
        port: int = 0,
        responder: Responder | None = None,
        models: tuple[str, ...] = ("scripted-model",),
        rejects: frozenset[str] = frozenset(),
        reject_status: int = 500,
        reject_body: bytes | None = None,
        latency_s: float = 0.0,
    ):
        self._port = port
        self.responder = responder
        self.models = models
        #: Structured modes (`structured_mode`) answered with `reject_status`.
        self.rejects = rejects
        self.reject_status = reject_status
        #: What a rejection says; `None`: the words real servers use
        #: (`refusal_body`), which name the refused field.
        self.reject_body = reject_body
        #: Every completion waits this long first, like a model computing.
        self.latency_s = latency_s
        self._script: list[Action] = []
        self._records: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._on_record: Callable[[RecordedRequest], None] | None = None
        self._sent = 0

    # lifecycle

    def start(self) -> ModelServer:
        server = _Server((HOST, self._port), _Handler)
        server.owner = self
        self._server = server
        self._closing.clear()
        # A short poll keeps `stop()` (which waits one poll) out of every test's time.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="model-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._closing.set()  # releases every stalled handler
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "the model server is not running"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """The base URL, without `/v1`."""
        return f"http://{HOST}:{self.port}"

    # scripting

    def script(self, *actions: Action) -> None:
        """Append actions; each completion request consumes the next."""
        with self._lock:
            self._script.extend(actions)

    @property
    def pending(self) -> int:
        """Actions not yet consumed."""
        with self._lock:
            return len(self._script)

    def clear(self) -> None:
        """Forget recorded requests and any unconsumed actions."""
        with self._lock:
            self._script.clear()
            self._records.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._records)

    def completions(self) -> list[RecordedRequest]:
        """The recorded completion requests, either dialect."""
        return [r for r in self.requests if r.dialect is not None]

    def config(self, api: Dialect = "openai", **overrides: Any) -> Any:
        """A `ModelConfig` pointing here, tuned for tests: sub-second timeout,
        millisecond backoff. Override any field by name."""
        from mecha.core.providers import ModelConfig

        fields: dict[str, Any] = {
            "api": api,
            "base_url": self.url,
            "model": "scripted-model",
            "api_key_env": None,
            "timeout_s": 2.0,
            "max_retries": 2,
            "max_backoff_s": 0.5,
            "backoff_base_s": 0.01,
            "source": "test",
        }
        fields.update(overrides)
        return ModelConfig(**fields)

    # called from handler threads

    def _next_action(self, request: Any, dialect: Dialect) -> Action | None:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        if self.responder is not None:
            return self.responder(request, dialect)
        return None

    @property
    def sent(self) -> int:
        """Bytes of `huge` bodies written to clients so far."""
        with self._lock:
            return self._sent

    def _sent_add(self, n: int) -> None:
        with self._lock:
            self._sent += n

    def _add_record(self, record: RecordedRequest) -> None:
        with self._lock:
            self._records.append(record)
        if self._on_record is not None:
            self._on_record(record)


# ─── Built-in responders ────────────────────────────────────────────────────


def request_prompts(request: Any, dialect: Dialect) -> tuple[str, str]:
    """`(system, user)` from a request body in either dialect."""
    if not isinstance(request, dict):
        return "", ""
    system = request.get("system") if dialect == "anthropic" else ""
    system = system if isinstance(system, str) else ""
    user_parts: list[str] = []
    for message in request.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        text = content if isinstance(content, str) else "".join(
            b.get("text", "") for b in content or [] if isinstance(b, dict)
        )
        if message.get("role") == "system":
            system = system or text
        elif message.get("role") == "user":
            user_parts.append(text)
    return system, "\n".join(user_parts)


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _intervention_text(user: str) -> str:
    for tag in (r"<intervention[^>]*>", r"<what-the-person-sent>"):
        m = re.search(tag + r"\s*(.*?)\s*</", user, re.S)
        if m and m.group(1).strip():
            return m.group(1)
    return user


def lesson_for(intervention: str, *, edit: bool) -> str:
    """The lesson the `lessons` responder draws: the person's words, turned
    into a standing instruction. Deterministic, so tests can predict it."""
    said = _one_line(intervention).rstrip(".")
    if edit:
        return f"Write drafts the way this person sends them: {said}."
    return f"When the person says something like \"{said}\", do that instead of carrying on with the plan."


#: Words too common to tie a correction to a rule (and the `lessons`
#: responder's own template words, which every learned rule carries).
_COMMON = frozenset(
    "again when the person says something like that instead carrying with plan this your you have from "
    "into then than what there here they them were will would should could about after before just".split()
)


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in _COMMON}


def repeated_handles(intervention: str, user: str) -> list[str]:
    """The live rules a careful reflector would say this correction repeats:
    the person says "again", and the correction shares two content words
    with the rule. Deterministic, so tests can predict it; a correction
    about something else names none."""
    m = re.search(r"<live-rules>\n(.*?)\n</live-rules>", user, re.S)
    if m is None or "again" not in intervention.lower():
        return []
    said = _content_words(intervention)
    out = []
    for line in m.group(1).splitlines():
        handle, _, text = line.partition(": ")
        if len(said & _content_words(text)) >= 2:
            out.append(handle.strip())
    return out


def _lessons_from_learner_prompt(user: str) -> list[str]:
    """The rule texts `_learner_rules` would write."""
    return [r["rule"] for r in _learner_rules(user)]


def _learner_rules(user: str) -> list[dict[str, Any]]:
    """Rules a careful learner would write from the prompt: the current
    learned rules word for word, then each reflection's lesson citing that
    reflection (`based_on`), de-duplicated, at most 15."""
    current: list[str] = []
    lessons: list[tuple[str, str]] = []
    section = ""
    for line in user.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            section = stripped.lower()
            continue
        if not stripped.startswith("- "):
            continue
        item = stripped[2:]
        if "current" in section and "learned" in section:
            item = re.sub(r"^L\d+:\s*", "", item)
            current.append(re.sub(r"\s*\((confidence|from)[^)]*\)\s*$", "", item))
        elif "reflection" in section:
            handle = re.match(r"(R\d+)\b", item)
            m = re.search(r"lesson:\s*(.+)$", item)
            lessons.append((m.group(1) if m else item, handle.group(1) if handle else "R1"))
    if not lessons:
        lessons = [(text, "R1") for text in re.findall(r"lesson:\s*(.+)", user)]
    rules: list[dict[str, Any]] = []
    seen: set[str] = set()
    # A rule the prompt says was not followed is rewritten from the new
    # corrections it cites, replacing it; those lessons make no rule of their own.
    rewrites = dict(re.findall(r"^- (L\d+): corrected again in ([R\d, ]+)\.", user, re.M))
    by_handle = {h: text for text, h in lessons}
    used: set[str] = set()
    for n, text in enumerate(current):
        handle = f"L{n + 1}"
        if handle in rewrites:
            cites = [c.strip() for c in rewrites[handle].split(",") if c.strip()]
            used.update(cites)
            new = f"Before anything else, check this rule and follow it: {by_handle.get(cites[0], text)}"
            rules.append({"rule": new, "based_on": cites, "replaces": [handle]})
            seen.add(text)
    for text, cites in [*((c, None) for c in current), *((t, h) for t, h in lessons if h not in used)]:
        text = text.strip()
        if not text or text in seen or text == "(none)":
            continue
        seen.add(text)
        rules.append({"rule": text, "based_on": [cites] if cites else [], "replaces": []})
    return rules[:15]


def lessons_responder(request: Any, dialect: Dialect) -> Action:
    """Answers a reflector prompt with one lesson drawn from the intervention
    text, and a learner prompt with a rule per lesson in its reflections.
    Anything else gets a plain reply that parses as neither."""
    system, user = request_prompts(request, dialect)
    if '"reflexion"' in system:
        edit = "<what-the-person-sent>" in user
        answer = {
            "skip": False,
            "reflexion": lesson_for(_intervention_text(user), edit=edit),
            # In both frames' lists, so the reply meets either contract.
            "error_type": "other",
            "confidence": 0.8,
            "repeats": repeated_handles(_intervention_text(user), user),
        }
        return reply(json.dumps(answer))
    if '"rules"' in system or "rule set" in system.lower():
        rules = [
            {**rule, "confidence": 0.7, "based_on_count": max(1, user.count(rule["rule"]))}
            for rule in _learner_rules(user)
        ]
        return reply(json.dumps({"rules": rules, "dropped": []}))
    return reply("(the lessons responder has no answer for this prompt)")


def echo_responder(request: Any, dialect: Dialect) -> Action:
    """Replies with the user message it was sent."""
    return reply(request_prompts(request, dialect)[1])


RESPONDERS: dict[str, Responder] = {"lessons": lessons_responder, "echo": echo_responder}


# ─── As a process ───────────────────────────────────────────────────────────


@contextmanager
def _recording_to(server: ModelServer, path: Path | None) -> Iterator[None]:
    if path is None:
        yield
        return
    with path.open("a", encoding="utf-8") as out:
        lock = threading.Lock()

        def write(record: RecordedRequest) -> None:
            with lock:
                out.write(json.dumps(record.to_json()) + "\n")
                out.flush()

        server._on_record = write
        try:
            yield
        finally:
            server._on_record = None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.model_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on the first line)")
    parser.add_argument("--responder", choices=sorted(RESPONDERS), default="lessons")
    parser.add_argument("--record", type=Path, help="append one JSON line per request here")
    parser.add_argument("--reject", action="append", default=[], metavar="MODE",
                        help="answer requests constrained this way (json_schema, json_object, tool) with HTTP 500")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds every completion waits first")
    args = parser.parse_args(argv)

    stopped = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopped.set())
    server_args = {"rejects": frozenset(args.reject), "latency_s": args.latency}
    with ModelServer(port=args.port, responder=RESPONDERS[args.responder], **server_args) as server:
        with _recording_to(server, args.record):
            print(f"listening on {server.url}", flush=True)
            while not stopped.wait(0.2):
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
