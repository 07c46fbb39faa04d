"""The learner sees how sure each lesson is. It was shown a bare "lesson:"
and could not tell a doubtful lesson (0.45, drawn from a refusal with no
words) from a sure one (0.9): both read as equal grounds for a rule. Read
through the real Learner, as each request is sent."""

from __future__ import annotations

from mecha.core.domain.reflexion import Evidence, Reflexion
from mecha.core.learning.consolidation import DOUBTFUL_BELOW, NO_WORDS, Learner, learner_frames
from tests import builders
from tests.fakes import ScriptedProvider

NO_RULES = '{"rules": [], "dropped": []}'


def lesson(rid: str, trigger: str, said: str, confidence: float | None, evidence: Evidence = Evidence.FULL) -> Reflexion:
    return builders.reflexion(rid, "Ask before deleting a build folder.", session_id="s", trigger=trigger,
                              context="Its last call: Bash: rm -rf build/", intervention=said, error_type="overreach",
                              confidence=confidence, created_at="2026-12-03T00:00:00Z", evidence=evidence)


async def learner_prompt(*batch: Reflexion) -> tuple[str, list[str]]:
    provider = ScriptedProvider(NO_RULES)
    await Learner(provider).learn("behavior", [], [], list(batch))
    [request] = provider.requests
    lines = [line for line in request.user.splitlines() if line.startswith("- R")]
    return request.system, lines


async def test_a_doubtful_lesson_and_a_sure_one_are_told_apart():
    # Pins: "lesson: …" alone for a 0.45 refusal without words and a 0.9 steer alike.
    _, (doubtful, sure) = await learner_prompt(lesson("a", "denial", "", 0.45), lesson("b", "steer", "keep build/", 0.9))
    assert "reflector's confidence 0.45 (doubtful)" in doubtful
    assert "reflector's confidence 0.90, saw the whole moment" in sure and "doubtful" not in sure
    assert doubtful.startswith("- R1 [denial / overreach]") and sure.startswith("- R2 [steer / overreach]")


async def test_a_refusal_with_no_words_says_so_rather_than_showing_an_empty_quote():
    _, [line] = await learner_prompt(lesson("a", "denial", "  ", 0.45))
    assert f"person: {NO_WORDS}" in line


async def test_an_unrated_lesson_and_one_from_words_alone_are_marked():
    _, [unrated, words] = await learner_prompt(
        lesson("a", "followup", "no, not that", None), lesson("b", "steer", "stop", 0.8, Evidence.INTERVENTION_ONLY)
    )
    assert "confidence not rated (doubtful)" in unrated
    assert "confidence 0.80, saw only the person's words" in words


async def test_the_boundary_is_the_one_the_frame_names():
    _, [below, at] = await learner_prompt(lesson("a", "steer", "x", DOUBTFUL_BELOW - 0.01), lesson("b", "steer", "y", DOUBTFUL_BELOW))
    assert "(doubtful)" in below and "(doubtful)" not in at


def test_every_frame_tells_the_learner_what_the_marks_mean():
    for domain in ("behavior", "writing"):
        for project in (None, "/srv/code/cuda-bench"):
            frame = learner_frames(domain, project)
            assert f"confidence below {DOUBTFUL_BELOW:.2f}, or not rated" in frame
            assert "never make a rule from doubtful lessons alone" in frame
            for trigger in ("steer:", "denial:", "followup:", "edit:"):
                assert trigger in frame
