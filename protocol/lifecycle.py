"""The LSP lifecycle's own wire shapes: what `initialize` carries.

`initializationOptions` are the same on both endpoints; every key is optional
(see `protocol/README.md`). `model` is kept as the object the client sent and
validated where it is used (`mecha.core.providers.resolve_model_config`), so
a bad model configuration fails the pass that needs it — with a message
naming the key — rather than the run that only wanted its rules block.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .errors import INVALID_REQUEST, RpcError

#: The lifecycle's notifications (LSP defines them so): a client that sends
#: one with an id is answered rather than left waiting.
LIFECYCLE_NOTIFICATIONS = frozenset({"initialized", "exit", "$/cancelRequest", "$/setTrace", "$/logTrace"})


def notification_sent_as_request(method: str) -> RpcError:
    """The answer to a notification sent with an id (`initialized` as a
    request): -32600, since JSON-RPC has every request answered and this one
    is not a request the protocol has. Not a null result: that would read
    as success, and the client's mistake would go unseen. The message is
    acted on no further."""
    return RpcError(INVALID_REQUEST, f"{method} is a notification: send it without an id")


class InitializationOptions(msgspec.Struct, rename="camel"):
    #: The store root; default `$MECHA_LEARNING_DIR`, else `~/.mecha/learning`.
    learning_dir: str | None = None
    #: The harness's forced-answer nudge: a user turn equal to it is not a person.
    final_answer_nudge: str | None = None
    #: Prefixes of other text the harness records in the user's voice.
    harness_voices: list[str] = msgspec.field(default_factory=list)
    #: `{api, baseUrl, model, apiKeyEnv, timeoutS, maxRetries, maxBackoffS}`.
    model: dict[str, Any] | None = None


class ClientInfo(msgspec.Struct):
    name: str = ""
    version: str | None = None


class InitializeParams(msgspec.Struct, rename="camel"):
    """The part of LSP's `InitializeParams` this server reads; the rest
    (capabilities, workspace folders) is accepted and ignored here."""

    initialization_options: InitializationOptions | None = None
    process_id: int | None = None
    client_info: ClientInfo | None = None
