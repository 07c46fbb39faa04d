"""Resolving a proposal as one change (`mecha.core.store.transaction`):
staged, decided, applied — and a change cut short after its decision
finished by the next writer, never undone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import msgspec
import pytest

from mecha.core.errors import NotPending
from mecha.core.learning.proposals import accept_proposal, reject_proposal
from mecha.core.store import transaction
from mecha.core.store.layout import INTENT_FILE, JOURNAL_DIR
from mecha.core.store.learning_store import LearningStore, ProposalStatus
from tests.wire.helpers import proposal, reflexion, rule

PID = "20261201T000000-txn00001"
NEW = [rule("Ask before deleting files", "r-new")]


def a_store(tmp_path: Path) -> LearningStore:
    store = LearningStore.open(tmp_path / "learning")
    store.append_reflexions([reflexion("r1"), reflexion("r2")])
    store.write_proposal(proposal(PID, rules=NEW, reflexion_ids=["r1", "r2"]))
    store.commit("a proposal")
    return store


def decided_not_applied(store: LearningStore) -> None:
    """An accept cut short right after its intent was written: what a
    crash (or a full disk) between the decision and the renames leaves."""
    p = msgspec.structs.replace(store.proposal(PID), status=ProposalStatus.ACCEPTED, resolved_at="2026-12-01T00:00:01Z")
    change = transaction.Transaction(store.root, f"accept of proposal {PID}")
    change.stage(*store.rules_files.render_learned("behavior", NEW))
    change.stage_marks(store.records, ["r1", "r2"], "run-1")
    change.stage(*store.proposal_files.render(p))
    change.decide(f"accept proposal {PID}")


def test_an_accept_cut_short_after_its_decision_is_finished_by_the_next_writer(tmp_path: Path) -> None:
    # Pins: the rules of an accept live while its proposal reads pending,
    # and a reject then leaving a rejected proposal's rules in the block.
    store = a_store(tmp_path)
    decided_not_applied(store)
    assert store.proposal(PID).status is ProposalStatus.PENDING, "nothing is in place before the renames"
    assert store.learned_rules("behavior") == []
    with pytest.raises(NotPending):
        reject_proposal(store, PID, "too late")  # its lock finishes the accept first
    assert store.proposal(PID).status is ProposalStatus.ACCEPTED
    assert store.learned_rules("behavior") == NEW
    assert all(r.is_processed for r in store.reflexions())
    assert not (store.root / INTENT_FILE).exists() and not (store.root / JOURNAL_DIR).exists()
    log = subprocess.run(["git", "-C", str(store.root), "log", "--format=%s"], capture_output=True, text=True).stdout
    assert log.splitlines()[0] == f"accept proposal {PID}"


def test_a_reflection_appended_after_the_decision_survives_the_finish(tmp_path: Path) -> None:
    # Pins: the staged copy of the reflections file renamed over lines
    # appended after it was marked.
    store = a_store(tmp_path)
    decided_not_applied(store)
    store.append_reflexion(reflexion("r3"))
    LearningStore.open(store.root)  # opening finishes it too
    by_id = {r.id: r for r in store.reflexions()}
    assert sorted(by_id) == ["r1", "r2", "r3"]
    assert by_id["r1"].is_processed and by_id["r2"].is_processed and not by_id["r3"].is_processed
    assert by_id["r1"].leap_run_id == "run-1"


def test_staged_files_of_a_change_never_decided_are_removed_and_nothing_changes(tmp_path: Path) -> None:
    # Pins: a change abandoned before its decision applied, or its staged
    # files left for ever.
    store = a_store(tmp_path)
    change = transaction.Transaction(store.root, f"accept of proposal {PID}")
    change.stage(*store.rules_files.render_learned("behavior", NEW))
    assert os.listdir(store.root / JOURNAL_DIR)
    with store.lock():
        pass
    assert not (store.root / JOURNAL_DIR).exists()
    assert store.learned_rules("behavior") == [] and store.proposal(PID).status is ProposalStatus.PENDING
    assert accept_proposal(store, PID).status is ProposalStatus.ACCEPTED
    assert store.learned_rules("behavior") == NEW


def test_the_journal_is_kept_out_of_history(tmp_path: Path) -> None:
    store = a_store(tmp_path)
    decided_not_applied(store)
    store.commit("a commit while a change is in flight")
    tracked = subprocess.run(["git", "-C", str(store.root), "ls-files"], capture_output=True, text=True).stdout.split()
    assert not any(name.startswith(JOURNAL_DIR + "/") for name in tracked), tracked
