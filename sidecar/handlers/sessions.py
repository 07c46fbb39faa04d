"""Handing finished work to the background passes: a run's transcript at
its end, a resolved draft, a folder of another agent's sessions, and the
standing trust list (whose widening may make held-back sessions learnable).
Each queues in the store's inbox and starts the reflect pass the queue
needs."""

from __future__ import annotations

from pathlib import Path

import msgspec

from mecha.core.agents import importing
from mecha.core.agents.retrust import reclassify
from mecha.core.domain.reflexion import Origin
from mecha.core.environment import trust as standing
from mecha.core.environment.agents import NAMES
from mecha.core.environment.trust import policy_with
from mecha.core.errors import InvalidInput
from mecha.core.identity import now, validate_record_id
from mecha.core.learning.holdout import in_holdout, keep_transcript
from mecha.core.learning.record import harness_start
from mecha.core.learning.scope import resolve_project
from mecha.core.sessions.survey import survey_draft
from mecha.core.sessions.trust import TrustAction, unknown_summary
from mecha.core.store.inbox import DraftEntry, HandOver, PassAfter, hand_over, pass_after_queue, session_entry
from mecha.protocol import methods as m

from .. import jobs as background
from ..context import Context
from ..hookrun import resume_lost_ends
from ..rpc import Cancel


def session_ended(
    ctx: Context, p: m.SessionEndedParams, cancel: Cancel, *, start_pass: bool = True
) -> m.SessionEndedResult:
    """Survey a finished run's transcript and, when it holds interventions
    and is not mined yet, queue what the survey found (the pass reflects on
    exactly that) and start a reflect pass. `start_pass=False` (the CLI handing over a folder
    of sessions, which starts one pass after the last) only queues."""
    validate_record_id(p.session_id, "session_id")
    project = None if p.project is None else resolve_project(p.project)
    entry = session_entry(
        p.session_id, p.messages, p.taint_timeline, interactive=p.interactive, voices=ctx.voices, project=project
    )
    plans = entry.plans or []
    learnable = sum(1 for plan in plans if plan.origin is Origin.CLEAN)
    store = ctx.store()
    if p.rule_ids is not None:
        store.append_session_start(harness_start(store, p.session_id, project, p.rule_ids, now()))
    if not plans:
        if p.session_id in store.mined_sessions():
            return m.SessionEndedResult(interventions=0, learnable=0, already_mined=True, job=None)
        # Nothing to queue from this run; but work a failed pass left waiting
        # is picked up at the next run's end rather than waiting for one
        # that has interventions of its own.
        job = pass_after_queue(store, False, lambda: background.start_pass(ctx, "reflect")).job if start_pass else None
        return m.SessionEndedResult(interventions=0, learnable=0, already_mined=False, job=job)
    if learnable and in_holdout(p.session_id) and p.session_id not in store.mined_sessions():
        # Kept so `validate` can replay it (`core.learning.holdout`).
        kept = keep_transcript(store.root, p.session_id, p.messages, p.taint_timeline, interactive=p.interactive)
        entry = msgspec.structs.replace(entry, file=str(kept))
    done, job = hand_over(store, entry, (lambda: background.start_pass(ctx, "reflect", session_id=p.session_id)) if start_pass else None)
    return m.SessionEndedResult(
        interventions=len(plans),
        learnable=learnable,
        already_mined=done is HandOver.MINED,
        job=job,
        already_queued=done is HandOver.WAITING,
    )


def draft_resolved(ctx: Context, p: m.DraftResolvedParams, cancel: Cancel) -> m.DraftResolvedResult:
    validate_record_id(p.item.id, "item.id")
    if p.item.session_id is not None:
        validate_record_id(p.item.session_id, "item.session_id")
    plan = survey_draft(p.item)
    store = ctx.store()
    intervention = plan.intervention if plan else None
    if plan is None:
        if p.item.id in store.mined_outbox():
            return m.DraftResolvedResult(intervention=None, already_mined=True, job=None)
        return m.DraftResolvedResult(intervention=None, already_mined=False, job=None)
    done, job = hand_over(store, DraftEntry(p.item, plan), lambda: background.start_pass(ctx, "reflect", session_id=p.item.session_id))
    return m.DraftResolvedResult(
        intervention=intervention, already_mined=done is HandOver.MINED, job=job, already_queued=done is HandOver.WAITING
    )


def import_sessions(ctx: Context, p: m.ImportSessionsParams, cancel: Cancel) -> m.ImportSessionsResult:
    if not p.dry_run:
        resume_lost_ends(str(ctx.root))
    mining = ctx.with_voices(p.source, extra=p.voices)
    root = Path(p.dir) if p.dir is not None else importing.DEFAULT_DIRS[p.source].expanduser()
    since = importing.parse_since(p.since) if p.since else None
    if not root.exists():
        importing.find_session_files(root, p.source)  # says so, before a store is made
    store = mining.store()
    report = importing.import_sessions(
        store, p.source, root, voices=mining.voices, policy=policy_with(p.source, p.trust_tools, p.distrust_tools),
        trust=p.trust_tools, distrust=p.distrust_tools,
        since=since, project=p.project, dry_run=p.dry_run,
    )
    after = (
        PassAfter(None, in_flight=False)
        if p.dry_run
        else pass_after_queue(store, bool(report.queued), lambda: background.start_pass(mining, "reflect"))
    )
    sessions = [
        m.ImportedSession(
            path=plan.path, session_id=plan.session_id, project=plan.project, found=plan.found, new=len(plan.fresh),
            counts=plan.counts(), held=plan.held, skipped_lines=plan.skipped_lines, held_back=plan.held_back,
        )
        for plan in report.sessions
    ]
    return m.ImportSessionsResult(
        source=report.source, root=report.root, sessions=sessions, unchanged=report.unchanged, filtered=report.filtered,
        skipped=report.skipped, skipped_lines=report.skipped_lines, queued=report.queued, dry_run=report.dry_run,
        warnings=report.warnings, job=after.job, in_flight=after.in_flight,
        unknown=unknown_summary((plan.blockers, plan.frees) for plan in report.sessions), merged=report.merged,
    )


def trust(ctx: Context, p: m.TrustParams, cancel: Cancel) -> m.TrustResult:
    reclassified = None
    job = None
    if p.action is TrustAction.LIST:
        if p.entries:
            raise InvalidInput("trust list takes no entries")
        kept = standing.load_trust()
    elif not p.entries:
        raise InvalidInput(f"trust {p.action.value} needs at least one entry: Bash(bd), Bash(git fetch) or mcp__notes__read")
    elif p.action is TrustAction.REMOVE:
        kept = standing.remove_trust(p.entries)
    else:
        kept = standing.add_trust(p.entries)
        mining = ctx.with_voices(*NAMES)
        store = mining.store()
        reclassified = reclassify(store, kept, voices=mining.voices)
        if reclassified.queued:
            job = background.start_pass(mining, "reflect")
    return m.TrustResult(
        path=kept.path or "", entries=list(kept.entries), reclassified=reclassified, job=job,
        ignored=[f"{raw}: {why}" for raw, why in kept.ignored],
    )
