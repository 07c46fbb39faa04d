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
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from . import jobs as jobs_mod
from ._files import write_atomic
from .consolidation import Learner
from .errors import InvalidInput, ModelFailure, UnusableReply
from .identity import mint_proposal_id, mint_run_id, now
from .ledger import LeapRun
from .mining import DEFAULT_VOICES, Intervention, Voices, edit_intervention, extract_interventions
from .outbox import OutboxItem
from .reflection import Evidence, Origin, Reflector, Reflexion, evidence_for
from .rules import LEARN_MIN_REFLECTIONS, MAX_ACTIVE_RULES_PER_DOMAIN, active_count, budget_refuses, finalize_rules, validate_domain
from .store import LearningStore, Proposal
from .transcript import Message, TaintCheckpoint, covering_taint

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


def survey_session(
    messages: Sequence[Message],
    taint_timeline: Sequence[TaintCheckpoint] | None,
    *,
    interactive: bool = True,
    voices: Voices = DEFAULT_VOICES,
) -> list[Planned]:
    """Every intervention in a transcript, classified by the taint covering
    the message it rides in (no coverage → untrusted; a non-interactive
    session → derived)."""
    timeline = list(taint_timeline) if taint_timeline else None
    planned = []
    for i in extract_interventions(messages, voices):
        evidence, origin = evidence_for(covering_taint(timeline, i.at), interactive=interactive)
        if evidence is Evidence.FULL and i.aftermath and not _clean_until_aftermath(messages, timeline, i.at):
            i.aftermath = WITHHELD_AFTERMATH
        planned.append(Planned(i, evidence, origin))
    return planned


#: Shown in place of an aftermath written after third-party content arrived.
WITHHELD_AFTERMATH = "(withheld: third-party content entered the conversation before the assistant's next reply)"


def _clean_until_aftermath(messages: Sequence[Message], timeline: list[TaintCheckpoint] | None, at: int) -> bool:
    """Whether every message from a clean intervention up to the assistant
    reply its aftermath is read from is still covered by clean taint. The
    aftermath is the first assistant *text* after the intervention, which may
    come after tool calls whose results brought a stranger's text in — and a
    reply written after that may quote it."""
    for j in range(at + 1, len(messages)):
        taint = covering_taint(timeline, j)
        if taint is None or taint.untrusted:
            return False
        if messages[j].role == "assistant" and messages[j].text().strip():
            return True
    return True


def survey_draft(item: OutboxItem) -> Planned | None:
    """A sent-and-edited draft as an `edit` intervention, classified by the
    taint recorded on the item when it was staged."""
    i = edit_intervention(item)
    if i is None:
        return None
    evidence, origin = evidence_for(item.taint)
    return Planned(i, evidence, origin)


# ─── the inbox ──────────────────────────────────────────────────────────────


class SessionEntry(msgspec.Struct, tag="session", tag_field="kind"):
    session_id: str
    messages: list[Message]
    taint_timeline: list[TaintCheckpoint] | None = None
    interactive: bool = True


class DraftEntry(msgspec.Struct, tag="draft", tag_field="kind"):
    item: OutboxItem


InboxEntry = SessionEntry | DraftEntry

_entry_decoder = msgspec.json.Decoder(InboxEntry)
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_CLAIM = ".claim-"


def inbox_dir(store: LearningStore) -> Path:
    return store.root / "inbox"


def enqueue(store: LearningStore, entry: InboxEntry) -> Path:
    """Write one unit of reflect work where any later pass will find it."""
    from ._files import ensure_private_dir

    directory = inbox_dir(store)
    ensure_private_dir(directory, root=store.root)
    # Inbox entries are whole transcripts, third-party text included, and
    # transient: a pass's commit (`git add -A`) must never carry them into
    # the store's permanent history.
    ignore = directory / ".gitignore"
    if not ignore.exists():
        write_atomic(ignore, b"*\n")
    key = entry.session_id if isinstance(entry, SessionEntry) else f"draft-{entry.item.id}"
    name = f"{now().replace(':', '').replace('-', '')}-{_SAFE.sub('_', key)[:80]}.json"
    path = directory / name
    write_atomic(path, msgspec.json.encode(entry))
    return path


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
    from ._files import refuse_links

    # Claiming renames the inbox's entries and a finished entry is deleted:
    # through a linked inbox, that would be done to files outside the store.
    directory = refuse_links(store.root, inbox_dir(store))
    if not directory.is_dir():
        return []
    claimed = []
    me = os.getpid()
    for path in sorted(directory.iterdir()):
        if path.name.endswith(".tmp"):
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


# ─── reflect ────────────────────────────────────────────────────────────────


class ReflectOutcome(msgspec.Struct):
    sessions: int = 0
    drafts: int = 0
    skipped_already_mined: int = 0
    reflections: int = 0
    learnable: int = 0
    failed: int = 0
    errors: list[str] = msgspec.field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{self.reflections} reflection(s) written ({self.learnable} learnable)"]
        parts.append(f"from {self.sessions} session(s) and {self.drafts} draft(s)")
        if self.skipped_already_mined:
            parts.append(f"{self.skipped_already_mined} already mined, skipped")
        if self.failed:
            parts.append(f"{self.failed} left in the inbox for a later pass: {'; '.join(self.errors)}")
        return ", ".join(parts)


async def _reflect_planned(reflector: Reflector, plans: Sequence[Planned], session_id: str) -> list[Reflexion]:
    out = []
    for plan in plans:
        r = await reflector.reflect(plan.intervention, plan.evidence, strict=True)
        if r is None:
            continue
        r.session_id = session_id
        r.origin = plan.origin
        out.append(r)
    return out


async def reflect_inbox(
    store: LearningStore,
    reflector: Reflector | None,
    *,
    voices: Voices = DEFAULT_VOICES,
    progress: Progress = _quiet,
    require_model: Callable[[], Reflector] | None = None,
) -> ReflectOutcome:
    """Reflect every unit of work waiting in the inbox.

    `reflector` may be `None` when no model is configured; then an entry that
    needs a model call raises (via `require_model`) and stays in the inbox,
    while entries that need none (already mined, nothing to reflect on) are
    still settled.
    """
    outcome = ReflectOutcome()
    unusable = False
    with store.lock():
        claimed = _claim_all(store)
    for path in claimed:
        try:
            entry = _entry_decoder.decode(path.read_bytes())
        except (OSError, msgspec.DecodeError) as exc:
            log.warning("unreadable inbox entry %s: %s", path.name, exc)
            bad = path.with_name(path.name.rsplit(_CLAIM, 1)[0] + ".unreadable")
            os.replace(path, bad)
            continue
        try:
            if isinstance(entry, SessionEntry):
                await _reflect_session(store, entry, path, reflector, voices, progress, outcome, require_model)
            else:
                await _reflect_draft(store, entry, path, reflector, progress, outcome, require_model)
        except Exception as exc:
            _release(path)
            outcome.failed += 1
            outcome.errors.append(str(exc) or type(exc).__name__)
            # A missing model fails every entry alike; stop at the first.
            # A reply with no answer in it concerns this entry only: the rest
            # go ahead, and the pass still ends failed, naming it.
            from .errors import NoModel

            unusable = unusable or isinstance(exc, UnusableReply)
            if isinstance(exc, (NoModel, ModelFailure)) and not isinstance(exc, UnusableReply):
                for rest in claimed[claimed.index(path) + 1 :]:
                    _release(rest)
                raise
    if unusable:
        raise UnusableReply(outcome.summary())
    return outcome


def _model(reflector: Reflector | None, require_model: Callable[[], Reflector] | None) -> Reflector:
    if reflector is not None:
        return reflector
    if require_model is None:
        from .errors import NoModel

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

    from ._files import read_bytes

    data = read_bytes(store.root / "reflections.jsonl")
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


async def _reflect_session(store, entry: SessionEntry, path, reflector, voices, progress, outcome, require_model) -> None:
    if entry.session_id in store.mined_sessions():
        progress(f"session {entry.session_id} is already mined; skipped")
        outcome.skipped_already_mined += 1
        path.unlink(missing_ok=True)
        return
    plans = survey_session(entry.messages, entry.taint_timeline, interactive=entry.interactive, voices=voices)
    progress(f"session {entry.session_id}: {len(plans)} intervention(s)")
    reflections = await _reflect_planned(_model(reflector, require_model), plans, entry.session_id) if plans else []
    with store.lock():
        if entry.session_id in store.mined_sessions():
            progress(f"session {entry.session_id} was mined by another pass meanwhile; skipped")
            outcome.skipped_already_mined += 1
        else:
            reflections = _not_on_file(store, reflections, entry.session_id, edits=False)
            store.append_reflexions(reflections)
            store.mark_mined(entry.session_id)
            learnable = sum(1 for r in reflections if r.learnable())
            outcome.reflections += len(reflections)
            outcome.learnable += learnable
            store.commit(
                f"reflect session {entry.session_id}: {len(reflections)} reflection(s), {learnable} learnable\n\n"
                f"{len(plans)} intervention(s) found; "
                + ", ".join(f"{p.intervention.trigger.value}@{p.intervention.at}={p.origin.value}" for p in plans)
            )
        outcome.sessions += 1
        path.unlink(missing_ok=True)


async def _reflect_draft(store, entry: DraftEntry, path, reflector, progress, outcome, require_model) -> None:
    item = entry.item
    if item.id in store.mined_outbox():
        progress(f"draft {item.id} is already mined; skipped")
        outcome.skipped_already_mined += 1
        path.unlink(missing_ok=True)
        return
    plan = survey_draft(item)
    reflections = await _reflect_planned(_model(reflector, require_model), [plan], item.session_id or "") if plan else []
    with store.lock():
        if item.id in store.mined_outbox():
            outcome.skipped_already_mined += 1
        else:
            reflections = _not_on_file(store, reflections, item.session_id or "", edits=True)
            store.append_reflexions(reflections)
            store.mark_outbox_mined(item.id)
            learnable = sum(1 for r in reflections if r.learnable())
            outcome.reflections += len(reflections)
            outcome.learnable += learnable
            store.commit(
                f"reflect draft {item.id}: {len(reflections)} writing reflection(s), {learnable} learnable\n\n"
                "The person edited a staged message before sending it."
            )
        outcome.drafts += 1
        path.unlink(missing_ok=True)


# ─── learn ──────────────────────────────────────────────────────────────────


class LearnOutcome(msgspec.Struct, omit_defaults=True):
    outcome: str
    proposal_id: str | None = None
    status: str | None = None


def learnable_pool(store: LearningStore, domain: str) -> list[Reflexion]:
    """A domain's learnable, unprocessed reflections, oldest first."""
    return store.learnable_unprocessed(domain)


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
    pending = [p.id for p in store.proposals() if p.domain == domain and p.status == "pending"]
    if pending:
        return f"proposal {pending[0]} for {domain} is still pending; accept or reject it first"
    have = len(learnable_pool(store, domain))
    if have < floor:
        return f"{domain} has {have} learnable unprocessed reflection(s); a learn pass needs at least {floor}"
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
        batch = learnable_pool(store, domain)
        user = store.user_rules(domain)
        before = store.learned_rules(domain)
    progress(f"consolidating {len(batch)} reflection(s) into {len(before)} learned {domain} rule(s)")
    new = await learner.learn(domain, user, before, batch, strict=True)
    if new is None:
        raise ModelFailure("the learner's reply held no usable rule set; the reflections stay in the pool")
    stamp = now()
    batch_ids = [r.id for r in batch]
    rules = finalize_rules(new, before, batch_ids, stamp)
    active_before, active_after = active_count(before), active_count(rules)
    with store.lock():
        if any(p.domain == domain and p.status == "pending" for p in store.proposals()):
            return LearnOutcome(outcome="another pass proposed for this domain meanwhile; this result was dropped")
        if store.learned_rules(domain) != before:
            return LearnOutcome(outcome="the live rules changed during the pass; this result was dropped, run learn again")
        refused = budget_refuses(active_before, active_after)
        status = "rejected_by_gate" if refused else "pending"
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
        outcome=f"proposal {proposal.id} {verb}: {active_before} -> {active_after} active {domain} rules",
        proposal_id=proposal.id,
        status=status,
    )
