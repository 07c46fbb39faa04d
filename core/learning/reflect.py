"""The reflect pass: the interventions waiting in the inbox → reflections.

It runs in a detached process that outlives the sidecar and the harness
that started it, on work handed over through the store's inbox
(`mecha.core.store.inbox`).

Locking follows one rule, shared with the learn pass
(`mecha.core.learning.learn`): hold the writer lock while reading the state
a decision rests on and while writing, never across a model call (which can
take minutes, and an accept from an editor must not wait on it). Reflect
*claims* an inbox entry under the lock, calls the model with the lock
released, then appends the session's reflections and marks it mined under
the lock. Two passes over the same session mine it once: the second finds
it claimed, or already mined.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from mecha.core.domain.record import Repeat
from mecha.core.domain.reflexion import Evidence, FoundAt, Origin, Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.errors import ModelFailure, NoModel, UnusableReply
from mecha.core.identity import mint_reflexion_id, now
from mecha.core.learning.record import live_rules, new_repeats
from mecha.core.learning.reflection import Reflector, reflection_domain
from mecha.core.learning.skips import go_ahead_reason
from mecha.core.learning.sources import SOURCE_TEXT_BUDGET
from mecha.core.sessions.mining import bound_text
from mecha.core.sessions.survey import Planned
from mecha.core.store.inbox import DraftEntry, InboxEntry, SessionEntry, claim_all, entry_decoder, release, set_aside
from mecha.core.store.learning_store import MAX_UNUSABLE_ANSWERS, Attempt, AttemptKind, AttemptState, LearningStore

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger(__name__)

Progress = Callable[[str], None]
#: How far a pass has got: `(answered, to ask)` interventions, called as each
#: answer comes back (and as each entry adds what it will ask).
Counts = Callable[[int, int], None]


def quiet(_: str) -> None:
    pass


class ReflectOutcome(msgspec.Struct):
    sessions: int = 0
    drafts: int = 0
    skipped_already_mined: int = 0
    reflections: int = 0
    learnable: int = 0
    #: Explicit "nothing to learn here" answers.
    skipped_no_lesson: int = 0
    #: Bare go-aheads skipped by rule, with no model call (`skips`).
    skipped_by_rule: int = 0
    #: Untrusted interventions recorded without a model call (`asks_the_model`).
    withheld: int = 0
    #: Entries handed back to the inbox with work still pending.
    failed: int = 0
    #: Unusable answers this pass (each leaves its intervention pending).
    unusable: int = 0
    #: Why answers were unusable, each reason once, in the order met.
    unusable_why: list[str] = msgspec.field(default_factory=list)
    #: Usable answers this pass (a lesson or an explicit skip).
    usable: int = 0
    #: Interventions left pending for a retry after unusable answers.
    pending: int = 0
    #: Interventions this pass set out to ask about, and how many it has
    #: had an answer for (usable or not): its progress.
    to_ask: int = 0
    answered: int = 0
    #: Interventions or entries set aside this pass (`mecha-sidecar inbox`).
    set_aside: int = 0
    #: Corrections that showed a live rule was not followed (`record`).
    repeats: int = 0
    errors: list[str] = msgspec.field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{self.reflections} reflection(s) written ({self.learnable} learnable)"]
        parts.append(f"from {self.sessions} session(s) and {self.drafts} draft(s)")
        if self.skipped_no_lesson:
            parts.append(f"{self.skipped_no_lesson} intervention(s) with nothing to learn")
        if self.skipped_by_rule:
            parts.append(f"{self.skipped_by_rule} bare go-ahead(s) skipped without a model call")
        if self.withheld:
            parts.append(
                f"{self.withheld} untrusted intervention(s) recorded without a model call "
                "(`mecha-sidecar lessons` says what held each back)"
            )
        if self.repeats:
            parts.append(f"{self.repeats} correction(s) of a live rule (`mecha-sidecar rules` shows its record)")
        if self.skipped_already_mined:
            parts.append(f"{self.skipped_already_mined} already mined, skipped")
        if self.unusable:
            why = "; ".join(self.unusable_why[:3]) + ("; …" if len(self.unusable_why) > 3 else "")
            parts.append(f"{self.unusable} unusable answer(s)" + (f" ({why})" if why else ""))
        if self.set_aside:
            parts.append(f"{self.set_aside} set aside (see `mecha-sidecar inbox list`)")
        if self.failed:
            parts.append(f"{self.failed} left in the inbox for a later pass: {'; '.join(self.errors)}")
        if self.pending:
            parts.append(f"{self.pending} intervention(s) pending: {RETRY_HINT}")
        return ", ".join(parts)


#: How a person retries what a pass left pending: every verb and method that
#: queues work starts a reflect pass when anything waits in the inbox.
RETRY_HINT = (
    "the next reflect pass asks them again: `mecha-sidecar inbox retry` starts one now, and so does the end of "
    "another session; `mecha-sidecar inbox` shows what waits"
)


def pass_failure(outcome: ReflectOutcome, stopped: BaseException | None) -> BaseException | None:
    """How a reflect pass ends — the one place it is decided: `None` for
    `done`, else the error it fails with.

    `failed` means the pass itself could not do its work: a fault stopped
    it (no model, the server gone, a stall past the timeout, a storm of
    errors), or it asked and not one answer was usable — the model, not the
    work, is what is wrong. A pass that wrote what it could and left some
    interventions pending after unusable answers is `done`: its outcome
    counts them and says how they are asked again (`RETRY_HINT`). The
    first real import over 47 interventions read `failed` with 20
    reflections written, as if nothing had been."""
    if stopped is not None:
        return stopped
    if outcome.unusable and not outcome.usable:
        return UnusableReply(f"no usable answer from the model: {outcome.summary()}")
    return None


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
    #: Set when no model was asked: why a rule skipped it (`skips`).
    rule: str | None = None
    #: Set when the answer was no answer (`UnusableReply`).
    unusable: str | None = None
    reply: str | None = None
    #: Set when the call failed in a way retrying will not change.
    permanent: str | None = None
    #: The live learned rules the correction repeats, by id
    #: (`reflection.repeated_rules`).
    repeats: list[str] = msgspec.field(default_factory=list)

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
    gate: _Gate,
    reflector: Reflector,
    plan: Planned,
    key: str,
    session_id: str,
    progress: Progress,
    project: str | None = None,
    file: str | None = None,
    live: Sequence[Rule] = (),
) -> _Answer | BaseException:
    async with gate.slots:
        if gate.stopped is not None:
            return gate.stopped
        try:
            got = await reflector.answer(plan.intervention, plan.evidence, strict=True, project=project, live=live)
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
    r = got.reflexion
    if got.repeats:
        progress(f"{key}: repeats live rule(s) {', '.join(got.repeats)}")
    if r is None:
        progress(f"{key}: nothing to learn")
        return _Answer(plan, key, skipped=True, repeats=got.repeats)
    r.session_id = session_id
    r.origin = plan.origin
    r.project = project
    r.found = FoundAt(at=plan.intervention.at, file=file, line=plan.line)
    progress(f"{key}: lesson ({plan.origin.value}): {r.reflexion_text}")
    return _Answer(plan, key, reflexion=r, repeats=got.repeats)


#: The lesson recorded for an intervention the model was never asked about.
WITHHELD_LESSON = "(not asked: third-party content was in context; it is asked again if a change of trust makes it clean)"


def withheld_lesson(plan: Planned) -> str:
    """What a withheld intervention's record says in place of a lesson:
    `WITHHELD_LESSON`, with what held it back when the reader knows
    (`reader.Blame.reason` — never the command line, which is the
    assistant's text)."""
    if plan.held_by is None:
        return WITHHELD_LESSON
    return f"{WITHHELD_LESSON[:-1]}; held back by {plan.held_by.reason()})"


def was_withheld(r: Reflexion) -> bool:
    """Whether `r` records an intervention the reflector was never asked
    about (`_withheld`): its text is `withheld_lesson`'s, never a model's."""
    return r.origin is Origin.UNTRUSTED and r.reflexion_text.startswith(WITHHELD_LESSON[:-1])


def asks_the_model(plan: Planned) -> bool:
    """Whether the reflector is called for this intervention. Not for an
    untrusted one: nothing it could answer can ever be learned (the seeds'
    rule: no knob makes untrusted content learnable), so the call would buy
    nothing, and a stranger's text in context is the moment a model is
    most worth not feeding. It is recorded instead (`_withheld`), and a
    change of trust that makes its session read clean asks it then
    (`sessions.retrust`)."""
    return plan.origin is not Origin.UNTRUSTED


def _withheld(plan: Planned, key: str, work: _Work, entry: InboxEntry, progress: Progress) -> _Answer:
    """An untrusted intervention, recorded without a model call: the
    person's words as readable evidence, no lesson, never learnable."""
    i = plan.intervention
    r = Reflexion(
        id=mint_reflexion_id(),
        domain=reflection_domain(i.trigger),
        session_id=work.session_id,
        trigger=i.trigger.value,
        context="",
        intervention=i.text,
        reflexion_text=withheld_lesson(plan),
        created_at=now(),
        origin=Origin.UNTRUSTED,
        evidence=Evidence.INTERVENTION_ONLY,
        project=entry.project if isinstance(entry, SessionEntry) else None,
        found=FoundAt(at=i.at, file=work.file, line=plan.line),
        untrusted_by=plan.held_by.describe() if plan.held_by is not None else None,
    )
    progress(f"{key}: withheld from the model (untrusted)")
    return _Answer(plan, key, reflexion=r)


async def reflect_inbox(
    store: LearningStore,
    reflector: Reflector | None,
    *,
    progress: Progress = quiet,
    require_model: Callable[[], Reflector] | None = None,
    concurrency: int = 1,
    counts: Counts | None = None,
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
    still settled. `counts` hears how far the pass has got; how it ends is
    `pass_failure`'s to say.
    """
    import asyncio

    outcome = ReflectOutcome()
    with store.lock():
        claimed = claim_all(store)
    gate = _Gate(concurrency)
    get_model = _lazy_model(reflector, require_model)

    def tick() -> None:
        if counts is not None:
            counts(outcome.answered, outcome.to_ask)

    # Calls overlap across entries; records are written in the entries' own
    # order (oldest first), so the history reads as the sessions happened.
    turns = [asyncio.Event() for _ in claimed]

    def run(path: Path, my_turn: Callable[[], Awaitable[None]]) -> Awaitable[None]:
        return _reflect_entry(store, path, get_model, gate, progress, outcome, my_turn, tick)

    await asyncio.gather(*(_in_turn(turns, i, path, run, gate, outcome) for i, path in enumerate(claimed)))
    failure = pass_failure(outcome, gate.stopped)
    if failure is not None:
        progress(f"stopped: {failure}; so far: {outcome.summary()}")
        raise failure
    return outcome


async def _in_turn(
    turns: list[asyncio.Event],
    i: int,
    path: Path,
    run: Callable[[Path, Callable[[], Awaitable[None]]], Awaitable[None]],
    gate: _Gate,
    outcome: ReflectOutcome,
) -> None:
    """Entry `i` of the pass: `run` over it, writing only once the entry
    before it has written (`turns`). A failure puts the entry back and stops
    the pass from starting more calls."""

    async def my_turn() -> None:
        if i:
            await turns[i - 1].wait()

    try:
        await run(path, my_turn)
    except Exception as exc:
        release(path)
        outcome.failed += 1
        outcome.errors.append(str(exc) or type(exc).__name__)
        if gate.stopped is None:
            gate.stopped = exc
    finally:
        turns[i].set()


def _lazy_model(reflector: Reflector | None, require_model: Callable[[], Reflector] | None) -> Callable[[], Reflector]:
    """The reflector, found on first use: a pass with nothing to ask needs
    no model, and one without a model says so only when it would ask."""
    model: list[Reflector] = []

    def get() -> Reflector:
        if not model:
            model.append(_model(reflector, require_model))
        return model[0]

    return get


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

    data = read_bytes(store.reflections_path)
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
    def of(cls, entry: InboxEntry) -> _Work:
        plans = entry.surveyed()
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
    gate: _Gate,
    progress: Progress,
    outcome: ReflectOutcome,
    my_turn: Callable[[], Awaitable[None]],
    tick: Callable[[], None],
) -> None:
    """One inbox entry, claimed at `path`: ask what is still open, then —
    in the entries' order (`my_turn`) and under the lock — record the
    answers, and mark it mined, set it aside or put it back."""
    opened = await _open_entry(store, path, progress, outcome, my_turn)
    if opened is None:
        return
    entry, work = opened
    keys = [intervention_key(entry, p) for p in work.plans]
    states = store.attempt_states(keys)
    open_plans = [(p, k) for p, k in zip(work.plans, keys) if not states.get(k, _UNSETTLED).settled]
    todo = [(p, k) for p, k in open_plans if asks_the_model(p)]
    withheld = [_withheld(p, k, work, entry, progress) for p, k in open_plans if not asks_the_model(p)]
    progress(f"{work.label}: {len(work.plans)} intervention(s), {len(todo)} to ask" + (f", {len(withheld)} withheld (untrusted)" if withheld else ""))
    answers = await _ask_all(store, todo, entry, work, get_model, gate, progress, outcome, tick) if todo else []
    got = [a for a in answers if isinstance(a, _Answer)]
    interrupted = len(got) < len(answers)
    got += withheld
    await my_turn()
    if interrupted and not got:
        release(path)
        outcome.failed += 1
        outcome.errors.append(f"{work.label}: {len(todo)} intervention(s) pending (the pass was interrupted)")
        return
    with store.lock():
        left = _settle(store, path, work, entry.retry, keys, got, progress, outcome)
    if left is None:
        return
    # Work left: back to the inbox for a later pass (answers so far recorded).
    release(path)
    if interrupted:
        outcome.failed += 1
        outcome.errors.append(f"{work.label}: {left} intervention(s) pending (the pass was interrupted)")
    else:
        outcome.pending += left
        log.info("%s: %d intervention(s) pending after unusable answers", work.label, left)


async def _open_entry(
    store: LearningStore, path: Path, progress: Progress, outcome: ReflectOutcome, my_turn: Callable[[], Awaitable[None]]
) -> tuple[InboxEntry, _Work] | None:
    """The entry at `path` as work to ask about; `None` when it is settled
    here already: unreadable or with an id that can never be recorded (set
    aside), or already mined (dropped)."""
    try:
        entry = entry_decoder.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError) as exc:
        log.warning("unreadable inbox entry %s: %s", path.name, exc)
        await my_turn()
        with store.lock():
            set_aside(store, path, f"unreadable: {exc}")
        outcome.set_aside += 1
        return None
    work = _Work.of(entry)
    bad_id = _entry_id_problem(entry)
    if bad_id is not None:
        # Queued before ids were checked where they enter: it could never be
        # recorded mined, so every pass would ask the model for it again.
        await my_turn()
        with store.lock():
            set_aside(store, path, f"{work.label}: the id {bad_id}; it can never be recorded mined")
        outcome.set_aside += 1
        return None
    if work.mined(store) and not entry.retry:
        await my_turn()
        progress(f"{work.label} is already mined; skipped")
        outcome.skipped_already_mined += 1
        path.unlink(missing_ok=True)
        return None
    return entry, work


async def _ask_all(
    store: LearningStore,
    todo: list[tuple[Planned, str]],
    entry: InboxEntry,
    work: _Work,
    get_model: Callable[[], Reflector],
    gate: _Gate,
    progress: Progress,
    outcome: ReflectOutcome,
    tick: Callable[[], None],
) -> list[_Answer | BaseException]:
    """Every open intervention asked at once (the gate bounds how many run),
    each answer counted as it comes."""
    import asyncio

    ruled: list[_Answer | BaseException] = []
    asks: list[tuple[Planned, str]] = []
    for plan, key in todo:
        why = go_ahead_reason(plan.intervention)
        if why is None:
            asks.append((plan, key))
        else:
            progress(f"{key}: skipped without a model call: {why}")
            ruled.append(_Answer(plan, key, skipped=True, rule=why))
    if not asks:
        return ruled
    todo = asks
    reflector = get_model()
    outcome.to_ask += len(todo)
    # Told once every entry has said what it will ask (they all start
    # before any answer can come back), so the first count is the whole.
    asyncio.get_running_loop().call_soon(tick)
    project = entry.project if isinstance(entry, SessionEntry) else None
    live = {d: live_rules(store, d, project) for d in {reflection_domain(p.intervention.trigger) for p, _ in todo}}

    async def counted(plan: Planned, key: str) -> _Answer | BaseException:
        answer = await _ask(gate, reflector, plan, key, work.session_id, progress, project, work.file,
                            live[reflection_domain(plan.intervention.trigger)])
        if isinstance(answer, _Answer):
            outcome.answered += 1
            tick()
        return answer

    return [*ruled, *await asyncio.gather(*(counted(p, k) for p, k in todo))]


def _attempt_records(got: list[_Answer], states: dict[str, AttemptState], at: str) -> tuple[list[Attempt], list[str]]:
    """The attempts-ledger records of these answers, and the keys they set
    aside (a permanent refusal, or the last unusable answer allowed)."""
    records: list[Attempt] = []
    newly_aside: list[str] = []
    for a in got:
        if a.usable:
            reason = f"skipped without a model call: {a.rule}" if a.rule else None
            records.append(Attempt(key=a.key, state=AttemptKind.ANSWERED, at=at, reason=reason))
        elif a.permanent is not None:
            records.append(Attempt(key=a.key, state=AttemptKind.SET_ASIDE, at=at, reason=a.permanent))
            newly_aside.append(a.key)
        else:
            records.append(Attempt(key=a.key, state=AttemptKind.UNUSABLE, at=at, reason=a.unusable))
            if states.get(a.key, _UNSETTLED).unusable + 1 >= MAX_UNUSABLE_ANSWERS:
                why = f"{MAX_UNUSABLE_ANSWERS} unusable answers; the last: {a.unusable}"
                records.append(Attempt(key=a.key, state=AttemptKind.SET_ASIDE, at=at, reason=why))
                newly_aside.append(a.key)
    return records, newly_aside


def _count_answers(outcome: ReflectOutcome, got: list[_Answer], reflections: list[Reflexion], newly_aside: list[str]) -> None:
    outcome.reflections += len(reflections)
    outcome.learnable += sum(1 for r in reflections if r.learnable())
    outcome.skipped_no_lesson += sum(1 for a in got if a.skipped and a.rule is None)
    outcome.skipped_by_rule += sum(1 for a in got if a.rule is not None)
    outcome.withheld += sum(1 for r in reflections if was_withheld(r))
    outcome.unusable += sum(1 for a in got if not a.usable and a.permanent is None)
    # A rule's skip is no answer from the model: it says nothing of whether
    # the model is usable (`pass_failure`).
    outcome.usable += sum(1 for a in got if a.usable and a.rule is None)
    for a in got:
        if a.unusable and a.permanent is None and a.unusable not in outcome.unusable_why:
            outcome.unusable_why.append(a.unusable)
    outcome.set_aside += len(newly_aside)


def _settle(
    store: LearningStore,
    path: Path,
    work: _Work,
    retry: bool,
    keys: list[str],
    got: list[_Answer],
    progress: Progress,
    outcome: ReflectOutcome,
) -> int | None:
    """Record the answers and commit; the entry marked mined and dropped, or
    set aside, when every intervention is settled. How many are still open
    (the caller puts the entry back), or `None` when it is settled. Caller
    holds the lock."""
    from mecha.core.identity import now as stamp

    if work.mined(store) and not retry:
        progress(f"{work.label} was mined by another pass meanwhile; skipped")
        outcome.skipped_already_mined += 1
        path.unlink(missing_ok=True)
        return None
    states = store.attempt_states(keys)
    records, newly_aside = _attempt_records(got, states, stamp())
    reflections = _not_on_file(store, [a.reflexion for a in got if a.reflexion is not None], work.session_id, edits=work.edits)
    store.append_reflexions(reflections)
    repeats = new_repeats(store.repeats(), _repeats_of(work, got, stamp()))
    store.append_repeats(repeats)
    outcome.repeats += len(repeats)
    store.record_attempts(records)
    for rec in records:
        states.setdefault(rec.key, AttemptState()).apply(rec)
    _count_answers(outcome, got, reflections, newly_aside)
    complete = all(states.get(k, _UNSETTLED).settled for k in keys)
    if complete and not work.mined(store):
        work.mark_mined(store)
    aside = [k for k in keys if states.get(k, _UNSETTLED).set_aside is not None]
    store.commit(_commit_message(work, retry, reflections, states, keys, complete, aside))
    if not complete:
        return len([k for k in keys if not states.get(k, _UNSETTLED).settled])
    work.count(outcome)
    if aside:
        reasons = "; ".join(f"{k}: {states[k].set_aside}" for k in aside)
        set_aside(store, path, f"{len(aside)} intervention(s) set aside — {reasons}", keys=aside)
    else:
        path.unlink(missing_ok=True)
    return None


def _repeats_of(work: _Work, got: list[_Answer], at: str) -> list[Repeat]:
    """The repeats these answers name, one per rule and correction."""
    project = work.entry.project if isinstance(work.entry, SessionEntry) else None
    out = []
    for a in got:
        i = a.plan.intervention
        for rule_id in a.repeats:
            out.append(Repeat(
                # The session's own id, without what a grown or re-trusted
                # entry adds after `@` (as `retrust.base_session` reads it).
                rule_id=rule_id, domain=reflection_domain(i.trigger), session_id=work.session_id.split("@", 1)[0],
                text=bound_text(i.text, SOURCE_TEXT_BUDGET), trigger=i.trigger.value, project=project,
                reflexion_id=a.reflexion.id if a.reflexion is not None else None,
                at=i.at, file=work.file, line=a.plan.line, created_at=at, said_at=a.plan.said_at,
            ))
    return out


def _commit_message(
    work: _Work,
    retry: bool,
    reflections: list[Reflexion],
    states: dict[str, AttemptState],
    keys: list[str],
    complete: bool,
    aside: list[str],
) -> str:
    learnable = sum(1 for r in reflections if r.learnable())
    summary = ", ".join(f"{p.intervention.trigger.value}@{p.intervention.at}={p.origin.value}" for p in work.plans)
    if complete:
        verb = "retried" if retry else "reflect"
        message = (
            f"{verb} {work.label}: {len(reflections)} reflection(s), {learnable} learnable\n\n"
            f"{len(work.plans)} intervention(s) found; {summary or 'none'}"
        )
        if aside:
            message += f"\n{len(aside)} set aside: " + "; ".join(f"{k}: {states[k].set_aside}" for k in aside)
        return message
    pending = [k for k in keys if not states.get(k, _UNSETTLED).settled]
    return (
        f"reflect {work.label}: {len(reflections)} reflection(s) so far, {len(pending)} intervention(s) pending\n\n"
        f"{len(work.plans)} intervention(s) found; {summary}"
    )


_UNSETTLED = AttemptState()
