"""The learn pass: a domain's learnable reflections → a proposal.

It runs in a detached process, like the reflect pass, and follows the same
locking rule (`mecha.core.learning.reflect`): it snapshots the domain's rules
and reflections under the writer lock, calls the model unlocked, and
re-checks under the lock before writing: if a proposal for the domain
appeared meanwhile, its own result is dropped. A proposal made against rules
an accept has since moved is refused at accept time as `Stale`.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from mecha.core.errors import InvalidInput, ModelFailure
from mecha.core.identity import mint_proposal_id, mint_run_id, now
from mecha.core.learning.consolidation import PERSON_BUDGET, Learner, gate_learned_set, refusals_summary
from mecha.core.learning.proposals import pending_for
from mecha.core.learning.reflect import Progress, quiet
from mecha.core.learning.reflection import Reflexion
from mecha.core.learning.rules import (
    LEARN_MIN_REFLECTIONS,
    MAX_ACTIVE_RULES_PER_DOMAIN,
    Refusal,
    Rule,
    active_count,
    budget_refuses,
    finalize_rules,
    validate_domain,
)
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus
from mecha.core.store.ledger import LeapRun


class LearnOutcome(msgspec.Struct, omit_defaults=True):
    outcome: str
    proposal_id: str | None = None
    status: str | None = None
    #: What the learn gate refused of the model's answer, and why.
    refusals: list[Refusal] = msgspec.field(default_factory=list)


def learnable_pool(store: LearningStore, domain: str) -> list[Reflexion]:
    """A domain's learnable, unprocessed reflections, oldest first."""
    return store.learnable_unprocessed(domain)


#: At most this many reflections go into one learner call, oldest first; the
#: rest wait for the next pass. Unbounded, one domain's backlog made a prompt
#: no model's context holds, and every learn pass for it failed the same way.
LEARN_BATCH_MAX_REFLECTIONS = 40
#: And at most about this many characters of them (each reflection's fields
#: are cut to size in the learner's prompt as well): a small local model's
#: context is a few thousand tokens.
LEARN_BATCH_MAX_CHARS = 16_000


def learn_batch(
    pool: Sequence[Reflexion],
    max_count: int = LEARN_BATCH_MAX_REFLECTIONS,
    max_chars: int = LEARN_BATCH_MAX_CHARS,
) -> list[Reflexion]:
    """The oldest reflections of `pool` that fit one learner call: at most
    `max_count`, and no more than `max_chars` of material — but always the
    oldest one, so a single large reflection is consolidated (cut to size in
    the prompt) rather than blocking the domain for good."""
    batch: list[Reflexion] = []
    used = 0
    for r in pool:
        size = len(r.context) + min(len(r.intervention), PERSON_BUDGET) + len(r.reflexion_text)
        if batch and (len(batch) >= max_count or used + size > max_chars):
            break
        batch.append(r)
        used += size
    return batch


def changes_nothing(before: Sequence[Rule], after: Sequence[Rule]) -> bool:
    """Whether a learned set `after` says what `before` says: the same rule
    texts, each as enabled and as retired as it was. Order, confidence and
    support counts are bookkeeping, not something to ask a person to review;
    a proposal that changes nothing would only wait in their queue."""
    def said(rules: Sequence[Rule]) -> list[tuple[str, bool, bool]]:
        return sorted((r.text, r.enabled, r.retired_at is not None) for r in rules)

    return said(before) == said(after)


def unchanged_since(store: LearningStore, domain: str, pool: Sequence[Reflexion]) -> LeapRun | None:
    """The last pass for `domain`, when it kept the rules as they were and no
    reflection has joined the pool since: asking again would only put the
    same question to the model."""
    runs = [r for r in store.runs() if r.domain == domain]
    if not runs or not runs[-1].unchanged:
        return None
    last = runs[-1]
    return last if {r.id for r in pool} <= set(last.reflexion_ids) else None


def learn_refusal(store: LearningStore, domain: str, minimum: int | None = None) -> str | None:
    """Why a learn pass for `domain` would do nothing right now, or `None`.

    Counts *learnable* unprocessed reflections (DESIGN §8.13), and refuses
    while a proposal for the domain awaits a person: a second one argued from
    the same reflections would only be a duplicate to review.
    """
    validate_domain(domain)
    floor = LEARN_MIN_REFLECTIONS if minimum is None else minimum
    if floor < 1:
        raise InvalidInput("min: must be at least 1")
    pending = [p.id for p in pending_for(store, domain)]
    if pending:
        return f"proposal {pending[0]} for {domain} is still pending; accept or reject it first"
    pool = learnable_pool(store, domain)
    have = len(pool)
    if have < floor:
        return f"{domain} has {have} learnable unprocessed reflection(s); a learn pass needs at least {floor}"
    last = unchanged_since(store, domain, pool)
    if last is not None:
        return (
            f"the last learn pass for {domain} ({last.created_at}) kept its {last.rules_after} rule(s) as they are, "
            "and no learnable reflection has arrived since; learn again once one has"
        )
    return None


async def learn_domain(
    store: LearningStore,
    domain: str,
    learner: Learner,
    *,
    minimum: int | None = None,
    progress: Progress = quiet,
) -> LearnOutcome:
    """One consolidation pass for a domain; the result is a proposal, never
    a change to the live rules."""
    validate_domain(domain)
    with store.lock():
        refusal = learn_refusal(store, domain, minimum)
        if refusal is not None:
            return LearnOutcome(outcome=f"nothing to do: {refusal}")
        pool = learnable_pool(store, domain)
        batch = learn_batch(pool)
        user = store.user_rules(domain)
        before = store.learned_rules(domain)
    left = len(pool) - len(batch)
    progress(
        f"consolidating {len(batch)} reflection(s) into {len(before)} learned {domain} rule(s)"
        + (f"; {left} more wait for the next pass" if left else "")
    )
    answer = await learner.learn(domain, user, before, batch, strict=True)
    if answer is None:
        raise ModelFailure("the learner's reply held no usable rule set; the reflections stay in the pool")
    stamp = now()
    batch_ids = [r.id for r in batch]
    gated = gate_learned_set(answer, batch, before)
    rules = finalize_rules(gated.rules, before, batch_ids, stamp)
    active_before, active_after = active_count(before), active_count(rules)
    refused_note = (
        f"; the learn gate refused {len(gated.refusals)}: {refusals_summary(gated.refusals)}" if gated.refusals else ""
    )
    with store.lock():
        if pending_for(store, domain):
            return LearnOutcome(outcome="another pass proposed for this domain meanwhile; this result was dropped")
        if store.learned_rules(domain) != before:
            return LearnOutcome(outcome="the live rules changed during the pass; this result was dropped, run learn again")
        if changes_nothing(before, rules) and gated.refusals:
            store.append_run(LeapRun(
                id=mint_run_id(), domain=domain, reflexions_processed=0, rules_before=active_before,
                rules_after=active_after, created_at=stamp,
            ))
            store.commit(
                f"learn {domain}: nothing filed (the learn gate refused all {len(gated.refusals)})\n\n"
                + "\n".join(f"- {r.rule[:200]!r}: {r.reason}" for r in gated.refusals)
            )
            return LearnOutcome(
                outcome=(
                    f"nothing filed: the learn gate refused everything the model proposed for {domain} "
                    f"({len(gated.refusals)}): {refusals_summary(gated.refusals)}; the reflections stay in the pool"
                ),
                status="refused",
                refusals=gated.refusals,
            )
        if changes_nothing(before, rules):
            store.append_run(LeapRun(
                id=mint_run_id(), domain=domain, reflexions_processed=0, rules_before=active_before,
                rules_after=active_after, created_at=stamp, unchanged=True,
                reflexion_ids=[r.id for r in batch],
            ))
            store.commit(
                f"learn {domain}: nothing to change ({active_before} active rules kept)\n\n"
                f"The model's rewrite of {len(batch)} learnable reflection(s) equals the live rules; no proposal filed."
            )
            return LearnOutcome(
                outcome=f"nothing to change: the model kept the {active_before} {domain} rule(s) as they are",
                status="unchanged",
            )
        refused = budget_refuses(active_before, active_after)
        status = ProposalStatus.REJECTED_BY_GATE if refused else ProposalStatus.PENDING
        reason = (
            f"the budget gate refused it: {active_after} active rules is over the cap of "
            f"{MAX_ACTIVE_RULES_PER_DOMAIN} and grows the set from {active_before}; "
            "its reflections return to the pool for a pass that merges or retires first"
            if refused
            else None
        )
        proposal = Proposal(
            id=mint_proposal_id(),
            domain=domain,
            status=status,
            reflexion_ids=batch_ids,
            rules_before=before,
            rules=rules,
            evidence=f"consolidated from {len(batch)} learnable reflection(s): {', '.join(batch_ids)}",
            created_at=stamp,
            resolved_at=stamp if refused else None,
            reason=reason,
            drops=gated.drops,
            refusals=gated.refusals,
        )
        store.write_proposal(proposal)
        run = LeapRun(
            id=mint_run_id(),
            domain=domain,
            reflexions_processed=len(batch),
            rules_before=active_before,
            rules_after=active_after,
            created_at=stamp,
        )
        store.append_run(run)
        store.commit(
            f"learn {domain}: {'gate refused' if refused else 'propose'} {active_before} -> {active_after} "
            f"active rules ({proposal.id})\n\n"
            f"From {len(batch)} learnable reflection(s). "
            + ("The budget gate refused growth past the cap." if refused else "Awaiting a person's review.")
        )
    verb = "refused by the budget gate" if refused else "pending review"
    return LearnOutcome(
        outcome=f"proposal {proposal.id} {verb}: {active_before} -> {active_after} active {domain} rules{refused_note}",
        proposal_id=proposal.id,
        status=status.value,
        refusals=gated.refusals,
    )
