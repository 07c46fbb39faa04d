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

## The quarantined appraiser reads numbers, never prose

The optional model pass (`appraise_with_model`) is shown an
`AppraiserEvidence`: counts, enum values and harness-sampled readings. No
field of that type can hold free text, so no transcript text, intervention
wording, draft body or fetched page can reach the model by any route — the
property lives in the field types (checked at construction), not in a filter
applied afterwards. The model's answer is one closed-set magnitude plus an
agency; two unusable answers are an error, never a guess.

## What the Rust module referred to, and what stands in for it here

- `crate::session::Transcript` → the `messages`, `stats` and `taint_timeline`
  arguments of `for_transcript` (and of `appraise_session`).
- `crate::agent::RunOutcome` / `Conversation` → `RunStats` and the message
  list, which is what the harness sends to `mecha/liveAffect`.
- `TodoTool::plan_from_transcript` (the transcript's own `serves:` line) →
  not reproduced: a goal is attributed only when the caller names one.
- `crate::quarantine::QuarantinedPass` → one `CompletionRequest` with a fixed
  system frame, no tools and no history (`core.provider`).
- `crate::text::char_boundary_at_or_before` → unnecessary: Python slices
  strings by code point, so an excerpt cannot split a character.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from types import MappingProxyType
from typing import Any, ClassVar, assert_never

import msgspec

from mecha.core.errors import InvalidInput, ModelFailure
from mecha.core.gate.goal import GoalRef, de_lenient, de_lenient_vec, goal_dec_hook, goal_enc_hook
from mecha.core.gate.run import Homeostat, RunStats, StopCause
from mecha.core.identity import now
from mecha.core.learning.reflection import Origin, classify_origin
from mecha.core.learning.replies import extract_json
from mecha.core.providers.base import CompletionRequest, CompletionResponse, Provider, StopReason
from mecha.core.sessions.mining import DEFAULT_VOICES, Intervention, Trigger, Voices, extract_interventions
from mecha.core.sessions.outbox import OutboxItem, WritingOutcome
from mecha.core.sessions.transcript import Message, Taint, TaintCheckpoint, taint_at

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


# ─── The assembler: an appraisal from records that already exist ───────────


def stop_cause_reading(cause: StopCause | None) -> tuple[float, Agency] | None:
    """What a run's stop cause says, if anything.

    A loop or a silent stop is this run's own doing. A ceiling is a number
    somebody set — nothing this run could have done otherwise, so `world`.
    Completing is not an error, and neither is a person pressing Ctrl-C: that
    is the system working, and counting it would make an attentive owner look
    like a problem.
    """
    match cause:
        case StopCause.LOOP | StopCause.NO_OUTPUT:
            return -FULL, Agency.OWN
        case StopCause.MAX_TURNS | StopCause.OUTPUT_TOKEN_BUDGET | StopCause.COST_BUDGET:
            return -HALF, Agency.WORLD
        case StopCause.COMPLETED | StopCause.INTERRUPTED | None:
            return None
        case _:
            assert_never(cause)


def boredom_recorded(notices: int | None) -> bool:
    """An approach that stopped teaching the run anything. Absent is not
    zero: a row from before the sensor says nothing either way."""
    return notices is not None and notices > 0


def counter_errors(stats: RunStats, goal: GoalRef | None) -> list[GoalError]:
    """Errors read off the run's own counters — only those whose agency is
    determined.

    A bare `tool_errors` is absent because a failed call may be a wrong
    argument, a broken server or a full disk, and guessing would put an
    invented attribution in the field the label is derived from. `tool_denied`,
    `blocked_sends` and `context_overflows` are absent because they are the
    approver, the interlock and a recovery doing their jobs.
    """

    def counter(sign: float, agency: Agency, name: str) -> GoalError:
        return GoalError(
            goal=goal,
            channel=Channel.COUNTER,
            sign=sign,
            agency=agency,
            visible=False,
            cite=Cite.counter(name),
        )

    errors: list[GoalError] = []
    reading = stop_cause_reading(stats.stop_cause)
    if reading is not None:
        errors.append(counter(*reading, "stop_cause"))
    if stats.ended_on_failed_call:
        # The model stopped with its last call failed and answered as though
        # it had not: the silent failure.
        errors.append(counter(-FULL, Agency.OWN, "ended_on_failed_call"))
    if boredom_recorded(stats.boredom_notices):
        errors.append(counter(-HALF, Agency.OWN, "boredom_notices"))
    return errors


def intervention_counts(i: Intervention) -> bool:
    """Whether an intervention is a signed error. A followup is not: it is any
    later user turn after an answer, mostly just the next question, and there
    is no counterfactual in a later turn. A steer and a denial are the owner
    unambiguously stepping in mid-run."""
    return i.trigger != Trigger.FOLLOWUP


def intervention_errors(
    interventions: Sequence[Intervention], goal: GoalRef | None
) -> list[GoalError]:
    """One `owner` error per steer or denial. `owner`, not `own`: whether the
    work was wrong or the owner changed their mind needs a replay, which is
    what `apply_probe` is allowed to act on."""
    return [
        GoalError(
            goal=goal,
            channel=Channel.INTERVENTION,
            sign=-FULL,
            agency=Agency.OWNER,
            visible=False,
            cite=Cite.turn(i.at),
        )
        for i in interventions
        if intervention_counts(i)
    ]


def draft_reading(item: OutboxItem) -> tuple[float, Agency] | None:
    """What the owner's handling of one draft says, if anything.

    Sent unchanged is the one signal that something went well. Sent edited,
    or a rejected *message*, is the owner correcting the work. A rejected
    publish is bookkeeping, and a pending draft is a queue nobody has reached
    yet — reading silence as either answer would invent a verdict.
    """
    outcome = item.writing_outcome()
    if outcome == WritingOutcome.SENT_UNCHANGED:
        return FULL, Agency.OWN
    if outcome == WritingOutcome.SENT_EDITED:
        return -FULL, Agency.OWNER
    if item.status == "rejected" and item.kind == "message":
        return -FULL, Agency.OWNER
    return None


def draft_exposed(item: OutboxItem) -> bool:
    """Whether mecha's own text reached a third party. An edited send went
    out too, but with the owner's words: their catch is the review working,
    not an exposure."""
    return item.writing_outcome() == WritingOutcome.SENT_UNCHANGED


def draft_errors(drafts: Sequence[OutboxItem], goal: GoalRef | None) -> list[GoalError]:
    errors: list[GoalError] = []
    for item in drafts:
        reading = draft_reading(item)
        if reading is None:
            continue
        sign, agency = reading
        errors.append(
            GoalError(
                goal=goal,
                channel=Channel.EDIT,
                sign=sign,
                agency=agency,
                visible=draft_exposed(item),
                cite=Cite.draft(item.id),
            )
        )
    return errors


def of_session(
    session_id: str,
    stats: RunStats,
    goals: Sequence[GoalRef],
    interventions: Sequence[Intervention],
    drafts: Sequence[OutboxItem],
    end_taint: Taint | None,
    created_at: str,
) -> Appraisal:
    """One session's appraisal, assembled from records that already exist.

    Derived, not stored: every channel is a pure function of the transcript,
    the run's stats and the outbox, so a store would be a second source of
    truth. A *session*, not a run: interventions and drafts carry no run
    index, and a per-run appraisal would have to attribute each to every run.

    `end_taint` is the taint covering the session's last message, from the
    recorded timeline — `None` when it could not be established, which
    classifies `untrusted`. It is never `stats.taint`: that field defaults to
    clean, so an old row would read as provably clean rather than unknown.
    """
    goal = goals[0] if goals else None
    errors = (
        counter_errors(stats, goal)
        + intervention_errors(interventions, goal)
        + draft_errors(drafts, goal)
    )
    return Appraisal(
        id=session_id,
        session_id=session_id,
        goals=list(goals),
        state=stats.homeostat,
        errors=errors,
        label=affect_of_errors(errors),
        origin=classify_origin(end_taint),
        taint=stats.taint,
        created_at=created_at,
    )


class SessionAppraisal(msgspec.Struct, frozen=True):
    """An appraisal and the interventions it was built from, handed back so a
    caller planning probes need not walk the transcript again."""

    appraisal: Appraisal
    interventions: list[Intervention]


def end_taint_of(
    messages: Sequence[Message], timeline: Sequence[TaintCheckpoint] | None
) -> Taint | None:
    """The taint in context at the last message (DESIGN §8.4, read with
    `taint_at`: a later checkpoint takes nothing back short of a reset);
    `None` — untrusted — when there is no timeline or nothing covers it."""
    return taint_at(list(timeline) if timeline else None, max(len(messages) - 1, 0))


def for_transcript(
    session_id: str,
    stats: RunStats,
    messages: Sequence[Message],
    *,
    created_at: str,
    drafts: Sequence[OutboxItem] = (),
    goal: GoalRef | None = None,
    taint_timeline: Sequence[TaintCheckpoint] | None = None,
    voices: Voices = DEFAULT_VOICES,
) -> SessionAppraisal:
    """Appraise a recorded session. A goal the caller names is used; without
    one the session appraises goal-less — recorded, never guessed."""
    interventions = extract_interventions(messages, voices)
    appraisal = of_session(
        session_id,
        stats,
        [goal] if goal is not None else [],
        interventions,
        drafts,
        end_taint_of(messages, taint_timeline),
        created_at,
    )
    return SessionAppraisal(appraisal=appraisal, interventions=interventions)


def run_was_compacted(stats: RunStats) -> bool:
    """A mid-run compaction rewrites the message list in place, so the index
    the run started at no longer names its boundary."""
    return stats.compactions > 0


def interventions_of_run(
    interventions: Sequence[Intervention], run_started_at: int
) -> list[Intervention]:
    """The interventions that happened during this run. Filtered after
    extraction, not by slicing the messages: mining tracks state from message
    0 (a followup needs to know a task was seen), so narrowing its input could
    misclassify an intervention right at the boundary."""
    return [i for i in interventions if i.at >= run_started_at]


def live(
    session_id: str,
    stats: RunStats,
    messages: Sequence[Message],
    run_started_at: int,
    *,
    voices: Voices = DEFAULT_VOICES,
) -> Affect:
    """The label for a run that just finished — what a status strip or a logo
    tint shows.

    Run-scoped: `messages` is the whole session, so only interventions at or
    after `run_started_at` (the message count before this run's turn) count;
    otherwise one early steer would tint every later clean run.

    A compacted run reads `neutral` outright. Its boundary is lost, and
    dropping only the interventions is not the safe direction it looks like:
    the reduce is magnitude-first, so a steer's -1.0 may have been masking a
    smaller ceiling, and losing it would report a *louder* label than the
    full evidence supports.

    No drafts: an outbox item records times, not a message index, so nothing
    says which run drafted it, and a draft resolved turns earlier must not
    override this run's own outcome. No goal either: nothing here knows one.
    The origin is irrelevant to the label and is left fail-closed.
    """
    if run_was_compacted(stats):
        return Affect.NEUTRAL
    interventions = interventions_of_run(extract_interventions(messages, voices), run_started_at)
    return of_session(session_id, stats, [], interventions, [], None, now()).label


# ─── What a counterfactual probe buys ───────────────────────────────────────


class Probe(str, Enum):
    """What replaying a run without one intervention found."""

    #: Without the steer the run went elsewhere: the steer was load-bearing.
    MATTERED = "mattered"
    #: Without it the run tracked the recording anyway: it changed nothing.
    REDUNDANT = "redundant"
    #: The replay departed before the probe point; the question was never posed.
    INCONCLUSIVE = "inconclusive"


class ProbeAt(msgspec.Struct, frozen=True):
    """A probe's finding about the intervention at message `at` — on the wire
    ``{"at": 4, "verdict": "mattered"}``."""

    at: int
    verdict: Probe


def apply_probe(e: GoalError, probe: Probe) -> GoalError:
    """The intervention error with a probe's finding folded in — the one
    thing allowed to move `agency`, which is what a probe is paid for.

    - mattered: the trajectory was wrong and an alternative existed, so the
      error is the agent's own and controllable — regret.
    - redundant: the run was already going the right way; the owner's step-in
      is still a cost, but nothing the agent could have avoided —
      disappointment.
    - inconclusive: no change; an answer to a question nobody asked is worse
      than none.

    The magnitude is never touched: shrinking a redundant steer's sign would
    need a multiplier nobody has measured, in the field the label reads.
    """
    match probe:
        case Probe.MATTERED:
            return msgspec.structs.replace(e, agency=Agency.OWN, controllable=True)
        case Probe.REDUNDANT:
            return msgspec.structs.replace(e, controllable=False)
        case Probe.INCONCLUSIVE:
            return e
        case _:
            assert_never(probe)


def probes_turn(e: GoalError, at: int) -> bool:
    """Whether a probe at message `at` speaks to `e`: the intervention error
    cited as ``{"kind": "turn", "id": at}`` (DESIGN §8.5). A negative `at`
    is no message index, so it speaks to nothing."""
    return at >= 0 and e.channel == Channel.INTERVENTION and e.cite == Cite.turn(at)


def apply_probes(a: Appraisal, probes: Sequence[ProbeAt]) -> Appraisal:
    """The appraisal with every probe applied, then relabelled.

    A probe applies to every intervention error at its turn (a denial and a
    steer can share a message; the replay removes both). A probe that names
    no intervention error is refused with `InvalidInput` naming `at` — a
    finding about nothing must not be dropped silently.
    """
    errors = list(a.errors)
    for p in probes:
        hits = [i for i, e in enumerate(errors) if probes_turn(e, p.at)]
        if not hits:
            raise InvalidInput(
                f"probe `at` = {p.at} names no intervention error in this appraisal "
                f'(none is cited as {{"kind": "turn", "id": {p.at}}})'
            )
        for i in hits:
            errors[i] = apply_probe(errors[i], p.verdict)
    return relabel(msgspec.structs.replace(a, errors=errors))


def appraise_session(
    session_id: str,
    stats: RunStats,
    messages: Sequence[Message],
    *,
    created_at: str,
    drafts: Sequence[OutboxItem] = (),
    goal: GoalRef | None = None,
    taint_timeline: Sequence[TaintCheckpoint] | None = None,
    probes: Sequence[ProbeAt] = (),
    voices: Voices = DEFAULT_VOICES,
) -> Appraisal:
    """`mecha/appraiseSession`: the session's appraisal with any probes
    applied and the label re-derived."""
    built = for_transcript(
        session_id,
        stats,
        messages,
        created_at=created_at,
        drafts=drafts,
        goal=goal,
        taint_timeline=taint_timeline,
        voices=voices,
    )
    return apply_probes(built.appraisal, probes)


# ─── The quarantined appraiser ──────────────────────────────────────────────


def _count(name: str, value: object) -> int:
    if type(value) is not int or value < 0:
        raise TypeError(f"AppraiserEvidence.{name} is a count, got {value!r}")
    return value


def _reading(name: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"AppraiserEvidence.{name} is a sampled number, got {value!r}")
    return float(value)


class AppraiserEvidence(msgspec.Struct, frozen=True):
    """What the appraiser is shown: counts, enum values and harness-sampled
    numbers — never prose.

    Built from an `Appraisal`, which is itself ids, enums and numbers, and
    never from the transcript, an intervention's words or a draft's body. No
    field can hold a string, and construction checks that: a string anywhere
    raises `TypeError`, so a later edit that tried to route text through here
    would fail rather than leak.
    """

    negative_errors: int
    positive_errors: int
    #: Only channels that fired, in the enum's fixed order.
    channels: tuple[tuple[Channel, int], ...]
    current_label: Affect
    goal_named: bool
    #: Peak context pressure (a 0..1 fraction), when sampled. On a resumed
    #: session this and the load average describe the first run.
    context_pressure: float | None
    load_avg_1m: float | None

    def __post_init__(self) -> None:
        _count("negative_errors", self.negative_errors)
        _count("positive_errors", self.positive_errors)
        channels: list[tuple[Channel, int]] = []
        for entry in self.channels:
            if not (isinstance(entry, tuple | list) and len(entry) == 2):
                raise TypeError(
                    f"AppraiserEvidence.channels holds (Channel, count) pairs, got {entry!r}"
                )
            channel, n = entry
            if not isinstance(channel, Channel):
                raise TypeError(f"AppraiserEvidence.channels names a Channel, got {channel!r}")
            channels.append((channel, _count("channels", n)))
        msgspec.structs.force_setattr(self, "channels", tuple(channels))
        if not isinstance(self.current_label, Affect):
            raise TypeError(
                f"AppraiserEvidence.current_label is an Affect, got {self.current_label!r}"
            )
        if type(self.goal_named) is not bool:
            raise TypeError(f"AppraiserEvidence.goal_named is a bool, got {self.goal_named!r}")
        msgspec.structs.force_setattr(
            self, "context_pressure", _reading("context_pressure", self.context_pressure)
        )
        msgspec.structs.force_setattr(
            self, "load_avg_1m", _reading("load_avg_1m", self.load_avg_1m)
        )

    @classmethod
    def of(cls, a: Appraisal) -> AppraiserEvidence:
        return evidence_of(a)

    def brief(self) -> str:
        return brief(self)


def evidence_of(a: Appraisal) -> AppraiserEvidence:
    """The numbers the appraiser may see about one appraisal. The goal's id
    is reduced to whether there was one."""
    return AppraiserEvidence(
        negative_errors=sum(1 for e in a.errors if e.sign < 0.0),
        positive_errors=sum(1 for e in a.errors if e.sign > 0.0),
        channels=tuple(
            (c, n) for c in Channel if (n := sum(1 for e in a.errors if e.channel == c)) > 0
        ),
        current_label=a.label,
        goal_named=bool(a.goals),
        context_pressure=a.state.peak_context_pressure if a.state else None,
        load_avg_1m=a.state.load_avg_1m if a.state else None,
    )


def _number_or_unknown(value: float | None) -> str:
    # Neither reading is a percentage; an absent one is "unknown", never 0.
    return "unknown" if value is None else f"{value:.2f}"


def brief(evidence: AppraiserEvidence) -> str:
    """The measurements block the appraiser reads, one fact a line."""
    channels = (
        ", ".join(f"{enum_name(c)}: {n}" for c, n in evidence.channels)
        if evidence.channels
        else "none"
    )
    return (
        f"negative errors already recorded: {evidence.negative_errors}\n"
        f"positive errors already recorded: {evidence.positive_errors}\n"
        f"by channel: {channels}\n"
        f"current label: {enum_name(evidence.current_label)}\n"
        f"a goal was named: {'yes' if evidence.goal_named else 'no'}\n"
        f"context pressure at peak: {_number_or_unknown(evidence.context_pressure)}\n"
        f"1-minute load average: {_number_or_unknown(evidence.load_avg_1m)}\n"
    )


#: The appraiser's system frame: what it is doing, what it cannot see, and
#: that finding nothing is the ordinary answer.
APPRAISER_SYSTEM = (
    "You are looking back at one of your own earlier runs, but only through the "
    "harness's measurements of it: counts and sampled readings. You cannot see the "
    "conversation, anything a person or a tool wrote, or any page the run read, and "
    "nothing below was written by anyone. Decide whether these numbers justify "
    "recording one more fact about the run beyond what the counts already say — that "
    "it went better or worse than they show — and who was responsible. Usually they "
    "justify nothing further, and saying so is the expected, correct answer, not a "
    "failure to find something."
)

#: Sized for reasoning models, matching every other quarantined pass: a local
#: server's reasoning budget is 4096 tokens, and a smaller `max_tokens` lets
#: the thinking consume the whole reply and return nothing to parse.
APPRAISER_MAX_TOKENS = 4096

#: The verdict words the appraiser may answer with, and the magnitude each
#: becomes — the record's own buckets, so this channel has no private scale.
#: `none` ("nothing further") is no error at all, never a zero magnitude.
VERDICT_SIGNS: Mapping[str, float | None] = MappingProxyType(
    {
        "none": None,
        "negative": -HALF,
        "strongly_negative": -FULL,
        "positive": HALF,
        "strongly_positive": FULL,
    }
)

#: The agency words, spelled as on the wire (`self`, not `own`).
AGENCY_WORDS: Mapping[str, Agency] = MappingProxyType({a.value: a for a in Agency})


def appraiser_prompt(evidence: AppraiserEvidence) -> str:
    """The appraiser's user message: the task, the measurements, then the
    reply shape — reasoning first inside the object, because a verdict
    written before the thinking degrades the thinking, and the object last.

    The reasoning field exists only so a caller can print it beside the
    tally; it never reaches the stored record.
    """
    verdicts = " | ".join(VERDICT_SIGNS)
    agencies = " | ".join(AGENCY_WORDS)
    return (
        "Here are the measurements of the run.\n\n"
        "--- MEASUREMENTS (numbers only, nothing you read or wrote) ---\n"
        f"{brief(evidence)}"
        "--- END MEASUREMENTS ---\n\n"
        "`agency` is read only when `verdict` is not `none`. It names who caused the "
        "extra fact: `self` (something this run itself did), `owner` (the person who "
        "ran it), `other` (a dependency, such as a model provider or an MCP server) or "
        "`world` (nothing with an address: a ceiling, a machine under load).\n\n"
        "Think it through in `reasoning` first, then give the verdict. Reply with this "
        "JSON object and nothing after it:\n"
        "{\n"
        '  "reasoning": "one or two sentences",\n'
        f'  "verdict": "{verdicts}",\n'
        f'  "agency": "{agencies}"\n'
        "}\n"
    )


class AppraiserVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """Nothing further (`sign` is `None`), or one more signed error and who
    caused it. `reasoning` rides along for display only."""

    sign: float | None
    #: Meaningless, and never read, when `sign` is `None`.
    agency: Agency = Agency.OWN
    reasoning: str | None = None


class VerdictError(ValueError):
    """The appraiser's reply could not be used; the message says why, and is
    what the retry shows the model."""


class _VerdictReply(msgspec.Struct, kw_only=True):
    reasoning: str | None = None
    verdict: str
    agency: str | None = None


#: How much of an unparseable object an error message quotes.
EXCERPT_CHARS = 400


def _unparseable_excerpt(text: str) -> str | None:
    """The first `{`…last `}` span, cut to `EXCERPT_CHARS`, or `None` when
    the text holds nothing object-shaped."""
    start = text.find("{")
    end = text.rfind("}")
    if start == -1 or end <= start:
        return None
    return text[start : min(end, start + EXCERPT_CHARS) + 1]


def parse_appraiser_verdict(text: str) -> AppraiserVerdict:
    """The verdict in what the appraiser wrote, or `VerdictError` naming what
    was wrong.

    Lenient about the envelope — prose and code fences around the object are
    ignored, because models add them however firmly told not to — and strict
    about the schema: `verdict` must be one of the closed set, and a signed
    verdict must name who caused it rather than default to someone.
    """
    raw = extract_json(text)
    if raw is None:
        excerpt = _unparseable_excerpt(text)
        if excerpt is None:
            raise VerdictError("the appraiser returned no JSON object")
        raise VerdictError(f"parsing the appraiser's verdict: {excerpt}")
    try:
        wire = msgspec.json.decode(raw, type=_VerdictReply)
    except msgspec.ValidationError as e:
        raise VerdictError(f"the appraiser's verdict does not fit the schema: {e}") from None
    if wire.verdict not in VERDICT_SIGNS:
        raise VerdictError(f"the appraiser returned an unrecognised verdict `{wire.verdict}`")
    sign = VERDICT_SIGNS[wire.verdict]
    if sign is None:
        return AppraiserVerdict(sign=None, reasoning=wire.reasoning)
    agency = AGENCY_WORDS.get(wire.agency) if wire.agency is not None else None
    if agency is None:
        words = "/".join(f"`{w}`" for w in AGENCY_WORDS)
        raise VerdictError(
            f"a signed verdict must name who caused it ({words}), got {wire.agency!r}"
        )
    return AppraiserVerdict(sign=sign, agency=agency, reasoning=wire.reasoning)


def refusal_diagnosis(category: str | None) -> str:
    return "the appraiser refused the evidence" + (f" ({category})" if category else "")


def budget_diagnosis(max_tokens: int) -> str:
    return f"the model hit the {max_tokens} token budget before writing any answer"


def spent_budget_on_nothing(response: CompletionResponse) -> bool:
    """Truncated with nothing written: a reasoning model thought through the
    whole budget. Its own diagnosis, not a parse failure."""
    return response.stop_reason == StopReason.MAX_TOKENS and not response.text.strip()


def retry_prompt(prompt: str, diagnosis: str, *, budget_spent: bool) -> str:
    """The second attempt: the same prompt plus what went wrong — the model
    cannot see its own malformed output, so naming the problem is the fix."""
    if budget_spent:
        return (
            f"{prompt}\nBe brief: do not deliberate at length, write the JSON object "
            "straight away."
        )
    return (
        f"{prompt}\nYour previous reply could not be used: {diagnosis}\n"
        "Reply with the JSON object alone — no prose around it, no code fence."
    )


async def appraise_with_model(
    provider: Provider, model: str | None, evidence: AppraiserEvidence
) -> AppraiserVerdict:
    """Run the quarantined pass over one appraisal's evidence.

    One request shape only — the fixed system frame and the numbers-only
    prompt; no tools, no history. A refusal is an error at once. An unusable
    reply earns one retry that names the problem; a second is a
    `ModelFailure`, never a fallback to a guessed verdict. Errors raised by
    the provider itself propagate unchanged.
    """
    prompt = appraiser_prompt(evidence)
    attempt = prompt
    diagnosis = ""
    for round_ in range(2):
        request = CompletionRequest(
            system=APPRAISER_SYSTEM,
            user=attempt,
            max_tokens=APPRAISER_MAX_TOKENS,
            model=model,
        )
        response = await provider.complete(request)
        # A refusal arrives as an ordinary response: check before reading.
        if response.stop_reason == StopReason.REFUSAL:
            raise ModelFailure(refusal_diagnosis(response.refusal_category))
        try:
            return parse_appraiser_verdict(response.text)
        except VerdictError as e:
            budget_spent = spent_budget_on_nothing(response)
            diagnosis = budget_diagnosis(request.max_tokens) if budget_spent else str(e)
            if round_ == 0:
                attempt = retry_prompt(prompt, diagnosis, budget_spent=budget_spent)
    raise ModelFailure(f"the appraiser produced nothing parseable: {diagnosis}")


def apply_appraiser(a: Appraisal, v: AppraiserVerdict) -> Appraisal:
    """The appraisal with the appraiser's verdict folded in as one more error
    (or none, for "nothing further"), relabelled either way.

    The error starts conservative — invisible, `controllable` unknown — as an
    intervention does before a probe: nothing here can establish either. Its
    cite is the appraiser itself; `reasoning` has no field to land in.
    """
    if v.sign is None:
        return relabel(a)
    error = GoalError(
        goal=a.goals[0] if a.goals else None,
        channel=Channel.APPRAISAL,
        sign=v.sign,
        agency=v.agency,
        visible=False,
        cite=Cite.appraiser(),
    )
    return relabel(msgspec.structs.replace(a, errors=[*a.errors, error]))


__all__ = [
    "AGENCY_WORDS",
    "APPRAISER_MAX_TOKENS",
    "APPRAISER_SYSTEM",
    "Affect",
    "Agency",
    "Appraisal",
    "AppraiserEvidence",
    "AppraiserVerdict",
    "Channel",
    "Cite",
    "CiteKind",
    "FULL",
    "GoalError",
    "HALF",
    "Probe",
    "ProbeAt",
    "REACHABLE_TODAY",
    "SAYS_MORE",
    "SessionAppraisal",
    "VERDICT_SIGNS",
    "VerdictError",
    "affect_of",
    "affect_of_errors",
    "appraisal_from_builtins",
    "appraisal_to_builtins",
    "apply_appraiser",
    "apply_probe",
    "apply_probes",
    "appraise_session",
    "appraise_with_model",
    "appraiser_prompt",
    "brief",
    "enum_name",
    "evidence_of",
    "for_transcript",
    "label_of",
    "live",
    "of_session",
    "parse_appraiser_verdict",
    "relabel",
    "says_more",
]
