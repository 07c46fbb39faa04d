"""What the reflector answered for each intervention, and what was set aside.

The attempts ledger (`reflect_attempts.jsonl`) holds one `Attempt` per
answer; folded oldest first they give each intervention's `AttemptState`.
"""

from __future__ import annotations

from enum import Enum

import msgspec

#: An intervention whose reflector gave this many unusable answers (counted
#: across passes) is set aside rather than asked again: a model that cannot
#: answer it must not be retried for ever, and three tries is enough to tell
#: bad luck from a prompt the model cannot handle.
MAX_UNUSABLE_ANSWERS = 3

class AttemptKind(str, Enum):
    """What one line of the attempts ledger says of an intervention."""

    #: The reflector answered it usably (a lesson, or an explicit skip).
    ANSWERED = "answered"
    #: The reflector's answer could not be used; asked again next pass.
    UNUSABLE = "unusable"
    #: Not to be asked again until a person retries it.
    SET_ASIDE = "set_aside"
    #: A person put it back: what came before no longer counts.
    RETRY = "retry"


class Attempt(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One line of the attempts ledger."""

    #: The intervention: `<session id>#<message index>:<trigger>`, or
    #: `draft:<outbox item id>` (see `core/learning/reflect.py`'s `intervention_key`).
    key: str
    state: AttemptKind
    at: str
    #: Why an answer was unusable, or why the intervention was set aside.
    reason: str | None = None


class AttemptState(msgspec.Struct):
    """Where one intervention stands, folded from its attempt lines."""

    answered: bool = False
    unusable: int = 0
    set_aside: str | None = None

    def apply(self, rec: Attempt) -> None:
        if rec.state == AttemptKind.ANSWERED:
            self.answered = True
        elif rec.state == AttemptKind.UNUSABLE:
            self.unusable += 1
        elif rec.state == AttemptKind.SET_ASIDE:
            self.set_aside = rec.reason or "set aside"
        elif rec.state == AttemptKind.RETRY:
            self.answered, self.unusable, self.set_aside = False, 0, None

    @property
    def settled(self) -> bool:
        """Nothing more to ask the model: answered, or set aside."""
        return self.answered or self.set_aside is not None


class SetAside(msgspec.Struct, kw_only=True):
    """Why an inbox entry was set aside, kept beside it."""

    id: str
    reason: str
    set_aside_at: str
    #: The interventions set aside (attempts-ledger keys); empty when the
    #: whole entry was (unreadable, an id that can never be recorded).
    interventions: list[str] = msgspec.field(default_factory=list)
    #: `session <id>` / `draft <id>`, when the entry could be read.
    label: str | None = None

