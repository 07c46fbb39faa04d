"""`mecha-sidecar pass reflect|learn`: the body of a detached background pass.

Runs with the store root and the harness's model options in its environment
(see `Context.pass_environment`; the voices travel in each inbox entry), logs to its job's log file, and
writes the job's final record whatever happens — including `failed` with the
reason when there is no model, the model misbehaves, or the pass crashes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from mecha.core.errors import InvalidStore, NoModel
from mecha.core.identity import now
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.learning_store import LearningStore

from .context import model_options_from_environment

if TYPE_CHECKING:
    from mecha.core.providers.agent_cli import AgentCliProvider
    from mecha.core.providers.anthropic import AnthropicProvider
    from mecha.core.providers.config import ModelConfig
    from mecha.core.providers.openai import OpenAIProvider


def _config() -> ModelConfig | None:
    from mecha.core.environment.settings import config_path
    from mecha.core.providers import resolve_model_config

    return resolve_model_config(model_options_from_environment(), os.environ, config_path())


#: The provider the pass built, once it has one: what `_ProgressWriter`
#: reads to state and count the calls made on the person's account.
_BUILT: list[OpenAIProvider | AnthropicProvider | AgentCliProvider] = []


def _provider(store: LearningStore) -> tuple[OpenAIProvider | AnthropicProvider | AgentCliProvider, str | None]:
    from mecha.core.providers import require_provider
    from mecha.core.providers.structured import ModeMemory

    cfg = _config()
    memory = ModeMemory(store.structured_modes_path, root=store.root)
    provider = require_provider(cfg, memory=memory)
    _BUILT.append(provider)
    # A model, at last: a note that none was configured is no longer true.
    from mecha.core.agents.notice import clear_no_model

    clear_no_model(str(store.root))
    # An empty model is an agent's own default: the request names none.
    return provider, (cfg.model or None if cfg else None)


def _metered() -> AgentCliProvider | None:
    """The pass's provider when its calls go on the person's own account
    (an agent's command line), else `None`."""
    from mecha.core.providers.agent_cli import AgentCliProvider

    return next((p for p in _BUILT if isinstance(p, AgentCliProvider)), None)


#: How often, at most, a pass rewrites its job record with its progress (a
#: watcher polls it; every answer of a fast model need not be a write).
PROGRESS_WRITE_S = 0.5


class _ProgressWriter:
    """Writes the pass's progress into its job record, where every watcher
    (the CLI waiting on it, an editor's `$/progress`, the demo) reads it."""

    def __init__(self, root: Path, job: jobs_mod.Job) -> None:
        self.root = root
        self.job = job
        self.last = 0.0

    def __call__(self, done: int, total: int, unit: jobs_mod.ProgressUnit = "intervention") -> None:
        import time

        progress = jobs_mod.JobProgress(done=done, total=total, unit=unit)
        if progress == self.job.progress:
            return
        self.job = msgspec.structs.replace(self.job, progress=progress)
        stating = self._state_calls(total)
        now_s = time.monotonic()
        if done < total and done > 0 and now_s - self.last < PROGRESS_WRITE_S and not stating:
            return
        self.last = now_s
        try:
            jobs_mod.write_job(self.root, self.job)
        except Exception as exc:  # progress is a courtesy: never the reason a pass fails
            logging.getLogger("mecha.pass").warning("progress not recorded: %s", exc)

    def _state_calls(self, total: int) -> bool:
        """On an agent's command line, the calls the pass will make, said
        once, before any answer: in the record (every watcher shows it) and
        the log. One call per unit of work — the agents report no reply cut
        off for room, the one case a pass asks again."""
        provider = _metered()
        said = self.job.account_calls
        if provider is None or total <= 0 or (said is not None and total <= said.stated):
            return False
        calls = jobs_mod.AccountCalls(account=provider.account, stated=total)
        self.job = msgspec.structs.replace(self.job, account_calls=calls)
        if said is None:
            _say(f"this pass will make {total} call(s) on your {provider.account} account ({provider.label})")
        else:  # work found after the first count: said again, never hidden
            _say(f"this pass found more to ask: {total} call(s) in all on your {provider.account} account")
        return True

    def settle(self, final: jobs_mod.Job) -> jobs_mod.Job:
        """The ended pass's record with the calls it made on the person's
        account counted, beside what it stated."""
        provider = _metered()
        if provider is None:
            return final
        stated = self.job.account_calls.stated if self.job.account_calls is not None else 0
        calls = jobs_mod.AccountCalls(account=provider.account, stated=stated, made=provider.calls)
        said = jobs_mod.account_calls_text(calls)
        outcome = f"{final.outcome}; {said}" if final.outcome else said
        return msgspec.structs.replace(final, account_calls=calls, outcome=outcome)


def run_pass(
    kind: str,
    job_id: str,
    domain: str | None,
    minimum: int | None,
    learning_dir: str | None = None,
    project: str | None = None,
    budget: int | None = None,
    proposal_id: str | None = None,
    learn_after: bool = False,
    retry: bool = False,
) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    log = logging.getLogger("mecha.pass")
    root = LearningStore.resolve_root(learning_dir)
    try:
        jobs_mod.validate_job_id(job_id)
        store = LearningStore.open(root)
    except Exception as exc:  # nothing to record the failure in: say it and stop
        log.error("pass %s cannot start: %s", kind, exc)
        return 1
    try:
        job = jobs_mod.read_job(root, job_id)
    except Exception:
        job = jobs_mod.Job(id=job_id, kind=jobs_mod.job_kind(kind), domain=domain, state="running", started_at=now())
    job = msgspec.structs.replace(job, pid=os.getpid(), state="running")
    try:
        jobs_mod.write_job(root, job)
    except InvalidStore as exc:  # the starter's record stands; the pass fails below, by name
        log.error("pass %s %s: its running record could not be written: %s", kind, job_id, exc)
    log.info("pass %s %s started (pid %d)", kind, job_id, os.getpid())
    counts = _ProgressWriter(root, job)
    try:
        final = _run_kind(kind, store, counts, domain, minimum, project, budget, proposal_id, learn_after, retry)
    except Exception as exc:  # every failure is recorded, never left "running"
        log.error("pass failed: %s: %s", type(exc).__name__, exc)
        final = msgspec.structs.replace(counts.job, state="failed", outcome=f"{type(exc).__name__}: {exc}")
        if kind == "reflect" and isinstance(exc, NoModel):
            _note_no_model(store, log)
    final = msgspec.structs.replace(counts.settle(final), finished_at=now(), pid=None)
    unrecorded = jobs_mod.record_end(root, final)
    if unrecorded is not None:
        log.error("pass %s %s: its outcome could not be recorded: %s", kind, job_id, unrecorded)
        return 1
    log.info("pass %s %s: %s — %s", kind, job_id, final.state, final.outcome)
    return 0 if final.state == "done" else 1


def _run_kind(
    kind: str, store: LearningStore, counts: _ProgressWriter, domain: str | None, minimum: int | None,
    project: str | None, budget: int | None, proposal_id: str | None, learn_after: bool, retry: bool,
) -> jobs_mod.Job:
    """The pass `kind` itself; its job as it ended."""
    if kind == "reflect":
        final, learned = _reflect(store, counts)
        # Only new lessons start a learn pass: a scope the learn gate
        # refused is not asked the same question after every session.
        if learn_after and learned:
            final = _learn_after(store, final)
        if learn_after:
            final = _offer_retirements(store, final)
        return final
    if kind == "learn":
        assert domain is not None, "learn needs --domain"
        return _learn(store, counts, domain, project, minimum, retry)
    if kind == "validate":
        assert domain is not None, "validate needs --domain"
        return _validate(store, counts, domain, budget, proposal_id)
    raise ValueError(f"unknown pass {kind!r}")


def _note_no_model(store: LearningStore, log: logging.Logger) -> None:
    """Corrections wait and no model is configured: left for the next
    session start to say, once (`agents.notice`)."""
    from mecha.core.agents.notice import note_no_model
    from mecha.core.store.inbox import count_waiting

    try:
        note_no_model(str(store.root), count_waiting(store))
    except Exception as exc:  # the job's record says NoModel already
        log.error("the no-model note could not be written: %s", exc)


def _say(line: str) -> None:
    logging.getLogger("mecha.pass").info("%s", line)


def _reflect(store: LearningStore, counts: _ProgressWriter) -> tuple[jobs_mod.Job, int]:
    """The reflect pass over the inbox: its final record, and how many
    learnable lessons it wrote."""
    from mecha.core.learning.reflect import reflect_inbox
    from mecha.core.learning.reflection import Reflector

    def require() -> Reflector:
        provider, model = _provider(store)
        return Reflector(provider, model)

    try:
        cfg = _config()
    except Exception:  # reported when a model is needed, by `require`
        cfg = None
    outcome = asyncio.run(
        reflect_inbox(
            store, None, progress=_say, require_model=require,
            concurrency=cfg.concurrency if cfg is not None else 1, counts=counts,
        )
    )
    return msgspec.structs.replace(counts.job, state="done", outcome=outcome.summary()), outcome.learnable


def _learn_after(store: LearningStore, reflected: jobs_mod.Job) -> jobs_mod.Job:
    """After a reflect pass an agent's session-end hook started: a learn
    pass for each domain with a scope ready at the seeds' minimum
    (`learn.domains_to_learn`), each a detached pass of its own with its
    job record, so `jobs` and the next session-start notice see it. Their
    ids go into the reflect pass's outcome. A learn pass that cannot be
    started is said there too; the reflections stay for the next one."""
    from mecha.core.learning.learn import domains_to_learn

    from .context import Context
    from .jobs import running_learns, start_auto_learn

    running = set(running_learns(store.root))
    try:
        domains = domains_to_learn(store, busy=running)
    except Exception as exc:  # the reflections are in; learning can wait for the next pass
        _say(f"no learn pass started: {type(exc).__name__}: {exc}")
        return reflected
    ctx = Context(root=store.root, model_options=model_options_from_environment())
    said: list[str] = []
    for domain in domains:
        try:
            job = start_auto_learn(ctx, domain)
        except Exception as exc:
            said.append(f"the learn pass for {domain} did not start ({type(exc).__name__}: {exc})")
            continue
        _say(f"learn pass {job.id} started for {domain}")
        said.append(f"learn pass {job.id} started for {domain}")
    if not said:
        return reflected
    return msgspec.structs.replace(reflected, outcome="; ".join([reflected.outcome or "done", *said]))


def _offer_retirements(store: LearningStore, reflected: jobs_mod.Job) -> jobs_mod.Job:
    """After a hook's reflect pass: a retirement proposal for each rule no
    session has been in scope of for long (`proposals.offer_retirements`);
    offered, never applied. A failure is said, and the next pass looks again."""
    from mecha.core.learning.proposals import offer_retirements

    try:
        filed = offer_retirements(store, now())
    except Exception as exc:
        _say(f"no retirement offered: {type(exc).__name__}: {exc}")
        return reflected
    if not filed:
        return reflected
    said = "; ".join(f"proposal {p.id} offers to retire {p.evidence.split(':', 1)[0].removeprefix('retire ')}" for p in filed)
    return msgspec.structs.replace(reflected, outcome="; ".join([reflected.outcome or "done", said]))


def _learn(
    store: LearningStore, counts: _ProgressWriter, domain: str, project: str | None, minimum: int | None,
    retry: bool = False,
) -> jobs_mod.Job:
    """Every scope of `domain` that is ready, or `project`'s alone: one
    learner call each (`learn_scopes`)."""
    from mecha.core.learning.consolidation import Learner
    from mecha.core.learning.learn import ALL_SCOPES, learn_scopes, scopes_ready, scopes_summary

    scope = ALL_SCOPES if project is None else project
    ready, why = scopes_ready(store, domain, minimum, scope, retry=retry)
    if not ready:
        return msgspec.structs.replace(counts.job, state="done", outcome=f"nothing to do: {why}")
    provider, model = _provider(store)
    counts(0, len(ready), "call")
    results = asyncio.run(
        learn_scopes(store, domain, Learner(provider, model), project=scope, minimum=minimum, progress=_say, retry=retry)
    )
    counts.job = msgspec.structs.replace(
        counts.job, progress=jobs_mod.JobProgress(done=len(ready), total=len(ready), unit="call")
    )
    filed = [o.proposal_id for _, o in results if o.proposal_id is not None]
    return msgspec.structs.replace(
        counts.job, state="done", outcome=scopes_summary(results), proposal_id=filed[0] if filed else None
    )


def _validate(
    store: LearningStore, counts: _ProgressWriter, domain: str, budget: int | None, proposal_id: str | None
) -> jobs_mod.Job:
    """The probes of `validate.prepare`, run in order; each whole probe's
    row goes to the ledger as it completes. A call that fails outright ends
    the pass `failed`, with the rows already written kept."""
    from mecha.core.learning.validate import no_probe_reason, prepare, run_validation

    probes, plan = prepare(store, domain, budget, proposal_id)
    if not probes:
        return msgspec.structs.replace(counts.job, state="done", outcome=f"nothing to do: {no_probe_reason(plan)}")
    provider, model = _provider(store)
    _say(f"{len(probes)} probe(s), at most {plan.calls} model call(s)")

    def tick(done: int, total: int) -> None:
        counts(done, total, "call")

    outcome = asyncio.run(
        # The model the ledger names: the one configured, else the agent
        # whose own default model answered (`Claude Code`), else unknown.
        run_validation(store, probes, provider, model, model or getattr(provider, "account", None) or "unknown",
                       proposal_id=plan.proposal_id, progress=_say, counts=tick)
    )
    state = "failed" if outcome.stopped else "done"
    return msgspec.structs.replace(counts.job, state=state, outcome=outcome.summary(len(probes)))
