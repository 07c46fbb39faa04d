"""Builders of the domain records tests put in a store: a reflection, a
rule, a proposal.

A record type grows a required field now and then; with one builder per type
the tests learn it in one place instead of in a dozen private factories that
each spell every field. Each builder fills what a test does not care about
with a plain, clean default (a trusted reflection, a pending proposal) and
takes every field by keyword, so a test names only what its assertion rests
on. They build values and write nothing: a test that needs the record on
disk hands it to the store's own writer (`append_reflexion`,
`write_proposal`), the path a pass takes.

Learned rules are the exception: in the product only a person's accept
writes them, inside the transaction that also resolves the proposal, so the
store has no writer for them alone. `write_learned_rules` lays a learned
rules file down for a test the way that accept's transaction applies it —
the same rendering (`RulesFiles.render_learned`, which keeps a person's
comments in an existing file) and the same atomic replace — minus the
proposal and the history commit a test setting up live rules has no use for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mecha.core.domain.reflexion import Origin, Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.store import files
from mecha.core.store.learning_store import LearningStore
from mecha.core.store.proposal_files import Proposal, ProposalStatus

#: The timestamp a built record carries unless a test gives its own.
WHEN = "2026-11-01T00:00:00.000000Z"

#: A lesson that reads like one a reflector writes.
LESSON = "When the person narrows a task, drop the remaining steps."

#: What a person said that shares words with every rule the learn tests have
#: a scripted learner propose, so each such rule rests on its cited lesson.
ASK_FIRST = (
    "ask first before acting or deleting anything; keep each diff, reply and rule short and fresh; "
    "indent with two spaces, never tabs"
)


def reflexion(
    id: str,
    lesson: str = LESSON,
    *,
    domain: str = "behavior",
    session_id: str = "s1",
    trigger: str = "steer",
    context: str = "reading files",
    intervention: str = "skip the rest",
    origin: Origin = Origin.CLEAN,
    created_at: str = WHEN,
    **fields: Any,
) -> Reflexion:
    """A reflection (`Reflexion`) with lesson `lesson`, clean unless `origin`
    says otherwise; any other field (`project`, `is_processed`,
    `confidence`, …) by keyword."""
    return Reflexion(
        id=id,
        domain=domain,
        session_id=session_id,
        trigger=trigger,
        context=context,
        intervention=intervention,
        reflexion_text=lesson,
        origin=origin,
        created_at=created_at,
        **fields,
    )


def rule(text: str, id: str | None = None, **fields: Any) -> Rule:
    """A rule as a rules file holds it; lineage fields by keyword."""
    return Rule(text=text, id=id, **fields)


def proposal(
    id: str,
    rules: Sequence[Rule] = (),
    *,
    domain: str = "behavior",
    status: ProposalStatus = ProposalStatus.PENDING,
    rules_before: Sequence[Rule] = (),
    reflexion_ids: Sequence[str] = (),
    evidence: str = "",
    created_at: str = WHEN,
    **fields: Any,
) -> Proposal:
    """A proposal to change `domain`'s learned rules from `rules_before` to
    `rules`, pending unless `status` says otherwise; `project`, `reason`,
    `resolved_at` and the rest by keyword."""
    return Proposal(
        id=id,
        domain=domain,
        status=status,
        reflexion_ids=list(reflexion_ids),
        rules_before=list(rules_before),
        rules=list(rules),
        evidence=evidence,
        created_at=created_at,
        **fields,
    )


def write_learned_rules(store: LearningStore, domain: str, rules: Sequence[Rule], project: str | None = None) -> None:
    """Make `domain`'s learned rules in `project`'s scope (`None`: global)
    exactly `rules`, as an accept of a proposal holding them would leave the
    file."""
    path, data = store.rules_files.render_learned(domain, rules, project)
    files.write_atomic(path, data)
