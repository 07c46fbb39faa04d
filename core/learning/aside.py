"""Lessons seen, no rule yet: what a learn pass stops re-reading.

Since an accept consumes only the lessons its rules cite, a lesson no rule
ever cites would stay in the pool for good, shown to every learn pass of
its scope, crowding the batch and costing every call its words. The
learner is the judge of whether a lesson makes a rule, and three passes
that saw it and made nothing of it are its answer for now: the lesson is
set aside as "seen, no rule yet" (`SEEN_WITHOUT_RULE`).

Set aside, not thrown away. It comes back to the pool when a newer lesson
of its domain and scope shares its subject (`sense.subject_refusal`, with
the store's lessons weighing the words): a second moment about the same
thing is what a doubtful lesson was waiting for, and the learner is told
to let a doubtful lesson add weight to a rule a sure one supports. The
`lessons` listing shows each set-aside lesson and how many passes saw it.

Counted from `runs.jsonl`: each learn pass records the lessons it showed
the learner (`LeapRun.shown`) and those the answer cited (`LeapRun.cited`,
accepted by the gate or not — the learner made something of them). Runs
recorded before those fields existed count for nothing, so no lesson is set
aside on old evidence. Pure: every function takes what it reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from mecha.core.domain.reflexion import Reflexion
from mecha.core.learning.sense import Rarity, shared_subject
from mecha.core.store.ledger import LeapRun

#: Passes that showed a lesson to the learner without it citing it, after
#: which the lesson is set aside. Three: one pass may miss a lesson in a
#: long batch, two may have had better lessons to merge; by three the
#: learner has said the lesson does not make a rule on its own.
SEEN_WITHOUT_RULE = 3


def passes_without_rule(r: Reflexion, runs: Sequence[LeapRun]) -> list[LeapRun]:
    """The learn passes of `r`'s domain and scope that showed `r` to the
    learner and whose answer did not cite it, oldest first."""
    return [
        run for run in runs
        if run.domain == r.domain and run.project == r.project and r.id in run.shown and r.id not in run.cited
    ]


def set_aside(pool: Sequence[Reflexion], runs: Sequence[LeapRun], rarity: Rarity | None = None) -> dict[str, int]:
    """The lessons of `pool` set aside, each with how many passes saw it
    without a rule: those seen `SEEN_WITHOUT_RULE` times or more, unless a
    lesson of the pool that none of those passes showed (a newer one)
    shares its subject. `rarity` weighs the shared words (the store's
    lessons); without it any shared topic word counts."""
    out: dict[str, int] = {}
    for r in pool:
        seen = passes_without_rule(r, runs)
        if len(seen) < SEEN_WITHOUT_RULE:
            continue
        shown_then = {i for run in seen for i in run.shown}
        newer = [o.reflexion_text for o in pool if o.id not in shown_then and o.id != r.id]
        rare, common = shared_subject(r.reflexion_text, newer, rarity) if newer else (set(), set())
        if rare or len(common) >= 2:
            continue
        out[r.id] = len(seen)
    return out


def aside_note(times: int) -> str:
    """How the `lessons` listing says a lesson is set aside."""
    return (
        f"seen, no rule yet: {times} learn passes saw it and made no rule of it; it returns to the pool "
        "when a newer lesson shares its subject"
    )
