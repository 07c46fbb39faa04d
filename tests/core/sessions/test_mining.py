"""What counts as a person stepping in, pinned case by case.

Counterparts of the seed's mining tests, plus the shapes the wire contract adds:
`tools_before` / `tools_after`, the string-content shorthand, unknown blocks,
and edits built from the outbox.
"""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mecha.core.sessions.mining import (
    DEFAULT_FINAL_ANSWER_NUDGE,
    DENIAL_PREFIX,
    Intervention,
    Trigger,
    Voices,
    edit_intervention,
    extract_interventions,
    locate_followup,
)
from mecha.core.sessions.outbox import OutboxItem
from mecha.core.sessions.transcript import Block, Message


def tool_use(id: str, name: str = "fs_read", input: object = None) -> Block:
    return Block.tool_use(id, name, {"path": "a.md"} if input is None else input)


def result(id: str, content: str, is_error: bool = False) -> Block:
    return Block.tool_result(id, content, is_error)


def only(found: list[Intervention]) -> Intervention:
    assert len(found) == 1, found
    return found[0]


# ─── The seed's cases ───────────────────────────────────────────────────────


def test_a_plain_run_has_no_interventions():
    # Pins: an ordinary task → tool call → result → answer being mined as if
    # the person had corrected something.
    messages = [
        Message.user("read a.md"),
        Message.assistant([tool_use("t1")]),
        Message.tool_results([result("t1", "hello")]),
        Message.assistant("it says hello"),
    ]
    assert extract_interventions(messages) == []


def test_text_beside_tool_results_is_a_steer_whose_context_names_the_tool():
    # Pins: a mid-run redirect being lost, or reaching the reflector without
    # saying which tool the assistant was in the middle of.
    messages = [
        Message.user("do the thing"),
        Message.assistant([tool_use("t1")]),
        Message.tool_results([result("t1", "ok"), Block.text_block("change of plan: skip the rest")]),
    ]
    found = only(extract_interventions(messages))
    assert found.trigger is Trigger.STEER
    assert found.text == "change of plan: skip the rest"
    assert "fs_read" in found.context


def test_an_intervention_records_the_index_of_the_message_it_rides_in():
    # Pins: an off-by-one `at`, which would look up the wrong taint checkpoint
    # and could call a poisoned moment clean.
    messages = [
        Message.user("do the thing"),
        Message.assistant([tool_use("t1")]),
        Message.tool_results([result("t1", "ok"), Block.text_block("skip the rest")]),
    ]
    assert only(extract_interventions(messages)).at == 2


def test_a_denied_tool_call_is_an_intervention_carrying_the_reason():
    # Pins: a person's refusal being dropped, or its reason arriving with the
    # harness's prefix still glued on.
    messages = [
        Message.user("clean up"),
        Message.assistant([tool_use("t1")]),
        Message.tool_results([result("t1", "Denied by the user: not that directory", True)]),
    ]
    found = only(extract_interventions(messages))
    assert found.trigger is Trigger.DENIAL
    assert found.text == "not that directory"
    assert found.at == 2


def test_a_hook_denial_is_not_a_user_correction():
    # Pins: a hook's refusal being learned as if a person had said it — the
    # wording is the only thing telling the two apart.
    messages = [
        Message.user("clean up"),
        Message.assistant([tool_use("t1")]),
        Message.tool_results([result("t1", "Blocked by a hook: not in this workspace", True)]),
    ]
    assert extract_interventions(messages) == []


@pytest.mark.parametrize(
    "content",
    [
        "Blocked by policy: `fs_write` modifies state and this run is read-only",
        "Blocked by policy: nobody answered in Slack within 10m",
    ],
)
def test_a_policy_refusal_is_not_a_user_correction_either(content):
    # Pins: a read-only mode or an unanswered remote approval teaching rules
    # from a person who never spoke.
    messages = [
        Message.user("clean up"),
        Message.assistant([tool_use("t1")]),
        Message.tool_results([result("t1", content, True)]),
    ]
    assert extract_interventions(messages) == []


def test_a_denial_wording_outside_an_error_result_is_not_a_denial():
    # Pins: a tool whose successful output happens to start with the denial
    # prefix (a file quoting it, say) being read as a person's refusal.
    messages = [
        Message.user("show the log"),
        Message.assistant([tool_use("t1")]),
        Message.tool_results([result("t1", DENIAL_PREFIX + " quoted from a log file", False)]),
    ]
    assert extract_interventions(messages) == []


def test_an_ordinary_tool_error_is_not_an_intervention():
    # Pins: the environment failing (a missing file) being mistaken for a
    # person stepping in.
    messages = [
        Message.user("read it"),
        Message.assistant([tool_use("t1")]),
        Message.tool_results([result("t1", "no such file", True)]),
    ]
    assert extract_interventions(messages) == []


def test_the_first_user_turn_is_the_task_and_later_ones_are_followups_with_context_and_aftermath():
    # Pins: the task itself mined as a correction, or a followup reaching the
    # reflector without what the assistant did next — the one thing that tells
    # a correction from a check the model passed.
    messages = [
        Message.user("summarize the report"),
        Message.assistant("Here is a long summary…"),
        Message.user("no — one paragraph, and stop hedging"),
        Message.assistant("One paragraph: …"),
    ]
    found = only(extract_interventions(messages))
    assert found.trigger is Trigger.FOLLOWUP
    assert found.text == "no — one paragraph, and stop hedging"
    assert "long summary" in found.context
    assert "One paragraph" in found.aftermath
    assert found.at == 2


def test_a_steer_also_carries_what_the_assistant_said_next():
    # Pins: the aftermath being filled for followups only, leaving a steer's
    # reflector blind to whether the redirect was obeyed.
    messages = [
        Message.user("do the thing"),
        Message.assistant([tool_use("t1")]),
        Message.tool_results([result("t1", "ok"), Block.text_block("stop after this file")]),
        Message.assistant([tool_use("t2", "grep")]),
        Message.tool_results([result("t2", "ok")]),
        Message.assistant("Stopped as asked."),
    ]
    found = only(extract_interventions(messages))
    assert found.aftermath == "Stopped as asked."


def test_the_default_forced_answer_nudge_is_not_a_person():
    # Pins: the harness's own "answer now" turn, recorded in the user's voice,
    # being offered up as a correction (found in a real dry run in the seed).
    messages = [
        Message.user("find the answer"),
        Message.assistant("Searching…"),
        Message.user(DEFAULT_FINAL_ANSWER_NUDGE),
    ]
    assert extract_interventions(messages) == []


def test_the_forced_answer_nudge_beside_tool_results_is_not_a_steer():
    # Pins: the nudge being excluded as a turn of its own but mined when the
    # harness folds it in next to the last results.
    messages = [
        Message.user("find the answer"),
        Message.assistant([tool_use("t1")]),
        Message.tool_results([result("t1", "ok"), Block.text_block(DEFAULT_FINAL_ANSWER_NUDGE)]),
    ]
    assert extract_interventions(messages) == []


def test_a_configured_forced_answer_nudge_is_not_a_person():
    # Pins: a harness with its own nudge wording having every nudge mined,
    # because only the built-in text was recognised.
    nudge = "Tools are off now. Say what you found."
    voices = Voices(final_answer_nudge=nudge)
    messages = [
        Message.user("find the answer"),
        Message.assistant("Searching…"),
        Message.user(nudge),
    ]
    assert extract_interventions(messages, voices) == []
    # The same turn with the default voices is a person's followup: the
    # configured text is what made it harness speech.
    assert only(extract_interventions(messages)).trigger is Trigger.FOLLOWUP


def test_configured_harness_voice_prefixes_are_not_a_person():
    # Pins: compaction summaries and task notices, recorded as user turns,
    # being mined as corrections.
    voices = Voices(harness_prefixes=("[compacted]", "Task notice:"))
    messages = [
        Message.user("refactor the module"),
        Message.assistant([tool_use("t1")]),
        Message.tool_results([result("t1", "ok"), Block.text_block("Task notice: build finished")]),
        Message.assistant("Continuing."),
        Message.user("[compacted] earlier, the assistant read six files"),
        Message.assistant("Resuming."),
        Message.user("stop renaming things"),
    ]
    found = only(extract_interventions(messages, voices))
    assert found.text == "stop renaming things"


def test_slash_commands_recorded_by_a_front_end_are_not_interventions():
    # Pins: `/model` or `/exit` typed at a prompt being read as the person
    # pushing back on the assistant.
    messages = [
        Message.user("explain the harness"),
        Message.assistant("It works like…"),
        Message.user("/model"),
        Message.user("/exit"),
    ]
    assert extract_interventions(messages) == []


def test_a_followup_is_located_by_its_text_and_results_messages_never_match():
    # Pins: a probe replaying from the wrong cut point, or from a steer, which
    # has no clean point to cut at.
    messages = [
        Message.user("remember the number 7"),
        Message.assistant("Noted."),
        Message.user("what number did I ask you to remember?"),
    ]
    assert locate_followup(messages, "what number did I ask you to remember?") == 2
    assert locate_followup(messages, "  what number did I ask you to remember?\n") == 2
    assert locate_followup(messages, "never said") is None

    steered = [Message.tool_results([result("t", "ok"), Block.text_block("skip the rest")])]
    assert locate_followup(steered, "skip the rest") is None


# ─── the wire contract's additions ──────────────────────────────────────────


def test_tools_before_and_after_are_distinct_tool_names_in_call_order():
    # Pins: duplicates, a sorted (rather than called) order, or tools taken
    # from the wrong assistant message.
    messages = [
        Message.user("tidy the repo"),
        Message.assistant([tool_use("t0", "ls")]),
        Message.tool_results([result("t0", "ok")]),
        Message.assistant([tool_use("t1", "grep"), tool_use("t2", "fs_read"), tool_use("t3", "grep")]),
        Message.tool_results(
            [result("t1", "ok"), result("t2", "ok"), result("t3", "ok"), Block.text_block("leave tests/ alone")]
        ),
        Message.assistant([tool_use("t4", "shell"), tool_use("t5", "fs_write"), tool_use("t6", "shell")]),
        Message.tool_results([result("t4", "ok")]),
        Message.assistant([tool_use("t7", "git")]),
    ]
    found = only(extract_interventions(messages))
    assert found.tools_before == ["grep", "fs_read"]
    assert found.tools_after == ["shell", "fs_write"]


def test_tools_before_is_empty_when_the_last_assistant_message_called_none():
    # Pins: tools carried over from an earlier assistant message than the last
    # one before the intervention.
    messages = [
        Message.user("check the build"),
        Message.assistant([tool_use("t1", "shell")]),
        Message.tool_results([result("t1", "ok")]),
        Message.assistant("The build passes."),
        Message.user("you should have run the tests too"),
        Message.assistant("Running them now."),
    ]
    found = only(extract_interventions(messages))
    assert found.tools_before == []
    assert found.tools_after == []


def test_a_message_whose_content_is_a_plain_string_decodes_and_mines_like_a_text_block():
    # Pins: the `content: "..."` shorthand failing to decode, or decoding but
    # being invisible to the miner.
    raw = b"""[
      {"role": "user", "content": "summarize the report"},
      {"role": "assistant", "content": "Here is a long summary"},
      {"role": "user", "content": "shorter, please"},
      {"role": "assistant", "content": "Short."}
    ]"""
    messages = msgspec.json.decode(raw, type=list[Message])
    found = only(extract_interventions(messages))
    assert (found.trigger, found.text, found.context, found.aftermath, found.at) == (
        Trigger.FOLLOWUP,
        "shorter, please",
        "Here is a long summary",
        "Short.",
        2,
    )
    as_blocks = [Message(role=m.role, content=m.blocks()) for m in messages]
    assert extract_interventions(as_blocks) == extract_interventions(messages)


def test_an_unknown_block_type_decodes_and_is_ignored():
    # Pins: one block kind this code has never heard of (a thinking block, an
    # image) making a whole transcript undecodable, or leaking into the text.
    raw = b"""[
      {"role": "user", "content": "do the thing"},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "secret plan", "signature": "sig"},
        {"type": "tool_use", "id": "t1", "name": "fs_read", "input": {"path": "a"}}
      ]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": false},
        {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
        {"type": "text", "text": "skip the rest"}
      ]}
    ]"""
    messages = msgspec.json.decode(raw, type=list[Message])
    found = only(extract_interventions(messages))
    assert found.trigger is Trigger.STEER
    assert found.text == "skip the rest"
    assert "secret plan" not in found.context
    assert found.tools_before == ["fs_read"]


def outbox_item(**fields) -> OutboxItem:
    base = dict(
        id="o1",
        status="sent",
        tool="send_message",
        kind="message",
        args={"to": "ana", "body": "Hello Ana, the report is attached. Best, M."},
        args_before={"to": "ana", "body": "hi ana!! report attached :)"},
    )
    base.update(fields)
    return OutboxItem(**base)


def test_a_sent_and_edited_draft_is_an_edit_intervention():
    # Pins: staged and sent text swapped (which would teach the opposite of
    # the person's preference), or the edit not being mined at all.
    found = edit_intervention(outbox_item())
    assert found is not None
    assert found.trigger is Trigger.EDIT
    assert "hi ana!! report attached :)" in found.context
    assert "Hello Ana, the report is attached. Best, M." in found.text
    assert "Hello Ana" not in found.context
    assert "hi ana!!" not in found.text
    assert found.trigger.domain() == "writing"


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"args_before": {"to": "ana", "body": "Hello Ana, the report is attached. Best, M."}}, id="sent-unchanged"),
        pytest.param({"status": "pending"}, id="pending"),
        pytest.param({"status": "rejected"}, id="rejected"),
        pytest.param({"kind": "publish", "tool": "publish_post"}, id="publish"),
        pytest.param({"args_before": None}, id="nothing-staged-recorded"),
    ],
)
def test_items_that_are_not_a_sent_edited_message_are_not_edits(fields):
    # Pins: a draft that went out untouched, one that never went out, a
    # publish's bookkeeping, or a sent message with no staged text to compare
    # (which would present the whole message as "the edit") being read as the
    # person's voice.
    assert edit_intervention(outbox_item(**fields)) is None


# ─── Properties ─────────────────────────────────────────────────────────────

_names = st.sampled_from(["fs_read", "fs_write", "grep", "shell", "", "x"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_words = st.sampled_from(
    ["", "  ", "ok", "/model", DEFAULT_FINAL_ANSWER_NUDGE, DENIAL_PREFIX + " no", "Blocked by a hook: x", "stop"]
) | st.text(max_size=20)
_blocks = st.one_of(
    st.builds(Block.text_block, _words),
    st.builds(Block.tool_use, st.text(max_size=4), _names, _json),
    st.builds(Block.tool_result, st.text(max_size=4), _words, st.booleans()),
    st.builds(Block, type=st.sampled_from(["image", "thinking", "redacted"]), text=st.none() | st.text(max_size=5)),
    st.builds(Block, type=st.just("text")),  # a text block with no text at all
)
_messages = st.lists(
    st.builds(
        Message,
        role=st.sampled_from(["user", "assistant"]),
        content=_words | st.lists(_blocks, max_size=4),
    ),
    max_size=10,
)


@settings(max_examples=300, deadline=None)
@given(_messages)
def test_mining_never_raises_and_every_intervention_points_at_a_user_message(messages):
    # Pins: a crash on some legal transcript shape (which would stall a whole
    # reflect pass), or an `at` that names an assistant message or no message.
    found = extract_interventions(messages)
    for i in found:
        assert 0 <= i.at < len(messages)
        assert messages[i.at].role == "user"
        if i.trigger is not Trigger.DENIAL:
            assert i.text and i.text == i.text.strip()
        assert len(set(i.tools_before)) == len(i.tools_before)
        assert len(set(i.tools_after)) == len(i.tools_after)
    assert [i.at for i in found] == sorted(i.at for i in found)
