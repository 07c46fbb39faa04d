"""Reading Codex CLI rollouts: each quirk the reader handles, pinned on a few
lines written for the test."""

from __future__ import annotations

import json

import pytest

from mecha.core.domain.reflexion import Origin
from mecha.core.errors import InvalidInput
from mecha.core.sessions.codex_cli import read_codex
from mecha.core.sessions.foreign import HARNESS_VOICE_PROFILES, detect_format
from mecha.core.sessions.mining import Trigger, Voices
from mecha.core.sessions.survey import survey_session
from tests.core.ccfixture import Codex

VOICES = Voices(harness_prefixes=HARNESS_VOICE_PROFILES["codex"])


def mined(cx: Codex):
    read = read_codex(cx.bytes())
    return read, survey_session(read.messages, read.taint_timeline, interactive=read.interactive, voices=VOICES)


def started(cx: Codex | None = None) -> Codex:
    cx = cx or Codex()
    cx.add("response_item", type="message", role="user", content=[{"type": "input_text", "text": "<environment_context>\n  <cwd>/home/pat/proj</cwd>\n</environment_context>"}])
    cx.add("turn_context", cwd="/home/pat/proj", approval_policy="on-request", model="gpt-5-codex")
    return cx.user("Add a --verbose flag to the CLI.")


def test_session_meta_turn_context_and_wrappers_give_a_task_and_nothing_mined():
    # Pins: `<environment_context>` mined as the person's first correction.
    read, plans = mined(started().say("Adding it."))
    assert read.session_id == "codex:0199aaaa-bbbb-7ccc-8ddd-000000000001"
    assert read.project == "/home/pat/proj"
    assert [m.text() for m in read.messages] == ["Add a --verbose flag to the CLI.", "Adding it."]
    assert plans == []


def test_the_item_and_event_pair_of_one_user_message_is_read_once():
    # Pins: every person's turn appearing twice, the second mined as a follow-up to nothing.
    cx = started().say("Done.").user("Also document it in the README.")
    read, plans = mined(cx)
    assert [(p.intervention.trigger, p.intervention.text) for p in plans] == [(Trigger.FOLLOWUP, "Also document it in the README.")]


def test_calls_join_the_assistant_message_and_outputs_of_any_shape_are_text():
    # Pins: `tools_before` empty because each call was its own assistant message.
    cx = started()
    cx.add("response_item", type="reasoning", summary=[{"type": "summary_text", "text": "plan"}], encrypted_content="x")
    cx.say("Looking first.").call("c1", "shell", command=["bash", "-lc", "rg verbose"])
    cx.add("response_item", type="custom_tool_call", name="apply_patch", input="*** Begin Patch", call_id="c2", status="completed")
    cx.output("c1", {"content": "src/cli.py:3", "success": True})
    cx.add("response_item", type="custom_tool_call_output", call_id="c2", output=[{"type": "input_text", "text": "patched"}])
    cx.say("Done.").user("Use -v as the short form.")
    read, plans = mined(cx)
    assert [u.name for u in read.messages[1].tool_uses()] == ["shell", "apply_patch"]
    assert [b.content for b in read.messages[2].blocks()] == ["src/cli.py:3", "patched"]
    assert plans[0].intervention.tools_before == []  # the follow-up answers the text-only reply
    assert plans[0].origin is Origin.CLEAN


def test_a_rejected_command_and_the_persons_next_words_are_one_denial():
    # Pins: Codex's normalised refusal carrying no reason, the reason mined apart from the refused call.
    cx = started().call("c1", "shell", command=["bash", "-lc", "git push origin main"])
    cx.output("c1", "exec command rejected by user")
    cx.add("event_msg", type="turn_aborted", reason="interrupted")
    cx.user("Don't push; I'll review the diff first.").say("Understood, not pushing.")
    read, plans = mined(cx)
    assert len(plans) == 1
    denial = plans[0].intervention
    assert denial.trigger is Trigger.DENIAL
    assert denial.text == "Don't push; I'll review the diff first."
    assert "git push origin main" in denial.context


def test_an_aborted_turn_followed_by_the_persons_message_is_a_steer():
    # Pins: an interrupt read as the next task, its context lost.
    cx = started().say("Running the full suite.").call("c1", "shell", command=["bash", "-lc", "pytest"])
    cx.add("event_msg", type="turn_aborted", reason="interrupted")
    cx.user("Only run tests/test_cli.py.")
    read, plans = mined(cx)
    assert [(p.intervention.trigger, p.intervention.text) for p in plans] == [(Trigger.STEER, "Only run tests/test_cli.py.")]
    assert "pytest" in plans[0].intervention.context
    assert read.messages[-1].blocks()[0].content == "(interrupted by the person)"


@pytest.mark.parametrize(
    ("item", "untrusted"),
    [
        ({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "argparse"}}, True),
        ({"type": "function_call", "name": "tracker__get_issue", "arguments": "{}", "call_id": "c9"}, True),
        ({"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["bash", "-lc", "wget -qO- https://x.org"]}), "call_id": "c9"}, True),
        ({"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["bash", "-lc", "ls"]}), "call_id": "c9"}, False),
        ({"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["bash", "-lc", "git -C x pull"]}), "call_id": "c9"}, True),
        ({"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["/usr/bin/curl", "https://x.org"]}), "call_id": "c9"}, True),
        ({"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["git", "status"]}), "call_id": "c9"}, False),
        ({"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": "docker run --rm alpine wget x"}), "call_id": "c9"}, True),
        ({"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": "rg -n TODO | head"}), "call_id": "c9"}, False),
        ({"type": "function_call", "name": "shell", "arguments": json.dumps({"workdir": "/tmp"}), "call_id": "c9"}, True),
        ({"type": "local_shell_call", "call_id": "c9", "status": "completed", "action": {"type": "exec", "command": ["bash", "-lc", "npm view x"]}}, True),
        ({"type": "local_shell_call", "call_id": "c9", "status": "completed", "action": {"type": "exec", "command": ["ls", "-la"]}}, False),
    ],
)
def test_web_search_mcp_tools_and_fetching_commands_make_the_rest_untrusted(item, untrusted):
    # Pins: a searched page's text reaching a reflector as clean evidence.
    cx = started().add("response_item", **item)
    if item["type"] != "web_search_call":
        cx.output("c9", "some output")
    cx.say("Found it.").user("Good, now wire it up.")
    _, plans = mined(cx)
    assert plans[0].origin is (Origin.UNTRUSTED if untrusted else Origin.CLEAN)


def test_a_subagent_or_exec_session_is_not_interactive():
    # Pins: a program's prompts classified as a person's corrections.
    for source in ({"subagent": "review"}, "exec"):
        read, plans = mined(started(Codex(source=source)).say("Done.").user("And the docs."))
        assert read.interactive is False
        assert [p.origin for p in plans] == [Origin.DERIVED]


def test_the_older_rollout_shape_reads_the_same():
    # Pins: rollouts from before the `{type, payload}` wrapper refused as not a session.
    lines = [
        {"id": "old-session", "timestamp": "2025-06-01T10:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Rename foo to bar."}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Renamed."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Keep the old name as an alias."}]},
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    assert detect_format(data) == "codex"
    read = read_codex(data)
    assert read.session_id == "codex:old-session"
    assert [m.text() for m in read.messages][-1] == "Keep the old name as an alias."


def test_a_bad_line_is_skipped_naming_the_format_and_the_line():
    # Pins: one bad line refusing a whole rollout.
    data = started().bytes() + b"{nope\n" + started().bytes()
    read = read_codex(data, name="r.jsonl")
    assert read.skipped_lines == 1
    assert read.warnings[0].startswith("r.jsonl:6: skipped a line that is not a record of a Codex CLI rollout")
    with pytest.raises(InvalidInput, match=r"r.jsonl:1: reading as a Codex CLI rollout: no line"):
        read_codex(b"{nope\n[]\n", name="r.jsonl")


def test_function_call_arguments_that_are_an_object_are_the_arguments():
    # Pins: a rollout refused whole because one call's `arguments` was an object, not a JSON string.
    cx = started()
    cx.lines.append({"timestamp": "t", "type": "response_item", "payload": {
        "type": "function_call", "name": "shell", "call_id": "c9", "arguments": {"command": ["bash", "-lc", "curl example.com"]}}})
    cx.lines.append({"timestamp": "t", "type": "response_item", "payload": {
        "type": "function_call_output", "call_id": "c9", "output": "<html>"}})
    read = read_codex(cx.bytes())
    assert read.skipped_lines == 0
    call = next(b for m in read.messages for b in m.blocks() if b.type == "tool_use" and b.id == "c9")
    assert call.input == {"command": ["bash", "-lc", "curl example.com"]}
    assert read.taint_timeline[-1].taint.untrusted  # the command line was read from the object




@pytest.mark.parametrize(("cmd", "session", "untrusted"), [("cargo test", 42, False), ("npm view x", 42, True), ("cargo test", 7, True), ("bash", 42, True)])
def test_more_output_of_a_running_exec_is_decided_by_the_command_that_started_it(cmd, session, untrusted):
    # Pins: `write_stdin` read as a local tool — the output of whatever the
    # session runs (a shell fed `curl …`) trusted as the person's machine.
    cx = started().call("c1", "exec_command", cmd=cmd).output("c1", "Chunk ID: a\nProcess running with session ID 42\nOutput:\nBuilding...\n")
    cx.call("c2", "write_stdin", session_id=session, chars="curl https://evil.example\n" if cmd == "bash" else "")
    cx.output("c2", "Process exited with code 0\nOutput:\nok\n")
    cx.say("Done.").user("Good, now wire it up.")
    _, plans = mined(cx)
    assert plans[-1].origin is (Origin.UNTRUSTED if untrusted else Origin.CLEAN)


def test_each_message_is_dated_by_its_lines_timestamp_in_the_stores_spelling():
    # Pins: a correction's time lost on import, so a repeat of a live rule
    # is dated when it was read rather than when it was said.
    cx = Codex()
    cx.user("Tidy the changelog.")
    cx.say("Done.")
    cx.lines[-2]["timestamp"] = "2026-11-03T08:30:00.5+01:00"
    cx.lines[-1]["timestamp"] = "not a time"
    read = read_codex(cx.bytes())
    assert len(read.times) == len(read.messages) == 2
    assert read.time_at(0) == "2026-11-01T10:00:01.000000Z"
    assert read.time_at(1) == "2026-11-03T07:30:00.500000Z" and read.time_at(5) is None
