"""The background passes a person asks for by name — learn and validate —
and the list of passes and their state."""

from __future__ import annotations

import os

from mecha.core.domain.rules import validate_domain
from mecha.core.environment.settings import config_path
from mecha.core.errors import InvalidInput, LearningError, NotFound
from mecha.core.learning.learn import ALL_SCOPES, near_domain, scopes_ready
from mecha.core.learning.scope import resolve_project
from mecha.core.learning.validate import no_probe_reason, plan_validation, validate_budget, what_calls_cost
from mecha.core.providers import resolve_model_config
from mecha.core.providers.config import ModelConfig
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.inbox import count_waiting, list_set_aside
from mecha.core.store.ledger import ValidationPlan
from mecha.protocol import methods as m

from .. import jobs as background
from ..context import Context
from ..hookrun import resume_lost_ends
from ..rpc import Cancel


def learn(ctx: Context, p: m.LearnParams, cancel: Cancel) -> m.LearnResult:
    resume_lost_ends(str(ctx.root))
    validate_domain(p.domain)
    if p.min is not None and p.min < 1:
        raise InvalidInput("min: must be at least 1")
    near = near_domain(ctx.store(), p.domain)
    if near is not None:
        raise InvalidInput(
            f"no rule or lesson is in domain {p.domain!r}; did you mean {near}? (`mecha-sidecar learn {near}`)"
        )
    project = None if p.project is None else resolve_project(p.project)
    ready, refusal = scopes_ready(
        ctx.store(), p.domain, p.min, ALL_SCOPES if project is None else project, retry=p.retry
    )
    if not ready:
        return m.LearnResult(job=None, reason=refusal)
    job = background.start_pass(ctx, "learn", domain=p.domain, minimum=p.min, project=project, retry=p.retry)
    return m.LearnResult(job=job)


def jobs(ctx: Context, p: m.Empty, cancel: Cancel) -> m.JobsResult:
    store = ctx.existing_store()
    if store is None:
        return m.JobsResult(jobs=jobs_mod.list_jobs(ctx.root))
    return m.JobsResult(
        jobs=jobs_mod.list_jobs(ctx.root), waiting=count_waiting(store), set_aside=len(list_set_aside(store))
    )


def _model_config(ctx: Context) -> ModelConfig | None:
    """The model a pass would call, or `None` when none is configured or its
    configuration is broken (the pass says which, by name, when it runs)."""
    try:
        return resolve_model_config(ctx.model_options, os.environ, config_path())
    except LearningError:
        return None


def validate(ctx: Context, p: m.ValidateParams, cancel: Cancel) -> m.ValidateResult:
    """The plan (which reflections, how many calls), and unless it is a dry
    run or holds no probe, the pass that runs it."""
    validate_domain(p.domain)
    store = ctx.existing_store()
    if store is None:  # nothing to measure, and a plan creates no store
        if p.proposal_id is not None:
            raise NotFound(f"no proposal matching `{p.proposal_id}`: there is no store yet")
        plan = ValidationPlan(domain=p.domain, budget=validate_budget(p.budget))
    else:
        plan = plan_validation(store, p.domain, p.budget, p.proposal_id)
    plan.cost = what_calls_cost(plan.calls, _model_config(ctx))
    if p.dry_run:
        empty = "" if plan.probes else f" ({no_probe_reason(plan)})"
        return m.ValidateResult(plan=plan, job=None, reason=f"a dry run: nothing was called{empty}")
    if not plan.probes:
        return m.ValidateResult(plan=plan, job=None, reason=no_probe_reason(plan))
    job = background.start_pass(ctx, "validate", domain=p.domain, budget=plan.budget, proposal_id=plan.proposal_id)
    return m.ValidateResult(plan=plan, job=job)
