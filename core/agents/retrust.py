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
The entry's id is a digest of what it asks about, so asking twice (two
trust changes, or two runs) queues it once; the mined sessions and the
inbox are checked under the store's lock, as an import does.

What is not reached: an untrusted intervention still waiting in the inbox
when the trust changes is withheld by the pass that takes it, and is asked
about at the next change of trust (or `mecha-sidecar trust add` again).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import Path

import msgspec

from mecha.core.errors import InvalidInput
from mecha.core.learning.reflection import Origin
from mecha.core.learning.scope import project_of_cwd
from mecha.core.learning.survey import Planned, survey_session
from mecha.core.sessions.foreign import read_session
from mecha.core.sessions.mining import DEFAULT_VOICES, Voices
from mecha.core.sessions.reader import TaintPolicy
from mecha.core.sessions.trust import Reclassified, Withheld
from mecha.core.store.inbox import SessionEntry, enqueue, queued_session_ids
from mecha.core.store.learning_store import LearningStore

#: How many withheld interventions `withheld` lists, newest first.
MAX_WITHHELD_LISTED = 50


def withheld(store: LearningStore) -> tuple[int, list[Withheld]]:
    """The interventions recorded without a model call (untrusted) that no
    change of trust has made clean yet: how many, and the newest
    `MAX_WITHHELD_LISTED` of them with what held each back."""
    from mecha.core.learning.reflect import WITHHELD_LESSON

    reflections = store.reflexions()
    clean = {_key(r.found.file, r.trigger, r.intervention) for r in reflections if r.origin is Origin.CLEAN and r.found and r.found.file}
    asked = _asked_again(store)
    rows: list[Withheld] = []
    for r in reflections:
        if r.origin is not Origin.UNTRUSTED or not r.reflexion_text.startswith(WITHHELD_LESSON[:-1]):
            continue
        file = r.found.file if r.found is not None else None
        if file and _key(file, r.trigger, r.intervention) in clean:
            continue
        if r.found is not None and (r.session_id.split("@", 1)[0], r.found.at, r.trigger) in asked:
            continue  # asked again and answered: nothing to learn there
        _, _, why = r.reflexion_text.partition("held back by ")
        words = r.intervention if len(r.intervention) <= 80 else r.intervention[:79] + "…"
        rows.append(Withheld(session_id=r.session_id, words=words, why=why.rstrip(")") or "third-party content was in context",
                             file=file, line=r.found.line if r.found is not None else None))
    return len(rows), rows[-MAX_WITHHELD_LISTED:][::-1]


def _asked_again(store: LearningStore) -> set[tuple[str, int, str]]:
    """`(session, message index, trigger)` of every intervention a
    re-asking entry (`@retrust-`) had answered — with a lesson or with
    nothing to learn. Read from the attempts ledger, whose keys are
    `reflect.intervention_key`'s `<session>#<at>:<trigger>`."""
    mined = {s for s in store.mined_sessions() if "@retrust-" in s}
    if not mined:
        return set()
    states = store.attempt_states()
    out: set[tuple[str, int, str]] = set()
    for key, state in states.items():
        session, _, rest = key.rpartition("#")
        if session not in mined or not state.answered:
            continue
        at, _, trigger = rest.partition(":")
        if at.isdigit():
            out.add((session.split("@", 1)[0], int(at), trigger))
    return out


def _key(file: str, trigger: str, words: str) -> tuple[str, str, str]:
    return file, trigger, words


def reclassify(store: LearningStore, *, voices: Voices = DEFAULT_VOICES, policy: TaintPolicy | None = None) -> Reclassified:
    """Read again every session file that held back an intervention, under
    `policy` (default: each reader's own lists with the person's standing
    trust), and queue those that now read clean (see the module)."""
    held: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    clean: set[tuple[str, str, str]] = set()
    for r in store.reflexions():
        if r.found is None or not r.found.file:
            continue
        key = _key(r.found.file, r.trigger, r.intervention)
        if r.origin is Origin.CLEAN:
            clean.add(key)
        elif r.origin is Origin.UNTRUSTED:
            held[r.found.file].add(key)
    out = Reclassified()
    entries: list[SessionEntry] = []
    for file, keys in sorted(held.items()):
        waiting = keys - clean
        if not waiting:
            continue
        out.sessions += 1
        try:
            read = read_session(Path(file), policy=policy)
        except InvalidInput as exc:
            out.unreadable.append(str(exc))
            continue
        now_clean: list[Planned] = []
        for plan in survey_session(read.messages, read.taint_timeline, interactive=read.interactive, voices=voices):
            key = _key(file, plan.intervention.trigger.value, plan.intervention.text)
            if key not in waiting:
                continue
            waiting.discard(key)  # one reading per held reflection
            if plan.origin is Origin.CLEAN:
                at = plan.intervention.at
                plan.line = read.lines[at] if 0 <= at < len(read.lines) else None
                now_clean.append(plan)
            else:
                out.still_untrusted += 1
        out.still_untrusted += len(waiting)  # no longer found in the file
        if now_clean:
            digest = hashlib.blake2b(digest_size=6)
            digest.update(msgspec.json.encode([[p.intervention.trigger.value, p.intervention.text, p.intervention.at] for p in now_clean]))
            session_id = f"{read.session_id}@retrust-{digest.hexdigest()}"
            entries.append(SessionEntry(session_id, plans=now_clean, project=project_of_cwd(read.project), file=file))
    if not entries:
        return out
    with store.lock():
        done = store.mined_sessions() | queued_session_ids(store)
        for entry in entries:
            if entry.session_id in done:
                continue
            enqueue(store, entry)
            out.queued.append(entry.session_id)
            out.asked_again += len(entry.plans)
    return out
