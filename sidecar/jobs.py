"""Starting background passes as detached processes, and watching them.

A pass is `python -m mecha.sidecar pass reflect|learn --job ID …` in its own
process session, so neither the sidecar exiting nor the harness's process
group being signalled takes it down. Its job record is written *before* it is
spawned, so `mecha/jobs` shows it from the first instant; the pass itself
records its pid and, at the end, its outcome.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

from mecha.core.identity import mint_job_id, now
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.layout import job_log_name

from .context import Context


def start_pass(
    ctx: Context,
    kind: jobs_mod.JobKind,
    *,
    domain: str | None = None,
    session_id: str | None = None,
    minimum: int | None = None,
    project: str | None = None,
    budget: int | None = None,
    proposal_id: str | None = None,
    learn_after: bool = False,
    retry: bool = False,
) -> jobs_mod.Job:
    """`learn_after`: a reflect pass that, once done, starts a learn pass
    for each domain ready at the seeds' minimum (what an agent's
    session-end hook asks for, so the loop runs by itself)."""
    store = ctx.store()
    job_id = mint_job_id(kind)
    job = jobs_mod.Job(id=job_id, kind=kind, domain=domain, state="running", started_at=now(), session_id=session_id,
                       proposal_id=proposal_id, log=job_log_name(job_id))
    jobs_mod.write_job(store.root, job)
    argv = [sys.executable, "-m", "mecha.sidecar", "pass", kind, "--job", job_id, *pass_options(
        domain=domain, minimum=minimum, project=project, budget=budget, proposal_id=proposal_id,
        learn_after=learn_after, retry=retry,
    )]
    import os

    log_fd = jobs_mod.open_log(store.root, job_id)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            cwd=store.root,
            env=ctx.pass_environment(),
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(log_fd)
    if ctx.on_job_finished is not None:
        watch(proc, job, store.root, ctx.on_job_finished)
    if ctx.on_job_started is not None:
        ctx.on_job_started(job)
    return job


def running_learns(root: Any) -> dict[str, str]:
    """Each domain a learn pass is running for now, with that pass's job
    id: what keeps a second pass for a domain from starting (its result
    would only be dropped)."""
    return {
        j.domain: j.id for j in jobs_mod.list_jobs(root) if j.kind == "learn" and j.state == "running" and j.domain
    }


def start_auto_learn(ctx: Context, domain: str) -> jobs_mod.Job:
    """The learn pass nobody typed: over every scope of `domain` ready at
    the seeds' minimum. Started after a hook's reflect pass that wrote a
    learnable lesson, and after a proposal is answered while lessons of its
    scope still wait; the callers check `running_learns` first."""
    return start_pass(ctx, "learn", domain=domain)


def pass_options(
    *, domain: str | None, minimum: int | None, project: str | None, budget: int | None, proposal_id: str | None,
    learn_after: bool, retry: bool,
) -> list[str]:
    """The `pass` verb's options for what a pass was asked (`cli`'s `pass`
    parser reads them back)."""
    out: list[str] = []
    for flag, value in (("--domain", domain), ("--min", minimum), ("--project", project), ("--budget", budget),
                        ("--proposal", proposal_id)):
        if value is not None:
            out += [flag, str(value)]
    return out + (["--learn-after"] if learn_after else []) + (["--retry"] if retry else [])


def watch(proc: Any, job: jobs_mod.Job, root: Any, on_finished: Any) -> threading.Thread:
    """Wait for a pass in a thread (reaping it) and report its final record."""

    def run() -> None:
        proc.wait()
        try:
            final = jobs_mod.read_job(root, job.id)
        except Exception:  # the record is gone: report what we know
            final = jobs_mod.Job(
                id=job.id, kind=job.kind, domain=job.domain, state="failed",
                started_at=job.started_at, finished_at=now(), outcome="the job record disappeared",
            )
        on_finished(final)

    t = threading.Thread(target=run, name=f"mecha-watch-{job.id}", daemon=True)
    t.start()
    return t
