"""Timestamps and minted ids, in one place so every record agrees on format.

Timestamps are RFC 3339 UTC with a `Z` and microseconds, which sort as
strings (the ledger's `last_validated` and proposal ordering rely on that).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from mecha.core.errors import Ambiguous, InvalidInput, NotFound

#: Longest session or draft id a client may send. Ids are recorded one per
#: line in the store's ledgers and named in commit messages; real ones
#: (UUIDs, timestamps) are a few dozen characters.
MAX_RECORD_ID = 256


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S")


def _hex(n: int) -> str:
    # What `secrets.token_hex` does, without importing `secrets` (and with it
    # hashlib, hmac and random) into every process that merely reads ids.
    return os.urandom((n + 1) // 2).hex()[:n]


def mint_rule_id() -> str:
    """`r-YYYYMMDD-xxxxxxxx`, the seed's rule id shape."""
    return f"r-{datetime.now(UTC).strftime('%Y%m%d')}-{_hex(8)}"


def mint_reflexion_id() -> str:
    return f"{_stamp()}-{_hex(8)}"


def mint_proposal_id() -> str:
    """Sortable by creation time: proposals list oldest first by id."""
    return f"{_stamp()}-{_hex(8)}"


def mint_run_id() -> str:
    return f"run-{_stamp()}-{_hex(8)}"


def mint_job_id(kind: str) -> str:
    return f"{_stamp()}-{kind}-{_hex(6)}-{os.getpid()}"


def record_id_problem(value: str) -> str | None:
    """Why `value` cannot be a session or draft id, or `None` if it can.

    An id is a non-empty string of at most `MAX_RECORD_ID` printable
    characters (`str.isprintable`: no control, format or line-separator
    character; a plain space is printable) with no whitespace at either end.

    Why this rule: an id is written as one line of `mined.jsonl` and read
    back by splitting lines and stripping them. An id with a newline (or any
    character a line split breaks on), surrounding spaces or no characters
    at all is never read back as itself, so the session could never be
    recorded mined, and every later pass would call the model for it again.
    """
    if not isinstance(value, str):
        return "must be a string"
    if not value:
        return "must not be empty"
    if len(value) > MAX_RECORD_ID:
        return f"is {len(value)} characters long; an id is at most {MAX_RECORD_ID}"
    if value != value.strip():
        return f"{value[:40]!r} has whitespace at an end; send the id without it"
    if not value.isprintable():
        bad = next(ch for ch in value if not ch.isprintable())
        return f"{value[:40]!r} holds {bad!r} (U+{ord(bad):04X}); an id is one line of printable characters"
    return None


def validate_record_id(value: str, field: str) -> str:
    """`value`, or `InvalidInput` naming `field` (see `record_id_problem`)."""
    problem = record_id_problem(value)
    if problem is not None:
        raise InvalidInput(f"{field}: {problem}")
    return value


_T = TypeVar("_T")


def by_id_or_prefix(records: Sequence[_T], ident: str, id_of: Callable[[_T], str]) -> list[_T]:
    """The records a person's `ident` names: the one whose id it is, else
    every one whose id starts with it (none for an empty `ident`). An exact
    id wins even when it is also a prefix of another, so a full id always
    names one record. The caller says what none or several mean."""
    exact = [r for r in records if id_of(r) == ident]
    if exact:
        return exact[:1]
    return [r for r in records if id_of(r).startswith(ident)] if ident else []


def one_by_id_or_prefix(records: Sequence[_T], ident: str, id_of: Callable[[_T], str], *, plural: str, missing: str) -> _T:
    """The one record a person's `ident` names (`by_id_or_prefix`). None is
    `NotFound` with the `missing` message; several are `Ambiguous`, listing
    them as `plural` (`"proposals"`) — a guess would act on the wrong one."""
    matches = by_id_or_prefix(records, ident, id_of)
    if not matches:
        raise NotFound(missing)
    if len(matches) > 1:
        ids = [id_of(r) for r in matches]
        raise Ambiguous(f"`{ident}` matches {len(ids)} {plural}: {', '.join(ids)}", ids)
    return matches[0]
