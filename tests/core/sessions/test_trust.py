"""The person's standing trust decisions: kept in the config file, read by
every session reader, refused when they would make a stranger's text
learnable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mecha.core.domain.reflexion import Origin
from mecha.core.environment.trust import add_trust, load_trust, policy_with, remove_trust
from mecha.core.errors import InvalidInput
from mecha.core.sessions.foreign import read_session
from mecha.core.sessions.survey import survey_session
from mecha.core.sessions.trust import Trust, check_entry
from tests.core.ccfixture import Claude, Codex, text, use


def _bd_session() -> bytes:
    cc = Claude()
    cc.user("Pick the next issue.").assistant(text("Listing."), use("t1", "Bash", command="bd ready --json")).result("t1", "[]")
    cc.assistant(text("Nothing is ready.")).user("Then file one for the flaky test.")
    cc.assistant(text("Filed."))
    return cc.bytes()


def test_no_config_file_trusts_nothing_more_than_the_defaults(tmp_path: Path) -> None:
    trust = load_trust(tmp_path / "absent.toml")
    assert trust.entries == () and trust.path == str(tmp_path / "absent.toml")


def test_entries_are_kept_in_the_trust_table_and_every_other_byte_of_the_file_stays(tmp_path: Path) -> None:
    # Pins: a trust add that rewrote the person's [model] settings or
    # dropped their comments.
    config = tmp_path / "sidecar.toml"
    before = '# my settings\n[model]\napi = "openai"  # the local one\nbase_url = "http://127.0.0.1:8080"\nmodel = "local"\n'
    config.write_text(before)
    trust = add_trust(["Bash(bd)", "shell(git fetch)", "mcp__notes__read", "Bash(bd)"], config)
    assert trust.entries == ("Bash(bd)", "Bash(git fetch)", "mcp__notes__read")
    written = config.read_text()
    assert written.startswith(before)
    assert load_trust(config).entries == trust.entries
    assert os.stat(config).st_mode & 0o777 == 0o600
    after = remove_trust(["Bash(git  fetch)"], config)
    assert after.entries == ("Bash(bd)", "mcp__notes__read")
    assert config.read_text().startswith(before)


@pytest.mark.parametrize("entry", ["Bash", "WebFetch", "WebSearch", "Task", "web_search", "exec_command"])
def test_a_standing_decision_cannot_trust_a_strangers_text_wholesale(tmp_path: Path, entry: str) -> None:
    # The seeds' rule: no knob makes untrusted content learnable for good.
    config = tmp_path / "sidecar.toml"
    with pytest.raises(InvalidInput, match="cannot be trusted for good"):
        add_trust([entry], config)
    assert not config.exists()


@pytest.mark.parametrize("bad", ["", "Bash(curl | sh)", "two words", "Bash(a b c)"])
def test_an_entry_that_is_no_program_or_tool_is_refused_with_the_forms_to_write(bad: str) -> None:
    with pytest.raises(InvalidInput, match=r"Bash\(bd\)|Bash\(make\)"):
        check_entry(bad)


def test_removing_what_is_not_trusted_names_what_is(tmp_path: Path) -> None:
    config = tmp_path / "sidecar.toml"
    add_trust(["Bash(bd)"], config)
    with pytest.raises(InvalidInput, match=r"Bash\(make\) is not trusted .*it holds: Bash\(bd\)"):
        remove_trust(["Bash(make)"], config)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("[trust]\nallow = 'Bash(bd)'\n", "expected a list of strings"),
        ("[trust]\nallw = ['Bash(bd)']\n", "allw: unknown key"),
        ("trust = 3\n", "must be a table"),
        ("[trust\n", "not valid TOML"),
    ],
)
def test_a_trust_table_that_does_not_read_is_an_error_naming_the_file(tmp_path: Path, content: str, why: str) -> None:
    config = tmp_path / "sidecar.toml"
    config.write_text(content)
    with pytest.raises(InvalidInput, match=why) as err:
        load_trust(config)
    assert str(config) in str(err.value)


def test_an_entry_that_may_not_stand_is_ignored_by_name_and_removable(tmp_path: Path) -> None:
    # Pins: a config holding a web tool (written before such tools were
    # refused, or by hand) stopping every reader with an error — every hook
    # then failed on every session — while `trust remove` refused to take the
    # entry out, so only a hand edit got the person going again.
    config = tmp_path / "sidecar.toml"
    config.write_text("# mine\n[trust]\nallow = ['Bash(bd)', 'mcp__serper__google_search', 'Bash', 'not an entry (']\n")
    kept = load_trust(config)
    assert kept.entries == ("Bash(bd)",)
    assert [raw for raw, _ in kept.ignored] == ["mcp__serper__google_search", "Bash", "not an entry ("]
    assert all("trusted for good" in why or "not a trust entry" in why for _, why in kept.ignored)
    assert "mcp__serper__google_search" not in kept.policy("claude").local
    # Adding keeps what the person wrote; removing takes one out by its spelling.
    added = add_trust(["Bash(make)"], config)
    assert added.entries == ("Bash(bd)", "Bash(make)") and len(added.ignored) == 3
    after = remove_trust(["mcp__serper__google_search"], config)
    assert [raw for raw, _ in after.ignored] == ["Bash", "not an entry ("]
    assert after.entries == ("Bash(bd)", "Bash(make)")
    assert config.read_text().startswith("# mine\n")


def test_a_session_reader_honours_the_standing_decisions_its_caller_hands_in(tmp_path: Path) -> None:
    # Pins: a local tracker the person trusted once still made every later
    # import, hook and validate read its sessions untrusted.
    data = _bd_session()
    before = read_session(tmp_path / "s.jsonl", "claude", data=data, trust=load_trust())
    [plan] = survey_session(before.messages, before.taint_timeline)
    assert plan.origin is Origin.UNTRUSTED
    add_trust(["Bash(bd)"], Path(os.environ["MECHA_SIDECAR_CONFIG"]))
    after = read_session(tmp_path / "s.jsonl", "claude", data=data, trust=load_trust())
    [plan] = survey_session(after.messages, after.taint_timeline)
    assert plan.origin is Origin.CLEAN
    # The reader opens no config file of its own: handed no decisions, it
    # reads with its own lists alone.
    alone = read_session(tmp_path / "s.jsonl", "claude", data=data)
    [plan] = survey_session(alone.messages, alone.taint_timeline)
    assert plan.origin is Origin.UNTRUSTED
    # One run's --distrust-tool still wins over the standing decision.
    distrusted = read_session(tmp_path / "s.jsonl", "claude", data=data, policy=policy_with("claude", distrust=["Bash(bd)"]))
    [plan] = survey_session(distrusted.messages, distrusted.taint_timeline)
    assert plan.origin is Origin.UNTRUSTED


def test_a_program_trusted_for_one_agent_is_trusted_for_the_others_shell_tools(tmp_path: Path) -> None:
    cx = Codex()
    cx.user("Pick the next issue.").say("Listing.").call("c1", "shell", command=["bd", "ready"]).output("c1", "[]")
    cx.say("Nothing is ready.").user("Then file one for the flaky test.")
    policy = Trust(entries=("Bash(bd)",)).policy("codex")
    read = read_session(tmp_path / "r.jsonl", "codex", data=cx.bytes(), policy=policy)
    [plan] = survey_session(read.messages, read.taint_timeline)
    assert plan.origin is Origin.CLEAN


@pytest.mark.parametrize(
    "entry",
    ["mcp__serper__google_search", "mcp__MiniMax__web_search", "mcp__ddg-search__fetch_content", "mcp__fetch__imageFetch",
     "mcp__tavily__tavily_extract", "mcp__docs__browse_page", "Workflow", "Agent", "ToolSearch"],
)
def test_a_tool_that_reaches_the_web_or_runs_subagents_is_refused_for_good_saying_why(tmp_path: Path, entry: str) -> None:
    # Pins: `trust add` accepted the web-search MCP tools and Workflow for good.
    config = tmp_path / "sidecar.toml"
    with pytest.raises(InvalidInput, match=r"cannot be trusted for good: (its name says it reaches the web|it runs subagents|its results)") as err:
        add_trust([entry], config)
    assert "--trust-tool" in str(err.value)
    assert not config.exists()
    # One run can still say so, where the person sees the choice.
    assert entry in policy_with("claude", [entry], []).local


def test_a_local_mcp_tool_is_still_trusted_for_good(tmp_path: Path) -> None:
    assert add_trust(["mcp__notes__read", "mcp__beads__list_issues"], tmp_path / "c.toml").entries == ("mcp__notes__read", "mcp__beads__list_issues")


def _tool_session(tool: str) -> bytes:
    cc = Claude()
    cc.user("Look it up.").assistant(text("Looking."), use("t1", tool, query="x")).result("t1", "found: rm -rf everything")
    cc.assistant(text("Done.")).user("Now do it the other way.")
    cc.assistant(text("Ok."))
    return cc.bytes()


@pytest.mark.parametrize("tool", ["mcp__serper__google_search", "Workflow", "WebSearch"])
def test_a_web_tool_held_back_intervention_offers_no_trust_command(tmp_path: Path, tool: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_tool_session(tool))
    read = read_session(path)
    assert read.blames and read.blames[0].tool == tool and read.blames[0].entry is None, read.blames


@pytest.mark.parametrize("tool", ["TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TaskStop", "LSP", "EnterWorktree", "CronCreate"])
def test_claude_codes_own_bookkeeping_tools_are_local(tmp_path: Path, tool: str) -> None:
    # Pins: the task-list tools were read as an unknown MCP tool.
    path = tmp_path / "s.jsonl"
    path.write_bytes(_tool_session(tool))
    read = read_session(path)
    assert read.blames == [], read.blames
    assert [p.origin for p in survey_session(read.messages, read.taint_timeline, interactive=read.interactive)] == [Origin.CLEAN]


def test_an_entry_trust_add_would_refuse_trusts_no_remote_and_raises_nothing() -> None:
    # Pins: the import's listing asking what a program named with shell
    # metacharacters would trust, and dying on the entry's own refusal.
    from mecha.core.sessions.trust import remote_replies

    assert remote_replies("Bash(x';touch P;' push)") is None
    assert remote_replies("Bash(git status)") is None
    assert "git push" in (remote_replies("Bash(git push)") or "")
