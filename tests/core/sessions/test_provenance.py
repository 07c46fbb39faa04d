"""Provenance over a taint timeline: what had entered the model's context at
a message (`taint_at`), and which of the assistant's words a reflector may
see (`withheld_assistant_text`)."""

from __future__ import annotations

import msgspec

from mecha.core.sessions.mining import Trigger, context_source, extract_interventions
from mecha.core.sessions.provenance import withheld_assistant_text, written_clean
from mecha.core.sessions.transcript import Message, Taint, TaintCheckpoint, covering_taint, taint_at

CLEAN = Taint()
DIRTY = Taint(untrusted=True)


def cp(at: int, taint: Taint, reset: bool = False) -> TaintCheckpoint:
    return TaintCheckpoint(at=at, taint=taint, reset=reset)


def test_a_timeline_that_returns_to_clean_stays_untrusted_without_a_reset() -> None:
    # Pins: untrusted at 4, clean at 7 read as clean from 7 on, though the
    # context still holds what arrived at 4.
    timeline = [cp(0, CLEAN), cp(4, DIRTY), cp(7, CLEAN)]
    assert covering_taint(timeline, 8) == CLEAN, "the covering checkpoint alone says clean"
    assert [taint_at(timeline, i).untrusted for i in range(10)] == [False] * 4 + [True] * 6


def test_a_reset_starts_the_reading_over_from_its_own_taint() -> None:
    # Pins: a harness that rebuilt its context having no way to say so (or
    # a reset that forgot taint arriving after it).
    timeline = [cp(0, CLEAN), cp(4, DIRTY), cp(7, CLEAN, reset=True), cp(9, Taint(private=True))]
    assert [taint_at(timeline, i).untrusted for i in range(8)] == [False] * 4 + [True] * 3 + [False]
    assert taint_at(timeline, 9) == Taint(private=True)
    assert taint_at([cp(0, CLEAN), cp(3, DIRTY, reset=True)], 5) == DIRTY, "a reset says what the new context holds"


def test_an_unsorted_timeline_and_ties_fail_closed() -> None:
    # Pins: order of arrival deciding provenance.
    assert taint_at([cp(5, DIRTY), cp(0, CLEAN)], 6) == DIRTY
    assert taint_at([cp(2, DIRTY), cp(2, CLEAN)], 2) == DIRTY
    assert taint_at([cp(3, CLEAN)], 2) is None and taint_at(None, 0) is None and taint_at([], 0) is None
    assert not written_clean(None, 0) and not written_clean([cp(3, CLEAN)], 1)


def test_a_timeline_without_reset_fields_decodes_and_encodes_as_before() -> None:
    # Pins: the new field breaking an older harness's timelines, or the
    # sidecar writing `"reset": false` into inbox entries it did not get.
    [old] = msgspec.json.decode(b'[{"at": 3, "taint": {"private": false, "untrusted": true}}]', type=list[TaintCheckpoint])
    assert old == cp(3, DIRTY) and old.reset is False
    assert b"reset" not in msgspec.json.encode(old)
    assert msgspec.json.decode(b'{"at": 1, "taint": {}, "reset": true}', type=TaintCheckpoint).reset


def _steer_after(context_msg: dict, aftermath_msgs: list[dict]) -> list[Message]:
    return msgspec.convert(
        [
            {"role": "user", "content": "Tidy the docs."},                                             # 0
            {"role": "assistant", "content": [{"type": "tool_use", "id": "w", "name": "web_fetch", "input": {}}]},  # 1
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "w", "content": "stranger", "is_error": False}]},  # 2
            context_msg,                                                                                # 3
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "ok", "is_error": False},
                                         {"type": "text", "text": "Only docs/, please."}]},            # 4
            *aftermath_msgs,                                                                            # 5…
        ],
        list[Message],
    )


def test_context_written_before_a_reset_is_withheld_and_the_aftermath_after_it_is_shown() -> None:
    # Pins: a reset making what the assistant wrote while a stranger's text
    # was in its context learnable.
    messages = _steer_after(
        {"role": "assistant", "content": [{"type": "text", "text": "The page says: push to main"},
                                          {"type": "tool_use", "id": "c", "name": "shell", "input": {}}]},
        [{"role": "assistant", "content": "Understood, docs only."}],
    )
    [steer] = extract_interventions(messages)
    assert steer.trigger is Trigger.STEER and context_source(messages, steer) == 3
    reset_at_4 = [cp(0, CLEAN), cp(2, DIRTY), cp(4, CLEAN, reset=True)]
    assert withheld_assistant_text(messages, reset_at_4, steer) == (True, False)
    reset_at_3 = [cp(0, CLEAN), cp(2, DIRTY), cp(3, CLEAN, reset=True)]
    assert withheld_assistant_text(messages, reset_at_3, steer) == (False, False)
    untrusted_after = [*reset_at_4, cp(5, DIRTY)]
    assert withheld_assistant_text(messages, untrusted_after, steer) == (True, True)


def test_a_followup_cites_the_last_assistant_text_and_a_steer_the_last_action() -> None:
    # Pins: provenance judged on a different message than the one quoted.
    messages = msgspec.convert(
        [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "Here is the plan."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "fs_read", "input": {}}]},
            {"role": "user", "content": "Not like that."},
        ],
        list[Message],
    )
    [followup] = extract_interventions(messages)
    assert followup.trigger is Trigger.FOLLOWUP and followup.context == "Here is the plan."
    assert context_source(messages, followup) == 1
    assert context_source(messages[:1], followup) is None
