"""The learn pass: one domain's learnable reflections *in one scope* → a
proposal for that scope.

A scope is the global rules or one project's (`mecha.core.learning.scope`).
Reflections keep the project their session ran in, and a pass pools only
one scope's: the lessons of one repository are proposed for that repository,
and the reflections with no project — from before scopes, or from a session
that named no directory — for the global rules. `learn_scopes` learns every
scope of a domain that has enough; the pass and the verbs call it.

It runs in a detached process, like the reflect pass, and follows the same
locking rule (`mecha.core.learning.reflect`): it snapshots the scope's rules
and reflections under the writer lock, calls the model unlocked, and
re-checks under the lock before writing: if a proposal for the scope
appeared meanwhile, its own result is dropped. A proposal made against rules
an accept has since moved is refused at accept time as `Stale`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import msgspec

from mecha.core.domain.reflexion import Reflexion
from mecha.core.domain.rules import (
    LEARN_MIN_REFLECTIONS,
    MAX_ACTIVE_RULES_PER_DOMAIN,
    RUN_DOMAINS,
    Refusal,
    Rule,
    active_count,
    budget_refuses,
    finalize_rules,
    rule_key,
    validate_domain,
)
from mecha.core.errors import InvalidInput, ModelFailure
from mecha.core.identity import mint_proposal_id, mint_run_id, now
from mecha.core.learning.aside import SEEN_WITHOUT_RULE, set_aside
from mecha.core.learning.asks import DENIAL, with_derived_asks
from mecha.core.learning.common import in_pending, one_project_reason, one_project_refusals, projects_of, stranded
from mecha.core.learning.consolidation import (
    PERSON_BUDGET,
    GatedSet,
    Learner,
    gate_learned_set,
    refusals_summary,
    refused_rules,
)
from mecha.core.learning.proposals import pending_in, rejected_alike
from mecha.core.learning.record import rewrites_due
from mecha.core.learning.reflect import Progress, quiet
from mecha.core.learning.scope import scope_label
from mecha.core.learning.sense import Rarity
from mecha.core.sessions.evidence import cut_at_word
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus
from mecha.core.store.ledger import LeapRun


class LearnOutcome(msgspec.Struct, omit_defaults=True):
    outcome: str
    proposal_id: str | None = None
    status: str | None = None
    #: What the learn gate refused of the model's answer, and why.
    refusals: list[Refusal] = msgspec.field(default_factory=list)


def learnable_pool(store: LearningStore, domain: str, project: str | None = None) -> list[Reflexion]:
    """A domain's learnable, unprocessed reflections in one scope (those of
    the project whose root is `project`, or with `None` those with no
    project: the global pool, with the lessons stranded in projects too
    small for a pass of their own, `common.stranded`), oldest first — less
    those set aside as seen, no rule yet (`aside.set_aside`), and those a
    pending proposal of any scope rests on (`common.in_pending`)."""
    pending = in_pending(store, domain)
    unprocessed = store.learnable_unprocessed(domain)

    def own(scope: str | None) -> list[Reflexion]:
        return [r for r in unprocessed if r.project == scope and r.id not in pending]

    if project is not None:
        return _without_set_aside(store, domain, project, own(project))
    projects = sorted({r.project for r in unprocessed if r.project is not None})
    common = stranded({p: _without_set_aside(store, domain, p, own(p)) for p in projects})
    return _without_set_aside(store, domain, None, own(None) + common)


def _without_set_aside(store: LearningStore, domain: str, project: str | None, pool: list[Reflexion]) -> list[Reflexion]:
    """`pool` less the lessons this scope's passes set aside as seen, no
    rule yet."""
    runs = [run for run in store.runs() if run.domain == domain and run.project == project and run.shown]
    if not pool or len(runs) < SEEN_WITHOUT_RULE:
        return pool
    aside = set_aside(pool, runs, store_rarity(store, domain))
    return [r for r in pool if r.id not in aside]


def set_aside_in(store: LearningStore) -> dict[str, int]:
    """Every lesson of the store set aside as seen, no rule yet, in every
    domain and scope, each with how many passes saw it without a rule."""
    out: dict[str, int] = {}
    runs = [run for run in store.runs() if run.shown]
    if len(runs) < SEEN_WITHOUT_RULE:
        return out
    pools: dict[tuple[str, str | None], list[Reflexion]] = {}
    for r in store.reflexions():
        if r.learnable() and not r.is_processed:
            pools.setdefault((r.domain, r.project), []).append(r)
    for (domain, _), pool in pools.items():
        out.update(set_aside(pool, runs, store_rarity(store, domain)))
    return out


def store_lessons(store: LearningStore, domain: str) -> list[str]:
    """The texts of every lesson of `domain` in the store, every scope:
    what the learn gate weighs a word's rarity against."""
    return [r.reflexion_text for r in store.reflexions() if r.domain == domain]


def store_rarity(store: LearningStore, domain: str) -> Rarity:
    return Rarity(store_lessons(store, domain))


def learnable_scopes(store: LearningStore, domain: str) -> list[str | None]:
    """Every scope that holds a learnable, unprocessed reflection of
    `domain`: global (`None`) first, then the projects by path."""
    found = {r.project for r in store.learnable_unprocessed(domain)}
    if None not in found and learnable_pool(store, domain, None):
        found.add(None)  # lessons stranded in small projects (`common`)
    return sorted(found, key=lambda p: (p is not None, p or ""))


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
    """The reflections of `pool` that fit one learner call, the surest
    first (`strongest_first`): at most `max_count`, and no more than
    `max_chars` of material — but always the first one, so a single large
    reflection is consolidated (cut to size in the prompt) rather than
    blocking the domain for good. In `pool`'s order (oldest first)."""
    batch: list[Reflexion] = []
    used = 0
    for r in strongest_first(pool):
        size = len(r.context) + min(len(r.intervention), PERSON_BUDGET) + len(r.reflexion_text)
        if batch and (len(batch) >= max_count or used + size > max_chars):
            break
        batch.append(r)
        used += size
    chosen = {id(r) for r in batch}
    return [r for r in pool if id(r) in chosen]


def strongest_first(pool: Sequence[Reflexion]) -> list[Reflexion]:
    """`pool` by the reflector's confidence, highest first (unrated last),
    oldest first among equals: when a pool needs two calls, the lesson at
    0.85 is not the one left to wait (it once was, behind twenty older)."""
    return sorted(pool, key=lambda r: -(r.confidence if r.confidence is not None else -1.0))


def learn_batches(pool: Sequence[Reflexion]) -> list[list[Reflexion]]:
    """`pool` cut into the batches of successive learner calls
    (`learn_batch`), every reflection in one."""
    out: list[list[Reflexion]] = []
    left = list(pool)
    while left:
        batch = learn_batch(left)
        out.append(batch)
        taken = {id(r) for r in batch}
        left = [r for r in left if id(r) not in taken]
    return out


def changes_nothing(before: Sequence[Rule], after: Sequence[Rule]) -> bool:
    """Whether a learned set `after` says what `before` says: the same rule
    texts, each as enabled and as retired as it was. Order, confidence and
    support counts are bookkeeping, not something to ask a person to review;
    a proposal that changes nothing would only wait in their queue."""
    def said(rules: Sequence[Rule]) -> list[tuple[str, bool, bool]]:
        return sorted((r.text, r.enabled, r.retired_at is not None) for r in rules)

    return said(before) == said(after)


def unchanged_since(
    store: LearningStore, domain: str, pool: Sequence[Reflexion], project: str | None = None
) -> LeapRun | None:
    """The last pass for `domain` in this scope, when it kept the rules as
    they were and no reflection has joined the pool since: asking again
    would only put the same question to the model."""
    runs = [r for r in store.runs() if r.domain == domain and r.project == project]
    if not runs or not runs[-1].unchanged:
        return None
    # One pass may have asked in several calls, each recorded as a run.
    asked: set[str] = set()
    for run in reversed(runs):
        if not run.unchanged:
            break
        asked |= set(run.reflexion_ids)
    return runs[-1] if {r.id for r in pool} <= asked else None


def _in_scope(domain: str, project: str | None) -> str:
    return domain if project is None else f"{domain} in {scope_label(project)}"


def _kept(active: int, domain: str, project: str | None, lessons: int) -> str:
    """What an unchanged pass kept, worded for its count: `the model kept
    the 3 behavior rules in project /src/app as they are`, or, with no rule
    live, that it drew none from the lessons."""
    if active == 0:
        return f"the model drew no rule from the {lessons} lesson(s), and there are no {_rules_in(domain, project)} yet"
    if active == 1:
        return f"the model kept the one {_rules_in(domain, project).replace(' rules', ' rule', 1)} as it is"
    return f"the model kept the {active} {_rules_in(domain, project)} as they are"


def _rules_in(domain: str, project: str | None) -> str:
    """`behavior rules`, or `behavior rules in project /src/app`."""
    return f"{domain} rules" if project is None else f"{domain} rules in {scope_label(project)}"


def learn_refusal(
    store: LearningStore, domain: str, minimum: int | None = None, project: str | None = None, *, retry: bool = False
) -> str | None:
    """Why a learn pass for `domain` in one scope (`project`; `None`:
    global) would do nothing right now, or `None`.

    Counts *learnable* unprocessed reflections of that scope,
    and refuses while a proposal for the domain in that scope awaits a
    person: a second one argued from the same reflections would only be a
    duplicate to review. A scope whose last pass kept the rules as they were
    waits for a new lesson — unless `retry` (`learn --retry`): a model that
    answered badly once must never block the scope for good.
    Each refusal ends with what the person can do about it.
    """
    validate_domain(domain)
    floor = LEARN_MIN_REFLECTIONS if minimum is None else minimum
    if floor < 1:
        raise InvalidInput("min: must be at least 1")
    where = _in_scope(domain, project)
    pending = [p.id for p in pending_in(store, domain, project)]
    if pending:
        return (
            f"proposal {pending[0]} for {where} is still pending; accept or reject it first "
            f"(`mecha-sidecar proposals show {pending[0]}`)"
        )
    pool = learnable_pool(store, domain, project)
    have = len(pool)
    if have < floor and minimum is None and rewrites_due(store, domain, project, (r.id for r in pool)):
        return None  # a rule corrected again is due its rewrite, however few lessons wait
    if have < floor:
        lower = f"; `--min {have}` learns from those {have}" if have else ""
        aside = max(0, len([r for r in store.learnable_unprocessed(domain) if r.project == project]) - have)
        waiting = (
            f"; {aside} more are set aside as seen, no rule yet (`mecha-sidecar lessons` lists them)" if aside else ""
        )
        return (
            f"{where} has {have} learnable unprocessed reflection(s){waiting}; a learn pass needs at least {floor} "
            f"(`--min N` sets that floor{lower}; more come from `mecha-sidecar import claude` or the hooks)"
        )
    last = None if retry else unchanged_since(store, domain, pool, project)
    if last is not None:
        return (
            f"the last learn pass for {where} ({last.created_at}) kept its {last.rules_after} rule(s) as they are, "
            f"and no learnable reflection has arrived since; `mecha-sidecar learn {domain} --retry` asks the model again"
        )
    return None


def near_domain(store: LearningStore, domain: str) -> str | None:
    """The known domain `domain` looks like a misspelling of (`behaviour`
    for `behavior`), when `domain` itself holds nothing — no rules file, no
    reflection — else `None`. A pass for a name nothing uses would only say
    "0 reflections" and leave the person to find the typo."""
    import difflib

    known = set(RUN_DOMAINS) | set(store.domains())
    if domain in known:
        return None
    known |= {r.domain for r in store.reflexions()}
    if domain in known:
        return None
    close = difflib.get_close_matches(domain, sorted(known), n=1, cutoff=0.75)
    return close[0] if close else None


class _All:
    """`learn_scopes`' default: every scope, not one."""


ALL_SCOPES = _All()


def scopes_ready(
    store: LearningStore, domain: str, minimum: int | None = None, project: str | None | _All = ALL_SCOPES,
    *, retry: bool = False,
) -> tuple[list[str | None], str | None]:
    """The scopes of `domain` a learn pass would learn now — `project`
    alone when one is given, else every scope with learnable reflections —
    and, when there is none, why not (each scope's refusal)."""
    validate_domain(domain)
    scopes = [project] if not isinstance(project, _All) else (learnable_scopes(store, domain) or [None])
    ready: list[str | None] = []
    why: list[str] = []
    for scope in scopes:
        refusal = learn_refusal(store, domain, minimum, scope, retry=retry)
        if refusal is None:
            ready.append(scope)
        else:
            why.append(refusal)
    return ready, (None if ready else "; ".join(why))


def domains_to_learn(store: LearningStore, busy: Collection[str] = ()) -> list[str]:
    """The domains a learn pass should start for once a reflect pass is
    done, so the loop goes on without anyone typing `learn`: each domain
    with a scope that is ready at the seeds' minimum (`scopes_ready` with no
    `--min`), leaving out the `busy` ones (a learn pass for them is still
    running; a second would only have its result dropped).

    The candidates are the run domains and every domain with a rules file:
    a reflection's domain is one of those (`reflector_frames`). A scope
    whose last pass kept the rules as they were, or whose proposal still
    waits, is not ready, so this never asks the model the same question
    twice."""
    candidates = sorted(set(RUN_DOMAINS) | set(store.domains()))
    return [d for d in candidates if d not in busy and scopes_ready(store, d)[0]]


def lessons_waiting(store: LearningStore, domain: str, project: str | None) -> int:
    """How many learnable lessons of one scope wait for a pass that could
    run now at the seeds' minimum — counted as `domains_to_learn` counts
    them (`learn_refusal` with no `--min`) — or 0 when no pass would run
    (too few, a proposal still pending, the rules kept since the last
    lesson). What a resolved proposal's answer checks, so the lessons a
    batched pass left waiting are learned without anyone typing `learn`."""
    if learn_refusal(store, domain, None, project) is not None:
        return 0
    return len(learnable_pool(store, domain, project))


def next_pass_line(
    waiting: int, domain: str, project: str | None, *, job_id: str | None = None, running: str | None = None,
    no_model: str | None = None, failed: str | None = None, held: str | None = None,
) -> str:
    """The one line a resolved proposal's answer says about the lessons
    still waiting in its scope: the learn pass started for them (`job_id`),
    the one already running (`running`), the command that sets a model
    when none is (`no_model`), the command that learns them when the person
    wants (`held`: after a rejection nothing starts by itself), or why the
    pass did not start (`failed`)."""
    head = f"{waiting} more lesson(s) wait in {_in_scope(domain, project)}"
    if job_id is not None:
        return f"{head}; a learn pass started: job {job_id}"
    if running is not None:
        return f"{head}; learn pass {running} for {domain} is still running, so no second one started"
    if held is not None:
        return f"{head}; after a rejection no learn pass starts by itself: `{held}` learns them again"
    if no_model is not None:
        return f"{head}; no model is configured, so no learn pass started: `{no_model}` sets one"
    return f"{head}; the learn pass did not start ({failed}); `mecha-sidecar learn {domain}` starts it"


class _Snapshot(msgspec.Struct):
    pool: list[Reflexion]
    batch: list[Reflexion]
    user: list[Rule]
    before: list[Rule]
    #: For a project's pass: the global learned rules, which ride beside it.
    global_rules: list[Rule] = msgspec.field(default_factory=list)
    #: Live rules corrected again, due a rewrite: rule id → the reflections
    #: of the new corrections, all in `batch` (`record.rewrites_due`).
    rewrites: dict[str, list[str]] = msgspec.field(default_factory=dict)
    #: Every lesson text of the domain in the store: word rarity for the gate.
    lessons: list[str] = msgspec.field(default_factory=list)
    #: The domain's lessons of refused calls, by id: what a new rule's ask
    #: is derived from (`asks.with_derived_asks`).
    refusals: dict[str, Reflexion] = msgspec.field(default_factory=dict)


def _snapshot(
    store: LearningStore, domain: str, project: str | None, minimum: int | None, retry: bool = False
) -> _Snapshot | str:
    """What a pass for one scope learns from, read under the lock, or why
    it would do nothing."""
    with store.lock():
        refusal = learn_refusal(store, domain, minimum, project, retry=retry)
        if refusal is not None:
            return refusal
        pool = learnable_pool(store, domain, project)
        # In a project the person's rules of both scopes ride together.
        user = store.user_rules(domain) + (store.user_rules(domain, project) if project is not None else [])
        held = store.learned_rules(domain) if project is not None else []
        rewrites = rewrites_due(store, domain, project, (r.id for r in pool))
        everything = [r for r in store.reflexions() if r.domain == domain]
        return _Snapshot(pool, with_rewrite_lessons(learn_batch(pool), pool, rewrites), user,
                         store.learned_rules(domain, project), held, rewrites, [r.reflexion_text for r in everything],
                         {r.id: r for r in everything if r.trigger == DENIAL})


def with_rewrite_lessons(batch: list[Reflexion], pool: Sequence[Reflexion], rewrites: dict[str, list[str]]) -> list[Reflexion]:
    """`batch` with every lesson a due rewrite rests on (they are the newest
    of the pool, and a full batch of older ones would leave them out)."""
    have = {r.id for r in batch}
    wanted = {i for ids in rewrites.values() for i in ids}
    return batch + [r for r in pool if r.id in wanted and r.id not in have]


def _without_global_lessons(gated: GatedSet, snap: _Snapshot) -> GatedSet:
    """A project's pass proposes no new rule the global rules hold (the same
    lesson, `rules.rule_key`): it rides in the project's runs already,
    and a copy would be told twice — refused by name instead."""
    held = {rule_key(r.text) for r in snap.global_rules}
    live = {rule_key(r.text) for r in snap.before}
    if not held:
        return gated
    repeats = [r for r in gated.rules if rule_key(r.text) in held and rule_key(r.text) not in live]
    if not repeats:
        return gated
    why = "the global rules hold this lesson already; it rides in this project's runs from there"
    return msgspec.structs.replace(
        gated,
        rules=[r for r in gated.rules if r not in repeats],
        refusals=[*gated.refusals, *(Refusal(kind="rule", rule=r.text, reason=why) for r in repeats)],
    )


def _without_one_project_rules(gated: GatedSet, snap: _Snapshot) -> GatedSet:
    """A global pass files no new rule resting on one project's lessons
    alone (`common.one_project_refusals`): it would ride in every project
    on one project's say. Refused by name; its lessons go back to the pool."""
    narrow = one_project_refusals(gated.rules, snap.before, snap.batch)
    if not narrow:
        return gated
    refusals = [
        Refusal(kind="rule", rule=r.text, reason=one_project_reason(projects_of(r.sources, snap.batch)[0]))
        for r in narrow
    ]
    return msgspec.structs.replace(
        gated, rules=[r for r in gated.rules if r not in narrow], refusals=[*gated.refusals, *refusals]
    )


async def learn_scopes(
    store: LearningStore,
    domain: str,
    learner: Learner,
    *,
    project: str | None | _All = ALL_SCOPES,
    minimum: int | None = None,
    progress: Progress = quiet,
    retry: bool = False,
) -> list[tuple[str | None, LearnOutcome]]:
    """A pass over every scope of `domain` that is ready (`scopes_ready`),
    one after another, or over `project` alone: each scope's outcome. A
    scope the model fails is reported as its outcome and the rest go on;
    when every scope failed the first failure is raised."""
    ready, why = scopes_ready(store, domain, minimum, project, retry=retry)
    if not ready:
        return [(None if isinstance(project, _All) else project, LearnOutcome(outcome=f"nothing to do: {why}"))]
    out: list[tuple[str | None, LearnOutcome]] = []
    failures: list[ModelFailure] = []
    for scope in ready:
        try:
            out.append((scope, await learn_domain(
                store, domain, learner, project=scope, minimum=minimum, progress=progress, retry=retry,
            )))
        except ModelFailure as exc:
            failures.append(exc)
            out.append((scope, LearnOutcome(outcome=f"failed — {type(exc).__name__}: {exc}", status="failed")))
    if len(failures) == len(ready):
        raise failures[0]
    return out


def scopes_summary(results: Sequence[tuple[str | None, LearnOutcome]]) -> str:
    """One line for a pass's outcomes: the outcome alone for one scope,
    each prefixed with its scope for several."""
    if len(results) == 1:
        return results[0][1].outcome
    return "; ".join(f"{scope_label(scope)}: {o.outcome}" for scope, o in results)


async def learn_domain(
    store: LearningStore,
    domain: str,
    learner: Learner,
    *,
    project: str | None = None,
    minimum: int | None = None,
    progress: Progress = quiet,
    retry: bool = False,
) -> LearnOutcome:
    """One consolidation pass for a domain in one scope (`project`'s root;
    `None`: global); the result is a proposal for that scope, never a
    change to the live rules.

    A pool too large for one learner call is learned in batches
    (`learn_batches`, the surest lessons first), one call after another,
    until one files a proposal; the lessons of the batches after it wait
    for that proposal's answer, and the outcome says how many. A pass once
    sent 20 of 23 lessons and let the other 3 — the strongest among them —
    wait silently for a second `learn`."""
    validate_domain(domain)
    snap = _snapshot(store, domain, project, minimum, retry)
    if isinstance(snap, str):
        return LearnOutcome(outcome=f"nothing to do: {snap}")
    # The first call takes every lesson a due rewrite rests on (`snap.batch`).
    first = {r.id for r in snap.batch}
    batches = [snap.batch] + learn_batches([r for r in snap.pool if r.id not in first])
    outcomes: list[LearnOutcome] = []
    for n, batch in enumerate(batches, start=1):
        one = msgspec.structs.replace(snap, batch=batch, rewrites=snap.rewrites if n == 1 else {})
        outcome = await _learn_batch(store, domain, learner, project, one, progress, n, len(batches))
        outcomes.append(outcome)
        if outcome.proposal_id is not None or outcome.status not in ("unchanged", "refused"):
            break
    waiting = sum(len(b) for b in batches[len(outcomes):])
    return _batches_outcome(outcomes, [len(b) for b in batches], waiting, domain)


def _batches_outcome(outcomes: Sequence[LearnOutcome], sizes: Sequence[int], waiting: int, domain: str) -> LearnOutcome:
    """One outcome for a pass of one or more calls: the last call's, its
    text preceded by each earlier call's when there were several, and
    ending with how many lessons wait."""
    last = outcomes[-1]
    text = last.outcome
    if len(outcomes) > 1:
        text = "; ".join(
            f"batch {n} of {len(sizes)} ({sizes[n - 1]} lessons): {o.outcome}" for n, o in enumerate(outcomes, start=1)
        )
    if waiting:
        text += (
            f"; {waiting} more lesson(s) wait for the next pass, which can run once this proposal is answered "
            f"(`mecha-sidecar learn {domain}`)"
        )
    refusals = [r for o in outcomes for r in o.refusals]
    return msgspec.structs.replace(last, outcome=text, refusals=refusals)


async def _learn_batch(
    store: LearningStore,
    domain: str,
    learner: Learner,
    project: str | None,
    snap: _Snapshot,
    progress: Progress,
    n: int,
    of: int,
) -> LearnOutcome:
    """One learner call over `snap.batch`, gated, and what it files."""
    where = _in_scope(domain, project)
    progress(
        f"consolidating {len(snap.batch)} reflection(s) into {len(snap.before)} learned {where} rule(s)"
        + (f" (batch {n} of {of})" if of > 1 else "")
    )
    answer = await learner.learn(
        domain, snap.user, snap.before, snap.batch, strict=True, project=project, not_followed=snap.rewrites
    )
    if answer is None:
        raise ModelFailure("the learner's reply held no usable rule set; the reflections stay in the pool")
    stamp = now()
    gated = _without_global_lessons(
        gate_learned_set(answer, snap.batch, snap.before, store_lessons=snap.lessons), snap
    )
    if project is None:
        gated = _without_one_project_rules(gated, snap)
    rules = with_derived_asks(finalize_rules(gated.rules, snap.before, [r.id for r in snap.batch], stamp),
                              snap.before, snap.refusals)
    with store.lock():
        if pending_in(store, domain, project):
            return LearnOutcome(outcome="another pass proposed for this domain meanwhile; this result was dropped")
        if store.learned_rules(domain, project) != snap.before:
            return LearnOutcome(outcome=(
                "the live rules changed during the pass; this result was dropped: "
                f"`mecha-sidecar learn {domain}` learns against them"
            ))
        if changes_nothing(snap.before, rules):
            return _nothing_filed(store, domain, project, snap, rules, gated, stamp)
        again = rejected_alike(store, domain, project, snap.before, rules)
        if again is not None:
            return _not_refiled(store, domain, project, snap, rules, again, gated, stamp)
        return _file_proposal(store, domain, project, snap, rules, gated, stamp)


def _run(
    domain: str, project: str | None, before: int, after: int, stamp: str, gated: GatedSet, snap: _Snapshot, *,
    processed: int = 0, unchanged: bool = False, reflexion_ids: Sequence[str] = (),
) -> LeapRun:
    return LeapRun(
        id=mint_run_id(), domain=domain, reflexions_processed=processed, rules_before=before, rules_after=after,
        created_at=stamp, unchanged=unchanged, reflexion_ids=list(reflexion_ids), project=project,
        shown=[r.id for r in snap.batch], cited=list(gated.cited),
    )


def _nothing_filed(
    store: LearningStore,
    domain: str,
    project: str | None,
    snap: _Snapshot,
    rules: list[Rule],
    gated: GatedSet,
    stamp: str,
) -> LearnOutcome:
    """A result that says what the live rules say: recorded as a run, no
    proposal — refused whole by the learn gate, or unchanged."""
    where = _in_scope(domain, project)
    active_before, active_after = active_count(snap.before), active_count(rules)
    refusals = gated.refusals
    refused = refused_rules(refusals)
    if refused:
        store.append_run(_run(domain, project, active_before, active_after, stamp, gated, snap))
        store.commit(
            f"learn {where}: nothing filed (the learn gate refused all {len(refused)})\n\n"
            + "\n".join(f"- {'kept ' if r.kind == 'drop' else ''}“{cut_at_word(r.rule, 200)}”: {r.reason}" for r in refusals)
        )
        return LearnOutcome(
            outcome=(
                f"nothing filed: the learn gate refused everything the model proposed for {where} "
                f"({len(refused)}): {refusals_summary(refusals)}; the reflections stay in the pool for the next "
                f"`mecha-sidecar learn {domain}`"
            ),
            status="refused",
            refusals=refusals,
        )
    store.append_run(_run(
        domain, project, active_before, active_after, stamp, gated, snap, unchanged=True,
        reflexion_ids=[r.id for r in snap.batch],
    ))
    store.commit(
        f"learn {where}: nothing to change ({active_before} active rules kept)\n\n"
        f"The model's rewrite of {len(snap.batch)} learnable reflection(s) equals the live rules; no proposal filed."
    )
    return LearnOutcome(
        outcome=(
            f"nothing to change: {_kept(active_before, domain, project, len(snap.batch))}; "
            f"`mecha-sidecar learn {domain} --retry` asks again"
        ),
        status="unchanged",
    )


def _not_refiled(
    store: LearningStore, domain: str, project: str | None, snap: _Snapshot, rules: list[Rule], rejected: Proposal,
    gated: GatedSet, stamp: str,
) -> LearnOutcome:
    """A result a person has already rejected, word for word: recorded as
    a run that changed nothing (so the same pool is not argued again until
    a reflection joins it), no proposal."""
    where = _in_scope(domain, project)
    active_before, active_after = active_count(snap.before), active_count(rules)
    store.append_run(_run(
        domain, project, active_before, active_after, stamp, gated, snap, unchanged=True,
        reflexion_ids=[r.id for r in snap.batch],
    ))
    said = f" ({rejected.reason})" if rejected.reason else ""
    store.commit(
        f"learn {where}: nothing filed (the same as rejected proposal {rejected.id})\n\n"
        f"The model proposed again what a person rejected{said}; no proposal filed."
    )
    return LearnOutcome(
        outcome=(
            f"nothing filed: the model proposed again what you rejected in proposal {rejected.id}{said}; "
            "the reflections stay in the pool for a pass with new ones"
        ),
        status="unchanged",
    )


def _file_proposal(
    store: LearningStore, domain: str, project: str | None, snap: _Snapshot, rules: list[Rule], gated: GatedSet, stamp: str
) -> LearnOutcome:
    """File the pass's result as a proposal for its scope — pending, or
    refused by the budget gate (each scope has its own cap)."""
    refusals = gated.refusals
    where = _in_scope(domain, project)
    batch_ids = [r.id for r in snap.batch]
    active_before, active_after = active_count(snap.before), active_count(rules)
    # Growth is weighed on the learner's answer too: sixteen rules the gate
    # folded into fewer are still a learner past the cap.
    grown = max(active_after, gated.proposed)
    refused = budget_refuses(active_before, grown)
    status = ProposalStatus.REJECTED_BY_GATE if refused else ProposalStatus.PENDING
    asked = f" (the model proposed {gated.proposed})" if grown != active_after else ""
    reason = (
        f"the budget gate refused it: {grown} active rules{asked} is over the cap of "
        f"{MAX_ACTIVE_RULES_PER_DOMAIN} and grows the set from {active_before}; "
        "its reflections return to the pool for a pass that merges or retires first"
        if refused
        else None
    )
    replaced = [rule_id for rule_id in snap.rewrites if rule_id not in {r.id for r in rules if r.active()}]
    rewrite_note = f"; rewrites {', '.join(replaced)}, corrected again after it went live" if replaced else ""
    proposal = Proposal(
        id=mint_proposal_id(), domain=domain, status=status, reflexion_ids=batch_ids,
        rules_before=snap.before, rules=rules,
        evidence=f"consolidated from {len(batch_ids)} learnable reflection(s): {', '.join(batch_ids)}{rewrite_note}",
        created_at=stamp, resolved_at=stamp if refused else None, reason=reason, project=project,
        drops=gated.drops, refusals=refusals, rewrite_of=list(snap.rewrites),
    )
    store.write_proposal(proposal)
    store.append_run(_run(domain, project, active_before, active_after, stamp, gated, snap, processed=len(batch_ids)))
    store.commit(
        f"learn {where}: {'gate refused' if refused else 'propose'} {active_before} -> {active_after} "
        f"active rules ({proposal.id})\n\n"
        f"From {len(batch_ids)} learnable reflection(s). "
        + ("The budget gate refused growth past the cap." if refused else "Awaiting a person's review.")
    )
    verb = "refused by the budget gate" if refused else "pending review"
    n_refused = len(refused_rules(refusals))
    gate_said = f"the learn gate refused {n_refused}" if n_refused else "the learn gate"
    refused_note = f"; {gate_said}: {refusals_summary(refusals)}" if refusals else ""
    return LearnOutcome(
        outcome=f"proposal {proposal.id} {verb}: {active_before} -> {active_after} active {_rules_in(domain, project)}{refused_note}",
        proposal_id=proposal.id,
        status=status.value,
        refusals=refusals,
    )
