"""A scripted model behind the agents' real command lines: HTTP on 127.0.0.1.

`claude -p` and `codex exec` are tested as they are installed — the real
programs, their real flags, their real output — and only the model they
talk to is fake. Each speaks its own vendor's streaming API, so this server
answers both, as server-sent events:

- Claude Code (`ANTHROPIC_BASE_URL`): `POST /v1/messages?beta=true`, the
  Messages API streamed (`message_start` … `message_stop`). A reply held to
  `--json-schema` is the `StructuredOutput` tool call the CLI offers.
- Codex (a model provider's `base_url`): `POST /v1/responses`, the
  Responses API streamed (`response.created` … `response.completed`). Its
  `--output-schema` travels as `text.format`, and the reply is one
  assistant message whose text is the JSON.

Each model request takes the next scripted action (`answer`, `text`,
`status`, `stall`, `garbage`); with the script empty the `responder` answers
by content — by default `model_server.lessons_responder`, the same lessons
and rule sets the HTTP providers' end-to-end tests get, so a reflect pass
and a learn pass run through the real CLIs to a proposal. Every request is
recorded with the prompts it carried (`system`, `user`) as the responder
saw them.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.model_server import MAX_STALL_S, Reply, lessons_responder


@dataclass(frozen=True)
class Answer:
    """The reply held to the request's schema: this object."""

    data: dict[str, Any]


@dataclass(frozen=True)
class Text:
    """A plain text reply (what a model that ignored the schema writes)."""

    text: str


@dataclass(frozen=True)
class Call:
    """A call of one of the agent's tools (Codex's `exec_command`, …) with
    these arguments: a Responses `function_call` item."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Status:
    code: int
    body: str = '{"type":"error","error":{"type":"invalid_request_error","message":"scripted failure"}}'


@dataclass(frozen=True)
class Stall:
    seconds: float


@dataclass(frozen=True)
class Garbage:
    data: bytes = b"event: nonsense\ndata: {{{not json\n\n"


Action = Answer | Text | Call | Status | Stall | Garbage
#: `(system, user, dialect) -> action`; dialect is "anthropic" or "responses".
Responder = Callable[[str, str, str], Action]


def lessons(system: str, user: str, dialect: str) -> Action:
    """The lessons and rule sets `model_server.lessons_responder` writes,
    as a schema-held answer."""
    got = lessons_responder({"system": system, "messages": [{"role": "user", "content": user}]}, "anthropic")
    text = got.text if isinstance(got, Reply) and got.text is not None else ""
    try:
        data = json.loads(text)
    except ValueError:
        return Text(text)
    return Answer(data) if isinstance(data, dict) else Text(text)


@dataclass
class Seen:
    path: str
    dialect: str
    system: str
    user: str
    body: Any
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
    )


def anthropic_prompts(body: dict[str, Any]) -> tuple[str, str, bool]:
    """`(system, user, answered)`: the system blocks joined, the person's
    first message, and whether the request carries a tool result already
    (the CLI reporting back the structured answer it took)."""
    system = _texts(body.get("system"))
    user = ""
    answered = False
    for message in body.get("messages") or []:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            answered = True
        elif not user:
            user = _texts(content)
    return system, user, answered


def responses_prompts(body: dict[str, Any]) -> tuple[str, str]:
    """`(system, user)`: every developer message joined, and the last user
    message (Codex sends its environment context as an earlier one)."""
    system_parts: list[str] = [body["instructions"]] if isinstance(body.get("instructions"), str) else []
    user = ""
    for item in body.get("input") or []:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        text = _texts(item.get("content"))
        if item.get("role") in ("developer", "system"):
            system_parts.append(text)
        elif item.get("role") == "user":
            user = text
    return "\n".join(system_parts), user


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_stream(action: Answer | Text, model: str, tool: str | None) -> bytes:
    """A streamed Messages reply: a forced structured answer as a call of
    the offered `tool`, anything else as text."""
    start = {"id": "msg_scripted", "type": "message", "role": "assistant", "model": model, "content": [],
             "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
    out = [_sse("message_start", {"type": "message_start", "message": start})]
    if isinstance(action, Answer) and tool is not None:
        block = {"type": "tool_use", "id": "toolu_scripted", "name": tool, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(action.data)}
        stop = "tool_use"
    else:
        text = json.dumps(action.data) if isinstance(action, Answer) else action.text
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": text}
        stop = "end_turn"
    out.append(_sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}))
    out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(_sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": 12}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def responses_stream(action: Answer | Text | Call, model: str) -> bytes:
    """A streamed Responses reply: one assistant message with the text, or
    one function call."""
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 12,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 22}
    if isinstance(action, Call):
        item: dict[str, Any] = {"type": "function_call", "id": "fc_scripted", "call_id": "call_scripted",
                                "name": action.name, "arguments": json.dumps(action.arguments), "status": "completed"}
        body = [
            _sse("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                "item": {**item, "arguments": "", "status": "in_progress"}}),
            _sse("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta",
                                                            "item_id": "fc_scripted", "output_index": 0,
                                                            "delta": item["arguments"]}),
        ]
    else:
        text = json.dumps(action.data) if isinstance(action, Answer) else action.text
        item = {"type": "message", "role": "assistant", "id": "msg_scripted", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
        body = [
            _sse("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                "item": {**item, "status": "in_progress", "content": []}}),
            _sse("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_scripted",
                                                "output_index": 0, "content_index": 0, "delta": text}),
        ]
    return b"".join([
        _sse("response.created", {"type": "response.created", "response": {"id": "resp_scripted", "model": model}}),
        *body,
        _sse("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        _sse("response.completed", {"type": "response.completed",
                                    "response": {"id": "resp_scripted", "model": model, "usage": usage}}),
    ])


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"
    timeout = 15

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
        pass

    def do_GET(self) -> None:  # noqa: N802 - stdlib's name
        body = json.dumps({"object": "list", "data": [{"id": "scripted-model", "object": "model"}]}).encode()
        self._send(200, body, "application/json")

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib's name
        self._send(200, b"", "text/plain")

    def do_POST(self) -> None:  # noqa: N802 - stdlib's name
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send(400, b'{"error":"not json"}', "application/json")
            return
        path = self.path.split("?", 1)[0]
        model = body.get("model") if isinstance(body.get("model"), str) else "scripted-model"
        if path.endswith("/messages"):
            system, user, answered = anthropic_prompts(body)
            tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
            tool = "StructuredOutput" if "StructuredOutput" in tools else None
            seen = self.server.owner.record(Seen(self.path, "anthropic", system, user, body, dict(self.headers)))
            if answered:  # the CLI took the structured answer and reports back: end the turn
                self._stream(anthropic_stream(Text("Done."), model, None))
                return
            action = self.server.owner.next_action(seen)
            if isinstance(action, (Answer, Text)):
                self._stream(anthropic_stream(action, model, tool))
            else:
                self._fault(action)
        elif path.endswith("/responses"):
            system, user = responses_prompts(body)
            seen = self.server.owner.record(Seen(self.path, "responses", system, user, body, dict(self.headers)))
            action = self.server.owner.next_action(seen)
            if isinstance(action, (Answer, Text, Call)):
                self._stream(responses_stream(action, model))
            else:
                self._fault(action)
        else:
            self._send(404, b'{"error":"no such endpoint"}', "application/json")

    def _fault(self, action: Call | Status | Stall | Garbage) -> None:
        if isinstance(action, Call):
            self._send(500, b'{"error":"a scripted call is a Responses reply only"}', "application/json")
        elif isinstance(action, Status):
            self._send(action.code, action.body.encode(), "application/json")
        elif isinstance(action, Stall):
            self.server.owner.stopping.wait(min(action.seconds, MAX_STALL_S))
        else:
            self._stream(action.data)

    def _stream(self, data: bytes) -> None:
        self._send(200, data, "text/event-stream")

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        try:
            self.send_response(code)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: AgentModelServer


class AgentModelServer:
    """Start with `with AgentModelServer() as server:`; `server.url` is the
    base URL (no `/v1`)."""

    def __init__(self, responder: Responder = lessons) -> None:
        self.responder = responder
        self._script: list[Action] = []
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> AgentModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def script(self, *actions: Action) -> None:
        """Queue actions; each model request takes the next one."""
        with self.lock:
            self._script.extend(actions)

    def record(self, seen: Seen) -> Seen:
        with self.lock:
            self.seen.append(seen)
        return seen

    def next_action(self, seen: Seen) -> Action:
        with self.lock:
            if self._script:
                return self._script.pop(0)
        return self.responder(seen.system, seen.user, seen.dialect)

    def model_calls(self) -> list[Seen]:
        """The requests that asked the model something (not a CLI's report
        that it took the answer)."""
        with self.lock:
            return [s for s in self.seen if s.user]
