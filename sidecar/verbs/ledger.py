"""The ledger and the lessons behind the rules: `rules`, `lessons`,
`why` and `tallies`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

from .output import emit


def rules(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane
    from ..handlers import call

    emit(args, call(ctx, "mecha/rules", rules_params(args)), humane.rules)
    return 0


def lessons(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane
    from ..handlers import call

    emit(args, call(ctx, "mecha/lessons", lessons_params(args)), humane.lessons)
    return 0


def why(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane
    from ..handlers import call

    emit(args, call(ctx, "mecha/ruleSources", {"rule_id": args.rule_id}), humane.rule_sources)
    return 0


def tallies(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane
    from ..handlers import call

    emit(args, call(ctx, "mecha/ruleTallies", {"domain": args.domain}), humane.tallies)
    return 0


def rules_params(args: argparse.Namespace) -> dict[str, Any]:
    """The `rules` verb's options as `mecha/rules` params."""
    import os

    params: dict[str, Any] = {}
    if args.domain is not None:
        params["domain"] = args.domain
    if args.global_only:
        params["scope"] = "global"
    elif args.project is not None:
        params["scope"] = os.path.abspath(args.project)
    return params


def lessons_params(args: argparse.Namespace) -> dict[str, Any]:
    """The `lessons` verb's options as `mecha/lessons` params."""
    import os

    params: dict[str, Any] = {"pending": bool(args.pending)}
    for key in ("domain", "trigger", "origin", "limit"):
        if getattr(args, key, None) is not None:
            params[key] = getattr(args, key)
    if args.global_only:
        params["scope"] = "global"
    elif args.project is not None:
        params["scope"] = os.path.abspath(args.project)
    return params
