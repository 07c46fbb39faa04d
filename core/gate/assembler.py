"""The assembler: an appraisal of one run from records that already exist
(run counters, interventions mined from the transcript, drafts and their
outcomes, the taint timeline), and what a counterfactual probe buys.

## What the seed (`appraisal.rs`) referred to, and what stands in for it here

- `crate::session::Transcript` → the `messages`, `stats` and `taint_timeline`
  arguments of `for_transcript` (and of `appraise_session`).
- `crate::agent::RunOutcome` / `Conversation` → `RunStats` and the message
  list, which is what the harness sends to `mecha/liveAffect`.
- `TodoTool::plan_from_transcript` (the transcript's own `serves:` line) →
  not reproduced: a goal is attributed only when the caller names one.
- `crate::quarantine::QuarantinedPass` → one `CompletionRequest` with a fixed
  system frame, no tools and no history (`core/providers/base.py`).
- `crate::text::char_boundary_at_or_before` → unnecessary: Python slices
  strings by code point, so an excerpt cannot split a character.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import assert_never

import msgspec

from mecha.core.errors import InvalidInput
from mecha.core.gate.appraisal import FULL, HALF, Affect, Agency, Appraisal, Channel, Cite, GoalError, affect_of_errors, relabel
from mecha.core.gate.goal import GoalRef
from mecha.core.gate.run import RunStats, StopCause
from mecha.core.identity import now
from mecha.core.sessions.mining import DEFAULT_VOICES, Intervention, Trigger, Voices, extract_interventions
from mecha.core.sessions.outbox import OutboxItem, WritingOutcome
from mecha.core.sessions.survey import classify_origin
from mecha.core.sessions.transcript import Message, Taint, TaintCheckpoint, taint_at

# ─── The assembler: an appraisal from records that already exist ───────────


def stop_cause_reading(cause: StopCause | None) -> tuple[float, Agency] | None:
    """What a run's stop cause says, if anything.

    A loop or a silent stop is this run's own doing. A ceiling is a number
    somebody set — nothing this run could have done otherwise, so `world`.
    Completing is not an error, and neither is a person pressing Ctrl-C: that
    is the system working, and counting it would make an attentive owner look
    like a problem.
    """
    match cause:
        case StopCause.LOOP | StopCause.NO_OUTPUT:
            return -FULL, Agency.OWN
        case StopCause.MAX_TURNS | StopCause.OUTPUT_TOKEN_BUDGET | StopCause.COST_BUDGET:
            return -HALF, Agency.WORLD
        case StopCause.COMPLETED | StopCause.INTERRUPTED | None:
            return None
        case _:
            assert_never(cause)


def boredom_recorded(notices: int | None) -> bool:
    """An approach that stopped teaching the run anything. Absent is not
    zero: a row from before the sensor says nothing either way."""
    return notices is not None and notices > 0


def counter_errors(stats: RunStats, goal: GoalRef | None) -> list[GoalError]:
    """Errors read off the run's own counters — only those whose agency is
    determined.

    A bare `tool_errors` is absent because a failed call may be a wrong
    argument, a broken server or a full disk, and guessing would put an
    invented attribution in the field the label is derived from. `tool_denied`,
    `blocked_sends` and `context_overflows` are absent because they are the
    approver, the interlock and a recovery doing their jobs.
    """

    def counter(sign: float, agency: Agency, name: str) -> GoalError:
        return GoalError(
            goal=goal,
            channel=Channel.COUNTER,
            sign=sign,
            agency=agency,
            visible=False,
            cite=Cite.counter(name),
        )

    errors: list[GoalError] = []
    reading = stop_cause_reading(stats.stop_cause)
    if reading is not None:
        errors.append(counter(*reading, "stop_cause"))
    if stats.ended_on_failed_call:
        # The model stopped with its last call failed and answered as though
        # it had not: the silent failure.
        errors.append(counter(-FULL, Agency.OWN, "ended_on_failed_call"))
    if boredom_recorded(stats.boredom_notices):
        errors.append(counter(-HALF, Agency.OWN, "boredom_notices"))
    return errors


def intervention_counts(i: Intervention) -> bool:
    """Whether an intervention is a signed error. A followup is not: it is any
    later user turn after an answer, mostly just the next question, and there
    is no counterfactual in a later turn. A steer and a denial are the owner
    unambiguously stepping in mid-run."""
    return i.trigger != Trigger.FOLLOWUP


def intervention_errors(
    interventions: Sequence[Intervention], goal: GoalRef | None
) -> list[GoalError]:
    """One `owner` error per steer or denial. `owner`, not `own`: whether the
    work was wrong or the owner changed their mind needs a replay, which is
    what `apply_probe` is allowed to act on."""
    return [
        GoalError(
            goal=goal,
            channel=Channel.INTERVENTION,
            sign=-FULL,
            agency=Agency.OWNER,
            visible=False,
            cite=Cite.turn(i.at),
        )
        for i in interventions
        if intervention_counts(i)
    ]


def draft_reading(item: OutboxItem) -> tuple[float, Agency] | None:
    """What the owner's handling of one draft says, if anything.

    Sent unchanged is the one signal that something went well. Sent edited,
    or a rejected *message*, is the owner correcting the work. A rejected
    publish is bookkeeping, and a pending draft is a queue nobody has reached
    yet — reading silence as either answer would invent a verdict.
    """
    outcome = item.writing_outcome()
    if outcome == WritingOutcome.SENT_UNCHANGED:
        return FULL, Agency.OWN
    if outcome == WritingOutcome.SENT_EDITED:
        return -FULL, Agency.OWNER
    if item.status == "rejected" and item.kind == "message":
        return -FULL, Agency.OWNER
    return None


def draft_exposed(item: OutboxItem) -> bool:
    """Whether mecha's own text reached a third party. An edited send went
    out too, but with the owner's words: their catch is the review working,
    not an exposure."""
    return item.writing_outcome() == WritingOutcome.SENT_UNCHANGED


def draft_errors(drafts: Sequence[OutboxItem], goal: GoalRef | None) -> list[GoalError]:
    errors: list[GoalError] = []
    for item in drafts:
        reading = draft_reading(item)
        if reading is None:
            continue
        sign, agency = reading
        errors.append(
            GoalError(
                goal=goal,
                channel=Channel.EDIT,
                sign=sign,
                agency=agency,
                visible=draft_exposed(item),
                cite=Cite.draft(item.id),
            )
        )
    return errors


def of_session(
    session_id: str,
    stats: RunStats,
    goals: Sequence[GoalRef],
    interventions: Sequence[Intervention],
    drafts: Sequence[OutboxItem],
    end_taint: Taint | None,
    created_at: str,
) -> Appraisal:
    """One session's appraisal, assembled from records that already exist.

    Derived, not stored: every channel is a pure function of the transcript,
    the run's stats and the outbox, so a store would be a second source of
    truth. A *session*, not a run: interventions and drafts carry no run
    index, and a per-run appraisal would have to attribute each to every run.

    `end_taint` is the taint covering the session's last message, from the
    recorded timeline — `None` when it could not be established, which
    classifies `untrusted`. It is never `stats.taint`: that field defaults to
    clean, so an old row would read as provably clean rather than unknown.
    """
    goal = goals[0] if goals else None
    errors = (
        counter_errors(stats, goal)
        + intervention_errors(interventions, goal)
        + draft_errors(drafts, goal)
    )
    return Appraisal(
        id=session_id,
        session_id=session_id,
        goals=list(goals),
        state=stats.homeostat,
        errors=errors,
        label=affect_of_errors(errors),
        origin=classify_origin(end_taint),
        taint=stats.taint,
        created_at=created_at,
    )


class SessionAppraisal(msgspec.Struct, frozen=True):
    """An appraisal and the interventions it was built from, handed back so a
    caller planning probes need not walk the transcript again."""

    appraisal: Appraisal
    interventions: list[Intervention]


def end_taint_of(
    messages: Sequence[Message], timeline: Sequence[TaintCheckpoint] | None
) -> Taint | None:
    """The taint in context at the last message (read with
    `taint_at`: a later checkpoint takes nothing back short of a reset);
    `None` — untrusted — when there is no timeline or nothing covers it."""
    return taint_at(list(timeline) if timeline else None, max(len(messages) - 1, 0))


def for_transcript(
    session_id: str,
    stats: RunStats,
    messages: Sequence[Message],
    *,
    created_at: str,
    drafts: Sequence[OutboxItem] = (),
    goal: GoalRef | None = None,
    taint_timeline: Sequence[TaintCheckpoint] | None = None,
    voices: Voices = DEFAULT_VOICES,
) -> SessionAppraisal:
    """Appraise a recorded session. A goal the caller names is used; without
    one the session appraises goal-less — recorded, never guessed."""
    interventions = extract_interventions(messages, voices)
    appraisal = of_session(
        session_id,
        stats,
        [goal] if goal is not None else [],
        interventions,
        drafts,
        end_taint_of(messages, taint_timeline),
        created_at,
    )
    return SessionAppraisal(appraisal=appraisal, interventions=interventions)


def run_was_compacted(stats: RunStats) -> bool:
    """A mid-run compaction rewrites the message list in place, so the index
    the run started at no longer names its boundary."""
    return stats.compactions > 0


def interventions_of_run(
    interventions: Sequence[Intervention], run_started_at: int
) -> list[Intervention]:
    """The interventions that happened during this run. Filtered after
    extraction, not by slicing the messages: mining tracks state from message
    0 (a followup needs to know a task was seen), so narrowing its input could
    misclassify an intervention right at the boundary."""
    return [i for i in interventions if i.at >= run_started_at]


def live(
    session_id: str,
    stats: RunStats,
    messages: Sequence[Message],
    run_started_at: int,
    *,
    voices: Voices = DEFAULT_VOICES,
) -> Affect:
    """The label for a run that just finished — what a status strip or a logo
    tint shows.

    Run-scoped: `messages` is the whole session, so only interventions at or
    after `run_started_at` (the message count before this run's turn) count;
    otherwise one early steer would tint every later clean run.

    A compacted run reads `neutral` outright. Its boundary is lost, and
    dropping only the interventions is not the safe direction it looks like:
    the reduce is magnitude-first, so a steer's -1.0 may have been masking a
    smaller ceiling, and losing it would report a *louder* label than the
    full evidence supports.

    No drafts: an outbox item records times, not a message index, so nothing
    says which run drafted it, and a draft resolved turns earlier must not
    override this run's own outcome. No goal either: nothing here knows one.
    The origin is irrelevant to the label and is left fail-closed.
    """
    if run_was_compacted(stats):
        return Affect.NEUTRAL
    interventions = interventions_of_run(extract_interventions(messages, voices), run_started_at)
    return of_session(session_id, stats, [], interventions, [], None, now()).label


# ─── What a counterfactual probe buys ───────────────────────────────────────


class Probe(str, Enum):
    """What replaying a run without one intervention found."""

    #: Without the steer the run went elsewhere: the steer was load-bearing.
    MATTERED = "mattered"
    #: Without it the run tracked the recording anyway: it changed nothing.
    REDUNDANT = "redundant"
    #: The replay departed before the probe point; the question was never posed.
    INCONCLUSIVE = "inconclusive"


class ProbeAt(msgspec.Struct, frozen=True):
    """A probe's finding about the intervention at message `at` — on the wire
    ``{"at": 4, "verdict": "mattered"}``."""

    at: int
    verdict: Probe


def apply_probe(e: GoalError, probe: Probe) -> GoalError:
    """The intervention error with a probe's finding folded in — the one
    thing allowed to move `agency`, which is what a probe is paid for.

    - mattered: the trajectory was wrong and an alternative existed, so the
      error is the agent's own and controllable — regret.
    - redundant: the run was already going the right way; the owner's step-in
      is still a cost, but nothing the agent could have avoided —
      disappointment.
    - inconclusive: no change; an answer to a question nobody asked is worse
      than none.

    The magnitude is never touched: shrinking a redundant steer's sign would
    need a multiplier nobody has measured, in the field the label reads.
    """
    match probe:
        case Probe.MATTERED:
            return msgspec.structs.replace(e, agency=Agency.OWN, controllable=True)
        case Probe.REDUNDANT:
            return msgspec.structs.replace(e, controllable=False)
        case Probe.INCONCLUSIVE:
            return e
        case _:
            assert_never(probe)


def probes_turn(e: GoalError, at: int) -> bool:
    """Whether a probe at message `at` speaks to `e`: the intervention error
    cited as ``{"kind": "turn", "id": at}``. A negative `at`
    is no message index, so it speaks to nothing."""
    return at >= 0 and e.channel == Channel.INTERVENTION and e.cite == Cite.turn(at)


def apply_probes(a: Appraisal, probes: Sequence[ProbeAt]) -> Appraisal:
    """The appraisal with every probe applied, then relabelled.

    A probe applies to every intervention error at its turn (a denial and a
    steer can share a message; the replay removes both). A probe that names
    no intervention error is refused with `InvalidInput` naming `at` — a
    finding about nothing must not be dropped silently.
    """
    errors = list(a.errors)
    for p in probes:
        hits = [i for i, e in enumerate(errors) if probes_turn(e, p.at)]
        if not hits:
            raise InvalidInput(
                f"probe `at` = {p.at} names no intervention error in this appraisal "
                f'(none is cited as {{"kind": "turn", "id": {p.at}}})'
            )
        for i in hits:
            errors[i] = apply_probe(errors[i], p.verdict)
    return relabel(msgspec.structs.replace(a, errors=errors))


def appraise_session(
    session_id: str,
    stats: RunStats,
    messages: Sequence[Message],
    *,
    created_at: str,
    drafts: Sequence[OutboxItem] = (),
    goal: GoalRef | None = None,
    taint_timeline: Sequence[TaintCheckpoint] | None = None,
    probes: Sequence[ProbeAt] = (),
    voices: Voices = DEFAULT_VOICES,
) -> Appraisal:
    """`mecha/appraiseSession`: the session's appraisal with any probes
    applied and the label re-derived."""
    built = for_transcript(
        session_id,
        stats,
        messages,
        created_at=created_at,
        drafts=drafts,
        goal=goal,
        taint_timeline=taint_timeline,
        voices=voices,
    )
    return apply_probes(built.appraisal, probes)
