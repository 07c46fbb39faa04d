"""The passes: `learn`, `validate` (its plan, then the pass) and `jobs`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

from .output import emit, finish_job


def learn(ctx: Any, args: argparse.Namespace) -> int:
    from ..handlers import call

    params: dict[str, Any] = {"domain": args.domain}
    if args.min is not None:
        params["min"] = args.min
    if args.retry:
        params["retry"] = True
    if args.project is not None:
        import os

        params["project"] = os.path.abspath(args.project)
    result = call(ctx, "mecha/learn", params)
    if result.get("job") is None:
        emit(args, result, lambda r: f"nothing started: {r.get('reason')}")
        return 0
    return finish_job(ctx, args, result["job"], args.no_wait)


def validate(ctx: Any, args: argparse.Namespace) -> int:
    """The plan first (its cost), then the pass, waited on unless
    `--no-wait`; a dry run or a plan with no probe prints the plan alone."""
    from .. import humane
    from ..handlers import call

    params = {"domain": args.domain, "budget": args.budget, "proposal_id": args.proposal, "dry_run": args.dry_run}
    result = call(ctx, "mecha/validate", params)
    if result.get("job") is None:
        emit(args, result, humane.validate_plan)
        return 0
    if not args.json:
        sys.stdout.write(humane.validate_plan(result) + "\n")
    return finish_job(ctx, args, result["job"], args.no_wait, quiet_start=True, extra={"plan": result["plan"]})


def jobs(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane
    from ..handlers import call

    emit(args, call(ctx, "mecha/jobs", {}), humane.jobs)
    return 0
