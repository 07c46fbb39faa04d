"""Importing other agents' sessions: find them, read them, queue what is new.

`import claude` and `import codex` hand sessions to the same inbox and the
same reflect pass `mecha/sessionEnded` uses; what this module adds is
deciding *what is new*, so that importing a folder every day costs almost
nothing and teaches each lesson once.

- **Once per intervention, not once per file.** A session grows while the
  person keeps working in it, and Claude Code copies a session's history into
  the new file when it is resumed. Each intervention queued is recorded by a
  key over what the transcript fixes (source, trigger, the person's words,
  the context), counted, in `imported.jsonl`; a later read queues only the
  interventions beyond those counts.
- **Only the new part is handed over.** The reflect pass mines every
  intervention in the transcript it is given, so a grown session is handed
  over as its tail: the conversation from the assistant turn the first new
  intervention answers, after a one-line stand-in for the part already
  imported (the stand-in is the tail's task, which is never mined). Its id
  is the session's with `@<message index>` appended, so `mined.jsonl` keeps
  telling the pieces apart. Files are append-only in practice; an older
  intervention that reappears *after* a new one (a rewritten file) is handed
  over again rather than losing the new one.
- **An unchanged file is not read.** Its size and mtime are recorded; a
  re-import that finds both equal skips it on a `stat`.
- **Check first, then queue.** Every file is read and planned before
  anything is queued; a file that is not a session (or cannot be read) is
  skipped with a warning naming it and the line. The entries are written to a
  staging folder inside the inbox that passes do not look at, and renamed
  into the inbox together under the writer lock, with the import records: a
  folder is never half queued.
- **Memory follows the largest file**, not the folder: each file is read,
  planned and staged, then dropped before the next.
"""

from __future__ import annotations

import datetime
import hashlib
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from mecha.core.agents.offers import exact_offers
from mecha.core.agents.worktree_scopes import merge_removed_worktree_scopes
from mecha.core.domain.record import Asked
from mecha.core.domain.reflexion import Origin
from mecha.core.environment.agents import AGENTS
from mecha.core.environment.installed import is_own_call
from mecha.core.environment.trust import load_trust, policy_with
from mecha.core.errors import InvalidInput
from mecha.core.identity import now
from mecha.core.learning.asks import LiveAsk, asked_in, new_asked
from mecha.core.learning.record import live_asks
from mecha.core.learning.scope import project_of_session
from mecha.core.sessions.foreign import detect_format, read_session
from mecha.core.sessions.lines import FORMAT_NAMES
from mecha.core.sessions.mining import Intervention, Trigger, Voices
from mecha.core.sessions.reader import ReadSession, TaintPolicy, first_blame
from mecha.core.sessions.survey import Planned, survey_session
from mecha.core.sessions.transcript import Message
from mecha.core.sessions.trust import HeldBack, blockers, held_back
from mecha.core.store.inbox import SessionEntry, admit_staged, queued_session_ids, stage, staging_dir
from mecha.core.store.learning_store import LearningStore
from mecha.core.store.records import ImportRecord

#: Where each agent keeps its sessions, under the person's home.
DEFAULT_DIRS = {a.name: Path("~").joinpath(*a.sessions_home) for a in AGENTS}



def intervention_fingerprint(source: str, i: Intervention, project: str | None = None) -> str:
    """What makes two readings of an intervention the same one: the source,
    the project it was said in, the trigger, the person's words and the
    context — what the transcript fixes, not where in a file it sits (a
    resumed copy moves it, and gets a session id of its own, so the session
    is not part of it). An import record's `keys` hold these. Not the
    attempts ledger's key (`reflect.intervention_key`), which names one
    intervention by its place in one inbox session.

    The project is in it because the same words in two projects are two
    corrections, each learned for its own project: without it, the second
    was taken for the first and learned nowhere, while `--dry-run` (which
    does not consume the keys it plans) said both would be queued. Keys
    recorded before (`legacy_fingerprint`) still count as the same one,
    so an older store re-queues nothing."""
    digest = hashlib.blake2b(digest_size=12)
    digest.update(msgspec.json.encode([source, i.trigger.value, i.text, i.context, project]))
    return "p" + digest.hexdigest()


def legacy_fingerprint(source: str, i: Intervention) -> str:
    """The fingerprint import records held before the project was in it."""
    digest = hashlib.blake2b(digest_size=12)
    digest.update(msgspec.json.encode([source, i.trigger.value, i.text, i.context]))
    return digest.hexdigest()


class SessionPlan(msgspec.Struct, kw_only=True):
    """What importing one session file would queue."""

    path: str
    source: str
    session_id: str
    project: str | None
    size: int
    mtime_ns: int
    found: int
    #: The interventions not imported before, classified.
    fresh: list[Planned]
    fresh_keys: list[str]
    #: The inbox entry that carries them (`None` when nothing is new).
    entry: SessionEntry | None = None
    #: A last refusal held back until the person gives their reason.
    held: int = 0
    #: Lines of the file skipped as not records of its format.
    skipped_lines: int = 0
    #: What held back its new untrusted interventions (`trust.held_back`).
    held_back: list[HeldBack] = msgspec.field(default_factory=list)
    #: Every call that held any of them back (`trust.blockers`), for the
    #: summary of what to trust.
    blockers: list[HeldBack] = msgspec.field(default_factory=list)
    #: For each trust entry that would free some of its new untrusted
    #: interventions, exactly how many (`offers.exact_offers`).
    frees: dict[str, int] = msgspec.field(default_factory=dict)
    #: Its calls a live rule's ask permission asked about (`asks.asked_in`).
    asked: list[Asked] = msgspec.field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """New interventions per `trigger/origin`, for a dry run."""
        out: Counter[str] = Counter(f"{p.intervention.trigger.value}/{p.origin.value}" for p in self.fresh)
        return dict(sorted(out.items()))


#: How recently a session file must have changed for the agent that writes
#: it to count as still running (see `awaiting_reason`).
LIVE_WINDOW_S = 3600.0


def awaiting_reason(messages: Sequence[Message], i: Intervention) -> bool:
    """A refusal with no words yet and nothing after it: the agent is waiting
    for the person to say why. Queued now, it would be a reasonless denial,
    and the reason typed a minute later a second one — so in a session still
    being written it waits for the next import (the file is recorded as not
    fully read). A session that ended on a silent refusal is older than
    `LIVE_WINDOW_S` by the next import, and its refusal is queued then."""
    return (
        i.trigger is Trigger.DENIAL
        and not i.text
        and all(m.role != "assistant" for m in messages[i.at + 1 :])
    )


def tail_start(messages: Sequence[Message], at: int) -> int:
    """Where the new part of a grown session starts, for the intervention at
    `at` and what it answers: the last assistant turn with text before it (a
    followup's context), else the last assistant turn, else the beginning.
    It names the entry that queues the new part (`<session>@<start>`)."""
    last_any = None
    for j in range(at - 1, -1, -1):
        if messages[j].role != "assistant":
            continue
        if last_any is None:
            last_any = j
        if messages[j].text().strip():
            return j
    return last_any if last_any is not None else 0


def plan_session(
    read: ReadSession,
    *,
    path: str,
    size: int,
    mtime_ns: int,
    voices: Voices,
    on_file: Counter[str],
    imported_before: bool,
    live: bool = False,
) -> SessionPlan:
    """Which of a session's interventions are new, and the entry that queues
    them. `on_file` counts the keys already queued and is consumed (so a
    second copy of a session in the same import is not new either). In a
    `live` session, a last refusal still waiting for the person's reason is
    held back (see `awaiting_reason`)."""
    planned = survey_session(read.messages, read.taint_timeline, interactive=read.interactive, voices=voices)
    fresh, keys, old_before_first_fresh = _fresh_plans(read, planned, on_file)
    held = 0
    if live and fresh and awaiting_reason(read.messages, fresh[-1].intervention):
        fresh.pop()
        keys.pop()
        held = 1
    session = SessionPlan(
        path=path,
        source=read.source,
        session_id=read.session_id,
        project=read.project,
        size=size,
        mtime_ns=mtime_ns,
        found=len(planned),
        fresh=fresh,
        fresh_keys=keys,
        held=held,
        skipped_lines=read.skipped_lines,
        held_back=held_back([p.held_by for p in fresh]),
        blockers=blockers(read.blames, [p.intervention.at for p in fresh if p.origin is Origin.UNTRUSTED]),
    )
    if not fresh:
        return session
    # The entry carries the new interventions as surveyed here, so the pass
    # asks about exactly these. A session seen before is queued under a new
    # id, named for where its new part starts: the old id is mined already.
    if old_before_first_fresh or imported_before:
        session_id = f"{read.session_id}@{tail_start(read.messages, fresh[0].intervention.at)}"
    else:
        session_id = read.session_id
    # Its lessons are learned for the project the session ran in: its
    # working directory's git root (none recorded: global).
    session.entry = SessionEntry(session_id, plans=fresh, project=project_of_session(read.project, read.branch), file=str(path))
    return session


def _fresh_plans(read: ReadSession, planned: list[Planned], on_file: Counter[str]) -> tuple[list[Planned], list[str], bool]:
    """The plans whose keys are not queued yet (consuming `on_file`), their
    keys, and whether an already-queued one came before the first of them."""
    fresh: list[Planned] = []
    keys: list[str] = []
    old_before_first_fresh = False
    project = project_of_session(read.project, read.branch)
    for plan in planned:
        key = intervention_fingerprint(read.source, plan.intervention, project)
        legacy = legacy_fingerprint(read.source, plan.intervention)
        seen = key if on_file[key] > 0 else legacy if on_file[legacy] > 0 else None
        if seen is not None:
            on_file[seen] -= 1
            if not fresh:
                old_before_first_fresh = True
            continue
        at = plan.intervention.at
        if 0 <= at < len(read.lines):
            plan.line = read.lines[at]
        plan.said_at = read.time_at(at)
        if plan.origin is Origin.UNTRUSTED:
            plan.held_by = first_blame(read.blames, at)
        fresh.append(plan)
        keys.append(key)
    return fresh, keys, old_before_first_fresh


# ─── finding sessions ───────────────────────────────────────────────────────


def find_session_files(root: Path, source: str | None = None) -> list[Path]:
    """Every `.jsonl` file under `root` (or `root` itself, a file), sorted.
    Which of them are sessions is for the reader to say: a file that is not
    is skipped with a warning, not guessed at by name."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        what = f"no {FORMAT_NAMES[source].split(' ', 1)[1]} folder" if source in FORMAT_NAMES else "no such folder"
        raise InvalidInput(f"{root}: {what} here; give the folder the sessions are in (import {source or '…'} DIR)")
    return sorted(p for p in root.rglob("*.jsonl") if p.is_file())


def parse_since(value: str) -> float:
    """`--since` as a POSIX time: a date (`2026-11-20`, midnight UTC) or an
    ISO date-time."""
    try:
        if len(value) == 10:
            day = datetime.date.fromisoformat(value)
            moment = datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC)
        else:
            moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=datetime.UTC)
    except ValueError:
        raise InvalidInput(f"--since {value!r}: not a date (YYYY-MM-DD) or an ISO date-time") from None
    return moment.timestamp()


def matches_project(project: str | None, path: Path, root: Path, wanted: str) -> bool:
    """`--project NAME`: the session ran in a directory whose path contains
    `NAME`, or sits in a project folder whose name does (Claude Code names
    its folders after the directory, `/` spelled `-`)."""
    if project and wanted in project:
        return True
    try:
        relative = path.relative_to(root)
    except ValueError:
        relative = path
    return bool(relative.parts) and wanted in relative.parts[0]


# ─── the import ─────────────────────────────────────────────────────────────


class ImportReport(msgspec.Struct, kw_only=True):
    source: str
    root: str
    sessions: list[SessionPlan] = msgspec.field(default_factory=list)
    #: Files skipped with the reason (not a session, unreadable line).
    skipped: list[str] = msgspec.field(default_factory=list)
    #: Files whose size and mtime matched the last import: not read.
    unchanged: int = 0
    #: Files left out by `--since` or `--project`.
    filtered: int = 0
    #: Session ids handed to the inbox.
    queued: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)
    #: Lines skipped, over every file read, as not records of their format.
    skipped_lines: int = 0
    dry_run: bool = False
    #: Scopes of worktrees since removed merged into their repository's
    #: (`worktree_scopes`), each in words.
    merged: list[str] = msgspec.field(default_factory=list)


def _latest_by_path(records: Iterable[ImportRecord]) -> dict[str, ImportRecord]:
    out: dict[str, ImportRecord] = {}
    for r in records:
        out[r.path] = r
    return out


def import_sessions(
    store: LearningStore,
    source: str,
    root: Path,
    *,
    voices: Voices,
    policy: TaintPolicy | None = None,
    since: float | None = None,
    project: str | None = None,
    dry_run: bool = False,
    ended: bool = False,
    trust: Sequence[str] = (),
    distrust: Sequence[str] = (),
) -> ImportReport:
    """Find, read and plan every session under `root`; unless `dry_run`,
    queue the new interventions in one step. Starts no pass: the caller
    does, once, when `queued` is not empty. `ended`: the agent said the
    session is over (its session-end hook), so however recent the file,
    nothing in it is still being written and no refusal waits for its
    reason (`awaiting_reason`). `trust` / `distrust` are this run's
    `--trust-tool` / `--distrust-tool` (already in `policy`): each file's
    record keeps them with the standing entries, the trust it was read
    with, so `validate` reads it again the same way."""
    root, records = root.expanduser(), store.imports()
    report = ImportReport(source=source, root=str(root), dry_run=dry_run)
    scan = _Scan(
        source=source, root=root, policy=policy, since=since, project=project, voices=voices, ended=ended,
        latest=_latest_by_path(records),
        on_file=Counter(k for r in records if r.source == source for k in r.keys),
        seen_sessions={r.session_id for r in records if r.source == source},
        asks=live_asks(store),
    )
    staging: Path | None = None
    staged: list[tuple[SessionPlan, Path | None]] = []
    try:
        for path in find_session_files(root, source):
            plan = _plan_file(scan, path, report)
            if plan is None:
                continue
            staged_path = None
            if plan.entry is not None and not dry_run:
                if staging is None:
                    staging = staging_dir(store)
                staged_path = stage(staging, plan.entry)
                plan.entry = None  # the transcript is on disk now; let it go
            staged.append((plan, staged_path))
        if dry_run:
            return report
        if staged:

            def read_again(plan: SessionPlan, on_file: Counter[str], seen: set[str]) -> tuple[SessionPlan, Path | None] | None:
                return _read_again(store, plan, on_file, seen, staging, policy=policy, voices=voices, ended=ended)

            read_with = ([*load_trust().entries, *trust], list(distrust))
            _commit(store, report, staged, read_again, read_with)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    report.merged = merge_removed_worktree_scopes(store)
    return report


@dataclass
class _Scan:
    """What one import knows while it walks the folder: its options, the
    latest record of each file, the keys already queued, the sessions seen."""

    source: str
    root: Path
    policy: TaintPolicy | None
    since: float | None
    project: str | None
    voices: Voices
    ended: bool
    latest: dict[str, ImportRecord]
    on_file: Counter[str]
    seen_sessions: set[str]
    #: The live rules' ask permissions, each session's calls counted against.
    asks: list[LiveAsk] = field(default_factory=list)


def _plan_file(scan: _Scan, path: Path, report: ImportReport) -> SessionPlan | None:
    """One file read and planned, its plan added to `report`; `None` (and
    the reason counted in `report`) when it is gone, older than `since`,
    unchanged since its last import, not of the format, or of another project."""
    try:
        st = path.stat()
    except OSError as exc:
        report.skipped.append(f"{path}: {exc.strerror or exc}")
        return None
    from mecha.core.sessions.claude_code import is_workflow_record

    if st.st_size == 0 or is_workflow_record(path):
        # An empty file is nothing yet (an agent creates one before its
        # first line); a workflow's files are its subagents' and its ledger.
        # Neither is a session to warn about.
        return None
    if scan.since is not None and st.st_mtime < scan.since:
        report.filtered += 1
        return None
    key = str(path.resolve())
    last = scan.latest.get(key)
    if last is not None and last.size == st.st_size and last.mtime_ns == st.st_mtime_ns:
        report.unchanged += 1
        return None
    try:
        read = _read_file(path, scan.source, scan.policy)
    except InvalidInput as exc:
        report.skipped.append(str(exc))
        return None
    if is_own_call(read.project):
        # A pass's own call on the agent's command line, kept by an agent
        # that ignored the request to keep no transcript: the prompt is the
        # pass's, never a person's work.
        report.skipped.append(f"{path}: a model call this sidecar made (it ran in {read.project}), not a person's session")
        return None
    report.warnings.extend(read.warnings)
    report.skipped_lines += read.skipped_lines
    if scan.project is not None and not matches_project(read.project, path, scan.root, scan.project):
        report.filtered += 1
        return None
    plan = plan_session(
        read,
        live=not scan.ended and time.time() - st.st_mtime < LIVE_WINDOW_S,
        path=key,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        voices=scan.voices,
        on_file=scan.on_file,
        imported_before=read.session_id in scan.seen_sessions,
    )
    scan.seen_sessions.add(read.session_id)
    plan.asked = asked_in(read.messages, read.time_at, read.session_id, project_of_session(read.project, read.branch),
                          scan.asks)
    held = [p for p in plan.fresh if p.origin is Origin.UNTRUSTED]
    if held:
        policy = scan.policy if scan.policy is not None else policy_with(scan.source)
        plan.frees = exact_offers(path, read, held, policy, scan.voices)
    report.sessions.append(plan)
    return plan


def _read_file(path: Path, source: str, policy: TaintPolicy | None) -> ReadSession:
    """One file read as `source`, line by line from disk (memory follows
    the transcript, not the file); `InvalidInput` when it is another format,
    none, unreadable, or has no readable record."""
    try:
        with path.open("rb") as f:
            found = detect_format(f)
            if found != source:
                raise InvalidInput(f"{path}: not {FORMAT_NAMES[source]} ({_what_it_is(found)})")
            return read_session(path, source, policy=policy, data=f)
    except OSError as exc:
        raise InvalidInput(f"{path}: {exc.strerror or exc}") from None


def _what_it_is(found: str | None) -> str:
    return f"it reads as {FORMAT_NAMES[found]}" if found else "not a session file of any known format"


ReadAgain = Callable[[SessionPlan, Counter[str], set[str]], tuple[SessionPlan, Path | None] | None]


def _read_again(
    store: LearningStore,
    plan: SessionPlan,
    on_file: Counter[str],
    seen: set[str],
    staging: Path | None,
    *,
    policy: TaintPolicy | None,
    voices: Voices,
    ended: bool,
) -> tuple[SessionPlan, Path | None] | None:
    """`plan`'s file read and planned again, now, against the keys on file
    (`on_file`, not consumed) and the sessions imported before (`seen`),
    its new entry staged; `None` when it can no longer be read. Caller
    holds the writer lock, so what it plans is what it queues."""
    path = Path(plan.path)
    try:
        st = path.stat()
        read = _read_file(path, plan.source, policy)
    except (OSError, InvalidInput):
        return None
    again = plan_session(
        read,
        live=not ended and time.time() - st.st_mtime < LIVE_WINDOW_S,
        path=plan.path,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        voices=voices,
        on_file=Counter(on_file),
        imported_before=read.session_id in seen,
    )
    if again.entry is None:
        return again, None
    staged = stage(staging if staging is not None else staging_dir(store), again.entry)
    again.entry = None
    return again, staged


def _commit(
    store: LearningStore,
    report: ImportReport,
    staged: list[tuple[SessionPlan, Path | None]],
    read_again: ReadAgain,
    read_with: tuple[list[str], list[str]] = ([], []),
) -> None:
    """Under the writer lock: move the staged entries into the inbox and
    record what was read, and with what trust (`read_with`).

    Another import may have queued some of a file's interventions since
    this one read it — from an older read of the same file, perhaps, while
    this read saw it grown. Such a file is read and planned again here,
    under the lock, so the new part is queued now; a record never says a
    file was read further than what was queued from it (the record of a
    grown file with no keys made every later import skip it as unchanged,
    and its new interventions were lost)."""
    stamp = now()
    with store.lock():
        records = store.imports()
        on_file: Counter[str] = Counter(k for r in records if r.source == report.source for k in r.keys)
        seen = {r.session_id for r in records if r.source == report.source}
        mined = store.mined_sessions()
        waiting = queued_session_ids(store)
        out: list[ImportRecord] = []
        for plan, staged_path in staged:
            queued_as = None
            keys = plan.fresh_keys
            if staged_path is not None and any(on_file[k] > 0 for k in keys):
                found = read_again(plan, on_file, seen)
                if found is None:
                    continue  # gone or unreadable now: nothing read is recorded
                plan, staged_path = found
                keys = plan.fresh_keys
            if staged_path is not None:
                entry_id = _entry_id(staged_path)
                if entry_id in mined or entry_id in waiting:
                    keys = []
                else:
                    admit_staged(store, staged_path)
                    queued_as = entry_id
                    report.queued.append(entry_id)
                    on_file.update(keys)
                    seen.add(plan.session_id)
                    waiting.add(entry_id)
            out.append(_record_of(plan, keys if queued_as else [], queued_as, stamp, read_with))
        if out:
            store.append_imports(out)
        _record_asked(store, [a for plan, _ in staged for a in plan.asked])


def _record_asked(store: LearningStore, found: list[Asked]) -> None:
    """The calls an ask asked about, each once on record. Caller holds the lock."""
    fresh = new_asked(store.asked(), found) if found else []
    if fresh:
        store.append_asked(fresh)


def _record_of(
    plan: SessionPlan, keys: list[str], queued_as: str | None, stamp: str, read_with: tuple[list[str], list[str]]
) -> ImportRecord:
    """What one import read of one file: how far, what it queued, and with
    what trust."""
    return ImportRecord(
        source=plan.source,
        path=plan.path,
        # -1: a held refusal makes the next import read the file again.
        size=-1 if plan.held else plan.size,
        mtime_ns=plan.mtime_ns,
        session_id=plan.session_id,
        keys=keys,
        queued_as=queued_as,
        imported_at=stamp,
        trust=read_with[0],
        distrust=read_with[1],
    )


class _EntryHead(msgspec.Struct):
    session_id: str


def _entry_id(path: Path) -> str:
    return msgspec.json.decode(path.read_bytes(), type=_EntryHead).session_id
