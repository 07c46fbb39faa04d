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

import msgspec

from mecha.core.identity import now
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.learning_store import LearningStore

from .context import model_options_from_environment


def _config():
    from mecha.core.providers import default_config_path, resolve_model_config

    return resolve_model_config(model_options_from_environment(), os.environ, default_config_path())


def _provider(store: LearningStore):
    from mecha.core.providers import require_provider
    from mecha.core.providers.structured import ModeMemory

    cfg = _config()
    memory = ModeMemory(store.structured_modes_path, root=store.root)
    return require_provider(cfg, memory=memory), (cfg.model if cfg else None)


def run_pass(
    kind: str, job_id: str, domain: str | None, minimum: int | None, learning_dir: str | None = None
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
        job = jobs_mod.Job(id=job_id, kind=kind, domain=domain, state="running", started_at=now())  # type: ignore[arg-type]
    job = msgspec.structs.replace(job, pid=os.getpid(), state="running")
    jobs_mod.write_job(root, job)
    log.info("pass %s %s started (pid %d)", kind, job_id, os.getpid())

    def progress(line: str) -> None:
        log.info("%s", line)

    try:
        if kind == "reflect":
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
                    store, None, progress=progress, require_model=require,
                    concurrency=cfg.concurrency if cfg is not None else 1,
                )
            )
            final = msgspec.structs.replace(job, state="done", outcome=outcome.summary())
        elif kind == "learn":
            from mecha.core.learning.consolidation import Learner
            from mecha.core.learning.learn import learn_domain, learn_refusal

            assert domain is not None, "learn needs --domain"
            refusal = learn_refusal(store, domain, minimum)
            if refusal is not None:
                final = msgspec.structs.replace(job, state="done", outcome=f"nothing to do: {refusal}")
            else:
                provider, model = _provider(store)
                result = asyncio.run(learn_domain(store, domain, Learner(provider, model), minimum=minimum, progress=progress))
                final = msgspec.structs.replace(
                    job, state="done", outcome=result.outcome, proposal_id=result.proposal_id
                )
        else:
            raise ValueError(f"unknown pass {kind!r}")
    except Exception as exc:  # every failure is recorded, never left "running"
        log.error("pass failed: %s: %s", type(exc).__name__, exc)
        final = msgspec.structs.replace(job, state="failed", outcome=f"{type(exc).__name__}: {exc}")
    final = msgspec.structs.replace(final, finished_at=now(), pid=None)
    jobs_mod.write_job(root, final)
    log.info("pass %s %s: %s — %s", kind, job_id, final.state, final.outcome)
    return 0 if final.state == "done" else 1
