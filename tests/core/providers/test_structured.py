"""Constrained replies: which structured mode a call asks for, when it steps
down to the next, and what is remembered — against the scripted server over
real HTTP (the faults a real server gives on demand only here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mecha.core.errors import ModelFailure
from mecha.core.learning.reflection import BEHAVIOR_CONTRACT
from mecha.core.providers import AnthropicProvider, InvalidModelConfig, OpenAIProvider, resolve_model_config
from mecha.core.providers.base import CompletionRequest
from mecha.core.providers.structured import ModeMemory, modes_to_try, steps_down_after
from tests.model_server import ModelServer, reply, structured_mode

ANSWER = '{"skip": false, "reflexion": "Ask before deleting files.", "error_type": "overreach", "confidence": 0.9}'


def request() -> CompletionRequest:
    return CompletionRequest(system="sys", user="user", reply_schema=BEHAVIOR_CONTRACT.reply_schema())


def modes_sent(server: ModelServer) -> list[str]:
    return [structured_mode(r.body, r.dialect) for r in server.completions()]


# ─── decisions ──────────────────────────────────────────────────────────────


def test_auto_tries_the_dialects_chain_from_the_remembered_mode():
    # Pins: a remembered downgrade being probed again on every pass, or an
    # explicit setting being quietly stepped down from.
    assert modes_to_try("openai", "auto", None) == ("json_schema", "json_object", "off")
    assert modes_to_try("openai", "auto", "json_object") == ("json_object", "off")
    assert modes_to_try("openai", "auto", "tool") == ("json_schema", "json_object", "off")
    assert modes_to_try("anthropic", "auto", None) == ("tool", "off")
    assert modes_to_try("openai", "json_schema", "off") == ("json_schema",)


@pytest.mark.parametrize(
    "status, steps",
    [(None, False), (401, False), (403, False), (404, False), (408, False), (429, False),
     (400, True), (422, True), (500, True), (501, True), (200, False)],
)
def test_only_a_servers_refusal_steps_down_never_a_timeout_or_rate_limit(status, steps):
    # Pins: a dropped connection recorded for good as "this server takes no
    # schema" (every later pass then runs unconstrained).
    assert steps_down_after(status) is steps


# ─── the OpenAI dialect ─────────────────────────────────────────────────────


async def test_a_server_that_refuses_json_schema_is_asked_with_json_object_and_remembered(tmp_path: Path):
    # Pins: llama-cpp-python's server (HTTP 500 to `json_schema`) failing
    # every pass, or being probed again by every later one.
    memory = ModeMemory(tmp_path / "modes.json")
    with ModelServer(rejects=frozenset({"json_schema"})) as server:
        server.script(reply(ANSWER), reply(ANSWER))
        provider = OpenAIProvider(server.config("openai"), memory=memory)
        first = await provider.complete(request())
        assert first.structured == "json_object" and first.text == ANSWER
        # Its 500 names `response_format`: a refusal of the mode, not retried.
        assert modes_sent(server) == ["json_schema", "json_object"]
        sent = server.completions()[-1].body["response_format"]
        assert sent == {"type": "json_object", "schema": BEHAVIOR_CONTRACT.schema()}
        second = await OpenAIProvider(server.config("openai"), memory=ModeMemory(tmp_path / "modes.json")).complete(request())
        assert second.structured == "json_object"
        assert modes_sent(server)[2:] == ["json_object"], "a later pass does not probe again"
        assert json.loads((tmp_path / "modes.json").read_text()) == {
            f"openai {server.url} scripted-model": "json_object"
        }


async def test_a_500_that_does_not_name_the_mode_is_retried_before_the_next_mode_is_tried_once():
    # Pins: a server's passing trouble (a 500 about nothing in the request)
    # taken for a refusal of json_schema and recorded for good.
    with ModelServer(rejects=frozenset({"json_schema"}), reject_body=b'{"error": {"message": "slot busy"}}') as server:
        server.script(reply(ANSWER))
        response = await OpenAIProvider(server.config("openai")).complete(request())
        assert response.structured == "json_object"
        assert modes_sent(server) == ["json_schema"] * 3 + ["json_object"]


async def _concurrently(provider, n: int) -> list:
    import anyio

    got: list = []

    async def one() -> None:
        got.append(await provider.complete(request()))

    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(one)
    return got


@pytest.mark.parametrize(
    "api, rejects, modes",
    [("openai", frozenset(), ["json_schema"] * 4),
     ("openai", frozenset({"json_schema"}), ["json_schema"] + ["json_object"] * 4),
     ("anthropic", frozenset(), ["tool"] * 4)],
)
async def test_concurrent_calls_wait_for_one_probe_of_the_mode(api, rejects, modes, tmp_path: Path):
    # Pins: each of a pass's concurrent calls probing json_schema on its own
    # (and retrying its 500 three times): 20 requests for 4 replies.
    with ModelServer(rejects=rejects, latency_s=0.2) as server:
        server.script(*[reply(ANSWER)] * 4)
        provider = (OpenAIProvider if api == "openai" else AnthropicProvider)(
            server.config(api), memory=ModeMemory(tmp_path / "modes.json"))
        got = await _concurrently(provider, 4)
        assert [r.structured for r in got] == [modes[-1]] * 4
        assert modes_sent(server) == modes
        # The probe's answer came first; the three that waited for it were
        # then asked together.
        arrivals = [r.at for r in server.completions()]
        assert max(arrivals[-3:]) - min(arrivals[-3:]) < 0.2
        assert min(arrivals[-3:]) - arrivals[-4] >= 0.2


async def test_calls_that_waited_on_a_probe_that_timed_out_go_on_together():
    # Pins: a dead or hanging server making each waiting call time out in
    # turn, one after the other, for want of a mode.
    from tests.model_server import stall

    with ModelServer() as server:
        server.script(stall(1.0, reply(ANSWER)), *[reply(ANSWER)] * 3)
        provider = OpenAIProvider(server.config("openai", timeout_s=0.3, max_retries=0))
        import anyio

        outcomes: list = []

        async def one() -> None:
            try:
                outcomes.append((await provider.complete(request())).structured)
            except ModelFailure as exc:
                outcomes.append(exc.status)

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one)
        assert sorted(outcomes, key=str) == [None, "json_schema", "json_schema", "json_schema"]
        arrivals = [r.at for r in server.completions()]
        assert len(arrivals) == 4 and max(arrivals[1:]) - min(arrivals[1:]) < 0.2


async def test_json_schema_is_sent_strict_with_the_contracts_name_and_schema():
    # Pins: a schema sent without `strict` (OpenAI then treats it as a hint)
    # or under another name than the contract's.
    with ModelServer() as server:
        server.script(reply(ANSWER))
        response = await OpenAIProvider(server.config("openai")).complete(request())
        assert response.structured == "json_schema"
        [sent] = server.completions()
        assert sent.body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "reflection", "schema": BEHAVIOR_CONTRACT.schema(), "strict": True},
        }


async def test_a_server_that_takes_no_response_format_gets_a_plain_request():
    # Pins: a server that 400s any response_format leaving passes no way through.
    with ModelServer(rejects=frozenset({"json_schema", "json_object"}), reject_status=400) as server:
        server.script(reply(ANSWER))
        response = await OpenAIProvider(server.config("openai")).complete(request())
        assert response.structured == "off"
        assert modes_sent(server) == ["json_schema", "json_object", "off"]
        assert "response_format" not in server.completions()[-1].body


async def test_a_mode_named_in_the_config_is_used_alone_and_its_failure_named():
    # Pins: `structured = "json_schema"` silently downgraded.
    with ModelServer(rejects=frozenset({"json_schema"}), reject_status=400) as server:
        with pytest.raises(ModelFailure, match="HTTP 400") as caught:
            await OpenAIProvider(server.config("openai", structured="json_schema")).complete(request())
        assert caught.value.status == 400
        assert modes_sent(server) == ["json_schema"]


async def test_structured_off_sends_no_schema_at_all():
    with ModelServer() as server:
        server.script(reply(ANSWER))
        response = await OpenAIProvider(server.config("openai", structured="off")).complete(request())
        assert response.structured == "off" and modes_sent(server) == ["off"]


async def test_a_server_that_is_not_there_does_not_step_down(tmp_path: Path):
    # Pins: a dead server recorded as one that refuses schemas.
    memory = ModeMemory(tmp_path / "modes.json")
    with ModelServer() as server:
        cfg = server.config("openai", max_retries=0)
    with pytest.raises(ModelFailure) as caught:
        await OpenAIProvider(cfg, memory=memory).complete(request())
    assert caught.value.status is None
    assert not (tmp_path / "modes.json").exists()


# ─── the Anthropic dialect ──────────────────────────────────────────────────


async def test_anthropic_is_held_to_the_contract_by_a_forced_tool_call():
    # Pins: the Messages API being asked in free text while it can be held to
    # the schema; the tool's input not read as the answer.
    with ModelServer() as server:
        server.script(reply(ANSWER))
        response = await AnthropicProvider(server.config("anthropic")).complete(request())
        [sent] = server.completions()
        assert sent.body["tools"] == [
            {"name": "reflection", "description": BEHAVIOR_CONTRACT.summary, "input_schema": BEHAVIOR_CONTRACT.schema()}
        ]
        assert sent.body["tool_choice"] == {"type": "tool", "name": "reflection"}
        assert response.structured == "tool"
        assert json.loads(response.text) == json.loads(ANSWER)
        assert response.stop_reason.value == "end_turn"


async def test_an_anthropic_server_that_refuses_tools_is_asked_in_free_text():
    with ModelServer(rejects=frozenset({"tool"}), reject_status=400) as server:
        server.script(reply(ANSWER))
        response = await AnthropicProvider(server.config("anthropic")).complete(request())
        assert response.structured == "off" and "tools" not in server.completions()[-1].body


async def test_a_request_without_a_schema_is_never_constrained():
    with ModelServer() as server:
        server.script(reply("hello"))
        await OpenAIProvider(server.config("openai")).complete(CompletionRequest(system="s", user="u"))
        assert modes_sent(server) == ["off"]


# ─── configuration ──────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "api, value, ok",
    [("openai", "json_object", True), ("openai", "tool", False), ("anthropic", "tool", True),
     ("anthropic", "json_schema", False), ("openai", "AUTO", True), ("openai", "sometimes", False)],
)
def test_the_structured_setting_is_checked_against_the_dialect(api, value, ok, tmp_path: Path):
    # Pins: `structured = "tool"` for an OpenAI server accepted and then
    # failing every pass.
    init = {"api": api, "baseUrl": "http://127.0.0.1:9", "model": "m", "structured": value}
    if ok:
        assert resolve_model_config(init, {}, None).structured == value.lower()
    else:
        with pytest.raises(InvalidModelConfig, match="structured"):
            resolve_model_config(init, {}, None)


def test_the_environment_spells_timeout_structured_and_concurrency(tmp_path: Path):
    env = {
        "MECHA_MODEL_BASE_URL": "http://127.0.0.1:9", "MECHA_MODEL": "m",
        "MECHA_MODEL_TIMEOUT_S": "450", "MECHA_MODEL_STRUCTURED": "json_object", "MECHA_MODEL_CONCURRENCY": "2",
    }
    cfg = resolve_model_config(None, env, None)
    assert (cfg.timeout_s, cfg.structured, cfg.concurrency) == (450.0, "json_object", 2)
    with pytest.raises(InvalidModelConfig, match="MECHA_MODEL_CONCURRENCY"):
        resolve_model_config(None, {**env, "MECHA_MODEL_CONCURRENCY": "lots"}, None)


def test_the_default_timeout_fits_a_cpu_only_local_model():
    # Pins: the first default (120 s) that cut off a local model's reflector
    # calls; this project's own real-model runs took up to 300 s per call.
    cfg = resolve_model_config({"baseUrl": "http://127.0.0.1:9", "model": "m"}, {}, None)
    assert cfg.timeout_s > 300
    assert cfg.structured == "auto"


def test_a_broken_config_file_is_not_read_when_an_earlier_source_wins(tmp_path: Path):
    # Pins: a broken ~/.mecha/sidecar.toml failing every pass of a harness that
    # sends initializationOptions.model ("the first source present wins").
    broken = tmp_path / "sidecar.toml"
    broken.write_text("[model\napi = ", encoding="utf-8")
    cfg = resolve_model_config({"baseUrl": "http://127.0.0.1:9", "model": "m"}, {}, broken)
    assert cfg.source == "initializationOptions"
    with pytest.raises(InvalidModelConfig, match="not valid TOML"):
        resolve_model_config(None, {}, broken)


# ─── doctor ─────────────────────────────────────────────────────────────────


def _doctor(root: Path, server: ModelServer) -> dict[str, str]:
    from mecha.core.doctor import run_checks
    from mecha.core.store.learning_store import LearningStore

    LearningStore.open(root)
    options = {"api": "openai", "baseUrl": server.url, "model": "scripted-model", "timeoutS": 5, "maxRetries": 0}
    return {c.name: (c.ok, c.detail) for c in run_checks(root, options, env={"MECHA_SIDECAR_CONFIG": str(root / "none.toml")})}


def test_doctor_says_which_structured_mode_the_server_accepts_and_remembers_it(tmp_path: Path):
    # Pins: a person unable to tell whether their server constrains replies
    # (a small model unconstrained writes no usable JSON).
    with ModelServer(rejects=frozenset({"json_schema"}), reject_status=400) as server:
        server.script(reply('{"reflexion": "", "skip": true}'))
        checks = _doctor(tmp_path / "learning", server)
        assert checks["structured"] == (True, "the server accepts json_object replies")
        again = _doctor(tmp_path / "learning", server)
        assert again["structured"] == (True, "the server accepted json_object replies (found by an earlier pass)")
        assert len(server.completions()) == 2, "the second doctor asked nothing"


def test_doctor_warns_when_the_server_takes_no_schema_at_all(tmp_path: Path):
    with ModelServer(rejects=frozenset({"json_schema", "json_object"}), reject_status=400) as server:
        server.script(reply("hello"))
        ok, detail = _doctor(tmp_path / "learning", server)["structured"]
        assert not ok and "no reply schema" in detail
