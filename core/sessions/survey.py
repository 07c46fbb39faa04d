"""What a session holds for the reflect pass: each intervention with what its
reflector may see and how it classifies, surveyed once, when the session is
handed over (or imported), and carried in its inbox entry from then on.

On the sessions floor, under the store: the inbox keeps the survey, so the
survey and the provenance rules it applies (`classify_origin`,
`evidence_for`: what a reflector may see, decided from the recorded taint
alone) sit below the store rather than with the pass that reads it."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from mecha.core.domain.reflexion import Evidence, Origin
from mecha.core.sessions.mining import (
    DEFAULT_VOICES,
    Intervention,
    Voices,
    bound_text,
    context_sources,
    edit_intervention,
    extract_interventions,
)
from mecha.core.sessions.outbox import OutboxItem
from mecha.core.sessions.provenance import WITHHELD_AFTERMATH, WITHHELD_CONTEXT, withheld_assistant_text, written_clean
from mecha.core.sessions.reader import Blame
from mecha.core.sessions.transcript import Message, Taint, TaintCheckpoint, taint_at


def classify_origin(covering: Taint | None) -> Origin:
    """`clean` only when a recorded taint covers the moment and says nothing
    untrusted had entered. Unknown coverage — a torn transcript, or one
    recorded before taint was — fails closed to `untrusted`. Private but
    trusted content is still the person's own conversation."""
    if covering is not None and not covering.untrusted:
        return Origin.CLEAN
    return Origin.UNTRUSTED


def evidence_for(covering: Taint | None, *, interactive: bool = True) -> tuple[Evidence, Origin]:
    """What the reflector may see for one intervention, and how the resulting
    reflection classifies.

    A non-interactive session classifies `derived` whatever its taint. Only a
    `clean` origin earns `full` evidence; everything else is shown the
    person's words alone.
    """
    origin = classify_origin(covering) if interactive else Origin.DERIVED
    evidence = Evidence.FULL if origin is Origin.CLEAN else Evidence.INTERVENTION_ONLY
    return evidence, origin


class Planned(msgspec.Struct):
    """One intervention with what its reflector may see and how it classifies."""

    intervention: Intervention
    evidence: Evidence
    origin: Origin
    #: For an imported session: the file line of the message the
    #: intervention rides in (`intervention.at`).
    line: int | None = None
    #: For an untrusted intervention of an imported session: the first call
    #: that made it so (`reader.first_blame`).
    held_by: Blame | None = None
    #: For an imported session: when the file dates the message the
    #: intervention rides in (`ReadSession.times`); what a repeat of a live
    #: rule is dated by. `None` where the file gives no time, and for a
    #: session the harness handed over (its messages carry none).
    said_at: str | None = None


def survey_session(
    messages: Sequence[Message],
    taint_timeline: Sequence[TaintCheckpoint] | None,
    *,
    interactive: bool = True,
    voices: Voices = DEFAULT_VOICES,
) -> list[Planned]:
    """Every intervention in a transcript, classified by the taint in
    context at the message it rides in (`taint_at`: no coverage →
    untrusted; a non-interactive session → derived), with the assistant's
    text withheld where any of it was written under untrusted taint
    (`withheld_assistant_text`, and every message the context quotes)."""
    timeline = list(taint_timeline) if taint_timeline else None
    planned = []
    for i in extract_interventions(messages, voices):
        # The person's words are bounded on the learning path (the harness's
        # `extractInterventions` still sees them whole).
        i.text = bound_text(i.text)
        evidence, origin = evidence_for(taint_at(timeline, i.at), interactive=interactive)
        if evidence is Evidence.FULL:
            hide_context, hide_aftermath = withheld_assistant_text(messages, timeline, i)
            # A steer's or a denial's context may quote several messages of
            # the turn (`evidence.gather_context`): any one written under
            # untrusted taint withholds it.
            hide_context = hide_context or any(not written_clean(timeline, j) for j in context_sources(messages, i))
            if hide_context and i.context:
                i.context = WITHHELD_CONTEXT
            if hide_aftermath and i.aftermath:
                i.aftermath = WITHHELD_AFTERMATH
        planned.append(Planned(i, evidence, origin))
    return planned


def survey_draft(item: OutboxItem) -> Planned | None:
    """A sent-and-edited draft as an `edit` intervention, classified by the
    taint recorded on the item when it was staged."""
    i = edit_intervention(item)
    if i is None:
        return None
    evidence, origin = evidence_for(item.taint)
    return Planned(i, evidence, origin)
