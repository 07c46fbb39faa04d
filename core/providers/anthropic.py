"""The Anthropic Messages dialect: `POST /v1/messages`.

The system frame is a top-level field rather than a message, the key travels
in `x-api-key`, and the API version is pinned in a header so a change on the
server side cannot silently change the reply shape under us. The text of a
reply is every `text` block concatenated; other blocks (thinking, tool use)
are not the answer and are skipped. A reply without a `content` list is a
failure that says so, never an empty answer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from mecha.core.errors import ModelFailure
from mecha.core.providers._http import api_key, api_url, post_json
from mecha.core.providers.base import CompletionRequest, CompletionResponse, StopReason
from mecha.core.providers.config import ModelConfig
from mecha.core.providers.structured import Mode, ModeMemory, anthropic_tool_fields, complete_structured

#: The Messages API version this reader was written against.
ANTHROPIC_VERSION = "2023-06-01"

#: `stop_reason` → our stop reason; anything unlisted (`tool_use`,
#: `pause_turn`, a future value) is `OTHER`.
STOP_REASONS: dict[str, StopReason] = {
    "end_turn": StopReason.END_TURN,
    "stop_sequence": StopReason.END_TURN,
    "max_tokens": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
}


def anthropic_headers(key: str | None) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "anthropic-version": ANTHROPIC_VERSION,
    }
    if key:
        headers["x-api-key"] = key
    return headers


def messages_body(request: CompletionRequest, cfg: ModelConfig, mode: Mode = "off") -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": request.model or cfg.model,
        "system": request.system,
        "messages": [{"role": "user", "content": request.user}],
        "max_tokens": request.max_tokens,
    }
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.reply_schema is not None:
        body.update(anthropic_tool_fields(mode, request.reply_schema))
    return body


def parse_messages_response(data: Any, tool: str | None = None) -> CompletionResponse:
    """A Messages API body → `CompletionResponse`; `ModelFailure` naming the
    expected field that is missing."""
    if not isinstance(data, dict):
        raise ModelFailure(f"messages reply is not a JSON object (got {type(data).__name__})")
    content = data.get("content")
    if not isinstance(content, list):
        raise ModelFailure("messages reply has no `content` list")
    text = "".join(
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )
    reason = data.get("stop_reason")
    stop = STOP_REASONS.get(reason, StopReason.OTHER) if isinstance(reason, str) else StopReason.OTHER
    if tool is not None:
        # A forced tool call: its input *is* the answer, and `tool_use` is
        # how such a reply ends when it is complete.
        forced = [
            b for b in content
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == tool and isinstance(b.get("input"), dict)
        ]
        if forced:
            import msgspec

            text = msgspec.json.encode(forced[0]["input"]).decode()
            if reason == "tool_use":
                stop = StopReason.END_TURN
    category = None
    if stop is StopReason.REFUSAL:
        details = data.get("stop_details")
        if isinstance(details, dict) and isinstance(details.get("category"), str):
            category = details["category"]
    model = data.get("model")
    return CompletionResponse(
        text=text,
        stop_reason=stop,
        refusal_category=category,
        model=model if isinstance(model, str) else None,
    )


class AnthropicProvider:
    """A `Provider` over the Anthropic Messages API (or a server that speaks
    it). `env` is where the key variable is looked up."""

    label = "Anthropic Messages API"

    def __init__(self, cfg: ModelConfig, *, env: Mapping[str, str] | None = None, memory: ModeMemory | None = None):
        self.cfg = cfg
        self._env = os.environ if env is None else env
        # Without a store's memory, what this provider finds lasts its life.
        self.memory = memory if memory is not None else ModeMemory()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """One completion; a reply schema is asked for as a forced tool
        call when the server takes one (`structured.complete_structured`)."""
        response: CompletionResponse = await complete_structured(self.cfg, self.memory, request, self._send)
        return response

    async def _send(self, request: CompletionRequest, mode: Mode, once: bool = False) -> CompletionResponse:
        key = api_key(self.cfg, self._env)
        data = await post_json(
            self.cfg,
            api_url(self.cfg.base_url, "/messages"),
            anthropic_headers(key),
            messages_body(request, self.cfg, mode),
            secrets=(key,) if key else (),
            label=self.label,
            attempts=1 if once else None,
            max_tokens=request.max_tokens,
        )
        tool = request.reply_schema.name if mode == "tool" and request.reply_schema is not None else None
        return parse_messages_response(data, tool)
