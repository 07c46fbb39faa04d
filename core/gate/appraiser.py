"""The quarantined appraiser: one optional model pass over an appraisal's
numbers, folded in as one more signed error.

The optional model pass (`appraise_with_model`) is shown an
`AppraiserEvidence`: counts, enum values and harness-sampled readings. No
field of that type can hold free text, so no transcript text, intervention
wording, draft body or fetched page can reach the model by any route — the
property lives in the field types (checked at construction), not in a filter
applied afterwards. The model's answer is one closed-set magnitude plus an
agency; two unusable answers are an error, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import msgspec

from mecha.core.errors import ModelFailure
from mecha.core.gate.appraisal import FULL, HALF, Affect, Agency, Appraisal, Channel, Cite, GoalError, enum_name, relabel
from mecha.core.learning.replies import extract_json
from mecha.core.providers.base import CompletionRequest, CompletionResponse, Provider, StopReason

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
