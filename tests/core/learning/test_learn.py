"""The loop going on by itself: which domains a learn pass starts for once a
reflect pass an agent's hook started is done (`learn.domains_to_learn`).
A real store and real reflections."""

from __future__ import annotations

from pathlib import Path

import pytest

from mecha.core.domain.reflexion import Origin
from mecha.core.domain.rules import LEARN_MIN_REFLECTIONS
from mecha.core.learning.learn import domains_to_learn
from mecha.core.store.learning_store import LearningStore
from tests import builders
from tests.core.learning.test_learn_in_scopes import reflexion


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    return LearningStore.open(tmp_path / "learning")


def test_a_domain_is_learned_once_it_holds_the_seeds_minimum_of_learnable_lessons(store: LearningStore) -> None:
    # Pins: a learn pass started for a single lesson (a proposal argued
    # from one correction), or never started at all.
    store.append_reflexions([reflexion(f"b{i}", None) for i in range(LEARN_MIN_REFLECTIONS - 1)])
    assert domains_to_learn(store) == []
    store.append_reflexions([reflexion("b-last", None)])
    assert domains_to_learn(store) == ["behavior"]


def test_untrusted_lessons_do_not_count_toward_a_learn_pass(store: LearningStore) -> None:
    # Pins: a learn pass started by lessons no rule may ever be learned from.
    store.append_reflexions([reflexion(f"u{i}", None, origin=Origin.UNTRUSTED) for i in range(5)])
    assert domains_to_learn(store) == []


def test_each_domain_and_project_scope_counts_on_its_own(store: LearningStore, tmp_path: Path) -> None:
    # Pins: two lessons in a project and one global pooled into a pass that
    # would then be refused in each scope.
    app = str(tmp_path / "app")
    store.append_reflexions([reflexion("a1", app), reflexion("a2", app), reflexion("g1", None)])
    store.append_reflexions([reflexion(f"w{i}", app, domain="writing") for i in range(3)])
    assert domains_to_learn(store) == ["writing"]


def test_a_domain_with_a_pass_running_or_a_proposal_waiting_is_left_alone(store: LearningStore) -> None:
    # Pins: a second pass whose result would only be dropped, and a second
    # proposal for the person to review beside the first.
    store.append_reflexions([reflexion(f"b{i}", None) for i in range(3)])
    assert domains_to_learn(store, busy={"behavior"}) == []
    store.write_proposal(builders.proposal("p-1", created_at="2026-11-01T10:00:00Z"))
    assert domains_to_learn(store) == []
