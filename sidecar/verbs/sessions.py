"""Handing sessions over: `import`, `reflect --sessions`, and `trust`,
whose widening may make held-back sessions learnable."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

from .output import emit, mining_context, reflect_what_was_queued, report_queued


def import_sessions(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane
    from ..handlers import call

    params = {
        "source": args.source, "dir": None if args.dir is None else str(args.dir), "dry_run": args.dry_run,
        "since": args.since, "project": args.project, "voices": args.voices,
        "trust_tools": args.trust_tool, "distrust_tools": args.distrust_tool,
    }
    result = call(ctx, "mecha/importSessions", params)
    for line in humane.skipped_files(result["skipped"]):
        print(f"mecha-sidecar: warning: {line}", file=sys.stderr)
    for line in result["warnings"]:
        print(f"mecha-sidecar: warning: {line}", file=sys.stderr)
    return report_queued(ctx, args, result, humane.import_summary)


def reflect(ctx: Any, args: argparse.Namespace) -> int:
    """Every transcript file in the folder is read before any is queued; a
    file that is not a session is skipped with a warning naming it, and a
    session already mined — or already waiting in the inbox from a pass that
    failed — is not queued again."""
    from mecha.core.store.inbox import queued_session_ids

    from .. import humane
    from ..handlers.sessions import session_ended
    from ..rpc import Cancel

    directory: Path = args.sessions
    if not directory.is_dir():
        raise ValueError(f"--sessions {directory}: not a directory")
    ctx = mining_context(ctx, args)
    store = ctx.store()
    ready, skipped = _read_folder(directory, store.mined_sessions() | queued_session_ids(store))
    queued: list[str] = []
    empty: list[str] = []
    # Every file is read before any is handed over; each goes the way a
    # harness run's transcript does, and one pass is started after the last.
    for params in ready:
        ended = session_ended(ctx, params, Cancel(), start_pass=False)
        if ended.already_mined:
            skipped.append(params.session_id)
        elif not ended.interventions:
            empty.append(params.session_id)
        else:
            queued.append(params.session_id)
    summary = {"queued": queued, "already_mined": skipped, "no_interventions": empty, "job": None}
    return reflect_what_was_queued(ctx, args, summary, humane.reflect_summary, bool(queued))


def _read_folder(directory: Path, waiting: set[str]) -> tuple[list[Any], list[str]]:
    """Every session file in `directory` read, with the person's standing
    trust: those to hand over, and the ids of those mined or waiting
    already (`waiting`) or read twice. A file that is no session is named
    on stderr and skipped."""
    from mecha.core.environment.trust import load_trust
    from mecha.core.errors import InvalidInput
    from mecha.core.learning.scope import project_of_cwd
    from mecha.core.sessions.foreign import read_session
    from mecha.protocol import methods as m

    ready: list[m.SessionEndedParams] = []
    skipped: list[str] = []
    trust = load_trust()
    for path in sorted(directory.iterdir()):
        if path.suffix not in (".json", ".jsonl") or not path.is_file():
            continue
        try:
            session = read_session(path, trust=trust)
        except InvalidInput as exc:
            print(f"mecha-sidecar: warning: skipped {exc}", file=sys.stderr)
            continue
        if session.session_id in waiting or session.session_id in (s.session_id for s in ready):
            skipped.append(session.session_id)
            continue
        ready.append(m.SessionEndedParams(
            session.session_id, session.messages, session.taint_timeline, session.interactive,
            project=project_of_cwd(session.project),
        ))
    return ready, skipped


def trust(ctx: Any, args: argparse.Namespace) -> int:
    from .. import humane
    from ..handlers import call

    result = call(ctx, "mecha/trust", {"action": args.action, "entries": args.entries})
    emit(args, result, humane.trust)
    return 0
