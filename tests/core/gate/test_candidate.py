"""The candidate gate: paired A/B with a deterministic holdout.

Every check here pins a way the gate could accept a change it should not, or
refuse one it should — failures that would otherwise surface only as a bad
rule riding in every later prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mecha.core.gate.candidate import (
    MIN_HOLDOUT_PAIRS,
    MIN_INFORMATIVE_HOLDOUT,
    MIN_MEASURABLE_RUNS,
    MIN_SELECTION_PAIRS,
    REGRESSION_CEILING,
    WORK_FLOOR,
    ChangeClass,
    Disposition,
    DispositionKind,
    Judgement,
    Metric,
    Pair,
    Prediction,
    Tally,
    dec_hook,
    draw_slices,
    enc_hook,
    fnv1a_64,
    guard_regressions,
    is_holdout,
    judge,
    judge_drawn,
    judge_slices,
    judge_with,
    measurable,
    pair_arms,
    schema_hook,
    take_uniform,
)
from mecha.core.gate.run import RunStats, StopCause

# ── fixtures ─────────────────────────────────────────────────────────────────


def run(calls: int, errors: int, ended_failed: bool) -> RunStats:
    return RunStats(
        tool_calls=calls,
        tool_errors=errors,
        ended_on_failed_call=ended_failed,
        stop_cause=StopCause.COMPLETED,
    )


def stats(tool_calls: int, tool_errors: int) -> RunStats:
    return RunStats(tool_calls=tool_calls, tool_errors=tool_errors)


def prediction(metric: Metric) -> Prediction:
    return Prediction(metric=metric, rationale="because")


def corpus(n: int, holdout_in: int, f: Callable[[int], tuple[RunStats, RunStats]]) -> list[Pair]:
    """`n` selection pairs and ceil(n/2) holdout pairs, placed by asking
    `is_holdout` rather than assuming, so the fixture follows the hash."""
    pairs: list[Pair] = []
    want_hold = (n + 1) // 2
    sel = hold = i = 0
    while sel < n or hold < want_hold:
        episode = f"ep-{i}"
        i += 1
        held = is_holdout(episode, holdout_in)
        if (held and hold >= want_hold) or (not held and sel >= n):
            continue
        if held:
            hold += 1
        else:
            sel += 1
        baseline, candidate = f(len(pairs))
        pairs.append(Pair(episode=episode, baseline=baseline, candidate=candidate))
    return pairs


def with_turns(stats_: RunStats, turns: int) -> RunStats:
    return msgspec.structs.replace(stats_, turns=turns)


def reference_fnv1a_64(text: str) -> int:
    """FNV-1a 64 from its definition, kept apart from the module's copy:
    offset basis 14695981039346656037, prime 1099511628211, xor then multiply,
    modulo 2**64."""
    h = 14695981039346656037
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 1099511628211) % 2**64
    return h


@dataclass
class Case:
    """An eval case graded on whether it passed, before and after."""

    id: str
    was: bool
    now: bool
    calls: int = 6


def case_cost(c: Case) -> tuple[str, float, float]:
    # A failure is the cost, so a case that now passes is a win.
    return (c.id, float(not c.was), float(not c.now))


# ── corpus size ──────────────────────────────────────────────────────────────


def test_a_corpus_too_small_to_fill_both_slices_cannot_be_measured() -> None:
    # Pins the floor being the *sum* of the slices: a corpus between the
    # selection floor and the sum still cannot fill both.
    assert MIN_MEASURABLE_RUNS == MIN_SELECTION_PAIRS + MIN_HOLDOUT_PAIRS == 12
    assert not measurable(0)
    assert not measurable(MIN_SELECTION_PAIRS)
    assert not measurable(MIN_MEASURABLE_RUNS - 1)
    assert measurable(MIN_MEASURABLE_RUNS)
    # The motivating live case: 11 recorded runs against a floor of 12.
    assert not measurable(11)
    assert measurable(236)


def test_the_floors_and_ceilings_keep_the_values_the_harness_uses() -> None:
    # Pins the constants to the harness's: a drifted floor here would grade
    # the same corpus differently on each side of the wire.
    assert (MIN_SELECTION_PAIRS, MIN_HOLDOUT_PAIRS, MIN_INFORMATIVE_HOLDOUT) == (8, 4, 4)
    assert (REGRESSION_CEILING, WORK_FLOOR) == (1.25, 0.75)


# ── metrics ──────────────────────────────────────────────────────────────────


def test_every_metric_is_listed_in_all_in_the_harness_order() -> None:
    # Pins ALL covering every member: a metric missing from it would drop out
    # of the brief and of guard_regressions without any test noticing.
    assert set(Metric.ALL) == set(Metric)
    assert len(Metric.ALL) == 6
    assert [m.as_str() for m in Metric.ALL] == [
        "ended_on_failed_call",
        "tool_error_rate",
        "cut_short",
        "compactions",
        "turns",
        "malformed_args",
    ]


def test_a_metric_is_named_by_its_serde_spelling_everywhere() -> None:
    # Pins as_str and the wire agreeing: a metric reported under one name and
    # proposable only under another could never be predicted.
    for m in Metric.ALL:
        assert msgspec.json.encode(m).decode().strip('"') == m.as_str()
        assert msgspec.json.decode(msgspec.json.encode(m), type=Metric) is m


def test_cut_short_ignores_a_completed_or_interrupted_run() -> None:
    # Pins cut_short to the harness stopping the run: counting a person's
    # interrupt made every pair on a clean corpus a possible loss, and a
    # corpus with none of the metric shows as zero headroom.
    completed = RunStats(stop_cause=StopCause.COMPLETED)
    interrupted = RunStats(stop_cause=StopCause.INTERRUPTED)
    assert Metric.CUT_SHORT.of(completed) == 0.0
    assert Metric.CUT_SHORT.of(interrupted) == 0.0
    assert Metric.CUT_SHORT.headroom(interrupted) == 0.0
    assert Metric.CUT_SHORT.of(RunStats(stop_cause=StopCause.MAX_TURNS)) == 1.0
    assert Metric.CUT_SHORT.of(RunStats()) == 0.0


def test_each_metric_reads_its_own_counter() -> None:
    # Pins the mapping from metric to RunStats field: a crossed wire would
    # grade a candidate on a metric it never predicted.
    s = RunStats(
        turns=7,
        tool_calls=8,
        tool_errors=2,
        malformed_tool_args=3,
        compactions=4,
        ended_on_failed_call=True,
        stop_cause=StopCause.LOOP,
    )
    assert Metric.ENDED_ON_FAILED_CALL.of(s) == 1.0
    assert Metric.TOOL_ERROR_RATE.of(s) == 0.25
    assert Metric.CUT_SHORT.of(s) == 1.0
    assert Metric.COMPACTIONS.of(s) == 4.0
    assert Metric.TURNS.of(s) == 7.0
    assert Metric.MALFORMED_ARGS.of(s) == 3.0


# ── the gate ─────────────────────────────────────────────────────────────────


def test_a_change_that_wins_on_both_slices_is_accepted_without_a_person() -> None:
    # Pins the happy path: a gate that never accepts is as broken as one that
    # always does.
    pairs = corpus(12, 3, lambda _: (run(10, 4, True), run(10, 1, False)))
    j = judge(ChangeClass.CONFIG, prediction(Metric.ENDED_ON_FAILED_CALL), pairs, 3)
    assert j.disposition == Disposition.accept(), j
    assert j.selection.wins >= MIN_SELECTION_PAIRS
    assert j.selection.losses == 0


def test_a_gain_bought_by_attempting_less_is_rejected_however_it_scored() -> None:
    # Pins the work guardrail: every episode "improves" because the run
    # stopped doing anything.
    pairs = corpus(12, 3, lambda _: (run(20, 6, True), run(1, 0, False)))
    j = judge(ChangeClass.CONFIG, prediction(Metric.ENDED_ON_FAILED_CALL), pairs, 3)
    assert j.disposition.is_reject, j
    assert "attempting less" in j.disposition.why
    assert j.work_candidate < j.work_baseline


def test_a_holdout_with_nothing_to_lose_does_not_confirm_a_win() -> None:
    # Pins MIN_INFORMATIVE_HOLDOUT: four all-tie held-out episodes satisfy
    # wins >= losses and would read as "confirmed on unseen work".
    def shape(p: Pair) -> Pair:
        if is_holdout(p.episode, 3):
            return Pair(p.episode, run(10, 5, False), run(10, 5, False))
        return Pair(p.episode, run(10, 5, True), run(10, 5, False))

    pairs = [shape(p) for p in corpus(12, 3, lambda _: (run(10, 5, True), run(10, 5, True)))]
    j = judge(ChangeClass.CONFIG, prediction(Metric.ENDED_ON_FAILED_CALL), pairs, 3)
    assert j.disposition.is_propose, j
    assert "without ever being able to confirm" in j.disposition.why
    assert (j.holdout.wins, j.holdout.losses) == (0, 0)


def test_a_win_paid_for_on_a_metric_nobody_predicted_is_rejected() -> None:
    # Pins the regression guard: same work, half the turns, and nearly every
    # call now fails — the work guardrail alone lets this through.
    def f(_: int) -> tuple[RunStats, RunStats]:
        return with_turns(run(10, 1, False), 10), with_turns(run(10, 9, False), 5)

    j = judge(ChangeClass.CONFIG, prediction(Metric.TURNS), corpus(12, 3, f), 3)
    assert j.disposition.is_reject, j
    assert "tool_error_rate" in j.disposition.why
    assert "nobody was watching" in j.disposition.why
    assert "predicted a lower turns" in j.disposition.why


def test_an_unpredicted_metric_that_holds_steady_does_not_block_a_real_win() -> None:
    # Pins the guard as a cliff, not a ratchet: unchanged other metrics must
    # not veto a genuine improvement.
    def f(_: int) -> tuple[RunStats, RunStats]:
        return with_turns(run(10, 2, False), 10), with_turns(run(10, 2, False), 5)

    j = judge(ChangeClass.CONFIG, prediction(Metric.TURNS), corpus(12, 3, f), 3)
    assert j.disposition == Disposition.accept(), j


def test_an_unpredicted_metric_rising_within_the_ceiling_is_tolerated() -> None:
    # Pins the ceiling's edge: a rise to exactly 1.25x is noise, not a
    # regression; one more malformed argument past it is.
    def pairs_with(after: int) -> list[Pair]:
        return [
            Pair(
                f"e{i}",
                msgspec.structs.replace(run(10, 1, False), turns=10, malformed_tool_args=4),
                msgspec.structs.replace(run(10, 1, False), turns=5, malformed_tool_args=after),
            )
            for i in range(12)
        ]

    accepted = Judgement(Disposition.accept(), Tally(12), Tally(), 120, 120)
    assert guard_regressions(accepted, Metric.TURNS, pairs_with(5)).disposition.is_accept
    over = pairs_with(5)
    one_more = msgspec.structs.replace(over[0].candidate, malformed_tool_args=6)
    over[0] = Pair("e0", over[0].baseline, one_more)
    assert guard_regressions(accepted, Metric.TURNS, over).disposition.is_reject


def test_winning_selection_and_losing_the_holdout_is_a_rejection() -> None:
    # Pins overfitting being visible: better exactly where it was chosen,
    # worse where it was not.
    def shape(p: Pair) -> Pair:
        if is_holdout(p.episode, 3):
            return Pair(p.episode, run(10, 5, False), run(10, 5, True))
        return Pair(p.episode, run(10, 5, True), run(10, 5, False))

    pairs = [shape(p) for p in corpus(12, 3, lambda _: (run(10, 5, True), run(10, 5, True)))]
    j = judge(ChangeClass.CONFIG, prediction(Metric.ENDED_ON_FAILED_CALL), pairs, 3)
    assert j.disposition.is_reject, j
    assert "holdout" in j.disposition.why


def test_thin_evidence_proposes_rather_than_rejecting() -> None:
    # Pins the absence of evidence not being read as evidence of harm: three
    # episodes that all improved is for a person to read.
    pairs = corpus(3, 3, lambda _: (run(10, 4, True), run(10, 1, False)))
    j = judge(ChangeClass.CONFIG, prediction(Metric.ENDED_ON_FAILED_CALL), pairs, 3)
    assert j.disposition.is_propose, j
    assert "floor" in j.disposition.why


def test_a_selection_that_did_not_win_is_rejected() -> None:
    # Pins the selection check: a candidate that merely ties everywhere did
    # not beat the original.
    pairs = corpus(12, 3, lambda _: (run(10, 4, True), run(10, 4, True)))
    j = judge(ChangeClass.CONFIG, prediction(Metric.ENDED_ON_FAILED_CALL), pairs, 3)
    assert j.disposition.is_reject, j
    assert "did not beat the original" in j.disposition.why


def test_architecture_and_security_reach_a_person_however_well_they_score() -> None:
    # Pins the class gate: measurement alone never accepts a change to the
    # harness's shape or its confinement.
    pairs = corpus(12, 3, lambda _: (run(10, 4, True), run(10, 0, False)))
    for class_ in (ChangeClass.ARCHITECTURE, ChangeClass.SECURITY):
        j = judge(class_, prediction(Metric.ENDED_ON_FAILED_CALL), pairs, 3)
        assert j.disposition.is_propose, (class_, j)
        assert "person's decision" in j.disposition.why
        assert class_.value in j.disposition.why
    auto = [c for c in ChangeClass if c.auto_acceptable()]
    assert auto == [ChangeClass.CONFIG, ChangeClass.PROSE]


def test_a_run_that_made_no_calls_is_neutral_on_the_error_rate() -> None:
    # Pins "no calls" as no evidence rather than a perfect record, so doing
    # nothing cannot beat doing well on the rate.
    assert Metric.TOOL_ERROR_RATE.of(run(0, 0, False)) == 0.0
    assert Metric.TOOL_ERROR_RATE.of(run(10, 0, False)) == 0.0
    pairs = corpus(12, 3, lambda _: (run(10, 0, False), run(0, 0, False)))
    j = judge(ChangeClass.CONFIG, prediction(Metric.TOOL_ERROR_RATE), pairs, 3)
    assert j.selection.wins == 0, "doing nothing must not beat doing well"


def test_the_split_is_the_same_every_time_and_actually_splits() -> None:
    # Pins the holdout's stability (a rerun must grade against the same
    # holdout) and that it is a real split, not everything or nothing.
    ids = [f"ep-{i}" for i in range(200)]
    first = [is_holdout(e, 4) for e in ids]
    again = [is_holdout(e, 4) for e in ids]
    assert first == again
    held = sum(first)
    assert 20 <= held < 80, f"{held} of 200 held out"


def test_a_suite_the_baseline_already_passed_cannot_confirm_an_improvement() -> None:
    # Pins MIN_INFORMATIVE_HOLDOUT in the eval currency: held-out cases that
    # were already green have no cost to lose, so they cannot confirm.
    cases = [Case(id=f"case-{i}", was=is_holdout(f"case-{i}", 3), now=True) for i in range(24)]
    hold = [c for c in cases if is_holdout(c.id, 3)]
    sel = [c for c in cases if not is_holdout(c.id, 3)]
    assert len(sel) >= MIN_SELECTION_PAIRS and len(hold) >= MIN_HOLDOUT_PAIRS
    j = judge_slices(ChangeClass.CONFIG, sel, hold, case_cost, lambda _: (6, 6))
    assert j.disposition.is_propose, j
    assert "without ever being able to confirm" in j.disposition.why


def test_a_real_regression_is_not_hidden_behind_a_milder_finding_earlier_in_all() -> None:
    # Pins the guard examining every metric: a 0 -> 2 rise in compactions
    # (earlier in ALL) used to return first and hide malformed_args going
    # from 4 to 10 (later in ALL).
    def f(_: int) -> tuple[RunStats, RunStats]:
        baseline = msgspec.structs.replace(
            run(10, 1, False), turns=10, compactions=0, malformed_tool_args=4
        )
        candidate = msgspec.structs.replace(
            run(10, 1, False), turns=5, compactions=2, malformed_tool_args=10
        )
        return baseline, candidate

    assert Metric.ALL.index(Metric.COMPACTIONS) < Metric.ALL.index(Metric.MALFORMED_ARGS)
    j = judge(ChangeClass.CONFIG, prediction(Metric.TURNS), corpus(12, 3, f), 3)
    assert j.disposition.is_reject, j
    assert "malformed_args" in j.disposition.why


def test_a_cost_appearing_from_nothing_reaches_a_person_rather_than_being_refused() -> None:
    # Pins the 0 -> nonzero branch proposing: rejecting it made a compaction
    # threshold unusable for the one metric it exists to move.
    def f(_: int) -> tuple[RunStats, RunStats]:
        baseline = msgspec.structs.replace(run(10, 1, False), turns=10, compactions=0)
        candidate = msgspec.structs.replace(run(10, 1, False), turns=5, compactions=2)
        return baseline, candidate

    j = judge(ChangeClass.CONFIG, prediction(Metric.TURNS), corpus(12, 3, f), 3)
    assert j.disposition.is_propose, j
    assert "rose from" in j.disposition.why
    assert "compactions" in j.disposition.why
    assert "only a person can tell which" in j.disposition.why


def test_the_regression_guard_leaves_anything_but_an_accept_alone() -> None:
    # Pins the guard's scope: it may downgrade an accept, never rewrite a
    # reject's reason or turn a proposal into something else.
    pairs = [Pair("e", run(10, 0, False), run(10, 10, False))]
    for d in (Disposition.reject("no"), Disposition.propose("maybe")):
        j = Judgement(d, Tally(), Tally(), 10, 10)
        assert guard_regressions(j, Metric.TURNS, pairs).disposition == d


def test_the_generic_gate_grades_case_outcomes_by_the_same_rules() -> None:
    # Pins one gate for both currencies: eval cases scored pass/fail get the
    # same holdout and the same work guardrail as replayed runs.
    cases = [Case(id=f"case-{i}", was=False, now=True, calls=6) for i in range(24)]
    j = judge_with(ChangeClass.PROSE, cases, case_cost, lambda c: (c.calls, c.calls), 3)
    assert j.disposition == Disposition.accept(), j

    # Passing more cases by attempting less is still buying the win.
    j = judge_with(ChangeClass.PROSE, cases, case_cost, lambda c: (c.calls, 1), 3)
    assert j.disposition.is_reject, j
    assert "attempting less" in j.disposition.why


def test_the_work_guardrail_is_checked_before_the_evidence_floor() -> None:
    # Pins the order: a breach rejects even on too few pairs to judge a win.
    pairs = corpus(2, 3, lambda _: (run(20, 6, True), run(1, 0, False)))
    j = judge(ChangeClass.CONFIG, prediction(Metric.ENDED_ON_FAILED_CALL), pairs, 3)
    assert j.disposition.is_reject, j
    assert "attempting less" in j.disposition.why


def test_an_episode_in_one_arm_only_is_dropped_not_scored() -> None:
    # Pins pairing: a candidate that crashes on the hard episode must not look
    # good on the ones it survived.
    baseline = {"a": run(5, 0, False), "hard": run(5, 3, True)}
    candidate = {"a": run(5, 0, False)}
    pairs = pair_arms(baseline, candidate)
    assert [p.episode for p in pairs] == ["a"]
    assert pair_arms(candidate, baseline)[0].episode == "a"


def test_paired_episodes_come_out_in_id_order() -> None:
    # Pins pair order to the id, not to how either arm happened to be built,
    # so the same arms always produce the same pairs.
    arm = {"c": run(1, 0, False), "a": run(2, 0, False), "b": run(3, 0, False)}
    assert [p.episode for p in pair_arms(arm, dict(reversed(arm.items())))] == ["a", "b", "c"]


def test_a_zero_holdout_divisor_is_refused_rather_than_guessed() -> None:
    # Pins holdout_in >= 1: zero has no meaning as "one in N".
    with pytest.raises(ValueError, match="holdout_in"):
        is_holdout("ep-0", 0)


# ── the wire ─────────────────────────────────────────────────────────────────


def test_a_disposition_is_externally_tagged_on_the_wire() -> None:
    # Pins serde's external tagging: any other shape is unreadable to the
    # harness's candidate store.
    assert Disposition.accept().to_wire() == "Accept"
    assert Disposition.propose("why").to_wire() == {"Propose": "why"}
    assert Disposition.reject("no").to_wire() == {"Reject": "no"}
    for d in (Disposition.accept(), Disposition.propose("p"), Disposition.reject("r")):
        assert Disposition.from_wire(d.to_wire()) == d
    for bad in ("accept", {"Accept": None}, {"Propose": 3}, {"Propose": "a", "Reject": "b"}, None):
        with pytest.raises(ValueError):
            Disposition.from_wire(bad)


def test_a_judgement_round_trips_in_the_harness_shape() -> None:
    # Pins the judgement's field names and the disposition inside it, and
    # that encoding without the hooks fails rather than emitting a wrong shape.
    j = Judgement(Disposition.propose("thin"), Tally(8, 1, 3), Tally(2, 0, 2), 120, 110)
    wire = j.to_wire()
    assert wire == {
        "disposition": {"Propose": "thin"},
        "selection": {"wins": 8, "losses": 1, "ties": 3},
        "holdout": {"wins": 2, "losses": 0, "ties": 2},
        "work_baseline": 120,
        "work_candidate": 110,
    }
    assert Judgement.from_wire(wire) == j
    encoded = msgspec.json.encode(j, enc_hook=enc_hook)
    assert msgspec.json.decode(encoded, type=Judgement, dec_hook=dec_hook) == j
    with pytest.raises(TypeError):
        msgspec.json.encode(j)
    with pytest.raises(msgspec.ValidationError):
        Judgement.from_wire({**wire, "disposition": {"Maybe": "x"}})
    schema = msgspec.json.schema(Judgement, schema_hook=schema_hook)
    assert "Disposition" in str(schema)


def test_a_prediction_and_a_pair_decode_from_the_harness_shape() -> None:
    # Pins snake_case fields and metric spellings on the way in.
    p = msgspec.convert({"metric": "tool_error_rate", "rationale": "r"}, Prediction)
    assert p.metric is Metric.TOOL_ERROR_RATE
    pair = msgspec.convert(
        {"episode": "e", "baseline": {"tool_calls": 3}, "candidate": {}}, Pair
    )
    assert pair.baseline.tool_calls == 3 and pair.candidate == RunStats()
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"metric": "ToolErrorRate", "rationale": ""}, Prediction)


# ── the prioritised draw ─────────────────────────────────────────────────────


def test_an_episode_with_no_room_to_improve_has_no_priority() -> None:
    # Pins headroom as the metric's own value: an episode at zero can only
    # tie or worsen, so it is the one not worth a replay.
    m = Metric.TOOL_ERROR_RATE
    assert m.headroom(stats(10, 5)) == 0.5
    assert m.headroom(stats(10, 0)) == 0.0, "clean run, nothing to fix"
    assert m.headroom(stats(0, 0)) == 0.0, "no calls is no evidence"
    assert m.headroom(stats(10, 9)) > m.headroom(stats(10, 1))


def _half_clean_corpus() -> list[tuple[str, RunStats]]:
    # Half the corpus is clean and says nothing about the error rate; half
    # has real headroom.
    return [(f"ep-{i:02}", stats(10, 0) if i % 2 == 0 else stats(10, 4)) for i in range(40)]


def test_hash_splitting_a_prioritised_pool_yields_a_prioritised_holdout() -> None:
    # Pins the reason the slices are drawn separately: a hash split of a
    # pool gathered by headroom puts only high-headroom episodes in the
    # holdout, while a uniform draw from the whole corpus does not.
    full = _half_clean_corpus()
    m = Metric.TOOL_ERROR_RATE
    by_priority = sorted(full, key=lambda p: -m.headroom(p[1]))
    pool = by_priority[:20]
    hashed_holdout = [p for p in pool if is_holdout(p[0], 2)]
    assert hashed_holdout, "the split has to produce a holdout for this to compare anything"
    assert all(m.headroom(p[1]) > 0.0 for p in hashed_holdout)

    drawn = take_uniform(full, 7, 20)
    assert len(drawn) == 20
    assert any(m.headroom(p[1]) == 0.0 for p in drawn)


def test_the_draw_prioritises_selection_and_keeps_the_holdout_uniform() -> None:
    # Pins draw_slices doing both halves of the fix: the selection is the
    # highest-headroom episodes, the holdout still contains episodes the
    # priority would have skipped.
    full = _half_clean_corpus()
    m = Metric.TOOL_ERROR_RATE
    slices = draw_slices(full, m, seed=7, selection=8, holdout=12)
    assert len(slices.selection) == 8 and len(slices.holdout) == 12
    assert all(m.headroom(s) > 0.0 for _, s in slices.selection)
    assert any(m.headroom(s) == 0.0 for _, s in slices.holdout)
    assert not {e for e, _ in slices.selection} & {e for e, _ in slices.holdout}


def test_the_drawn_gate_applies_the_same_guardrails() -> None:
    # Pins judge_drawn scoring the slices it is given by the same rules, in
    # the same order, as the hash-split gate.
    def pair(episode: str, before: int, after: int) -> Pair:
        return Pair(episode=episode, baseline=stats(10, before), candidate=stats(10, after))

    p = Prediction(metric=Metric.TOOL_ERROR_RATE, rationale="")
    selection = [pair(f"s{i}", 5, 2) for i in range(MIN_SELECTION_PAIRS)]
    holdout = [pair(f"h{i}", 5, 4) for i in range(MIN_HOLDOUT_PAIRS)]
    j = judge_drawn(ChangeClass.CONFIG, p, selection, holdout)
    assert j.disposition == Disposition.accept(), j
    assert j.selection.wins == MIN_SELECTION_PAIRS

    # A thin holdout proposes rather than accepting.
    j = judge_drawn(ChangeClass.CONFIG, p, selection, holdout[:1])
    assert j.disposition.is_propose, j

    # And the regression guard looks across both slices.
    worse = [
        Pair(q.episode, q.baseline, msgspec.structs.replace(q.candidate, turns=3)) for q in holdout
    ]
    j = judge_drawn(ChangeClass.CONFIG, p, selection, worse)
    assert j.disposition.is_propose and "turns" in j.disposition.why, j


# ── properties ───────────────────────────────────────────────────────────────

counts = st.integers(min_value=0, max_value=12)
run_stats = st.builds(
    RunStats,
    turns=counts,
    tool_calls=counts,
    tool_errors=counts,
    malformed_tool_args=counts,
    compactions=counts,
    ended_on_failed_call=st.booleans(),
    stop_cause=st.none() | st.sampled_from(StopCause),
)
pair_lists = st.lists(
    st.builds(Pair, episode=st.text(max_size=8), baseline=run_stats, candidate=run_stats),
    max_size=40,
)
person_only = st.sampled_from([c for c in ChangeClass if not c.auto_acceptable()])


@settings(max_examples=300)
@given(
    class_=person_only,
    metric=st.sampled_from(Metric),
    pairs=pair_lists,
    holdout_in=st.integers(min_value=1, max_value=6),
)
def test_no_architecture_or_security_change_is_ever_accepted(
    class_: ChangeClass, metric: Metric, pairs: list[Pair], holdout_in: int
) -> None:
    # Pins the class gate against every shape of evidence, split or drawn.
    assert not judge(class_, prediction(metric), pairs, holdout_in).disposition.is_accept
    half = len(pairs) // 2
    drawn = judge_drawn(class_, prediction(metric), pairs[:half], pairs[half:])
    assert not drawn.disposition.is_accept


@given(
    class_=person_only,
    n=st.integers(min_value=MIN_SELECTION_PAIRS, max_value=30),
    holdout_in=st.integers(min_value=2, max_value=4),
)
def test_a_person_only_change_that_measures_perfectly_still_only_proposes(
    class_: ChangeClass, n: int, holdout_in: int
) -> None:
    # Pins the property above on evidence that would be accepted for config,
    # so it cannot pass merely because random pairs rarely win.
    pairs = corpus(n, holdout_in, lambda _: (run(10, 4, True), run(10, 0, False)))
    config = ChangeClass.CONFIG
    as_config = judge(config, prediction(Metric.ENDED_ON_FAILED_CALL), pairs, holdout_in)
    assert as_config.disposition.is_accept
    j = judge(class_, prediction(Metric.ENDED_ON_FAILED_CALL), pairs, holdout_in)
    assert j.disposition.kind is DispositionKind.PROPOSE


# FNV-1a 64 test vectors, from the algorithm's published definition.
KNOWN_FNV1A_64 = {
    "": 0xCBF29CE484222325,
    "a": 0xAF63DC4C8601EC8C,
    "foobar": 0x85944171F73967E8,
}


def test_the_episode_hash_is_fnv1a_64_to_the_bit() -> None:
    # Pins the hash parameters: a different hash re-partitions every corpus
    # and "never chosen on" silently stops being true.
    for text, value in KNOWN_FNV1A_64.items():
        assert fnv1a_64(text) == value
        assert reference_fnv1a_64(text) == value


def test_the_holdout_bucket_of_known_ids_is_pinned() -> None:
    # Pins concrete buckets, worked from the hash values above: "a" hashes to
    # ...ec8c, a multiple of 4 but not of 8; "" to ...2325, odd.
    assert is_holdout("a", 4) is True
    assert is_holdout("a", 8) is False
    assert is_holdout("", 2) is False
    assert is_holdout("", 1) is True
    assert is_holdout("foobar", 3) is (0x85944171F73967E8 % 3 == 0)
    for i in range(10):
        episode = f"ep-{i}"
        assert is_holdout(episode, 3) is (reference_fnv1a_64(episode) % 3 == 0)


@given(episode=st.text(), holdout_in=st.integers(min_value=1, max_value=2**64))
def test_is_holdout_is_a_pure_function_of_the_id(episode: str, holdout_in: int) -> None:
    # Pins stability and the arithmetic: same id, same answer, always the
    # definition's (never Python's salted hash()).
    first = is_holdout(episode, holdout_in)
    assert first is is_holdout(episode, holdout_in)
    assert first is (reference_fnv1a_64(episode) % holdout_in == 0)


@given(
    episodes=st.lists(st.text(max_size=6), unique=True, max_size=40),
    metric=st.sampled_from(Metric),
    seed=st.integers(min_value=0, max_value=2**32),
    selection=st.integers(min_value=0, max_value=20),
    holdout=st.integers(min_value=0, max_value=20),
    data=st.data(),
)
def test_the_draw_is_disjoint_and_reproducible_for_a_seed(
    episodes: list[str],
    metric: Metric,
    seed: int,
    selection: int,
    holdout: int,
    data: st.DataObject,
) -> None:
    # Pins the two slices never sharing an episode (a shared one is graded on
    # the work it was chosen on) and a seed always giving the same draw.
    full = [(e, data.draw(run_stats)) for e in episodes]
    first = draw_slices(full, metric, seed, selection, holdout)
    assert first == draw_slices(full, metric, seed, selection, holdout)
    sel_ids = [e for e, _ in first.selection]
    hold_ids = [e for e, _ in first.holdout]
    assert not set(sel_ids) & set(hold_ids)
    assert len(hold_ids) == min(holdout, len(full))
    assert len(sel_ids) == min(selection, len(full) - len(hold_ids))
    heads = [metric.headroom(s) for _, s in first.selection]
    assert heads == sorted(heads, reverse=True)
    # Nothing left out of the selection had more headroom than what got in.
    left = [metric.headroom(s) for e, s in full if e not in set(sel_ids) | set(hold_ids)]
    if heads and left:
        assert max(left) <= min(heads)
