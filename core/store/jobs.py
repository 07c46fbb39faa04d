"""Background jobs: the record a detached pass keeps of itself.

A pass runs as its own process so it outlives the sidecar (and the harness)
that started it; its `jobs/<id>.json` is the source of truth for its state.
The starter writes the record as `running` *before* spawning, the pass adds
its pid when it starts and writes the final state when it ends. A record
still `running` whose process is gone died without saying how it ended — a
SIGKILL, an OOM — and is reported as `failed`, never as running forever.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC
from pathlib import Path
from typing import Literal

import msgspec

from mecha.core.errors import InvalidInput, InvalidStore, NotFound, StoreFull
from mecha.core.identity import now
from mecha.core.store.files import ensure_private_dir, process_alive, refuse_links, write_atomic, writing
from mecha.core.store.layout import JOBS_DIR, LOGS_DIR, job_log_name

JobKind = Literal["reflect", "learn", "validate"]
_JOB_KINDS: dict[str, JobKind] = {"reflect": "reflect", "learn": "learn", "validate": "validate"}


def job_kind(value: str) -> JobKind:
    """`value` as a job kind, or `InvalidInput` naming it."""
    kind = _JOB_KINDS.get(value)
    if kind is None:
        raise InvalidInput(f"{value!r} is not a kind of pass: {', '.join(_JOB_KINDS)}")
    return kind
JobState = Literal["running", "done", "failed"]
ProgressUnit = Literal["intervention", "call"]

#: A record with no pid this long after it started never got its process.
SPAWN_GRACE_S = 120.0

_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class JobProgress(msgspec.Struct, kw_only=True, frozen=True):
    """How far a running pass has got, as the pass writes it into its own
    record: `done` of `total` units of work (a reflect pass counts the
    interventions it asks about — answered, usable or not; a learn pass its
    one consolidation call, a validate pass the model calls of its probes).
    Everything a watcher shows — a terminal's bar,
    an editor's `$/progress` — is computed from this and the record's
    `started_at` (`progress_text`), so every watcher says the same."""

    done: int
    total: int
    unit: ProgressUnit = "intervention"


class AccountCalls(msgspec.Struct, kw_only=True, frozen=True):
    """Model calls a pass makes on the person's own account: the agent's
    command line it runs (`api = "claude-code"` / `"codex"`), where every
    call is one the person pays for or spends a plan's limit on. The pass
    states how many it will make before its first (`stated`, written as soon
    as it knows), and counts what it made (`made`, written when it ends), so
    a person can hold the one to the other."""

    #: Whose account: "Claude Code", "Codex CLI".
    account: str
    #: What the pass said it would make (an upper bound for a validate pass).
    stated: int
    #: What it made, once it has ended.
    made: int | None = None


class Job(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: str
    kind: JobKind
    domain: str | None = None
    #: Required, with no default: `omit_defaults` would drop a default-valued
    #: field, and the wire's `Job.state` is never absent (a `running` job
    #: must say so).
    state: JobState
    started_at: str
    finished_at: str | None = None
    outcome: str | None = None
    proposal_id: str | None = None
    #: The session a reflect job was started for, when there was one.
    session_id: str | None = None
    #: The pass's process, while it runs.
    pid: int | None = None
    #: The pass's log, relative to the store root.
    log: str | None = None
    #: How far the pass has got, while it runs (and as it ended).
    progress: JobProgress | None = None
    #: The calls it makes on the person's own account, when its model is an
    #: agent's command line.
    account_calls: AccountCalls | None = None


def validate_job_id(job_id: object) -> str:
    if not isinstance(job_id, str) or not _JOB_ID.fullmatch(job_id):
        raise InvalidInput(f"invalid job id {job_id!r}")
    return job_id


def jobs_dir(root: Path) -> Path:
    return root / JOBS_DIR


def log_path(root: Path, job_id: str) -> Path:
    """A job's log (`logs/<id>.log`; the record names it relative to the
    root, `layout.job_log_name`)."""
    return root / job_log_name(validate_job_id(job_id))


def open_log(root: Path, job_id: str) -> int:
    """A job's log opened for appending, its folder created owner-only: the
    descriptor a detached pass writes its stdout and stderr to. Refuses a
    log that is a symbolic link (`O_NOFOLLOW`)."""
    import os

    ensure_private_dir(root / LOGS_DIR, root=root)
    with writing(root / LOGS_DIR):
        return os.open(log_path(root, job_id), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)


def job_path(root: Path, job_id: str) -> Path:
    return jobs_dir(root) / f"{validate_job_id(job_id)}.json"


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Job)


def write_job(root: Path, job: Job) -> None:
    write_atomic(refuse_links(root, job_path(root, job.id)), _encoder.encode(job))


def record_end(root: Path, job: Job) -> str | None:
    """Write a pass's last record; `None` when written, else what stopped it
    (the store's named error).

    On a full disk the atomic write has no room for its temp file, and the
    job would read "killed or crashed" with the StoreFull that stopped the
    pass nowhere. So then the record is rewritten in place, inside the room
    its file already holds (the starter wrote it), its outcome shortened to
    fit: not atomic, but a torn record reads as unreadable, never as another
    job's outcome, and the alternative is no outcome at all."""
    try:
        write_job(root, job)
    except StoreFull as exc:
        try:
            _rewrite_in_place(job_path(root, job.id), job)
        except OSError:
            return str(exc)
    except InvalidStore as exc:
        return str(exc)
    return None


def _rewrite_in_place(path: Path, job: Job) -> None:
    import os

    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        room = max(st.st_size, st.st_blocks * 512)
        data = _encoder.encode(job)
        outcome = job.outcome or ""
        while len(data) > room and outcome:
            outcome = outcome[: max(0, len(outcome) - (len(data) - room) - 1)]
            data = _encoder.encode(msgspec.structs.replace(job, outcome=outcome + "…"))
        if len(data) > room:
            raise OSError(28, "no room for the job's record")
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


def _seconds_since(stamp: str) -> float:
    from datetime import datetime

    try:
        then = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return 0.0
    return (datetime.now(UTC) - then).total_seconds()


def started_epoch(job: Job) -> float | None:
    """When the job started, as a POSIX time (`None` for a stamp that does
    not read)."""
    from datetime import datetime

    try:
        return datetime.strptime(job.started_at, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def settle(job: Job) -> Job:
    """The job as it really stands: a `running` record whose process is gone
    is `failed`."""
    if job.state != "running":
        return job
    dead = False
    if job.pid is not None:
        dead = not process_alive(job.pid)
    elif _seconds_since(job.started_at) > SPAWN_GRACE_S:
        dead = True
    if not dead:
        return job
    return msgspec.structs.replace(
        job,
        state="failed",
        finished_at=job.finished_at or now(),
        outcome=job.outcome or "the pass ended without recording an outcome (killed or crashed)",
    )


def read_job(root: Path, job_id: str) -> Job:
    path = job_path(root, job_id)
    try:
        return settle(_decoder.decode(path.read_bytes()))
    except FileNotFoundError:
        raise NotFound(f"no job {job_id!r}") from None
    except msgspec.DecodeError as exc:
        raise NotFound(f"job {job_id!r} has an unreadable record: {exc}") from None


def list_jobs(root: Path, limit: int = 50) -> list[Job]:
    """The most recent jobs, newest first; unreadable records are skipped."""
    directory = jobs_dir(root)
    if not directory.is_dir():
        return []
    jobs: list[Job] = []
    for path in directory.glob("*.json"):
        try:
            jobs.append(settle(_decoder.decode(path.read_bytes())))
        except (OSError, msgspec.DecodeError):
            continue
    jobs.sort(key=lambda j: (j.started_at, j.id), reverse=True)
    return jobs[:limit]


def running_pass(root: Path, kind: JobKind) -> Job | None:
    """The newest pass of `kind` still running in the store at `root`, if any."""
    return next((j for j in list_jobs(root) if j.kind == kind and j.state == "running"), None)


def seconds_running(job: Job) -> float:
    """How long the pass has run: from its start to its end, or to now."""
    start = _seconds_since(job.started_at)
    if job.finished_at is None:
        return start
    return max(start - _seconds_since(job.finished_at), 0.0)


def time_left(progress: JobProgress, elapsed_s: float) -> float | None:
    """What is left of a pass, at the rate it has gone so far: `None` until
    one unit is done (no rate yet), 0 when all are."""
    if progress.done >= progress.total:
        return 0.0
    if progress.done <= 0 or elapsed_s <= 0:
        return None
    return elapsed_s / progress.done * (progress.total - progress.done)


def duration(seconds: float) -> str:
    """`42 s`, `3 min 10 s`, `1 h 05 min`: what a person reads at a glance."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def account_calls_text(calls: AccountCalls) -> str:
    """What a pass on an agent's command line costs the person, in words:
    stated while it runs, stated and made once it has ended."""
    said = f"{calls.stated} call(s) on your {calls.account} account"
    if calls.made is None:
        return said
    return f"{said} stated, {calls.made} made"


def progress_text(job: Job) -> str:
    """One line on how far a pass has got: answered of all, time waited,
    an estimate of what is left — the words every watcher shows."""
    waited = seconds_running(job)
    p = job.progress
    if p is None or p.total <= 0:
        return f"{duration(waited)} waited"
    noun = {"intervention": "intervention(s) answered", "call": "model call(s) answered"}[p.unit]
    parts = [f"{p.done} of {p.total} {noun}", f"{duration(waited)} waited"]
    if job.account_calls is not None:
        parts.insert(1, account_calls_text(job.account_calls))
    left = time_left(p, waited)
    if left is None:
        parts.append("no estimate yet")
    elif left > 0:
        parts.append(f"about {duration(left)} left")
    return ", ".join(parts)


def outcome_headline(outcome: str) -> tuple[str, bool]:
    """The first sentence of an outcome's first paragraph, on one line, and
    whether that left anything out. A failed pass records its error whole
    (NoModel's is twenty lines of configuration help); a progress bar or a
    status line has room for one."""
    paragraph = outcome.strip().split("\n\n", 1)[0]
    line = " ".join(paragraph.split())
    cut = re.search(r"[.!?](?=\s)", line)
    head = line[: cut.end()] if cut is not None else line
    return head, head != " ".join(outcome.split())


def end_text(job: Job) -> str:
    """One line saying how a pass ended: its state and its outcome's
    headline, naming where the rest is when the outcome was longer."""
    if not job.outcome:
        return job.state
    head, shortened = outcome_headline(job.outcome)
    more = " (`mecha-sidecar jobs` shows all of it)" if shortened else ""
    return f"{job.state}: {head}{more}"


def progress_moves(seen: Mapping[str, JobState], jobs: Iterable[Job]) -> tuple[list[Job], list[Job]]:
    """The passes whose progress an editor should begin, and those whose
    progress it should end, given the state it last saw each job in.

    Begun when a job is first seen `running`, whoever started it (a
    harness, the CLI, another editor): the progress follows the record, not
    the request. Ended when a job seen running has left `running`. A job
    first seen already ended gets none: nothing of it is in progress, and
    an editor opened after a day of passes would otherwise flash one
    progress bar for each."""
    begin: list[Job] = []
    end: list[Job] = []
    for job in jobs:
        before = seen.get(job.id)
        if job.state == "running" and before is None:
            begin.append(job)
        elif job.state != "running" and before == "running":
            end.append(job)
    return begin, end
