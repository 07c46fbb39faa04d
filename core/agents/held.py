"""Corrections held back, as they stand now, and the person's say over them.

An imported correction that read untrusted was recorded without a model
call (`reflect.was_withheld`). Two different things put it there, and they
deserve different answers:

- **a stranger's text** — a web page, search results, a network client's
  output, a fetching subcommand's, a subagent that read any of them
  (`reader.Blame.stranger`). The seeds' rule stands: nothing learned from
  such a moment, whoever asks.
- **the reader's doubt** — a program its table does not know, shell it
  cannot see through, a script it cannot read. That is not a stranger's
  text; it is the classifier not knowing the person's machine, and the
  person does. So the person may **vouch** for such a correction: it is
  queued for reflection once, with what the reflector may see up to their
  words, and becomes learnable.

What held each correction back is read **now**, not as recorded: the
session file is read again under the trust the person keeps today
(`held_now`), so after a `trust add` every reason shown is the current one
— a later `git push`, a subagent's search — and never "recorded before X was
trusted". A correction that now reads clean is not held (a `trust add`
asked it again). Each correction is one row, however many reflections and
entries carried it (`retrust.Ident`), so the inbox, `lessons` and this list
count it once and agree.

A vouch decides one correction. It writes no trust entry, so the same
program still holds back every other session's corrections. It is refused,
saying by name what stranger's text was in context, when any call before
the correction put one there (every blame at or before it: the reader keeps
the first call of each tool, program and kind, so the first stranger of each
is there) — and when the file cannot be read again, or the reader stopped
keeping blames, since then nothing can show there was none. The decision —
which correction, the calls vouched for, who and when — is appended to
`vouched.jsonl` and committed to the store's history.

What the reflector sees: the session as the person vouches for it — clean
up to their words, untrusted from the next call the reader doubted or
distrusted after them — so the context is shown and an aftermath written
after a later stranger's text is still withheld (`survey.survey_session`).
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec

from mecha.core.agents.retrust import VOUCH, ident_of, settled
from mecha.core.domain.reflexion import Origin, Reflexion
from mecha.core.environment.agents import of_session_id
from mecha.core.errors import Ambiguous, InvalidInput, NotFound
from mecha.core.identity import now
from mecha.core.learning.scope import project_of_session
from mecha.core.sessions.mining import DEFAULT_VOICES, Voices
from mecha.core.sessions.reader import MAX_BLAMES, Blame, ReadSession, TaintPolicy, first_blame
from mecha.core.sessions.survey import Planned, survey_session
from mecha.core.sessions.transcript import Message, Taint, TaintCheckpoint
from mecha.core.sessions.trust import Trust, Withheld
from mecha.core.store.inbox import SessionEntry, enqueue, queued_session_ids
from mecha.core.store.jobs import Job
from mecha.core.store.learning_store import LearningStore
from mecha.core.store.records import VouchRecord

#: How many held corrections the inbox lists (`withheld`), newest first.
MAX_WITHHELD_LISTED = 50

#: The taint policy to read a session of a source (`claude`, `codex`) with.
PolicyFor = Callable[[str], TaintPolicy]


class HeldCorrection(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One correction held back now: its id (the reflection that recorded
    it), where it is, the person's words, the call that held it back —
    whole — and why, and whether the person may vouch for it: `stranger`
    names each stranger's text that was in context before it (none: the
    reader's doubt alone held it back)."""

    id: str
    session_id: str
    words: str
    trigger: str
    why: str
    file: str | None = None
    line: int | None = None
    #: The tool and the call that held it back, as the file has it.
    tool: str | None = None
    call: str | None = None
    #: What stranger's text was in context, each by name; empty when the
    #: person may vouch for it.
    stranger: list[str] = msgspec.field(default_factory=list)
    #: Why it cannot be vouched for although no stranger's text is named
    #: (its file cannot be read again, say).
    unchecked: str | None = None
    #: Its session reads clean at it under the trust kept now, and it was
    #: not asked again yet (the trust changed by hand, not by `trust add`).
    clean_now: bool = False
    #: The person may vouch for it: no stranger's text named, nothing
    #: unchecked, and it does not read clean already.
    vouchable: bool = False


#: What a correction that reads clean now, but was not asked again, says.
CLEAN_NOW = ("reads clean under the trust kept now, and was not asked again yet (the trust changed outside "
             "`mecha-sidecar trust add`): adding any entry you keep with `mecha-sidecar trust add` asks it")


class Vouched(msgspec.Struct, kw_only=True):
    """What one `vouch` did (`mecha/vouch`'s result): the corrections queued
    for reflection (each once, by id), those an earlier vouch queued, those
    refused — each `"<id>: not vouched — <why>"`, naming the stranger's
    text — and the inbox entries queued, and the reflect pass started over
    them (`null`: none)."""

    queued: list[str] = msgspec.field(default_factory=list)
    already: list[str] = msgspec.field(default_factory=list)
    refused: list[str] = msgspec.field(default_factory=list)
    entries: list[str] = msgspec.field(default_factory=list)
    job: Job | None = None


class HeldResult(msgspec.Struct, kw_only=True):
    """`mecha/heldCorrections`'s result: how many corrections are held back
    (each once), how many of them the person may vouch for, and each with
    what holds it back now, newest first."""

    count: int
    vouchable: int
    held: list[HeldCorrection]


# ─── what is held now ───────────────────────────────────────────────────────


def withheld_reflections(store: LearningStore) -> list[Reflexion]:
    """The reflections that recorded a correction without asking, one per
    correction, that nothing has answered since — not made clean by a change
    of trust, not vouched for (`retrust.settled`). Oldest first."""
    from mecha.core.learning.reflect import was_withheld

    reflections = store.reflexions()
    done = settled(store, reflections)
    out: list[Reflexion] = []
    seen: set[object] = set()
    for r in reflections:
        if not was_withheld(r):
            continue
        ident = ident_of(r)
        if ident is not None and (ident in done or ident in seen):
            continue
        if ident is not None:
            seen.add(ident)
        out.append(r)
    return out


def held_now(
    store: LearningStore,
    policy_for: PolicyFor | None = None,
    *,
    voices: Voices = DEFAULT_VOICES,
    limit: int | None = None,
) -> tuple[int, list[HeldCorrection]]:
    """How many corrections are held back (each once), and the newest
    `limit` of them (all by default), newest first, each with what holds it
    back under today's trust — its session read again (`policy_for(source)`:
    the reader's lists and the person's standing trust by default). One that
    reads clean now but was not asked again says so (`clean_now`)."""
    rows = withheld_reflections(store)
    picked = rows if limit is None else rows[-limit:]
    by_file: dict[str | None, list[Reflexion]] = defaultdict(list)
    for r in picked:
        by_file[r.found.file if r.found is not None else None].append(r)
    out: dict[str, HeldCorrection] = {}
    for file, reflections in by_file.items():
        read = _read_again(file, reflections[0].session_id, policy_for)
        for r in reflections:
            out[r.id] = _hold(r, read, voices)
    return len(rows), [out[r.id] for r in picked][::-1]


def withheld(store: LearningStore, trust: Trust | None = None, *, voices: Voices = DEFAULT_VOICES) -> tuple[int, list[Withheld]]:
    """The interventions recorded without a model call (untrusted) that are
    still held back: how many, and the newest `MAX_WITHHELD_LISTED` of them
    with what holds each back *now* — its session read again under `trust`
    (the person's decisions; the config file's when `None`), so a reason
    recorded before a `trust add` is never shown as if it still held
    (`held.held_now`). One that reads clean now and was not asked again
    says so in `now`."""
    policy_for = None if trust is None else trust.policy
    count, rows = held_now(store, policy_for, voices=voices, limit=MAX_WITHHELD_LISTED)
    listed = [
        Withheld(session_id=h.session_id, words=h.words if len(h.words) <= 80 else h.words[:79] + "…",
                 why=h.why, file=h.file, line=h.line, now=CLEAN_NOW if h.clean_now else None)
        for h in rows
    ]
    return count, listed


def _policy(source: str, policy_for: PolicyFor | None) -> TaintPolicy:
    if policy_for is not None:
        return policy_for(source)
    from mecha.core.environment.trust import policy_with

    return policy_with(source)


def _source_of(session_id: str) -> str:
    return of_session_id(session_id).name


def _read_again(file: str | None, session_id: str, policy_for: PolicyFor | None) -> ReadSession | str:
    """The session file read again now, or why it cannot be."""
    if not file:
        return "its session was handed over by a harness, with no file to read again"
    from mecha.core.sessions.foreign import read_session

    try:
        return read_session(Path(file), policy=_policy(_source_of(session_id), policy_for))
    except InvalidInput as exc:
        return f"its session file cannot be read again ({exc})"


def _hold(r: Reflexion, read: ReadSession | str, voices: Voices) -> HeldCorrection:
    """`r`'s correction as it is held now."""
    held = _held(r, read, voices)
    held.vouchable = not held.stranger and held.unchecked is None and not held.clean_now
    return held


def _held(r: Reflexion, read: ReadSession | str, voices: Voices) -> HeldCorrection:
    at = r.found.at if r.found is not None else None
    base = HeldCorrection(id=r.id, session_id=r.session_id, words=r.intervention, trigger=r.trigger,
                          why=r.untrusted_by or "third-party content was in context",
                          file=r.found.file if r.found is not None else None,
                          line=r.found.line if r.found is not None else None)
    if isinstance(read, str) or at is None:
        base.unchecked = read if isinstance(read, str) else "the place of the correction was not recorded"
        return base
    plan = _plan_at(read, at, r.trigger, voices)
    if plan is None:
        base.unchecked = "the correction is no longer in its session file"
        return base
    if plan.origin is Origin.CLEAN:
        base.clean_now = True  # `why` stays the reason recorded then
        return base
    blame = first_blame(read.blames, at)
    if blame is not None:
        base.why = blame.reason()
        base.tool = blame.tool
        base.call = whole_call(read.messages, blame) or blame.command
    base.stranger = strangers_before(read.blames, at)
    if not base.stranger and len(read.blames) >= MAX_BLAMES and read.blames[-1].at <= at:
        base.unchecked = "the session made more untrusted calls than the reader keeps, so the rest cannot be checked"
    if plan.origin is Origin.DERIVED:
        base.unchecked = "not from an interactive session: no person's correction to vouch for"
    return base


def _plan_at(read: ReadSession, at: int, trigger: str, voices: Voices, timeline: Sequence[TaintCheckpoint] | None = None) -> Planned | None:
    plans = survey_session(read.messages, read.taint_timeline if timeline is None else timeline,
                           interactive=read.interactive, voices=voices)
    return next((p for p in plans if p.intervention.at == at and p.intervention.trigger.value == trigger), None)


def strangers_before(blames: Iterable[Blame], at: int) -> list[str]:
    """Each stranger's text a call at or before message `at` put in
    context, by name, in file order."""
    out: list[str] = []
    for b in blames:
        if b.at <= at and b.stranger is not None:
            where = f"line {b.line}: " if b.line is not None else ""
            out.append(f"{where}{b.stranger}")
    return out


def whole_call(messages: Sequence[Message], blame: Blame) -> str | None:
    """The call `blame` names, whole: the command (or the input) of the
    tool call whose result rides in message `blame.at`."""
    if not 0 <= blame.at < len(messages):
        return None
    ids = [b.tool_use_id for b in messages[blame.at].blocks() if b.type == "tool_result"]
    for j in range(blame.at - 1, -1, -1):
        for use in messages[j].tool_uses():
            if use.id in ids and use.name == blame.tool:
                value = use.input.get("command", use.input.get("cmd")) if isinstance(use.input, dict) else None
                if isinstance(value, list):
                    value = " ".join(str(v) for v in value)
                if isinstance(value, str) and (blame.command is None or value.split() and " ".join(value.split()).startswith(blame.command.rstrip("…"))):
                    return value
                if blame.command is None:
                    return msgspec.json.encode(use.input).decode()
        if messages[j].role == "assistant" and any(u.id in ids for u in messages[j].tool_uses()):
            break
    return None


# ─── vouching ───────────────────────────────────────────────────────────────


def vouched_timeline(read: ReadSession, at: int) -> list[TaintCheckpoint]:
    """The session's taint as the person vouches for it at message `at`:
    their own machine up to their words, untrusted from the first call
    blamed after them (so an aftermath written after it stays withheld)."""
    later = [b.at for b in read.blames if b.at > at]
    timeline = [TaintCheckpoint(at=0, taint=Taint(private=True))]
    if later:
        timeline.append(TaintCheckpoint(at=min(later), taint=Taint(private=True, untrusted=True)))
    return timeline


def resolve(rows: Sequence[HeldCorrection], wanted: str) -> HeldCorrection:
    """The held correction `wanted` names: an exact id, else a unique prefix
    or a unique suffix (the id's last part, `863b6f60`, is what tells ids
    of one pass apart)."""
    exact = [r for r in rows if r.id == wanted]
    if exact:
        return exact[0]
    found = [r for r in rows if r.id.startswith(wanted) or r.id.endswith(wanted)] if wanted else []
    if len(found) == 1:
        return found[0]
    if found:
        ids = [r.id for r in found]
        raise Ambiguous(f"{wanted!r} names {len(found)} held corrections: {', '.join(ids[:8])}", ids)
    raise NotFound(f"no held correction {wanted!r}: `mecha-sidecar lessons --held` lists them with their ids")


def vouch(
    store: LearningStore,
    ids: Sequence[str],
    *,
    by: str | None = None,
    policy_for: PolicyFor | None = None,
    voices: Voices = DEFAULT_VOICES,
) -> Vouched:
    """Vouch for the held corrections `ids` name (see the module): each
    vouchable one is queued for reflection once; one that a stranger's text
    held back is refused by name. The decision is recorded with `by` (the
    person's login by default) and committed to the store's history."""
    if not ids:
        raise InvalidInput("vouch: name at least one held correction by its id (`mecha-sidecar lessons --held` lists them)")
    _, rows = held_now(store, policy_for, voices=voices)
    picked = list({r.id: r for r in (resolve(rows, i) for i in ids)}.values())
    who = by or _login()
    out = Vouched()
    records: list[VouchRecord] = []
    entries: list[SessionEntry] = []
    reflections = {r.id: r for r in store.reflexions()}
    for held in picked:
        if not held.vouchable:
            what = "; ".join(held.stranger) if held.stranger else held.unchecked or CLEAN_NOW
            kind = "a stranger's text was in context" if held.stranger else "what was in context cannot be checked"
            out.refused.append(f"{held.id}: not vouched — {kind}: {what}")
            continue
        r = reflections[held.id]
        read = _read_again(held.file, held.session_id, policy_for)
        assert not isinstance(read, str) and r.found is not None and r.found.at is not None
        at = r.found.at
        plan = _plan_at(read, at, r.trigger, voices, vouched_timeline(read, at))
        if plan is None or plan.origin is not Origin.CLEAN:
            out.refused.append(f"{held.id}: not vouched — the correction no longer reads as one in its session file")
            continue
        plan.line = read.lines[at] if 0 <= at < len(read.lines) else None
        plan.said_at = read.time_at(at)
        digest = hashlib.blake2b(msgspec.json.encode([plan.intervention.trigger.value, plan.intervention.text, at]), digest_size=6)
        entries.append(SessionEntry(f"{read.session_id}{VOUCH}{digest.hexdigest()}", plans=[plan],
                                    project=project_of_session(read.project, read.branch), file=held.file))
        records.append(VouchRecord(reflection=held.id, session_id=read.session_id, at=at, trigger=r.trigger,
                                   words=held.words, call=held.call, why=held.why, file=held.file, line=held.line,
                                   by=who, vouched_at=now()))
    if not entries:
        return out
    with store.lock():
        taken = store.mined_sessions() | queued_session_ids(store)
        fresh: list[VouchRecord] = []
        for entry, record in zip(entries, records, strict=True):
            if entry.session_id in taken:
                out.already.append(record.reflection)
                continue
            enqueue(store, entry)
            out.entries.append(entry.session_id)
            out.queued.append(record.reflection)
            fresh.append(record)
        if fresh:
            store.append_vouches(fresh)
            store.commit(_message(fresh, who))
    return out


def _message(records: Sequence[VouchRecord], who: str) -> str:
    lines = [f"Vouched for {len(records)} correction(s) held back by the reader's doubt, by {who}", ""]
    for r in records:
        where = f"{r.file}:{r.line}" if r.file and r.line is not None else r.session_id
        lines.append(f"- {r.reflection} ({where}): “{r.words[:120]}” — held back by {r.why}")
    lines += ["", "Each is queued for reflection once; no program is trusted for any other session."]
    return "\n".join(lines)


def _login() -> str:
    for key in ("USER", "LOGNAME", "USERNAME"):
        value = os.environ.get(key)
        if value:
            return value
    try:
        import getpass

        return getpass.getuser()
    except (OSError, KeyError):
        return "the person at this terminal"
