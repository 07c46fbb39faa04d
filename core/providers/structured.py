"""Constrained replies: asking a server to hold its model to a JSON Schema.

Every pass wants one JSON object of a known shape back, and the dialects
offer different ways to ask for it:

- `json_schema` — `response_format: {"type": "json_schema", "json_schema":
  {"name", "schema", "strict": true}}`: OpenAI, vLLM, llama.cpp's
  `llama-server`, LM Studio, Ollama ≥ 0.5.
- `json_object` — `response_format: {"type": "json_object", "schema": …}`:
  llama-cpp-python's server, which answers HTTP 500 to `json_schema`, and
  llama.cpp's own server too.
- `tool` — the Anthropic Messages API has no response format; a tool whose
  `input_schema` is the contract, forced with `tool_choice`, is its way.
- `off` — free text, read leniently (`replies.extract_json`).

With `structured = "auto"` (the default) a provider starts at the top of its
dialect's chain and steps down only when the *server* turns a request down:
it answered with an HTTP status that is not a transient one (see
`steps_down_after`). A timeout or a refused connection says nothing about
what the server accepts, so it fails the call like any other. An error whose
body names the field that carries the mode (`response_format`; `tools`,
`tool_choice`) is the server refusing that mode (`ModeRefused`): certain, so
it is not retried as a transient fault, and the next mode is asked at once.
The mode a server accepted is remembered per base URL and model
(`ModeMemory`, a small file the pass keeps in the store) so later passes do
not probe again. While it is unknown, one call probes and the calls that
come meanwhile wait for its answer: a pass of concurrent calls finds the
mode once, not once per call. A mode named explicitly is used alone, never
stepped down from.

A small local model unconstrained wrote no usable JSON in 8 tries; the same
prompts constrained gave 8 usable replies of 8. That is the whole reason for
this module.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import anyio

from mecha.core.errors import ModelFailure
from mecha.core.providers.base import ReplySchema

log = logging.getLogger("mecha.core.providers")

Mode = Literal["json_schema", "json_object", "tool", "off"]
Setting = Literal["auto", "json_schema", "json_object", "tool", "off"]

#: Every value the `structured` key accepts, as `doctor` and errors list them.
SETTINGS: tuple[str, ...] = ("auto", "json_schema", "json_object", "tool", "off")

#: Each dialect's modes, best first: the order `auto` tries them in.
CHAINS: dict[str, tuple[Mode, ...]] = {
    "openai": ("json_schema", "json_object", "off"),
    "anthropic": ("tool", "off"),
}


def modes_to_try(api: str, setting: str, remembered: str | None) -> tuple[Mode, ...]:
    """The modes a call tries, in order.

    An explicit setting is that mode alone (a person who names one wants to
    hear that it fails, not to be quietly downgraded). `auto` starts from the
    remembered mode when it is one of the dialect's, else from the top.
    A setting another dialect uses (`tool` for an OpenAI server) is refused
    when the config is read, not here.
    """
    chain = CHAINS[api]
    if setting != "auto":
        return (setting,)  # type: ignore[return-value]
    if remembered in chain:
        return chain[chain.index(remembered) :]
    return chain


#: The request fields that carry each dialect's reply mode: an error body
#: that names one is the server refusing the mode (`ModeRefused`).
MODE_FIELDS: dict[str, tuple[str, ...]] = {
    "openai": ("response_format",),
    "anthropic": ("tool_choice", "tools"),
}


class ModeRefused(ModelFailure):
    """The server turned down the reply mode itself: it answered an error
    status whose body names the request field that carries the mode. Not a
    transient fault (asking again gets the same answer), so it is not
    retried, and the next mode is asked with the whole retry budget."""


def names_mode_field(api: str, status: int, body: str) -> bool:
    """Whether an error answer is a refusal of the reply mode: a status that
    is about the request (`steps_down_after`) and a body naming the field
    the mode travels in."""
    return steps_down_after(status) and any(field in body for field in MODE_FIELDS.get(api, ()))


def steps_down_after(status: int | None) -> bool:
    """Whether a failed constrained call should be tried with the next mode.

    Only when the server answered and turned the request down: a 4xx other
    than 401/403 (credentials), 404 (a wrong URL or model), 408 (timeout) and
    429 (rate limit) — each of which every mode would meet alike — or a 5xx
    that outlasted the
    retries (llama-cpp-python's server answers `json_schema` with a 500, every
    time). No status — a timeout, a dropped connection — is not an answer
    about the request, and stepping down on it would record a wrong mode for
    good.
    """
    if status is None:
        return False
    if status in (401, 403, 404, 408, 429):
        return False
    return 400 <= status <= 599


def openai_response_format(mode: Mode, reply: ReplySchema) -> dict[str, Any] | None:
    """The `response_format` for `mode`, or `None` for free text."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": reply.name, "schema": reply.schema, "strict": True},
        }
    if mode == "json_object":
        return {"type": "json_object", "schema": reply.schema}
    return None


def anthropic_tool_fields(mode: Mode, reply: ReplySchema) -> dict[str, Any]:
    """The `tools` and `tool_choice` that force a reply of the contract's
    shape, or nothing for free text."""
    if mode != "tool":
        return {}
    return {
        "tools": [{"name": reply.name, "description": reply.description, "input_schema": reply.schema}],
        "tool_choice": {"type": "tool", "name": reply.name},
    }


class ModeMemory:
    """Which mode each server accepted, kept in one small JSON file.

    Keyed by dialect, base URL and model: the same URL serving another model
    may be another server behind a router. Best-effort on purpose: a file
    that cannot be read is an empty memory (the next call probes again), and
    a failed write costs a probe next time, never a pass. `root` is the store
    the file lives in, so the write refuses links planted there as every
    store write does.
    """

    def __init__(self, path: Path | None = None, *, root: Path | None = None):
        self.path = path
        self.root = root if root is not None else (path.parent if path is not None else None)
        #: What this process found or read, so a call does not read the file.
        self._known: dict[str, str] = {}
        #: Per key, the probe in flight: set when it has its answer.
        self._probes: dict[str, anyio.Event] = {}

    @staticmethod
    def key(api: str, base_url: str, model: str) -> str:
        return f"{api} {base_url} {model}"

    def _read(self) -> dict[str, str]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}

    def get(self, key: str) -> str | None:
        if key not in self._known:
            found = self._read().get(key)
            if found is None:
                return None
            self._known[key] = found
        return self._known[key]

    def put(self, key: str, mode: str) -> None:
        self._known[key] = mode
        if self.path is None or self.root is None:
            return
        data = self._read()
        if data.get(key) == mode:
            return
        data[key] = mode
        from mecha.core.errors import LearningError
        from mecha.core.store.files import ensure_private_dir, refuse_links, write_atomic

        try:
            ensure_private_dir(self.path.parent, root=self.root)
            write_atomic(refuse_links(self.root, self.path), json.dumps(data, indent=1, sort_keys=True).encode() + b"\n")
        except (OSError, LearningError):
            pass


Send = Callable[[Any, Mode, bool], Awaitable[Any]]


async def complete_structured(cfg: Any, memory: ModeMemory | None, request: Any, send: Send) -> Any:
    """One call through the modes `cfg` allows: `send(request, mode, once)`
    per mode until one is accepted (`_through_modes`). Under `auto` the
    accepted mode is remembered; while it is unknown, one call probes and
    the calls that come meanwhile wait for its answer, then start from the
    mode it found. A probe that failed for a reason that says nothing about
    the mode (a timeout, a dead server) lets them go on together, as they
    would have without it."""
    if request.reply_schema is None or cfg.structured == "off":
        response = await send(request, "off", False)
        response.structured = "off"
        return response
    if cfg.structured != "auto" or memory is None:
        return await _through_modes(cfg, None, "", request, send)
    key = ModeMemory.key(cfg.api, cfg.base_url, request.model or cfg.model)
    if memory.get(key) is None:
        probe = memory._probes.get(key)
        if probe is None:
            memory._probes[key] = probe = anyio.Event()
            try:
                return await _through_modes(cfg, memory, key, request, send)
            finally:
                del memory._probes[key]
                probe.set()
        await probe.wait()
    return await _through_modes(cfg, memory, key, request, send)


async def _through_modes(cfg: Any, memory: ModeMemory | None, key: str, request: Any, send: Send) -> Any:
    """`send` per mode until one is accepted, stepping down only past a
    server's refusal (`steps_down_after`); the accepted mode is set on the
    response and remembered in `memory` (under `key`). When none is
    accepted, the first failure that was not a mere refusal of a mode is
    raised — it is the one that names what went wrong.

    A `ModeRefused` or a 4xx is a plain refusal, and the next mode gets the
    whole retry budget. A 5xx that outlasted its retries without naming the
    mode is ambiguous — a server may refuse a mode that way, and a broken
    server fails everything that way — so the next mode is tried once
    (`once`): an answer proves it was a refusal of the mode, another 5xx
    proves the server is failing, and the pass fails with the first fault
    after a single extra request.
    """
    remembered = memory.get(key) if memory is not None else None
    modes = modes_to_try(cfg.api, cfg.structured, remembered)
    first: ModelFailure | None = None
    once = False
    for i, mode in enumerate(modes):
        try:
            response = await send(request, mode, once)
        except ModelFailure as exc:
            refused = isinstance(exc, ModeRefused)
            if first is None and not refused:
                first = exc
            server_failing = once and not refused and (exc.status is None or exc.status >= 500)
            if i == len(modes) - 1 or server_failing or not (refused or steps_down_after(exc.status)):
                raise (first or exc) from None
            if not refused and exc.status is not None and exc.status >= 500:
                once = True
            log.warning("the server turned down %s replies (%s); trying %s", mode, exc, modes[i + 1])
            continue
        response.structured = mode
        if memory is not None and mode != remembered:
            memory.put(key, mode)
        return response
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
