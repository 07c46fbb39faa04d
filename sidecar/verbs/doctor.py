"""`doctor`: what is set up here and what is missing; it fails (exit 1)
when a check does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .output import emit

if TYPE_CHECKING:
    import argparse


def doctor(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane
    from ..handlers import call

    result = call(ctx, "mecha/doctor", {})
    emit(args, result, humane.doctor)
    return 0 if all(c["ok"] for c in result["checks"]) else 1
