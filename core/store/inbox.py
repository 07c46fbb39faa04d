"""The inbox: reflect work handed over and not yet reflected, under the
store's `inbox/`.

The reflect pass runs in a detached process that outlives the sidecar and
the harness that started it, so the work it is handed is first written here —
a harness that exits the moment it has handed over a transcript still gets
its reflections, and a pass that fails (no model, a model that stalls) leaves
its entry here for the next pass to pick up. Nothing is lost by a failure; at
worst it is late.

A pass *claims* an entry under the writer lock (a rename naming its pid), so
two passes over the same session mine it once; an entry it cannot finish for
a reason that will not change on retry is set aside, with why, until a
person retries or drops it (`mecha-sidecar inbox`).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import NamedTuple

import msgspec

from mecha.core.errors import InvalidInput, StoreFull
from mecha.core.identity import now
from mecha.core.sessions.mining import DEFAULT_VOICES, Voices
from mecha.core.sessions.outbox import OutboxItem
from mecha.core.sessions.survey import Planned, survey_session
from mecha.core.sessions.transcript import Message, TaintCheckpoint
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.files import ensure_ignored_dir, ensure_private_dir, process_alive, refuse_links, store_full, write_atomic
from mecha.core.store.learning_store import Attempt, AttemptKind, LearningStore, SetAside

log = logging.getLogger(__name__)


class SessionEntry(msgspec.Struct, tag="session", tag_field="kind", omit_defaults=True):
    """A finished session handed over for reflection, as it was surveyed.

    `plans` is what the sidecar found when the session ended (or was
    imported): each intervention with the evidence and origin it was
    classified with, the person's words already bounded and the assistant's
    withheld where taint says so. The pass reflects on exactly these and
    never reads the transcript again, so the voices, the nudge and the taint
    policy it was surveyed under are the ones that count, and the inbox holds
    the interventions rather than a copy of the whole transcript."""

    #: First (after the tag), so a file's head names its session
    #: (`_QUEUED_ID`).
    session_id: str
    plans: list[Planned]
    #: The session file an import read it from (absent for a session the
    #: harness handed over).
    file: str | None = None
    #: Put back by a person (`inbox retry`) after it was set aside: asked
    #: again although its session is already marked mined.
    retry: bool = False
    #: The project the session ran in (`layout.project_root` of its working
    #: directory); its reflections carry it. Absent: none known — global.
    project: str | None = None

    def surveyed(self) -> list[Planned]:
        """The interventions to reflect on."""
        return self.plans


class DraftEntry(msgspec.Struct, tag="draft", tag_field="kind", omit_defaults=True):
    """A sent-and-edited draft handed over for reflection, with the `edit`
    intervention surveyed from it (`survey.survey_draft`)."""

    item: OutboxItem
    plan: Planned
    retry: bool = False

    def surveyed(self) -> list[Planned]:
        return [self.plan]


def session_entry(
    session_id: str,
    messages: Sequence[Message],
    taint_timeline: Sequence[TaintCheckpoint] | None = None,
    *,
    interactive: bool = True,
    voices: Voices = DEFAULT_VOICES,
    project: str | None = None,
) -> SessionEntry:
    """Survey a session, once, into the inbox entry that carries what was
    found, and the project (a root, already resolved) it ran in."""
    plans = survey_session(messages, taint_timeline, interactive=interactive, voices=voices)
    return SessionEntry(session_id, plans=plans, project=project)


InboxEntry = SessionEntry | DraftEntry

entry_decoder = msgspec.json.Decoder(InboxEntry)
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_CLAIM = ".claim-"


def inbox_dir(store: LearningStore) -> Path:
    return store.inbox_path


def _ready_inbox(store: LearningStore) -> Path:
    """The inbox folder, created owner-only and kept out of history."""
    directory = inbox_dir(store)
    # Inbox entries carry what people and assistants said, third-party text
    # included, and are transient: never the store's permanent history.
    ensure_ignored_dir(directory, root=store.root)
    return directory


def enqueue(store: LearningStore, entry: InboxEntry) -> Path:
    """Write one unit of reflect work where any later pass will find it."""
    path = _ready_inbox(store) / inbox_name(entry)
    _write_entry(path, entry, "it was not queued: nothing of it is in the inbox")
    return path


def _write_entry(path: Path, entry: InboxEntry, kept: str) -> None:
    """Write one entry whole; a full disk is `StoreFull` saying `kept`
    rather than naming a file that never was."""
    try:
        write_atomic(path, msgspec.json.encode(entry))
    except StoreFull as exc:
        raise store_full(path.parent, kept=kept) from exc


# ─── staging (an import's entries, queued in one step) ─────────────────────

#: A folder inside the inbox that passes do not look at: an import writes
#: its entries here as it reads, and moves them into the inbox at its commit.
_STAGING_PREFIX = ".import-"


def staging_dir(store: LearningStore) -> Path:
    """A fresh staging folder for this process (and the wrecks of imports
    that died before their commit swept away)."""
    inbox = _ready_inbox(store)
    _sweep_stale_staging(inbox)
    path = inbox / f"{_STAGING_PREFIX}{os.getpid()}-{os.urandom(3).hex()}"
    ensure_private_dir(path, root=store.root)
    return path


def _sweep_stale_staging(inbox: Path) -> None:
    """Staging folders left by an import that died before its commit."""
    for child in inbox.iterdir():
        if not child.name.startswith(_STAGING_PREFIX) or not child.is_dir():
            continue
        try:
            pid = int(child.name[len(_STAGING_PREFIX) :].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not process_alive(pid):
            shutil.rmtree(child, ignore_errors=True)


def stage(staging: Path, entry: InboxEntry) -> Path:
    """Write an entry into a staging folder (`staging_dir`), named as it will
    be queued."""
    path = staging / inbox_name(entry)
    _write_entry(
        path, entry, "this import queued nothing: what it had read is removed again"
    )
    return path


def admit_staged(store: LearningStore, staged: Path) -> None:
    """Move a staged entry into the inbox, where passes find it. Caller
    holds the lock."""
    os.replace(staged, inbox_dir(store) / staged.name)


def inbox_name(entry: InboxEntry) -> str:
    """The file name an entry is queued under: when, then whose (sorted by
    name, the inbox is oldest first)."""
    key = entry.session_id if isinstance(entry, SessionEntry) else f"draft-{entry.item.id}"
    return f"{now().replace(':', '').replace('-', '')}-{_SAFE.sub('_', key)[:80]}.json"


#: An entry's session id, from the head of its file: the encoder writes the
#: tag and then `session_id` first, so the id sits in the first bytes and a
#: whole transcript never has to be read to learn whose it is.
_QUEUED_ID = re.compile(rb'^\{"kind":"session","session_id":("(?:[^"\\]|\\.)*")')


#: A draft entry's item id, from the head of its file likewise: the item is
#: encoded first, and its `id` first within it.
_QUEUED_DRAFT_ID = re.compile(rb'^\{"kind":"draft","item":\{"id":("(?:[^"\\]|\\.)*")')


def queued_session_ids(store: LearningStore) -> set[str]:
    """Sessions waiting in the inbox (claimed or not) or set aside there:
    handed over, not yet mined. A caller about to queue a session checks here
    as well as in `mined.jsonl`, or a session whose pass failed is queued
    twice."""
    return _queued_ids(store, _QUEUED_ID)


def queued_draft_ids(store: LearningStore) -> set[str]:
    """The outbox items whose drafts wait in the inbox or are set aside."""
    return _queued_ids(store, _QUEUED_DRAFT_ID)


def queued_sessions(store: LearningStore, marker: str) -> list[SessionEntry]:
    """The session entries waiting in the inbox (claimed or not) or set
    aside there whose id holds `marker` (`"@retrust-"`): only those files
    are decoded; one that no longer reads is passed over."""
    out: list[SessionEntry] = []
    for directory in (inbox_dir(store), set_aside_dir(store)):
        if not directory.is_dir():
            continue
        for path in directory.iterdir():
            name = path.name
            if not (name.endswith(".json") or _CLAIM in name) or name.endswith(_REASON_SUFFIX) or not path.is_file():
                continue
            if not any(marker in ident for ident in _ids_in_file(path, _QUEUED_ID)):
                continue
            try:
                entry = entry_decoder.decode(path.read_bytes())
            except (OSError, msgspec.DecodeError):
                continue
            if isinstance(entry, SessionEntry):
                out.append(entry)
    return out


def _queued_ids(store: LearningStore, head: re.Pattern[bytes]) -> set[str]:
    out: set[str] = set()
    for directory in (inbox_dir(store), set_aside_dir(store)):
        if directory.is_dir():
            out |= _ids_in(directory, head)
    return out


class HandOver(str, Enum):
    """What a hand-over did: queued the work, or found it mined already, or
    found it waiting already (in the inbox, claimed or not, or set aside)."""

    QUEUED = "queued"
    MINED = "mined"
    WAITING = "waiting"


def hand_over(
    store: LearningStore, entry: InboxEntry, start_pass: Callable[[], jobs_mod.Job] | None = None
) -> tuple[HandOver, jobs_mod.Job | None]:
    """Queue `entry` unless its session (or draft) is mined already or
    waits already, and start a pass (`start_pass`, when given) for work that
    needs one: what was queued, or a waiting copy no pass holds or is on its
    way to (`awaits_a_pass`). All under the writer lock; the pass's job
    record is written before the lock is let go.

    Why under the lock: a harness that hands one session over from several
    sidecars at once (a retried `sessionEnded`) had each of them find it
    neither mined nor queued and queue it again, and each copy's pass asked
    the model about every intervention — 36 calls for 3. Now one copy waits
    and one pass reflects it; a hand-over that comes while the first is
    between queuing and starting its pass sees that pass's job. A session
    set aside is waiting too: a person retries it (`mecha-sidecar inbox
    retry`), not a second hand-over."""
    with store.lock():
        if isinstance(entry, SessionEntry):
            if entry.session_id in store.mined_sessions():
                return HandOver.MINED, None
            waiting = entry.session_id in queued_session_ids(store)
        else:
            if entry.item.id in store.mined_outbox():
                return HandOver.MINED, None
            waiting = entry.item.id in queued_draft_ids(store)
        if waiting:
            job = start_pass() if start_pass is not None and awaits_a_pass(store, entry) else None
            return HandOver.WAITING, job
        enqueue(store, entry)
        return HandOver.QUEUED, start_pass() if start_pass is not None else None


class PassAfter(NamedTuple):
    """The reflect pass a door's hand-over came to (`pass_after_queue`)."""

    #: The pass, or None when the inbox needs none.
    job: jobs_mod.Job | None
    #: `job` was already running: nothing was started.
    in_flight: bool


def pass_after_queue(store: LearningStore, queued: bool, start: Callable[[], jobs_mod.Job]) -> PassAfter:
    """The reflect pass the inbox needs once a door has queued what it was
    given — `queued`: whether anything new went in. The one answer for every
    door that hands sessions over and then starts a pass: a run's end with
    nothing to queue (`mecha/sessionEnded`), an import of an agent's
    sessions, the session-end hook's pass, `reflect --sessions`, and a
    retry of the whole inbox. (One session handed over with work to queue
    goes through `hand_over`, which starts its pass under the writer lock.)

    New work gets a new pass (`start`): a pass claims the whole inbox when
    it starts, so one already running does not hold what came in after it.
    With nothing new, a reflect pass still running is the answer — a second
    would find everything claimed and report no reflections while the first
    goes on; with none running, work an earlier pass left waiting (answers
    it could not use, a pass that died) is asked again; with nothing
    waiting, no pass."""
    if queued:
        return PassAfter(start(), in_flight=False)
    running = jobs_mod.running_pass(store.root, "reflect")
    if running is not None:
        return PassAfter(running, in_flight=True)
    return PassAfter(start() if count_waiting(store) else None, in_flight=False)


def awaits_a_pass(store: LearningStore, entry: InboxEntry) -> bool:
    """Whether the copy of `entry`'s work waiting in the inbox is held by no
    pass, and none is on its way to it: what decides whether a second
    hand-over starts a pass. Held: claimed by a live process. On its way: a
    reflect job still running that started after the copy was queued (a
    pass claims the whole inbox when it starts, so it claims this too). A
    copy set aside waits for a person, not a pass."""
    directory = inbox_dir(store)
    if not directory.is_dir():
        return False
    pattern, wanted = (
        (_QUEUED_ID, entry.session_id) if isinstance(entry, SessionEntry) else (_QUEUED_DRAFT_ID, entry.item.id)
    )
    queued_at: float | None = None
    for path in directory.iterdir():
        if not path.is_file() or path.name.endswith(".tmp"):
            continue
        owner = _claim_owner(path)
        if owner is None and not path.name.endswith(".json"):
            continue
        if owner is not None and process_alive(owner):
            if wanted in _ids_in_file(path, pattern):
                return False
            continue
        if wanted in _ids_in_file(path, pattern):
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            queued_at = mtime if queued_at is None else min(queued_at, mtime)
    if queued_at is None:
        return False
    for job in jobs_mod.list_jobs(store.root):
        started = jobs_mod.started_epoch(job)
        if job.kind == "reflect" and job.state == "running" and started is not None and started >= queued_at:
            return False
    return True


def _ids_in_file(path: Path, head_pattern: re.Pattern[bytes]) -> set[str]:
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return set()
    found = head_pattern.match(head)
    return set() if found is None else {msgspec.json.decode(found.group(1))}


def _ids_in(directory: Path, head_pattern: re.Pattern[bytes]) -> set[str]:
    out: set[str] = set()
    for path in directory.iterdir():
        name = path.name
        if not (name.endswith(".json") or _CLAIM in name) or name.endswith(_REASON_SUFFIX) or not path.is_file():
            continue
        out |= _ids_in_file(path, head_pattern)
    return out


def _claim_owner(path: Path) -> int | None:
    name = path.name
    if _CLAIM not in name:
        return None
    try:
        return int(name.rsplit(_CLAIM, 1)[1])
    except ValueError:
        return None


def claim_all(store: LearningStore) -> list[Path]:
    """Claim every unclaimed entry (and any whose claimant died). Caller holds
    the lock."""
    # Claiming renames the inbox's entries and a finished entry is deleted:
    # through a linked inbox, that would be done to files outside the store.
    directory = refuse_links(store.root, inbox_dir(store))
    if not directory.is_dir():
        return []
    claimed = []
    me = os.getpid()
    for path in sorted(directory.iterdir()):
        if path.name.endswith(".tmp") or not path.is_file():
            continue
        owner = _claim_owner(path)
        if owner is not None:
            if owner == me or process_alive(owner):
                continue
            base = path.name.rsplit(_CLAIM, 1)[0]
        elif path.name.endswith(".json"):
            base = path.name
        else:
            continue
        target = directory / f"{base}{_CLAIM}{me}"
        os.replace(path, target)
        claimed.append(target)
    return claimed


def release(path: Path) -> None:
    """Give a claimed entry back to the pool (the pass failed on it)."""
    base = path.name.rsplit(_CLAIM, 1)[0]
    try:
        os.replace(path, path.with_name(base))
    except OSError:
        pass


# ─── set aside ──────────────────────────────────────────────────────────────
#
# An entry a pass cannot finish for a reason that will not change on retry
# moves to `inbox/set-aside/`, with a small record of why beside it. It stays
# there — out of every pass's way, whole, never in history — until a person
# retries it (back into the inbox, its set-aside interventions asked again)
# or drops it (deleted; its session stays as mined as it was).

_REASON_SUFFIX = ".why.json"


def set_aside_dir(store: LearningStore) -> Path:
    return store.set_aside_path


def set_aside(store: LearningStore, path: Path, reason: str, *, keys: Sequence[str] = ()) -> SetAside:
    """Move a claimed entry out of every pass's way, recording why. Caller
    holds the lock."""
    directory = set_aside_dir(store)
    ensure_private_dir(directory, root=store.root)
    base = path.name.rsplit(_CLAIM, 1)[0]
    if not base.endswith(".json"):
        base = base.rsplit(".", 1)[0] + ".json"
    ident = base[: -len(".json")]
    label = None
    try:
        entry = entry_decoder.decode(path.read_bytes())
        label = f"session {entry.session_id}" if isinstance(entry, SessionEntry) else f"draft {entry.item.id}"
    except (OSError, msgspec.DecodeError):
        pass
    record = SetAside(id=ident, reason=reason, set_aside_at=now(), interventions=list(keys), label=label)
    write_atomic(refuse_links(store.root, directory / f"{ident}{_REASON_SUFFIX}"), msgspec.json.encode(record))
    os.replace(path, refuse_links(store.root, directory / base))
    log.warning("set aside %s: %s", label or ident, reason)
    return record


def list_set_aside(store: LearningStore) -> list[SetAside]:
    """Every set-aside entry, oldest first."""
    directory = set_aside_dir(store)
    if not directory.is_dir():
        return []
    out = []
    for path in sorted(directory.glob(f"*{_REASON_SUFFIX}")):
        try:
            out.append(msgspec.json.decode(path.read_bytes(), type=SetAside))
        except (OSError, msgspec.DecodeError) as exc:
            log.warning("unreadable set-aside record %s: %s", path.name, exc)
    return out


def count_waiting(store: LearningStore) -> int:
    """Entries waiting in the inbox for a pass (claimed ones included)."""
    directory = inbox_dir(store)
    if not directory.is_dir():
        return 0
    return sum(1 for p in directory.iterdir() if p.is_file() and (p.name.endswith(".json") or _CLAIM in p.name))


def _find_set_aside(store: LearningStore, ident: str) -> SetAside:
    from mecha.core.identity import one_by_id_or_prefix

    missing = f"no set-aside inbox entry {ident!r} (see `mecha-sidecar inbox list`)"
    return one_by_id_or_prefix(list_set_aside(store), ident, lambda r: r.id, plural="set-aside entries", missing=missing)


def retry_set_aside(store: LearningStore, ident: str) -> SetAside:
    """Put a set-aside entry back in the inbox, its set-aside interventions
    to be asked again by the next pass. Caller starts that pass."""
    with store.lock():
        record = _find_set_aside(store, ident)
        directory = set_aside_dir(store)
        src = refuse_links(store.root, directory / f"{record.id}.json")
        data = src.read_bytes()
        try:
            entry = entry_decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise InvalidInput(f"set-aside entry {record.id} cannot be read, so it cannot be retried ({exc}); drop it") from None
        entry = msgspec.structs.replace(entry, retry=True)
        if record.interventions:
            stamp = now()
            store.record_attempts(Attempt(key=k, state=AttemptKind.RETRY, at=stamp) for k in record.interventions)
            store.commit(f"inbox: retry {record.label or record.id}\n\nAsked again: {', '.join(record.interventions)}")
        write_atomic(refuse_links(store.root, inbox_dir(store) / f"{record.id}.json"), msgspec.json.encode(entry))
        src.unlink()
        (directory / f"{record.id}{_REASON_SUFFIX}").unlink(missing_ok=True)
    return record


def drop_set_aside(store: LearningStore, ident: str) -> SetAside:
    """Delete a set-aside entry for good (its interventions stay set aside)."""
    with store.lock():
        record = _find_set_aside(store, ident)
        directory = set_aside_dir(store)
        (directory / f"{record.id}.json").unlink(missing_ok=True)
        (directory / f"{record.id}{_REASON_SUFFIX}").unlink(missing_ok=True)
    return record
