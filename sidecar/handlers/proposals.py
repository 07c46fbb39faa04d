"""Proposals: list, show with its diff, accept, reject, propose a
retirement, render a candidate block.

An accept goes on past the store: it refreshes the rules block cache
(`rules.refresh_blocks`) and rewrites every configured export target
(`reexport`); neither can turn a landed accept into an error."""

from __future__ import annotations

import logging
from pathlib import Path

from mecha.core.agents import hooks as hk
from mecha.core.agents.export_targets import NO_RULES_YET, configured_targets, export_all, store_projects
from mecha.core.agents.permissions import asks_after, set_asks
from mecha.core.domain.rules import validate_domain
from mecha.core.environment.agents import CLAUDE
from mecha.core.environment.settings import config_path
from mecha.core.errors import InvalidInput
from mecha.core.learning.proposals import accept as accept_it
from mecha.core.learning.proposals import (
    list_proposals,
    proposal_changes_in,
    proposal_diff,
    proposal_scope,
    reject_proposal,
    used_lessons,
)
from mecha.core.learning.proposals import propose_retirement as propose
from mecha.core.learning.sources import with_measurements
from mecha.core.learning.validate import proposal_verdict
from mecha.core.store.ledger import rule_tallies_by_model
from mecha.protocol import methods as m

from ..context import Context
from ..rpc import Cancel
from .rules import refresh_blocks


def proposals(ctx: Context, p: m.ProposalsParams, cancel: Cancel) -> m.ProposalsResult:
    store = ctx.existing_store()
    if store is None:
        if p.domain is not None:
            validate_domain(p.domain)
        return m.ProposalsResult(proposals=[])
    return m.ProposalsResult(proposals=list_proposals(store, p.status, p.domain))


def proposal(ctx: Context, p: m.IdParams, cancel: Cancel) -> m.ProposalWithDiffResult:
    store = ctx.store()
    found = store.proposal(p.id)
    changes = with_measurements(proposal_changes_in(store, found), rule_tallies_by_model(store.validations()))
    return m.ProposalWithDiffResult(
        proposal=found, diff=proposal_diff(store, found), changes=changes, verdict=proposal_verdict(store, found),
        scope=proposal_scope(found),
    )


def accept(ctx: Context, p: m.AcceptProposalParams, cancel: Cancel) -> m.AcceptProposalResult:
    edits = {e.number: e.text for e in p.edit}
    if len(edits) != len(p.edit):
        raise InvalidInput("edit: a change is edited twice; give each change's words once")
    done = accept_it(
        ctx.store(), p.id, as_global=p.as_global, without=p.without, wrong=p.wrong, edits=edits, reason=p.reason,
    )
    try:
        refresh_blocks(ctx)
    except Exception as exc:  # the accept has landed: a cache is never its error
        logging.getLogger(__name__).warning("rules block cache not refreshed: %s", exc)
    try:
        add, remove = asks_after(done.proposal.rules_before, done.proposal.rules)
        if add or remove:
            set_asks(hk.settings_path(CLAUDE.name, "user", home=Path.home(), cwd=Path.home()), add, remove)
    except Exception as exc:  # the accept has landed: reported in the log, never its error
        logging.getLogger(__name__).warning("ask permissions not written: %s", exc)
    return m.AcceptProposalResult(
        proposal=done.proposal, exports=reexport(ctx), promotions=done.promotions, used_lessons=used_lessons(done.proposal),
    )


def reexport(ctx: Context) -> list[m.ExportResult]:
    """Write the rules where each connected agent reads the person's own
    instructions, or where `[export]` of `sidecar.toml` says, each file with
    the rules of its scope as they now stand (`export_targets`), so an
    accept reaches the agents. A file left alone because its scope has no
    rule yet is not reported: that was not this accept's doing. The accept has already happened: a target that
    cannot be written is logged and reported in the result, never an error
    of the accept — whatever went wrong, an error here would tell the
    client the accept failed when it had landed."""
    log = logging.getLogger(__name__)
    config = config_path()
    store = ctx.existing_store()
    try:
        targets = configured_targets(config, projects=store_projects(store))
    except InvalidInput as exc:
        log.warning("export targets not read: %s", exc)
        return [m.ExportResult(path=str(config), error=f"{type(exc).__name__}: {exc}")]
    results = [r for r in export_all(store, targets) if r.skipped != NO_RULES_YET]
    for r in results:
        if r.error is not None:
            log.warning("export to %s failed: %s", r.path, r.error)
    return [m.ExportResult(path=r.path, changed=r.changed, error=r.error, project=r.project, skipped=r.skipped) for r in results]


def reject(ctx: Context, p: m.RejectProposalParams, cancel: Cancel) -> m.ProposalResult:
    return m.ProposalResult(proposal=reject_proposal(ctx.store(), p.id, p.reason, wrong=p.wrong))


def propose_retirement(ctx: Context, p: m.ProposeRetirementParams, cancel: Cancel) -> m.ProposalResult:
    return m.ProposalResult(proposal=propose(ctx.store(), p.domain, p.rule_id, p.reason))


def render_candidate(ctx: Context, p: m.ProposalIdParams, cancel: Cancel) -> m.RenderCandidateResult:
    store = ctx.store()
    found = store.proposal(p.proposal_id)
    rendered = store.render_candidate(found.domain, found.rules, found.project, scope=found.project)
    return m.RenderCandidateResult(block=rendered.block, rules_hash=rendered.rules_hash, rule_ids=rendered.rule_ids)
