"""`mecha-sidecar` / `mecha-sidecar serve`: the harness endpoint on stdio."""

from __future__ import annotations

import gc
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from mecha.protocol import methods as m
from mecha.protocol.initialize import (
    ExperimentalCapabilities,
    IgnoredOption,
    InitializeResult,
    MechaCapabilities,
    ServerCapabilities,
    ServerInfo,
)

from .context import Context
from .handlers import make_dispatch
from .rpc import Cancel, RpcServer

SERVER_NAME = "mecha-sidecar"

log = logging.getLogger("mecha.sidecar.serve")


def server_version() -> str:
    # The build reads the distribution's version from this same attribute,
    # so the two cannot drift; `importlib.metadata` would cost the cold path
    # tens of milliseconds for the same string.
    from ._version import __version__

    return __version__


def capabilities(ignored: list[IgnoredOption] | None = None) -> InitializeResult:
    """What `initialize` answers: no LSP document features on this endpoint,
    the `mecha/*` methods it serves under `experimental`, and the option
    keys it was sent and did not read (`initialize.ignored_options`)."""
    return InitializeResult(
        capabilities=ServerCapabilities(
            experimental=ExperimentalCapabilities(
                mecha=MechaCapabilities(
                    methods=sorted(n for n, spec in m.METHODS.items() if not spec.notification),
                    notifications=sorted(n for n, spec in m.METHODS.items() if spec.notification),
                )
            )
        ),
        server_info=ServerInfo(name=SERVER_NAME, version=server_version()),
        ignored_options=list(ignored or ()),
    )


def block_keeper(root: Path) -> Callable[[str | None, str | None, Any, Any], None]:
    """What the full server does with a rules block it read afresh: keep it
    in the store's block cache, encoded as it goes on the wire, for the next
    run's first stage (`first_stage`, `mecha.core.store.blockcache`). A cache that
    cannot be written costs a later miss, never this request."""
    from mecha.core.store import blockcache

    from ._version import code_identity

    def keep(domain: str | None, project: str | None, result: Any, fingerprint: Any) -> None:
        try:
            answer = msgspec.json.encode(result)
            initialize = msgspec.json.encode(capabilities())
            blockcache.write(
                root, code_identity(), fingerprint, domain, answer, initialize, time.time_ns(), project=project
            )
        except Exception as exc:  # nothing about a cache may fail the request
            log.debug("rules block not cached: %s", exc)

    return keep


#: What a run asks after its rules block, in the order it asks: each
#: answered once, to nobody, by `warm_up` before the run's first real one.
#: The transcript holds a denial, so mining reads a tool result.
WARM_UP: tuple[tuple[str, bytes], ...] = (
    ("mecha/liveAffect", b'{"session_id": "warm-up", "messages": [{"role": "user", "content": "go"}, '
     b'{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "shell", "input": {}}]}, '
     b'{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": true, '
     b'"content": "Denied by the user: not now"}]}]}'),
    ("mecha/extractInterventions", b'{"messages": [{"role": "user", "content": "go"}, '
     b'{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "shell", "input": {}}]}, '
     b'{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": true, '
     b'"content": "Denied by the user: not now"}]}]}'),
)


def warm_up(dispatch: Callable[[str, Any, Cancel], Any]) -> None:
    """Answer `WARM_UP` once, throwing the answers away: the modules, regular
    expressions and decoders a run's next requests need are then loaded
    before those requests come. Only called while the client is known to be
    waiting on its model (`first_stage.IDLE_HANDOVER_S`); read-only, and a
    failure costs only the head start."""
    for method, params in WARM_UP:
        try:
            dispatch(method, msgspec.Raw(params), Cancel())
        except Exception as exc:  # the real request will say what is wrong
            log.debug("warm-up %s: %s", method, exc)


def serve_stdio(
    pending: bytes = b"", initialized_by: bytes | None = None, shutdown: bool = False, *, warm: bool = False
) -> int:
    """Serve the harness endpoint on stdio until `exit` or the end of input.
    The arguments carry on from the first stage (`RpcServer.resume`); `warm`:
    it handed over because the client went quiet after its rules block, so
    the run's next requests are worth loading for now (`warm_up`)."""
    # The protocol owns the real stdout; anything else that prints (a library,
    # a stray debug line) goes to stderr instead of corrupting a frame.
    proto_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    state: dict[str, Any] = {"dispatch": None}
    server: RpcServer

    def on_initialize(raw: Any) -> Any:
        ctx = Context.from_initialize(raw, server.notify)
        ctx.on_block_rendered = block_keeper(ctx.root)
        state["dispatch"] = make_dispatch(ctx)
        return capabilities(ctx.ignored_options)

    def dispatch(method: str, raw: Any, cancel: Cancel) -> Any:
        return state["dispatch"](method, raw, cancel)

    server = RpcServer(0, proto_out, dispatch, on_initialize=on_initialize, is_request_method=m.is_request_method)
    server.resume(pending, initialized_by, shutdown)
    if warm and server.lifecycle.live and state["dispatch"] is not None:
        warm_up(dispatch)
    # Everything imported so far lives as long as the process: move it out of
    # the cyclic collector's sight, so a full collection while serving walks
    # only what requests allocate (a latency spike otherwise) ...
    gc.freeze()
    code = server.serve()
    # ... and again on the way out: the interpreter's teardown runs full
    # collections over every tracked object, a large share of a short-lived
    # sidecar's life, to find garbage the process exit frees anyway.
    # Finalizers, atexit and flushing still run as usual.
    gc.freeze()
    return code
