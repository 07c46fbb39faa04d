"""Asking again when trust changes: interventions held back as untrusted
that now read clean.

An imported intervention that read untrusted was recorded without a model
call (`reflect.asks_the_model`): the person's words, no lesson, never
learnable. When the person then trusts the tool that held it back (`trust
add`), nothing already recorded is edited. Instead each session file such a
reflection came from is **read again**, under the trust as it is now, and
surveyed from scratch; an intervention that now classifies clean — with the
evidence the new reading allows, the assistant's words withheld where they
still must be — and has no clean reflection yet is queued as a new inbox
entry, `<session>@retrust-<digest>`, for the reflect pass to ask about.

Nothing untrusted is consolidated on the way: the old reflection stays
untrusted, the new one is only as clean as the file now reads, and a
session that still reads untrusted at that intervention queues nothing.
An intervention is known by itself — its session, the index of its
message, its trigger — never by the entry that carried it: one that has a
clean reflection, one a re-asking entry had answered (a lesson, or nothing
to learn), and one a re-asking entry still carries in the inbox are never
queued again, however many changes of trust follow, and each is counted
once (`Reclassified`). The mined sessions and the inbox are checked under
the store's lock, as an import does.

What is not reached: an untrusted intervention still waiting in the inbox
when the trust changes is withheld by the pass that takes it, and is asked
about at the next change of trust (or `mecha-sidecar trust add` again).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import Path

import msgspec

from mecha.core.domain.reflexion import Origin, Reflexion
from mecha.core.errors import InvalidInput
from mecha.core.learning.scope import project_of_session
from mecha.core.sessions.foreign import read_session
from mecha.core.sessions.mining import DEFAULT_VOICES, Voices
from mecha.core.sessions.reader import TaintPolicy
from mecha.core.sessions.survey import Planned, survey_session
from mecha.core.sessions.trust import Reclassified, Trust
from mecha.core.store.inbox import SessionEntry, enqueue, queued_session_ids, queued_sessions
from mecha.core.store.learning_store import LearningStore

#: One intervention, whichever entry carried it: the session (without the
#: `@…` suffix of a grown session or a re-asking entry), the index of the
#: message it rides in, and its trigger.
Ident = tuple[str, int, str]

#: The marker of an entry a change of trust queued.
RETRUST = "@retrust-"
#: The marker of an entry a person's vouch queued (`held.vouch`).
VOUCH = "@vouch-"


def base_session(session_id: str) -> str:
    """`claude:abc` for `claude:abc`, `claude:abc@12` and `claude:abc@retrust-…`."""
    return session_id.split("@", 1)[0]


def _read_again(file: str, waiting: set[Ident], out: Reclassified, *, trust: Trust, policy: TaintPolicy | None,
                voices: Voices) -> SessionEntry | None:
    """One session file read again for its `waiting` held-back
    interventions: the inbox entry of those that now read clean (`None`
    when none does), the rest counted in `out`."""
    try:
        read = read_session(Path(file), trust=trust, policy=policy)
    except InvalidInput as exc:
        out.unreadable.append(str(exc))
        out.still_untrusted += len(waiting)
        return None
    now_clean: list[Planned] = []
    for plan in survey_session(read.messages, read.taint_timeline, interactive=read.interactive, voices=voices):
        ident = (base_session(read.session_id), plan.intervention.at, plan.intervention.trigger.value)
        if ident not in waiting:
            continue
        waiting.discard(ident)  # one reading per held intervention
        if plan.origin is Origin.CLEAN:
            at = plan.intervention.at
            plan.line = read.lines[at] if 0 <= at < len(read.lines) else None
            plan.said_at = read.time_at(at)
            now_clean.append(plan)
        else:
            out.still_untrusted += 1
    out.still_untrusted += len(waiting)  # no longer found in the file
    if not now_clean:
        return None
    digest = hashlib.blake2b(digest_size=6)
    digest.update(msgspec.json.encode([[p.intervention.trigger.value, p.intervention.text, p.intervention.at] for p in now_clean]))
    session_id = f"{read.session_id}{RETRUST}{digest.hexdigest()}"
    return SessionEntry(session_id, plans=now_clean, project=project_of_session(read.project, read.branch), file=file)


def _ident(session_id: str, at: int | None, trigger: str) -> Ident | None:
    return None if at is None else (base_session(session_id), at, trigger)


def ident_of(r: Reflexion) -> Ident | None:
    """The intervention `r` records (`Ident`), when its place was recorded."""
    return _ident(r.session_id, r.found.at if r.found is not None else None, r.trigger)


#: The markers of the entries that ask a held-back intervention again: a
#: change of trust's, and a person's vouch (`held.VOUCH`).
ASKING_AGAIN = (RETRUST, VOUCH)


def settled(store: LearningStore, reflections: list[Reflexion] | None = None) -> set[Ident]:
    """Every held-back intervention already asked again (`_settled`)."""
    return _settled(store, reflections)


def _settled(store: LearningStore, reflections: list[Reflexion] | None = None) -> set[Ident]:
    """Every intervention a change of trust need not ask about again: one
    with a clean reflection; one a re-asking entry had answered — with a
    lesson or with nothing to learn (the attempts ledger, whose keys are
    `reflect.intervention_key`'s `<session>#<at>:<trigger>`); and one a
    re-asking entry still carries, waiting in the inbox or set aside there."""
    done: set[Ident] = set()
    for r in store.reflexions() if reflections is None else reflections:
        if r.origin is Origin.CLEAN and r.found is not None:
            ident = _ident(r.session_id, r.found.at, r.trigger)
            if ident is not None:
                done.add(ident)
    for key, state in store.attempt_states().items():
        session, _, rest = key.rpartition("#")
        if not any(marker in session for marker in ASKING_AGAIN) or not state.answered:
            continue
        at, _, trigger = rest.partition(":")
        if at.isdigit():
            done.add((base_session(session), int(at), trigger))
    for marker in ASKING_AGAIN:
        for entry in queued_sessions(store, marker):
            for plan in entry.plans:
                done.add((base_session(entry.session_id), plan.intervention.at, plan.intervention.trigger.value))
    return done


def reclassify(
    store: LearningStore, trust: Trust, *, voices: Voices = DEFAULT_VOICES, policy: TaintPolicy | None = None
) -> Reclassified:
    """Read again every session file that held back an intervention, under
    `policy` (default: each reader's own lists with `trust`, the person's
    standing decisions as the caller loaded them), and queue those that now read clean and were never asked again
    (see the module). Each held-back intervention is counted once, in one
    of: asked again now, asked before (answered or still waiting), still
    untrusted."""
    reflections = store.reflexions()
    done = _settled(store, reflections)
    held: dict[str, set[Ident]] = defaultdict(set)
    for r in reflections:
        if r.origin is not Origin.UNTRUSTED or r.found is None or not r.found.file:
            continue
        ident = _ident(r.session_id, r.found.at, r.trigger)
        if ident is not None:
            held[r.found.file].add(ident)
    out = Reclassified()
    entries: list[SessionEntry] = []
    for file, idents in sorted(held.items()):
        out.already_asked += len(idents & done)
        if idents - done:
            out.sessions += 1
            entry = _read_again(file, idents - done, out, trust=trust, policy=policy, voices=voices)
            entries += [entry] if entry is not None else []
    if not entries:
        return out
    with store.lock():
        taken = store.mined_sessions() | queued_session_ids(store)
        for entry in entries:
            if entry.session_id in taken:
                out.already_asked += len(entry.plans)
                continue
            enqueue(store, entry)
            out.queued.append(entry.session_id)
            out.asked_again += len(entry.plans)
    return out
