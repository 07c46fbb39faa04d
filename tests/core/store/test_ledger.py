"""The validation ledger and pass records: their wire shapes and the fold.

A tally that folds differently from the Rust harness's would split the
evidence a retirement argues from between two readers of one file, so the
fold is pinned row by row here.
"""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec
import pytest

from mecha.core.store.learning_store import LearningStore
from mecha.core.store.ledger import (
    IMPROVED,
    INCONCLUSIVE,
    REGRESSED,
    UNCHANGED_PASS,
    LeapRun,
    RuleTally,
    ValidationRecord,
    rule_tallies,
)
from mecha.core.store.rules_block import rules_hash


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    return LearningStore.open(tmp_path / "learning")


def record(
    outcome: str,
    at: str,
    *,
    rule_ids: list[str] | None = None,
    attributed: str | None = None,
    domain: str = "behavior",
) -> ValidationRecord:
    return ValidationRecord(
        reflexion_id="refl-1",
        trigger="steer",
        domain=domain,
        rules_hash=rules_hash("block"),
        rule_ids=["r-a", "r-b"] if rule_ids is None else rule_ids,
        outcome=outcome,
        attributed_rule_id=attributed,
        model="qwen",
        created_at=at,
    )


def test_the_validation_ledger_round_trips_and_tallies_fold(store: LearningStore) -> None:
    # Pins: rows lost or mangled on the way through validations.jsonl, or a
    # bisection's verdict smeared over every rule in the block.
    store.append_validation(record(IMPROVED, "2026-08-05T01:00:00Z"))
    store.append_validation(record(REGRESSED, "2026-08-05T02:00:00Z", attributed="r-b"))
    back = store.validations()
    assert len(back) == 2
    assert back[1].attributed_rule_id == "r-b"

    tallies = rule_tallies(back)
    a = tallies["r-a"]
    assert (a.observations, a.improved, a.regressed, a.attributed_regressions) == (2, 1, 1, 0)
    b = tallies["r-b"]
    assert b.attributed_regressions == 1, "the bisection's verdict lands on r-b alone"
    assert b.last_validated == "2026-08-05T02:00:00Z"


def test_the_rules_hash_is_stable_forever() -> None:
    # Pins: a drifted ledger key, which would silently split every tally
    # accumulated so far. FNV-1a 64 of "abc" is a published vector.
    assert rules_hash("abc") == "e71fa2190541574b"
    assert rules_hash("abc") != rules_hash("abd")


def test_an_attribution_adds_only_an_attributed_regression() -> None:
    # Pins: a fold that "helpfully" also counts an observation or a time for
    # the attributed rule — the seed counts those only from `rule_ids`.
    tallies = rule_tallies([record(REGRESSED, "2026-08-05T00:00:00Z", rule_ids=[], attributed="r-z")])
    assert tallies == {"r-z": RuleTally(attributed_regressions=1)}
    assert tallies["r-z"].last_validated is None


def test_only_improved_and_regressed_move_the_outcome_counts() -> None:
    # Pins: an unchanged or inconclusive probe counted as a win or a loss.
    rows = [
        record(UNCHANGED_PASS, "2026-08-05T00:00:00Z", rule_ids=["r-a"]),
        record(INCONCLUSIVE, "2026-08-05T00:00:01Z", rule_ids=["r-a"]),
        record("an outcome from a newer writer", "2026-08-05T00:00:02Z", rule_ids=["r-a"]),
    ]
    t = rule_tallies(rows)["r-a"]
    assert (t.observations, t.improved, t.regressed) == (3, 0, 0)


def test_last_validated_is_the_newest_row_whatever_the_file_order() -> None:
    # Pins: "last row wins", which reports a stale date when rows arrive out
    # of order (two machines appending to one synced store).
    rows = [
        record(IMPROVED, "2026-08-05T03:00:00Z", rule_ids=["r-a"]),
        record(IMPROVED, "2026-08-05T01:00:00Z", rule_ids=["r-a"]),
    ]
    assert rule_tallies(rows)["r-a"].last_validated == "2026-08-05T03:00:00Z"


def test_tallies_are_ordered_by_rule_id() -> None:
    # Pins: an order that depends on file order, which makes the wire answer
    # and the editor hover jitter between calls (the seed's map is sorted).
    tallies = rule_tallies([record(IMPROVED, "t", rule_ids=["r-c", "r-a"], attributed="r-b")])
    assert list(tallies) == ["r-a", "r-b", "r-c"]


def test_tallies_can_be_folded_for_one_domain() -> None:
    # Pins: a writing-domain probe counted against a behavior rule that
    # happens to share its id space.
    rows = [
        record(IMPROVED, "t1", rule_ids=["r-a"], domain="behavior"),
        record(REGRESSED, "t2", rule_ids=["r-a"], domain="writing"),
    ]
    assert rule_tallies(rows, domain="writing")["r-a"].regressed == 1
    assert rule_tallies(rows, domain="writing")["r-a"].improved == 0
    assert rule_tallies(rows)["r-a"].observations == 2


def test_a_record_omits_an_absent_attribution_and_reads_the_seeds_json() -> None:
    # Pins: `"attributed_rule_id": null` on the wire (the seed skips it), or a
    # row the Rust harness wrote that this side cannot read.
    plain = msgspec.json.decode(msgspec.json.encode(record(IMPROVED, "t")))
    assert "attributed_rule_id" not in plain
    assert list(plain) == [
        "reflexion_id",
        "trigger",
        "domain",
        "rules_hash",
        "rule_ids",
        "outcome",
        "model",
        "created_at",
    ]
    attributed = msgspec.json.decode(msgspec.json.encode(record(REGRESSED, "t", attributed="r-b")))
    assert attributed["attributed_rule_id"] == "r-b"

    from_rust = (
        b'{"reflexion_id":"x","trigger":"followup","domain":"behavior","rules_hash":"e71fa2190541574b",'
        b'"rule_ids":["r-1"],"outcome":"regressed","attributed_rule_id":"r-1","model":"m",'
        b'"created_at":"2026-08-05T00:00:00Z"}'
    )
    rec = msgspec.json.decode(from_rust, type=ValidationRecord)
    assert rec.attributed_rule_id == "r-1" and rec.rule_ids == ["r-1"]


def test_an_inconclusive_row_keeps_its_reason_and_a_proposals_row_its_id() -> None:
    rec = msgspec.structs.replace(record(INCONCLUSIVE, "t"), reason="the judge of the treatment arm: no JSON", proposal_id="p1")
    back = msgspec.json.decode(msgspec.json.encode(rec), type=ValidationRecord)
    assert (back.reason, back.proposal_id) == ("the judge of the treatment arm: no JSON", "p1")
    assert rule_tallies([back])["r-a"].observations == 1


def test_a_tally_has_the_documented_wire_shape() -> None:
    # Pins: the ledger's field names drifting, or `last_validated` vanishing
    # when unset (clients read it as null).
    wire = msgspec.to_builtins(RuleTally(observations=2, improved=1))
    assert wire == {
        "observations": 2,
        "improved": 1,
        "regressed": 0,
        "attributed_regressions": 0,
        "last_validated": None,
    }


def test_a_corrupt_validation_line_costs_one_measurement(
    store: LearningStore, caplog: pytest.LogCaptureFixture
) -> None:
    # Pins: one bad line (a hand edit, a torn append) losing the whole ledger.
    store.append_validation(record(IMPROVED, "t1"))
    with open(store.root / "validations.jsonl", "ab") as f:
        f.write(b'{"reflexion_id": "half a reco\n')
    store.append_validation(record(REGRESSED, "t2"))
    with caplog.at_level(logging.WARNING):
        back = store.validations()
    assert [r.created_at for r in back] == ["t1", "t2"]
    assert any("validation" in m for m in caplog.messages)


def test_pass_records_round_trip_through_runs_jsonl(store: LearningStore) -> None:
    # Pins: the audit line of a consolidation pass lost or reshaped, which
    # breaks the lineage from a rule back to the pass that wrote it.
    run = LeapRun(
        id="run-1",
        domain="behavior",
        reflexions_processed=4,
        rules_before=2,
        rules_after=3,
        created_at="2026-08-05T00:00:00Z",
    )
    store.append_run(run)
    assert store.runs() == [run]
    line = (store.root / "runs.jsonl").read_bytes().strip()
    assert msgspec.json.decode(line) == {
        "id": "run-1",
        "domain": "behavior",
        "reflexions_processed": 4,
        "rules_before": 2,
        "rules_after": 3,
        "created_at": "2026-08-05T00:00:00Z",
    }
