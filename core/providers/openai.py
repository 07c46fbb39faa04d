"""The OpenAI-compatible dialect: `POST /v1/chat/completions`.

One dialect serves many servers — llama.cpp's server, vLLM, Ollama, LM Studio
and OpenAI itself — and they differ at the edges, so the reader is lenient
where they differ and strict where a pass depends on it. `content` may be a
string, `null` (a reasoning model that spent its budget thinking) or a list of
text parts; all read as text, `null` as "". A missing `choices[0].message` is
a failure that says so, never an empty answer: an empty answer is a valid
reply that a pass would act on.

A key is optional: local servers need none, so the `Authorization` header is
sent only when the config names a variable holding one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from mecha.core.errors import ModelFailure
from mecha.core.providers._http import api_key, api_url, post_json
from mecha.core.providers.base import CompletionRequest, CompletionResponse, StopReason
from mecha.core.providers.config import ModelConfig
from mecha.core.providers.structured import Mode, ModeMemory, complete_structured, openai_response_format

#: `finish_reason` → our stop reason. Anything unlisted (`tool_calls`, a
#: server's own spelling) is `OTHER`, which no pass mistakes for success.
FINISH_REASONS: dict[str, StopReason] = {
    "stop": StopReason.END_TURN,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


def chat_body(request: CompletionRequest, cfg: ModelConfig, mode: Mode = "off") -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": request.model or cfg.model,
        "messages": [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.user},
        ],
        "max_tokens": request.max_tokens,
        "stream": False,
    }
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.reply_schema is not None:
        response_format = openai_response_format(mode, request.reply_schema)
        if response_format is not None:
            body["response_format"] = response_format
    return body


def parse_chat_response(data: Any) -> CompletionResponse:
    """A chat completion body → `CompletionResponse`; `ModelFailure` naming
    the first expected field that is missing."""
    if not isinstance(data, dict):
        raise ModelFailure(f"chat completion reply is not a JSON object (got {type(data).__name__})")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ModelFailure("chat completion reply has no `choices`")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ModelFailure("chat completion reply has no `choices[0].message`")

    text = _content_text(message.get("content"))
    finish = choice.get("finish_reason")
    stop = FINISH_REASONS.get(finish, StopReason.OTHER) if isinstance(finish, str) else StopReason.OTHER
    if message.get("refusal"):
        stop = StopReason.REFUSAL
    model = data.get("model")
    return CompletionResponse(
        text=text,
        stop_reason=stop,
        model=model if isinstance(model, str) else None,
    )


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


class OpenAIProvider:
    """A `Provider` over an OpenAI-compatible chat completions endpoint.

    `env` is where the key variable is looked up (default: the process
    environment), so tests and callers need not mutate `os.environ`."""

    label = "OpenAI-compatible server"

    def __init__(self, cfg: ModelConfig, *, env: Mapping[str, str] | None = None, memory: ModeMemory | None = None):
        self.cfg = cfg
        self._env = os.environ if env is None else env
        # Without a store's memory, what this provider finds lasts its life.
        self.memory = memory if memory is not None else ModeMemory()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        """One completion; constrained to `request.reply_schema` as the
        server allows (`structured.complete_structured`)."""
        response: CompletionResponse = await complete_structured(self.cfg, self.memory, request, self._send)
        return response

    async def _send(self, request: CompletionRequest, mode: Mode, once: bool = False) -> CompletionResponse:
        key = api_key(self.cfg, self._env)
        headers = {"content-type": "application/json", "accept": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        data = await post_json(
            self.cfg,
            api_url(self.cfg.base_url, "/chat/completions"),
            headers,
            chat_body(request, self.cfg, mode),
            secrets=(key,) if key else (),
            label=self.label,
            attempts=1 if once else None,
            max_tokens=request.max_tokens,
        )
        return parse_chat_response(data)
