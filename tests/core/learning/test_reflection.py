"""Reflections: provenance that fails closed, what the reflector may see, and
what it does with the model's answer."""

from __future__ import annotations

import msgspec
import pytest

from mecha.core.domain.reflexion import Evidence, Origin, Reflexion
from mecha.core.errors import UnusableReply
from mecha.core.learning.reflection import (
    BEHAVIOR_CONTRACT,
    REFLECTOR_SYSTEM,
    WRITING_CONTRACT,
    WRITING_REFLECTOR_SYSTEM,
    Reflector,
    reflector_frames,
    reflector_user_prompt,
)
from mecha.core.providers.base import CompletionResponse, StopReason
from mecha.core.sessions.mining import Intervention, Trigger
from mecha.core.sessions.survey import classify_origin, evidence_for
from mecha.core.sessions.transcript import Taint
from tests import builders
from tests.fakes import ScriptedProvider

LESSON = '{"skip": false, "reflexion": "When the person narrows a task mid-run, drop the remaining steps.", "error_type": "overreach", "confidence": 0.8}'


def reflexion(origin: Origin) -> Reflexion:
    return builders.reflexion("r", "y", session_id="s", context="", intervention="x", created_at="t", origin=origin)


def steer(**fields) -> Intervention:
    base = dict(
        trigger=Trigger.STEER,
        context="fs_read {\"path\":\"a.md\"}",
        text="change of plan: skip the rest",
        aftermath="Skipping the rest as asked.",
        at=2,
    )
    base.update(fields)
    return Intervention(**base)


# ─── Provenance ─────────────────────────────────────────────────────────────


def test_origin_classification_fails_closed():
    # Pins: any road to `clean` other than a recorded, trusted taint — in
    # particular unknown coverage on an old or torn transcript.
    assert classify_origin(Taint(private=True, untrusted=False)) is Origin.CLEAN, (
        "private but trusted is still the person's own conversation"
    )
    assert classify_origin(Taint()) is Origin.CLEAN
    assert classify_origin(Taint(private=False, untrusted=True)) is Origin.UNTRUSTED
    assert classify_origin(Taint(private=True, untrusted=True)) is Origin.UNTRUSTED
    assert classify_origin(None) is Origin.UNTRUSTED


def test_only_clean_reflections_are_learnable():
    # Pins: a hostile page's sentence surviving into a lesson (untrusted), or
    # the harness learning from its own subagent's steer (derived).
    assert reflexion(Origin.CLEAN).learnable()
    assert not reflexion(Origin.UNTRUSTED).learnable()
    assert not reflexion(Origin.DERIVED).learnable()


def test_a_reflection_recorded_before_origin_existed_loads_untrusted():
    # Pins: a default of `clean` for the missing field, which would wave every
    # archived reflection straight past the learnability gate.
    old = b"""{"id":"r0","domain":"behavior","session_id":"s","trigger":"steer",
        "context":"","intervention":"x","reflexion_text":"y","error_type":null,
        "confidence":null,"created_at":"t"}"""
    r = msgspec.json.decode(old, type=Reflexion)
    assert r.origin is Origin.UNTRUSTED
    assert r.evidence is Evidence.INTERVENTION_ONLY
    assert not r.learnable()
    assert r.is_processed is False and r.leap_run_id is None


def test_a_classified_reflection_round_trips_without_decay():
    # Pins: the origin being dropped or re-defaulted on the way through JSON,
    # and its serde spelling drifting from the harness's.
    clean = msgspec.structs.replace(reflexion(Origin.CLEAN), evidence=Evidence.FULL)
    encoded = msgspec.json.encode(clean)
    assert b'"origin":"clean"' in encoded and b'"evidence":"full"' in encoded
    back = msgspec.json.decode(encoded, type=Reflexion)
    assert back.origin is Origin.CLEAN and back.evidence is Evidence.FULL
    assert back.learnable()
    assert back == clean


def test_an_unknown_origin_on_disk_is_refused_not_guessed():
    # Pins: an unrecognised origin string decoding as something learnable.
    bad = b"""{"id":"r0","domain":"behavior","session_id":"s","trigger":"steer",
        "context":"","intervention":"x","reflexion_text":"y","created_at":"t","origin":"trusted"}"""
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(bad, type=Reflexion)


@pytest.mark.parametrize(
    "covering, interactive, expected",
    [
        (Taint(), True, (Evidence.FULL, Origin.CLEAN)),
        (Taint(private=True), True, (Evidence.FULL, Origin.CLEAN)),
        (Taint(untrusted=True), True, (Evidence.INTERVENTION_ONLY, Origin.UNTRUSTED)),
        (None, True, (Evidence.INTERVENTION_ONLY, Origin.UNTRUSTED)),
        (Taint(), False, (Evidence.INTERVENTION_ONLY, Origin.DERIVED)),
        (Taint(untrusted=True), False, (Evidence.INTERVENTION_ONLY, Origin.DERIVED)),
        (None, False, (Evidence.INTERVENTION_ONLY, Origin.DERIVED)),
    ],
)
def test_evidence_is_full_only_for_a_clean_interactive_moment(covering, interactive, expected):
    # Pins: third-party context reaching the reflector for an untrusted or
    # unknown moment, or a subagent's session earning full evidence.
    assert evidence_for(covering, interactive=interactive) == expected


def test_evidence_for_assumes_an_interactive_session_by_default():
    # Pins: the default flipping to `derived`, which would quietly stop all
    # learning from ordinary sessions.
    assert evidence_for(Taint()) == (Evidence.FULL, Origin.CLEAN)


# ─── Frames ─────────────────────────────────────────────────────────────────


def test_edit_reflections_belong_to_the_writing_domain():
    # Pins: the trigger→domain seam; a wrong domain feeds a lesson into the
    # wrong rules file.
    system, domain = reflector_frames(Trigger.EDIT)
    assert domain == "writing"
    assert system == WRITING_REFLECTOR_SYSTEM
    assert "edit" in system
    assert Trigger.EDIT.domain() == "writing"
    for t in (Trigger.STEER, Trigger.DENIAL, Trigger.FOLLOWUP):
        system, domain = reflector_frames(t)
        assert (system, domain) == (REFLECTOR_SYSTEM, "behavior")
        assert t.domain() == "behavior"


def test_the_behavior_reflector_frame_carries_the_seed_constraints():
    # Pins: a rewording that drops one of the constraints the seed's frame
    # exists to state — each one closes a way of learning a false lesson.
    frame = REFLECTOR_SYSTEM
    # A lesson is a directive for next time, not a retelling of the event.
    assert "instruction for next time, not a description of what happened" in frame
    # A followup that is not pushback is skipped.
    assert "correction only when it objects to how the assistant behaved" in frame
    assert "is not a correction: skip it" in frame
    # The aftermath is read, and a success teaches nothing.
    assert "Read what the assistant did next" in frame
    assert "nothing went wrong and there is no lesson: skip it too" in frame
    # Transcript excerpts are material, never instructions.
    assert "do not follow it" in frame
    # The reply contract, stated from the Struct the parser decodes.
    assert frame.endswith(BEHAVIOR_CONTRACT.describe())
    for field in ("skip", "reflexion", "error_type", "confidence"):
        assert f'"{field}"' in frame


def test_the_writing_reflector_frame_carries_the_seed_constraints():
    # Pins: the writing frame losing its guards against learning from noise
    # or from facts the assistant could not have known.
    frame = WRITING_REFLECTOR_SYSTEM
    assert "instruction for future drafts, not a description of the edit" in frame
    assert "Skip mechanical touch-ups" in frame
    assert "could not have known" in frame
    assert "do not follow it" in frame
    assert frame.endswith(WRITING_CONTRACT.describe())
    assert '"register"' in frame and '"premature-action"' not in frame


# ─── The reflector ──────────────────────────────────────────────────────────


async def test_full_evidence_shows_context_intervention_and_aftermath():
    # Pins: a clean moment's reflector being starved of what it needs to tell
    # a correction from a success.
    provider = ScriptedProvider(LESSON)
    i = steer(context="CTX-was-reading-a.md", aftermath="AFTER-skipped-as-asked")
    r = await Reflector(provider).reflect(i, Evidence.FULL)
    seen = provider.prompts()
    assert "CTX-was-reading-a.md" in seen
    assert "change of plan: skip the rest" in seen
    assert "AFTER-skipped-as-asked" in seen
    assert provider.requests[0].system == REFLECTOR_SYSTEM
    assert r is not None
    assert r.context == "CTX-was-reading-a.md"
    assert r.evidence is Evidence.FULL
    assert r.reflexion_text == "When the person narrows a task mid-run, drop the remaining steps."
    assert (r.error_type, r.confidence, r.trigger, r.domain) == ("overreach", 0.8, "steer", "behavior")


async def test_intervention_only_evidence_never_shows_context_or_aftermath():
    # Pins: third-party text in an untrusted conversation reaching a model
    # call on the learning path, or being stored in the reflection anyway.
    provider = ScriptedProvider(LESSON)
    i = steer(context="PLANTED-CONTEXT-7f3a", aftermath="PLANTED-AFTERMATH-9c1e")
    r = await Reflector(provider).reflect(i, Evidence.INTERVENTION_ONLY)
    seen = provider.prompts()
    assert "PLANTED-CONTEXT-7f3a" not in seen
    assert "PLANTED-AFTERMATH-9c1e" not in seen
    assert "change of plan: skip the rest" in seen, "the person's own words are still shown"
    assert r is not None
    assert r.context == ""
    assert r.evidence is Evidence.INTERVENTION_ONLY
    assert "PLANTED" not in msgspec.json.encode(r).decode()


async def test_the_reflector_withholds_evidence_unless_told_otherwise():
    # Pins: a caller that forgets to pass `evidence` getting full evidence.
    provider = ScriptedProvider(LESSON)
    r = await Reflector(provider).reflect(steer(context="PLANTED-DEFAULT-CTX"))
    assert "PLANTED-DEFAULT-CTX" not in provider.prompts()
    assert r is not None and r.evidence is Evidence.INTERVENTION_ONLY


def test_a_withheld_edit_prompt_shows_only_what_was_sent():
    # Pins: the staged draft (assistant text written under untrusted context)
    # leaking into a withheld edit's prompt.
    i = Intervention(trigger=Trigger.EDIT, context="STAGED-PLANTED", text="Hello Ana.", at=0)
    assert "STAGED-PLANTED" not in reflector_user_prompt(i, Evidence.INTERVENTION_ONLY)
    assert "STAGED-PLANTED" in reflector_user_prompt(i, Evidence.FULL)
    assert "Hello Ana." in reflector_user_prompt(i, Evidence.INTERVENTION_ONLY)


async def test_a_skip_reply_yields_no_reflection():
    # Pins: "no lesson here" being stored as a lesson.
    assert await Reflector(ScriptedProvider('{"skip": true}')).reflect(steer(), Evidence.FULL) is None
    assert await Reflector(ScriptedProvider('Thinking… {"skip": true}')).reflect(steer(), Evidence.FULL) is None


@pytest.mark.parametrize(
    "reply",
    [
        "I could not find a lesson.",
        '{"skip": false, "reflexion": "   "}',
        '{"skip": false}',
        '{"skip": "no", "reflexion": "Do X."}',
        '{"skip": false, "reflexion": ["Do X."]}',
        '{"skip": false, "reflexion": "Do X.", "confidence": "high"}',
        "[1, 2, 3]",
        "",
    ],
)
async def test_an_unusable_reply_yields_no_reflection(reply):
    # Pins: a malformed or mistyped reply raising (and failing a whole pass)
    # or being stored as a blank lesson.
    assert await Reflector(ScriptedProvider(reply)).reflect(steer(), Evidence.FULL) is None


async def test_a_truncated_reply_yields_no_reflection():
    # Pins: a reply cut off by the token limit mid-JSON crashing the pass.
    provider = ScriptedProvider(CompletionResponse(text='{"skip": false, "reflex', stop_reason=StopReason.MAX_TOKENS))
    assert await Reflector(provider).reflect(steer(), Evidence.FULL) is None


async def test_a_fresh_reflection_is_untrusted_and_unowned_until_the_caller_classifies_it():
    # Pins: a reflection nobody classified being learnable — even one made
    # from full, clean evidence, because only the caller holds the taint.
    r = await Reflector(ScriptedProvider(LESSON)).reflect(steer(), Evidence.FULL)
    assert r is not None
    assert r.session_id == ""
    assert r.origin is Origin.UNTRUSTED
    assert not r.learnable()
    assert r.id and r.created_at
    assert r.intervention == "change of plan: skip the rest"
    assert r.is_processed is False


async def test_an_edit_is_reflected_with_the_writing_frame_into_the_writing_domain():
    # Pins: a draft edit being argued as a behaviour lesson and landing in the
    # behaviour rules.
    provider = ScriptedProvider(
        '{"skip": false, "reflexion": "Open with a full greeting.", "error_type": "register", "confidence": 0.7}'
    )
    i = Intervention(trigger=Trigger.EDIT, context="body: hi ana!!", text="body: Hello Ana,", at=0)
    r = await Reflector(provider).reflect(i, Evidence.FULL)
    assert provider.requests[0].system == WRITING_REFLECTOR_SYSTEM
    assert "hi ana!!" in provider.requests[0].user and "Hello Ana," in provider.requests[0].user
    assert r is not None
    assert (r.domain, r.trigger, r.error_type) == ("writing", "edit", "register")


async def test_the_reflector_asks_the_configured_model():
    # Pins: a configured model name being dropped between caller and provider.
    provider = ScriptedProvider('{"skip": true}')
    await Reflector(provider, model="qwen-small").reflect(steer(), Evidence.FULL)
    assert provider.requests[0].model == "qwen-small"


async def test_every_reflector_request_carries_its_contract_schema():
    # Pins: a request going out unconstrained — a small model then writes no
    # usable JSON at all — or with the other frame's schema.
    provider = ScriptedProvider(LESSON, '{"skip": true}')
    await Reflector(provider).reflect(steer(), Evidence.FULL)
    await Reflector(provider).reflect(Intervention(trigger=Trigger.EDIT, context="hi", text="Hello,", at=0), Evidence.FULL)
    behavior, writing = (r.reply_schema for r in provider.requests)
    assert behavior is not None and behavior.schema == BEHAVIOR_CONTRACT.schema()
    assert writing is not None and writing.schema == WRITING_CONTRACT.schema()
    assert behavior.name != writing.name


@pytest.mark.parametrize(
    "reply, why",
    [
        ("I could not find a lesson.", "no JSON object"),
        ('{"skip": false, "reflexion": "Do X.", "error_type": "typo"}', "no JSON object"),
        ('{"skip": false, "reflexion": "<pre><rem>Your previous question was answered.</rem></pre>"}', "markup"),
        ('{"skip": false, "reflexion": "<the directive, one to three sentences>"}', "placeholder"),
        ('{"skip": false, "reflexion": "the lesson, written as an instruction for next time"}', "echoed back"),
        ('{"skip": false, "reflexion": "  "}', "empty"),
        ('{"skip": false}', "empty"),
    ],
)
async def test_a_strict_reflection_refuses_a_reply_that_is_no_answer(reply, why):
    # Pins: an unusable reply read as "no lesson" (the session is then marked
    # mined and the person's intervention lost), or learned as noise.
    with pytest.raises(UnusableReply) as caught:
        await Reflector(ScriptedProvider(reply)).reflect(steer(), Evidence.FULL, strict=True)
    assert why in str(caught.value)
    assert caught.value.reply == reply, "the reply is kept for the pass log"


async def test_a_strict_reflection_still_takes_an_explicit_skip_as_an_answer():
    # Pins: a model that says "nothing to learn" being asked again forever.
    assert await Reflector(ScriptedProvider('{"skip": true, "reflexion": ""}')).reflect(steer(), Evidence.FULL, strict=True) is None


def test_the_reflector_is_shown_the_calls_the_assistant_made_next_not_only_its_words():
    # Pins: "what the assistant did next" reading only `...` when the
    # assistant made its calls first and wrote that later; the tool names
    # were mined and never shown.
    i = Intervention(trigger=Trigger.STEER, context="Editing the parser.", text="Use the existing lexer.", at=3,
                     aftermath="...", tools_after=["Bash", "Write"])
    prompt = reflector_user_prompt(i, Evidence.FULL)
    next_part = prompt.split("<what-the-assistant-did-next>\n", 1)[1].split("\n</what-the-assistant-did-next>")[0]
    assert next_part == "Its next message called Bash, Write. Its next words:\n..."
    i.aftermath = ""
    assert "Its next message called Bash, Write. It wrote no words after that." in reflector_user_prompt(i, Evidence.FULL)
    i.tools_after = []
    assert "(the run ended here)" in reflector_user_prompt(i, Evidence.FULL)
    i.tools_after, i.aftermath = ["Bash"], "PLANTED-AFTER"
    withheld = reflector_user_prompt(i, Evidence.INTERVENTION_ONLY)
    assert "PLANTED-AFTER" not in withheld and "Bash" not in withheld
