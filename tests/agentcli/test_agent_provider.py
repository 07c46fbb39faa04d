"""One request through an agent's real command line: `claude -p` and
`codex exec` as npm installs them, talking to a scripted model.

What is pinned: the reply comes back held to the contract's schema, the
system frame and the prompt reach the model, no transcript of the call is
kept in the agent's session folders, and every way the program can fail is
a `ModelFailure` that says what to do next."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from mecha.core.environment.installed import own_calls_dir
from mecha.core.errors import ModelFailure
from mecha.core.learning.reflection import BEHAVIOR_CONTRACT
from mecha.core.providers import provider_from_config, resolve_model_config
from mecha.core.providers.base import CompletionRequest
from tests.agent_server import AgentModelServer, Answer, Stall, Status, Text
from tests.agentcli.conftest import AgentEnv

SYSTEM = "You reflect on one correction. The marker SYSTEM-FRAME-7 is in this frame."
USER = "The person said: stop editing the lockfile."
ANSWER = {
    "skip": False, "reflexion": "Never edit lockfiles by hand.", "error_type": "other", "confidence": 0.8, "repeats": [],
}


def _provider(api: str, env: dict[str, str], **options: object):  # type: ignore[no-untyped-def]
    cfg = resolve_model_config({"api": api, **options}, env, None)
    assert cfg is not None
    return provider_from_config(cfg, env=env)


def _ask(provider, schema: bool = True):  # type: ignore[no-untyped-def]
    request = CompletionRequest(
        system=SYSTEM, user=USER, max_tokens=384, reply_schema=BEHAVIOR_CONTRACT.reply_schema() if schema else None
    )
    return asyncio.run(provider.complete(request))


def _running_from(folder: Path) -> list[int]:
    """Pids of live processes whose command line names `folder`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(folder).encode() in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


def _session_files(home: Path) -> list[Path]:
    return [p for p in (home / ".claude" / "projects").rglob("*.jsonl")] + [
        p for p in (home / ".codex" / "sessions").rglob("*.jsonl")
    ]


@pytest.mark.parametrize("api", ["claude-code", "codex"])
def test_a_reply_comes_back_held_to_the_contract_and_leaves_no_session_behind(
    api: str, server: AgentModelServer, agent_env: AgentEnv
):
    # Pins: the pass's frame lost on the way (the agent's own prompt
    # instead), the schema not sent, and the call kept as a session that an
    # import would later read as the person's work.
    server.script(Answer(ANSWER))
    env = agent_env(server)
    response = _ask(_provider(api, env))
    assert json.loads(response.text) == ANSWER
    assert response.structured == "json_schema"
    (call,) = server.model_calls()
    assert "SYSTEM-FRAME-7" in call.system and USER in call.user
    if api == "claude-code":
        offered = {t["name"]: t for t in call.body["tools"]}
        assert offered["StructuredOutput"]["input_schema"]["required"] == BEHAVIOR_CONTRACT.reply_schema().schema["required"]
        assert {"Bash", "Edit", "Write", "Read"}.isdisjoint(offered)
    else:
        assert call.body["text"]["format"]["type"] == "json_schema"
        offered = {t.get("name") or t.get("type") for t in call.body["tools"]}
        assert {"exec_command", "web_search", "multi_agent_v1", "create_goal"}.isdisjoint(offered), offered
        assert call.body["text"]["format"]["schema"]["required"] == BEHAVIOR_CONTRACT.reply_schema().schema["required"]
        assert str(own_calls_dir(env)) in json.dumps(call.body["input"])
    assert _session_files(Path(env["HOME"])) == []
    # The per-call folder (the system prompt or schema file) is gone.
    assert list(own_calls_dir(env).iterdir()) == []


@pytest.mark.parametrize("api", ["claude-code", "codex"])
def test_a_named_model_is_asked_for_and_none_named_is_the_agents_default(
    api: str, server: AgentModelServer, agent_env: AgentEnv
):
    env = agent_env(server)
    server.script(Answer(ANSWER), Answer(ANSWER))
    _ask(_provider(api, env, model="model-the-person-named"))
    _ask(_provider(api, env))
    named, default = server.model_calls()
    assert named.body["model"] == "model-the-person-named"
    assert default.body["model"] != "model-the-person-named"


@pytest.mark.parametrize("api", ["claude-code", "codex"])
def test_an_agent_that_is_not_installed_says_to_install_it_or_configure_another(
    api: str, server: AgentModelServer, agent_env: AgentEnv, tmp_path: Path
):
    env = {**agent_env(server), "PATH": str(tmp_path / "nothing-here")}
    with pytest.raises(ModelFailure, match="not installed or not on PATH") as caught:
        _ask(_provider(api, env))
    assert "doctor" in str(caught.value)
    assert server.seen == []


@pytest.mark.parametrize("api", ["claude-code", "codex"])
def test_an_api_error_is_a_failure_quoting_the_agent(api: str, server: AgentModelServer, agent_env: AgentEnv):
    # A 400 is not retried by either CLI: the program gives up and exits.
    server.script(*[Status(400)] * 8)
    with pytest.raises(ModelFailure) as caught:
        _ask(_provider(api, agent_env(server), timeoutS=120))
    message = str(caught.value)
    assert "Claude Code" in message or "Codex" in message
    assert "scripted failure" in message or "400" in message
    assert "yourself to check it is signed in" in message


@pytest.mark.parametrize("api", ["claude-code", "codex"])
def test_a_call_past_its_timeout_is_stopped_with_everything_it_started(
    api: str, server: AgentModelServer, agent_env: AgentEnv
):
    # Pins: a hung agent holding the pass until the server gives up, and
    # the program left running after the pass moved on.
    server.script(Stall(10), Stall(10), Stall(10))
    env = agent_env(server)
    started = time.monotonic()
    with pytest.raises(ModelFailure, match="no answer within 3 s") as caught:
        _ask(_provider(api, env, timeoutS=3))
    assert time.monotonic() - started < 3 + 2 * 3 + 2
    assert "timeout_s" in str(caught.value)
    # Nothing of the call's process group is left: no process names the
    # call's folder on its command line (the system prompt or schema file).
    assert _running_from(own_calls_dir(env)) == []


def test_claude_code_answering_without_the_schema_is_not_taken_as_an_answer(
    server: AgentModelServer, agent_env: AgentEnv
):
    # The model writes prose where a structured answer was required. The
    # CLI ends "successfully" with the prose as its result; the reply is
    # marked unconstrained, and the contract finds no lesson in it — the
    # reflector then counts it unusable, never "nothing to learn".
    server.script(*[Text("I think the lesson is to be careful.")] * 12)
    response = _ask(_provider("claude-code", agent_env(server), timeoutS=120))
    assert response.structured == "off"
    assert "careful" in response.text
    assert BEHAVIOR_CONTRACT.decode(response.text) is None
