"""The stored lessons as a person reads them, before any proposal.

A reflect pass writes one reflection per intervention into
`reflections.jsonl`, and until a learn pass proposes rules from them nothing
shows a person what was learned — short of opening that file. One stored
lesson in three of a small model's was the prompt's own example, "The user
told it to stop", some of them marked learnable, and nobody could see it.
`list_lessons` is what the `lessons` verb and `mecha/lessons` show: each
lesson with its scope, trigger and origin, whether a learn pass may use it
and, when not, why in words (`why_not_learnable`), and whether its text is
no lesson at all by today's checks (`unusable_because`).

Read-only and lock-free, like every reader of the store.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import msgspec

from mecha.core.domain.reflexion import Evidence, FoundAt, Origin, Reflexion
from mecha.core.learning.aside import aside_note
from mecha.core.learning.reflect import never_asked, was_withheld
from mecha.core.learning.reflection import REFLECTOR_EXAMPLES
from mecha.core.learning.replies import no_lesson_reason
from mecha.core.sessions.mining import Trigger
from mecha.core.store.layout import GLOBAL_SCOPE

#: The scope filter's "every scope" (`list_lessons`).
ALL = "all"


class Lesson(msgspec.Struct, kw_only=True):
    """One stored lesson, as the `lessons` listing shows it."""

    id: str
    domain: str
    #: `global`, or the root of the project the session ran in.
    scope: str
    trigger: str
    origin: Origin
    evidence: Evidence
    #: Whether a learn pass may consume it (`Reflexion.learnable`).
    learnable: bool
    #: Why a learn pass may not use it, in words; `None` when it may.
    not_learnable_because: str | None = None
    #: Set when the stored text is no lesson by today's checks (an echo of
    #: the prompt's own example, a template slot, markup): a person should
    #: see it before a learn pass reads it.
    unusable_because: str | None = None
    #: Whether a resolved proposal has already consumed it.
    processed: bool = False
    #: The person's reason, when they said the lesson is wrong (a rule from
    #: it named wrong in an accept or a rejection).
    rejected: str | None = None
    #: Set when learn passes saw it and made no rule of it, so it waits
    #: out of the pool (`aside.aside_note`); `None` otherwise.
    set_aside: str | None = None
    lesson: str
    #: What the person said or did.
    intervention: str
    session_id: str
    created_at: str
    found: FoundAt | None = None


class LessonCounts(msgspec.Struct, kw_only=True):
    """How many stored lessons the filters matched, by what a learn pass may
    do with them."""

    total: int = 0
    learnable: int = 0
    untrusted: int = 0
    derived: int = 0
    unusable: int = 0
    processed: int = 0
    #: Seen by learn passes with no rule made of them (`Lesson.set_aside`).
    set_aside: int = 0


class LessonsResult(msgspec.Struct):
    """`mecha/lessons`'s result (named in protocol's method table by its
    name, so the harness's cold path never imports the reflector)."""

    lessons: list[Lesson]
    counts: LessonCounts


def why_not_learnable(r: Reflexion) -> str | None:
    """Why a learn pass may not use `r`, in a person's words; `None` when it
    may. The origin decides (`Reflexion.learnable`), and for an untrusted
    one the call that made it so is named where the import recorded it
    (`Reflexion.untrusted_by`); what the reflector was shown is said beside
    it."""
    if r.origin is Origin.CLEAN:
        return None
    if r.origin is Origin.DERIVED:
        why = "not from an interactive session (a subagent, an eval case or a batch item): the harness correcting itself"
        return why + ("; the reflector was not asked: nothing it could answer would be learnable" if never_asked(r) else "")
    if r.untrusted_by:
        why = f"third-party content was in the conversation at that moment; the first call that brought it: {r.untrusted_by}"
    else:
        why = (
            "third-party content (a web page, a fetched file, another agent's report, a command not known "
            "to stay on this machine) was in the conversation at that moment, or its taint was not recorded"
        )
    if was_withheld(r):
        shown = "the reflector was not asked: nothing it could answer would be learnable"
    elif r.evidence is Evidence.INTERVENTION_ONLY:
        shown = "only the person's words were shown to the reflector"
    else:
        shown = ""
    return why + (f"; {shown}" if shown else "")


def unusable_because(r: Reflexion) -> str | None:
    """Why the stored text of `r` is no lesson by today's checks — an echo
    of a prompt's own example, a template slot, markup — or `None`. A
    lesson stored before a check existed is shown with it, never hidden."""
    return no_lesson_reason(r.reflexion_text, (), REFLECTOR_EXAMPLES)


def lesson_view(r: Reflexion, seen_without_rule: int = 0) -> Lesson:
    """`r` as the listing shows it; `seen_without_rule` is how many learn
    passes saw it with no rule made of it, when it is set aside for that."""
    not_learnable = why_not_learnable(r)
    return Lesson(
        id=r.id,
        domain=r.domain,
        scope=GLOBAL_SCOPE if r.project is None else r.project,
        trigger=r.trigger,
        origin=r.origin,
        evidence=r.evidence,
        learnable=not_learnable is None,
        not_learnable_because=not_learnable,
        unusable_because=unusable_because(r),
        processed=r.is_processed,
        rejected=r.rejected,
        set_aside=aside_note(seen_without_rule) if seen_without_rule and not r.is_processed else None,
        lesson=r.reflexion_text,
        intervention=r.intervention,
        session_id=r.session_id,
        created_at=r.created_at,
        found=r.found,
    )


def superseded(reflexions: Sequence[Reflexion], asked_again: Collection[tuple[str, int, str]] = ()) -> set[str]:
    """The ids of reflections that recorded an intervention without asking
    (`reflect.was_withheld`) and were asked again since — after a change of
    trust or a person's vouch — which wrote another reflection of the same
    intervention (its session without the `@…` of the entry that carried
    it, its message, its trigger), or is in `asked_again` (`retrust.settled`:
    answered with nothing to learn, or waiting in the inbox). Each
    intervention is listed and counted once, as its latest reflection:
    before, a reclassified one was listed twice, and `lessons` counted 46
    untrusted where the inbox held 42."""
    latest: dict[tuple[str, int, str], str] = {}
    for r in reflexions:
        if r.found is not None and r.found.at is not None:
            latest[(r.session_id.split("@", 1)[0], r.found.at, r.trigger)] = r.id
    out: set[str] = set()
    for r in reflexions:
        if r.found is None or r.found.at is None or not was_withheld(r):
            continue
        ident = (r.session_id.split("@", 1)[0], r.found.at, r.trigger)
        if latest[ident] != r.id or ident in asked_again:
            out.add(r.id)
    return out


def list_lessons(
    reflexions: Sequence[Reflexion],
    *,
    domain: str | None = None,
    scope: str = ALL,
    trigger: Trigger | None = None,
    origin: Origin | None = None,
    pending: bool = False,
    asked_again: Collection[tuple[str, int, str]] = (),
    aside: Mapping[str, int] | None = None,
) -> tuple[list[Lesson], LessonCounts]:
    """The lessons that match every filter given, newest first, and their
    counts. `scope` is `all`, `global`, or a project's root; `pending`
    keeps only those no resolved proposal has consumed. `aside` names the
    lessons set aside as seen, no rule yet, each with how many passes saw
    it (`learn.set_aside_in`)."""
    aside = aside or {}
    found: list[Lesson] = []
    counts = LessonCounts()
    answered = superseded(reflexions, asked_again)
    for r in reflexions:
        if r.id in answered:
            continue
        if domain is not None and r.domain != domain:
            continue
        if scope != ALL and (GLOBAL_SCOPE if r.project is None else r.project) != scope:
            continue
        if trigger is not None and r.trigger != trigger.value:
            continue
        if origin is not None and r.origin is not origin:
            continue
        if pending and r.is_processed:
            continue
        view = lesson_view(r, aside.get(r.id, 0))
        found.append(view)
        counts.set_aside += view.set_aside is not None
        counts.total += 1
        counts.learnable += view.learnable
        counts.untrusted += r.origin is Origin.UNTRUSTED
        counts.derived += r.origin is Origin.DERIVED
        counts.unusable += view.unusable_because is not None
        counts.processed += r.is_processed
    found.reverse()
    return found, counts

