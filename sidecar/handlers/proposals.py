"""Proposals: list, show with its diff, accept, reject, propose a
retirement, render a candidate block.

An accept goes on past the store: it refreshes the rules block cache
(`rules.refresh_blocks`) and rewrites every configured export target
(`reexport`); neither can turn a landed accept into an error."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from mecha.core.agents.export_targets import NO_RULES_YET, configured_targets, export_all, store_projects
from mecha.core.agents.permissions import write_asks
from mecha.core.domain.rules import validate_domain
from mecha.core.environment.agents import AGENTS, CODEX
from mecha.core.environment.installed import find_agents
from mecha.core.environment.settings import config_path
from mecha.core.errors import InvalidInput
from mecha.core.learning.learn import lessons_waiting, next_pass_line
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
from mecha.core.providers import resolve_model_config
from mecha.core.providers.config import InvalidModelConfig
from mecha.core.shellwords import mecha_or_none
from mecha.core.store.learning_store import Proposal
from mecha.core.store.ledger import rule_tallies_by_model
from mecha.protocol import methods as m

from ..context import Context
from ..jobs import running_learns, start_auto_learn
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
    asks = write_asks(done.proposal.rules_before, done.proposal.rules, home=Path.home(), codex=exports_to_codex(ctx))
    for w in asks:
        if w.error is not None:
            logging.getLogger(__name__).warning("ask permissions not written to %s: %s", w.path, w.error)
    return m.AcceptProposalResult(
        proposal=done.proposal, exports=reexport(ctx), promotions=done.promotions, used_lessons=used_lessons(done.proposal),
        next_pass=next_pass(ctx, done.proposal),
        permissions=[m.ExportResult(path=w.path, changed=w.changed, error=w.error) for w in asks],
    )


def exports_to_codex(ctx: Context) -> bool:
    """Whether an accept exports to Codex (`configured_targets`: connected,
    or named in `[export]`), so its asks go into Codex's rules too."""
    try:
        targets = configured_targets(config_path(), projects=store_projects(ctx.existing_store()))
    except Exception as exc:  # an unreadable [export] is reported by the export itself
        logging.getLogger(__name__).warning("export targets not read: %s", exc)
        return False
    return any(t.agent == CODEX.name for t in targets)


def next_pass(ctx: Context, p: Proposal, *, start: bool = True) -> m.NextPass | None:
    """Once `p` is answered: when learnable lessons of its scope still wait
    at the learn minimum (`learn.lessons_waiting`; a batched pass leaves
    the batches after a proposal waiting for its answer), a learn pass for
    its domain, started as a hook's is (`jobs.start_auto_learn`) — never
    with no model configured, never beside one running for the domain.
    With `start` false (a rejection: the lessons waiting are mostly the
    ones the person just turned down, and a pass at once would spend a
    call arguing them again) it only says they wait and how to learn them.
    Only ever a new proposal; `None` when nothing waits. The answer has
    landed already: nothing here can turn it into an error."""
    store = ctx.store()
    try:
        waiting = lessons_waiting(store, p.domain, p.project)
    except Exception as exc:
        logging.getLogger(__name__).warning("lessons waiting in %s not counted: %s", p.domain, exc)
        return None
    if not waiting:
        return None

    def said(**why: str | None) -> m.NextPass:
        line = next_pass_line(waiting, p.domain, p.project, **why)
        return m.NextPass(lessons=waiting, message=line, job_id=why.get("job_id"))

    if not start:
        return said(held=mecha_or_none("learn", p.domain) or f"mecha-sidecar learn {p.domain}")
    running = running_learns(store.root).get(p.domain)
    if running is not None:
        return said(running=running)
    if not model_configured(ctx):
        return said(no_model=set_model_command())
    try:
        job = start_auto_learn(ctx, p.domain)
    except Exception as exc:
        return said(failed=f"{type(exc).__name__}: {exc}")
    return said(job_id=job.id)


def model_configured(ctx: Context) -> bool:
    """Whether a pass started now would find a model (the harness's
    options, the environment, then the config file): a learn pass is never
    started only to fail for want of one. A model configured wrongly
    counts as configured: its pass's record says what is wrong."""
    try:
        return resolve_model_config(ctx.model_options, os.environ, config_path()) is not None
    except (InvalidModelConfig, InvalidInput):
        return True


def set_model_command() -> str:
    """The command that makes an agent installed here the model, else the
    first of the agent table's."""
    found = find_agents(os.environ)
    api = found[0].agent.api if found else AGENTS[0].api
    return mecha_or_none("model", "use", api) or f"mecha-sidecar model use {api}"


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
    done = reject_proposal(ctx.store(), p.id, p.reason, wrong=p.wrong)
    return m.ProposalResult(proposal=done, next_pass=next_pass(ctx, done, start=False))


def propose_retirement(ctx: Context, p: m.ProposeRetirementParams, cancel: Cancel) -> m.ProposalResult:
    return m.ProposalResult(proposal=propose(ctx.store(), p.domain, p.rule_id, p.reason))


def render_candidate(ctx: Context, p: m.ProposalIdParams, cancel: Cancel) -> m.RenderCandidateResult:
    store = ctx.store()
    found = store.proposal(p.proposal_id)
    rendered = store.render_candidate(found.domain, found.rules, found.project, scope=found.project)
    return m.RenderCandidateResult(block=rendered.block, rules_hash=rendered.rules_hash, rule_ids=rendered.rule_ids)
