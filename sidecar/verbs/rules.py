"""The rules block a run would get: `block`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

from .output import emit


def block(ctx: Any, args: argparse.Namespace) -> int:
    import os

    from .. import humane
    from ..handlers import call

    project = os.path.abspath(args.project if args.project is not None else os.getcwd())
    result = call(ctx, "mecha/rulesPromptBlock", {"domain": args.domain, "project": project})
    emit(args, result, humane.block)
    return 0
