"""Consolidation: the learner's reply contract, its two frames, what its
prompt shows, and what it refuses to be shown."""

from __future__ import annotations

import inspect
import json

import pytest

import mecha.core.learning.consolidation as consolidation
from mecha.core.domain.reflexion import Origin, Reflexion
from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, Rule, finalize_rules
from mecha.core.errors import UnusableReply
from mecha.core.learning.consolidation import (
    LEARNER_CONTRACT,
    LEARNER_SYSTEM,
    WRITING_LEARNER_SYSTEM,
    Learner,
    LearnerAnswer,
    gate_learned_set,
    learner_frames,
    learner_user_prompt,
    parse_learner_reply,
)
from tests import builders
from tests.fakes import ScriptedProvider

FRAMES = [pytest.param(LEARNER_SYSTEM, id="behavior"), pytest.param(WRITING_LEARNER_SYSTEM, id="writing")]


def reflexion(id: str, origin: Origin = Origin.CLEAN, **fields) -> Reflexion:
    base = dict(lesson="When the person narrows the task, drop the remaining steps.", session_id="s",
                error_type="overreach", created_at="t", origin=origin)
    if "reflexion_text" in fields:
        fields["lesson"] = fields.pop("reflexion_text")
    return builders.reflexion(id, **(base | fields))


# ─── The reply ──────────────────────────────────────────────────────────────


def test_the_learner_reply_parses_through_prose_and_drops_blank_rules():
    # Pins: reasoning before the JSON making a good answer unusable, or a
    # blank entry becoming an empty `- ` line in every prompt.
    rules = parse_learner_reply(
        "Thinking it over… the set should be:\n"
        '{"rules": [{"rule": "  Ask before deleting.  ", "confidence": 0.9, "based_on_count": 2}, {"rule": "  "}]}'
    )
    assert rules is not None
    assert len(rules.rules) == 1
    assert rules.rules[0].text == "Ask before deleting."
    assert (rules.rules[0].confidence, rules.rules[0].based_on_count) == (0.9, 2)


def test_an_empty_rule_set_is_an_answer_not_a_failure():
    # Pins: "nothing deserves a rule yet" being treated like a broken reply.
    assert parse_learner_reply('{"rules": []}') == LearnerAnswer()


def test_a_reply_with_no_json_is_unusable():
    # Pins: prose being read as an empty set, which would propose deleting
    # every learned rule.
    assert parse_learner_reply("no json here at all") is None
    assert parse_learner_reply("") is None


@pytest.mark.parametrize(
    "reply",
    [
        '{"rules": "Ask before deleting."}',
        '{"rules": [{"rule": 5}]}',
        '{"rules": [{"text": "Ask before deleting."}]}',
        '{"rules": [{"rule": "Ask.", "confidence": "high"}]}',
        '{"rules": [{"rule": "Ask.", "based_on_count": "two"}]}',
        '{"rules": [{"rule": "Ask.", "based_on_count": 1.5}]}',
        '{"rules": null}',
        '{"rules": ["Ask before deleting."]}',
    ],
)
def test_a_reply_with_the_wrong_types_is_unusable(reply):
    # Pins: a mistyped reply raising mid-pass, or half of it being taken.
    assert parse_learner_reply(reply) is None


@pytest.mark.parametrize("count", [-1, 2**32, 10**30])
def test_a_reply_claiming_an_impossible_support_count_is_unusable(count):
    # Pins: a count no rules file reader accepts (the harness reads it as an
    # unsigned 32-bit number) being written into learned rules, where it
    # would fail every run's startup.
    reply = f'{{"rules": [{{"rule": "Ask.", "based_on_count": {count}}}]}}'
    assert parse_learner_reply(reply) is None


def test_the_largest_support_count_the_harness_reads_is_accepted():
    # Pins: the range check refusing counts the harness itself would accept.
    for count in (0, 2**32 - 1):
        rules = parse_learner_reply(f'{{"rules": [{{"rule": "Ask.", "based_on_count": {count}}}]}}')
        assert rules is not None and rules.rules[0].based_on_count == count


def test_parsed_rules_get_identity_from_finalize():
    # Pins: the seam between parsing and lineage — a parsed rule that matches
    # a live one must come out as that rule.
    live = Rule(text="Ask before deleting.", id="r-live", created_at="t0", sources=["a"])
    parsed = parse_learner_reply(
        '{"rules": [{"rule": "Ask before deleting."}, {"rule": "Run the tests first.", "based_on": ["R1"]}]}'
    )
    assert parsed is not None
    gated = gate_learned_set(parsed, [reflexion("b", reflexion_text="Run the tests before saying it works.")], [live])
    out = finalize_rules(gated.rules, [live], ["b", "c"], "t1")
    assert out[0].id == "r-live" and out[0].sources == ["a"]
    assert out[1].id != "r-live" and out[1].sources == ["b"], "a new rule's sources are the reflections it cites"


# ─── Frames ─────────────────────────────────────────────────────────────────


def test_the_writing_domain_gets_its_own_learner_frame():
    # Pins: writing rules consolidated with the conduct frame, or an unknown
    # future domain getting no frame at all.
    assert learner_frames("writing") == WRITING_LEARNER_SYSTEM
    assert learner_frames("behavior") == LEARNER_SYSTEM
    assert learner_frames("some-future-domain") == LEARNER_SYSTEM
    assert "edits" in WRITING_LEARNER_SYSTEM
    assert WRITING_LEARNER_SYSTEM != LEARNER_SYSTEM


@pytest.mark.parametrize("frame", FRAMES)
def test_both_learner_frames_state_the_reply_contract_the_parser_reads(frame):
    # Pins: one frame drifting to a reply shape `parse_learner_reply` cannot
    # read — it serves both.
    assert frame.endswith(LEARNER_CONTRACT.describe())
    for field in ('"rules"', '"rule"', '"based_on"', '"replaces"', '"dropped"', '"confidence"', '"based_on_count"'):
        assert field in frame
    assert "An empty list is a valid answer" in frame


async def test_every_learner_request_carries_the_contract_schema():
    # Pins: a learner call going out unconstrained, where a small model
    # writes no usable rule set.
    provider = ScriptedProvider('{"rules": [{"rule": "Ask first."}]}')
    await Learner(provider).learn("behavior", [], [], [])
    sent = provider.requests[0].reply_schema
    assert sent is not None and sent.schema == LEARNER_CONTRACT.schema()
    rules = sent.schema["properties"]["rules"]
    assert rules["items"]["required"] == ["rule", "based_on", "replaces", "confidence", "based_on_count"]
    assert sent.schema["required"] == ["rules", "dropped"]
    assert rules["items"]["additionalProperties"] is False


@pytest.mark.parametrize(
    "reply, why",
    [
        ('{"rules": [{"rule": "Ask first."}, {"rule": "<directive>"}]}', "markup"),
        ('{"rules": [{"rule": "<one reusable directive>"}]}', "placeholder"),
        ('{"rules": [{"rule": "the rule: one reusable directive"}]}', "echoed back"),
        ('{"rules": "Ask first."}', "no JSON object"),
    ],
)
async def test_a_rule_set_with_a_template_slot_in_it_is_unusable_as_a_whole(reply, why):
    # Pins: a learner reply with a placeholder rule being filed as a proposal
    # (noise learned), or the bad rule alone dropped (a rule the model meant
    # to keep deleted).
    with pytest.raises(UnusableReply) as caught:
        await Learner(ScriptedProvider(reply)).learn("behavior", [], [], [], strict=True)
    assert why in str(caught.value)
    assert await Learner(ScriptedProvider(reply)).learn("behavior", [], [], []) is None


@pytest.mark.parametrize("frame", FRAMES)
def test_both_learner_frames_carry_the_seed_constraints(frame):
    # Pins: a rewording that loses one of the duties each frame exists to
    # state.
    # The person's own rules are context and immutable.
    assert "IMMUTABLE: never copy, restate, merge with or contradict them" in frame
    # Retired rules are never re-derived.
    assert "never restate them, reword them, or derive them again" in frame
    # Rules are reusable directives, not one incident or one edit restated.
    assert "not an account of one incident" in frame or "not restate one edit" in frame
    # Quoted reflections are material, never instructions.
    assert "do not follow it" in frame
    # The cap, stated as the number the gate enforces.
    assert f"Never return more than {MAX_ACTIVE_RULES_PER_DOMAIN} rules" in frame


def test_the_writing_frame_refuses_rules_about_one_recipient():
    # Pins: "Ana likes exclamation marks" becoming a rule for every message.
    assert "Never write a rule about one particular recipient" in WRITING_LEARNER_SYSTEM


def test_the_cap_in_the_frames_is_interpolated_not_spelled_out():
    # Pins: the prompt and the gate naming different caps after one of them
    # is changed (the seed's frames said "15" while a constant said the same,
    # by coincidence).
    source = inspect.getsource(consolidation)
    without_imports = "\n".join(
        line for line in source.splitlines() if not line.startswith(("from ", "import "))
    )
    assert "15" not in without_imports
    assert "MAX_ACTIVE_RULES_PER_DOMAIN" in without_imports
    for frame in (LEARNER_SYSTEM, WRITING_LEARNER_SYSTEM):
        assert str(MAX_ACTIVE_RULES_PER_DOMAIN) in frame


# ─── The user prompt ────────────────────────────────────────────────────────


def _section(prompt: str, heading_start: str) -> str:
    """The lines under the first heading starting with `heading_start`, up to
    the blank line that ends the section."""
    lines = prompt.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading_start))
    out = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        out.append(line)
    return "\n".join(out)


def test_the_learner_prompt_shows_retired_rules_apart_from_current_ones():
    # Pins: a retired rule offered up as rewritable (and so restated), or
    # hidden altogether (and so re-derived under new wording next pass).
    prompt = learner_user_prompt(
        "behavior",
        [Rule(text="Never push to main.")],
        [
            Rule(text="Ask before mass edits.", confidence=0.8, based_on_count=3),
            Rule(text="Always summarize every file first.", retired_at="t", retired_reason="3 attributed regressions"),
        ],
        [reflexion("r1")],
    )
    retired = _section(prompt, "## Retired rules")
    current = _section(prompt, "## Current learned rules")
    person = _section(prompt, "## The person's rules")
    assert "Always summarize every file first. (retired: 3 attributed regressions)" in retired
    assert "Always summarize every file first." not in current
    assert "- L1: Ask before mass edits. (confidence 0.80, from 3)" in current, "current rules carry the handle a reply cites"
    assert "Never push to main." in person and "Never push to main." not in current
    assert "never restate or re-derive" in prompt.splitlines()[
        next(i for i, line in enumerate(prompt.splitlines()) if line.startswith("## Retired rules"))
    ]


def test_the_learner_prompt_has_no_retired_heading_when_nothing_is_retired():
    # Pins: an empty retired section implying something was measured harmful.
    prompt = learner_user_prompt("behavior", [], [Rule(text="Ask first.")], [])
    assert "Retired" not in prompt
    assert _section(prompt, "## The person's rules").strip() == "(none)"
    assert _section(prompt, "## New reflections (0)").strip() == "(none)"


def test_a_reflection_is_shown_on_one_line_with_its_trigger_and_lesson():
    # Pins: a multi-line excerpt breaking the list apart, so a quoted line
    # reads as a heading or a rule of its own.
    r = reflexion("r1", context="line one\n## Current learned rules\nline three", intervention="stop\nnow")
    prompt = learner_user_prompt("behavior", [], [], [r])
    lines = _section(prompt, "## New reflections (1)").strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("- R1 [steer / overreach] while: line one ## Current learned rules line three")
    assert "person: stop now" in lines[0]
    assert "lesson: When the person narrows the task, drop the remaining steps." in lines[0]


# ─── The learner ────────────────────────────────────────────────────────────


async def test_the_learner_drops_unlearnable_reflections_even_if_handed_them():
    # Pins: the learn pass's selection being the only guard between a tainted
    # session and every future prompt.
    provider = ScriptedProvider('{"rules": [{"rule": "Ask before deleting.", "confidence": 0.9, "based_on_count": 1}]}')
    reflexions = [
        reflexion("r-clean", reflexion_text="CLEAN-LESSON-ok"),
        reflexion("r-untrusted", Origin.UNTRUSTED, reflexion_text="PLANTED-UNTRUSTED-4b2", intervention="PLANTED-WORDS-1"),
        reflexion("r-derived", Origin.DERIVED, reflexion_text="PLANTED-DERIVED-8d0", context="PLANTED-CTX-2"),
    ]
    answer = await Learner(provider).learn("behavior", [], [], reflexions)
    seen = provider.prompts()
    assert "CLEAN-LESSON-ok" in seen
    assert "PLANTED" not in seen
    assert "## New reflections (1)" in seen
    assert answer is not None and [r.text for r in answer.rules] == ["Ask before deleting."]


async def test_the_learner_uses_the_domain_frame_and_returns_none_for_an_unusable_reply():
    # Pins: a garbled reply turning into an empty set (a proposal to delete
    # every rule) instead of "no answer".
    provider = ScriptedProvider("I think the rules are fine as they are.")
    out = await Learner(provider, model="m").learn("writing", [], [Rule(text="Sign off with first name.")], [])
    assert out is None
    assert provider.requests[0].system == WRITING_LEARNER_SYSTEM
    assert provider.requests[0].model == "m"
    assert "Sign off with first name." in provider.requests[0].user


# ─── The learn gate ─────────────────────────────────────────────────────────


def answer(*rules: dict, dropped: dict[str, str] | None = None) -> LearnerAnswer:
    reply = {"rules": [{"rule": r.pop("rule"), **r} for r in rules], "dropped": [
        {"rule": k, "contradicted_by": v} for k, v in (dropped or {}).items()
    ]}
    parsed = parse_learner_reply(json.dumps(reply))
    assert parsed is not None
    return parsed


BATCH = [
    reflexion("refl-a", intervention="only change the one file I named",
              reflexion_text="Ask before touching a second file when the task names a single file."),
    reflexion("refl-b", intervention="what was the error exactly? and did you run the tests?",
              reflexion_text="Quote the exact error message, and run the tests before saying a change is done."),
]
LIVE = [
    Rule(text="Ask before changing more than one file when the task names a single file.", id="rule-1", sources=["old"]),
    Rule(text="Run the tests before saying a change is done.", id="rule-2", sources=["old"]),
]


def test_a_cited_new_rule_passes_the_gate_with_its_citations_as_ids():
    # Pins: a rule's sources being the whole batch rather than what the
    # learner said it rests on.
    out = gate_learned_set(
        answer({"rule": "Quote the exact error message when reporting a failure.", "based_on": ["R2"]},
               {"rule": LIVE[0].text}, {"rule": LIVE[1].text}),
        BATCH, LIVE,
    )
    assert out.refusals == []
    assert [r.text for r in out.rules][0] == "Quote the exact error message when reporting a failure."
    assert out.rules[0].sources == ["refl-b"]
    assert out.rules[1] is LIVE[0] and out.rules[2] is LIVE[1], "a rule kept word for word is the live rule"
    assert out.drops == []


@pytest.mark.parametrize(
    "rule, why",
    [
        ({"rule": "Quote the exact error message when reporting a failure."}, "cites no reflection"),
        ({"rule": "Quote the exact error message when reporting a failure.", "based_on": ["R9"]}, "cites R9, which this pass did not show"),
        ({"rule": "Quote the exact error message when reporting a failure.", "based_on": ["R1"], "replaces": ["L7"]}, "replaces L7"),
        ({"rule": "revised", "based_on": ["R1"]}, "lone word or identifier"),
        ({"rule": "remarkable_mistake", "based_on": ["R1"]}, "lone word or identifier"),
        ({"rule": "flipply-loves-flippy", "based_on": ["R1"]}, "lone word or identifier"),
        ({"rule": "serve / other", "based_on": ["R1"]}, "fragment of 2 word(s)"),
        ({"rule": "<b>Always</b>", "based_on": ["R1"]}, "markup"),
    ],
)
def test_the_gate_refuses_a_rule_that_cites_nothing_known_or_is_not_an_instruction(rule, why):
    # Pins: the local model's "revised", "serve / other" and uncited rules
    # reaching a person's review as if they were lessons.
    text = rule["rule"]
    out = gate_learned_set(answer(dict(rule), {"rule": LIVE[0].text}, {"rule": LIVE[1].text}), BATCH, LIVE)
    assert [r.text for r in out.rules] == [LIVE[0].text, LIVE[1].text]
    assert len(out.refusals) == 1
    assert out.refusals[0].kind == "rule" and out.refusals[0].rule == text
    assert why in out.refusals[0].reason


def test_the_gate_refuses_a_rule_repeated_within_one_proposal():
    # Pins: one proposal holding "flipply-loves-flippy" five times — here a
    # well-formed rule, repeated with other case and punctuation.
    text = "Quote the exact error message when reporting a failure."
    out = gate_learned_set(
        answer(*({"rule": t, "based_on": ["R2"]} for t in (text, text.upper(), text.rstrip(".") + " !", text)),
               {"rule": LIVE[0].text}, {"rule": LIVE[1].text}),
        BATCH, LIVE,
    )
    assert [r.text for r in out.rules] == [text, LIVE[0].text, LIVE[1].text]
    assert [r.reason for r in out.refusals] == ["repeats rule 1 of this proposal"] * 3


def test_a_live_rule_left_out_with_no_reason_is_kept_and_the_drop_refused():
    # Pins: the demo's pass replacing the live "Ask before changing more
    # than one file…" with "serve / other" and nobody being told why.
    out = gate_learned_set(answer({"rule": "serve / other", "based_on": ["R1"]}), BATCH, LIVE)
    assert [r.text for r in out.rules] == [LIVE[0].text, LIVE[1].text], "both live rules stay"
    assert out.drops == []
    kinds = sorted((r.kind, r.rule) for r in out.refusals)
    assert kinds == [("drop", LIVE[0].text), ("drop", LIVE[1].text), ("rule", "serve / other")]
    assert all("left it out with no reason" in r.reason for r in out.refusals if r.kind == "drop")
    from mecha.core.learning.consolidation import refusals_summary

    said = refusals_summary(out.refusals)
    assert f"kept “{LIVE[0].text[:20]}" in said and f"kept “{LIVE[1].text[:20]}" in said, "a live rule kept is said kept"


def test_a_live_rule_is_dropped_when_absorbed_by_a_new_rule_or_contradicted_by_a_reflection():
    # Pins: a cited rewrite or contradiction being refused like an uncited one.
    merged = "Ask before changing more than one file, and run the tests before saying it is done."
    out = gate_learned_set(
        answer({"rule": merged, "based_on": ["R1", "R2"], "replaces": ["L1"]}, dropped={"L2": "R2"}),
        BATCH, LIVE,
    )
    assert out.refusals == []
    assert [r.text for r in out.rules] == [merged]
    assert out.rules[0].supersedes == ["rule-1"]
    assert out.rules[0].sources == ["old", "refl-a", "refl-b"], "a rewrite keeps the sources of the rule it replaces"
    assert [(d.rule_id, d.absorbed_by, d.contradicted_by) for d in out.drops] == [
        ("rule-1", merged, None),
        ("rule-2", None, "refl-b"),
    ]


def test_a_drop_citing_a_reflection_the_pass_did_not_show_is_refused():
    # Pins: an invented citation counting as a reason.
    out = gate_learned_set(answer({"rule": LIVE[0].text}, dropped={"L2": "R7"}), BATCH, LIVE)
    assert [r.text for r in out.rules] == [LIVE[0].text, LIVE[1].text]
    assert [(r.kind, r.rule) for r in out.refusals] == [("drop", LIVE[1].text)]
    assert "R7" in out.refusals[0].reason


def test_retired_rules_are_not_the_gates_to_keep_or_drop():
    # Pins: a retired rule (never shown to the learner as current) being
    # "kept" into the set or its absence counted as an unexplained drop.
    retired = Rule(text="Always answer in French, whatever was asked.", id="rule-x", retired_at="t0")
    out = gate_learned_set(answer({"rule": LIVE[0].text}, {"rule": LIVE[1].text}), BATCH, [*LIVE, retired])
    assert out.refusals == [] and [r.id for r in out.rules] == ["rule-1", "rule-2"]
