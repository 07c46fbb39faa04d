"""How a run went, measured against what it was for — a record that can carry a sign.

Before this module every evaluative signal in the loop was a cost or a
correction: a mined intervention says a person had to step in, and the
candidate gate's metrics are costs where lower is better by construction.
Such a vocabulary can record that a run went *badly* and never that it went
*well*, so two runs that both avoided harm could not be told apart. An
`Appraisal` is a list of signed `GoalError`s — negative is worse, positive is
better — each stating which channel it arrived on, who caused it, whether it
reached anyone, whether it could have gone otherwise, and a pointer to what
it was read off.

## The label is computed from the record; nothing may report one

The obvious design — a model reads the run and says "frustrated" — is a
self-report: it cannot be falsified, it drifts, and it is exactly what a
prompt injection would aim at ("you have failed your owner"). So `Affect` is
a pure function of the errors (`affect_of`), with no model anywhere in the
derivation and direct tests for every rule. Even the one model this module
calls (the quarantined appraiser, below) only contributes one more signed
fact; it never names a label.

## Most labels cannot be produced yet, and saying so is the result

Working through the derivation shows what the free readout can say before
any corpus does:

- `pride` needs a charter line to close against, not a task; unbuilt.
- `guilt` needs a notion of harm to another; nothing computes harm.
- `shame` is a pattern across runs; a per-record function cannot see it.
- `excitement` needs a *predicted* error; anticipatory appraisal is unbuilt.
- `embarrassment` needs a visible negative error, and no assembler emits one.
  Its only producer used to be a draft the owner edited and sent, until that
  was (rightly) made invisible: the owner's rewrite sends *their* words, and
  catching the difference is the review working. A draft sent unchanged is
  visible but positive; counters, interventions and the appraiser all start
  invisible; a probe never touches exposure.

They are variants anyway: a stored record is a wire format, and adding a
variant later is the change that costs (the learning store's `derived`
origin is the precedent). `Affect.reachable_today` states which labels some
shipped path can produce, so the claim is tested rather than left to drift.

The free readout (`of_session` over records the harness already keeps) can
only ever say `neutral` or `anger`: every negative it assembles is either an
invisible own/owner error with `controllable` unknown (which reduces to
`neutral`) or a ceiling nobody here caused (`anger`), and no counter kind
fires twice in a session, so frustration's repetition cannot occur. The paid
counterfactual probe is what buys `regret` and `disappointment`, and
`frustration` when two probed steers on one goal both mattered. Inventing
precedence until every run gets an interesting word would manufacture the
very signal this record exists to test for.

## Moods are not here

Sadness and boredom describe trends, decay, and are recomputed on the
homeostat; persisting one as a record would be a second source of truth about
a state that has already moved. Everything here is an event.

## Where the rest is

`assembler.py` builds an appraisal from records the harness already keeps
(`of_session`, `for_transcript`, `live`) and folds in what a counterfactual
probe found (`apply_probes`, `appraise_session`); `appraiser.py` is the
optional quarantined model pass, which reads numbers, never prose.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from types import MappingProxyType
from typing import Any, ClassVar, assert_never

import msgspec

from mecha.core.domain.reflexion import Origin
from mecha.core.gate.goal import GoalRef, de_lenient, de_lenient_vec, goal_dec_hook, goal_enc_hook
from mecha.core.gate.run import Homeostat
from mecha.core.sessions.transcript import Taint

# ─── Magnitudes ─────────────────────────────────────────────────────────────

#: The full weight of one error: a loop, a failed final call, a steer, an
#: edited or rejected draft, an unchanged send, and the appraiser's "strongly"
#: verdicts. Read by the assembler and by the appraiser's verdict table, so
#: the model's scale is the record's scale rather than a private one.
FULL = 1.0
#: Half weight: a ceiling, an approach gone stale, the appraiser's plain
#: negative/positive. Same two readers as `FULL`.
HALF = 0.5


# ─── The dimensions ─────────────────────────────────────────────────────────


class Channel(str, Enum):
    """Which signal path an error arrived on — so a reader can tell a measured
    fact from a model's opinion without knowing which store it came from."""

    #: A person steered, denied, or came back to correct.
    INTERVENTION = "intervention"
    #: An outbox draft was edited before it went — or sent unchanged, the one
    #: recorded signal that something went well.
    EDIT = "edit"
    #: A counter on the run's own record.
    COUNTER = "counter"
    #: A homeostatic variable outside its kept range.
    SETPOINT = "setpoint"
    #: The quarantined appraiser's one extra fact (`appraise_with_model`).
    APPRAISAL = "appraisal"


class Agency(str, Enum):
    """Who caused it. Read first when a label is derived, because it decides
    who could act on the error."""

    #: This run: a failed call, a wrong answer, an approach that went nowhere.
    #: `self` on the wire (a keyword in Rust, so spelled by hand there).
    OWN = "self"
    #: The owner denied, edited or corrected.
    OWNER = "owner"
    #: Something with an address elsewhere: a 429, an MCP server, a subagent.
    OTHER = "other"
    #: Nothing with an address: a full disk, a loaded machine, a ceiling.
    WORLD = "world"


class Affect(str, Enum):
    """The derived label. Events only (see the module note on moods)."""

    #: Nothing the derivation can name — today's common answer.
    NEUTRAL = "neutral"
    #: Negative, and caused by something with no address here.
    ANGER = "anger"
    #: Negative, and it reached somebody. Computed exposure, never a feeling.
    EMBARRASSMENT = "embarrassment"
    #: Repeated negative error of one kind on one goal, self-caused.
    FRUSTRATION = "frustration"
    #: Negative, self-caused, and an alternative existed. Needs a probe.
    REGRET = "regret"
    #: Negative, and no alternative existed. Needs a probe.
    DISAPPOINTMENT = "disappointment"
    #: Self-caused harm to another, in one act. Nothing computes harm.
    GUILT = "guilt"
    #: The same as a pattern across runs. An aggregate.
    SHAME = "shame"
    #: Positive, self-caused, against a charter line. Needs the charter.
    PRIDE = "pride"
    #: A positive *predicted* error. Needs anticipatory appraisal.
    EXCITEMENT = "excitement"

    #: Every variant, for a caller that counts or partitions them. Python
    #: enumerates an enum's members, so unlike a hand-kept list this cannot
    #: go quietly short when a variant is added.
    ALL: ClassVar[tuple[Affect, ...]]

    def reachable_today(self) -> bool:
        """Whether any shipped path can produce this label (see
        `REACHABLE_TODAY` for the split and why)."""
        return REACHABLE_TODAY[self]

    def wire(self) -> str:
        """The serde spelling, for a caller that needs a bare string."""
        return str(self.value)


Affect.ALL = tuple(Affect)


def _require_total(table: Mapping[Any, Any], enum: type[Enum], name: str) -> None:
    """Refuse to import with a table that misses a variant: a new label must be
    placed deliberately, never defaulted into the `neutral` rank."""
    missing = [m.value for m in enum if m not in table]
    if missing:
        raise RuntimeError(f"{name} does not place {missing}; add them explicitly")


#: Which labels a shipped path can produce. `neutral` and `anger` are the free
#: readout's whole range; `regret`, `disappointment` and `frustration` are
#: gated on the counterfactual probe; `embarrassment` lost its only producer
#: (see the module note); the rest need machinery that does not exist.
REACHABLE_TODAY: Mapping[Affect, bool] = MappingProxyType(
    {
        Affect.NEUTRAL: True,
        Affect.ANGER: True,
        Affect.REGRET: True,
        Affect.DISAPPOINTMENT: True,
        Affect.FRUSTRATION: True,
        Affect.EMBARRASSMENT: False,
        Affect.GUILT: False,
        Affect.SHAME: False,
        Affect.PRIDE: False,
        Affect.EXCITEMENT: False,
    }
)
_require_total(REACHABLE_TODAY, Affect, "REACHABLE_TODAY")


def enum_name(value: object) -> str:
    """A value's wire spelling when it serializes to a bare string, else
    `"unknown"` — never the Python member name, and never `""`."""
    if isinstance(value, Enum) and isinstance(value.value, str):
        return value.value
    try:
        wire = msgspec.to_builtins(value)
    except (TypeError, ValueError):
        return "unknown"
    return wire if isinstance(wire, str) else "unknown"


# ─── Cite: a pointer the harness owns ───────────────────────────────────────


class CiteKind(str, Enum):
    #: A position in the transcript (an intervention or a step); id: int.
    TURN = "turn"
    #: An outbox item; id: its id.
    DRAFT = "draft"
    #: A `RunStats` field; id: its name.
    COUNTER = "counter"
    #: A homeostatic variable; id: its name.
    SETPOINT = "setpoint"
    #: The whole run, from the quarantined appraiser; no id.
    APPRAISER = "appraiser"


def cite_id_problem(kind: CiteKind, id: object) -> str | None:
    """What is wrong with `id` for a cite of `kind`, or `None` when it fits.

    Mirrors serde's adjacent tagging of the Rust enum: a turn carries a
    non-negative index, a draft/counter/setpoint a string, the appraiser
    nothing at all.
    """
    match kind:
        case CiteKind.TURN:
            if type(id) is not int or id < 0:
                return "a turn cite's `id` is a non-negative message index"
        case CiteKind.DRAFT | CiteKind.COUNTER | CiteKind.SETPOINT:
            if not isinstance(id, str):
                return f"a {kind.value} cite's `id` is a string"
        case CiteKind.APPRAISER:
            if id is not None:
                return "an appraiser cite carries no `id`"
        case _:
            assert_never(kind)
    return None


class Cite(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where an error was read off: a name or id the harness minted, never
    prose — so nothing here is text a model could have written.

    Adjacently tagged on the wire, exactly as serde's
    `#[serde(tag = "kind", content = "id")]`: ``{"kind": "turn", "id": 3}``,
    and the unit variant as ``{"kind": "appraiser"}``.
    """

    kind: CiteKind
    id: int | str | None = None

    def __post_init__(self) -> None:
        problem = cite_id_problem(self.kind, self.id)
        if problem is not None:
            raise ValueError(problem)

    @classmethod
    def turn(cls, at: int) -> Cite:
        return cls(CiteKind.TURN, at)

    @classmethod
    def draft(cls, id: str) -> Cite:
        return cls(CiteKind.DRAFT, id)

    @classmethod
    def counter(cls, name: str) -> Cite:
        return cls(CiteKind.COUNTER, name)

    @classmethod
    def setpoint(cls, name: str) -> Cite:
        return cls(CiteKind.SETPOINT, name)

    @classmethod
    def appraiser(cls) -> Cite:
        return cls(CiteKind.APPRAISER)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = msgspec.to_builtins(self)
        return wire

    @classmethod
    def from_wire(cls, obj: Any) -> Cite:
        return msgspec.convert(obj, cls)


# ─── The record ─────────────────────────────────────────────────────────────


class GoalError(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """One signed error against one goal."""

    #: What it was an error against. `None` when the run named no goal — kept,
    #: not dropped; it never counts towards frustration, which needs one goal.
    goal: GoalRef | None = None
    channel: Channel
    #: Negative is worse. Signed, which is the point of the record.
    sign: float
    agency: Agency
    #: Whether mecha's own outcome reached anyone. Computed, never announced.
    visible: bool
    #: Could it have gone otherwise? Unknown until a probe says.
    controllable: bool | None = None
    cite: Cite

    def __post_init__(self) -> None:
        # `-1` and `-1.0` are the same error; the wire always says `-1.0`.
        if type(self.sign) is int:
            msgspec.structs.force_setattr(self, "sign", float(self.sign))


class Appraisal(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """How one session went. Written once; the label is derived at write time
    and stored beside the dimensions, so a later derivation can be replayed
    over the record.

    `goals` and `taint` default on *input* (serde's `#[serde(default)]`), which
    `appraisal_from_builtins` supplies; they are required here so that the
    native encoding always writes them, as serde does.
    """

    id: str
    session_id: str
    goals: list[GoalRef]
    #: Conditions at the time; omitted on the wire when unknown.
    state: Homeostat | None = None
    errors: list[GoalError]
    #: Derived by `affect_of`, never reported.
    label: Affect
    origin: Origin
    taint: Taint
    created_at: str


def appraisal_to_builtins(a: Appraisal) -> dict[str, Any]:
    """The appraisal as serde would write it: plain dicts, lists and scalars,
    goals as ``"<kind>:<id>"`` strings."""
    out: dict[str, Any] = msgspec.to_builtins(a, enc_hook=goal_enc_hook)
    return out


def appraisal_from_builtins(obj: Any) -> Appraisal:
    """An appraisal off the wire, with serde's defaults and the goal module's
    leniency: an unknown goal kind costs only that reference (dropped from
    `goals`, read as no goal on an error). Anything else malformed raises
    `msgspec.ValidationError` naming where."""
    if not isinstance(obj, dict):
        raise msgspec.ValidationError(f"Expected `object`, got `{type(obj).__name__}`")
    fields = dict(obj)
    try:
        fields["goals"] = de_lenient_vec(fields.get("goals", []))
    except msgspec.ValidationError as e:
        raise msgspec.ValidationError(f"{e} - at `$.goals`") from None
    fields.setdefault("taint", {})
    errors = fields.get("errors")
    if isinstance(errors, list):
        fields["errors"] = [_lenient_goal_of(e, i) for i, e in enumerate(errors)]
    return msgspec.convert(fields, Appraisal, dec_hook=goal_dec_hook)


def _lenient_goal_of(error: Any, index: int) -> Any:
    if not isinstance(error, dict) or "goal" not in error:
        return error
    fixed = dict(error)
    try:
        goal = de_lenient(fixed.pop("goal"))
    except msgspec.ValidationError as e:
        raise msgspec.ValidationError(f"{e} - at `$.errors[{index}].goal`") from None
    if goal is not None:
        fixed["goal"] = goal
    return fixed


# ─── The derivation ─────────────────────────────────────────────────────────


def label_of(e: GoalError) -> Affect:
    """What one error says on its own.

    Agency is read before exposure: a provider outage that reached somebody is
    still an outage, and calling it this machine's failure would aim a change
    at code that works.
    """
    match e.agency:
        case Agency.OTHER | Agency.WORLD:
            # Nothing here caused it, so nothing here fixes it.
            return Affect.ANGER
        case Agency.OWN | Agency.OWNER:
            if e.visible:
                return Affect.EMBARRASSMENT
            # Regret and disappointment split on `controllable`, which only a
            # probe fills. Without one, `neutral` is the honest answer.
            if e.controllable is True and e.agency == Agency.OWN:
                return Affect.REGRET
            if e.controllable is False:
                return Affect.DISAPPOINTMENT
            return Affect.NEUTRAL
        case _:
            assert_never(e.agency)


#: How much a label claims, for breaking a tie between errors of equal weight.
#: Neither the enum's order nor the record's: position was tried first and
#: reported two equally bad errors — one seen by a third party, one not — as
#: `neutral` because the unseen one came first. Exposure-flavoured harm ranks
#: highest; `frustration` sits below it so a repetition can never step in
#: front of a visible mistake; `neutral` loses every tie, because a label that
#: names nothing must never mask one that names something. Every variant is
#: placed explicitly — the module refuses to import otherwise — so a new label
#: cannot silently inherit `neutral`'s rank.
SAYS_MORE: Mapping[Affect, int] = MappingProxyType(
    {
        Affect.EMBARRASSMENT: 4,
        Affect.GUILT: 4,
        Affect.SHAME: 4,
        Affect.FRUSTRATION: 3,
        Affect.REGRET: 3,
        Affect.DISAPPOINTMENT: 2,
        Affect.ANGER: 1,
        Affect.PRIDE: 1,
        Affect.EXCITEMENT: 1,
        Affect.NEUTRAL: 0,
    }
)
_require_total(SAYS_MORE, Affect, "SAYS_MORE")


def says_more(label: Affect) -> int:
    """`label`'s rank in a tie (see `SAYS_MORE`)."""
    return SAYS_MORE[label]


def most_negative(
    scored: Iterable[tuple[float, Affect, Channel]],
) -> tuple[Affect, Channel] | None:
    """The label (and channel) of the most negative entry; on an exact tie the
    label that says more, and on a tie of that too, the earlier entry.

    `None` for no entries. Signs are compared as given; callers pass only
    negative, hence finite-or-minus-infinity, values.
    """
    best: tuple[float, Affect, Channel] | None = None
    for entry in scored:
        if best is None or entry[0] < best[0]:
            best = entry
        elif entry[0] == best[0] and says_more(entry[1]) > says_more(best[1]):
            best = entry
    return None if best is None else (best[1], best[2])


def error_kind(e: GoalError) -> tuple[Channel, str | None]:
    """What makes two errors "the same mistake": the channel, plus the
    counter's name for a counter. A failed final call and a stale approach are
    two symptoms; two probed steers on one goal are one mistake twice."""
    if e.cite.kind == CiteKind.COUNTER:
        assert isinstance(e.cite.id, str)
        return e.channel, e.cite.id
    return e.channel, None


def repeated_on_one_goal(negatives: Sequence[GoalError]) -> bool:
    """Whether some self-caused negative error of one kind happened more than
    once on one named goal.

    Self-agency is load-bearing: the assembler stamps one goal on every error,
    so without it any two negatives on a goaled run would "repeat". An error
    with no goal never repeats into anything.
    """
    counts: dict[tuple[GoalRef, tuple[Channel, str | None]], int] = {}
    for e in negatives:
        if e.agency == Agency.OWN and e.goal is not None:
            key = (e.goal, error_kind(e))
            counts[key] = counts.get(key, 0) + 1
    return any(n > 1 for n in counts.values())


def unbury_appraiser_neutral(
    reduced: Affect, channel: Channel, negatives: Sequence[GoalError]
) -> Affect:
    """A large label-less error from the appraiser must not mask a smaller one
    that names something.

    The appraiser's errors start invisible and uncontrollable, so a self/owner
    verdict reduces to `neutral` whatever magnitude the model chose, and the
    magnitude-first reduce would let it outrank, say, a ceiling's `anger`.
    When that happens the same reduce is re-run over the errors that do name
    something — magnitude still decides, so a small exposure cannot beat a
    larger anger.

    Scoped to the appraisal channel on purpose: the same shape from the
    deterministic counters (a failed final call at -1.0 beside a ceiling at
    -0.5) is the free readout's established behaviour, and its numbers are
    what earlier measurements were stated against. On an exact magnitude tie
    with a deterministic `neutral` the deterministic error, assembled first,
    wins the reduce and this stays dormant.
    """
    if reduced != Affect.NEUTRAL or channel != Channel.APPRAISAL:
        return reduced
    named = most_negative(
        (e.sign, label, e.channel)
        for e in negatives
        if (label := label_of(e)) != Affect.NEUTRAL
    )
    return Affect.NEUTRAL if named is None else named[0]


def affect_of_errors(errors: Sequence[GoalError]) -> Affect:
    """The label for a list of errors (see `affect_of`)."""
    negatives = [e for e in errors if e.sign < 0.0]
    if not negatives:
        # Positive-only has no word yet: `pride` needs a charter line, and a
        # task done well is deliberately not it.
        return Affect.NEUTRAL
    reduced, channel = most_negative((e.sign, label_of(e), e.channel) for e in negatives) or (
        Affect.NEUTRAL,
        Channel.COUNTER,
    )
    reduced = unbury_appraiser_neutral(reduced, channel, negatives)
    # A repetition may only upgrade the result, never bury a label that ranks
    # at least as high: the first version returned frustration before the
    # reduce ran and so hid a visible mistake behind it.
    if repeated_on_one_goal(negatives) and says_more(Affect.FRUSTRATION) >= says_more(reduced):
        return Affect.FRUSTRATION
    return reduced


def affect_of(a: Appraisal) -> Affect:
    """Derive the label. Pure, and the only place a label is ever decided.

    The most negative error decides: an appraisal answers what most needs
    acting on, and averaging a bad error with a good one would call a run
    that went wrong `neutral`. Ties go to the label that says more.
    """
    return affect_of_errors(a.errors)


def relabel(a: Appraisal) -> Appraisal:
    """The same appraisal with its label re-derived — after probes or the
    appraiser have changed its errors. A label belongs to the whole record
    (frustration is repetition), so it is never patched one error at a time."""
    return msgspec.structs.replace(a, label=affect_of(a))
