"""What trusting one program would free: the offers an import makes, exact.

An import tells the person which of their programs held corrections back
and offers the command that trusts each (`mecha-sidecar trust add
'Bash(bd)'`). The count beside an offer used to be every intervention that
came after any call of the program — which is not what trusting it does: a
session held back by `gcc-12` and, a call later, by `git push` stays held
back when `gcc-12` is trusted. Offers whose counts added up to 41 freed 4.

So the count is measured, never estimated: the session is **read again with
that one entry added** to the trust it was read under, surveyed from
scratch, and the interventions that were untrusted and now read clean are
counted. That is exactly what `trust add` does afterwards (`retrust`), so
an offer frees what it says. An entry that frees nothing in a session is
not offered for it; one that frees nothing anywhere is not offered at all.
A remote's subcommand (`bd sync`, `git push`) is never inside its
program's entry (`reader.TaintPolicy.kept_remote`), so trusting `Bash(bd)`
is measured — and offered — without it.

Each candidate costs one more reading of the session, and only sessions
with untrusted new interventions have candidates: the calls they blame
that a trust entry can answer (`reader.Blame.entry`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mecha.core.domain.reflexion import Origin
from mecha.core.errors import InvalidInput
from mecha.core.sessions.mining import Voices
from mecha.core.sessions.reader import ReadSession, TaintPolicy
from mecha.core.sessions.survey import Planned, survey_session

#: One intervention of a session, as a re-reading finds it again: the
#: message it rides in and its trigger (trusting a program changes taint,
#: never the messages).
Spot = tuple[int, str]


def candidates(read: ReadSession, held: Sequence[Planned]) -> list[str]:
    """The trust entries that might free some of `held` (the session's
    untrusted interventions): those of the calls blamed at or before the
    last of them, in the order first met."""
    if not held:
        return []
    last = max(p.intervention.at for p in held)
    return list(dict.fromkeys(b.entry for b in read.blames if b.entry is not None and b.at <= last))


def exact_offers(
    path: Path,
    read: ReadSession,
    held: Sequence[Planned],
    policy: TaintPolicy,
    voices: Voices,
) -> dict[str, int]:
    """For each candidate entry (`candidates`), how many of `held` read
    clean when the session at `path` is read again under `policy` with that
    entry alone added; entries that free none are left out. A file that can
    no longer be read offers nothing."""
    from mecha.core.sessions.foreign import read_session

    wanted: set[Spot] = {(p.intervention.at, p.intervention.trigger.value) for p in held}
    out: dict[str, int] = {}
    for entry in candidates(read, held):
        try:
            again = read_session(path, read.source, policy=policy.with_overrides(trust=[entry]))
        except InvalidInput:
            return out
        plans = survey_session(again.messages, again.taint_timeline, interactive=again.interactive, voices=voices)
        freed = sum(1 for p in plans if p.origin is Origin.CLEAN and (p.intervention.at, p.intervention.trigger.value) in wanted)
        if freed:
            out[entry] = freed
    return out
