"""What a client is told of the pending proposals, and when.

Each test pins one way a person could be shown the wrong number of proposals
waiting for them, or not be told at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mecha.core.learning.proposals import PendingSummary, pending_summary, should_announce
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus
from tests import builders


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    return LearningStore.open(tmp_path / "learning")


def proposal(pid: str, domain: str = "behavior", status: ProposalStatus = ProposalStatus.PENDING) -> Proposal:
    return builders.proposal(pid, [builders.rule("Ask first.")], domain=domain, status=status, reflexion_ids=["r1"],
                             created_at="2026-08-04T06:00:00Z")


def test_the_pending_summary_counts_only_pending_proposals_by_domain_with_its_ids_in_order(store: LearningStore):
    # Pins: a resolved proposal counted as waiting, a domain's tally missing
    # one, or two summaries of the same proposals comparing unequal because
    # the directory listed them in another order.
    for p in (
        proposal("p-2"),
        proposal("p-1", "writing"),
        proposal("p-3", status=ProposalStatus.ACCEPTED),
        proposal("p-4", "writing", ProposalStatus.REJECTED_BY_GATE),
        proposal("p-0"),
    ):
        store.write_proposal(p)
    summary = pending_summary(store)
    assert summary == PendingSummary(("p-0", "p-1", "p-2"), {"behavior": 2, "writing": 1})
    assert summary.count == 3


def test_nothing_is_pending_in_a_store_that_does_not_exist_yet():
    # Pins: an editor opened before the first run failing to tell its
    # client anything, rather than telling it nothing waits.
    assert pending_summary(None) == PendingSummary((), {})
    assert pending_summary(None).count == 0


def test_the_client_is_told_first_then_when_the_pending_set_moves_and_after_every_command():
    # Pins: a client never told the first count; one told on every poll;
    # one not told when an accept and a new proposal leave the count as it
    # was; and one left showing a proposal that was written and resolved
    # between two polls.
    none, one, other = PendingSummary(), PendingSummary(("p-1",), {"behavior": 1}), PendingSummary(("p-2",), {"behavior": 1})
    assert should_announce(None, none, after_command=False), "the first look is always told"
    assert not should_announce(one, PendingSummary(("p-1",), {"behavior": 1}), after_command=False)
    assert should_announce(one, none, after_command=False)
    assert should_announce(one, other, after_command=False), "same count, other proposals"
    assert should_announce(one, one, after_command=True), "after a command, whatever the poll saw"


def test_an_accept_that_landed_stands_when_its_promotions_cannot_be_filed(store: LearningStore, monkeypatch):
    # Pins: promotions are filed after the accept has landed; a full disk
    # there answered the whole accept as an error.
    from mecha.core.errors import StoreFull
    from mecha.core.learning import promotion
    from mecha.core.learning.proposals import accept

    p = builders.proposal("20260101T000000-acc00001", [builders.rule("Ask before deleting any file.", "r-ask")],
                          evidence="test", created_at="2026-01-01T00:00:00.000000Z")
    store.write_proposal(p)

    def full(*_: object) -> list[Proposal]:
        raise StoreFull("the disk holding the store is full", path=str(store.root))

    monkeypatch.setattr(promotion, "file_promotions", full)
    done = accept(store, p.id)
    assert done.proposal.status == ProposalStatus.ACCEPTED and done.promotions == []
    assert store.proposal(p.id).status == ProposalStatus.ACCEPTED
    assert [r.text for r in store.learned_rules("behavior")] == ["Ask before deleting any file."]
