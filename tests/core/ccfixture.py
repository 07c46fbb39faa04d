"""Builders for Claude Code and Codex CLI session files, in this project's own
words: each test writes the few lines its quirk needs."""

from __future__ import annotations

import json
from typing import Any

SESSION = "a1b2c3d4-0000-4000-8000-000000000001"


class Claude:
    """Lines of one Claude Code session, as the agent writes them."""

    def __init__(self, session: str = SESSION, cwd: str = "/home/pat/proj"):
        self.lines: list[dict[str, Any]] = []
        self.session, self.cwd = session, cwd
        self.n = 0

    def _base(self, kind: str, **kw: Any) -> dict[str, Any]:
        self.n += 1
        line = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                "sessionId": self.session, "version": "2.0.30", "type": kind, "uuid": f"u{self.n}",
                "timestamp": f"2026-11-01T10:00:{self.n:02d}.000Z"}
        line.update(kw)
        self.lines.append(line)
        return line

    def user(self, content: Any, **kw: Any) -> Claude:
        self._base("user", message={"role": "user", "content": content}, **kw)
        return self

    def assistant(self, *blocks: dict[str, Any], mid: str | None = None, split: bool = False, **kw: Any) -> Claude:
        mid = mid or f"msg_{self.n + 1}"
        parts = [[b] for b in blocks] if split else [list(blocks)]
        for part in parts:
            self._base("assistant", message={"id": mid, "type": "message", "role": "assistant", "model": "claude-x",
                                             "content": part}, **kw)
        return self

    def result(self, tool_id: str, content: Any, is_error: bool = False, tur: Any = None, **kw: Any) -> Claude:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
        if is_error:
            block["is_error"] = True
        extra = {"toolUseResult": tur} if tur is not None else {}
        return self.user([block], **extra, **kw)

    def raw(self, line: dict[str, Any]) -> Claude:
        self.lines.append(line)
        return self

    def bytes(self) -> bytes:
        return "".join(json.dumps(line) + "\n" for line in self.lines).encode()


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def use(id: str, name: str, **input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


REJECTION = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
    "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."
)


class Codex:
    """Lines of one Codex CLI rollout."""

    def __init__(self, session: str = "0199aaaa-bbbb-7ccc-8ddd-000000000001", source: Any = "cli"):
        self.lines: list[dict[str, Any]] = []
        self.add("session_meta", id=session, timestamp="2026-11-01T10:00:00Z", cwd="/home/pat/proj",
                 originator="codex_cli_rs", cli_version="0.50.0", source=source)

    def add(self, kind: str, **payload: Any) -> Codex:
        self.lines.append({"timestamp": "2026-11-01T10:00:01Z", "type": kind, "payload": payload})
        return self

    def user(self, words: str, event: bool = True) -> Codex:
        self.add("response_item", type="message", role="user", content=[{"type": "input_text", "text": words}])
        if event:
            self.add("event_msg", type="user_message", message=words, images=[])
        return self

    def say(self, words: str) -> Codex:
        self.add("response_item", type="message", role="assistant", content=[{"type": "output_text", "text": words}])
        return self.add("event_msg", type="agent_message", message=words)

    def call(self, call_id: str, name: str, **args: Any) -> Codex:
        return self.add("response_item", type="function_call", name=name, arguments=json.dumps(args), call_id=call_id)

    def output(self, call_id: str, output: Any) -> Codex:
        return self.add("response_item", type="function_call_output", call_id=call_id, output=output)

    def bytes(self) -> bytes:
        return "".join(json.dumps(line) + "\n" for line in self.lines).encode()
