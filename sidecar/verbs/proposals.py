"""Proposals: `proposals list|show|accept|reject` and `retire`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

from .output import emit


def proposals(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane
    from ..handlers import call

    if args.action == "list":
        result = call(ctx, "mecha/proposals", {"status": args.status, "domain": args.domain})
        emit(args, result, humane.proposals)
        return 0
    if not args.id:
        pending = call(ctx, "mecha/proposals", {"status": "pending", "domain": args.domain})["proposals"]
        ids = ", ".join(q["id"] for q in pending[:5]) + (", …" if len(pending) > 5 else "")
        waiting = f"pending now: {ids}" if pending else "none is pending (`mecha-sidecar learn` files one)"
        raise ValueError(f"proposals {args.action} needs a proposal id (or a unique prefix); {waiting}")
    if args.action == "show":
        result = call(ctx, "mecha/proposal", {"id": args.id})
        emit(args, result, humane.proposal_with_diff)
        return 0
    if args.action == "accept":
        params = {
            "id": args.id, "as_global": args.as_global, "without": args.without, "wrong": args.wrong,
            "edit": edits(args.edit), "reason": args.reason,
        }
        result = call(ctx, "mecha/acceptProposal", params)
        emit(args, result, humane.accepted)
        for export in result.get("exports", []):
            if export.get("error"):
                print(f"mecha-sidecar: warning: the accept stands, but the export failed: {export['error']}", file=sys.stderr)
        return 0
    result = call(ctx, "mecha/rejectProposal", {"id": args.id, "reason": args.reason, "wrong": args.wrong})
    emit(args, result, humane.rejected)
    return 0


def retire(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane
    from ..handlers import call

    params = {"domain": args.domain, "rule_id": args.rule_id, "reason": args.reason}
    result = call(ctx, "mecha/proposeRetirement", params)
    emit(args, result, lambda r: humane.proposal_line(r["proposal"]))
    return 0


def edits(pairs: list[list[str]]) -> list[dict[str, object]]:
    """`--edit N TEXT` pairs as the wire's `edit` (`EditedRule`s)."""
    out: list[dict[str, object]] = []
    for number, text in pairs:
        if not number.isdigit():
            raise ValueError(f"--edit: {number!r} is not a change number; say `--edit N \"the rule in your words\"`")
        out.append({"number": int(number), "text": text})
    return out
