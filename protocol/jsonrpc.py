"""The JSON-RPC 2.0 envelope.

Incoming messages are decoded in two steps so the hot path stays typed and
cheap: the envelope first, with `params` kept as raw bytes (`msgspec.Raw`),
then the params straight from those bytes into the method's Struct. Nothing is
built as a dict and converted afterwards.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from .errors import INVALID_REQUEST, PARSE_ERROR, RpcError

Id = int | str | None


class Incoming(msgspec.Struct, omit_defaults=True):
    """Any message a peer can send: request, notification or response."""

    jsonrpc: str | msgspec.UnsetType = msgspec.UNSET
    id: int | str | None | msgspec.UnsetType = msgspec.UNSET
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET

    @property
    def is_request(self) -> bool:
        return self.id is not msgspec.UNSET and self.method is not msgspec.UNSET

    @property
    def is_notification(self) -> bool:
        return self.id is msgspec.UNSET and self.method is not msgspec.UNSET

    @property
    def method_name(self) -> str:
        """The method a request or notification names (`""` for a response)."""
        return self.method if isinstance(self.method, str) else ""

    @property
    def request_id(self) -> Id:
        """The id a reply carries: a request's own (`None` for a
        notification, or a request that sent `null`)."""
        return None if isinstance(self.id, msgspec.UnsetType) else self.id

    @property
    def is_response(self) -> bool:
        return self.method is msgspec.UNSET and (
            self.result is not msgspec.UNSET or self.error is not msgspec.UNSET
        )


_envelope = msgspec.json.Decoder(Incoming)
_encoder = msgspec.json.Encoder()


def decode_envelope(body: bytes) -> Incoming:
    """The envelope of one frame's body, or an `RpcError` saying what is wrong
    with it: -32700 for bytes that are not JSON (or not UTF-8), -32600 for
    JSON that is not a JSON-RPC 2.0 message."""
    # The envelope keeps `params` raw, so a bad byte inside them would slip
    # past it: check the whole body is UTF-8 first (cheap for ASCII).
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RpcError(PARSE_ERROR, f"invalid UTF-8 at byte {exc.start}: {exc.reason}") from None
    try:
        msg = _envelope.decode(body)
    except RecursionError:
        # msgspec parses (even a skipped or raw member) recursively, to a
        # depth set by the interpreter's recursion limit: deeper input is
        # refused here rather than allowed to unwind the caller.
        raise RpcError(PARSE_ERROR, NESTED_TOO_DEEPLY) from None
    except msgspec.ValidationError as exc:
        # Valid JSON of the wrong shape (an array, a number, `"id": {}`).
        try:
            msgspec.json.decode(body)
        except RecursionError:  # pragma: no cover - the typed decode recursed first
            raise RpcError(PARSE_ERROR, NESTED_TOO_DEEPLY) from None
        except msgspec.DecodeError as not_json:
            # Not JSON at all (`[1, 2`): say that, not the shape it started with.
            raise RpcError(PARSE_ERROR, f"invalid JSON: {not_json}") from None
        raise RpcError(INVALID_REQUEST, f"not a JSON-RPC message: {exc}") from None
    except msgspec.DecodeError as exc:
        if _LONE_SURROGATE.search(body) is not None and _lenient_decode(body) is not None:
            raise RpcError(PARSE_ERROR, LONE_SURROGATE) from None
        raise RpcError(PARSE_ERROR, f"invalid JSON: {exc}") from None
    except UnicodeDecodeError as exc:  # pragma: no cover - msgspec reports it as DecodeError
        raise RpcError(PARSE_ERROR, f"invalid UTF-8: {exc}") from None
    if msg.jsonrpc != "2.0":
        raise RpcError(INVALID_REQUEST, 'missing or wrong "jsonrpc" member: it must be "2.0"')
    if msg.method is msgspec.UNSET and msg.result is msgspec.UNSET and msg.error is msgspec.UNSET:
        raise RpcError(INVALID_REQUEST, 'a message needs a "method" (or a "result"/"error" if it is a response)')
    return msg


def request_id_of(body: bytes) -> Id:
    """Best-effort id of a message whose envelope did not decode, so an error
    can still be matched to its request."""
    try:
        obj = msgspec.json.decode(body)
    except RecursionError:
        # Too deep to parse, but its client still waits on its id.
        return _shallow_id(body)
    except (msgspec.DecodeError, UnicodeDecodeError):
        # JSON that strict decoding refuses only for a lone surrogate escape
        # (`"\ud800"`, half a UTF-16 pair: no character) still has a
        # readable id, and its client waits on it.
        if _LONE_SURROGATE.search(body) is None:
            return None
        obj = _lenient_decode(body)
    if isinstance(obj, dict):
        return _usable_id(obj.get("id"))
    return None


NESTED_TOO_DEEPLY = "invalid JSON: nested too deeply (the limit is about 1000 levels of arrays and objects)"

LONE_SURROGATE = (
    "invalid JSON: a \\uD800-\\uDFFF escape that is not half of a surrogate pair "
    "(a lone surrogate, such as \"\\ud800\") is not a character"
)

#: A `\uD800`–`\uDFFF` escape: half of a UTF-16 surrogate pair.
_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lenient_decode(body: bytes) -> Any:
    """`body` parsed by the standard library, which takes lone surrogates
    (and nothing else strict JSON refuses that matters here), or `None`.
    Only on an error path, so its import costs a good request nothing."""
    import json

    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None

_WS = re.compile(rb"[ \t\r\n]*")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_PLAIN = re.compile(rb'[^"\[\]{},]+')



def _end(pattern: re.Pattern[bytes], body: bytes, i: int) -> int:
    """Where `pattern`, which matches the empty string too, stops at `i`."""
    found = pattern.match(body, i)
    assert found is not None
    return found.end()

def _usable_id(value: Any) -> Id:
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _shallow_id(body: bytes) -> Id:
    """The top-level `"id"` of an object too deeply nested to parse: its
    members are walked at the top level only, nested values skipped by
    counting brackets (outside strings), without recursion."""
    i = _end(_WS, body, 0)
    if body[i : i + 1] != b"{":
        return None
    i += 1
    while True:
        key = _STRING.match(body, _end(_WS, body, i))
        if key is None:
            return None
        i = _end(_WS, body, key.end())
        if body[i : i + 1] != b":":
            return None
        start = i = i + 1
        depth = 0
        while i < len(body):
            c = body[i]
            if c == 0x22:  # a string: skip it whole, brackets inside included
                s = _STRING.match(body, i)
                if s is None:
                    return None
                i = s.end()
            elif c in b"[{":
                depth += 1
                i += 1
            elif c in b"]}" and depth > 0:
                depth -= 1
                i += 1
            elif c in b"]},":
                if depth == 0:
                    break
                i += 1
            else:
                i = _end(_PLAIN, body, i)
        else:
            return None
        if key.group() == b'"id"':
            try:
                return _usable_id(msgspec.json.decode(body[start:i]))
            except (msgspec.DecodeError, RecursionError):
                return None
        if body[i] != 0x2C:  # the object ended without an id
            return None
        i += 1


def encode_result(id: Id, result: Any) -> bytes:
    return _encoder.encode({"jsonrpc": "2.0", "id": id, "result": result})


def encode_error(id: Id, error: RpcError) -> bytes:
    err: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        err["data"] = error.data
    return _encoder.encode({"jsonrpc": "2.0", "id": id, "error": err})


def encode_notification(method: str, params: Any) -> bytes:
    return _encoder.encode({"jsonrpc": "2.0", "method": method, "params": params})
