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
    """`lessons` lists the lessons; `lessons --held` the corrections held
    back; `lessons vouch ID…` vouches for some of them."""
    from .. import humane
    from ..handlers import call

    words = list(getattr(args, "vouch", None) or [])
    if words:
        if words[0] != "vouch":
            raise ValueError(f"lessons: {words[0]!r} is not an action (`lessons vouch ID…` vouches for held corrections)")
        if len(words) < 2:
            raise ValueError("lessons vouch: name at least one held correction by its id (`mecha-sidecar lessons --held` lists them)")
        emit(args, call(ctx, "mecha/vouch", {"ids": words[1:]}), humane.vouched)
    elif getattr(args, "held", False):
        params = {} if args.limit is None else {"limit": args.limit}
        emit(args, call(ctx, "mecha/heldCorrections", params), humane.held)
    else:
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
