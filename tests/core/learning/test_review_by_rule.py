"""Review rule by rule: accept a proposal without some of its changes, reject
one without losing its lessons, and a rejected proposal not filed again."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mecha.core.domain.reflexion import Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.errors import InvalidInput
from mecha.core.learning.consolidation import Learner
from mecha.core.learning.learn import learn_domain
from mecha.core.learning.proposals import accept, numbered_changes, proposal_changes_in, reject_proposal
from mecha.core.store.learning_store import LearningStore
from tests import builders
from tests.builders import write_learned_rules
from tests.fakes import ScriptedProvider

LESSONS = {
    "r-err": ("quote the actual error please", "Quote the exact error message when reporting a failure."),
    "r-pnpm": ("use pnpm here, npm breaks the workspace", "Use pnpm rather than npm in this workspace."),
    "r-tests": ("you never ran the test suite", "Run the full test suite before saying a change is done."),
    "r-push": ("never force-push to main", "Never force-push to the main branch."),
}
LIVE = [
    Rule(text="Run the tests before saying a change is done.", id="rule-tests", sources=["old-1"]),
    Rule(text="Ask before deleting any file.", id="rule-delete", sources=["old-2"]),
]


def reflexion(rid: str) -> Reflexion:
    said, lesson = LESSONS[rid]
    return builders.reflexion(rid, lesson, session_id="s", trigger="followup", context="", intervention=said,
                              created_at="2026-12-01T00:00:00Z")


def learner_answer() -> str:
    """Adds two rules (1, 2), rewrites the live test rule (3, which removes
    it: 4), drops the live delete rule citing the force-push lesson (5)."""
    return json.dumps({
        "rules": [
            {"rule": "Quote the exact error message when reporting a failure.", "based_on": ["R1"]},
            {"rule": "Use pnpm, never npm, in this workspace.", "based_on": ["R2"]},
            {"rule": "Run the full test suite and read its output before saying a change is done.",
             "based_on": ["R3"], "replaces": ["L1"]},
        ],
        "dropped": [{"rule": "L2", "contradicted_by": "R4"}],
    })


@pytest.fixture
async def proposed(tmp_path: Path) -> tuple[LearningStore, str]:
    store = LearningStore.open(tmp_path / "learning")
    write_learned_rules(store, "behavior", LIVE)
    store.append_reflexions([reflexion(i) for i in LESSONS])
    outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(learner_answer())))
    assert outcome.status == "pending", outcome.outcome
    assert outcome.proposal_id is not None
    return store, outcome.proposal_id


def by_id(store: LearningStore) -> dict[str, Reflexion]:
    return {r.id: r for r in store.reflexions()}


async def test_changes_are_numbered_as_proposals_show_lists_them(proposed):
    store, pid = proposed
    p = store.proposal(pid)
    assert [(c.number, c.change) for c in numbered_changes(p)] == [(1, "added"), (2, "added"), (3, "changed"), (4, "removed"), (5, "removed")]
    assert [c.number for c in proposal_changes_in(store, p)] == [1, 2, 3, 4, 5], "the wire numbers them the same"


async def test_accept_without_a_rule_writes_the_rest_and_returns_its_lessons_to_the_pool(proposed):
    # Pins: one doubtful rule costing the whole batch (reject), or the only
    # other road being accept-then-retire; and then leaving a rule out that
    # cited the wrong lesson marking that innocent lesson "rejected by you".
    store, pid = proposed
    done = accept(store, pid, without=[2], reason="npm is fine in the docs folder")
    live = [r.text for r in store.learned_rules("behavior")]
    assert "Use pnpm, never npm, in this workspace." not in live
    assert "Quote the exact error message when reporting a failure." in live
    assert "Run the full test suite and read its output before saying a change is done." in live
    reflections = by_id(store)
    assert reflections["r-pnpm"].rejected is None and not reflections["r-pnpm"].is_processed, "back in the pool"
    assert all(reflections[i].rejected is None and reflections[i].is_processed for i in ("r-err", "r-tests", "r-push"))
    [left] = done.proposal.left_out
    assert (left.number, left.change, left.rejected, left.reason) == (2, "added", [], "npm is fine in the docs folder")
    assert store.proposal(pid).rules == store.learned_rules("behavior"), "the proposal records what was written"


async def test_accept_naming_a_change_wrong_leaves_it_out_and_rejects_only_its_lessons(proposed):
    store, pid = proposed
    done = accept(store, pid, wrong=[2], reason="npm is fine in the docs folder")
    assert "Use pnpm, never npm, in this workspace." not in [r.text for r in store.learned_rules("behavior")]
    reflections = by_id(store)
    assert reflections["r-pnpm"].rejected == "npm is fine in the docs folder" and reflections["r-pnpm"].is_processed
    assert all(reflections[i].rejected is None for i in ("r-err", "r-tests", "r-push"))
    [left] = done.proposal.left_out
    assert (left.number, left.rejected) == (2, ["r-pnpm"])


async def test_leaving_out_a_rewrite_keeps_the_rule_it_replaced_and_a_removal_keeps_the_live_rule(proposed):
    store, pid = proposed
    accept(store, pid, without=[3, 5])
    live = store.learned_rules("behavior")
    assert [r.id for r in live if r.id in ("rule-tests", "rule-delete")] == ["rule-tests", "rule-delete"]
    assert [r.text for r in live if r.id not in ("rule-tests", "rule-delete")] == [
        "Quote the exact error message when reporting a failure.", "Use pnpm, never npm, in this workspace.",
    ]
    reflections = by_id(store)
    assert not reflections["r-tests"].is_processed and not reflections["r-push"].is_processed, (
        "the left-out rewrite's and drop's lessons go back to the pool"
    )
    accept_wrong = reflections["r-tests"].rejected
    assert accept_wrong is None


async def test_a_change_named_wrong_without_a_reason_says_which_change(proposed):
    store, pid = proposed
    accept(store, pid, wrong=[3, 5])
    reflections = by_id(store)
    assert reflections["r-tests"].rejected and reflections["r-push"].rejected, "the rewrite's and the drop's lessons"
    assert "change 3 of proposal" in (reflections["r-tests"].rejected or ""), "no reason given: it says which change"


async def test_accept_without_refuses_numbers_it_does_not_have_and_leaving_out_everything(proposed):
    store, pid = proposed
    with pytest.raises(InvalidInput, match=r"without: 6, 9 is not a change of proposal .*numbered 1 to 5"):
        accept(store, pid, without=[6, 9])
    with pytest.raises(InvalidInput, match="reject it instead"):
        accept(store, pid, without=[1, 2, 3, 4, 5])
    assert store.proposal(pid).status.value == "pending", "a refused accept changes nothing"
    assert not any(r.is_processed for r in store.reflexions())


async def test_an_accept_of_a_one_rule_proposal_over_four_lessons_leaves_three_in_the_pool(tmp_path: Path):
    # Pins: accepting one rule marking all four lessons "used by a proposal",
    # so three that never made a rule could not add weight to a later one.
    store = LearningStore.open(tmp_path / "learning")
    store.append_reflexions([reflexion(i) for i in LESSONS])
    one = json.dumps({"rules": [{"rule": "Use pnpm rather than npm in this workspace.", "based_on": ["R2"]}]})
    outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(one)))
    assert outcome.proposal_id is not None, outcome.outcome
    accept(store, outcome.proposal_id)
    assert [r.id for r in store.learnable_unprocessed("behavior")] == ["r-err", "r-tests", "r-push"]
    assert by_id(store)["r-pnpm"].is_processed
    assert "1 reflection(s) used and marked processed; 3 back in the pool" in _log(store)


def _log(store: LearningStore) -> str:
    import subprocess

    return subprocess.run(["git", "log", "-1", "--format=%B"], cwd=store.root, capture_output=True, text=True).stdout


async def test_a_rejected_proposals_lessons_go_back_to_the_pool_unless_named_wrong(proposed):
    # Pins: 21 lessons lost to one rejection over one doubtful rule.
    store, pid = proposed
    p = reject_proposal(store, pid, "the pnpm rule is wrong for this repo", wrong=[2])
    reflections = by_id(store)
    assert reflections["r-pnpm"].is_processed and reflections["r-pnpm"].rejected == "the pnpm rule is wrong for this repo"
    assert not any(reflections[i].is_processed for i in ("r-err", "r-tests", "r-push")), "back in the pool"
    assert [x.number for x in p.left_out] == [2]
    assert {r.id for r in store.learnable_unprocessed("behavior")} == {"r-err", "r-tests", "r-push"}


async def test_a_rejected_proposal_is_not_filed_again_unchanged(proposed):
    store, pid = proposed
    reject_proposal(store, pid, "not now")
    again = await learn_domain(store, "behavior", Learner(ScriptedProvider(learner_answer())))
    assert again.proposal_id is None and again.status == "unchanged"
    assert pid in again.outcome and "not now" in again.outcome
    assert [p.id for p in store.proposals()] == [pid]
    # The same pool is not argued again until a lesson joins it …
    again = await learn_domain(store, "behavior", Learner(ScriptedProvider(learner_answer())))
    assert again.outcome.startswith("nothing to do")
    # … and a different answer is a new proposal.
    store.append_reflexion(reflexion("r-push").__class__(**{**{f: getattr(reflexion("r-push"), f) for f in Reflexion.__struct_fields__}, "id": "r-new"}))
    other = json.dumps({"rules": [{"rule": "Never force-push to the main branch.", "based_on": ["R4"]}], "dropped": []})
    filed = await learn_domain(store, "behavior", Learner(ScriptedProvider(other)))
    assert filed.status == "pending", filed.outcome


async def test_the_lessons_listing_says_which_lessons_a_person_rejected_and_why(proposed):
    from mecha.core.learning.lessons import lesson_view

    store, pid = proposed
    accept(store, pid, wrong=[1], reason="we summarise errors on purpose")
    views = {r.id: lesson_view(r) for r in store.reflexions()}
    assert views["r-err"].rejected == "we summarise errors on purpose"
    assert views["r-pnpm"].rejected is None and views["r-pnpm"].processed


async def test_a_rule_rewritten_by_a_later_pass_keeps_every_source_and_why_shows_them(tmp_path: Path):
    # Pins: a rewrite keeping only the new reflection as its sources, so
    # `why` showed one correction where its count said four.
    from mecha.core.learning.proposals import rule_sources

    store = LearningStore.open(tmp_path / "learning")
    store.append_reflexions([reflexion("r-tests"), reflexion("r-err")])
    first = json.dumps({"rules": [{"rule": "Run the full test suite before saying a change is done.",
                                   "based_on": ["R1", "R2"]}]})
    outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(first)), minimum=1)
    assert outcome.proposal_id is not None, outcome.outcome
    accept(store, outcome.proposal_id)
    [live] = store.learned_rules("behavior")
    assert live.sources == ["r-tests", "r-err"]

    store.append_reflexion(reflexion("r-push").__class__(**{
        **{f: getattr(reflexion("r-tests"), f) for f in Reflexion.__struct_fields__},
        "id": "r-tests-2", "intervention": "you said done again without running pytest",
    }))
    rewrite = json.dumps({"rules": [{"rule": "Run pytest and read its output before saying a change is done.",
                                     "based_on": ["R1"], "replaces": ["L1"]}]})
    outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(rewrite)), minimum=1)
    assert outcome.proposal_id is not None, outcome.outcome
    accept(store, outcome.proposal_id)
    [rewritten] = store.learned_rules("behavior")
    assert rewritten.supersedes == [live.id]
    why = rule_sources(store, rewritten.id or "")
    assert [s.reflexion_id for s in why.sources] == ["r-tests", "r-err", "r-tests-2"]
    assert all(s.on_record for s in why.sources)


async def test_an_accept_with_an_edit_lands_the_persons_words_and_why_shows_them_first(proposed):
    # Pins: a person able to accept, leave out or reject a rule but not fix its words.
    from mecha.core.learning.proposals import rule_sources

    store, pid = proposed
    mine = "Quote the error message word for word when a command fails."
    done = accept(store, pid, edits={1: mine}, without=[2])
    live = store.learned_rules("behavior")
    assert mine in [r.text for r in live]
    assert "Quote the exact error message when reporting a failure." not in [r.text for r in live]
    rule = next(r for r in live if r.text == mine)
    assert rule.edited is not None and rule.edited.was == "Quote the exact error message when reporting a failure."
    why = rule_sources(store, rule.id or "")
    assert [s.trigger for s in why.sources][:2] == ["person_edit", "followup"]
    assert why.sources[0].text == mine and why.sources[1].reflexion_id == "r-err"
    assert by_id(store)["r-err"].is_processed, "the lesson the edited rule rests on is used"
    assert mine in (store.root / "rules" / "behavior.learned.toml").read_text()
    assert f"Edited by the person: {mine}" in _log(store)
    assert done.proposal.rules == live


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({4: "Keep it."}, "removed a rule; only a new or changed rule"),
        ({2: "Use pnpm."}, "is left out; it cannot also be edited"),
        ({1: "Quote the error.\nAnd more."}, "line break"),
        ({1: "Mail failures to pat.lee@acme-corp.com."}, "personal data (an email address)"),
        ({1: "Ask before deleting any file."}, "another rule already says"),
        ({1: "x " * 300}, "at most 400"),
        ({9: "Anything."}, "9 is not a change"),
    ],
)
async def test_an_edit_is_checked_for_form_and_personal_data_and_refused_by_name(proposed, edit, message):
    store, pid = proposed
    with pytest.raises(InvalidInput, match=re.escape(message)):
        accept(store, pid, edits=edit, without=[2])
    assert store.proposal(pid).status.value == "pending", "a refused edit changes nothing"


async def test_an_edit_is_not_judged_for_sense(proposed):
    # The person's words need share no word with the lesson: they know better.
    store, pid = proposed
    accept(store, pid, edits={1: "Paste failing output verbatim."})
    assert "Paste failing output verbatim." in [r.text for r in store.learned_rules("behavior")]
