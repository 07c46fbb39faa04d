"""The validation ledger and the audit trail of learning passes.

A counterfactual probe replays a recorded intervention with and without the
rules block and says whether the rules helped. Printed and forgotten, that is
a report; written down, one `ValidationRecord` per probe, it is evidence that
accumulates night after night, and the per-rule tallies folded from it are
what a retirement proposal argues from.

Two properties keep the tallies honest:

- A record is keyed to the *exact* block the probe carried (`rules_hash`), and
  names the model it drove: a tally that mixes rule generations or models
  measures nothing.
- Riding along is weak evidence and attribution is strong. Every rule in a
  measured block gets an observation and shares the block-level outcome as
  context; only a bisection that pinned a regression on one rule
  (`attributed_rule_id`) counts against that rule by name.

`LeapRun` is the other audit record: one line per consolidation pass, which,
with the store's git history, traces any rule back to the reflections that
argued for it.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

#: The outcomes a probe records. Kept as plain strings on the record (an
#: outcome this version does not know still counts as an observation rather
#: than making the row unreadable).
IMPROVED = "improved"
REGRESSED = "regressed"
UNCHANGED_PASS = "unchanged_pass"
UNCHANGED_FAIL = "unchanged_fail"
INCONCLUSIVE = "inconclusive"
OUTCOMES: tuple[str, ...] = (IMPROVED, REGRESSED, UNCHANGED_PASS, UNCHANGED_FAIL, INCONCLUSIVE)


class ValidationRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One probe's measurement. Appended to `validations.jsonl`."""

    reflexion_id: str
    trigger: str
    domain: str
    #: `rules_hash` of the rendered block the treatment arm carried.
    rules_hash: str
    #: Ids of the active learned rules riding in that block; each gets a
    #: (weak) observation from this row.
    rule_ids: list[str]
    #: One of `OUTCOMES`.
    outcome: str
    #: Set when a bisection localised a regression to one rule. Omitted from
    #: the JSON when absent, as the seed's serde does.
    attributed_rule_id: str | None = None
    #: The model the probe drove — tallies compare only within one.
    model: str
    created_at: str
    #: Why an `inconclusive` probe gave no verdict (a refused call, a judge
    #: reply that was no answer), naming the arm. Omitted when absent.
    reason: str | None = None
    #: The pending proposal whose candidate block the treatment arm carried
    #: (measured against the live block), when the probe measured one.
    proposal_id: str | None = None
    #: The rules left out of both arms because the probed correction is
    #: among their sources: the block measured was the candidate (or the
    #: live rules) without them. Omitted when none was.
    left_out: list[str] = msgspec.field(default_factory=list)


class RuleTally(msgspec.Struct, kw_only=True):
    """What the ledger says about one rule. Also its wire shape."""

    #: Probes whose measured block carried the rule.
    observations: int = 0
    #: Block-level outcomes while it rode along: context, not credit.
    improved: int = 0
    regressed: int = 0
    #: Regressions a bisection pinned on this rule by name — the number
    #: retirement argues from.
    attributed_regressions: int = 0
    #: The newest `created_at` among the rows that observed it.
    last_validated: str | None = None


def rule_tallies(
    records: Iterable[ValidationRecord], *, domain: str | None = None
) -> dict[str, RuleTally]:
    """Fold ledger rows into per-rule tallies, keyed and ordered by rule id.

    Each id in a row's `rule_ids` gets one observation, the row's outcome if
    it is `improved` or `regressed`, and the row's time if it is the newest
    seen. An attribution is counted on its own: it adds an attributed
    regression to the named rule and nothing else (the row's observation of
    that rule, if it rode in the block, was already counted above).
    `domain`, when given, folds only that domain's rows.
    """
    out: dict[str, RuleTally] = {}
    for rec in records:
        if domain is not None and rec.domain != domain:
            continue
        for rule_id in rec.rule_ids:
            t = out.get(rule_id)
            if t is None:
                t = out[rule_id] = RuleTally()
            t.observations += 1
            if rec.outcome == IMPROVED:
                t.improved += 1
            elif rec.outcome == REGRESSED:
                t.regressed += 1
            if t.last_validated is None or t.last_validated < rec.created_at:
                t.last_validated = rec.created_at
        if rec.attributed_rule_id is not None:
            t = out.get(rec.attributed_rule_id)
            if t is None:
                t = out[rec.attributed_rule_id] = RuleTally()
            t.attributed_regressions += 1
    return dict(sorted(out.items()))


def rule_tallies_by_model(
    records: Iterable[ValidationRecord], *, domain: str | None = None
) -> dict[str, dict[str, RuleTally]]:
    """The same fold as `rule_tallies`, kept apart per model the probes
    drove (rule id → model → tally): a tally that mixes models measures
    neither, so a person is shown one line per model."""
    by_model: dict[str, list[ValidationRecord]] = {}
    for rec in records:
        if domain is None or rec.domain == domain:
            by_model.setdefault(rec.model, []).append(rec)
    out: dict[str, dict[str, RuleTally]] = {}
    for model, rows in sorted(by_model.items()):
        for rule_id, tally in rule_tallies(rows).items():
            out.setdefault(rule_id, {})[model] = tally
    return dict(sorted(out.items()))


# ─── What a validate pass will do ───────────────────────────────────────────
#
# The wire shapes of `mecha/validate`'s plan, kept here (beside the rows a
# pass writes) rather than with the probe itself: the wire module loads on
# the harness's cold path, which must not load the providers.


class PlannedProbe(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One probe a pass will run (or, in a dry run, would)."""

    #: The reflection probed, spelled as the ledger rows and proposals spell
    #: a reflection's id.
    reflexion_id: str
    trigger: str
    session_id: str
    #: The person's words at the correction, bounded.
    text: str
    file: str | None = None
    line: int | None = None
    #: The message the correction rides in.
    at: int | None = None
    #: `rules_hash` of the treatment arm's block, and the rules it measures.
    rules_hash: str
    rule_ids: list[str] = msgspec.field(default_factory=list)
    #: The ledger already holds this reflection measured under this block.
    measured_before: bool = False
    #: Deprecated: `reflexion_id` under the spelling it had before, written
    #: (always equal to it) so a client that reads it keeps working.
    reflection_id: str = ""

    def __post_init__(self) -> None:
        self.reflection_id = self.reflexion_id


#: Model calls one probe makes at most: the assistant's turn in each arm and
#: a judge call for each (an arm whose turn failed is not judged).
CALLS_PER_PROBE = 4


class ValidationPlan(msgspec.Struct, kw_only=True):
    """What a validate pass will do and what it costs, before any call."""

    domain: str
    budget: int
    probes: list[PlannedProbe] = msgspec.field(default_factory=list)
    calls_per_probe: int = CALLS_PER_PROBE
    #: At most this many model calls in all.
    calls: int = 0
    #: The proposal whose candidate block is measured, when one is.
    proposal_id: str | None = None
    #: The reflections of the domain not probed, counted by why.
    skipped: dict[str, int] = msgspec.field(default_factory=dict)
    #: The same, by why and then by kind (the trigger: `followup`, `steer`,
    #: `denial`, `edit`).
    skipped_kinds: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)
    #: Where the calls would go and what they cost, as a person reads it
    #: (`validate.what_calls_cost`), when a model is configured.
    cost: str | None = None


class ProposalVerdict(msgspec.Struct, kw_only=True):
    """What validate passes measured of a pending proposal: its candidate
    block against the live one, from the ledger rows that carried it."""

    #: Probes whose row measured the candidate block as it renders now.
    probes: int = 0
    #: Per model the probes drove: outcome → count.
    by_model: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)
    #: Rows of this proposal measured against rules that have since changed
    #: (another block than the candidate's now): not counted above.
    stale: int = 0
    #: Of `probes`, those that measured the candidate without the rules
    #: learned from the probed correction (their row's `left_out`).
    reduced: int = 0
    #: The same, in a person's words (`sources.describe_verdict`).
    measured: str = ""


class LeapRun(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Audit record for one consolidation pass, appended to `runs.jsonl`."""

    id: str
    domain: str
    reflexions_processed: int
    rules_before: int
    rules_after: int
    created_at: str
    #: The pass's result equalled the live rules, so no proposal was filed.
    unchanged: bool = False
    #: The reflections an `unchanged` pass considered: until one outside
    #: them arrives, another pass would only be asked the same question.
    reflexion_ids: list[str] = msgspec.field(default_factory=list)
    #: The scope the pass learned: a project's root, or `None` — global,
    #: which is also what a run recorded before scopes reads as.
    project: str | None = None
    #: The reflections the pass showed the learner, and those its answer
    #: cited (`learning.aside`: a lesson shown three times and never cited
    #: is set aside). Empty on runs recorded before they were kept.
    shown: list[str] = msgspec.field(default_factory=list)
    cited: list[str] = msgspec.field(default_factory=list)
