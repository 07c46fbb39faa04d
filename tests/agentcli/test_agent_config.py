"""`api = "claude-code"` / `"codex"` in each place a model is configured,
and what keeps the passes' own calls out of what is learned."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mecha.core.agents.importing import import_sessions
from mecha.core.environment.agents import OWN_CALL_ENV
from mecha.core.environment.installed import is_own_call, own_calls_dir
from mecha.core.providers import InvalidModelConfig, resolve_model_config
from mecha.core.providers.agent_cli import AgentCliProvider, claude_args, codex_args
from mecha.core.providers.base import CompletionRequest, ReplySchema
from mecha.core.sessions.foreign import HARNESS_VOICE_PROFILES
from mecha.core.sessions.mining import Voices
from mecha.core.store.learning_store import LearningStore
from tests.core.ccfixture import Claude, Codex, text, use


def test_the_environment_alone_configures_an_agent_with_its_default_model():
    cfg = resolve_model_config(None, {"MECHA_MODEL_API": "claude-code"}, None)
    assert cfg is not None and cfg.api == "claude-code" and cfg.model == "" and cfg.runs_agent
    assert cfg.concurrency == 2
    assert "its default model" in cfg.describe() and "environment" in cfg.describe()


def test_the_config_file_and_init_options_name_codex_and_a_model(tmp_path: Path):
    path = tmp_path / "sidecar.toml"
    path.write_text('[model]\napi = "codex"\nmodel = "gpt-5-codex"\nconcurrency = 3\n')
    cfg = resolve_model_config(None, {}, path)
    assert cfg is not None and (cfg.api, cfg.model, cfg.concurrency) == ("codex", "gpt-5-codex", 3)
    cfg = resolve_model_config({"api": "claude-code", "model": "sonnet"}, {}, None)
    assert cfg is not None and (cfg.api, cfg.model) == ("claude-code", "sonnet")


@pytest.mark.parametrize("key", ["baseUrl", "apiKeyEnv"])
def test_a_url_or_key_given_to_an_agent_is_refused_by_name_not_ignored(key: str):
    # Pins: a person who set baseUrl believing it was used.
    with pytest.raises(InvalidModelConfig, match=f"{key} is not used with api 'claude-code'") as caught:
        resolve_model_config({"api": "claude-code", key: "http://127.0.0.1:1"}, {}, None)
    assert caught.value.key == key


def test_a_structured_mode_of_another_dialect_is_refused():
    with pytest.raises(InvalidModelConfig, match="takes one of auto, json_schema, off"):
        resolve_model_config({"api": "codex", "structured": "tool"}, {}, None)


def test_an_unknown_api_lists_the_agents_among_the_choices():
    with pytest.raises(InvalidModelConfig, match="claude-code, codex"):
        resolve_model_config({"api": "gemini", "model": "x"}, {}, None)


REQUEST = CompletionRequest(
    system="frame", user="prompt", reply_schema=ReplySchema(name="r", description="d", schema={"type": "object"})
)


def test_claude_is_asked_for_one_headless_turn_with_no_tools_no_session_and_the_schema(tmp_path: Path):
    cfg = resolve_model_config({"api": "claude-code"}, {}, None)
    assert cfg is not None
    args = claude_args("claude", REQUEST, cfg, tmp_path / "system.md")
    assert args[:2] == ["claude", "-p"]
    assert args[args.index("--tools") + 1] == ""
    assert args[args.index("--json-schema") + 1] == '{"type": "object"}'
    assert "--no-session-persistence" in args and "--model" not in args
    assert "prompt" not in args  # the prompt travels on stdin, never in argv


def test_codex_is_asked_for_an_ephemeral_read_only_run_with_the_schema_file(tmp_path: Path):
    cfg = resolve_model_config({"api": "codex", "model": "m"}, {}, None)
    assert cfg is not None
    args = codex_args("codex", REQUEST, cfg, tmp_path / "schema.json")
    assert args[:2] == ["codex", "exec"] and args[-1] == "-"
    assert args[args.index("--sandbox") + 1] == "read-only"
    assert args[args.index("--output-schema") + 1] == str(tmp_path / "schema.json")
    assert "--ephemeral" in args and "--model=m" in args
    assert 'developer_instructions="frame"' in args


def test_a_model_name_that_looks_like_an_option_is_never_read_as_one(tmp_path: Path):
    # Pins: `--model --dangerously-skip-permissions` from a configured model
    # name, which the agent's parser took as a flag of its own.
    for api, build in (("claude-code", lambda c: claude_args("claude", REQUEST, c, tmp_path / "s.md")),
                       ("codex", lambda c: codex_args("codex", REQUEST, c, None))):
        cfg = resolve_model_config({"api": api, "model": "--dangerously-skip-permissions"}, {}, None)
        assert cfg is not None
        args = build(cfg)
        assert "--dangerously-skip-permissions" not in args and "--model=--dangerously-skip-permissions" in args, args


def test_the_calls_run_from_a_cache_folder_the_importer_recognises(tmp_path: Path):
    env = {"HOME": str(tmp_path)}
    own = own_calls_dir(env)
    assert own == tmp_path / ".cache" / "mecha-sidecar" / "agent-calls"
    assert is_own_call(str(own / "call-x1"), env) and is_own_call(str(own), env)
    assert not is_own_call(str(tmp_path / "proj"), env) and not is_own_call(None, env)
    assert own_calls_dir({"HOME": str(tmp_path), "XDG_CACHE_HOME": "/c"}) == Path("/c/mecha-sidecar/agent-calls")
    provider = AgentCliProvider(resolve_model_config({"api": "codex"}, {}, None), env=env)  # type: ignore[arg-type]
    assert provider.agent.api == "codex"


def test_a_session_kept_from_a_passes_own_call_is_never_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # Pins: an agent that kept a transcript of the pass's call anyway — its
    # prompt quotes a person's correction, and importing it would learn the
    # pass's own words as a new lesson, every pass, for ever.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    own = own_calls_dir()
    root = tmp_path / ".claude" / "projects"
    for name, cwd in (("own.jsonl", str(own / "call-abc")), ("person.jsonl", "/home/pat/proj")):
        cc = Claude(session=name[:-6], cwd=cwd).user("Write the release notes.")
        cc.assistant(text("Draft."), use("t1", "Read", file_path="CHANGES.md")).result("t1", "changes")
        cc.assistant(text("Here it is.")).user("No, only change docs/RELEASE.md.").assistant(text("Done."))
        (root / "p").mkdir(parents=True, exist_ok=True)
        (root / "p" / name).write_bytes(cc.bytes())
    store = LearningStore.open(tmp_path / "store")
    report = import_sessions(store, "claude", root, voices=Voices(harness_prefixes=HARNESS_VOICE_PROFILES["claude"]))
    assert report.queued == ["claude:person"]
    assert any("own.jsonl" in s and "a model call this sidecar made" in s for s in report.skipped)


def test_the_projects_hooks_do_nothing_inside_a_passes_own_call(tmp_path: Path):
    # The session-end hook would import the call's session (and start a
    # pass, which would call the agent again); the session-start hook would
    # print a notice into a call whose output is parsed as JSON.
    store = tmp_path / "store"
    env = {**os.environ, "HOME": str(tmp_path), OWN_CALL_ENV: "1"}
    hook_input = '{"session_id": "x", "transcript_path": "/nonexistent.jsonl", "cwd": "/tmp", "hook_event_name": "SessionEnd"}'
    for sub in ("session-end", "session-start"):
        done = subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "hook", "claude", sub, "--learning-dir", str(store)],
            input=hook_input, capture_output=True, text=True, env=env, timeout=60,
        )
        assert done.returncode == 0 and done.stdout == ""
    assert not store.exists()


def test_a_codex_rollout_of_a_passes_own_call_is_never_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    root = tmp_path / ".codex" / "sessions" / "2026" / "11" / "01"
    root.mkdir(parents=True)
    for n, cwd in ((1, str(own_calls_dir() / "call-x")), (2, "/home/pat/proj")):
        cx = Codex(session=f"0199aaaa-bbbb-7ccc-8ddd-00000000000{n}")
        cx.lines[0]["payload"]["cwd"] = cwd
        cx.user("Add a flag.").say("Added --verbose.").user("Call it --debug instead.")
        (root / f"rollout-2026-11-01T10-00-0{n}-x.jsonl").write_bytes(cx.bytes())
    store = LearningStore.open(tmp_path / "store")
    report = import_sessions(store, "codex", tmp_path / ".codex" / "sessions", voices=Voices())
    assert report.queued == ["codex:0199aaaa-bbbb-7ccc-8ddd-000000000002"]
    assert any("a model call this sidecar made" in s for s in report.skipped)


def test_a_helper_the_agent_starts_in_a_session_of_its_own_does_not_outlive_the_call(tmp_path: Path):
    # Pins: a helper started with `setsid` (a new session, out of the call's
    # process group) still running after the call that started it ended.
    import asyncio
    import os
    import time

    from mecha.core.providers.agent_cli import AgentCliProvider

    cfg = resolve_model_config({"api": "claude-code"}, {}, None)
    assert cfg is not None
    provider = AgentCliProvider(cfg, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    pidfile = tmp_path / "helper.pid"
    script = f"setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {pidfile}; cat >/dev/null; echo done"
    out = asyncio.run(provider._run(["sh", "-c", script], "prompt", tmp_path))
    assert out.strip() == "done"
    helper = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{helper}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        os.kill(helper, 9)
        raise AssertionError("the helper outlived the call")
