"""The agents' hooks and instructions files: `export` and `hooks`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

from .output import emit


def export(ctx: Any, args: argparse.Namespace) -> int:
    """`mecha/exportRules`: every scope's file, one project's (`--project`)
    or one named file, each told its scope's rules; a file that fails is
    named on stderr, and with several the others are still written."""
    import os

    from .. import humane_agents
    from ..handlers import call

    params = {
        "target": args.target, "path": None if args.file is None else str(args.file), "check": args.check,
        "project": None if args.project is None else os.path.abspath(args.project),
    }
    result = call(ctx, "mecha/exportRules", params)
    for e in result["exports"]:
        if e.get("error"):
            print(f"mecha-sidecar: {e['error']}", file=sys.stderr)
    emit(args, result, humane_agents.exports)
    failed = any(e.get("error") for e in result["exports"])
    return 1 if failed or (args.check and result["changed"]) else 0


def share(ctx: Any, args: argparse.Namespace) -> int:
    """`mecha/shareRules`: the chosen rules into the repository's tracked
    instruction files; the person commits."""
    import os

    from .. import humane_agents
    from ..handlers import call

    params = {"rules": args.rules, "project": None if args.project is None else os.path.abspath(args.project)}
    emit(args, call(ctx, "mecha/shareRules", params), humane_agents.shared)
    return 0


def hooks(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane_agents
    from ..handlers import call

    if args.action == "status":
        result = call(ctx, "mecha/hookStatus", {"agent": args.agent, "scope": args.scope})
        emit(args, result, humane_agents.hooks_status)
        return 0
    if not args.agent:
        raise ValueError(f"hooks {args.action} needs the agent: claude or codex")
    # A store named at install is the one the hooks use, wherever the agent
    # runs them from; else theirs is resolved as every verb's is.
    params = {"agent": args.agent, "scope": args.scope or "user", "uninstall": args.action == "uninstall",
              "pin_store": bool(args.learning_dir)}
    result = call(ctx, "mecha/installHooks", params)
    emit(args, result, humane_agents.hooks_changed)
    return 0
