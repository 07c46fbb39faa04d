"""The learn gate on sense: hand-made learner answers, bad and good, through
`gate_learned_set`, and what each files.

The bad answers are the ones the gate filed before it judged sense (a
platitude citing a lesson about tests, a sound rule citing the wrong lesson,
a live rule reworded without `replaces`, a live rule re-cased and cited, a
rule carrying an email address) and their near relations. The good answers
are what a capable learner writes over the same reflections. The figures:
of the bad, how many land in the proposed set (0); of the good, how many are
lost — refused, or taken for a rewrite of a live rule they do not rewrite (0).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from mecha.core.domain.reflexion import Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.learning.consolidation import LearnerAnswer, gate_learned_set, parse_learner_reply
from mecha.core.learning.sense import near_identical, overlap, platitude_reason, shares_content
from tests import builders


def reflexion(id: str, said: str, lesson: str) -> Reflexion:
    return builders.reflexion(id, lesson, session_id="s", trigger="followup", context="working in the repository",
                              intervention=said, created_at="t")


BATCH = [
    reflexion("r-tests", "you said it was fixed but never ran the tests", "Run the test suite before reporting that a fix works."),
    reflexion("r-lock", "don't touch the lockfile, only package.json", "Leave package-lock.json alone unless the person asks to change dependencies."),
    reflexion("r-error", "quote the actual error, not a summary of it", "Quote the exact error message when reporting a failure."),
    reflexion("r-pnpm", "use pnpm here, npm breaks the workspace", "Use pnpm rather than npm in this repository's workspace."),
    reflexion("r-push", "stop, never force-push to main", "Never force-push to the main branch."),
]
L1 = Rule(text="Run the tests before saying a change is done.", id="rule-tests", sources=["old-1", "old-2"])
L2 = Rule(text="Ask before deleting any file.", id="rule-delete", sources=["old-3"])
RETIRED = Rule(text="Commit straight to main to save time.", id="rule-main", retired_at="t0", retired_reason="regressed")
LIVE = [L1, L2, RETIRED]


def rule(text: str, *cites: str, replaces: tuple[str, ...] = ()) -> dict:
    return {"rule": text, "based_on": list(cites), "replaces": list(replaces)}


def answer(*rules: dict, keep: tuple[str, ...] = (L1.text, L2.text)) -> LearnerAnswer:
    """A learner answer: `rules`, then the live rules in `keep` word for word."""
    parsed = parse_learner_reply(json.dumps({"rules": [*rules, *({"rule": t} for t in keep)], "dropped": []}))
    assert parsed is not None
    return parsed


@dataclass
class Case:
    name: str
    answer: LearnerAnswer
    #: Bad: texts that must not be in the proposed set. Good: texts that must.
    texts: list[str]
    #: Live rule ids that must still be in the set, and ones that must not.
    live_kept: list[str] = field(default_factory=lambda: ["rule-tests", "rule-delete"])
    live_gone: list[str] = field(default_factory=list)
    #: A phrase the refusal's reason names (bad cases).
    reason: str = ""


BAD = [
    Case("a platitude citing a lesson about tests", answer(rule("Always be careful and thorough.", "R1")),
         ["Always be careful and thorough."], reason="platitude"),
    Case("another platitude", answer(rule("Make sure to do high quality work at all times.", "R3")),
         ["Make sure to do high quality work at all times."], reason="platitude"),
    Case("a sound rule citing the wrong lesson", answer(rule("Quote the exact error message when reporting a failure.", "R2")),
         ["Quote the exact error message when reporting a failure."], reason="shares no subject"),
    Case("a sound rule citing two wrong lessons", answer(rule("Use pnpm rather than npm.", "R1", "R5")),
         ["Use pnpm rather than npm."], reason="shares no subject"),
    Case("an email address", answer(rule("Send failure reports to pat.lee@acme-corp.com with the exact error.", "R3")),
         ["Send failure reports to pat.lee@acme-corp.com with the exact error."], reason="an email address"),
    Case("a host name", answer(rule("Run the test suite on build-07.corp.acme.net before reporting a fix.", "R1")),
         ["Run the test suite on build-07.corp.acme.net before reporting a fix."], reason="a host name"),
    Case("a token", answer(rule("Publish with pnpm using NPM_TOKEN=npm_AbCdEf0123456789AbCdEf0123456789ab.", "R4")),
         ["Publish with pnpm using NPM_TOKEN=npm_AbCdEf0123456789AbCdEf0123456789ab."], reason="secret"),
    Case("a home path", answer(rule("Use the pnpm in /home/pat/.local/bin for this workspace.", "R4")),
         ["Use the pnpm in /home/pat/.local/bin for this workspace."], reason="home directory"),
    Case("a retired rule reworded", answer(rule("Commit straight to main to save some time on the branch.", "R5")),
         ["Commit straight to main to save some time on the branch."], reason="retired rule"),
    Case("a live rule reworded beside itself", answer(rule("Run the test suite before saying a change is finished.", "R1")),
         ["Run the test suite before saying a change is finished."], reason="current rule L1"),
    Case("one rule twice in other words", answer(rule("Never force-push to the main branch.", "R5"),
                                                 rule("Do not ever force-push to the main branch.", "R5")),
         ["Do not ever force-push to the main branch."], reason="rule 1 of this proposal"),
]

# A live rule reworded without `replaces`, or re-cased and cited, in place of
# the live one: the bad outcome is both copies landing. The gate files one.
DUPLICATES = [
    ("a live rule reworded without replaces",
     answer(rule("Run the test suite before saying a change is finished.", "R1"), keep=(L2.text,)),
     "Run the test suite before saying a change is finished.", "rule-tests"),
    ("a live rule re-cased and cited",
     answer(rule("ASK BEFORE DELETING ANY FILE", "R2"), keep=(L1.text,)),
     "ASK BEFORE DELETING ANY FILE", "rule-delete"),
]

GOOD = [
    Case("a rule citing its lesson", answer(rule("Quote the exact error message when reporting a failure.", "R3")),
         ["Quote the exact error message when reporting a failure."]),
    Case("a project's own convention", answer(rule("Use pnpm, never npm, in this repository.", "R4")),
         ["Use pnpm, never npm, in this repository."]),
    Case("a generalised lesson", answer(rule("Never force-push or rewrite the history of main.", "R5")),
         ["Never force-push or rewrite the history of main."]),
    Case("a rewrite that says so",
         answer(rule("Run the full test suite and read its output before saying a change is done.", "R1", replaces=("L1",)),
                keep=(L2.text,)),
         ["Run the full test suite and read its output before saying a change is done."],
         live_kept=["rule-delete"], live_gone=["rule-tests"]),
    Case("a file named in a rule", answer(rule("Leave package-lock.json alone unless asked to change dependencies.", "R2")),
         ["Leave package-lock.json alone unless asked to change dependencies."]),
    Case("a public site named in a rule", answer(rule("Check pnpm.io for workspace flags before editing pnpm-workspace.yaml.", "R4")),
         ["Check pnpm.io for workspace flags before editing pnpm-workspace.yaml."]),
    Case("a merge over two lessons", answer(rule("Ask first before any destructive git or file operation.", "R2", "R5")),
         ["Ask first before any destructive git or file operation."]),
    Case("two lessons in one rule", answer(rule("Run pnpm test before reporting that a fix works.", "R1", "R4")),
         ["Run pnpm test before reporting that a fix works."]),
    Case("a new rule one word from a live one", answer(rule("Ask before deleting a branch.", "R5")),
         ["Ask before deleting a branch."]),
    Case("a whole set at once", answer(
        rule("Quote the exact error message when reporting a failure.", "R3"),
        rule("Use pnpm, never npm, in this repository.", "R4"),
        rule("Never force-push to the main branch.", "R5"),
        rule("Leave package-lock.json alone unless asked to change dependencies.", "R2"),
    ), ["Quote the exact error message when reporting a failure.", "Use pnpm, never npm, in this repository.",
        "Never force-push to the main branch.", "Leave package-lock.json alone unless asked to change dependencies."]),
]


def filed(case_answer: LearnerAnswer):
    out = gate_learned_set(case_answer, BATCH, LIVE)
    return out, [r.text for r in out.rules], {r.id for r in out.rules if r.id}


def test_bad_answers_file_nothing_bad_and_good_answers_lose_nothing(capsys):
    # Pins the closing note's figures: every bad rule refused or folded into
    # the live rule it copies (bad filed: 0), every good rule filed and no
    # live rule taken as rewritten by a rule that does not rewrite it (good
    # lost: 0).
    bad_filed = 0
    for case in BAD:
        out, texts, ids = filed(case.answer)
        landed = [t for t in case.texts if t in texts]
        bad_filed += len(landed)
        assert not landed, case.name
        assert any(case.reason in r.reason for r in out.refusals), (case.name, out.refusals)
        assert set(case.live_kept) <= ids, case.name
    for name, dup_answer, text, live_id in DUPLICATES:
        out, texts, ids = filed(dup_answer)
        both = live_id in ids and text in texts
        bad_filed += both
        assert not both, name
    good_lost = 0
    for case in GOOD:
        out, texts, ids = filed(case.answer)
        lost = [t for t in case.texts if t not in texts]
        lost_live = [i for i in case.live_kept if i not in ids]
        good_lost += len(lost) + len(lost_live)
        assert not lost and not lost_live, (case.name, out.refusals)
        assert not set(case.live_gone) & ids, case.name
        assert out.refusals == [], case.name
    with capsys.disabled():
        print(f"\nlearn gate on hand-made answers: bad {len(BAD) + len(DUPLICATES)} cases, filed {bad_filed}; "
              f"good {sum(len(c.texts) for c in GOOD)} rules, lost {good_lost}")
    assert (bad_filed, good_lost) == (0, 0)


def test_a_live_rule_reworded_without_replaces_is_taken_as_its_rewrite():
    # Pins: both copies landing ("Run the tests…" and "Run the test suite…").
    out, texts, ids = filed(DUPLICATES[0][1])
    new = next(r for r in out.rules if r.text == DUPLICATES[0][2])
    assert "rule-tests" not in ids and new.supersedes == ["rule-tests"]
    assert new.sources == ["old-1", "old-2", "r-tests"], "the rewrite keeps every source of the rule it replaces"
    assert [(d.rule_id, d.absorbed_by) for d in out.drops] == [("rule-tests", new.text)]
    assert out.refusals == []


def test_a_live_rule_re_cased_is_kept_as_it_is_with_the_new_citation_as_a_source():
    # Pins: "ASK BEFORE DELETING ANY FILE" landing beside "Ask before deleting any file.".
    out, texts, ids = filed(DUPLICATES[1][1])
    assert "ASK BEFORE DELETING ANY FILE" not in texts and L2.text in texts
    kept = next(r for r in out.rules if r.id == "rule-delete")
    assert kept.sources == ["old-3", "r-lock"] and out.drops == []


def test_a_refusal_for_personal_data_keeps_no_personal_data():
    # Pins: the proposal file (and the commit message naming refusals)
    # carrying the address the gate refused to file.
    out, _, _ = filed(BAD[4].answer)
    [refusal] = out.refusals
    assert "pat.lee" not in refusal.rule and "acme-corp" not in refusal.rule and "[email]" in refusal.rule
    assert "pat.lee" not in refusal.reason


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Run the tests before saying a change is done.", "Run the test suite before saying a change is finished.", True),
        ("Ask first.", "Always ask first.", True),
        ("Do not push to main.", "Push to main.", True),
        ("Ask before deleting any file.", "Ask before deleting a branch.", False),
        ("Use pnpm, never npm, in this repository.", "Run pnpm test before reporting that a fix works.", False),
        ("Quote the exact error message when reporting a failure.", "Run the test suite before reporting that a fix works.", False),
    ],
)
def test_near_identical_wording(a, b, same):
    assert near_identical(a, b) is same, overlap(a, b)


def test_the_word_tests_name_platitudes_and_shared_content():
    assert platitude_reason("Always be careful and thorough.") is not None
    assert platitude_reason("Be concise.") is None
    assert platitude_reason("Ask first.") is None
    assert shares_content("Run pnpm test first.", ["Run the test suite before reporting a fix."])
    assert shares_content("Ask before running destructive commands.", ["asks before deleting"])
    assert not shares_content("Always be careful with tests.", ["Be careful."])


async def test_a_learn_pass_names_every_refusal_in_its_outcome(tmp_path):
    # Pins: a pass outcome naming the first five refusals and "and 3 more".
    from mecha.core.learning.consolidation import Learner
    from mecha.core.learning.learn import learn_domain
    from mecha.core.store.learning_store import LearningStore
    from tests.fakes import ScriptedProvider

    store = LearningStore.open(tmp_path / "learning")
    store.append_reflexions(BATCH)
    bad = [{"rule": c.answer.rules[0].text, "based_on": c.answer.rules[0].based_on} for c in BAD[:8]]
    outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(json.dumps({"rules": bad}))))
    assert outcome.status == "refused" and len(outcome.refusals) == 8
    for r in outcome.refusals:
        assert r.reason in outcome.outcome
    assert "pat.lee" not in outcome.outcome and "more" not in outcome.outcome


# ─── Subject, sameness and the cap (the second round of hand-made answers) ──

MORE = [
    reflexion("r-venv", "use the venv this project owns, not the system python",
              "Run tools from the virtual environment the project owns, never the system Python."),
    reflexion("r-files", "you edited the config and a migration I never mentioned",
              "Ask before acting on config or migration files the task did not name."),
    reflexion("r-bench", "you compared timings from a cold cache",
              "Warm the cache before timing a benchmark, and compare medians of several runs."),
    reflexion("r-tests", "you said it was fixed but never ran the tests", "Run the test suite before reporting that a fix works."),
]
#: The store's lessons the gate weighs words against: "run" is in most of
#: them (as in a coding store), "benchmark" in one.
STORE_LESSONS = [r.reflexion_text for r in MORE] + [
    f"Run the {x} before saying a change is done." for x in ("linter", "formatter", "type checker", "build", "smoke tests", "migrations check")
] + [f"Keep {x} out of commits." for x in ("logs", "build output", "editor files", "local settings")]


def gate_more(*rules: dict):
    parsed = parse_learner_reply(json.dumps({"rules": list(rules), "dropped": []}))
    assert parsed is not None
    out = gate_learned_set(parsed, MORE, [], store_lessons=STORE_LESSONS)
    return out, [r.text for r in out.rules]


SUBJECT_BAD = [
    # (name, rule, cites, phrase the refusal names)
    ("a GPU kernel rule citing a venv lesson through “owns”",
     "Profile the GPU kernels the team owns before rewriting them.", ("R1",), "no subject"),
    ("a benchmark rule citing a test lesson through “before”",
     "Record the benchmark results before changing a kernel.", ("R4",), "no subject"),
    ("a benchmark rule citing a lint lesson through a word most lessons hold",
     "Run each benchmark three times.", ("R1",), "only a common word"),
]
SUBJECT_GOOD = [
    ("a benchmark rule citing the benchmark lesson", "Compare medians of several benchmark runs, never one cold run.", ("R3",)),
    ("a rule sharing two words most lessons hold", "Run the test suite and read its output before saying a fix works.", ("R4",)),
    ("two rules one object apart, the first", "Ask before acting on config files.", ("R2",)),
    ("a venv rule citing the venv lesson", "Use the project's virtual environment for every tool.", ("R1",)),
]


def test_subject_and_sameness_on_hand_made_answers(capsys):
    bad_filed = 0
    for name, text, cites, phrase in SUBJECT_BAD:
        out, texts = gate_more(rule(text, *cites))
        bad_filed += text in texts
        assert text not in texts, name
        assert any(phrase in r.reason for r in out.refusals), (name, out.refusals)
    good = [rule(t, *c) for _, t, c in SUBJECT_GOOD] + [rule("Ask before acting on migration files.", "R2")]
    out, texts = gate_more(*good)
    good_lost = sum(g["rule"] not in texts for g in good)
    assert out.refusals == [], out.refusals
    with capsys.disabled():
        print(f"\nlearn gate, subject and sameness: bad {len(SUBJECT_BAD)}, filed {bad_filed}; "
              f"good {len(good)}, lost {good_lost}")
    assert (bad_filed, good_lost) == (0, 0)


def test_two_rules_one_object_apart_are_both_filed():
    # Pins: "… config files." refused as saying in other words what
    # "… migration files." says.
    out, texts = gate_more(rule("Ask before acting on config files.", "R2"), rule("Ask before acting on migration files.", "R2"))
    assert texts == ["Ask before acting on config files.", "Ask before acting on migration files."], out.refusals
    assert not near_identical("Ask before acting on config files.", "Ask before acting on migration files.")
    assert not near_identical("Ask before editing config files.", "Ask before deleting config files."), "another action"


def test_a_rule_reworded_by_a_synonym_swap_is_two_rules_to_these_words():
    # The cost of "each holding a word of its own is two rules": a learner
    # swapping one word of a live rule for a synonym files a second copy
    # (kept here so the figure reported is the measured one, not a hope).
    assert not near_identical("Run the tests before calling a change finished.", "Run the tests before calling a change complete.")


async def test_sixteen_distinct_rules_are_refused_for_growth_past_the_cap(tmp_path):
    # Pins: sixteen rules one object apart folded into one by the sameness
    # test, and that one filed.
    from mecha.core.learning.consolidation import Learner
    from mecha.core.learning.learn import learn_domain
    from mecha.core.store.learning_store import LearningStore
    from tests.fakes import ScriptedProvider

    store = LearningStore.open(tmp_path / "learning")
    store.append_reflexions(MORE)
    objects = ["config", "migration", "lock", "fixture", "schema", "workflow", "docker", "terraform", "helm",
               "proto", "vendor", "snapshot", "seed", "secret", "license", "changelog"]
    rules = [{"rule": f"Ask before acting on {o} files.", "based_on": ["R2"]} for o in objects]
    outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(json.dumps({"rules": rules}))))
    assert outcome.status == "rejected_by_gate", outcome.outcome
    [p] = store.proposals()
    assert "16 active rules is over the cap of 15" in (p.reason or "")
    assert not any(r.is_processed for r in store.reflexions()), "its lessons return to the pool"


async def test_fifteen_rules_the_gate_folds_are_still_sixteen_to_the_cap(tmp_path):
    # "The cap refuses growth past 15 whatever the dedupe does": one of
    # sixteen repeats another in other words; the learner still went past the cap.
    from mecha.core.learning.consolidation import Learner
    from mecha.core.learning.learn import learn_domain
    from mecha.core.store.learning_store import LearningStore
    from tests.fakes import ScriptedProvider

    store = LearningStore.open(tmp_path / "learning")
    store.append_reflexions(MORE)
    objects = ["config", "migration", "lock", "fixture", "schema", "workflow", "docker", "terraform", "helm",
               "proto", "vendor", "snapshot", "seed", "secret", "license"]
    rules = [{"rule": f"Ask before acting on {o} files.", "based_on": ["R2"]} for o in objects]
    rules.append({"rule": "Always ask before acting on config files.", "based_on": ["R2"]})
    outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(json.dumps({"rules": rules}))))
    assert outcome.status == "rejected_by_gate", outcome.outcome
    assert "the model proposed 16" in (store.proposals()[0].reason or "")
