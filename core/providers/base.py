"""The one model call every pass makes, as a small async protocol.

Reflector, learner and appraiser are all the same shape — a system frame, one
user message, no tools, no history — so a provider needs exactly one method.
The HTTP providers live in `mecha.core.providers`; tests script replies.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Protocol

import msgspec


class StopReason(str, Enum):
    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"
    OTHER = "other"


class ReplySchema(msgspec.Struct, frozen=True, kw_only=True):
    """The shape a reply must have, for a server that can hold its model to
    it (see `replies.ReplyContract`, which builds these)."""

    #: A short identifier: the schema's name, or the forced tool's name.
    name: str
    description: str
    #: A self-contained JSON Schema of the reply object.
    schema: dict[str, Any]


class CompletionRequest(msgspec.Struct, kw_only=True):
    system: str
    user: str
    max_tokens: int = 4096
    # `None`: the provider's configured model.
    model: str | None = None
    #: Ask the server to constrain the reply to this shape, in whatever way
    #: its dialect offers (`providers.structured`); `None`: free text.
    reply_schema: ReplySchema | None = None
    #: Sampling temperature, sent when given (`0`: the most likely reply, as
    #: a paired measurement wants); `None`: the server's default.
    temperature: float | None = None


class CompletionResponse(msgspec.Struct, kw_only=True):
    text: str
    stop_reason: StopReason = StopReason.END_TURN
    # Set on a refusal when the backend gave a category.
    refusal_category: str | None = None
    model: str | None = None
    #: How the reply was constrained (`json_schema`, `json_object`, `tool`),
    #: or `off` when it was not.
    structured: str = "off"


class Provider(Protocol):
    async def complete(self, request: CompletionRequest) -> CompletionResponse: ...
