"""Interventions skipped without a model call, by a rule over the words.

Over 60 real interventions answered by a capable model, 36 calls were
skips, and most of those were a person saying "continue", "yes", "go on" or
"create the beads": agreeing to what the assistant had just offered. The
reflector was paid to read each and say there was nothing to learn. A bare
go-ahead is the one kind of skip a rule can make as well as a model: its
words carry no objection, so no lesson can be drawn from them whatever the
assistant did.

The rule is deliberately narrow — the reflector still decides everything
else. It reads only the person's words, never the assistant's, and takes a
message as a go-ahead only when every word of it is agreement (`yes`,
`ok`, `thanks`, `please`), a bare instruction to go on (`continue`, `go
ahead`, `proceed`, `do it`), carrying out what was proposed (`create the
beads`, `commit it`, `push`): a verb of acceptance with at most a short
object — or only the label of an option the assistant offered (`2`, `b.`). A word that pushes back — `no`, `not`, `instead`, `why`, `but`,
`only`, `again`, `stop`, a question mark — sends it to the reflector, and
so does anything longer than a few words. A skip is recorded with its
reason like any answer (the reflect pass's attempts ledger), so it is
visible, and counted apart from the model's own skips.
"""

from __future__ import annotations

import re

from mecha.core.sessions.mining import Intervention, Trigger

#: Words that only agree, thank or soften; a message of nothing else is a
#: go-ahead ("ok thanks", "yes please", "perfect").
AGREEMENT = frozenset({
    "yes", "y", "yep", "yeah", "yup", "ok", "okay", "k", "kk", "sure", "alright", "right", "fine", "good", "great",
    "perfect", "cool", "nice", "thanks", "thank", "you", "thx", "ty", "please", "pls", "now", "then", "so", "lets",
    "let's", "sounds", "looks", "lgtm", "excellent", "awesome", "agreed", "correct", "exactly", "go", "ahead",
    "on", "proceed", "continue", "carry", "keep", "going", "resume", "next", "and", "do", "it", "that", "approved", "approve", "confirmed", "confirm", "ship", "with", "for", "just",
})
#: Verbs that carry out what the assistant proposed ("create the beads",
#: "commit it"). Only with a short object (`ACCEPT_OBJECT_WORDS`), never with
#: a word of `PUSHBACK`.
#: Verbs that also name a new request or an omission ("run the tests",
#: "add tests", "use the other file") are left out: those may well be
#: corrections.
ACCEPT_VERBS = frozenset({
    "create", "implement", "apply", "commit", "push", "merge", "file", "open", "do", "go", "start", "deploy",
    "release", "publish",
})
#: The most words an object after an acceptance verb may have: "the beads",
#: "the two issues", "both fixes".
ACCEPT_OBJECT_WORDS = 3
#: Words that push back: any of them and the reflector decides.
PUSHBACK = frozenset({
    "no", "not", "don't", "dont", "never", "instead", "why", "but", "wrong", "again", "stop", "undo", "revert",
    "only", "actually", "should", "shouldn't", "wait", "hold", "rather", "without", "except", "first", "before",
    "careful", "didn't", "isn't", "wasn't", "can't", "cannot", "won't", "nope", "nah", "fix", "broke", "broken",
    "still", "forgot", "missed", "also", "too", "less", "more", "shorter", "longer", "smaller", "bigger",
})
#: Longer than this, a message is never a bare go-ahead.
MAX_WORDS = 6

_WORD = re.compile(r"[a-z0-9][a-z0-9'’]*")
#: An answer that is only an option's label: "2", "3.", "(b)", "option 1".
_OPTION = re.compile(r"(?:option\s+)?\(?(?:[0-9]{1,2}|[a-f])[.)]?")


def go_ahead_reason(intervention: Intervention) -> str | None:
    """Why `intervention` is a bare go-ahead that needs no model call, or
    `None` when the reflector must read it. Only a steer or a follow-up can
    be one: a denial refused something, and an edit changed a draft."""
    if intervention.trigger not in (Trigger.STEER, Trigger.FOLLOWUP):
        return None
    text = intervention.text.strip().lower()
    if not text or "?" in text or len(text) > 60:
        return None
    words = [w.replace("’", "'") for w in _WORD.findall(text)]
    if not words or len(words) > MAX_WORDS or any(w in PUSHBACK for w in words):
        return None
    quoted = " ".join(words)
    if all(w in AGREEMENT for w in words):
        return f'a bare go-ahead ("{quoted}"): nothing in it objects to what the assistant did'
    rest = [w for w in words if w not in ("ok", "okay", "yes", "yeah", "sure", "please", "great", "perfect", "now", "go", "ahead", "and", "then", "lets", "let's")]
    if rest and rest[0] in ACCEPT_VERBS and len(rest) - 1 <= ACCEPT_OBJECT_WORDS:
        return f'a bare go-ahead ("{quoted}"): it carries out what was proposed and objects to nothing'
    if _OPTION.fullmatch(text):
        return f'a bare go-ahead ("{text}"): it picks one of the options the assistant offered'
    return None
