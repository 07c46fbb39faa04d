"""The agents' hook settings: what install merges in, what uninstall takes
out, how our entries are told from a person's, what a hook run is given, and
the session-start notice's count of pending proposals."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from mecha.core.agents import hooks as hk
from mecha.core.agents.notice import hook_output, notice_line, pending_proposals
from mecha.core.environment.agents import END_TIMEOUT_S, SESSION_END
from mecha.core.errors import InvalidInput
from mecha.core.learning.proposals import pending_for
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus
from tests import builders

PROGRAM = hk.hook_program("/home/pat/.venvs/mecha/bin/python")
#: The hook runner's code, as the installed command quotes it.
RUNNER = shlex.quote(hk.HOOK_CODE)

#: A settings file as Claude Code and its users write it: permissions, an
#: environment, a status line, and hooks of the person's own — one of them on
#: an event ours use too.
PERSONS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(npm run lint)", "Read(~/.zshrc)"], "deny": ["Read(./.env)"]},
    "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0", "DISABLE_AUTOUPDATER": "1"},
    "hooks": {
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "npx prettier --write ."}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "echo bye >> ~/.claude/bye.log", "timeout": 2}]}],
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
    "model": "opus",
}


def _ours(doc: dict) -> list[tuple[str, str]]:
    return [(event, entry["command"]) for event, _g, entry in hk._entries(doc) if hk.is_ours(entry)]


def test_install_adds_our_three_hooks_and_keeps_every_other_key_and_hook_in_order():
    # Pins: a merge that rewrites the person's hooks, drops a key, or reorders the file.
    doc = hk.with_ours(json.loads(json.dumps(PERSONS)), "claude", PROGRAM)
    assert list(doc) == list(PERSONS)
    assert {k: v for k, v in doc.items() if k != "hooks"} == {k: v for k, v in PERSONS.items() if k != "hooks"}
    assert list(doc["hooks"]) == ["PostToolUse", "SessionEnd", "SessionStart", "PreCompact"]
    assert doc["hooks"]["PostToolUse"] == PERSONS["hooks"]["PostToolUse"]
    assert doc["hooks"]["SessionEnd"][0] == PERSONS["hooks"]["SessionEnd"][0]  # theirs first, untouched
    end = doc["hooks"]["SessionEnd"][1]
    assert end == {"hooks": [{"type": "command", "timeout": END_TIMEOUT_S,
                              "command": f"/home/pat/.venvs/mecha/bin/python -P -c {RUNNER} hook claude session-end"}]}
    start = doc["hooks"]["SessionStart"][0]
    assert start["matcher"] == "startup|resume|clear"
    assert start["hooks"][0]["command"] == f"/home/pat/.venvs/mecha/bin/python -P -c {RUNNER} hook claude session-start"
    assert doc["hooks"]["PreCompact"][0]["hooks"][0]["command"].endswith("hook claude session-end")


def test_install_twice_changes_nothing_and_uninstall_gives_back_the_persons_file():
    once = hk.with_ours(PERSONS, "claude", PROGRAM)
    assert hk.with_ours(once, "claude", PROGRAM) == once
    assert hk.without_ours(once) == PERSONS
    assert hk.without_ours(PERSONS) == PERSONS  # nothing of ours: nothing removed


def test_a_reinstall_from_another_environment_replaces_our_entries_where_they_stand():
    # Pins: two of our hooks running per session after the person moved the venv.
    old = hk.with_ours(PERSONS, "claude", ["/old/venv/bin/mecha-sidecar"])  # how an earlier install wrote it
    new = hk.with_ours(old, "claude", PROGRAM)
    assert sorted(_ours(new)) == sorted(_ours(hk.with_ours(PERSONS, "claude", PROGRAM)))
    assert all(command.startswith(PROGRAM[0]) for _e, command in _ours(new))
    assert new["hooks"]["SessionEnd"][0] == PERSONS["hooks"]["SessionEnd"][0]


def test_our_entry_sharing_a_group_with_the_persons_hook_leaves_theirs_in_place():
    mixed = {"hooks": {"SessionEnd": [{"hooks": [
        {"type": "command", "command": "echo theirs"},
        {"type": "command", "command": "/x/bin/mecha-sidecar hook claude session-end"},
    ]}]}}
    assert hk.without_ours(mixed) == {"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "echo theirs"}]}]}}
    doc = hk.with_ours(mixed, "claude", PROGRAM)
    assert doc["hooks"]["SessionEnd"][0] == {"hooks": [{"type": "command", "command": "echo theirs"}]}
    assert _ours({"hooks": {"SessionEnd": doc["hooks"]["SessionEnd"]}}) == [("SessionEnd", shlex.join([*PROGRAM, "hook", "claude", "session-end"]))]


@pytest.mark.parametrize(
    ("command", "ours"),
    [
        ("/home/pat/.venvs/mecha/bin/mecha-sidecar hook claude session-end", True),
        ("'/Users/pat/My Tools/bin/mecha-sidecar' hook codex session-start --learning-dir /tmp/s", True),
        ("/usr/bin/python3 -m mecha.sidecar hook claude session-end", True),
        ("'/Users/pat/My Tools/venv/bin/python' -P -m mecha.sidecar hook claude session-start", True),
        (f"/usr/bin/python3 -P -c {shlex.quote(hk.HOOK_CODE)} hook codex session-end --learning-dir /s", True),
        ("/usr/bin/python3 -P -c 'import sys; from mecha.sidecar.hookrun import run' hook claude session-end", False),
        ("/usr/bin/python3 -P -m mecha.sidecar.other hook claude session-end", False),
        ("/usr/bin/python3 -c 'import mecha' hook claude session-end", False),
        ("mecha-sidecar import claude", False),  # a person's own use of the program is theirs
        ("echo mecha-sidecar hook claude session-end", False),
        ("/opt/bin/mecha-sidecar-dev hook claude session-end", False),
        ("'unclosed", False),
    ],
)
def test_our_entries_are_recognised_by_their_command(command, ours):
    assert hk.is_ours({"type": "command", "command": command}) is ours


def test_the_command_is_quoted_for_a_shell():
    program = ["/Users/pat/My Tools/bin/mecha-sidecar"]
    command = hk.hook_command(program, "claude", SESSION_END, "/Users/pat/a store")
    assert shlex.split(command) == [*program, "hook", "claude", "session-end", "--learning-dir", "/Users/pat/a store"]


def test_codex_hooks_cap_session_end_at_three_seconds():
    doc = hk.with_ours({}, "codex", PROGRAM)
    assert doc["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 3
    assert doc["hooks"]["SessionEnd"][0]["hooks"][0]["command"].endswith("hook codex session-end")


def test_render_keeps_the_files_indentation_and_final_newline(tmp_path):
    path = tmp_path / "settings.json"
    text = json.dumps(PERSONS, indent=4, ensure_ascii=False) + "\n"
    path.write_text(text)
    settings = hk.read_settings(path)
    assert hk.render(settings, settings.doc) == text
    assert hk.render(settings, hk.without_ours(hk.with_ours(settings.doc, "claude", PROGRAM))) == text
    fresh = hk.read_settings(tmp_path / "none.json")
    assert hk.render(fresh, {"a": 1}) == '{\n  "a": 1\n}\n'


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"hooks": {"SessionEnd": [ }', "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"hooks": []}', '"hooks" is not an object'),
        ('{"hooks": {"SessionEnd": {}}}', '"hooks.SessionEnd" is not a list'),
    ],
)
def test_a_file_that_is_not_settings_is_refused_naming_it(tmp_path, text, says):
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(InvalidInput) as e:
        hk.read_settings(path)
    assert str(path) in str(e.value) and says in str(e.value) and "nothing was written" in str(e.value)


def test_the_project_scope_is_the_project_of_the_working_directory(tmp_path):
    # Pins: install and the lessons' scopes disagreeing about which project a directory is in.
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    deep = tmp_path / "repo" / "src" / "pkg"
    deep.mkdir(parents=True)
    home = tmp_path / "home"
    assert hk.settings_path("claude", "project", home=home, cwd=deep) == tmp_path / "repo" / ".claude" / "settings.json"
    assert hk.settings_path("codex", "user", home=home, cwd=deep) == home / ".codex" / "hooks.json"
    outside = tmp_path / "scratch"
    outside.mkdir()
    assert hk.settings_path("claude", "project", home=home, cwd=outside) == outside / ".claude" / "settings.json"


def test_the_hook_input_is_read_as_the_agents_send_it():
    got = hk.parse_hook_input(
        b'{"session_id": "abc", "transcript_path": null, "cwd": "/p", "hook_event_name": "SessionEnd", '
        b'"reason": "other", "permission_mode": "default"}'
    )
    assert (got.session_id, got.transcript_path, got.cwd) == ("abc", None, "/p")
    for bad, says in [(b"", "no input"), (b"not json", "not JSON"), (b'{"cwd": "/p"}', "not what an agent sends"),
                      (b'{"session_id": 3}', "not what an agent sends"), (b'{"session_id": " "}', "empty session_id")]:
        with pytest.raises(InvalidInput, match=says):
            hk.parse_hook_input(bad)


def test_a_codex_rollout_is_found_by_its_session_id_newest_day_first(tmp_path):
    sid = "0199aaaa-bbbb-7ccc-8ddd-000000000001"
    old = tmp_path / "2026" / "10" / "30" / f"rollout-2026-10-30T09-00-00-{sid}.jsonl"
    new = tmp_path / "2026" / "11" / "01" / f"rollout-2026-11-01T10-00-00-{sid}.jsonl"
    other = tmp_path / "2026" / "11" / "02" / "rollout-2026-11-02T10-00-00-0199aaaa-bbbb-7ccc-8ddd-000000000002.jsonl"
    for p in (old, new, other):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("{}\n")
    assert hk.codex_rollout(tmp_path, sid) == new
    assert hk.codex_rollout(tmp_path, "0199aaaa-0000-0000-0000-000000000009") is None
    assert hk.codex_rollout(tmp_path, "../etc") is None
    got = hk.HookInput(session_id=sid, transcript_path=None)
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "sessions").symlink_to(tmp_path, target_is_directory=True)
    assert hk.session_file("codex", got, home=home) == home / ".codex" / "sessions" / new.relative_to(tmp_path)
    with pytest.raises(InvalidInput, match="no rollout"):
        hk.session_file("codex", hk.HookInput(session_id="0199aaaa-0000-0000-0000-000000000009"), home=home)
    with pytest.raises(InvalidInput, match="is not there"):
        hk.session_file("claude", hk.HookInput(session_id="s", transcript_path=str(tmp_path / "gone.jsonl")), home=home)
    with pytest.raises(InvalidInput, match="names no transcript_path"):
        hk.session_file("claude", got, home=home)


def _proposal(pid: str, status: ProposalStatus) -> Proposal:
    return builders.proposal(pid, status=status, created_at="2026-11-01T10:00:00Z")


def test_the_notice_counts_pending_proposals_as_the_store_does(tmp_path):
    # Pins: the standard-library reader drifting from `pending_for` (a
    # resolved proposal announced, or a pending one missed).
    store = LearningStore.open(tmp_path / "store")
    assert pending_proposals(str(store.root)) == 0
    for pid, status in [("p-1", ProposalStatus.PENDING), ("p-2", ProposalStatus.ACCEPTED),
                        ("p-3", ProposalStatus.REJECTED), ("p-4", ProposalStatus.PENDING)]:
        store.write_proposal(_proposal(pid, status))
    (store.root / "proposals" / "p-5.json").write_text('{"status": "pending"')  # torn: the full reader's to name
    (store.root / "proposals" / ".p-6.json.tmp").write_text('{"status": "pending"}')
    assert pending_proposals(str(store.root)) == len(pending_for(store)) == 2
    assert pending_proposals(str(tmp_path / "no-store")) == 0


def test_the_notice_is_one_system_message_line_or_nothing():
    assert hook_output(notice_line(0)) == b""
    out = json.loads(hook_output(notice_line(2)))
    assert list(out) == ["systemMessage"]  # never hookSpecificOutput: the model is not told
    assert out["systemMessage"].startswith("mecha: 2 rule proposals await your review")
    assert "\n" not in out["systemMessage"] and "mecha-sidecar proposals" in out["systemMessage"]
    assert "--learning-dir /s" in json.loads(hook_output(notice_line(1, "/s")))["systemMessage"]


def test_installed_reports_missing_events_and_programs_that_are_gone(tmp_path):
    path = tmp_path / "settings.json"
    doc = hk.with_ours({}, "claude", hk.hook_program(str(tmp_path / "gone" / "python")))
    del doc["hooks"]["PreCompact"]
    path.write_text(json.dumps(doc))
    inst = hk.installed(hk.read_settings(path), "claude")
    assert sorted(inst.events) == ["SessionEnd", "SessionStart"] and inst.missing == ["PreCompact"]
    assert inst.stale_programs == [str(tmp_path / "gone" / "python")]
    assert Path(inst.path) == path
