"""A lesson reaching every repository: by a person's word, never silently.

Two roads lead a project's lesson into the global rules, both through
`proposals.accept`, under the store's writer lock:

- **Accept as global** (`proposals accept ID --global`): a person reviewing
  a project's proposal says its new lessons hold everywhere. The rules the
  proposal adds go to the global file; the rest of it — rules it rewrites or
  retires in the project — to the project's file, as a plain accept would
  write them.
- **A promotion proposal**: after every accept, a lesson live in two or more
  projects' learned rules (the same text, `rules.rule_key`) and not in
  the global ones is filed as a pending proposal for the global scope, its
  `promoted_from` naming the projects — unless a promotion of that lesson
  is already pending or was rejected (a person said no: it is not asked
  again). Accepting one moves the lesson out of those projects' files into
  the global one, so a run in them is not told it twice.

A promotion adds one lesson and says so, so it is applied to the global
rules as they are when it is accepted, not refused as stale because
another accept moved them since (the accepted record keeps the sets it
was applied to). Each scope has its own cap: a promotion is not filed, and
not accepted, when it would grow the global rules past theirs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import msgspec

from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, Rule, active_count, budget_refuses, rule_key
from mecha.core.errors import InvalidInput, Stale
from mecha.core.identity import mint_proposal_id, now
from mecha.core.learning.scope import new_rules, promotion_candidates, scope_label
from mecha.core.store.layout import LEARNED_KIND
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus

log = logging.getLogger(__name__)


def stale(p: Proposal) -> Stale:
    """The refusal of a proposal whose scope's live rules moved."""
    return Stale(
        f"proposal {p.id} was made against the learned {p.domain} rules ({scope_label(p.project)}) as they "
        f"stood on {p.created_at}, and they have changed since (an accept, a retirement or a hand edit); "
        "reject it and run a new learn pass to get a proposal against the current rules"
    )


def _keys(rules: Sequence[Rule]) -> set[str]:
    return {rule_key(r.text) for r in rules}


def _refuse_growth(domain: str, before: Sequence[Rule], after: Sequence[Rule], what: str) -> None:
    active_before, active_after = active_count(before), active_count(after)
    if budget_refuses(active_before, active_after):
        raise InvalidInput(
            f"{what}: the global {domain} rules would hold {active_after} active rules, over the cap of "
            f"{MAX_ACTIVE_RULES_PER_DOMAIN}; retire or merge global rules first"
        )


#: A learned rules file an accept replaces: `(domain, project root or None, rules)`.
Write = tuple[str, str | None, list[Rule]]


def apply_as_global(store: LearningStore, p: Proposal) -> list[Write]:
    """What accepting a project's proposal as global writes: the rules it
    adds to the global file, the rest to the project's; after the checks of
    a plain accept (links, `Stale`), each refusal before anything is
    written."""
    assert p.project is not None, "a global proposal is accepted as it is"
    added = new_rules(p.rules_before, p.rules)
    if not added:
        raise InvalidInput(f"as_global: proposal {p.id} adds no rule to send to the global rules; accept it without --global")
    store.refuse_links(
        store.rules_path(p.domain, LEARNED_KIND, p.project), store.rules_path(p.domain, LEARNED_KIND),
        store.reflections_path, store.proposal_path(p.id),
    )
    moved = _keys(added)
    in_project = [r for r in p.rules if rule_key(r.text) not in moved]
    live = store.learned_rules(p.domain, p.project)
    # Equal to what this accept writes there: a crash cut an earlier one short.
    if live != p.rules_before and live != in_project:
        raise stale(p)
    global_live = store.learned_rules(p.domain)
    held = _keys(global_live)
    global_after = global_live + [r for r in added if rule_key(r.text) not in held]
    _refuse_growth(p.domain, global_live, global_after, "as_global")
    writes: list[Write] = []
    if global_after != global_live:
        writes.append((p.domain, None, global_after))
    if live != in_project:
        writes.append((p.domain, p.project, in_project))
    return writes


def apply_promotion(store: LearningStore, p: Proposal) -> tuple[Proposal, list[Write]]:
    """What accepting a promotion writes: its lesson added to the global
    rules as they are now, and taken out of each of its projects' files;
    with the proposal holding the global sets it was applied to."""
    lessons = new_rules(p.rules_before, p.rules)
    moved = _keys(lessons)
    store.refuse_links(
        store.rules_path(p.domain, LEARNED_KIND), store.reflections_path, store.proposal_path(p.id),
        *(store.rules_path(p.domain, LEARNED_KIND, project) for project in p.promoted_from),
    )
    global_live = store.learned_rules(p.domain)
    retired = [r for r in global_live if r.retired_at is not None and rule_key(r.text) in moved]
    if retired:
        raise Stale(
            f"proposal {p.id}: the lesson it promotes was retired from the global {p.domain} rules since "
            f"({retired[0].retired_reason or 'no reason given'}); reject the promotion"
        )
    held = _keys(global_live)
    global_after = global_live + [r for r in lessons if rule_key(r.text) not in held]
    _refuse_growth(p.domain, global_live, global_after, f"proposal {p.id}")
    writes: list[Write] = [(p.domain, None, global_after)] if global_after != global_live else []
    for project in p.promoted_from:
        live = store.learned_rules(p.domain, project)
        kept = [r for r in live if not (r.active() and rule_key(r.text) in moved)]
        if kept != live:
            writes.append((p.domain, project, kept))
    return msgspec.structs.replace(p, rules_before=global_live, rules=global_after), writes


def promoted_lessons(store: LearningStore, domain: str) -> set[str]:
    """The lessons of `domain` a promotion was filed for and is pending or
    was rejected: never proposed again."""
    out: set[str] = set()
    for q in store.proposals():
        if q.domain == domain and q.promoted_from and q.status in (ProposalStatus.PENDING, ProposalStatus.REJECTED):
            out |= _keys(new_rules(q.rules_before, q.rules))
    return out


def project_learned_rules(store: LearningStore, domain: str) -> dict[str, list[Rule]]:
    """Every project's learned rules of `domain`, by project root (a file
    that does not name its project's path is left out: its rules cannot be
    moved back to a place anyone can name)."""
    out: dict[str, list[Rule]] = {}
    for root in store.projects().values():
        if root is not None and store.rules_path(domain, LEARNED_KIND, root).exists():
            out[root] = store.learned_rules(domain, root)
    return out


def _merged(rule: Rule, copies: Sequence[Rule]) -> Rule:
    """The promoted rule: the first project's, with every copy's sources."""
    sources: list[str] = []
    for copy in copies:
        sources += [s for s in copy.sources if s not in sources]
    return msgspec.structs.replace(rule, sources=sources)


def file_promotions(store: LearningStore, domain: str) -> list[Proposal]:
    """File, under the caller's writer lock, a pending promotion proposal for
    each lesson of `domain` live in two or more projects and not in the
    global rules, unless one is pending or was rejected for it; never
    applied. A promotion that would grow the global rules past the cap is
    not filed (it would only be refused)."""
    by_project = project_learned_rules(store, domain)
    if len(by_project) < 2:
        return []
    global_rules = store.learned_rules(domain)
    filed: list[Proposal] = []
    for rule, projects in promotion_candidates(global_rules, by_project, promoted_lessons(store, domain)):
        if budget_refuses(active_count(global_rules), active_count(global_rules) + 1):
            log.info("promotion of %r not filed: the global %s rules are at the cap", rule.text, domain)
            continue
        key = rule_key(rule.text)
        copies = [r for project in projects for r in by_project[project] if r.active() and rule_key(r.text) == key]
        stamp = now()
        p = Proposal(
            id=mint_proposal_id(), domain=domain, status=ProposalStatus.PENDING, reflexion_ids=[],
            rules_before=global_rules, rules=[*global_rules, _merged(rule, copies)],
            evidence=f"the same lesson is live in {len(projects)} projects: {', '.join(projects)}",
            created_at=stamp, project=None, promoted_from=projects,
        )
        store.write_proposal(p)
        store.commit(
            f"propose promoting a {domain} lesson to the global rules ({p.id})\n\n"
            f"{rule.text}\n\nLive in {len(projects)} projects: {', '.join(projects)}. Awaiting a person's review."
        )
        filed.append(p)
    return filed
