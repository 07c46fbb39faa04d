"""JSON-RPC error codes and the one mapping from domain failures to them.

Standard JSON-RPC codes, LSP's two, and the project's own, which sit outside
the range JSON-RPC reserves (-32768…-32000) and LSP also draws from.
"""

from __future__ import annotations

from typing import Any

from mecha.core import errors as core_errors

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800

NOT_FOUND = -31001
AMBIGUOUS = -31002
STALE = -31003
INVALID_STORE = -31004
NO_MODEL = -31005
INVALID_DOMAIN = -31006
NOT_PENDING = -31007

#: Project codes by name, as `protocol/README.md` documents them.
PROJECT_CODES: dict[str, int] = {
    "NotFound": NOT_FOUND,
    "Ambiguous": AMBIGUOUS,
    "Stale": STALE,
    "InvalidStore": INVALID_STORE,
    "NoModel": NO_MODEL,
    "InvalidDomain": INVALID_DOMAIN,
    "NotPending": NOT_PENDING,
}

_BY_CLASS: dict[type[BaseException], int] = {
    core_errors.NotFound: NOT_FOUND,
    core_errors.Ambiguous: AMBIGUOUS,
    core_errors.Stale: STALE,
    core_errors.InvalidStore: INVALID_STORE,
    core_errors.NoModel: NO_MODEL,
    core_errors.InvalidDomain: INVALID_DOMAIN,
    core_errors.NotPending: NOT_PENDING,
    core_errors.InvalidInput: INVALID_PARAMS,
}


#: Kinds answered under their family's code with their own `data.name`.
_NAMED_KINDS: tuple[type[BaseException], ...] = (core_errors.StoreFull,)


class RpcError(Exception):
    """An error reply: `code`, `message`, optional `data`."""

    def __init__(self, code: int, message: str, data: object = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def rpc_error_from(exc: BaseException) -> RpcError:
    """The reply for an exception raised while serving a request.

    Domain failures keep their message and get their code; anything else is
    an internal error whose message names the exception type, so a client
    sees *what* failed without a traceback on the wire.
    """
    if isinstance(exc, RpcError):
        return exc
    for cls in type(exc).__mro__:
        code = _BY_CLASS.get(cls)
        if code is not None:
            # A kind with a remedy of its own is named as itself, under its
            # family's code (a full disk is an `InvalidStore` to a client
            # that knows no more).
            named = type(exc) if isinstance(exc, _NAMED_KINDS) else cls
            data: dict[str, Any] = {"name": named.__name__}
            if isinstance(exc, core_errors.Ambiguous):
                data["matches"] = list(exc.matches)
            # An InvalidStore names the file and line, so an editor can place it.
            for attr in ("path", "line"):
                value = getattr(exc, attr, None)
                if value is not None:
                    data[attr] = str(value) if attr == "path" else value
            return RpcError(code, str(exc), data)
    return RpcError(INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")


def code_name(code: int) -> str:
    for name, value in PROJECT_CODES.items():
        if value == code:
            return name
    return {
        PARSE_ERROR: "ParseError",
        INVALID_REQUEST: "InvalidRequest",
        METHOD_NOT_FOUND: "MethodNotFound",
        INVALID_PARAMS: "InvalidParams",
        INTERNAL_ERROR: "InternalError",
        SERVER_NOT_INITIALIZED: "ServerNotInitialized",
        REQUEST_CANCELLED: "RequestCancelled",
    }.get(code, str(code))
