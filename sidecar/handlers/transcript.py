"""Pure readings of a transcript: its interventions, where a follow-up
sits, the live affect and the end-of-session appraisal. Nothing here reads
or writes the store."""

from __future__ import annotations

from typing import Any

from mecha.core.errors import InvalidInput
from mecha.core.gate.appraisal import appraisal_to_builtins
from mecha.core.gate.assembler import Probe, ProbeAt, appraise_session, live
from mecha.core.gate.goal import parse_goal
from mecha.core.identity import now
from mecha.core.sessions.mining import extract_interventions, locate_followup
from mecha.protocol import methods as m

from ..context import Context
from ..rpc import Cancel


def extract(ctx: Context, p: m.ExtractInterventionsParams, cancel: Cancel) -> m.ExtractInterventionsResult:
    cancel.check()
    return m.ExtractInterventionsResult(interventions=extract_interventions(p.messages, ctx.voices))


def locate(ctx: Context, p: m.LocateFollowupParams, cancel: Cancel) -> m.LocateFollowupResult:
    return m.LocateFollowupResult(index=locate_followup(p.messages, p.text))


def live_affect(ctx: Context, p: m.LiveAffectParams, cancel: Cancel) -> m.LiveAffectResult:
    if p.run_started_at < 0:
        raise InvalidInput("run_started_at: must be a message index (>= 0)")
    affect = live(p.session_id, p.stats, p.messages, p.run_started_at, voices=ctx.voices)
    return m.LiveAffectResult(affect=affect.wire())


def appraise(ctx: Context, p: m.AppraiseSessionParams, cancel: Cancel) -> Any:
    goal = parse_goal(p.goal) if p.goal is not None else None
    appraisal = appraise_session(
        p.session_id,
        p.stats,
        p.messages,
        created_at=now(),
        drafts=p.drafts,
        goal=goal,
        taint_timeline=p.taint_timeline,
        probes=[ProbeAt(at=q.at, verdict=Probe(q.verdict)) for q in p.probes],
        voices=ctx.voices,
    )
    return appraisal_to_builtins(appraisal)
