"""What stands behind the rules: the validation ledger (recording,
per-rule tallies), a rule's sources, every live rule's record, and the
stored lessons."""

from __future__ import annotations

from typing import Any

from mecha.core.agents.retrust import settled
from mecha.core.domain.record import RulesResult
from mecha.core.domain.reflexion import Origin
from mecha.core.domain.rules import validate_domain
from mecha.core.errors import InvalidInput, NotFound
from mecha.core.identity import now
from mecha.core.learning.learn import set_aside_in
from mecha.core.learning.lessons import ALL, LessonCounts, LessonsResult, list_lessons
from mecha.core.learning.proposals import rule_sources as sources
from mecha.core.learning.record import live_records
from mecha.core.learning.scope import resolve_project
from mecha.core.learning.sources import describe_tally
from mecha.core.store.layout import GLOBAL_SCOPE
from mecha.core.store.ledger import rule_tallies as fold
from mecha.core.store.ledger import rule_tallies_by_model
from mecha.protocol import methods as m

from ..context import Context
from ..rpc import Cancel


def record_validation(ctx: Context, p: Any, cancel: Cancel) -> m.Empty:
    validate_domain(p.domain)
    store = ctx.store()
    with store.lock():
        store.append_validation(p)
    return m.Empty()


def rule_sources(ctx: Context, p: m.RuleSourcesParams, cancel: Cancel) -> Any:
    store = ctx.existing_store()
    if store is None:
        raise NotFound(f"no rule {p.rule_id!r}: there is no store yet")
    return sources(store, p.rule_id)


def rules(ctx: Context, p: m.RulesParams, cancel: Cancel) -> RulesResult:
    """Every live learned rule with its record (`record.live_records`);
    nothing when there is no store yet."""
    if p.domain is not None:
        validate_domain(p.domain)
    scopes = None if p.scope is None else [None if p.scope == GLOBAL_SCOPE else resolve_project(p.scope, "scope")]
    store = ctx.existing_store()
    if store is None:
        return RulesResult()
    return RulesResult(rules=live_records(store, domain=p.domain, scopes=scopes, now=now()))


def rule_tallies(ctx: Context, p: m.RuleTalliesParams, cancel: Cancel) -> m.RuleTalliesResult:
    if p.domain is not None:
        validate_domain(p.domain)
    store = ctx.existing_store()
    if store is None:
        return m.RuleTalliesResult(tallies={})
    records = [r for r in store.validations() if p.domain is None or r.domain == p.domain]
    by_model = rule_tallies_by_model(records)
    return m.RuleTalliesResult(
        tallies=fold(records), by_model=by_model, measured={k: describe_tally(v) for k, v in by_model.items()}
    )


def lessons(ctx: Context, p: m.LessonsParams, cancel: Cancel) -> Any:
    """The stored lessons a person can read before any proposal
    (`lessons.list_lessons`); reads only, and nothing when there is no
    store yet."""
    if p.domain is not None:
        validate_domain(p.domain)
    if p.limit is not None and p.limit < 1:
        raise InvalidInput("limit: must be at least 1")
    scope = ALL if p.scope is None else GLOBAL_SCOPE if p.scope == GLOBAL_SCOPE else resolve_project(p.scope, "scope")
    store = ctx.existing_store()
    if store is None:
        return LessonsResult(lessons=[], counts=LessonCounts())
    origin = None if p.origin is None else Origin(p.origin)
    reflections = store.reflexions()
    found, counts = list_lessons(
        reflections, domain=p.domain, scope=scope, trigger=p.trigger, origin=origin, pending=p.pending,
        asked_again=settled(store, reflections), aside=set_aside_in(store),
    )
    return LessonsResult(lessons=found[: p.limit] if p.limit is not None else found, counts=counts)
