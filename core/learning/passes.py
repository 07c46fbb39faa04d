"""The two background passes: reflect (interventions → reflections) and learn
(reflections → a proposal).

Both run in a detached process that outlives the sidecar and the harness that
started it, so the work they are handed is first written to the store's
`inbox/` — a harness that exits the moment it has handed over a transcript
still gets its reflections, and a pass that fails (no model, a model that
stalls) leaves its entry there for the next pass to pick up. Nothing is lost
by a failure; at worst it is late.

Locking follows one rule: hold the writer lock while reading the state a
decision rests on and while writing, never across a model call (which can
take minutes, and an accept from an editor must not wait on it):

- reflect *claims* an inbox entry under the lock (a rename naming its pid),
  calls the model with the lock released, then appends the session's
  reflections and marks it mined under the lock. Two passes over the same
  session mine it once: the second finds it claimed, or already mined.
- learn snapshots the domain's rules and reflections under the lock, calls
  the model unlocked, and re-checks under the lock before writing: if a
  proposal for the domain appeared meanwhile, its own result is dropped. A
  proposal made against rules an accept has since moved is refused at accept
  time as `Stale`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import msgspec

from mecha.core.errors import InvalidInput, ModelFailure, NoModel, UnusableReply
from mecha.core.identity import mint_proposal_id, mint_run_id, now
from mecha.core.learning.consolidation import PERSON_BUDGET, Learner, gate_learned_set, refusals_summary
from mecha.core.learning.proposals import pending_for
from mecha.core.learning.reflection import Evidence, FoundAt, Origin, Reflector, Reflexion, evidence_for
from mecha.core.learning.rules import (
    LEARN_MIN_REFLECTIONS,
    MAX_ACTIVE_RULES_PER_DOMAIN,
    Refusal,
    Rule,
    active_count,
    budget_refuses,
    finalize_rules,
    validate_domain,
)
from mecha.core.sessions.mining import DEFAULT_VOICES, Intervention, Voices, bound_text, edit_intervention, extract_interventions
from mecha.core.sessions.outbox import OutboxItem
from mecha.core.sessions.provenance import WITHHELD_AFTERMATH, WITHHELD_CONTEXT, withheld_assistant_text
from mecha.core.sessions.transcript import Message, TaintCheckpoint, taint_at
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.files import write_atomic
from mecha.core.store.learning_store import (
    INBOX_DIR,
    MAX_UNUSABLE_ANSWERS,
    REFLECTIONS_FILE,
    SET_ASIDE_DIR,
    Attempt,
    AttemptState,
    LearningStore,
    Proposal,
    ProposalStatus,
    SetAside,
)
from mecha.core.store.ledger import LeapRun

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


# ─── what a session holds ───────────────────────────────────────────────────


class Planned(msgspec.Struct):
    """One intervention with what its reflector may see and how it classifies."""

    intervention: Intervention
    evidence: Evidence
    origin: Origin
    #: For an imported session: the file line of the message the
    #: intervention rides in (`intervention.at`).
    line: int | None = None


def survey_session(
    messages: Sequence[Message],
    taint_timeline: Sequence[TaintCheckpoint] | None,
    *,
    interactive: bool = True,
    voices: Voices = DEFAULT_VOICES,
) -> list[Planned]:
    """Every intervention in a transcript, classified by the taint in
    context at the message it rides in (`taint_at`: no coverage →
    untrusted; a non-interactive session → derived), with the assistant's
    text withheld where it was written under untrusted taint
    (`withheld_assistant_text`)."""
    timeline = list(taint_timeline) if taint_timeline else None
    planned = []
    for i in extract_interventions(messages, voices):
        # The person's words are bounded on the learning path (the harness's
        # `extractInterventions` still sees them whole).
        i.text = bound_text(i.text)
        evidence, origin = evidence_for(taint_at(timeline, i.at), interactive=interactive)
        if evidence is Evidence.FULL:
            hide_context, hide_aftermath = withheld_assistant_text(messages, timeline, i)
            if hide_context and i.context:
                i.context = WITHHELD_CONTEXT
            if hide_aftermath and i.aftermath:
                i.aftermath = WITHHELD_AFTERMATH
        planned.append(Planned(i, evidence, origin))
    return planned


def survey_draft(item: OutboxItem) -> Planned | None:
    """A sent-and-edited draft as an `edit` intervention, classified by the
    taint recorded on the item when it was staged."""
    i = edit_intervention(item)
    if i is None:
        return None
    evidence, origin = evidence_for(item.taint)
    return Planned(i, evidence, origin)


# ─── the inbox ──────────────────────────────────────────────────────────────


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
    plans: list[Planned] | None = None
    #: The session file an import read it from (absent for a session the
    #: harness handed over).
    file: str | None = None
    #: Put back by a person (`inbox retry`) after it was set aside: asked
    #: again although its session is already marked mined.
    retry: bool = False
    # An entry queued by a version that kept the transcript instead of its
    # survey: read (surveyed at the pass with the voices it carries, else
    # the pass's own), never written.
    messages: list[Message] | None = None
    taint_timeline: list[TaintCheckpoint] | None = None
    interactive: bool = True
    voices: Voices | None = None

    def surveyed(self, voices: Voices) -> list[Planned]:
        """The interventions to reflect on."""
        if self.plans is not None:
            return self.plans
        heard = self.voices if self.voices is not None else voices
        return survey_session(self.messages or [], self.taint_timeline, interactive=self.interactive, voices=heard)


class DraftEntry(msgspec.Struct, tag="draft", tag_field="kind", omit_defaults=True):
    """A sent-and-edited draft handed over for reflection, with the `edit`
    intervention surveyed from it (`None` in an entry queued before the
    survey was kept: surveyed at the pass)."""

    item: OutboxItem
    plan: Planned | None = None
    retry: bool = False

    def surveyed(self, voices: Voices) -> list[Planned]:
        plan = self.plan if self.plan is not None else survey_draft(self.item)
        return [plan] if plan is not None else []


def session_entry(
    session_id: str,
    messages: Sequence[Message],
    taint_timeline: Sequence[TaintCheckpoint] | None = None,
    *,
    interactive: bool = True,
    voices: Voices = DEFAULT_VOICES,
) -> SessionEntry:
    """Survey a session, once, into the inbox entry that carries what was
    found."""
    return SessionEntry(session_id, plans=survey_session(messages, taint_timeline, interactive=interactive, voices=voices))


InboxEntry = SessionEntry | DraftEntry

_entry_decoder = msgspec.json.Decoder(InboxEntry)
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_CLAIM = ".claim-"


def inbox_dir(store: LearningStore) -> Path:
    return store.root / INBOX_DIR


def enqueue(store: LearningStore, entry: InboxEntry) -> Path:
    """Write one unit of reflect work where any later pass will find it."""
    from mecha.core.store.files import ensure_private_dir

    directory = inbox_dir(store)
    ensure_private_dir(directory, root=store.root)
    # Inbox entries carry what people and assistants said, third-party text
    # included, and are transient: a pass's commit (`git add -A`) must never carry them into
    # the store's permanent history.
    ignore = directory / ".gitignore"
    if not ignore.exists():
        write_atomic(ignore, b"*\n")
    path = directory / inbox_name(entry)
    write_atomic(path, msgspec.json.encode(entry))
    return path


def inbox_name(entry: InboxEntry) -> str:
    """The file name an entry is queued under: when, then whose (sorted by
    name, the inbox is oldest first)."""
    key = entry.session_id if isinstance(entry, SessionEntry) else f"draft-{entry.item.id}"
    return f"{now().replace(':', '').replace('-', '')}-{_SAFE.sub('_', key)[:80]}.json"


#: An entry's session id, from the head of its file: the encoder writes the
#: tag and then `session_id` first, so the id sits in the first bytes and a
#: whole transcript never has to be read to learn whose it is.
_QUEUED_ID = re.compile(rb'^\{"kind":"session","session_id":("(?:[^"\\]|\\.)*")')


def queued_session_ids(store: LearningStore) -> set[str]:
    """Sessions waiting in the inbox (claimed or not) or set aside there:
    handed over, not yet mined. A caller about to queue a session checks here
    as well as in `mined.jsonl`, or a session whose pass failed is queued
    twice."""
    out: set[str] = set()
    for directory in (inbox_dir(store), set_aside_dir(store)):
        if directory.is_dir():
            out |= _session_ids_in(directory)
    return out


def _session_ids_in(directory: Path) -> set[str]:
    out = set()
    for path in directory.iterdir():
        name = path.name
        if not (name.endswith(".json") or _CLAIM in name) or name.endswith(_REASON_SUFFIX) or not path.is_file():
            continue
        try:
            with path.open("rb") as f:
                head = f.read(4096)
        except OSError:
            continue
        found = _QUEUED_ID.match(head)
        if found is not None:
            out.add(msgspec.json.decode(found.group(1)))
    return out


def _claim_owner(path: Path) -> int | None:
    name = path.name
    if _CLAIM not in name:
        return None
    try:
        return int(name.rsplit(_CLAIM, 1)[1])
    except ValueError:
        return None


def _claim_all(store: LearningStore) -> list[Path]:
    """Claim every unclaimed entry (and any whose claimant died). Caller holds
    the lock."""
    from mecha.core.store.files import refuse_links

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
            if owner == me or jobs_mod._pid_alive(owner):
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


def _release(path: Path) -> None:
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
    return store.root / SET_ASIDE_DIR


def set_aside(store: LearningStore, path: Path, reason: str, *, keys: Sequence[str] = ()) -> SetAside:
    """Move a claimed entry out of every pass's way, recording why. Caller
    holds the lock."""
    from mecha.core.store.files import ensure_private_dir, refuse_links

    directory = set_aside_dir(store)
    ensure_private_dir(directory, root=store.root)
    base = path.name.rsplit(_CLAIM, 1)[0]
    if not base.endswith(".json"):
        base = base.rsplit(".", 1)[0] + ".json"
    ident = base[: -len(".json")]
    label = None
    try:
        entry = _entry_decoder.decode(path.read_bytes())
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
    from mecha.core.errors import Ambiguous, NotFound
    from mecha.core.identity import by_id_or_prefix

    matches = by_id_or_prefix(list_set_aside(store), ident, lambda r: r.id)
    if not matches:
        raise NotFound(f"no set-aside inbox entry {ident!r} (see `mecha-sidecar inbox list`)")
    if len(matches) > 1:
        ids = [r.id for r in matches]
        raise Ambiguous(f"{ident!r} matches {len(ids)} set-aside entries: {', '.join(ids)}", ids)
    return matches[0]


def retry_set_aside(store: LearningStore, ident: str) -> SetAside:
    """Put a set-aside entry back in the inbox, its set-aside interventions
    to be asked again by the next pass. Caller starts that pass."""
    from mecha.core.store.files import refuse_links

    with store.lock():
        record = _find_set_aside(store, ident)
        directory = set_aside_dir(store)
        src = refuse_links(store.root, directory / f"{record.id}.json")
        data = src.read_bytes()
        try:
            entry = _entry_decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise InvalidInput(f"set-aside entry {record.id} cannot be read, so it cannot be retried ({exc}); drop it") from None
        entry = msgspec.structs.replace(entry, retry=True)
        if record.interventions:
            stamp = now()
            store.record_attempts(Attempt(key=k, state="retry", at=stamp) for k in record.interventions)
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


# ─── reflect ────────────────────────────────────────────────────────────────


class ReflectOutcome(msgspec.Struct):
    sessions: int = 0
    drafts: int = 0
    skipped_already_mined: int = 0
    reflections: int = 0
    learnable: int = 0
    #: Explicit "nothing to learn here" answers.
    skipped_no_lesson: int = 0
    #: Entries handed back to the inbox with work still pending.
    failed: int = 0
    #: Unusable answers this pass (each leaves its intervention pending).
    unusable: int = 0
    #: Interventions or entries set aside this pass (`mecha-sidecar inbox`).
    set_aside: int = 0
    errors: list[str] = msgspec.field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{self.reflections} reflection(s) written ({self.learnable} learnable)"]
        parts.append(f"from {self.sessions} session(s) and {self.drafts} draft(s)")
        if self.skipped_no_lesson:
            parts.append(f"{self.skipped_no_lesson} intervention(s) with nothing to learn")
        if self.skipped_already_mined:
            parts.append(f"{self.skipped_already_mined} already mined, skipped")
        if self.unusable:
            parts.append(f"{self.unusable} unusable answer(s), those interventions still pending")
        if self.set_aside:
            parts.append(f"{self.set_aside} set aside (see `mecha-sidecar inbox list`)")
        if self.failed:
            parts.append(f"{self.failed} left in the inbox for a later pass: {'; '.join(self.errors)}")
        return ", ".join(parts)


def _entry_id_problem(entry: InboxEntry) -> str | None:
    from mecha.core.identity import record_id_problem

    if isinstance(entry, SessionEntry):
        return record_id_problem(entry.session_id)
    return record_id_problem(entry.item.id)


def intervention_key(entry: InboxEntry, plan: Planned) -> str:
    """The attempts ledger's name for one intervention: stable across passes
    over the same (or a grown) transcript, since a message's index does not
    change when messages are appended after it."""
    if isinstance(entry, DraftEntry):
        return f"draft:{entry.item.id}"
    return f"{entry.session_id}#{plan.intervention.at}:{plan.intervention.trigger.value}"


def permanent_fault(exc: BaseException) -> str | None:
    """Why a failed model call will fail the same way however often it is
    retried, or `None` when a later pass may well succeed.

    A 400, 413 or 422 is the server refusing *this* request (a prompt longer
    than the model's context, content it will not take): asked again it
    answers the same, and left in the queue it would block every entry
    behind it for good. Everything else — timeouts, 5xx, 429, a refused
    connection, and 401/403/404, which are the configuration's fault and
    fail every call alike until a person fixes it — is not this entry's
    doing, and the entry waits for a later pass.
    """
    if isinstance(exc, ModelFailure) and not isinstance(exc, UnusableReply) and exc.status in (400, 413, 422):
        return f"the model server refused this request (HTTP {exc.status}): {exc}"
    return None


class _Answer(msgspec.Struct):
    """What one reflector call came to."""

    plan: Planned
    key: str
    reflexion: Reflexion | None = None
    #: An explicit skip: the model found nothing to learn.
    skipped: bool = False
    #: Set when the answer was no answer (`UnusableReply`).
    unusable: str | None = None
    reply: str | None = None
    #: Set when the call failed in a way retrying will not change.
    permanent: str | None = None

    @property
    def usable(self) -> bool:
        return self.reflexion is not None or self.skipped


class _Gate:
    """Shared by a pass's calls: bounds how many are in flight, and stops
    new ones from starting once one has failed in a way that will fail the
    rest too (the server is gone, the key is wrong)."""

    def __init__(self, concurrency: int):
        import asyncio

        self.slots = asyncio.Semaphore(max(1, concurrency))
        self.stopped: BaseException | None = None


async def _ask(
    gate: _Gate, reflector: Reflector, plan: Planned, key: str, session_id: str, file: str | None, progress: Progress
) -> _Answer | BaseException:
    async with gate.slots:
        if gate.stopped is not None:
            return gate.stopped
        try:
            r = await reflector.reflect(plan.intervention, plan.evidence, strict=True)
        except UnusableReply as exc:
            progress(f"{key}: unusable answer: {exc}" + (f"\n  the reply was: {exc.reply[:2000]!r}" if exc.reply else ""))
            return _Answer(plan, key, unusable=str(exc), reply=exc.reply)
        except Exception as exc:
            why = permanent_fault(exc)
            if why is not None:
                progress(f"{key}: {why}")
                return _Answer(plan, key, permanent=why)
            gate.stopped = exc
            return exc
    if r is None:
        progress(f"{key}: nothing to learn")
        return _Answer(plan, key, skipped=True)
    r.session_id = session_id
    r.origin = plan.origin
    r.found = FoundAt(at=plan.intervention.at, file=file, line=plan.line)
    progress(f"{key}: lesson ({plan.origin.value}): {r.reflexion_text}")
    return _Answer(plan, key, reflexion=r)


async def reflect_inbox(
    store: LearningStore,
    reflector: Reflector | None,
    *,
    voices: Voices = DEFAULT_VOICES,
    progress: Progress = _quiet,
    require_model: Callable[[], Reflector] | None = None,
    concurrency: int = 1,
) -> ReflectOutcome:
    """Reflect every unit of work waiting in the inbox.

    Each intervention is asked once per pass, up to `concurrency` at a time
    across all entries. A session is marked mined only when every one of its
    interventions has a usable answer — a lesson or an explicit skip — or
    has been set aside; until then it goes back to the inbox with what was
    answered recorded (the attempts ledger), and a later pass asks only what
    is still open. An entry never blocks the ones behind it: one that fails
    for a reason that will not change on retry is set aside with its reason.

    `reflector` may be `None` when no model is configured; then an entry that
    needs a model call raises (via `require_model`) and stays in the inbox,
    while entries that need none (already mined, nothing to reflect on) are
    still settled.
    """
    import asyncio

    outcome = ReflectOutcome()
    with store.lock():
        claimed = _claim_all(store)
    gate = _Gate(concurrency)
    model: list[Reflector] = []

    def get_model() -> Reflector:
        if not model:
            model.append(_model(reflector, require_model))
        return model[0]

    # Calls overlap across entries; records are written in the entries' own
    # order (oldest first), so the history reads as the sessions happened.
    turns = [asyncio.Event() for _ in claimed]

    async def one(i: int, path: Path) -> None:
        async def my_turn() -> None:
            if i:
                await turns[i - 1].wait()

        try:
            await _reflect_entry(store, path, get_model, voices, gate, progress, outcome, my_turn)
        except Exception as exc:
            _release(path)
            outcome.failed += 1
            outcome.errors.append(str(exc) or type(exc).__name__)
            if gate.stopped is None:
                gate.stopped = exc
        finally:
            turns[i].set()

    await asyncio.gather(*(one(i, path) for i, path in enumerate(claimed)))
    if gate.stopped is not None:
        progress(f"stopped: {gate.stopped}; so far: {outcome.summary()}")
        raise gate.stopped
    if outcome.unusable:
        raise UnusableReply(outcome.summary())
    return outcome


def _model(reflector: Reflector | None, require_model: Callable[[], Reflector] | None) -> Reflector:
    if reflector is not None:
        return reflector
    if require_model is None:
        raise NoModel("no model is configured for the reflect pass")
    return require_model()


def _not_on_file(store: LearningStore, reflections: list[Reflexion], session_id: str, *, edits: bool) -> list[Reflexion]:
    """The reflections not already on file from an earlier pass over the same
    work. Appending reflections and marking the work mined are two writes; a
    pass killed between them leaves the reflections unmarked, and the next
    pass reflects the work again. Matched by trigger, intervention and context
    (what the transcript fixes, not what the model wrote), counted, so each
    intervention is recorded once. Caller holds the lock."""
    from collections import Counter

    from mecha.core.store.files import read_bytes

    data = read_bytes(store.root / REFLECTIONS_FILE)
    if not reflections or not data or msgspec.json.encode(session_id) not in data:
        return reflections
    on_file = Counter(
        (r.trigger, r.intervention, r.context)
        for r in store.reflexions()
        if r.session_id == session_id and (r.trigger == "edit") == edits
    )
    fresh = []
    for r in reflections:
        key = (r.trigger, r.intervention, r.context)
        if on_file[key] > 0:
            on_file[key] -= 1
        else:
            fresh.append(r)
    return fresh


class _Work(msgspec.Struct):
    """One inbox entry as a unit of reflect work: sessions and drafts alike."""

    entry: InboxEntry
    #: The id its reflections carry and its `mined` record names.
    session_id: str
    #: `session <id>` or `draft <id>`, for logs and commit messages.
    label: str
    plans: list[Planned]
    edits: bool

    @property
    def file(self) -> str | None:
        """The session file an import read the work from, if one did."""
        return self.entry.file if isinstance(self.entry, SessionEntry) else None

    @classmethod
    def of(cls, entry: InboxEntry, voices: Voices) -> _Work:
        plans = entry.surveyed(voices)
        if isinstance(entry, SessionEntry):
            return cls(entry, entry.session_id, f"session {entry.session_id}", plans, edits=False)
        return cls(entry, entry.item.session_id or "", f"draft {entry.item.id}", plans, edits=True)

    def mined(self, store: LearningStore) -> bool:
        if isinstance(self.entry, SessionEntry):
            return self.entry.session_id in store.mined_sessions()
        return self.entry.item.id in store.mined_outbox()

    def mark_mined(self, store: LearningStore) -> None:
        if isinstance(self.entry, SessionEntry):
            store.mark_mined(self.entry.session_id)
        else:
            store.mark_outbox_mined(self.entry.item.id)

    def count(self, outcome: ReflectOutcome) -> None:
        if isinstance(self.entry, SessionEntry):
            outcome.sessions += 1
        else:
            outcome.drafts += 1


async def _reflect_entry(
    store: LearningStore,
    path: Path,
    get_model: Callable[[], Reflector],
    voices: Voices,
    gate: _Gate,
    progress: Progress,
    outcome: ReflectOutcome,
    my_turn: Callable[[], Awaitable[None]],
) -> None:
    import asyncio

    from mecha.core.identity import now as stamp

    try:
        entry = _entry_decoder.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError) as exc:
        log.warning("unreadable inbox entry %s: %s", path.name, exc)
        await my_turn()
        with store.lock():
            set_aside(store, path, f"unreadable: {exc}")
        outcome.set_aside += 1
        return
    work = _Work.of(entry, voices)
    retry = entry.retry
    bad_id = _entry_id_problem(entry)
    if bad_id is not None:
        # Queued before ids were checked where they enter: it could never be
        # recorded mined, so every pass would ask the model for it again.
        await my_turn()
        with store.lock():
            set_aside(store, path, f"{work.label}: the id {bad_id}; it can never be recorded mined")
        outcome.set_aside += 1
        return
    if work.mined(store) and not retry:
        await my_turn()
        progress(f"{work.label} is already mined; skipped")
        outcome.skipped_already_mined += 1
        path.unlink(missing_ok=True)
        return
    keys = [intervention_key(entry, p) for p in work.plans]
    states = store.attempt_states(keys)
    todo = [(p, k) for p, k in zip(work.plans, keys) if not states.get(k, _UNSETTLED).settled]
    progress(f"{work.label}: {len(work.plans)} intervention(s), {len(todo)} to ask")
    answers: list[_Answer | BaseException] = []
    if todo:
        reflector = get_model()
        answers = list(await asyncio.gather(*(_ask(gate, reflector, p, k, work.session_id, work.file, progress) for p, k in todo)))
    got = [a for a in answers if isinstance(a, _Answer)]
    interrupted = len(got) < len(answers)
    await my_turn()
    if interrupted and not got:
        _release(path)
        outcome.failed += 1
        outcome.errors.append(f"{work.label}: {len(todo)} intervention(s) pending (the pass was interrupted)")
        return
    with store.lock():
        if work.mined(store) and not retry:
            progress(f"{work.label} was mined by another pass meanwhile; skipped")
            outcome.skipped_already_mined += 1
            path.unlink(missing_ok=True)
            return
        at = stamp()
        states = store.attempt_states(keys)
        records: list[Attempt] = []
        newly_aside: list[str] = []
        for a in got:
            if a.usable:
                records.append(Attempt(key=a.key, state="answered", at=at))
            elif a.permanent is not None:
                records.append(Attempt(key=a.key, state="set_aside", at=at, reason=a.permanent))
                newly_aside.append(a.key)
            else:
                records.append(Attempt(key=a.key, state="unusable", at=at, reason=a.unusable))
                if states.get(a.key, _UNSETTLED).unusable + 1 >= MAX_UNUSABLE_ANSWERS:
                    why = f"{MAX_UNUSABLE_ANSWERS} unusable answers; the last: {a.unusable}"
                    records.append(Attempt(key=a.key, state="set_aside", at=at, reason=why))
                    newly_aside.append(a.key)
        reflections = _not_on_file(store, [a.reflexion for a in got if a.reflexion is not None], work.session_id, edits=work.edits)
        store.append_reflexions(reflections)
        store.record_attempts(records)
        for rec in records:
            states.setdefault(rec.key, AttemptState()).apply(rec)
        learnable = sum(1 for r in reflections if r.learnable())
        outcome.reflections += len(reflections)
        outcome.learnable += learnable
        outcome.skipped_no_lesson += sum(1 for a in got if a.skipped)
        outcome.unusable += sum(1 for a in got if not a.usable and a.permanent is None)
        outcome.set_aside += len(newly_aside)
        complete = all(states.get(k, _UNSETTLED).settled for k in keys)
        if complete and not work.mined(store):
            work.mark_mined(store)
        aside = [k for k in keys if states.get(k, _UNSETTLED).set_aside is not None]
        summary = ", ".join(f"{p.intervention.trigger.value}@{p.intervention.at}={p.origin.value}" for p in work.plans)
        if complete:
            verb = "retried" if retry else "reflect"
            message = (
                f"{verb} {work.label}: {len(reflections)} reflection(s), {learnable} learnable\n\n"
                f"{len(work.plans)} intervention(s) found; {summary or 'none'}"
            )
            if aside:
                message += f"\n{len(aside)} set aside: " + "; ".join(f"{k}: {states[k].set_aside}" for k in aside)
        else:
            pending = [k for k in keys if not states.get(k, _UNSETTLED).settled]
            message = (
                f"reflect {work.label}: {len(reflections)} reflection(s) so far, {len(pending)} intervention(s) pending\n\n"
                f"{len(work.plans)} intervention(s) found; {summary}"
            )
        store.commit(message)
        if complete:
            work.count(outcome)
            if aside:
                reasons = "; ".join(f"{k}: {states[k].set_aside}" for k in aside)
                set_aside(store, path, f"{len(aside)} intervention(s) set aside — {reasons}", keys=aside)
            else:
                path.unlink(missing_ok=True)
            return
    # Work left: back to the inbox for a later pass (answers so far recorded).
    _release(path)
    outcome.failed += 1
    left = len([k for k in keys if not states.get(k, _UNSETTLED).settled])
    faults = sorted({a.unusable for a in got if a.unusable})
    why = "the pass was interrupted" if interrupted else "unusable answer: " + "; ".join(faults)
    outcome.errors.append(f"{work.label}: {left} intervention(s) pending ({why})")


_UNSETTLED = AttemptState()


# ─── learn ──────────────────────────────────────────────────────────────────


class LearnOutcome(msgspec.Struct, omit_defaults=True):
    outcome: str
    proposal_id: str | None = None
    status: str | None = None
    #: What the learn gate refused of the model's answer, and why.
    refusals: list[Refusal] = msgspec.field(default_factory=list)


def learnable_pool(store: LearningStore, domain: str) -> list[Reflexion]:
    """A domain's learnable, unprocessed reflections, oldest first."""
    return store.learnable_unprocessed(domain)


#: At most this many reflections go into one learner call, oldest first; the
#: rest wait for the next pass. Unbounded, one domain's backlog made a prompt
#: no model's context holds, and every learn pass for it failed the same way.
LEARN_BATCH_MAX_REFLECTIONS = 40
#: And at most about this many characters of them (each reflection's fields
#: are cut to size in the learner's prompt as well): a small local model's
#: context is a few thousand tokens.
LEARN_BATCH_MAX_CHARS = 16_000


def learn_batch(
    pool: Sequence[Reflexion],
    max_count: int = LEARN_BATCH_MAX_REFLECTIONS,
    max_chars: int = LEARN_BATCH_MAX_CHARS,
) -> list[Reflexion]:
    """The oldest reflections of `pool` that fit one learner call: at most
    `max_count`, and no more than `max_chars` of material — but always the
    oldest one, so a single large reflection is consolidated (cut to size in
    the prompt) rather than blocking the domain for good."""
    batch: list[Reflexion] = []
    used = 0
    for r in pool:
        size = len(r.context) + min(len(r.intervention), PERSON_BUDGET) + len(r.reflexion_text)
        if batch and (len(batch) >= max_count or used + size > max_chars):
            break
        batch.append(r)
        used += size
    return batch


def changes_nothing(before: Sequence[Rule], after: Sequence[Rule]) -> bool:
    """Whether a learned set `after` says what `before` says: the same rule
    texts, each as enabled and as retired as it was. Order, confidence and
    support counts are bookkeeping, not something to ask a person to review;
    a proposal that changes nothing would only wait in their queue."""
    def said(rules: Sequence[Rule]) -> list[tuple[str, bool, bool]]:
        return sorted((r.text, r.enabled, r.retired_at is not None) for r in rules)

    return said(before) == said(after)


def unchanged_since(store: LearningStore, domain: str, pool: Sequence[Reflexion]) -> LeapRun | None:
    """The last pass for `domain`, when it kept the rules as they were and no
    reflection has joined the pool since: asking again would only put the
    same question to the model."""
    runs = [r for r in store.runs() if r.domain == domain]
    if not runs or not runs[-1].unchanged:
        return None
    last = runs[-1]
    return last if {r.id for r in pool} <= set(last.reflexion_ids) else None


def learn_refusal(store: LearningStore, domain: str, minimum: int | None = None) -> str | None:
    """Why a learn pass for `domain` would do nothing right now, or `None`.

    Counts *learnable* unprocessed reflections (DESIGN §8.13), and refuses
    while a proposal for the domain awaits a person: a second one argued from
    the same reflections would only be a duplicate to review.
    """
    validate_domain(domain)
    floor = LEARN_MIN_REFLECTIONS if minimum is None else minimum
    if floor < 1:
        raise InvalidInput("min: must be at least 1")
    pending = [p.id for p in pending_for(store, domain)]
    if pending:
        return f"proposal {pending[0]} for {domain} is still pending; accept or reject it first"
    pool = learnable_pool(store, domain)
    have = len(pool)
    if have < floor:
        return f"{domain} has {have} learnable unprocessed reflection(s); a learn pass needs at least {floor}"
    last = unchanged_since(store, domain, pool)
    if last is not None:
        return (
            f"the last learn pass for {domain} ({last.created_at}) kept its {last.rules_after} rule(s) as they are, "
            "and no learnable reflection has arrived since; learn again once one has"
        )
    return None


async def learn_domain(
    store: LearningStore,
    domain: str,
    learner: Learner,
    *,
    minimum: int | None = None,
    progress: Progress = _quiet,
) -> LearnOutcome:
    """One consolidation pass for a domain; the result is a proposal, never
    a change to the live rules."""
    validate_domain(domain)
    with store.lock():
        refusal = learn_refusal(store, domain, minimum)
        if refusal is not None:
            return LearnOutcome(outcome=f"nothing to do: {refusal}")
        pool = learnable_pool(store, domain)
        batch = learn_batch(pool)
        user = store.user_rules(domain)
        before = store.learned_rules(domain)
    left = len(pool) - len(batch)
    progress(
        f"consolidating {len(batch)} reflection(s) into {len(before)} learned {domain} rule(s)"
        + (f"; {left} more wait for the next pass" if left else "")
    )
    answer = await learner.learn(domain, user, before, batch, strict=True)
    if answer is None:
        raise ModelFailure("the learner's reply held no usable rule set; the reflections stay in the pool")
    stamp = now()
    batch_ids = [r.id for r in batch]
    gated = gate_learned_set(answer, batch, before)
    rules = finalize_rules(gated.rules, before, batch_ids, stamp)
    active_before, active_after = active_count(before), active_count(rules)
    refused_note = (
        f"; the learn gate refused {len(gated.refusals)}: {refusals_summary(gated.refusals)}" if gated.refusals else ""
    )
    with store.lock():
        if pending_for(store, domain):
            return LearnOutcome(outcome="another pass proposed for this domain meanwhile; this result was dropped")
        if store.learned_rules(domain) != before:
            return LearnOutcome(outcome="the live rules changed during the pass; this result was dropped, run learn again")
        if changes_nothing(before, rules) and gated.refusals:
            store.append_run(LeapRun(
                id=mint_run_id(), domain=domain, reflexions_processed=0, rules_before=active_before,
                rules_after=active_after, created_at=stamp,
            ))
            store.commit(
                f"learn {domain}: nothing filed (the learn gate refused all {len(gated.refusals)})\n\n"
                + "\n".join(f"- {r.rule[:200]!r}: {r.reason}" for r in gated.refusals)
            )
            return LearnOutcome(
                outcome=(
                    f"nothing filed: the learn gate refused everything the model proposed for {domain} "
                    f"({len(gated.refusals)}): {refusals_summary(gated.refusals)}; the reflections stay in the pool"
                ),
                status="refused",
                refusals=gated.refusals,
            )
        if changes_nothing(before, rules):
            store.append_run(LeapRun(
                id=mint_run_id(), domain=domain, reflexions_processed=0, rules_before=active_before,
                rules_after=active_after, created_at=stamp, unchanged=True,
                reflexion_ids=[r.id for r in batch],
            ))
            store.commit(
                f"learn {domain}: nothing to change ({active_before} active rules kept)\n\n"
                f"The model's rewrite of {len(batch)} learnable reflection(s) equals the live rules; no proposal filed."
            )
            return LearnOutcome(
                outcome=f"nothing to change: the model kept the {active_before} {domain} rule(s) as they are",
                status="unchanged",
            )
        refused = budget_refuses(active_before, active_after)
        status = ProposalStatus.REJECTED_BY_GATE if refused else ProposalStatus.PENDING
        reason = (
            f"the budget gate refused it: {active_after} active rules is over the cap of "
            f"{MAX_ACTIVE_RULES_PER_DOMAIN} and grows the set from {active_before}; "
            "its reflections return to the pool for a pass that merges or retires first"
            if refused
            else None
        )
        proposal = Proposal(
            id=mint_proposal_id(),
            domain=domain,
            status=status,
            reflexion_ids=batch_ids,
            rules_before=before,
            rules=rules,
            evidence=f"consolidated from {len(batch)} learnable reflection(s): {', '.join(batch_ids)}",
            created_at=stamp,
            resolved_at=stamp if refused else None,
            reason=reason,
            drops=gated.drops,
            refusals=gated.refusals,
        )
        store.write_proposal(proposal)
        run = LeapRun(
            id=mint_run_id(),
            domain=domain,
            reflexions_processed=len(batch),
            rules_before=active_before,
            rules_after=active_after,
            created_at=stamp,
        )
        store.append_run(run)
        store.commit(
            f"learn {domain}: {'gate refused' if refused else 'propose'} {active_before} -> {active_after} "
            f"active rules ({proposal.id})\n\n"
            f"From {len(batch)} learnable reflection(s). "
            + ("The budget gate refused growth past the cap." if refused else "Awaiting a person's review.")
        )
    verb = "refused by the budget gate" if refused else "pending review"
    return LearnOutcome(
        outcome=f"proposal {proposal.id} {verb}: {active_before} -> {active_after} active {domain} rules{refused_note}",
        proposal_id=proposal.id,
        status=status.value,
        refusals=gated.refusals,
    )
