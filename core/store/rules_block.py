"""The rules block a run's system prompt carries, rendered from rules files.

One rendering for every caller — a run's block, a proposal's before/after
diff, a counterfactual probe's candidate — because a gate's measurement of
a candidate means something about the deployment that follows acceptance
only if both render identically.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from mecha.core.domain.rules import (
    Rule,
    domain_rules_section,
    run_domains_including,
    validate_domain,
    wrap_rules_block,
)
from mecha.core.store.layout import fnv1a_64
from mecha.core.store.rules_files import RulesFiles


def rules_hash(block: str) -> str:
    """FNV-1a 64 over the UTF-8 bytes of a rendered block, as 16 hex digits.

    Written out rather than using `hash()`: the validation ledger keys on this
    value, and a key that drifted between interpreters would silently split
    every tally. `"abc"` is `e71fa2190541574b`, forever. It lives beside the
    rendering it keys, over the store's one FNV-1a (`layout.fnv1a_64`), which
    stays in the layout because the first stage reads the layout alone.
    """
    return fnv1a_64(block.encode("utf-8"))


class RenderedBlock(msgspec.Struct, kw_only=True):
    """The rules block a run's system prompt carries, and what is in it."""

    #: `None` when no loaded domain has an active rule: an empty section would
    #: spend cached-prefix tokens on a heading.
    block: str | None
    #: `rules_hash(block)`; what the validation ledger keys on.
    rules_hash: str | None
    #: Ids of the active learned rules riding in `block`, in block order.
    rule_ids: list[str]
    #: The domains loaded, in order, whether or not each contributed.
    domains: list[str]


RuleSet = tuple[str, Sequence[Rule], Sequence[Rule]]


def render_rules(rule_sets: Sequence[RuleSet], project_sets: Sequence[RuleSet] = ()) -> RenderedBlock:
    """Render `(domain, user rules, learned rules)` sets into the block: the
    global ones, then one project's (`project_sets`, each under its
    `(this project)` heading) — global first, so what holds everywhere
    reads before what one repository adds.

    The one rendering every caller shares — a run's block, a proposal's
    before/after diff, a counterfactual probe's candidate — because a gate's
    measurement of a candidate means something about the deployment that
    follows acceptance only if both render identically.

    Each scope keeps its own cap (`MAX_ACTIVE_RULES_PER_DOMAIN` is enforced
    per learned file), so a domain's part of the block is at most the
    global cap plus the project's.
    """
    sections: list[str] = []
    rule_ids: list[str] = []
    domains: list[str] = []
    for sets, in_project in ((rule_sets, False), (project_sets, True)):
        for domain, user, learned in sets:
            if domain not in domains:
                domains.append(domain)
            section = domain_rules_section(domain, user, learned, project=in_project)
            if section is None:
                continue
            sections.append(section)
            for rule in learned:
                if rule.active() and rule.id is not None and rule.id not in rule_ids:
                    rule_ids.append(rule.id)
    block = wrap_rules_block(sections)
    return RenderedBlock(
        block=block,
        rules_hash=rules_hash(block) if block is not None else None,
        rule_ids=rule_ids,
        domains=domains,
    )


def render_candidate(
    files: RulesFiles,
    domain: str | None,
    learned_rules: Sequence[Rule] | None,
    project: str | None = None,
    *,
    scope: str | None = None,
) -> RenderedBlock:
    """The block a run exercising `domain` in `project` (or in no
    project) would carry if the learned rules of `domain` in `scope` (a
    project root; `None`: global) were `learned_rules`, rendered from
    `files` without writing anything — for a proposal's diff and for a
    counterfactual probe. `learned_rules=None` renders the live rules."""
    if domain is not None:
        domain = validate_domain(domain)
    run_domains = run_domains_including(domain)

    def learned(d: str, where: str | None) -> list[Rule]:
        if learned_rules is not None and d == domain and where == scope:
            return list(learned_rules)
        return files.learned(d, where)

    sets: list[RuleSet] = [(d, files.user(d), learned(d, None)) for d in run_domains]
    in_project: list[RuleSet] = []
    if project is not None:
        in_project = [(d, files.user(d, project), learned(d, project)) for d in run_domains]
    return render_rules(sets, in_project)
