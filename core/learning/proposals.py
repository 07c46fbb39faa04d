"""Resolving proposals: the only road into a learned rules file.

Nothing learned applies itself. A pass writes a *proposal* — the candidate
rule set beside the set it was made against — and a person accepts or rejects
it, through the CLI, an editor code action or the harness, all of which call
the functions here. Accepting is the only writer of `learned.toml`.

Every function takes the store's writer lock before reading the state it acts
on, so an accept racing a learn pass (or another accept) is serialised, and
the later one sees the earlier one's result: a proposal made against rules
that have since moved is refused as `Stale` rather than silently reverting
what landed in between.
"""

from __future__ import annotations

import difflib
import logging

import msgspec

from mecha.core.errors import InvalidInput, InvalidStore, NotFound, NotPending
from mecha.core.identity import mint_proposal_id, mint_run_id, now
from mecha.core.learning import promotion
from mecha.core.learning.rules import Rule, active_count, validate_domain
from mecha.core.learning.scope import scope_label
from mecha.core.learning.sources import ADDED, RuleChange, RuleSources, find_rule_sources, proposal_changes
from mecha.core.store.layout import GLOBAL_SCOPE, LEARNED_KIND
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus
from mecha.core.store.ledger import rule_tallies_by_model

log = logging.getLogger(__name__)

#: The longest reason a person may give for a reject or a retirement, in
#: characters. A reason is a sentence or a paragraph: it is kept in the
#: proposal, in the learned rules file (a retirement's) and in the commit
#: message, and the learner is shown retired rules' reasons. Far longer is
#: a paste, not a reason, and is refused by name rather than stored.
MAX_REASON_CHARS = 4096


def validate_reason(reason: str | None) -> str | None:
    """`reason` when it is within `MAX_REASON_CHARS`, else `InvalidInput`
    naming the field and the bound."""
    if reason is not None and len(reason) > MAX_REASON_CHARS:
        raise InvalidInput(
            f"reason: {len(reason)} characters; a reason is at most {MAX_REASON_CHARS} "
            "(say why in a sentence or two; the evidence is in the proposal already)"
        )
    return reason


def is_pending(p: Proposal) -> bool:
    """Whether `p` still waits for a person's accept or reject."""
    return p.status == ProposalStatus.PENDING


def _require_pending(p: Proposal) -> None:
    if not is_pending(p):
        raise NotPending(
            f"proposal {p.id} is already {p.status.value}" + (f" (resolved {p.resolved_at})" if p.resolved_at else "")
        )


class Accepted(msgspec.Struct, frozen=True):
    """What an accept did: the proposal as accepted, and the promotion
    proposals it filed (`promotion.file_promotions`)."""

    proposal: Proposal
    promotions: list[Proposal] = msgspec.field(default_factory=list)


def accept_proposal(store: LearningStore, proposal_id: str, *, as_global: bool = False) -> Proposal:
    """`accept`, for a caller that needs only the accepted proposal."""
    return accept(store, proposal_id, as_global=as_global).proposal


def accept(store: LearningStore, proposal_id: str, *, as_global: bool = False) -> Accepted:
    """Write the proposal's rules as the learned rules of its domain in its
    scope (the global file, or its project's), mark its reflections
    processed, record it accepted, and commit; then file a promotion
    proposal for every lesson now live in two or more projects.

    With `as_global`, a project's proposal sends the rules it adds to the
    global file instead and the rest of it (rewrites, retirements) to the
    project's (`promotion.apply_as_global`); a promotion proposal moves its
    lesson from its projects' files into the global one
    (`promotion.apply_promotion`).

    Refuses with `Stale` when the live learned rules no longer equal the set
    the proposal was made against, with `NotPending` when it was already
    resolved, and with `InvalidInput` for `as_global` on a project's
    proposal that adds no rule. `as_global` on a global proposal (or a
    promotion) is a plain accept: it is for every repository already.
    """
    with store.lock():
        p = store.proposal(proposal_id)
        _require_pending(p)
        # A global proposal (a promotion too) is for every repository already.
        as_global = as_global and p.project is not None
        if as_global:
            writes = promotion.apply_as_global(store, p)
        elif p.promoted_from:
            p, writes = promotion.apply_promotion(store, p)
        else:
            writes = _apply_in_scope(store, p)
        p = msgspec.structs.replace(p, status=ProposalStatus.ACCEPTED, resolved_at=now(), accepted_as_global=as_global)
        before, after = active_count(p.rules_before), active_count(p.rules)
        # A global proposal's subject reads as it did before scopes.
        where = " (global, as a person chose)" if as_global else ("" if p.project is None else f" ({scope_label(p.project)})")
        # One change: the rules, the marks and the status land together.
        store.resolve_proposal(
            p,
            learned=writes,
            processed=p.reflexion_ids,
            run_id=mint_run_id(),
            message=f"accept proposal {p.id}: {p.domain} learned rules{where} {before} -> {after} active\n\n"
            f"Accepted by a person{' into the global rules' if as_global else ''}. "
            f"{len(p.reflexion_ids)} reflection(s) marked processed.\n"
            f"Evidence: {p.evidence or '(none recorded)'}",
        )
        return Accepted(p, _promotions_after(store, p))


def _promotions_after(store: LearningStore, p: Proposal) -> list[Proposal]:
    """The promotions an accept files once it has landed. A store that
    cannot take them (a full disk) must not turn the landed accept into an
    error: they are looked for again after the next accept."""
    try:
        return promotion.file_promotions(store, p.domain)
    except InvalidStore as exc:
        log.warning("accept %s landed; its promotions were not filed: %s", p.id, exc)
        return []


def _apply_in_scope(store: LearningStore, p: Proposal) -> list[promotion.Write]:
    """`p`'s rules as its scope's learned rules, after the checks: what
    the accept writes."""
    # Every file this accept writes is checked before any is: a link
    # planted where one stands is refused with nothing changed.
    store.refuse_links(
        store.rules_path(p.domain, LEARNED_KIND, p.project), store.reflections_path, store.proposal_path(p.id)
    )
    live = store.learned_rules(p.domain, p.project)
    # Live rules equal to the proposal's own are an accept that a crash
    # cut short after writing them: finish it rather than call it stale.
    if live != p.rules_before and live != p.rules:
        raise promotion.stale(p)
    return [(p.domain, p.project, p.rules)] if live != p.rules else []


def reject_proposal(store: LearningStore, proposal_id: str, reason: str | None = None) -> Proposal:
    """Record a person's rejection. Its reflections are marked processed: a
    person has heard that argument and said no."""
    validate_reason(reason)
    with store.lock():
        p = store.proposal(proposal_id)
        _require_pending(p)
        store.refuse_links(store.reflections_path, store.proposal_path(p.id))
        p = msgspec.structs.replace(p, status=ProposalStatus.REJECTED, resolved_at=now(), reason=reason)
        store.resolve_proposal(
            p,
            processed=p.reflexion_ids,
            run_id=mint_run_id(),
            message=f"reject proposal {p.id} ({p.domain})\n\n"
            f"Rejected by a person{': ' + reason if reason else ''}. "
            f"{len(p.reflexion_ids)} reflection(s) marked processed.",
        )
        return p


def _scope_holding(store: LearningStore, domain: str, rule_id: str) -> tuple[str | None, list[Rule]] | None:
    """The scope whose learned `domain` rules hold `rule_id` — global
    first, then each project by path — and those rules."""
    roots = sorted(root for root in store.projects().values() if root is not None)
    for where in (None, *roots):
        rules = store.learned_rules(domain, where)
        if any(r.id == rule_id for r in rules):
            return where, rules
    return None


def propose_retirement(
    store: LearningStore, domain: str, rule_id: str, reason: str, *, project: str | None = None
) -> Proposal:
    """A pending proposal whose only change is retiring one learned rule, in
    the scope that holds it (`project`'s rules when one is named).

    Retired rules stay in the file as evidence, never render, and are shown to
    the learner as never-to-re-derive.
    """
    validate_domain(domain)
    validate_reason(reason)
    if not reason.strip():
        raise InvalidInput("reason: a retirement needs a reason a person can check")
    with store.lock():
        if project is not None:
            found: tuple[str | None, list[Rule]] | None = (project, store.learned_rules(domain, project))
        else:
            found = _scope_holding(store, domain, rule_id)
        matches = [r for r in found[1] if r.id == rule_id] if found is not None else []
        if found is None or not matches:
            named = "" if project is None else f" in {scope_label(project)}"
            raise NotFound(f"no learned rule {rule_id!r} in domain {domain!r}{named}")
        where, before = found
        if matches[0].retired_at is not None:
            raise InvalidInput(f"rule_id: {rule_id} is already retired ({matches[0].retired_reason or 'no reason'})")
        stamp = now()
        after = [
            retired(r, stamp, reason.strip()) if r.id == rule_id else r
            for r in before
        ]
        p = Proposal(
            id=mint_proposal_id(), domain=domain, status=ProposalStatus.PENDING, reflexion_ids=[],
            rules_before=before, rules=after, evidence=f"retire {rule_id}: {reason.strip()}",
            created_at=stamp, project=where,
        )
        store.write_proposal(p)
        label = "" if where is None else f" ({scope_label(where)})"
        store.commit(f"propose retiring {rule_id} from {domain}{label} ({p.id})\n\n{reason.strip()}")
        return p


def retired(rule: Rule, stamp: str, reason: str) -> Rule:
    """`rule` as a retirement leaves it: the time, the reason, and `enabled =
    false` — the value a retired rule behaves as whatever the file says, so
    the file an accept writes is one its own checks pass (a retired rule
    left enabled is flagged `retired-enabled`)."""
    return msgspec.structs.replace(rule, retired_at=stamp, retired_reason=reason, enabled=False)


def rendered_pair(store: LearningStore, p: Proposal) -> tuple[str, str]:
    """The rules block before and after the proposal, as a run would see it
    (an empty string where no block would be sent)."""
    before = store.render_candidate(p.domain, p.rules_before, p.project, scope=p.project).block or ""
    after = store.render_candidate(p.domain, p.rules, p.project, scope=p.project).block or ""
    return before, after


def _diff_scope(p: Proposal) -> str:
    return "" if p.project is None else f" in {scope_label(p.project)}"


def proposal_diff(store: LearningStore, p: Proposal) -> str:
    """Unified diff of the whole rendered rules block, before → after."""
    before, after = rendered_pair(store, p)
    lines = difflib.unified_diff(
        before.splitlines(keepends=False),
        after.splitlines(keepends=False),
        fromfile=f"{p.domain} rules block{_diff_scope(p)} (live when proposed)",
        tofile=f"{p.domain} rules block{_diff_scope(p)} (if {p.id} is accepted)",
        lineterm="",
    )
    return "".join(line + "\n" for line in lines)


def list_proposals(
    store: LearningStore, status: ProposalStatus | None = None, domain: str | None = None
) -> list[Proposal]:
    if domain is not None:
        validate_domain(domain)
    return [
        p
        for p in store.proposals()
        if (status is None or p.status == status) and (domain is None or p.domain == domain)
    ]


def pending_in(store: LearningStore, domain: str, project: str | None) -> list[Proposal]:
    """The proposals for `domain` in one scope (`project`'s root; `None`:
    global) still waiting for a person: what keeps a learn pass for that
    scope from filing a second one."""
    return [p for p in pending_for(store, domain) if p.project == project]


def pending_for(store: LearningStore, domain: str | None = None) -> list[Proposal]:
    """The proposals still waiting for a person — for `domain`, or for every
    domain. The one answer to "is anything pending?": a learn pass refuses
    while one waits, doctor counts them and the editor shows them."""
    return [p for p in list_proposals(store, None, domain) if is_pending(p)]


class PendingSummary(msgspec.Struct, frozen=True):
    """What a client is told of the pending proposals as a whole: their ids
    (sorted, so two summaries of the same proposals are equal) and how many
    wait in each domain."""

    ids: tuple[str, ...] = ()
    by_domain: dict[str, int] = msgspec.field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.ids)


def pending_summary(store: LearningStore | None) -> PendingSummary:
    """The pending proposals of `store` summed up (`pending_for`); nothing is
    pending in a store that does not exist yet."""
    waiting = pending_for(store) if store is not None else []
    by_domain: dict[str, int] = {}
    for p in waiting:
        by_domain[p.domain] = by_domain.get(p.domain, 0) + 1
    return PendingSummary(tuple(sorted(p.id for p in waiting)), by_domain)


def should_announce(previous: PendingSummary | None, now: PendingSummary, *, after_command: bool) -> bool:
    """Whether a client must be told the pending proposals now.

    When the set of pending ids moved since it was last told (`previous`,
    `None` before the first telling), and always after a command that could
    resolve one: a proposal can be written and resolved between two looks
    at the store, so the set seen before and after the command is the same,
    yet the client saw it appear (in its diagnostics, by its own request)
    and must hear the new count. Comparing ids, not counts: one proposal
    accepted while another arrives leaves the count as it was and changes
    what is pending."""
    return after_command or previous is None or previous.ids != now.ids


def proposal_scope(p: Proposal) -> str:
    """The scope a proposal is for, as the wire names it: `global`, or the
    project's root."""
    return GLOBAL_SCOPE if p.project is None else p.project


def change_scope(p: Proposal, change: RuleChange) -> str:
    """Where one rule a proposal changes lives: the proposal's scope, except
    a rule a project's proposal adds once a person accepted it as global."""
    if change.change == ADDED and p.accepted_as_global:
        return GLOBAL_SCOPE
    return proposal_scope(p)


def proposal_changes_in(store: LearningStore, p: Proposal) -> list[RuleChange]:
    """What `p` adds, changes and removes, each rule with its sources as the
    store records them and the scope it lives in."""
    changes = proposal_changes(p.rules_before, p.rules, p.drops, {r.id: r for r in store.reflexions()})
    return [msgspec.structs.replace(c, scope=change_scope(p, c)) for c in changes]


def rule_sources(store: LearningStore, rule_id: str) -> RuleSources:
    """Why the rule `rule_id` exists, from any domain's user or learned
    rules in any scope (global first, then each project); `NotFound` when
    no rules file holds it."""
    sets = []
    for domain in store.domains():
        sets.append((domain, "learned", store.learned_rules(domain)))
        sets.append((domain, "user", store.user_rules(domain)))
    # A project's rules too: a lesson from a session in a project is learned
    # for that project, and its rule is as much in need of a why.
    for root in store.projects().values():
        for domain in store.project_domains(root) if root is not None else ():
            sets.append((domain, "learned", store.learned_rules(domain, root)))
            sets.append((domain, "user", store.user_rules(domain, root)))
    found = find_rule_sources(rule_id, sets, {r.id: r for r in store.reflexions()}, rule_tallies_by_model(store.validations()))
    if found is None:
        raise NotFound(f"no rule {rule_id!r} in any rules file")
    return found
