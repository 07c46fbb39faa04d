"""A pure reading of one session file: `mine`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

from .output import emit, mining_context, policy


def mine(ctx: Any, args: argparse.Namespace) -> int:
    from pathlib import Path

    import msgspec

    from mecha.core.sessions.files import sample_session_path
    from mecha.core.sessions.foreign import read_session

    from .. import humane
    from ..handlers import call

    path = Path(args.file) if args.file else sample_session_path()
    fmt = args.format
    if fmt is None:
        from mecha.core.sessions.foreign import detect_format

        try:
            with path.open("rb") as f:
                fmt = detect_format(f) or "mecha"
        except OSError:
            fmt = "mecha"  # read_session names the error
    session = read_session(path, args.format, policy=policy(args, fmt))
    from mecha.core.sessions.trust import trust_command

    for warning in session.warnings:
        print(f"mecha-sidecar: warning: {warning}", file=sys.stderr)
    if session.skipped_lines:
        print(f"mecha-sidecar: {path}: {session.skipped_lines} line(s) skipped as not records of its format; the rest was read", file=sys.stderr)
    for blame in session.blames:
        # What made the session untrusted from there on: what the person's
        # later words there are held back by.
        offer = trust_command(blame.entry) if blame.entry else None
        trust = f" (to trust it: {offer})" if offer else ""
        print(f"mecha-sidecar: {path}: untrusted from {blame.describe()}{trust}", file=sys.stderr)
    from mecha.core.environment.agents import NAMES

    ctx = mining_context(ctx, args, *((fmt,) if fmt in NAMES else ()))
    result = call(ctx, "mecha/extractInterventions", {"messages": msgspec.to_builtins(session.messages)})
    emit(args, result, humane.interventions)
    return 0
