"""Which of the assistant's own words an intervention's reflector may see.

An intervention shown with full evidence (it rides in a clean moment) is
reflected on with two pieces of the assistant's text beside the person's
words: its *context* (what the assistant was doing just before) and its
*aftermath* (what it said next). Either may have been written while a
stranger's text was in the model's context — before a context reset, or
between the intervention and the reply — and may quote that text. Such
assistant text is withheld, whatever a later checkpoint says; the person's
words are always shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from mecha.core.sessions.mining import Intervention, context_source
from mecha.core.sessions.transcript import Message, TaintCheckpoint, taint_at

#: Shown in place of a context the assistant wrote under untrusted taint.
WITHHELD_CONTEXT = "(withheld: the assistant wrote this while third-party content was in its context)"

#: Shown in place of an aftermath written after third-party content arrived.
WITHHELD_AFTERMATH = "(withheld: third-party content entered the conversation before the assistant's next reply)"


def written_clean(timeline: list[TaintCheckpoint] | None, index: int) -> bool:
    """Whether message `index` was written with nothing untrusted in the
    model's context (`taint_at`; no coverage is not clean)."""
    taint = taint_at(timeline, index)
    return taint is not None and not taint.untrusted


def withheld_assistant_text(
    messages: Sequence[Message], timeline: list[TaintCheckpoint] | None, intervention: Intervention
) -> tuple[bool, bool]:
    """`(withhold the context, withhold the aftermath)` for an intervention
    its reflector sees in full.

    The context is withheld when the assistant message it was read from was
    written under untrusted taint — a context reset since does not make
    those words the assistant's own. The aftermath is withheld unless every
    message from the intervention up to the reply it is read from was
    clean: that reply may come after tool calls whose results brought a
    stranger's text in, and may quote it.
    """
    source = context_source(messages, intervention)
    hide_context = source is not None and not written_clean(timeline, source)
    hide_aftermath = False
    for j in range(intervention.at + 1, len(messages)):
        if not written_clean(timeline, j):
            hide_aftermath = True
            break
        if messages[j].role == "assistant" and messages[j].text().strip():
            break
    return hide_context, hide_aftermath
