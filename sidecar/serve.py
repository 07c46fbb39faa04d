"""`mecha-sidecar` / `mecha-sidecar serve`: the harness endpoint on stdio."""

from __future__ import annotations

import os
import sys
from typing import Any

import msgspec

from mecha.protocol import methods as m
from mecha.protocol.errors import INVALID_PARAMS, RpcError

from .context import Context, InitializeParams
from .handlers import make_dispatch
from .rpc import Cancel, RpcServer

SERVER_NAME = "mecha-sidecar"


def server_version() -> str:
    try:
        from importlib.metadata import version

        return version("mecha-sidecar")
    except Exception:  # pragma: no cover - not installed as a distribution
        return "0"


def capabilities() -> dict[str, Any]:
    """What `initialize` answers: no LSP document features on this endpoint,
    and the `mecha/*` methods it serves under `experimental`."""
    return {
        "capabilities": {
            "experimental": {
                "mecha": {
                    "methods": sorted(n for n, spec in m.METHODS.items() if not spec.notification),
                    "notifications": sorted(n for n, spec in m.METHODS.items() if spec.notification),
                }
            }
        },
        "serverInfo": {"name": SERVER_NAME, "version": server_version()},
    }


def serve_stdio() -> int:
    # The protocol owns the real stdout; anything else that prints (a library,
    # a stray debug line) goes to stderr instead of corrupting a frame.
    proto_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    state: dict[str, Any] = {"dispatch": None}
    server: RpcServer

    def on_initialize(raw: Any) -> Any:
        try:
            params = msgspec.json.decode(raw or b"{}", type=InitializeParams)
        except msgspec.ValidationError as exc:
            raise RpcError(INVALID_PARAMS, f"invalid params: {exc}") from None
        ctx = Context.from_options(params.initialization_options)
        ctx.notify = server.notify

        def started(job: Any, proc: Any) -> None:
            from .jobs import watch

            watch(proc, job, ctx.root, lambda final: server.notify("mecha/jobFinished", m.JobFinishedParams(job=final)))

        ctx.on_job_started = started
        state["dispatch"] = make_dispatch(ctx)
        return capabilities()

    def dispatch(method: str, raw: Any, cancel: Cancel) -> Any:
        return state["dispatch"](method, raw, cancel)

    def is_request_method(method: str) -> bool:
        spec = m.METHODS.get(method)
        return spec is not None and not spec.notification

    server = RpcServer(0, proto_out, dispatch, on_initialize=on_initialize, is_request_method=is_request_method)
    return server.serve()
