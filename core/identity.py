"""Timestamps and minted ids, in one place so every record agrees on format.

Timestamps are RFC 3339 UTC with a `Z` and microseconds, which sort as
strings (the ledger's `last_validated` and proposal ordering rely on that).
"""

from __future__ import annotations

import os
from datetime import datetime, timezone


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")


def _hex(n: int) -> str:
    # What `secrets.token_hex` does, without importing `secrets` (and with it
    # hashlib, hmac and random) into every process that merely reads ids.
    return os.urandom((n + 1) // 2).hex()[:n]


def mint_rule_id() -> str:
    """`r-YYYYMMDD-xxxxxxxx`, the seed's rule id shape."""
    return f"r-{datetime.now(timezone.utc).strftime('%Y%m%d')}-{_hex(8)}"


def mint_reflexion_id() -> str:
    return f"{_stamp()}-{_hex(8)}"


def mint_proposal_id() -> str:
    """Sortable by creation time: proposals list oldest first by id."""
    return f"{_stamp()}-{_hex(8)}"


def mint_run_id() -> str:
    return f"run-{_stamp()}-{_hex(8)}"


def mint_job_id(kind: str) -> str:
    return f"{_stamp()}-{kind}-{_hex(6)}-{os.getpid()}"
