"""The one model call every pass makes, as a small async protocol.

Reflector, learner and appraiser are all the same shape — a system frame, one
user message, no tools, no history — so a provider needs exactly one method.
The HTTP providers live in `mecha.core.providers`; tests script replies.
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol

import msgspec


class StopReason(str, Enum):
    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"
    OTHER = "other"


class CompletionRequest(msgspec.Struct, kw_only=True):
    system: str
    user: str
    max_tokens: int = 4096
    # `None`: the provider's configured model.
    model: str | None = None


class CompletionResponse(msgspec.Struct, kw_only=True):
    text: str
    stop_reason: StopReason = StopReason.END_TURN
    # Set on a refusal when the backend gave a category.
    refusal_category: str | None = None
    model: str | None = None


class Provider(Protocol):
    async def complete(self, request: CompletionRequest) -> CompletionResponse: ...
