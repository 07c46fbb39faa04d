"""JSON read and written with the `json` package's C parts alone.

The hooks an agent runs at every session start and end pay for each module
they import, and `import json` is the dearest of the standard library's
small ones: its decoder compiles regular expressions (`re`, and `enum`
with it), about as much again as the rest of a session-end hook beyond a
bare interpreter. What they read and write is a few hundred bytes of plain
JSON, which the package's own C scanner and string quoter (`_json`) read
and write the same way without it. So the hooks' modules (`agents.notice`,
`agents.started`, `agents.hookqueue`) use this one reader and writer, and
nothing else of the project needs to.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["dumps_flat", "loads", "quote", "scan"]

try:
    from _json import encode_basestring_ascii as quote
    from _json import make_scanner as _make_scanner
except ImportError:  # pragma: no cover - an interpreter without the accelerator
    from json.encoder import encode_basestring_ascii as quote
    from json.scanner import make_scanner as _make_scanner

#: What JSON counts as whitespace around a value.
_SPACE = " \t\n\r"


def _constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


class _Settings:
    """The settings `json.loads` gives its scanner (read by attribute),
    but `NaN` and `Infinity`, which are not JSON, refused."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_constant)
    memo: dict[str, str] = {}


#: `scan(text, index)` → `(value, end)`: `StopIteration` where no value
#: starts at `index`.
scan = _make_scanner(_Settings())  # type: ignore[arg-type]  # the scanner reads only these attributes


def loads(text: str) -> object:
    """`text` as one JSON value, whitespace around it allowed; `ValueError`
    for anything else (or `RecursionError`, nested past the interpreter's
    depth)."""
    text = text.strip(_SPACE)
    try:
        value, end = scan(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


def dumps_flat(obj: Mapping[str, object]) -> str:
    """A JSON object of strings and nulls, ASCII only, with no space in
    it but inside its strings: what `json.dumps(obj, ensure_ascii=True,
    separators=(",", ":"))` writes. `TypeError` for any other value."""
    return "{" + ",".join(f"{quote(k)}:{_flat(v)}" for k, v in obj.items()) + "}"


def _flat(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return quote(value)
    raise TypeError(f"dumps_flat writes strings and nulls, not {type(value).__name__}")
