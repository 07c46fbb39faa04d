"""Work waiting for a pass, or set aside by one: `inbox list|retry|drop`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

from .output import emit, finish_job


def inbox(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane
    from ..handlers import call

    if args.action == "list":
        result = call(ctx, "mecha/inbox", {})
        emit(args, result, humane.inbox)
        return 0
    if not args.id and args.action == "retry":
        result = call(ctx, "mecha/inboxRetry", {})
        if result["job"] is None:
            emit(args, result, "nothing waits in the inbox; a set-aside entry is retried by its id "
                  "(`mecha-sidecar inbox list` shows them)")
            return 0
        return finish_job(ctx, args, result["job"], args.no_wait)
    if not args.id:
        raise ValueError(f"inbox {args.action} needs the id of a set-aside entry (see `mecha-sidecar inbox list`)")
    if args.action == "drop":
        result = call(ctx, "mecha/inboxDrop", {"id": args.id})
        emit(args, result, lambda r: f"dropped {humane.set_aside_line(r['entry'])}")
        return 0
    result = call(ctx, "mecha/inboxRetry", {"id": args.id})
    if not args.json:
        print(f"back in the inbox: {humane.set_aside_line(result['entry'])}")
    return finish_job(ctx, args, result["job"], args.no_wait)
