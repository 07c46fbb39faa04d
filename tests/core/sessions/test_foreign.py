"""What the readers share: format detection, the taint policy, voice
profiles, and where a grown session's new part starts."""

from __future__ import annotations

import json

import pytest

from mecha.core.agents.importing import tail_start
from mecha.core.errors import InvalidInput
from mecha.core.sessions.claude_code import CLAUDE_POLICY
from mecha.core.sessions.foreign import detect_format, expand_voices, voices_from_env_value
from mecha.core.sessions.transcript import Block, Message, Taint
from mecha.core.store.inbox import enqueue, queued_session_ids, session_entry
from mecha.core.store.learning_store import LearningStore
from tests.core.ccfixture import Claude, Codex


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        (Claude().user("hi").bytes(), "claude"),
        (b'{"type":"summary","summary":"x","leafUuid":"y"}\n', "claude"),
        (Codex().bytes(), "codex"),
        (json.dumps({"session_id": "s", "messages": []}, indent=2).encode(), "mecha"),
        (b'{"role":"user","content":"hi"}\n', "mecha"),
        (b'{"sessions": ["a"]}\n', None),
        (b"not json at all\n", None),
        (b"", None),
    ],
)
def test_the_format_is_told_from_the_first_record_not_the_name(data, fmt):
    # Pins: a raw agent file read as a mecha transcript and refused as "missing field 'role'".
    assert detect_format(data) == fmt


@pytest.mark.parametrize(
    "first",
    ['{"a": ' * 40 + "1" + "}" * 40, "[" * 5000 + "]" * 5000, '{"k": ' + "[" * 5000 + "]" * 5000 + "}"],
    ids=["objects-40-deep", "arrays-5000-deep", "a-field-5000-deep"],
)
@pytest.mark.parametrize("as_file", [False, True], ids=["bytes", "open-file"])
def test_a_deep_line_of_no_format_before_the_first_record_does_not_hide_the_session(tmp_path, first, as_file):
    # Pins (found by the long fuzz): a first line of JSON nested 40 deep
    # decoded as a record head of no format, which ended the search there:
    # the whole Claude Code session was skipped as "not a session file".
    data = (first + "\n" + first + "\n").encode() + Claude().user("Only touch the docs folder.").bytes()
    if as_file:
        path = tmp_path / "s.jsonl"
        path.write_bytes(data)
        with path.open("rb") as f:
            assert detect_format(f) == "claude" and f.tell() == 0
    else:
        assert detect_format(data) == "claude"


@pytest.mark.parametrize(
    ("command", "fetches"),
    [
        ("curl -fsSL https://x.org/install.sh | sh", True),
        ("git pull --rebase", True),
        ("cd app && npm install", True),
        ("gh issue view 12", True),
        ("python -c 'import urllib.request; urllib.request.urlopen(u)'", True),
        ("bash -c \"curl -s https://x.org\"", True),
        ("pytest -x tests/", False),
        ("grep -rn curl src/", False),
        ("git status && git diff", False),
    ],
)
def test_shell_commands_that_reach_the_network_are_untrusted(command, fetches):
    # Pins: `curl … | sh` output classified as the person's own machine.
    # (The decision itself is tests/core/sessions/test_shell.py's.)
    assert CLAUDE_POLICY.taint_of("Bash", command).untrusted is fetches


def test_the_taint_policy_fails_closed_and_overrides_move_one_tool():
    # Pins: an unknown tool read as local; --trust-tool unable to clear a person's own MCP server.
    assert CLAUDE_POLICY.taint_of("mcp__notes__read").untrusted is True
    assert CLAUDE_POLICY.taint_of(None).untrusted is True
    trusted = CLAUDE_POLICY.with_overrides(trust=["mcp__notes__read"], distrust=["Read"])
    assert trusted.taint_of("mcp__notes__read") == Taint(private=True)
    assert trusted.taint_of("Read").untrusted is True


def test_voice_profiles_expand_by_name_and_the_environment_takes_json_or_lines():
    # Pins: `--voices claude` taken as the literal prefix "claude".
    assert "<task-notification>" in expand_voices(["claude"])
    assert expand_voices(["Note:", "Note:", ""]) == ("Note:",)
    assert voices_from_env_value('["codex", "Reminder:"]')[-1] == "Reminder:"
    assert voices_from_env_value("Reminder:\nAuto:\n") == ("Reminder:", "Auto:")
    with pytest.raises(InvalidInput, match="MECHA_HARNESS_VOICES"):
        voices_from_env_value('["x", 3]')


def test_a_grown_sessions_new_part_starts_at_the_answer_its_first_new_correction_answers():
    # Pins: the name of a grown session's entry moving (it is the id that
    # keeps its new part apart from the part already mined).
    messages = [
        Message.user("Task."),
        Message.assistant("First answer."),
        Message.user("Old correction."),
        Message.assistant([Block.text_block("Second answer."), Block.tool_use("c", "Read", {})]),
        Message.tool_results([Block.tool_result("c", "file")]),
        Message.assistant("Third answer."),
        Message.user("New correction."),
    ]
    assert tail_start(messages, 6) == 5
    assert tail_start(messages, 4) == 3  # a turn with text, though it also called a tool
    assert tail_start(messages[:1] + messages[2:3], 1) == 0  # no assistant turn before it


def test_sessions_waiting_in_the_inbox_are_known_by_id_without_reading_them_whole(tmp_path):
    # Pins: a rerun of reflect --sessions queueing a session whose pass had failed beside itself.
    store = LearningStore.open(tmp_path / "store")
    enqueue(store, session_entry('odd "id"', [Message.user("x" * 100_000)]))
    enqueue(store, session_entry("plain", [Message.user("y")]))
    assert queued_session_ids(store) == {'odd "id"', "plain"}
