"""One handler per `mecha/*` method, shared by the harness endpoint, the
editor endpoint and the CLI.

Each handler is wiring: typed params in, a core call, a typed result out.
Decisions live in `mecha.core`; if a handler grows an `if` about the domain,
that `if` belongs there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mecha.core.errors import InvalidInput, NotFound
from mecha.core.learning.rules import run_domains_including, validate_domain
from mecha.core.sessions.mining import extract_interventions, locate_followup
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.files import gc_paused
from mecha.core.store.learning_store import LearningStore
from mecha.protocol import methods as m

from .context import Context
from .rpc import Cancel

Handler = Callable[[Context, Any, Cancel], Any]
HANDLERS: dict[str, Handler] = {}


_H = TypeVar("_H", bound=Callable[..., Any])


def handles(method: str) -> Callable[[_H], _H]:
    def register(fn: _H) -> _H:
        assert method in m.METHODS, method
        HANDLERS[method] = fn
        return fn

    return register


# ─── the rules block (the harness's hot path) ───────────────────────────────


class _BlockCache:
    """`rulesPromptBlock` answers keyed by the store root and its rules
    fingerprint (`LearningStore.rules_fingerprint`: name, inode, size, mtime
    and ctime of every rules file, a link's target included). A pass's
    rename gives a new inode, so it is seen on the next call; nothing is
    served from a file that changed.

    This is not a second cache but this process's view of the one the
    store keeps on disk (`mecha.core.store.blockcache`, which the next run's
    first stage answers from): the same answers under the same key, filled
    where the disk copy is written (`ctx.on_block_rendered`), and both
    refreshed together by what writes the rules (`refresh_blocks`, after an
    accept). It holds the answers decoded, so a long-lived server does not
    read and decode the file again at every call."""

    def __init__(self) -> None:
        self.key: tuple[Any, ...] | None = None
        #: `(domain, project root)` → the answer.
        self.value: dict[tuple[str | None, str | None], m.RulesPromptBlockResult] = {}

    def identity(self, root: Path) -> tuple[Any, ...] | None:
        fingerprint = LearningStore(root).rules_fingerprint()
        return None if fingerprint is None else (str(root), fingerprint)


_block_cache = _BlockCache()


def _empty_block(domains: list[str], project: str | None) -> m.RulesPromptBlockResult:
    return m.RulesPromptBlockResult(
        block=None, rules_hash=None, rule_ids=[], domains=domains, over_budget=[], project=project
    )


@handles("mecha/rulesPromptBlock")
def rules_prompt_block(ctx: Context, p: m.RulesPromptBlockParams, cancel: Cancel) -> m.RulesPromptBlockResult:
    from mecha.core.learning.scope import resolve_project

    if p.domain is not None:
        validate_domain(p.domain)
    project = None if p.project is None else resolve_project(p.project)
    key = _block_cache.identity(ctx.root)
    if key is None:
        return _empty_block(run_domains_including(p.domain), project)
    if key != _block_cache.key:
        _block_cache.key = key
        _block_cache.value = {}
    cached = _block_cache.value.get((p.domain, project))
    if cached is not None:
        return cached
    store = ctx.existing_store()
    if store is None:
        return _empty_block(run_domains_including(p.domain), project)
    result = _block_result(store, p.domain, project)
    # Kept only if no rules file changed while it was read: a block read
    # across an accept must not be filed under the identity from before it.
    if _block_cache.identity(ctx.root) == key:
        _block_cache.value[(p.domain, project)] = result
        if ctx.on_block_rendered is not None:
            ctx.on_block_rendered(p.domain, project, result, key[1])
    return result


def _block_result(store: LearningStore, domain: str | None, project: str | None) -> m.RulesPromptBlockResult:
    rendered = store.render_block(domain, project)
    return m.RulesPromptBlockResult(
        block=rendered.block,
        rules_hash=rendered.rules_hash,
        rule_ids=rendered.rule_ids,
        domains=rendered.domains,
        over_budget=_over_budget(store, project),
        project=project,
    )


def refresh_blocks(ctx: Context) -> int:
    """After the rules changed (an accept): render again every answer the
    block cache holds — on disk and in this process — under the new rules,
    and keep them, so the next run's first stage answers at once instead of
    handing over to the full server to render them. How many were kept on
    disk.

    A fingerprint is trusted beyond this process only once its newest change
    is older than a clock tick (`layout.is_racy`), so this waits that long
    (at most `RACY_FINE_NS`) before writing; where timestamps are coarse,
    it does not wait and the next run renders them. A cache that cannot be
    written is a later miss, never an error of the accept."""
    import time

    from mecha.core.store import blockcache
    from mecha.core.store.layout import RACY_FINE_NS, racy_until

    from ._version import code_identity

    code = code_identity()
    kept = blockcache.read(ctx.root, code)
    wanted = set(_block_cache.value) | set(() if kept is None else blockcache.kept_keys(kept))
    store = ctx.existing_store()
    key = _block_cache.identity(ctx.root)
    if store is None or key is None or not wanted:
        return 0
    results = {(d, pr): _block_result(store, d, pr) for d, pr in sorted(wanted, key=repr)}
    if _block_cache.identity(ctx.root) != key:
        return 0  # changed again while rendered: the next call renders it
    _block_cache.key, _block_cache.value = key, results
    until = racy_until(key[1])
    if kept is None or (until is not None and until - time.time_ns() > RACY_FINE_NS):
        return 0
    if until is not None:
        time.sleep(max(0, until - time.time_ns() + 1_000_000) / 1e9)
    if _block_cache.identity(ctx.root) != key:
        return 0
    import msgspec

    answers = {k: msgspec.json.encode(r) for k, r in results.items()}
    written = blockcache.write_answers(ctx.root, code, key[1], answers, kept.initialize, time.time_ns(), merge=False)
    return len(answers) if written else 0


def _over_budget(store: Any, project: str | None = None) -> list[m.OverBudget]:
    """`over_budget_scopes` (global, and the run's project), except that a
    learned file this run does not load and that does not parse must not
    cost the run its rules block: the rendering above already refused any
    file the run *does* load, and the doctor reports the rest by file and
    line."""
    from mecha.core.errors import InvalidStore
    from mecha.core.learning.rules import MAX_ACTIVE_RULES_PER_DOMAIN, active_count

    try:
        return [m.OverBudget(domain=d, active=n, project=w) for d, w, n in store.over_budget_scopes(project)]
    except InvalidStore:
        pass
    out = []
    scopes = [(None, store.domains())] + ([(project, store.project_domains(project))] if project else [])
    for where, domains in scopes:
        for domain in domains:
            try:
                active = active_count(store.learned_rules(domain, where))
            except InvalidStore:
                continue
            if active > MAX_ACTIVE_RULES_PER_DOMAIN:
                out.append(m.OverBudget(domain=domain, active=active, project=where))
    return out


# ─── pure readings of a transcript ──────────────────────────────────────────


@handles("mecha/extractInterventions")
def extract(ctx: Context, p: m.ExtractInterventionsParams, cancel: Cancel) -> m.ExtractInterventionsResult:
    cancel.check()
    return m.ExtractInterventionsResult(interventions=extract_interventions(p.messages, ctx.voices))


@handles("mecha/locateFollowup")
def locate(ctx: Context, p: m.LocateFollowupParams, cancel: Cancel) -> m.LocateFollowupResult:
    return m.LocateFollowupResult(index=locate_followup(p.messages, p.text))


@handles("mecha/liveAffect")
def live_affect(ctx: Context, p: m.LiveAffectParams, cancel: Cancel) -> m.LiveAffectResult:
    from mecha.core.gate.assembler import live

    if p.run_started_at < 0:
        raise InvalidInput("run_started_at: must be a message index (>= 0)")
    affect = live(p.session_id, p.stats, p.messages, p.run_started_at, voices=ctx.voices)
    return m.LiveAffectResult(affect=affect.wire())


@handles("mecha/appraiseSession")
def appraise(ctx: Context, p: m.AppraiseSessionParams, cancel: Cancel) -> Any:
    from mecha.core.gate.appraisal import appraisal_to_builtins
    from mecha.core.gate.assembler import Probe, ProbeAt, appraise_session
    from mecha.core.gate.goal import parse_goal
    from mecha.core.identity import now

    goal = parse_goal(p.goal) if p.goal is not None else None
    appraisal = appraise_session(
        p.session_id,
        p.stats,
        p.messages,
        created_at=now(),
        drafts=p.drafts,
        goal=goal,
        taint_timeline=p.taint_timeline,
        probes=[ProbeAt(at=q.at, verdict=Probe(q.verdict)) for q in p.probes],
        voices=ctx.voices,
    )
    return appraisal_to_builtins(appraisal)


# ─── handing over work for the background passes ────────────────────────────


@handles("mecha/sessionEnded")
def session_ended(
    ctx: Context, p: m.SessionEndedParams, cancel: Cancel, *, start_pass: bool = True
) -> m.SessionEndedResult:
    """Survey a finished run's transcript and, when it holds interventions
    and is not mined yet, queue what the survey found (the pass reflects on
    exactly that) and start a reflect pass. `start_pass=False` (the CLI handing over a folder
    of sessions, which starts one pass after the last) only queues."""
    import msgspec

    from mecha.core.identity import validate_record_id
    from mecha.core.learning.holdout import in_holdout, keep_transcript
    from mecha.core.learning.reflection import Origin
    from mecha.core.learning.scope import resolve_project
    from mecha.core.store.inbox import HandOver, count_waiting, hand_over, session_entry

    validate_record_id(p.session_id, "session_id")
    project = None if p.project is None else resolve_project(p.project)
    entry = session_entry(
        p.session_id, p.messages, p.taint_timeline, interactive=p.interactive, voices=ctx.voices, project=project
    )
    plans = entry.plans or []
    learnable = sum(1 for plan in plans if plan.origin is Origin.CLEAN)
    store = ctx.store()
    if not plans:
        if p.session_id in store.mined_sessions():
            return m.SessionEndedResult(interventions=0, learnable=0, already_mined=True, job=None)
        # Nothing to queue from this run; but work a failed pass left waiting
        # is picked up at the next run's end rather than waiting for one
        # that has interventions of its own.
        job = start_job(ctx, "reflect") if start_pass and count_waiting(store) else None
        return m.SessionEndedResult(interventions=0, learnable=0, already_mined=False, job=job)
    if learnable and in_holdout(p.session_id) and p.session_id not in store.mined_sessions():
        # Kept so `validate` can replay it (`core.learning.holdout`).
        kept = keep_transcript(store.root, p.session_id, p.messages, p.taint_timeline, interactive=p.interactive)
        entry = msgspec.structs.replace(entry, file=str(kept))
    done, job = hand_over(store, entry, (lambda: start_job(ctx, "reflect", session_id=p.session_id)) if start_pass else None)
    return m.SessionEndedResult(
        interventions=len(plans),
        learnable=learnable,
        already_mined=done is HandOver.MINED,
        job=job,
        already_queued=done is HandOver.WAITING,
    )


@handles("mecha/draftResolved")
def draft_resolved(ctx: Context, p: m.DraftResolvedParams, cancel: Cancel) -> m.DraftResolvedResult:
    from mecha.core.identity import validate_record_id
    from mecha.core.learning.survey import survey_draft
    from mecha.core.store.inbox import DraftEntry, HandOver, hand_over

    validate_record_id(p.item.id, "item.id")
    if p.item.session_id is not None:
        validate_record_id(p.item.session_id, "item.session_id")
    plan = survey_draft(p.item)
    store = ctx.store()
    intervention = plan.intervention if plan else None
    if plan is None:
        if p.item.id in store.mined_outbox():
            return m.DraftResolvedResult(intervention=None, already_mined=True, job=None)
        return m.DraftResolvedResult(intervention=None, already_mined=False, job=None)
    done, job = hand_over(store, DraftEntry(p.item, plan), lambda: start_job(ctx, "reflect", session_id=p.item.session_id))
    return m.DraftResolvedResult(
        intervention=intervention, already_mined=done is HandOver.MINED, job=job, already_queued=done is HandOver.WAITING
    )


@handles("mecha/learn")
def learn(ctx: Context, p: m.LearnParams, cancel: Cancel) -> m.LearnResult:
    from mecha.core.learning.learn import ALL_SCOPES, near_domain, scopes_ready
    from mecha.core.learning.scope import resolve_project

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
    job = start_job(ctx, "learn", domain=p.domain, minimum=p.min, project=project, retry=p.retry)
    return m.LearnResult(job=job)


@handles("mecha/jobs")
def jobs(ctx: Context, p: m.Empty, cancel: Cancel) -> m.JobsResult:
    from mecha.core.store.inbox import count_waiting, list_set_aside

    store = ctx.existing_store()
    if store is None:
        return m.JobsResult(jobs=jobs_mod.list_jobs(ctx.root))
    return m.JobsResult(
        jobs=jobs_mod.list_jobs(ctx.root), waiting=count_waiting(store), set_aside=len(list_set_aside(store))
    )


@handles("mecha/inbox")
def inbox(ctx: Context, p: m.Empty, cancel: Cancel) -> m.InboxResult:
    from mecha.core.store.inbox import count_waiting, list_set_aside

    store = ctx.existing_store()
    if store is None:
        return m.InboxResult(waiting=0, set_aside=[])
    from mecha.core.agents.retrust import withheld

    count, recent = withheld(store)
    return m.InboxResult(waiting=count_waiting(store), set_aside=list_set_aside(store), withheld=count, withheld_recent=recent)


@handles("mecha/inboxRetry")
def inbox_retry(ctx: Context, p: m.InboxRetryParams, cancel: Cancel) -> m.InboxRetryResult:
    from mecha.core.store.inbox import count_waiting, retry_set_aside

    if p.id is None:
        store = ctx.store()
        running = running_pass(store.root, "reflect")
        if running is not None:
            return m.InboxRetryResult(entry=None, job=running)
        return m.InboxRetryResult(entry=None, job=start_job(ctx, "reflect") if count_waiting(store) else None)
    entry = retry_set_aside(ctx.store(), p.id)
    return m.InboxRetryResult(entry=entry, job=start_job(ctx, "reflect"))


@handles("mecha/inboxDrop")
def inbox_drop(ctx: Context, p: m.IdParams, cancel: Cancel) -> m.InboxDropResult:
    from mecha.core.store.inbox import drop_set_aside

    return m.InboxDropResult(entry=drop_set_aside(ctx.store(), p.id))


@handles("mecha/trust")
def trust(ctx: Context, p: m.TrustParams, cancel: Cancel) -> m.TrustResult:
    from mecha.core.sessions import trust as standing

    reclassified = None
    job = None
    if p.action is standing.TrustAction.LIST:
        if p.entries:
            raise InvalidInput("trust list takes no entries")
        kept = standing.load_trust()
    elif not p.entries:
        raise InvalidInput(f"trust {p.action.value} needs at least one entry: Bash(bd), Bash(git fetch) or mcp__notes__read")
    elif p.action is standing.TrustAction.REMOVE:
        kept = standing.remove_trust(p.entries)
    else:
        from mecha.core.agents.retrust import reclassify

        kept = standing.add_trust(p.entries)
        mining = ctx.with_voices("claude", "codex")
        store = mining.store()
        reclassified = reclassify(store, voices=mining.voices)
        if reclassified.queued:
            job = start_job(mining, "reflect")
    return m.TrustResult(path=kept.path or "", entries=list(kept.entries), reclassified=reclassified, job=job)


@handles("mecha/importSessions")
def import_sessions(ctx: Context, p: m.ImportSessionsParams, cancel: Cancel) -> m.ImportSessionsResult:
    from mecha.core.agents import importing
    from mecha.core.sessions.foreign import policy_with
    from mecha.core.sessions.trust import unknown_summary
    from mecha.core.store.inbox import count_waiting

    mining = ctx.with_voices(p.source, extra=p.voices)
    root = Path(p.dir) if p.dir is not None else importing.DEFAULT_DIRS[p.source].expanduser()
    since = importing.parse_since(p.since) if p.since else None
    if not root.exists():
        importing.find_session_files(root, p.source)  # says so, before a store is made
    store = mining.store()
    report = importing.import_sessions(
        store, p.source, root, voices=mining.voices, policy=policy_with(p.source, p.trust_tools, p.distrust_tools),
        since=since, project=p.project, dry_run=p.dry_run,
    )
    # What an earlier pass left pending (answers that were unusable) is
    # asked again too, as `mecha/sessionEnded` does: the retry a pass's
    # outcome names.
    # Nothing new while a pass is still at work on what an earlier import
    # queued: that pass is the answer (a second one would find everything
    # taken and report "0 reflections" while it goes on).
    running = None if p.dry_run or report.queued else running_pass(store.root, "reflect")
    if running is not None:
        job: jobs_mod.Job | None = running
    else:
        job = None if p.dry_run or not (report.queued or count_waiting(store)) else start_job(mining, "reflect")
    sessions = [
        m.ImportedSession(
            path=plan.path, session_id=plan.session_id, project=plan.project, found=plan.found, new=len(plan.fresh),
            counts=plan.counts(), held=plan.held, skipped_lines=plan.skipped_lines, held_back=plan.held_back,
        )
        for plan in report.sessions
    ]
    return m.ImportSessionsResult(
        source=report.source, root=report.root, sessions=sessions, unchanged=report.unchanged, filtered=report.filtered,
        skipped=report.skipped, skipped_lines=report.skipped_lines, queued=report.queued, dry_run=report.dry_run,
        warnings=report.warnings, job=job, in_flight=running is not None,
        unknown=unknown_summary(plan.held_back for plan in report.sessions),
    )


@handles("mecha/hookStatus")
def hook_status(ctx: Context, p: m.HookStatusParams, cancel: Cancel) -> m.HookStatusResult:
    from mecha.core.agents import hooks as hk

    home, cwd = Path.home(), Path.cwd()
    files = []
    for agent in [p.agent] if p.agent else list(hk.AGENTS):
        for scope in [p.scope] if p.scope else list(hk.SCOPES):
            got = hk.installed(hk.read_settings(hk.settings_path(agent, scope, home=home, cwd=cwd)), agent)
            files.append(m.HookFile(agent=agent, scope=scope, path=got.path, exists=got.exists, events=got.events,
                                    missing=got.missing, stale_programs=got.stale_programs))
    return m.HookStatusResult(files=files, store=str(ctx.root), log=hk.hook_log_tail(ctx.root))


@handles("mecha/installHooks")
def install_hooks(ctx: Context, p: m.InstallHooksParams, cancel: Cancel) -> m.InstallHooksResult:
    import sys

    from mecha.core.agents import hooks as hk
    from mecha.core.agents.export import rewrite_file

    path = hk.settings_path(p.agent, p.scope, home=Path.home(), cwd=Path.cwd())
    learning_dir = str(ctx.root) if p.pin_store else None
    program = hk.hook_program(sys.executable)

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        return hk.without_ours(doc) if p.uninstall else hk.with_ours(doc, p.agent, program, learning_dir)

    changed = rewrite_file(path, lambda raw: hk.settings_after(path, raw, change), appends=False,
                           what="the hooks change").changed
    got = hk.installed(hk.read_settings(path), p.agent)
    installed = m.HookSettings(path=got.path, exists=got.exists, events=got.events, missing=got.missing,
                               stale_programs=got.stale_programs)
    action = "uninstall" if p.uninstall else "install"
    return m.InstallHooksResult(
        action=action, agent=p.agent, path=str(path), changed=changed, installed=installed,
        model=None if p.uninstall else _hooks_model(),
    )


def _hooks_model() -> str:
    """What `hooks install` says of the model its passes will use."""
    import os

    from mecha.core.agents.hooks import hooks_model_note
    from mecha.core.agents.installed import find_agents
    from mecha.core.providers import default_config_path, resolve_model_config
    from mecha.core.providers.config import SOURCE_ENV

    try:
        config = resolve_model_config(None, os.environ, default_config_path())
    except ValueError as exc:
        return f"the model configuration here is not usable: {exc}; `mecha-sidecar doctor` says more"
    return hooks_model_note(config, SOURCE_ENV, [a.describe() for a in find_agents()] if config is None else [])


@handles("mecha/exportRules")
def export_rules(ctx: Context, p: m.ExportRulesParams, cancel: Cancel) -> m.ExportRulesResult:
    """Each file chosen (`export_targets.chosen_targets`) told its scope's
    rules. One file named (by `path` or `project`) fails as the method's
    error; of several, each failure is named in its `exports` entry and the
    rest are still written."""
    import os

    from mecha.core.agents import export_targets as et
    from mecha.core.learning.scope import resolve_project

    store = ctx.existing_store()
    project = None if p.project is None else resolve_project(p.project)
    path = None if p.path is None else Path(p.path)
    targets = et.chosen_targets(
        p.target, path, project, projects=et.store_projects(store), home=Path.home(), cwd=os.getcwd()
    )
    if path is not None or project is not None:
        [target] = targets
        outcome = et.export_to(store, target, check=p.check)
        results = [et.TargetResult(str(target.path), target.project, changed=outcome.changed, skipped=outcome.skipped)]
    else:
        results = et.export_all(store, targets, check=p.check)
    changed = any(r.changed for r in results)
    return m.ExportRulesResult(
        path=results[0].path if results else "", changed=changed, up_to_date=not changed, check=p.check,
        exports=[m.ExportResult(path=r.path, changed=r.changed, error=r.error, project=r.project, skipped=r.skipped) for r in results],
    )


def running_pass(root: Path, kind: jobs_mod.JobKind) -> jobs_mod.Job | None:
    """The newest pass of `kind` still running in the store at `root`, if any."""
    return next((j for j in jobs_mod.list_jobs(root) if j.kind == kind and j.state == "running"), None)


def start_job(ctx: Context, kind: jobs_mod.JobKind, **kw: Any) -> jobs_mod.Job:
    from .jobs import start_pass

    return start_pass(ctx, kind, **kw)


# ─── proposals ──────────────────────────────────────────────────────────────


@handles("mecha/proposals")
def proposals(ctx: Context, p: m.ProposalsParams, cancel: Cancel) -> m.ProposalsResult:
    from mecha.core.learning.proposals import list_proposals

    store = ctx.existing_store()
    if store is None:
        if p.domain is not None:
            validate_domain(p.domain)
        return m.ProposalsResult(proposals=[])
    return m.ProposalsResult(proposals=list_proposals(store, p.status, p.domain))


@handles("mecha/proposal")
def proposal(ctx: Context, p: m.IdParams, cancel: Cancel) -> m.ProposalWithDiffResult:
    from mecha.core.learning.proposals import proposal_changes_in, proposal_diff, proposal_scope
    from mecha.core.learning.sources import with_measurements
    from mecha.core.learning.validate import proposal_verdict
    from mecha.core.store.ledger import rule_tallies_by_model

    store = ctx.store()
    found = store.proposal(p.id)
    changes = with_measurements(proposal_changes_in(store, found), rule_tallies_by_model(store.validations()))
    return m.ProposalWithDiffResult(
        proposal=found, diff=proposal_diff(store, found), changes=changes, verdict=proposal_verdict(store, found),
        scope=proposal_scope(found),
    )


@handles("mecha/acceptProposal")
def accept(ctx: Context, p: m.AcceptProposalParams, cancel: Cancel) -> m.AcceptProposalResult:
    from mecha.core.learning.proposals import accept as accept_it

    done = accept_it(ctx.store(), p.id, as_global=p.as_global, without=p.without, reason=p.reason)
    try:
        refresh_blocks(ctx)
    except Exception as exc:  # the accept has landed: a cache is never its error
        import logging

        logging.getLogger(__name__).warning("rules block cache not refreshed: %s", exc)
    return m.AcceptProposalResult(proposal=done.proposal, exports=reexport(ctx), promotions=done.promotions)


def reexport(ctx: Context) -> list[m.ExportResult]:
    """Rewrite every `[export]` target of `sidecar.toml`, each with the rules
    of its scope as they now stand (`export_targets`), so an accept reaches
    the other agents too. The accept has already happened: a target that
    cannot be written is logged and reported in the result, never an error
    of the accept — whatever went wrong, an error here would tell the
    client the accept failed when it had landed."""
    import logging

    from mecha.core.agents.export_targets import configured_targets, export_all, store_projects
    from mecha.core.providers.config import default_config_path

    log = logging.getLogger(__name__)
    config = default_config_path()
    store = ctx.existing_store()
    try:
        targets = configured_targets(config, projects=store_projects(store))
    except InvalidInput as exc:
        log.warning("export targets not read: %s", exc)
        return [m.ExportResult(path=str(config), error=f"{type(exc).__name__}: {exc}")]
    results = export_all(store, targets)
    for r in results:
        if r.error is not None:
            log.warning("export to %s failed: %s", r.path, r.error)
    return [m.ExportResult(path=r.path, changed=r.changed, error=r.error, project=r.project, skipped=r.skipped) for r in results]


@handles("mecha/rejectProposal")
def reject(ctx: Context, p: m.RejectProposalParams, cancel: Cancel) -> m.ProposalResult:
    from mecha.core.learning.proposals import reject_proposal

    return m.ProposalResult(proposal=reject_proposal(ctx.store(), p.id, p.reason, wrong=p.wrong))


@handles("mecha/proposeRetirement")
def propose_retirement(ctx: Context, p: m.ProposeRetirementParams, cancel: Cancel) -> m.ProposalResult:
    from mecha.core.learning.proposals import propose_retirement as propose

    return m.ProposalResult(proposal=propose(ctx.store(), p.domain, p.rule_id, p.reason))


@handles("mecha/renderCandidate")
def render_candidate(ctx: Context, p: m.ProposalIdParams, cancel: Cancel) -> m.RenderCandidateResult:
    store = ctx.store()
    found = store.proposal(p.proposal_id)
    rendered = store.render_candidate(found.domain, found.rules, found.project, scope=found.project)
    return m.RenderCandidateResult(block=rendered.block, rules_hash=rendered.rules_hash, rule_ids=rendered.rule_ids)


# ─── the ledger and the gate ────────────────────────────────────────────────


@handles("mecha/recordValidation")
def record_validation(ctx: Context, p: Any, cancel: Cancel) -> m.Empty:
    validate_domain(p.domain)
    store = ctx.store()
    with store.lock():
        store.append_validation(p)
    return m.Empty()


@handles("mecha/ruleSources")
def rule_sources(ctx: Context, p: m.RuleSourcesParams, cancel: Cancel) -> Any:
    from mecha.core.learning.proposals import rule_sources as sources

    store = ctx.existing_store()
    if store is None:
        raise NotFound(f"no rule {p.rule_id!r}: there is no store yet")
    return sources(store, p.rule_id)


@handles("mecha/ruleTallies")
def rule_tallies(ctx: Context, p: m.RuleTalliesParams, cancel: Cancel) -> m.RuleTalliesResult:
    from mecha.core.learning.sources import describe_tally
    from mecha.core.store.ledger import rule_tallies as fold
    from mecha.core.store.ledger import rule_tallies_by_model

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


@handles("mecha/lessons")
def lessons(ctx: Context, p: m.LessonsParams, cancel: Cancel) -> Any:
    """The stored lessons a person can read before any proposal
    (`lessons.list_lessons`); reads only, and nothing when there is no
    store yet."""
    from mecha.core.learning.lessons import ALL, LessonCounts, LessonsResult, list_lessons
    from mecha.core.learning.reflection import Origin
    from mecha.core.learning.scope import resolve_project
    from mecha.core.store.layout import GLOBAL_SCOPE

    if p.domain is not None:
        validate_domain(p.domain)
    if p.limit is not None and p.limit < 1:
        raise InvalidInput("limit: must be at least 1")
    scope = ALL if p.scope is None else GLOBAL_SCOPE if p.scope == GLOBAL_SCOPE else resolve_project(p.scope, "scope")
    store = ctx.existing_store()
    if store is None:
        return LessonsResult(lessons=[], counts=LessonCounts())
    origin = None if p.origin is None else Origin(p.origin)
    found, counts = list_lessons(
        store.reflexions(), domain=p.domain, scope=scope, trigger=p.trigger, origin=origin, pending=p.pending
    )
    return LessonsResult(lessons=found[: p.limit] if p.limit is not None else found, counts=counts)


@handles("mecha/validate")
def validate(ctx: Context, p: m.ValidateParams, cancel: Cancel) -> m.ValidateResult:
    """The plan (which reflections, how many calls), and unless it is a dry
    run or holds no probe, the pass that runs it."""
    from mecha.core.learning.validate import no_probe_reason, plan_validation, validate_budget
    from mecha.core.store.ledger import ValidationPlan

    validate_domain(p.domain)
    store = ctx.existing_store()
    if store is None:  # nothing to measure, and a plan creates no store
        if p.proposal_id is not None:
            raise NotFound(f"no proposal matching `{p.proposal_id}`: there is no store yet")
        plan = ValidationPlan(domain=p.domain, budget=validate_budget(p.budget))
    else:
        plan = plan_validation(store, p.domain, p.budget, p.proposal_id)
    if p.dry_run:
        empty = "" if plan.probes else f" ({no_probe_reason(plan)})"
        return m.ValidateResult(plan=plan, job=None, reason=f"a dry run: nothing was called{empty}")
    if not plan.probes:
        return m.ValidateResult(plan=plan, job=None, reason=no_probe_reason(plan))
    job = start_job(ctx, "validate", domain=p.domain, budget=plan.budget, proposal_id=plan.proposal_id)
    return m.ValidateResult(plan=plan, job=job)


def _holdout_in(value: int) -> int:
    if value < 1:
        raise InvalidInput("holdout_in: must be at least 1 (one episode in every N is held out)")
    return value


@handles("mecha/judge")
def judge(ctx: Context, p: m.JudgeParams, cancel: Cancel) -> Any:
    from mecha.core.gate import candidate

    holdout_in = _holdout_in(p.holdout_in)
    if p.pairs is not None:
        if p.baseline is not None or p.candidate is not None:
            raise InvalidInput("pairs: give either `pairs` or `baseline` and `candidate`, not both")
        pairs = p.pairs
    elif p.baseline is not None and p.candidate is not None:
        pairs = candidate.pair_arms(p.baseline, p.candidate)
    else:
        raise InvalidInput("pairs: missing; give `pairs`, or both `baseline` and `candidate`")
    return candidate.judge(p.change_class, p.prediction, pairs, holdout_in)


@handles("mecha/judgeDrawn")
def judge_drawn(ctx: Context, p: m.JudgeDrawnParams, cancel: Cancel) -> Any:
    from mecha.core.gate import candidate

    return candidate.judge_drawn(p.change_class, p.prediction, p.selection, p.holdout)


@handles("mecha/doctor")
def doctor(ctx: Context, p: m.Empty, cancel: Cancel) -> m.DoctorResult:
    from mecha.core.doctor import run_checks

    checks = run_checks(ctx.root, ctx.model_options)
    return m.DoctorResult(checks=[m.DoctorCheck(name=c.name, ok=c.ok, detail=c.detail) for c in checks])


# ─── dispatch ───────────────────────────────────────────────────────────────


#: Params larger than this are decoded with the cyclic collector paused.
_BULK_PARAMS = 64 * 1024


def make_dispatch(ctx: Context) -> Callable[[str, Any, Cancel], Any]:
    """The dispatcher the harness endpoint serves: raw params decoded straight
    into the method's Struct, then the handler."""
    from mecha.protocol.errors import METHOD_NOT_FOUND, RpcError

    def dispatch(method: str, raw: Any, cancel: Cancel) -> Any:
        spec = m.METHODS.get(method)
        handler = HANDLERS.get(method)
        if spec is None or handler is None or spec.notification:
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")
        if raw is not None and len(raw) > _BULK_PARAMS:
            # A transcript decodes to tens of thousands of objects; without
            # the collector re-walking them as they are made, several times
            # faster (decoded JSON holds no reference cycles).
            with gc_paused():
                params = m.decode_params(spec.params, raw)
        else:
            params = m.decode_params(spec.params, raw)
        return handler(ctx, params, cancel)

    return dispatch


def call(ctx: Context, method: str, params: Any, cancel: Cancel | None = None) -> Any:
    """Call a handler with already-decoded JSON params (the CLI's and the
    editor endpoint's path), returning JSON-ready builtins."""
    spec = m.METHODS[method]
    typed = m.convert_params(spec.params, params)
    return m.to_builtins(HANDLERS[method](ctx, typed, cancel or Cancel()))
