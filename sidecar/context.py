"""What a running sidecar knows: where the store is, whose voices are not a
person's, how to reach a model, and how to tell its peer things.

Resolved once, from `initialize`'s `initializationOptions` (or the CLI's
flags), then trusted by every handler. Precedence for the store root
(protocol/README.md, `learningDir`): `learningDir`, then `$MECHA_LEARNING_DIR`, then
`~/.mecha/learning` — made absolute here (`LearningStore.resolve_root`), so
a detached pass, which runs inside the store, is handed the same directory.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from mecha.core.sessions.mining import DEFAULT_FINAL_ANSWER_NUDGE, Voices
from mecha.core.store.layout import LEARNING_DIR_ENV
from mecha.core.store.learning_store import LearningStore
from mecha.protocol.initialize import IgnoredOption, InitializationOptions, InitializeParams

__all__ = ["Context", "InitializationOptions", "InitializeParams"]


class Context(msgspec.Struct):
    # A Struct rather than a dataclass only because a dataclass compiles its
    # methods at import, on the harness's cold path. Never serialized.
    root: Path
    voices: Voices = msgspec.field(default_factory=Voices)
    #: `initializationOptions.model`, as sent (resolved against env and file
    #: only when a pass needs it).
    model_options: dict[str, Any] | None = None
    #: Sends a notification to the peer; `None` for the CLI.
    notify: Callable[[str, Any], None] | None = None
    #: Called with each job a handler starts, as it starts.
    on_job_started: Callable[[Any], object] | None = None
    #: Called with a started job's final record when its process ends
    #: (`jobs.start_pass` watches the process when this is set).
    on_job_finished: Callable[[Any], None] | None = None
    #: Called with `(domain, result, rules fingerprint)` for each rules block
    #: read afresh from files that did not change while it was read, so the
    #: harness endpoint can keep it for the next run (`blockcache`).
    #: Called with `(domain, project root, result, rules fingerprint)`.
    on_block_rendered: Callable[[str | None, str | None, Any, Any], None] | None = None
    #: The `initializationOptions` keys `initialize` was sent and did not
    #: read (`initialize.ignored_options`), for its result to name.
    ignored_options: list[IgnoredOption] = msgspec.field(default_factory=list)
    _store: LearningStore | None = None

    @classmethod
    def from_initialize(
        cls,
        raw: bytes | None,
        notify: Callable[[str, Any], None],
        *,
        on_job_event: Callable[[], object] | None = None,
    ) -> Context:
        """The context an endpoint's `initialize` sets up, the same on both:
        the params decoded (-32602 naming what is wrong), the store root and
        voices resolved, `notify` to reach the peer, and every pass a handler
        starts watched until it ends, when the peer is sent
        `mecha/jobFinished`. `on_job_event` is called when a pass starts and
        when it ends (the editor endpoint refreshes what it shows)."""
        from mecha.protocol.errors import INVALID_PARAMS, RpcError
        from mecha.protocol.methods import JOB_FINISHED, JobFinishedParams

        try:
            params = msgspec.json.decode(raw or b"{}", type=InitializeParams)
        except msgspec.ValidationError as exc:
            raise RpcError(INVALID_PARAMS, f"invalid params: {exc}") from None
        ctx = cls.from_options(params.initialization_options)
        ctx.notify = notify
        if params.initialization_options is not None:
            from mecha.protocol.initialize import ignored_options_message, ignored_options_of

            ctx.ignored_options = ignored_options_of(raw)
            if ctx.ignored_options:
                # Said where a person running the harness looks, on both
                # endpoints; the harness endpoint's result names them too.
                sys.stderr.write(ignored_options_message(ctx.ignored_options) + "\n")

        def finished(final: Any) -> None:
            notify(JOB_FINISHED, JobFinishedParams(job=final))
            if on_job_event is not None:
                on_job_event()

        ctx.on_job_finished = finished
        if on_job_event is not None:
            ctx.on_job_started = lambda job: on_job_event()
        return ctx

    @classmethod
    def from_options(cls, options: InitializationOptions | None) -> Context:
        options = options or InitializationOptions()
        root = LearningStore.resolve_root(options.learning_dir)
        voices = Voices(
            final_answer_nudge=options.final_answer_nudge or DEFAULT_FINAL_ANSWER_NUDGE,
            harness_prefixes=tuple(v for v in options.harness_voices if v),
        )
        return cls(root=root, voices=voices, model_options=options.model)

    def store(self) -> LearningStore:
        """The store, created on first use (a writer path)."""
        if self._store is None:
            self._store = LearningStore.open(self.root)
        return self._store

    def existing_store(self) -> LearningStore | None:
        """The store if it exists; never creates state (a read path)."""
        if self._store is not None:
            return self._store
        return LearningStore.open_existing(self.root)

    def with_voices(self, *profiles: str, extra: Sequence[str] = ()) -> Context:
        """This context with the voices a verb that mines adds: the built-in
        profiles named (`claude`, `codex`: the formats being read),
        `$MECHA_HARNESS_VOICES`, then `extra` (`--voices`). The one recipe
        for `mine`, `reflect`, `import` and the agents' session-end hook, so
        a hook queues exactly what `import` would."""
        from mecha.core.sessions.foreign import expand_voices, voices_from_env_value

        prefixes = expand_voices(
            [
                *self.voices.harness_prefixes,
                *expand_voices(profiles),
                *voices_from_env_value(os.environ.get("MECHA_HARNESS_VOICES")),
                *extra,
            ]
        )
        return msgspec.structs.replace(self, voices=msgspec.structs.replace(self.voices, harness_prefixes=prefixes))

    def pass_environment(self) -> dict[str, str]:
        """Environment for a detached pass: this one, plus the store root and
        the model options the harness gave (never a key: the key stays in the
        variable `apiKeyEnv` names). The voices are not here: each inbox
        entry carries the ones it was surveyed with."""
        env = dict(os.environ)
        env[LEARNING_DIR_ENV] = str(self.root)
        if self.model_options:
            env["MECHA_MODEL_OPTIONS"] = msgspec.json.encode(self.model_options).decode()
        return env


def model_options_from_environment() -> dict[str, Any] | None:
    raw = os.environ.get("MECHA_MODEL_OPTIONS")
    if not raw:
        return None
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None
