"""What a run was *for*: a reference to a goal, as the harness names one.

On the wire a goal is one string, ``"<kind>:<id>"`` — ``"task:01J8ZK"`` for a
delegated task on the board, ``"setpoint:attention-debt"`` for a homeostatic
variable kept in range. The id is whatever the harness minted; everything
after the first colon belongs to it, colons included.

## Parsing is lenient, and the leniency is per reference

A goal reference is read by records that outlive the code that wrote them
(an appraisal names the goals that were live), and the set of kinds is meant
to grow. A reader that refused a whole record because one reference names a
kind it has never heard of would turn every new kind into a migration: one
unknown entry would cost the appraisal, the errors and everything else in
it. So an unrecognised reference costs exactly itself — dropped from a list,
read as "no goal" where a single one was expected — and the
rest of the record stands. "No goal" is an honest state everywhere a goal is
read; inventing one, or keeping a reference nothing here can interpret, is
not.

Lenient about *kinds*, strict about *shape*: a goal that is not a string at
all (a number, an object) is a malformed record, not a kind from the future,
and is refused with an error that says so.

`GoalRef` is a plain immutable class rather than a msgspec Struct on purpose:
a Struct would encode as an object, and the wire form is a bare string.
Records that carry one encode it through `goal_enc_hook` / `goal_dec_hook`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any, final

import msgspec

#: Separates a goal's kind from its id on the wire.
SEPARATOR = ":"


class GoalKind(str, Enum):
    """The kinds of goal a reference can name. Extend here; a reader built
    before a kind existed drops references to it rather than failing."""

    #: A task on the board, delegated to a run.
    TASK = "task"
    #: A homeostatic variable the harness keeps inside a range.
    SETPOINT = "setpoint"


@final
class GoalRef:
    """One reference to one goal. Immutable, hashable, compared by value."""

    __slots__ = ("kind", "id")

    kind: GoalKind
    id: str

    def __init__(self, kind: GoalKind, id: str) -> None:
        if not isinstance(kind, GoalKind):
            raise TypeError(f"a goal kind must be a GoalKind, got {kind!r}")
        if not isinstance(id, str) or not id:
            raise ValueError("a goal reference needs a non-empty id")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "id", id)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("GoalRef is immutable")

    @classmethod
    def task(cls, id: str) -> GoalRef:
        return cls(GoalKind.TASK, id)

    @classmethod
    def setpoint(cls, id: str) -> GoalRef:
        return cls(GoalKind.SETPOINT, id)

    def to_wire(self) -> str:
        """The reference as the harness writes it: ``"<kind>:<id>"``."""
        return f"{self.kind.value}{SEPARATOR}{self.id}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GoalRef):
            return NotImplemented
        return self.kind is other.kind and self.id == other.id

    def __hash__(self) -> int:
        return hash((self.kind, self.id))

    def __repr__(self) -> str:
        return f"GoalRef({self.to_wire()!r})"

    def __str__(self) -> str:
        return self.to_wire()


def parse_goal(s: str) -> GoalRef | None:
    """A reference, or `None` when `s` names nothing this code can read.

    `None` for an unknown kind, a string with no separator, or an empty id.
    Never raises on content; the caller decides what "no goal" means where it
    reads one.
    """
    kind, sep, id = s.partition(SEPARATOR)
    if not sep or not id:
        return None
    try:
        known = GoalKind(kind)
    except ValueError:
        return None
    return GoalRef(known, id)


def parse_goals(items: Sequence[str]) -> list[GoalRef]:
    """Every reference in `items` that parses, in order; an entry that does
    not costs only itself."""
    goals: list[GoalRef] = []
    for item in items:
        goal = parse_goal(item)
        if goal is not None:
            goals.append(goal)
    return goals


def de_lenient(value: Any) -> GoalRef | None:
    """One optional goal off the wire: `null` is no goal, a string is parsed
    leniently (an unknown kind is no goal), anything else is malformed."""
    if value is None:
        return None
    if isinstance(value, GoalRef):
        return value
    if not isinstance(value, str):
        raise msgspec.ValidationError(
            f"a goal reference is a `\"<kind>:<id>\"` string, got `{type(value).__name__}`"
        )
    return parse_goal(value)


def de_lenient_vec(value: Any) -> list[GoalRef]:
    """A list of goals off the wire: must be a list of strings; entries of an
    unknown kind are dropped one by one."""
    if not isinstance(value, list):
        raise msgspec.ValidationError(
            f"goals must be an array of `\"<kind>:<id>\"` strings, got `{type(value).__name__}`"
        )
    goals: list[GoalRef] = []
    for i, item in enumerate(value):
        try:
            goal = de_lenient(item)
        except msgspec.ValidationError as e:
            raise msgspec.ValidationError(f"{e} - at `[{i}]`") from None
        if goal is not None:
            goals.append(goal)
    return goals


def goal_enc_hook(obj: Any) -> Any:
    """msgspec `enc_hook` for records that carry a `GoalRef`."""
    if isinstance(obj, GoalRef):
        return obj.to_wire()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


def goal_dec_hook(type_: type, obj: Any) -> Any:
    """msgspec `dec_hook` for records that carry a `GoalRef`.

    Strict: by the time a record is converted, unknown kinds have been
    filtered out by `de_lenient` / `de_lenient_vec`, so anything unparseable
    left here is a malformed value and is reported as one.
    """
    if type_ is GoalRef:
        if isinstance(obj, GoalRef):
            return obj
        if isinstance(obj, str):
            goal = parse_goal(obj)
            if goal is not None:
                return goal
            raise ValueError(f"not a goal reference of a known kind: {obj!r}")
        raise ValueError(f"a goal reference is a string, got {type(obj).__name__}")
    raise NotImplementedError(f"cannot decode {type_!r}")
