"""Lessons common to several projects: what the global pass may learn from
the lessons no project's own pass will reach.

A lesson is learned where it was taught: a session in a project teaches
that project's rules. A learn pass for a scope waits for
`LEARN_MIN_REFLECTIONS` lessons there, so a person who works in many small
projects and corrects the same thing once in each — "never add a
co-author line to commits", said in three repositories — never sees a
rule: each project holds one lesson, short of any pass, and the same
preference is never put together. Promotion (`promotion`) lifts a *rule*
live in two projects to the global rules; it cannot help lessons that
never became rules.

So the global pass is shown, besides the global lessons, the *stranded*
lessons of projects whose own pool is short of the seeds' minimum, once
they come from two projects or more — each marked with the project it
was learned in (`framing.learned_in`). The learner is told to make a global rule only of what
the lessons of two or more projects (or a lesson learned outside any
project) teach alike, worded to hold anywhere; and the learn gate holds
it to that (`one_project_refusals`): a new global rule resting on the
lessons of one project alone is refused by name, since it would ride in
every project on one project's say. A stranded lesson the global pass
does not use goes back to the pool as any lesson does, and to its
project's own pass once that project has enough.

A lesson waiting in a pending proposal of any scope is shown to no other
pass: two proposals arguing from one correction would make the person
review it twice and could put it in two rule files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mecha.core.domain.reflexion import Reflexion
from mecha.core.domain.rules import LEARN_MIN_REFLECTIONS, Rule
from mecha.core.learning.framing import project_name
from mecha.core.learning.proposals import pending_for
from mecha.core.store.learning_store import LearningStore

#: How many projects' lessons a global rule drawn from project lessons
#: must rest on.
MIN_PROJECTS = 2


def in_pending(store: LearningStore, domain: str) -> set[str]:
    """The lessons of `domain` a pending proposal of any scope rests on."""
    return {i for p in pending_for(store, domain) for i in p.reflexion_ids}


def stranded(pool_by_project: dict[str, list[Reflexion]], minimum: int = LEARN_MIN_REFLECTIONS) -> list[Reflexion]:
    """The lessons of every project whose own pool is short of `minimum`,
    in file order of their projects' pools — when they come from
    `MIN_PROJECTS` projects or more; none otherwise (one project's lessons
    wait for that project)."""
    short = {p: pool for p, pool in pool_by_project.items() if pool and len(pool) < minimum}
    if len(short) < MIN_PROJECTS:
        return []
    return [r for p in sorted(short) for r in short[p]]


def projects_of(cited: Iterable[str], batch: Sequence[Reflexion]) -> tuple[set[str], bool]:
    """The projects the cited lessons of `batch` were learned in, and
    whether any cited lesson was learned outside every project."""
    by_id = {r.id: r for r in batch}
    lessons = [by_id[i] for i in cited if i in by_id]
    return {r.project for r in lessons if r.project is not None}, any(r.project is None for r in lessons)


def one_project_reason(projects: set[str]) -> str:
    """Why a global rule resting on one project's lessons is refused."""
    name = project_name(next(iter(projects))) if projects else "one project"
    return (
        f'rests on lessons learned in one project ("{name}") alone; a rule that rides in every project needs '
        f"the lessons of {MIN_PROJECTS} projects or more, or one learned outside any project — it waits for "
        "that project's own pass"
    )


def one_project_refusals(rules: Sequence[Rule], live: Sequence[Rule], batch: Sequence[Reflexion]) -> list[Rule]:
    """The new rules of a global pass (not live before it) whose cited
    lessons of this pass were all learned in projects, fewer than
    `MIN_PROJECTS` of them: what the gate refuses. A live rule kept, a
    rewrite of one, or a rule citing no project lesson is never refused
    here."""
    live_keys = {r.id for r in live if r.id is not None} | {r.text for r in live}
    out = []
    for rule in rules:
        if rule.id in live_keys or rule.text in live_keys or rule.supersedes:
            continue  # kept, or a rewrite of a global rule: the global rule's own standing carries it
        projects, outside = projects_of(rule.sources, batch)
        if projects and not outside and len(projects) < MIN_PROJECTS:
            out.append(rule)
    return out
