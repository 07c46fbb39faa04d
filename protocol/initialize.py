"""What `initialize` carries, as this server reads it.

`initializationOptions` are the same on both endpoints; every key is optional
(see `protocol/README.md`). `model` is kept as the object the client sent and
validated where it is used (`mecha.core.providers.resolve_model_config`), so
a bad model configuration fails the pass that needs it — with a message
naming the key — rather than the run that only wanted its rules block.
"""

from __future__ import annotations

from typing import Any

import msgspec

from mecha.core.store.layout import root_problem


class InitializationOptions(msgspec.Struct, rename="camel"):
    #: The store root; default `$MECHA_LEARNING_DIR`, else `~/.mecha/learning`.
    learning_dir: str | None = None
    #: The harness's forced-answer nudge: a user turn equal to it is not a person.
    final_answer_nudge: str | None = None
    #: Prefixes of other text the harness records in the user's voice.
    harness_voices: list[str] = msgspec.field(default_factory=list)
    #: `{api, baseUrl, model, apiKeyEnv, timeoutS, maxRetries, maxBackoffS}`.
    model: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # A root no path can be is the client's mistake, told at `initialize`
        # by name (-32602), not an internal error at every request after it.
        if self.learning_dir:
            problem = root_problem(self.learning_dir)
            if problem is not None:
                raise ValueError(f"learningDir {problem}")


class ClientInfo(msgspec.Struct):
    name: str = ""
    version: str | None = None


class InitializeParams(msgspec.Struct, rename="camel"):
    """The part of LSP's `InitializeParams` this server reads; the rest
    (capabilities, workspace folders) is accepted and ignored here."""

    initialization_options: InitializationOptions | None = None
    process_id: int | None = None
    client_info: ClientInfo | None = None
