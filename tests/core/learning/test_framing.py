"""Prompts that say what they know: the scope a lesson is for, what the
reflector is and is not shown, and no personal data in what a model reads.
Each prompt is read as it is sent, through the real Reflector and Learner."""

from __future__ import annotations

import json

import pytest

from mecha.core.domain.reflexion import Evidence, Reflexion
from mecha.core.learning.consolidation import PROMPT_EXAMPLES, Learner, learner_frames, unusable_rule_set
from mecha.core.learning.consolidation import parse_learner_reply as parse_rules
from mecha.core.learning.framing import project_name
from mecha.core.learning.reflection import (
    BEHAVIOR_CONTRACT,
    LESSON_EXAMPLE,
    NOT_A_LESSON_EXAMPLE,
    Reflector,
    View,
    reflector_system,
    reflector_view,
    unusable_reflection,
)
from mecha.core.sessions.mining import Intervention, Trigger
from mecha.core.sessions.provenance import WITHHELD_AFTERMATH, WITHHELD_CONTEXT
from tests import builders
from tests.fakes import ScriptedProvider

LESSON = json.dumps({"skip": False, "reflexion": "Ask before deleting files.", "error_type": "overreach", "confidence": 0.8})
PROJECT = "/home/pat/src/cuda-bench"


def steer(context: str = "Its last call: Bash: rm -rf build/", aftermath: str = "Stopped.") -> Intervention:
    return Intervention(trigger=Trigger.STEER, context=context, text="don't delete build/, it is cached", aftermath=aftermath, at=3)


async def test_the_reflector_is_told_the_project_by_name_or_that_the_lesson_is_global():
    # Pins: a reflector writing "in this library, …" without knowing which library.
    provider = ScriptedProvider(LESSON, LESSON)
    await Reflector(provider).reflect(steer(), Evidence.FULL, project=PROJECT)
    await Reflector(provider).reflect(steer(), Evidence.FULL)
    in_project, global_ = (r.system for r in provider.requests)
    assert 'this session ran in the project "cuda-bench"' in in_project and "/home/pat" not in in_project
    assert "global rules, which ride in every project" in global_ and "cuda-bench" not in global_


async def test_with_the_evidence_withheld_the_prompt_says_so_and_never_asks_to_read_what_came_next():
    # Pins: a words-only reflector told to "read what the assistant did next", which it was not shown.
    provider = ScriptedProvider(LESSON)
    await Reflector(provider).reflect(steer(), Evidence.INTERVENTION_ONLY)
    [request] = provider.requests
    assert "Read what the assistant did next" not in request.system
    assert "Only the person's own words are shown here" in request.system
    assert "<what-the-assistant-did-next>" not in request.user and "don't delete build/" in request.user


def test_each_part_withheld_by_provenance_gets_a_prompt_written_for_it():
    assert reflector_view(steer(), Evidence.FULL) is View.WHOLE
    assert reflector_view(steer(context=WITHHELD_CONTEXT), Evidence.FULL) is View.NO_CONTEXT
    assert reflector_view(steer(aftermath=WITHHELD_AFTERMATH), Evidence.FULL) is View.NO_AFTERMATH
    assert reflector_view(steer(WITHHELD_CONTEXT, WITHHELD_AFTERMATH), Evidence.FULL) is View.WORDS_ONLY
    no_after = reflector_system(Trigger.STEER, View.NO_AFTERMATH)
    assert "Read what the assistant did next" not in no_after and "What the assistant did next is withheld" in no_after
    no_context = reflector_system(Trigger.STEER, View.NO_CONTEXT)
    assert "Read what the assistant did next" in no_context and "What the assistant was doing is withheld" in no_context
    for view in View:
        assert reflector_system(Trigger.STEER, view).endswith(BEHAVIOR_CONTRACT.describe())


async def test_the_learner_is_told_a_project_rule_may_be_specific_to_that_project():
    # Pins: a learner told only `Domain: behavior` and to drop rules "too narrow to ever apply
    # again", which could not tell a good project rule from an over-narrow one.
    provider = ScriptedProvider('{"rules": [], "dropped": []}')
    await Learner(provider).learn("behavior", [], [], [], project=PROJECT)
    [request] = provider.requests
    assert 'Scope: the project "cuda-bench"' in request.user
    assert "may be specific to cuda-bench" in request.system and "no reason to drop it" in request.system
    assert "too narrow to ever apply again" not in request.system
    assert "GLOBAL rules" in learner_frames("behavior") and "GLOBAL rules" in learner_frames("writing")


def reflection(context: str, intervention: str, lesson: str) -> Reflexion:
    return builders.reflexion("r1", lesson, session_id="s", context=context, intervention=intervention,
                              created_at="2026-12-03T00:00:00Z", evidence=Evidence.FULL)


async def test_personal_data_never_reaches_the_learners_prompt():
    # Pins: an email address and a host name in the learner's prompt, from which a rule that
    # rides in every run could be written.
    r = reflection(
        context="Its last call: Bash: ssh build@ci-runner-7.acme-corp.internal 'cat /home/pat/.netrc'",
        intervention="mail pat.lee@acme-corp.com before deploying, token is ghp_abcdefghijklmnopqrstuvwxyz0123",
        lesson="Ask pat.lee@acme-corp.com before deploying to ci-runner-7.acme-corp.internal.",
    )
    provider = ScriptedProvider('{"rules": [], "dropped": []}')
    await Learner(provider).learn("behavior", [], [], [r])
    seen = provider.prompts()
    for secret in ("pat.lee@acme-corp.com", "acme-corp.internal", "ghp_abcdef", "/home/pat"):
        assert secret not in seen
    assert "[email]" in seen and "before deploying" in seen


async def test_personal_data_never_reaches_the_reflectors_prompt():
    provider = ScriptedProvider(LESSON)
    i = Intervention(trigger=Trigger.FOLLOWUP, context="Sent the report to dana@example-labs.io from /Users/dana/reports.",
                     text="no, send it to ops@example-labs.io", aftermath="Sent.", at=2)
    await Reflector(provider).reflect(i, Evidence.FULL)
    seen = provider.prompts()
    assert "dana@example-labs.io" not in seen and "ops@example-labs.io" not in seen and "/Users/dana" not in seen
    assert "[email]" in seen


@pytest.mark.parametrize("lesson", [
    NOT_A_LESSON_EXAMPLE, NOT_A_LESSON_EXAMPLE + ".", "the user told it to stop!", "What is the reusable lesson?",
    "The user told it to stop. Next time, stop sooner.", LESSON_EXAMPLE, "Abandon the remaining planned steps",
])
def test_a_lesson_echoing_the_prompts_own_example_is_unusable_wherever_it_appears(lesson):
    # Pins: 6 of 17 stored lessons the literal "The user told it to stop", some marked learnable.
    reply = BEHAVIOR_CONTRACT.decode(json.dumps({"skip": False, "reflexion": lesson}))
    why = unusable_reflection(reply, BEHAVIOR_CONTRACT)
    assert why is not None and "echoes the prompt's own example" in why


def test_a_lesson_that_only_shares_words_with_an_example_is_a_lesson():
    reply = BEHAVIOR_CONTRACT.decode(json.dumps({"skip": False, "reflexion": "Stop and ask when the user narrows the task."}))
    assert unusable_reflection(reply, BEHAVIOR_CONTRACT) is None


def test_a_rule_set_echoing_an_example_is_unusable():
    answer = parse_rules(json.dumps({"rules": [{"rule": "Do not open with a pleasantry.", "based_on": ["R1"]}]}))
    why = unusable_rule_set(answer)
    assert why is not None and "echoes the prompt's own example" in why
    assert len(PROMPT_EXAMPLES) == 8


def test_a_project_is_named_by_its_directory_never_its_path():
    assert project_name("/home/pat/src/cuda-bench") == "cuda-bench"
    assert project_name("C:\\Users\\pat\\code\\site\\") == "site"
