"""What `initialize` carries, what it answers, and the rest of LSP's
lifecycle messages as this server reads them.

`initializationOptions` are the same on both endpoints; every key is optional
(see `protocol/README.md`). `model` is kept as the object the client sent and
validated where it is used (`mecha.core.providers.resolve_model_config`), so
a bad model configuration fails the pass that needs it — with a message
naming the key — rather than the run that only wanted its rules block.

A key this server does not know is not an error — a newer client may send
options an older server lacks — but it is never ignored in silence either:
the method params are snake_case and the options camelCase, and a harness
that wrote `learning_dir` once ran against `~/.mecha/learning` without a
word. `ignored_options` names every such key, at the top level and inside
`model`, with the key it most likely meant; the `initialize` result carries
that list (`ignoredOptions`) and the endpoint says it on stderr.

`LIFECYCLE` describes `initialize`, `initialized`, `shutdown`, `exit` and
`$/cancelRequest` for the JSON Schema, beside the `mecha/*` method table.
"""

from __future__ import annotations

from typing import Any

import msgspec

from mecha.core.store.layout import root_problem

from .plainwire import INITIALIZATION_OPTIONS_KEYS, MODEL_OPTION_KEYS


class InitializationOptions(msgspec.Struct, rename="camel"):
    #: The store root; default `$MECHA_LEARNING_DIR`, else `~/.mecha/learning`.
    learning_dir: str | None = None
    #: The harness's forced-answer nudge: a user turn equal to it is not a person.
    final_answer_nudge: str | None = None
    #: Prefixes of other text the harness records in the user's voice.
    harness_voices: list[str] = msgspec.field(default_factory=list)
    #: `{api, baseUrl, model, apiKeyEnv, timeoutS, maxRetries, maxBackoffS,
    #: structured, concurrency}` (`plainwire.MODEL_OPTION_KEYS`).
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


# ─── what initialize answers ────────────────────────────────────────────────


class MechaCapabilities(msgspec.Struct):
    #: Every `mecha/*` request this server serves, sorted.
    methods: list[str]
    #: Every `mecha/*` notification it sends, sorted.
    notifications: list[str]


class ExperimentalCapabilities(msgspec.Struct):
    mecha: MechaCapabilities


class ServerCapabilities(msgspec.Struct):
    """No LSP document features on the harness endpoint: only what it serves
    under `experimental`."""

    experimental: ExperimentalCapabilities


class ServerInfo(msgspec.Struct):
    name: str
    version: str


class IgnoredOption(msgspec.Struct):
    """One `initializationOptions` key this server did not read."""

    #: Where it was: `learning_dir`, or `model.base_url` inside `model`.
    key: str
    #: The key it most likely meant (`learningDir`), or `null` when no known
    #: key is near it.
    meant: str | None


class InitializeResult(msgspec.Struct, rename="camel"):
    capabilities: ServerCapabilities
    server_info: ServerInfo
    #: Every option key that was sent and not read; empty when all were.
    ignored_options: list[IgnoredOption]


class CancelParams(msgspec.Struct):
    """`$/cancelRequest`'s params: the id of the request to give up on."""

    id: int | str


def near_miss(key: str, known: tuple[str, ...]) -> str | None:
    """The known key `key` was most likely meant to be: the one that differs
    only in case and `_`/`-` (`learning_dir` → `learningDir`), else the
    closest by spelling, when one is close."""

    def fold(name: str) -> str:
        return name.replace("_", "").replace("-", "").lower()

    for name in known:
        if fold(name) == fold(key):
            return name
    import difflib  # only when a key is unknown: never on a plain start

    by_fold = {fold(name): name for name in known}
    close = difflib.get_close_matches(fold(key), list(by_fold), n=1, cutoff=0.75)
    return by_fold[close[0]] if close else None


def ignored_options(options: object) -> list[IgnoredOption]:
    """Every key of `initializationOptions` (as the client sent it, decoded
    to builtins) that this server does not read, and every unknown key
    inside `model`, in the order sent."""
    if not isinstance(options, dict):
        return []
    out = [IgnoredOption(key, near_miss(key, INITIALIZATION_OPTIONS_KEYS)) for key in options if key not in INITIALIZATION_OPTIONS_KEYS]
    model = options.get("model")
    if isinstance(model, dict):
        out.extend(
            IgnoredOption(f"model.{key}", near_miss(key, MODEL_OPTION_KEYS)) for key in model if key not in MODEL_OPTION_KEYS
        )
    return out


def ignored_options_of(raw_params: bytes | None) -> list[IgnoredOption]:
    """`ignored_options` of an `initialize` request's raw params. Decoded a
    second time, untyped, because the typed decode drops what it does not
    know; params that do not decode were refused already."""
    try:
        params = msgspec.json.decode(raw_params or b"{}")
    except msgspec.DecodeError:
        return []
    return ignored_options(params.get("initializationOptions") if isinstance(params, dict) else None)


def ignored_options_message(ignored: list[IgnoredOption]) -> str:
    """The line an endpoint writes to stderr about them: what was ignored,
    and what to write instead."""
    parts = [f"`{o.key}`" + (f" (did you mean `{o.meant}`?)" if o.meant else "") for o in ignored]
    return (
        "mecha-sidecar: initializationOptions: ignored unknown key(s) "
        + ", ".join(parts)
        + "; they change nothing. Options are camelCase: rename them, or drop them"
    )


class Lifecycle(msgspec.Struct, frozen=True):
    """One of LSP's lifecycle messages, as the schema describes it."""

    #: The params' type; `None` for params a server ignores (absent, `null`
    #: or an object).
    params: type | None
    #: The result's type; `None` for `null` (or for a notification: no reply).
    result: type | None
    notification: bool
    summary: str


#: The lifecycle messages both endpoints serve (`protocol/lifecycle.py`
#: decides what each does when).
LIFECYCLE: dict[str, Lifecycle] = {
    "initialize": Lifecycle(InitializeParams, InitializeResult, False,
                            "The first request: the options, and what the server serves."),
    "initialized": Lifecycle(None, None, True, "Accepted and ignored."),
    "shutdown": Lifecycle(None, None, False, "Answered null; every request after it is -32600."),
    "exit": Lifecycle(None, None, True, "Ends the process: exit code 0 after shutdown, else 1."),
    "$/cancelRequest": Lifecycle(CancelParams, None, True,
                                 "Give up on a request: answered -32800 if it had not run yet."),
}
