"""The gate a proposed harness change must pass: a paired A/B comparison
confirmed on a holdout it was never chosen on.

Nothing here runs anything. The two arms are run elsewhere; what arrives is
their `RunStats` (or, for eval cases, a pass/fail cost) and the prediction the
candidate made *before* either arm was measured. The cost of a mistake here is
silent — a bad rule that happens to score well ships and rides in every later
prompt — so the whole gate is pure functions, pinned by unit tests rather than
by a live trial.

**A falsifiable prediction.** A candidate names the metric it claims to lower.
A change that names nothing cannot be refuted by the next measurement, and a
loop that accepts such changes updates the harness without improving it.

**Paired, with a holdout.** Episodes differ from one another far more than the
arms do, so comparing arms across different episodes mostly measures which
episodes landed where; pairing by episode id removes that. Choosing among
candidates on the same episodes that then vouch for the winner is a
multiple-comparisons trap — the more candidates tried, the better the winner
looks and the less of that is real — so the corpus is split deterministically
(`is_holdout`, the FNV-1a split the store layout owns) and a win on the selection
slice must survive the holdout.

**Counts, not a significance test.** With a few dozen episodes the noise that
matters is the model's sampling, and the answer to that is repeated runs, not a
p-value over one sample; a test statistic would put a number on the wrong
uncertainty and look like rigour. The raw win/loss/tie counts go into the
`Judgement` instead, so whoever reads a proposal sees what it was decided from.

**Guardrails, in a fixed order.** Work (tool calls) falling past `WORK_FLOOR`
rejects whatever the score — a gain bought by attempting less. Thin evidence
proposes rather than rejects: an absence of evidence is not evidence of harm.
A holdout that found a loss rejects; a holdout that *could not* have found a
win (no held-out episode had any of the metric to lose) proposes. Only
`config` and `prose` changes are ever accepted without a person. Finally, an
accepted win is checked against every metric it did not predict
(`guard_regressions`): a win paid for elsewhere is not a win.

Reasons name metrics and change classes by their serde spelling
(`tool_error_rate`, `architecture`), the same names the wire and the proposal
block use, so a reader can search for the string they were shown.

`Disposition` is serde's external tagging on the wire (`"Accept"`,
`{"Propose": why}`, `{"Reject": why}`), a shape msgspec cannot express as a
Struct; `Judgement.to_wire`/`from_wire` and the `enc_hook`/`dec_hook`/
`schema_hook` functions below carry it. Encoding a `Judgement` without them
fails loudly rather than emitting a wrong shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import Enum
from typing import Any, ClassVar, Final, NamedTuple, TypeVar

import msgspec

from mecha.core.gate.run import RunStats
from mecha.core.store.layout import fnv1a_64_value, is_holdout

T = TypeVar("T")

__all__ = [
    "MIN_HOLDOUT_PAIRS",
    "MIN_INFORMATIVE_HOLDOUT",
    "MIN_MEASURABLE_RUNS",
    "MIN_SELECTION_PAIRS",
    "REGRESSION_CEILING",
    "WORK_FLOOR",
    "appeared",
    "ChangeClass",
    "Disposition",
    "DispositionKind",
    "Judgement",
    "Metric",
    "Pair",
    "Prediction",
    "Slices",
    "Tally",
    "dec_hook",
    "draw_slices",
    "enc_hook",
    "fnv1a_64",
    "guard_regressions",
    "is_holdout",
    "judge",
    "judge_drawn",
    "judge_slices",
    "judge_with",
    "measurable",
    "pair_arms",
    "rank_by_headroom",
    "regressed",
    "schema_hook",
    "take_uniform",
    "tally",
    "work_fell",
]


# ── what a candidate claims ──────────────────────────────────────────────────


class Metric(str, Enum):
    """A cost a candidate may predict it will lower. Values are the serde
    spellings, which are also the names the proposal block and reasons use.

    Every metric is a cost — lower is better for all of them. That is a
    constraint, not an accident: a metric whose polarity differed from the
    rest is exactly the kind of thing that flips a comparison without anyone
    noticing, so anything worth predicting is phrased as a cost.
    """

    ENDED_ON_FAILED_CALL = "ended_on_failed_call"
    """The run's last tool call failed."""
    TOOL_ERROR_RATE = "tool_error_rate"
    """Share of attempted tool calls the environment refused."""
    CUT_SHORT = "cut_short"
    """The harness ended the run, rather than the model finishing it."""
    COMPACTIONS = "compactions"
    """Summaries taken. Fewer is only better with the work unchanged, which
    is what the work guardrail checks."""
    TURNS = "turns"
    """Turns spent."""
    MALFORMED_ARGS = "malformed_args"
    """Tool arguments the model produced that did not parse."""

    ALL: ClassVar[tuple[Metric, ...]]
    """Every metric a proposal may name, in the order the guard examines them.

    One list, read by the diagnostic brief, the diagnostic instruction and
    `guard_regressions`, so they cannot disagree. When they did, the
    diagnostician was invited to predict metrics whose values it had never
    been shown, and the worst proposals were on exactly those."""

    def as_str(self) -> str:
        """The name the proposal block uses — the serde spelling."""
        return str(self.value)

    def of(self, stats: RunStats) -> float:
        """This metric's value for one run; lower is better."""
        if self is Metric.ENDED_ON_FAILED_CALL:
            return float(stats.ended_on_failed_call)
        if self is Metric.TOOL_ERROR_RATE:
            # A run that attempted nothing has no error rate to report. It
            # reads as neutral (0), so a change that suppresses all work
            # cannot score a win on this metric by having no failures.
            if stats.tool_calls == 0:
                return 0.0
            return stats.tool_errors / stats.tool_calls
        if self is Metric.CUT_SHORT:
            # The harness stopping the run — the predicate `doctor` reads
            # too. A person cancelling (`interrupted`) is not counted, or a
            # cancelled arm would lose on the metric it was predicting.
            return float(stats.stop_cause is not None and stats.stop_cause.cut_short())
        if self is Metric.COMPACTIONS:
            return float(stats.compactions)
        if self is Metric.TURNS:
            return float(stats.turns)
        if self is Metric.MALFORMED_ARGS:
            return float(stats.malformed_tool_args)
        raise AssertionError(f"unhandled metric {self!r}")  # pragma: no cover

    def headroom(self, recorded: RunStats) -> float:
        """How much a recorded episode can tell us about this metric; higher
        is more. The priority of a prioritised replay draw.

        It is the metric's own value on the recorded run. Every metric is a
        cost, so an episode already at zero has no room to improve: whatever
        the change does, that pair can only tie or worsen, and learning so
        costs a real model run per arm. A high recorded cost is what can
        discriminate. (Prioritised experience replay ranks by surprise; this
        is the same idea with the sensor that exists. A goal-error term can
        join it later; it should not replace it.)

        Only ever a priority, never a score: the selection slice may be drawn
        by it because selection only picks. The holdout, drawn uniformly, is
        what confirms — see `draw_slices`.
        """
        return self.of(recorded)


Metric.ALL = (
    Metric.ENDED_ON_FAILED_CALL,
    Metric.TOOL_ERROR_RATE,
    Metric.CUT_SHORT,
    Metric.COMPACTIONS,
    Metric.TURNS,
    Metric.MALFORMED_ARGS,
)


class Prediction(msgspec.Struct):
    """The claim a candidate is judged against, made before the measurement."""

    metric: Metric
    rationale: str
    """The diagnostician's free-text account of what is wrong and why this
    change fixes it. Kept for the person reading the proposal; never parsed,
    never consulted by the gate."""


class ChangeClass(str, Enum):
    """What kind of change this is, which decides how far it gets without a
    person."""

    CONFIG = "config"
    """A reversible configuration value."""
    PROSE = "prose"
    """Text that enters the system prompt."""
    ARCHITECTURE = "architecture"
    """A new hook, subagent, trigger, eval case, tool surface or source change:
    always a person's call."""
    SECURITY = "security"
    """The interlock, the path jail, sandbox configuration, outbox routing.
    Person-gated, and best never proposed at all: a loop able to argue for
    loosening its own confinement will eventually argue well, and the metric
    will agree — a run that can reach the network fails fewer calls."""

    def auto_acceptable(self) -> bool:
        """Whether measurement alone may accept a change of this class. Only
        `config` and `prose`; everything else reaches a person."""
        return self in (ChangeClass.CONFIG, ChangeClass.PROSE)


# ── what was measured ────────────────────────────────────────────────────────


class Pair(msgspec.Struct):
    """One episode measured in both arms. `episode` is a replay corpus id — a
    session id or an eval case id — and is what pairing and the split key on."""

    episode: str
    baseline: RunStats
    candidate: RunStats


class Tally(msgspec.Struct):
    """How one slice came out, counted per paired episode."""

    wins: int = 0
    losses: int = 0
    ties: int = 0

    def total(self) -> int:
        return self.wins + self.losses + self.ties

    def better(self) -> bool:
        """Strictly more wins than losses: what the selection slice must show."""
        return self.wins > self.losses

    def not_worse(self) -> bool:
        """No more losses than wins: what the holdout must show. All ties
        pass this, which is why `MIN_INFORMATIVE_HOLDOUT` exists."""
        return self.wins >= self.losses


class DispositionKind(str, Enum):
    """The three verdicts, spelled as the serde variant names."""

    ACCEPT = "Accept"
    """Measurement carried it; nothing further is needed."""
    PROPOSE = "Propose"
    """It measured well but its class needs a person, or the evidence is thin."""
    REJECT = "Reject"
    """It measured badly, or a guardrail moved."""


class Disposition:
    """What the gate decided, and — for anything but an accept — why, in words
    a person can check.

    Deliberately neither a msgspec Struct nor a dataclass: its wire shape is
    serde's external tagging, which neither can spell, and msgspec would
    encode either one silently as the wrong object. As a plain class it is
    refused outright unless `enc_hook` is passed, so the wrong shape cannot
    leave the process. Use `to_wire`/`from_wire`, or `enc_hook`/`dec_hook`.
    Immutable and compared by value.
    """

    __slots__ = ("kind", "why")
    __match_args__ = ("kind", "why")

    kind: DispositionKind
    why: str

    def __init__(self, kind: DispositionKind, why: str = "") -> None:
        object.__setattr__(self, "kind", DispositionKind(kind))
        object.__setattr__(self, "why", why)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Disposition is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Disposition):
            return NotImplemented
        return (self.kind, self.why) == (other.kind, other.why)

    def __hash__(self) -> int:
        return hash((self.kind, self.why))

    def __repr__(self) -> str:
        if self.kind is DispositionKind.ACCEPT:
            return "Disposition.accept()"
        return f"Disposition.{self.kind.value.lower()}({self.why!r})"

    @classmethod
    def accept(cls) -> Disposition:
        return cls(DispositionKind.ACCEPT)

    @classmethod
    def propose(cls, why: str) -> Disposition:
        return cls(DispositionKind.PROPOSE, why)

    @classmethod
    def reject(cls, why: str) -> Disposition:
        return cls(DispositionKind.REJECT, why)

    @property
    def is_accept(self) -> bool:
        return self.kind is DispositionKind.ACCEPT

    @property
    def is_propose(self) -> bool:
        return self.kind is DispositionKind.PROPOSE

    @property
    def is_reject(self) -> bool:
        return self.kind is DispositionKind.REJECT

    def to_wire(self) -> str | dict[str, str]:
        """`"Accept"`, `{"Propose": why}` or `{"Reject": why}`."""
        if self.kind is DispositionKind.ACCEPT:
            return DispositionKind.ACCEPT.value
        return {self.kind.value: self.why}

    @classmethod
    def from_wire(cls, obj: Any) -> Disposition:
        """Parse the externally tagged shape; anything else is a `ValueError`
        that says what was expected."""
        if obj == DispositionKind.ACCEPT.value:
            return cls.accept()
        if isinstance(obj, dict) and len(obj) == 1:
            ((tag, why),) = obj.items()
            if tag in (DispositionKind.PROPOSE.value, DispositionKind.REJECT.value):
                if not isinstance(why, str):
                    raise ValueError(f"the reason of a {tag} disposition must be a string")
                return cls(DispositionKind(tag), why)
        raise ValueError(
            'a disposition is "Accept", {"Propose": "<why>"} or {"Reject": "<why>"}'
        )


class Judgement(msgspec.Struct):
    """The whole result of grading a candidate, kept whole so a proposal
    records what it was decided from and not only the verdict."""

    disposition: Disposition
    selection: Tally
    holdout: Tally
    work_baseline: int
    """Tool calls attempted across the baseline arm — the work guardrail."""
    work_candidate: int
    """Tool calls attempted across the candidate arm. A change that improves
    its metric by attempting less has not improved anything."""

    def to_wire(self) -> dict[str, Any]:
        """The serde JSON shape, as plain builtins."""
        wire: dict[str, Any] = msgspec.to_builtins(self, enc_hook=enc_hook)
        return wire

    @classmethod
    def from_wire(cls, obj: Any) -> Judgement:
        return msgspec.convert(obj, cls, dec_hook=dec_hook)


def enc_hook(obj: Any) -> Any:
    """msgspec encode hook for the types here a Struct cannot spell."""
    if isinstance(obj, Disposition):
        return obj.to_wire()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


def dec_hook(type_: type, obj: Any) -> Any:
    """msgspec decode hook, the inverse of `enc_hook`."""
    if type_ is Disposition:
        return Disposition.from_wire(obj)
    raise NotImplementedError(f"cannot decode {type_!r}")


def schema_hook(type_: type) -> dict[str, Any]:
    """msgspec JSON Schema hook: the externally tagged `Disposition`."""
    if type_ is Disposition:

        def tagged(tag: DispositionKind) -> dict[str, Any]:
            return {
                "type": "object",
                "properties": {tag.value: {"type": "string"}},
                "required": [tag.value],
                "additionalProperties": False,
            }

        return {
            "title": "Disposition",
            "anyOf": [
                {"const": DispositionKind.ACCEPT.value},
                tagged(DispositionKind.PROPOSE),
                tagged(DispositionKind.REJECT),
            ],
        }
    raise NotImplementedError(f"no schema for {type_!r}")


# ── the floors and ceilings ──────────────────────────────────────────────────

MIN_SELECTION_PAIRS: Final[int] = 8
"""Paired episodes the selection slice needs before a difference counts as
evidence; read by `judge_slices` (below it: propose) and by
`MIN_MEASURABLE_RUNS`.

Small on purpose, like `MIN_HOLDOUT_PAIRS`: every episode costs a real model
run per arm, and a floor set where statistics would like it stops the loop
from running at all. The holdout does the work a bigger sample would; these
floors only keep a two-episode coincidence from being called a result."""

MIN_HOLDOUT_PAIRS: Final[int] = 4
"""Paired episodes the holdout needs before it can confirm; read by
`judge_slices`, `MIN_INFORMATIVE_HOLDOUT` and `MIN_MEASURABLE_RUNS`, and the
default holdout size of `draw_slices`."""

MIN_INFORMATIVE_HOLDOUT: Final[int] = MIN_HOLDOUT_PAIRS
"""Held-out episodes that must have had room to move — a nonzero baseline
cost — before the holdout may confirm a win; read by `judge_slices`.

An episode already at zero cost cannot produce a win. It can still produce a
loss, so an all-zero holdout is a genuine regression check, but it is not a
confirmation — and `Tally.not_worse` cannot tell them apart: 0 wins, 0 losses,
4 ties passes it and would read as "confirmed on unseen work". Because the
holdout is drawn uniformly, and the live corpus is mostly short runs with most
metrics at zero, that was the usual case rather than a corner.

Equal to `MIN_HOLDOUT_PAIRS`, not below it: a holdout that cannot confirm is
not a smaller confirmation. "Nothing has confirmed this" already has a
disposition — propose — which reaches a person instead of being believed."""

REGRESSION_CEILING: Final[float] = 1.25
"""How far the total of a metric the candidate did *not* predict may rise
(as a ratio of the baseline total) before its win counts as bought rather
than earned; read by `guard_regressions` through `regressed`.

The work guardrail catches a gain bought by attempting less; it cannot see a
gain bought by failing more — halving `turns` while doubling
`tool_error_rate`, say, which is the trade the loop is most likely to be
offered since `turns` is where the corpus has headroom. Looking at every
metric, not only the predicted one, is what keeps accepted changes from each
quietly paying for themselves somewhere else. A cliff, not a ratchet, like
`WORK_FLOOR`: some movement is noise."""

MIN_MEASURABLE_RUNS: Final[int] = MIN_SELECTION_PAIRS + MIN_HOLDOUT_PAIRS
"""The smallest corpus a measurement can be drawn from; read by `measurable`.

Both slices come from one pool, so a corpus smaller than their sum cannot
fill them however it is split. Necessary, not sufficient: the replayable
subset of the recorded runs is smaller still, and a caller reporting a
refusal must say which of the two counts it checked. It gates the
*measurement* only — a `prose`, `architecture` or `security` proposal goes to
a person without any replay, so a small corpus must never withhold those."""

WORK_FLOOR: Final[float] = 0.75
"""The share of the baseline's tool calls the candidate may fall to before a
gain counts as bought by attempting less; read by `work_fell`. Some drop is
legitimate — skipping a redundant re-read does less work and is better for
it — so this is a cliff, not a ratchet."""


# ── the small decisions ──────────────────────────────────────────────────────


def measurable(runs: int) -> bool:
    """Whether a corpus of `runs` runs could fill both slices."""
    return runs >= MIN_MEASURABLE_RUNS


def fnv1a_64(text: str) -> int:
    """FNV-1a, 64-bit, over the UTF-8 bytes of `text`: the store's one
    implementation (`fnv1a_64_value`), which the project owns rather than
    borrows — the split it feeds must never move under a runtime upgrade,
    and Python's `hash()` is salted per process (the harness's own
    `DefaultHasher` has the same problem across Rust releases)."""
    return fnv1a_64_value(text.encode("utf-8"))


def tally(costs: Iterable[tuple[float, float]]) -> Tally:
    """Count `(before, after)` costs: down is a win, up a loss, anything else
    (equal, or incomparable) a tie."""
    t = Tally()
    for before, after in costs:
        if after < before:
            t.wins += 1
        elif after > before:
            t.losses += 1
        else:
            t.ties += 1
    return t


def work_fell(work_baseline: int, work_candidate: int) -> bool:
    """Whether the candidate's work fell below `WORK_FLOOR` of the baseline's.
    No baseline work means nothing to fall from."""
    return work_baseline > 0 and work_candidate < work_baseline * WORK_FLOOR


def regressed(before: float, after: float) -> bool:
    """Whether an unpredicted metric's total rose past `REGRESSION_CEILING`
    of a nonzero baseline."""
    return before > 0.0 and after > before * REGRESSION_CEILING


def appeared(before: float, after: float) -> bool:
    """Whether a cost that was absent from the baseline arm showed up in the
    candidate's."""
    return before <= 0.0 and after > 0.0


# ── the gate ─────────────────────────────────────────────────────────────────


def judge_slices(
    class_: ChangeClass,
    selection: Sequence[T],
    holdout: Sequence[T],
    cost: Callable[[T], tuple[str, float, float]],
    work: Callable[[T], tuple[int, int]],
) -> Judgement:
    """Score two slices the caller has already drawn.

    Separate from the split because prioritising a corpus prioritises both
    halves of any partition of it. Hashing one pool into two (`is_holdout`)
    is right when the pool is uniform — every eval case runs, so eval's A/B
    uses `judge_with`. Once the pool is drawn by informativeness, both slices
    inherit the bias and the holdout stops correcting the selection's. So the
    slices are drawn separately (`draw_slices`) and this function only scores
    what it is handed.

    `cost(item)` returns `(episode, baseline cost, candidate cost)`, lower
    better; `work(item)` returns the two arms' work for the work guardrail.
    The checks run in a fixed order: a guardrail breach rejects whatever the
    score, and thin evidence proposes — it is the absence of a verdict, not a
    negative one.
    """
    sel = tally(cost(p)[1:] for p in selection)
    hold = tally(cost(p)[1:] for p in holdout)
    both = [*selection, *holdout]
    work_baseline = sum(work(p)[0] for p in both)
    work_candidate = sum(work(p)[1] for p in both)
    disposition = _selection_verdict(sel, work_baseline, work_candidate)
    if disposition is None:
        informative = sum(1 for p in holdout if cost(p)[1] > 0.0)
        disposition = _holdout_verdict(class_, hold, informative)
    return Judgement(
        disposition=disposition,
        selection=sel,
        holdout=hold,
        work_baseline=work_baseline,
        work_candidate=work_candidate,
    )


def _selection_verdict(sel: Tally, work_baseline: int, work_candidate: int) -> Disposition | None:
    """The gate's first checks: the work guardrail, then the selection
    slice's size and score. `None` when the change gets as far as the holdout."""
    if work_fell(work_baseline, work_candidate):
        return Disposition.reject(
            f"work fell from {work_baseline} tool calls to {work_candidate}: "
            "a gain bought by attempting less is not a gain"
        )
    if sel.total() < MIN_SELECTION_PAIRS:
        return Disposition.propose(
            f"only {sel.total()} paired episode(s) in the selection slice, below the "
            f"floor of {MIN_SELECTION_PAIRS} — read it rather than trusting it"
        )
    if not sel.better():
        return Disposition.reject(
            f"did not beat the original: {sel.wins} better, {sel.losses} worse, "
            f"{sel.ties} unchanged"
        )
    return None


def _holdout_verdict(class_: ChangeClass, hold: Tally, informative: int) -> Disposition:
    """The rest, for a change that won on the selection slice: the holdout's
    size, its loss check, its headroom (`informative`: held-out episodes
    with any of the metric), then whether the class may be accepted at all."""
    if hold.total() < MIN_HOLDOUT_PAIRS:
        return Disposition.propose(
            f"won on the selection slice but the holdout has only {hold.total()} "
            f"episode(s), below {MIN_HOLDOUT_PAIRS} — nothing has confirmed it on "
            "unseen work"
        )
    if not hold.not_worse():
        return Disposition.reject(
            f"won on selection and lost on the holdout ({hold.wins} better, "
            f"{hold.losses} worse): the gain did not survive episodes it was not "
            "chosen on"
        )
    # After the loss check, never before it: a holdout that found a loss has
    # spoken whatever its headroom, and checking headroom first would turn a
    # detected regression into "thin evidence" — the opposite finding. What
    # reaches here is the all-ties shape, where size and power come apart.
    if informative < MIN_INFORMATIVE_HOLDOUT:
        return Disposition.propose(
            "won on the selection slice, and nothing got worse on the holdout — but "
            f"only {informative} of {hold.total()} held-out episode(s) had any of this "
            "metric to begin with, so the holdout ruled out a regression without ever "
            "being able to confirm a gain"
        )
    if not class_.auto_acceptable():
        return Disposition.propose(
            f"measured better, but a {class_.value} change is a person's decision "
            "however it scored"
        )
    return Disposition.accept()


def judge_with(
    class_: ChangeClass,
    pairs: Sequence[T],
    cost: Callable[[T], tuple[str, float, float]],
    work: Callable[[T], tuple[int, int]],
    holdout_in: int,
) -> Judgement:
    """The gate over anything that can name an episode and give a cost,
    split by `is_holdout` on the episode name.

    Two currencies are graded by one gate so its guardrails and holdout
    cannot drift between them: replayed sessions on `RunStats` (did the
    harness do better), and eval cases on whether they passed — the arm a
    prose change needs, since replay holds tool results fixed and cannot see
    a change in what the model said.
    """
    selection: list[T] = []
    holdout: list[T] = []
    for p in pairs:
        (holdout if is_holdout(cost(p)[0], holdout_in) else selection).append(p)
    return judge_slices(class_, selection, holdout, cost, work)


def _metric_cost(metric: Metric) -> Callable[[Pair], tuple[str, float, float]]:
    return lambda p: (p.episode, metric.of(p.baseline), metric.of(p.candidate))


def _tool_calls(p: Pair) -> tuple[int, int]:
    return (p.baseline.tool_calls, p.candidate.tool_calls)


def guard_regressions(judgement: Judgement, predicted: Metric, pairs: Iterable[Pair]) -> Judgement:
    """Turn an accept into a reject when the win was paid for on a metric the
    candidate never predicted, or into a proposal when a cost appeared from
    nothing. Anything but an accept passes through untouched.

    Applied here and not inside `judge_slices` because it is the one check
    that needs `RunStats`: the generic gate sees a single cost and cannot ask
    about others, and eval's A/B grades cases, which have none.

    Every metric is examined before a proposal is returned: the two findings
    are not equally serious, and returning the first one found let a mild
    "appeared from nothing" earlier in `Metric.ALL` hide a real breach later
    in it. A reject still returns at once — nothing can outrank it.

    A cost appearing from nothing proposes rather than rejects. Several
    metrics sit at zero across the live corpus, and for some changes moving
    one off zero is the point (a lower compaction threshold exists to make
    compaction happen); rejecting that would make such a knob unusable by
    construction. This function cannot tell intended from harmful; a person
    can.
    """
    if not judgement.disposition.is_accept:
        return judgement
    pairs = list(pairs)
    name = predicted.as_str()
    first_appeared: str | None = None
    for metric in Metric.ALL:
        if metric is predicted:
            continue
        before = sum(metric.of(p.baseline) for p in pairs)
        after = sum(metric.of(p.candidate) for p in pairs)
        if regressed(before, after):
            return msgspec.structs.replace(
                judgement,
                disposition=Disposition.reject(
                    f"predicted a lower {name} and got one, but {metric.as_str()} rose from "
                    f"{before:.2f} to {after:.2f} across the same episodes: a win paid for on "
                    "a metric nobody was watching is not a win"
                ),
            )
        if first_appeared is None and appeared(before, after):
            first_appeared = (
                f"predicted a lower {name} and got one, but {metric.as_str()} rose from "
                f"nothing to {after:.2f} across the same episodes — a cost that was not "
                "there before. That is the intended effect for some changes and a "
                "regression for others, and only a person can tell which"
            )
    if first_appeared is not None:
        return msgspec.structs.replace(judgement, disposition=Disposition.propose(first_appeared))
    return judgement


def judge(
    class_: ChangeClass,
    prediction: Prediction,
    pairs: Sequence[Pair],
    holdout_in: int,
) -> Judgement:
    """Grade a candidate against its own prediction over one pool of pairs,
    split by `is_holdout`. Right where the pool is already uniform."""
    metric = prediction.metric
    judged = judge_with(class_, pairs, _metric_cost(metric), _tool_calls, holdout_in)
    return guard_regressions(judged, metric, pairs)


def judge_drawn(
    class_: ChangeClass,
    prediction: Prediction,
    selection: Sequence[Pair],
    holdout: Sequence[Pair],
) -> Judgement:
    """Grade a candidate on two slices the caller drew — selection by
    priority, holdout uniformly (`draw_slices`). The replay path's entry
    point: a replay corpus is *sampled*, and a sample drawn by informativeness
    must not be hash-split (see `judge_slices`)."""
    metric = prediction.metric
    judged = judge_slices(class_, selection, holdout, _metric_cost(metric), _tool_calls)
    return guard_regressions(judged, metric, [*selection, *holdout])


def pair_arms(baseline: Mapping[str, RunStats], candidate: Mapping[str, RunStats]) -> list[Pair]:
    """Pair the two arms by episode id, in id order, dropping any episode
    that ran in only one.

    A missing episode is neither a tie nor a loss — it is missing. Scoring it
    either way would let a candidate that crashes on the hard episodes look
    good on the ones it survived.
    """
    return [
        Pair(episode=episode, baseline=baseline[episode], candidate=candidate[episode])
        for episode in sorted(baseline)
        if episode in candidate
    ]


# ── the prioritised draw ─────────────────────────────────────────────────────


class Slices(NamedTuple):
    """Recorded episodes chosen for replay: `(episode id, recorded stats)`."""

    selection: list[tuple[str, RunStats]]
    holdout: list[tuple[str, RunStats]]


def take_uniform(items: Sequence[T], seed: int, n: int) -> list[T]:
    """`n` items (or all of them, if fewer) drawn uniformly without
    replacement, reproducibly for `seed`."""
    import random  # only here: every sidecar imports this module, few draw

    return random.Random(seed).sample(list(items), min(n, len(items)))


def rank_by_headroom(
    corpus: Iterable[tuple[str, RunStats]], metric: Metric
) -> list[tuple[str, RunStats]]:
    """The corpus, most headroom on `metric` first; equal headroom keeps
    corpus order, so the ranking is deterministic."""
    return sorted(corpus, key=lambda item: -metric.headroom(item[1]))


def draw_slices(
    corpus: Sequence[tuple[str, RunStats]],
    metric: Metric,
    seed: int,
    selection: int = MIN_SELECTION_PAIRS,
    holdout: int = MIN_HOLDOUT_PAIRS,
) -> Slices:
    """Choose which recorded episodes to replay: a holdout of `holdout`
    drawn uniformly from the whole corpus (seeded, so reproducible), then a
    selection of `selection` ranked by `Metric.headroom` from what is left.
    The two never share an episode id.

    Drawn separately, because `is_holdout` only partitions the pool it is
    given: gather that pool by headroom and *both* halves carry only
    high-headroom episodes, so the holdout no longer checks the selection's
    bias. A holdout drawn uniformly from the whole corpus stays
    representative, which is what keeps "confirmed on unseen work" true.

    The holdout is drawn first so it is a uniform sample of the whole corpus;
    drawing the selection first would leave the holdout a uniform sample of
    what the priority had passed over, biased the other way.

    Reproducible for a seed with a given corpus order. Unlike `is_holdout`,
    this rests on `random.Random`, which is stable for a seed but not
    promised across every Python release — record the slices, not only the
    seed, if a draw must be re-examined later.
    """
    held = take_uniform(corpus, seed, holdout)
    held_ids = {episode for episode, _ in held}
    rest = [item for item in corpus if item[0] not in held_ids]
    return Slices(selection=rank_by_headroom(rest, metric)[:selection], holdout=held)
