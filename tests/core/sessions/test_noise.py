"""Cheap noise out, nothing lost: shapes of real sessions that cost a model
call for nothing, or lost a person's words, each pinned on the real reader,
miner and reflect pass."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from mecha.core.errors import NoModel
from mecha.core.learning.reflect import reflect_inbox
from mecha.core.learning.reflection import Reflector
from mecha.core.learning.skips import go_ahead_reason
from mecha.core.sessions.claude_code import read_claude_code
from mecha.core.sessions.foreign import HARNESS_VOICE_PROFILES
from mecha.core.sessions.mining import Intervention, Trigger, Voices, extract_interventions
from mecha.core.sessions.survey import survey_session
from mecha.core.sessions.transcript import Block, Message, Taint, TaintCheckpoint
from mecha.core.store.attempts import Attempt
from mecha.core.store.inbox import enqueue, session_entry
from mecha.core.store.layout import ATTEMPTS_FILE
from mecha.core.store.learning_store import LearningStore
from tests.core.ccfixture import REJECTION, Claude, text, use
from tests.core.learning.test_reflect import ByIntervention, lesson
from tests.core.sessions.test_claude_code import queue

VOICES = Voices(harness_prefixes=HARNESS_VOICE_PROFILES["claude"])
CLEAN = [TaintCheckpoint(at=0, taint=Taint())]


def mined(cc: Claude) -> list[Intervention]:
    read = read_claude_code(cc.bytes())
    return [p.intervention for p in survey_session(read.messages, read.taint_timeline, voices=VOICES)]


def sleeps(cc: Claude) -> Claude:
    return cc.user("Run sleep 20 three times with Bash, one at a time.").assistant(
        text("I'll run the three sleeps one at a time."), use("b1", "Bash", command="sleep 20", description="Sleep 1 of 3"))


# ─── The queue ──────────────────────────────────────────────────────────────


def test_queued_words_removed_before_the_result_they_wait_for_are_a_steer_beside_it():
    # Pins: words typed while a call ran, taken into the turn before its result was written
    # (enqueue, remove, then the tool_result, then Claude Code's own attachment), lost.
    cc = sleeps(Claude()).result("b1", "(Bash completed with no output)")
    cc.assistant(use("b2", "Bash", command="sleep 20", description="Sleep 2 of 3"))
    queue(cc, "enqueue", "Include the elapsed time in the summary.")
    cc.lines[-1]["operation"] = "enqueue"
    queue(cc, "remove", "Include the elapsed time in the summary.")
    cc.lines[-1]["reason"] = "absorbed_mid_turn"
    cc.result("b2", "(Bash completed with no output)")
    cc.raw({"type": "attachment", "sessionId": cc.session, "attachment": {
        "type": "queued_command", "prompt": "Include the elapsed time in the summary.", "commandMode": "prompt",
        "origin": {"kind": "human"}}})
    cc.assistant(text("Summary: two sleeps, 40 s elapsed."))
    [steer] = mined(cc)
    assert (steer.trigger, steer.text) == (Trigger.STEER, "Include the elapsed time in the summary.")
    assert "Its last call: Bash: sleep 20" in steer.context and steer.aftermath.startswith("Summary")


def test_queued_words_sent_when_the_person_pressed_esc_are_the_refusals_reason():
    # Pins: the person's words (dequeued and written before the refused call's result) mined as a
    # follow-up about nothing, and the refusal of the running call mined with no reason at all.
    cc = sleeps(Claude())
    queue(cc, "enqueue", "Reply only ACK. Do not run any more tools.")
    queue(cc, "dequeue")
    cc.user("Reply only ACK. Do not run any more tools.", promptSource="queued")
    cc.result("b1", REJECTION, is_error=True)
    cc.user([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
    cc.assistant(text("ACK"))
    [denial] = mined(cc)
    assert (denial.trigger, denial.text) == (Trigger.DENIAL, "Reply only ACK. Do not run any more tools.")
    assert "Refused call: Bash: sleep 20" in denial.context


def test_a_slash_command_after_a_refusal_is_not_its_reason():
    # Pins: `/exit` stored as why the person refused a call.
    cc = sleeps(Claude()).result("b1", REJECTION, is_error=True)
    cc.user("<command-name>/exit</command-name>\n<command-message>exit</command-message>\n<command-args></command-args>")
    [denial] = mined(cc)
    assert (denial.trigger, denial.text) == (Trigger.DENIAL, "")
    # And on the wire, from a harness that wrote it into the refusal itself.
    messages = [
        Message.user("go"),
        Message.assistant([Block.tool_use("t", "shell", {"cmd": "make"})]),
        Message.tool_results([Block.tool_result("t", "Denied by the user: /exit", True)]),
    ]
    [denial] = extract_interventions(messages)
    assert denial.text == ""


def test_an_image_alone_is_not_an_intervention_and_an_image_with_words_is():
    # Pins: a pasted screenshot with no words mined as a follow-up reading "[image]".
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    cc = Claude().user("Make the header blue.").assistant(text("Done: the header is blue."))
    cc.user([image]).assistant(text("I see the screenshot."))
    assert mined(cc) == []
    cc.user([image, {"type": "text", "text": "still grey here"}]).assistant(text("Fixing the cache."))
    [followup] = mined(cc)
    assert followup.text == "[image] still grey here"


# ─── Bare go-aheads ─────────────────────────────────────────────────────────


def said(words: str, trigger: Trigger = Trigger.FOLLOWUP) -> Intervention:
    return Intervention(trigger=trigger, context="Shall I create the beads for these?", text=words)


@pytest.mark.parametrize("words", [
    "continue", "Continue.", "go on", "yes", "Yes please", "ok thanks", "go ahead", "proceed", "do it",
    "create the beads", "commit and push", "Perfect, commit it", "lgtm", "keep going", "👍 yes", "push", "2", "3.", "(b)",
])
def test_a_bare_go_ahead_is_skipped_by_rule(words):
    assert go_ahead_reason(said(words)) is not None
    assert go_ahead_reason(said(words, Trigger.STEER)) is not None


@pytest.mark.parametrize("words", [
    "no", "continue, but without the tests", "why did you do that?", "use the other README", "run the tests",
    "yes but only the docs folder", "stop", "don't push", "create the beads in the other repo please now",
    "fix it", "go on, you forgot the changelog", "ok?", "actually, revert it", "leave it", "1. only the docs", "123",
])
def test_anything_that_pushes_back_or_asks_goes_to_the_reflector(words):
    # Pins: a correction skipped unread because it began like agreement.
    assert go_ahead_reason(said(words)) is None


@pytest.mark.parametrize("words", [
    "是的", "继续", "好", "好的", "可以", "对", "符合", "好的，继续", "好的继续", "oui", "continuer", "Oui, merci !",
    "sí", "sí, adelante", "ja", "weiter", "ja bitte, mach weiter", "d'accord", "vas-y", "はい", "네 계속", "да, продолжай",
])
def test_a_go_ahead_in_another_language_is_skipped_by_rule(words):
    # Pins: go-aheads in Chinese, French, Spanish and German each cost a model call.
    assert go_ahead_reason(said(words)) is not None


@pytest.mark.parametrize("words", [
    "不", "不是", "不对", "为什么", "好的，但是不要改测试", "继续？", "可以吗", "oui mais pas les tests", "non",
    "nein, nicht so", "sí, pero sin tests", "pourquoi ?", "weiter, aber ohne Tests", "нет", "好的 but only docs",
])
def test_a_pushback_in_another_language_goes_to_the_reflector(words):
    assert go_ahead_reason(said(words)) is None


def test_a_denial_or_an_edit_is_never_a_go_ahead():
    assert go_ahead_reason(said("yes", Trigger.DENIAL)) is None
    assert go_ahead_reason(said("ok", Trigger.EDIT)) is None


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    return LearningStore.open(tmp_path / "learning")


def session(*followups: str) -> list[Message]:
    messages = [Message.user("tidy the docs"), Message.assistant("Shall I also create the beads for the open items?")]
    for words in followups:
        messages += [Message.user(words), Message.assistant("Working on it.")]
    return messages


async def test_a_session_of_go_aheads_is_mined_with_no_model_at_all(store: LearningStore):
    # Pins: one model call per "continue" — and a pass with no model configured failing over them.
    enqueue(store, session_entry("s1", session("create the beads", "continue"), CLEAN))

    def no_model() -> Reflector:
        raise NoModel("no model is configured for the reflect pass")

    outcome = await reflect_inbox(store, None, require_model=no_model)
    assert (outcome.skipped_by_rule, outcome.to_ask, outcome.reflections) == (2, 0, 0)
    assert "2 bare go-ahead(s) skipped without a model call" in outcome.summary()
    assert "s1" in store.mined_sessions()
    ledger = [msgspec.json.decode(line, type=Attempt) for line in (store.root / ATTEMPTS_FILE).read_bytes().splitlines()]
    assert [a.reason for a in ledger] == [
        'skipped without a model call: a bare go-ahead ("create the beads"): it carries out what was proposed and objects to nothing',
        'skipped without a model call: a bare go-ahead ("continue"): nothing in it objects to what the assistant did',
    ]


async def test_beside_go_aheads_the_rest_is_still_asked(store: LearningStore):
    enqueue(store, session_entry("s1", session("yes", "no — only the docs folder, never the beads"), CLEAN))
    model = ByIntervention({"only the docs folder": lesson("Keep to the folder the person names.")})
    outcome = await reflect_inbox(store, Reflector(model))
    assert len(model.requests) == 1 and "yes" not in model.requests[0].user.split("<intervention")[1][:40]
    assert (outcome.skipped_by_rule, outcome.reflections, outcome.usable) == (1, 1, 1)
    assert "s1" in store.mined_sessions()


def test_a_background_shells_notice_is_not_the_person():
    # Pins: Claude Code's `<bash-notification>` (a background command finished) mined as a steer.
    cc = sleeps(Claude()).result("b1", "started")
    cc.user("<bash-notification>\n<shell-id>b2a1</shell-id>\n<status>completed</status>\n"
            "<summary>Background command completed (exit code 0).</summary>\n</bash-notification>")
    cc.assistant(text("It finished."))
    assert mined(cc) == []


def test_claude_codes_own_words_in_the_reason_slot_are_no_reason():
    # Pins: "The user wants to clarify these questions. …" stored as why the person refused.
    cc = Claude().user("Set up the repo.").assistant(text("Two questions first."), use("q", "AskUserQuestion", questions=[]))
    cc.result("q", REJECTION.split(" STOP")[0] + " To tell you how to proceed, the user said:\n"
              "The user wants to clarify these questions.\n    This means they may have additional information.", is_error=True)
    cc.assistant(text("What would you like to clarify?"))
    [denial] = mined(cc)
    assert (denial.trigger, denial.text) == (Trigger.DENIAL, "")


async def test_an_untrusted_lesson_names_the_call_that_made_it_so(store: LearningStore, tmp_path: Path):
    # Pins: a person told only "third-party content was in the conversation", never which call.
    from mecha.core.agents.importing import import_sessions
    from mecha.core.learning.lessons import list_lessons

    cc = Claude().user("Summarise the release notes.").assistant(
        text("Fetching them."), use("w", "WebFetch", url="https://example.org/notes", prompt="summarise"))
    cc.result("w", "Release notes: …").assistant(text("Here is the summary."))
    cc.user("too long, three bullets at most").assistant(text("Three bullets: …"))
    folder = tmp_path / "projects" / "-srv-app"
    folder.mkdir(parents=True)
    (folder / "a1b2c3d4-0000-4000-8000-000000000001.jsonl").write_bytes(cc.bytes())
    report = import_sessions(store, "claude", tmp_path / "projects", voices=VOICES, ended=True)
    assert len(report.queued) == 1

    def no_model() -> Reflector:
        raise NoModel("no model is configured for the reflect pass")

    await reflect_inbox(store, None, require_model=no_model)
    [lesson], counts = list_lessons(store.reflexions())
    assert counts.untrusted == 1 and not lesson.learnable
    assert lesson.not_learnable_because is not None
    assert "the first call that brought it: line 3: WebFetch" in lesson.not_learnable_because


def test_claude_codes_unknown_skill_notice_is_not_the_person():
    # Pins: "Unknown skill: btw" — Claude Code's reply to a slash command it does not know, written as a
    # user line after its local-command caveat — mined as the person steering the agent.
    cc = Claude().user("Check which emulators are attached.").assistant(text("Running adb devices."))
    cc.user("<local-command-caveat>Caveat: The messages below were generated by the user while running local "
            "commands. DO NOT respond to these messages or otherwise consider them in your response unless the "
            "user explicitly asks you to.</local-command-caveat>", isMeta=True)
    cc.user("Unknown skill: btw")
    cc.assistant(text("Two devices are attached."))
    assert mined(cc) == []


async def test_a_subagents_interventions_are_recorded_without_a_model_call(store: LearningStore, tmp_path: Path):
    # Pins: a refusal in a subagent's transcript — never learnable, its context withheld, no words of the
    # person ("[Request interrupted by user for tool use]" after Claude Code's stock rejection) — still
    # cost a reflect call whose only possible answer was a skip; and a subagent's steer likewise.
    from mecha.core.agents.importing import import_sessions
    from mecha.core.learning.lessons import list_lessons

    cc = Claude().user("Find every TODO in the repository.", isSidechain=True, agentId="a1")
    cc.assistant(text("Searching."), use("g", "Bash", command="grep -rn TODO .", description="Find TODOs"),
                 isSidechain=True, agentId="a1")
    cc.result("g", REJECTION, is_error=True, isSidechain=True, agentId="a1")
    cc.user([{"type": "text", "text": "[Request interrupted by user for tool use]"}], isSidechain=True, agentId="a1")
    cc.assistant(text("Stopped."), isSidechain=True, agentId="a1")
    cc.user("Also list the FIXMEs.", isSidechain=True, agentId="a1").assistant(text("Two FIXMEs."), isSidechain=True)
    folder = tmp_path / "projects" / "-srv-app" / cc.session / "subagents"
    folder.mkdir(parents=True)
    (folder / "agent-a1.jsonl").write_bytes(cc.bytes())
    report = import_sessions(store, "claude", tmp_path / "projects", voices=VOICES, ended=True)
    assert len(report.queued) == 1

    def no_model() -> Reflector:
        raise NoModel("no model is configured for the reflect pass")

    outcome = await reflect_inbox(store, None, require_model=no_model)
    assert (outcome.to_ask, outcome.reflections, outcome.learnable, outcome.not_asked_derived) == (0, 2, 0, 2)
    assert "2 intervention(s) from a session no person ran (a subagent's, a headless run's) recorded without a model call" in outcome.summary()
    assert len(store.mined_sessions()) == 1
    lessons, counts = list_lessons(store.reflexions())
    assert sorted(lesson.intervention for lesson in lessons) == ["", "Also list the FIXMEs."]
    assert counts.untrusted == 0 and not any(lesson.learnable for lesson in lessons)
    for listed in lessons:
        assert listed.not_learnable_because is not None
        assert listed.not_learnable_because.startswith("not from an interactive session")
        assert "the reflector was not asked" in listed.not_learnable_because
