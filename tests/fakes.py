"""Test doubles that are honest about what they are.

`ScriptedProvider` is an in-process `Provider` for core tests: it replies from
a script and records every request, so a test can assert both what the model
was shown and what the code did with the answer. Tests of the HTTP providers
use a real server on 127.0.0.1 instead (see `tests/model_server.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from mecha.core.providers.base import CompletionRequest, CompletionResponse, StopReason

Reply = str | CompletionResponse | Exception | Callable[[CompletionRequest], "Reply"]


class ScriptedProvider:
    def __init__(self, *replies: Reply):
        self.script: list[Reply] = list(replies)
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        if not self.script:
            raise AssertionError("the scripted provider ran out of replies")
        reply = self.script.pop(0)
        while callable(reply) and not isinstance(reply, (Exception, CompletionResponse)):
            reply = reply(request)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, CompletionResponse):
            return reply
        return CompletionResponse(text=reply, stop_reason=StopReason.END_TURN)

    def prompts(self) -> str:
        """Everything every request showed the model, for "never reaches" checks."""
        return "\n".join(f"{r.system}\n{r.user}" for r in self.requests)
