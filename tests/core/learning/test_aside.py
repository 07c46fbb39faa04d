"""Lessons seen, no rule yet: a lesson three learn passes saw without citing
is set aside, listed as such, and back in the pool when a newer lesson of its
scope shares its subject."""

from __future__ import annotations

import json
from pathlib import Path

from mecha.core.learning.aside import SEEN_WITHOUT_RULE
from mecha.core.learning.consolidation import Learner
from mecha.core.learning.learn import learn_domain, learn_refusal, learnable_pool, set_aside_in
from mecha.core.learning.lessons import list_lessons
from mecha.core.store.learning_store import LearningStore
from tests import builders
from tests.fakes import ScriptedProvider


def lesson(rid: str, text: str):
    return builders.reflexion(rid, text, session_id="s", trigger="followup", context="", intervention=text,
                              created_at="2026-12-01T00:00:00Z")


NOTHING = json.dumps({"rules": []})
TESTS_RULE = json.dumps({"rules": [{"rule": "Run the test suite before reporting a fix.", "based_on": ["R1"]}]})


async def test_a_lesson_seen_in_three_passes_without_a_rule_is_set_aside_until_a_newer_one_shares_its_subject(tmp_path: Path):
    # Pins: a lesson no rule cites shown to every pass for good, once an
    # accept consumes only the lessons its rules cite.
    store = LearningStore.open(tmp_path / "learning")
    store.append_reflexions([
        lesson("r-tests", "Run the test suite before reporting a fix."),
        lesson("r-status", "Update STATUS.md when a milestone lands."),
        lesson("r-emails", "Check the author emails of commits before pushing."),
    ])
    for _ in range(SEEN_WITHOUT_RULE):
        outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(NOTHING)), retry=True)
        assert outcome.status == "unchanged", outcome.outcome
    assert learnable_pool(store, "behavior") == []
    aside = set_aside_in(store)
    assert aside == {"r-tests": 3, "r-status": 3, "r-emails": 3}
    found, counts = list_lessons(store.reflexions(), aside=aside)
    assert counts.set_aside == 3 and all("seen, no rule yet: 3 learn passes" in (x.set_aside or "") for x in found)
    refusal = learn_refusal(store, "behavior", retry=True) or ""
    assert "3 more are set aside as seen, no rule yet" in refusal

    # A newer lesson about STATUS.md brings that one back, and only that one.
    store.append_reflexion(lesson("r-status-2", "Keep STATUS.md current after each milestone."))
    assert [r.id for r in learnable_pool(store, "behavior")] == ["r-status", "r-status-2"]


async def test_a_lesson_the_learner_cites_is_never_set_aside(tmp_path: Path):
    store = LearningStore.open(tmp_path / "learning")
    store.append_reflexions([lesson("r-tests", "Run the test suite before reporting a fix."),
                             lesson("r-status", "Update STATUS.md when a milestone lands."),
                             lesson("r-emails", "Check the author emails of commits before pushing.")])
    from mecha.core.learning.proposals import reject_proposal

    for _ in range(SEEN_WITHOUT_RULE):
        outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(TESTS_RULE)), retry=True)
        if outcome.proposal_id is not None:
            reject_proposal(store, outcome.proposal_id, "not yet")
    assert len([run for run in store.runs() if "r-tests" in run.cited]) == SEEN_WITHOUT_RULE
    assert set(set_aside_in(store)) == {"r-status", "r-emails"}, "the uncited ones are, the cited one is not"
    assert "r-tests" in [r.id for r in learnable_pool(store, "behavior")]
