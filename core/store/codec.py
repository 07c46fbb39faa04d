"""How the store's records become bytes and back: one JSON encoder, and one
typed decoder per record type, built on first use and kept (building one
inspects the type, and a run's cold path decodes none of these)."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

ENCODER = msgspec.json.Encoder()
_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {}


def decoder(type_: type[T]) -> msgspec.json.Decoder[T]:
    """The typed decoder for `type_`, built on first use and kept."""
    found = _DECODERS.get(type_)
    if found is None:
        found = _DECODERS[type_] = msgspec.json.Decoder(type_)
    return found
