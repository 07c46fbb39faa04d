"""The HTTP providers, against a real server on 127.0.0.1.

Everything that crosses the network goes through `tests/model_server.py`: the
requests are real HTTP, so header names, timeouts and retry timing are the
ones a llama.cpp server or the Anthropic API would see. Delays are measured
with the server's monotonic arrival times; they check that a wait happened,
not how fast anything is.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path

import anyio
import msgspec
import pytest

from mecha.core.errors import ModelFailure, NoModel, UnusableReply
from mecha.core.providers import (
    NO_MODEL_HELP,
    AnthropicProvider,
    InvalidModelConfig,
    ModelConfig,
    OpenAIProvider,
    check_reachable,
    provider_from_config,
    require_provider,
    resolve_model_config,
)
from mecha.core.providers._http import (
    ENVELOPE_BYTES,
    api_url,
    backoff_delay,
    parse_retry_after,
    reply_byte_bound,
    retry_delay,
    retryable_status,
    scrub,
)
from mecha.core.providers.anthropic import parse_messages_response
from mecha.core.providers.base import CompletionRequest, StopReason
from mecha.core.providers.openai import parse_chat_response
from tests.model_server import (
    ModelServer,
    echo_auth,
    garbage,
    huge,
    lessons_responder,
    refusal,
    reply,
    stall,
    status,
    truncated_json,
)

REPO = Path(__file__).resolve().parents[3]
KEY = "sk-test-5f3a9c1e7b2d4068a1b3c5d7e9f0"
KEY_ENV = {"TEST_MODEL_KEY": KEY}
REQUEST = CompletionRequest(system="You are terse.", user="Say hi.", max_tokens=64)


def closed_port() -> int:
    """A port nothing listens on: bound, read, released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ─── Configuration ──────────────────────────────────────────────────────────


def write_toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sidecar.toml"
    path.write_text(text, encoding="utf-8")
    return path


FILE_TOML = """
[model]
api = "openai"
base_url = "http://127.0.0.1:8080/"
model = "from-file"
api_key_env = "FILE_KEY"
"""

ENV = {"MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": "http://127.0.0.1:11434/v1", "MECHA_MODEL": "from-env"}
INIT = {"api": "openai", "baseUrl": "http://127.0.0.1:9000", "model": "from-init"}


def test_initialization_options_win_over_the_environment_and_the_file(tmp_path: Path) -> None:
    # Pins the precedence: the client that started us knows best.
    cfg = resolve_model_config(INIT, ENV, write_toml(tmp_path, FILE_TOML))
    assert cfg is not None
    assert (cfg.model, cfg.base_url, cfg.source) == ("from-init", "http://127.0.0.1:9000", "initializationOptions")


def test_the_environment_wins_over_the_file_and_sources_are_not_merged(tmp_path: Path) -> None:
    # The file names a key variable; the environment's config does not, and
    # must not inherit one: a model nobody wrote down is worse than none.
    cfg = resolve_model_config(None, ENV, write_toml(tmp_path, FILE_TOML))
    assert cfg is not None
    assert (cfg.model, cfg.source, cfg.api_key_env) == ("from-env", "environment", None)


def test_the_file_is_read_when_nothing_else_configures_a_model(tmp_path: Path) -> None:
    path = write_toml(tmp_path, FILE_TOML)
    cfg = resolve_model_config(None, {"UNRELATED": "1"}, path)
    assert cfg == ModelConfig(
        api="openai", base_url="http://127.0.0.1:8080", model="from-file", api_key_env="FILE_KEY", source=str(path)
    )


def test_nothing_configured_anywhere_is_none_not_an_error(tmp_path: Path) -> None:
    assert resolve_model_config(None, {}, None) is None
    assert resolve_model_config({}, {}, tmp_path / "missing.toml") is None
    assert resolve_model_config(None, {}, write_toml(tmp_path, "[other]\nx = 1\n")) is None


def test_camel_case_wire_keys_are_accepted_with_their_tuning_knobs() -> None:
    cfg = resolve_model_config(
        {"api": "anthropic", "baseUrl": "https://proxy.example/", "model": "m", "apiKeyEnv": "K",
         "timeoutS": 7.5, "maxRetries": 1, "maxBackoffS": 2},
        {},
        None,
    )
    assert cfg is not None
    assert (cfg.api, cfg.base_url, cfg.api_key_env, cfg.timeout_s, cfg.max_retries, cfg.max_backoff_s) == (
        "anthropic", "https://proxy.example", "K", 7.5, 1, 2,
    )


def test_api_defaults_to_openai_and_anthropic_defaults_its_url_and_key_variable() -> None:
    openai = resolve_model_config({"baseUrl": "http://127.0.0.1:8080", "model": "m"}, {}, None)
    assert openai is not None and openai.api == "openai" and openai.api_key_env is None
    anthropic = resolve_model_config({"api": "anthropic", "model": "claude"}, {}, None)
    assert anthropic is not None
    assert (anthropic.base_url, anthropic.api_key_env) == ("https://api.anthropic.com", "ANTHROPIC_API_KEY")


@pytest.mark.parametrize(
    ("init", "env", "toml", "key", "source"),
    [
        ({"api": "gemini", "model": "m", "baseUrl": "http://h"}, {}, None, "api", "initializationOptions"),
        ({"api": "openai", "baseUrl": "http://h"}, {}, None, "model", "initializationOptions"),
        ({"api": "openai", "model": "m"}, {}, None, "baseUrl", "initializationOptions"),
        (None, {"MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": "http://h"}, None, "MECHA_MODEL", "environment"),
        (None, {"MECHA_MODEL_API": "cohere", "MECHA_MODEL": "m"}, None, "MECHA_MODEL_API", "environment"),
        (None, {}, '[model]\napi = "openai"\nmodel = "m"\n', "base_url", "file"),
        (None, {}, '[model]\napi = "openai"\nbase_url = "ftp://h"\nmodel = "m"\n', "base_url", "file"),
        (None, {}, '[model]\nbase_url = "http://h"\nmodel = "m"\nmax_retries = 500\n', "max_retries", "file"),
    ],
)
def test_bad_config_names_the_key_as_spelled_and_the_source(
    tmp_path: Path, init: dict | None, env: dict, toml: str | None, key: str, source: str
) -> None:
    # "model is missing" is useless without knowing which of three places to fix.
    path = write_toml(tmp_path, toml) if toml else None
    expected_source = str(path) if source == "file" else source
    with pytest.raises(InvalidModelConfig) as caught:
        resolve_model_config(init, env, path)
    assert isinstance(caught.value, ValueError)
    assert (caught.value.key, caught.value.source) == (key, expected_source)
    assert key in str(caught.value) and expected_source in str(caught.value)


def test_a_config_file_that_is_not_toml_is_reported_with_its_path(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "[model\napi = ")
    with pytest.raises(InvalidModelConfig, match="not valid TOML") as caught:
        resolve_model_config(None, {}, path)
    assert str(path) in str(caught.value)


def test_a_serialized_config_names_the_key_variable_never_the_key() -> None:
    # Job files and `doctor` output carry the config; the key must not ride along.
    cfg = resolve_model_config({"api": "anthropic", "model": "m", "apiKeyEnv": "TEST_MODEL_KEY"}, KEY_ENV, None)
    assert cfg is not None
    assert KEY not in msgspec.json.encode(cfg).decode() and KEY not in cfg.describe()
    assert "TEST_MODEL_KEY" in cfg.describe()


def test_no_model_says_how_to_configure_one_in_each_of_the_three_ways() -> None:
    with pytest.raises(NoModel) as caught:
        require_provider(None)
    message = str(caught.value)
    assert message == NO_MODEL_HELP
    for needle in ("initializationOptions.model", "MECHA_MODEL_BASE_URL", "MECHA_MODEL_API_KEY_ENV",
                   "~/.mecha/sidecar.toml", "[model]", "base_url", "anthropic", "11434", "8080"):
        assert needle in message, needle


def test_the_factory_picks_the_dialect() -> None:
    base = {"base_url": "http://h", "model": "m", "source": "test"}
    assert isinstance(provider_from_config(ModelConfig(api="openai", **base)), OpenAIProvider)
    assert isinstance(require_provider(ModelConfig(api="anthropic", **base)), AnthropicProvider)


def test_importing_the_package_does_not_import_httpx() -> None:
    # The harness endpoint resolves config at every run's start; httpx is for passes.
    code = "import sys, mecha.core.providers; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ─── Pure decisions ─────────────────────────────────────────────────────────


def test_retry_after_reads_seconds_and_http_dates_and_ignores_nonsense() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.25") == 0.25
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_backoff_doubles_then_caps_and_jitter_stays_in_the_upper_half() -> None:
    assert backoff_delay(1, 1.0, 30.0, 0.0) == 0.5
    assert backoff_delay(3, 1.0, 30.0, 0.999) == pytest.approx(4.0, rel=1e-3)
    assert backoff_delay(20, 1.0, 30.0, 0.999) <= 30.0


def test_retry_after_replaces_the_backoff_but_is_capped_too() -> None:
    cfg = ModelConfig(api="openai", base_url="http://h", model="m", max_backoff_s=5.0, source="test")
    assert retry_delay(1, 2.0, cfg, 0.0) == 2.0
    assert retry_delay(1, 600.0, cfg, 0.0) == 5.0


def test_only_rate_limits_and_server_errors_are_worth_another_try() -> None:
    assert [s for s in (400, 401, 403, 404, 422, 429, 500, 502, 503) if retryable_status(s)] == [429, 500, 502, 503]


def test_a_base_url_that_already_ends_in_v1_is_not_doubled() -> None:
    assert api_url("http://h:1", "/models") == "http://h:1/v1/models"
    assert api_url("http://h:1/v1/", "/models") == "http://h:1/v1/models"


def test_scrubbing_happens_before_truncation_so_no_half_key_survives() -> None:
    assert scrub(f"bad key Bearer {KEY}!", [KEY]) == "bad key Bearer [redacted]!"


@pytest.mark.parametrize(
    ("finish", "expected"),
    [("stop", StopReason.END_TURN), ("length", StopReason.MAX_TOKENS),
     ("content_filter", StopReason.REFUSAL), ("tool_calls", StopReason.OTHER), (None, StopReason.OTHER)],
)
def test_finish_reasons_map_onto_stop_reasons(finish: str | None, expected: StopReason) -> None:
    body = {"choices": [{"message": {"content": "x"}, "finish_reason": finish}]}
    assert parse_chat_response(body).stop_reason is expected


@pytest.mark.parametrize(
    ("reason", "expected"),
    [("end_turn", StopReason.END_TURN), ("stop_sequence", StopReason.END_TURN),
     ("max_tokens", StopReason.MAX_TOKENS), ("refusal", StopReason.REFUSAL), ("tool_use", StopReason.OTHER)],
)
def test_anthropic_stop_reasons_map_onto_stop_reasons(reason: str, expected: StopReason) -> None:
    assert parse_messages_response({"content": [], "stop_reason": reason}).stop_reason is expected


def test_content_as_parts_and_thinking_blocks_read_as_just_the_text() -> None:
    parts = {"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                          "finish_reason": "stop"}]}
    assert parse_chat_response(parts).text == "ab"
    blocks = {"content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "answer"}],
              "stop_reason": "end_turn"}
    assert parse_messages_response(blocks).text == "answer"


# ─── Over HTTP: the happy paths ─────────────────────────────────────────────


async def test_openai_dialect_sends_the_chat_shape_with_a_bearer_key(model_server: ModelServer) -> None:
    model_server.script(reply("hi there"))
    provider = OpenAIProvider(model_server.config("openai", api_key_env="TEST_MODEL_KEY"), env=KEY_ENV)
    response = await provider.complete(REQUEST)
    assert (response.text, response.stop_reason, response.model) == ("hi there", StopReason.END_TURN, "scripted-model")
    [sent] = model_server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert "x-api-key" not in sent.headers
    assert sent.body == {
        "model": "scripted-model",
        "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hi."}],
        "max_tokens": 64,
        "stream": False,
    }


async def test_a_local_server_gets_no_authorization_header_and_v1_is_not_doubled(model_server: ModelServer) -> None:
    model_server.script(reply("ok"))
    cfg = model_server.config("openai", base_url=model_server.url + "/v1")
    await OpenAIProvider(cfg).complete(CompletionRequest(system="s", user="u", model="other-model"))
    [sent] = model_server.requests
    assert sent.path == "/v1/chat/completions"
    assert "authorization" not in sent.headers
    assert sent.body["model"] == "other-model", "a request's model overrides the configured one"


async def test_anthropic_dialect_sends_the_messages_shape_with_the_key_in_x_api_key(model_server: ModelServer) -> None:
    model_server.script(reply("hello"))
    provider = AnthropicProvider(model_server.config("anthropic", api_key_env="TEST_MODEL_KEY"), env=KEY_ENV)
    response = await provider.complete(REQUEST)
    assert (response.text, response.stop_reason) == ("hello", StopReason.END_TURN)
    [sent] = model_server.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.body == {
        "model": "scripted-model",
        "system": "You are terse.",
        "messages": [{"role": "user", "content": "Say hi."}],
        "max_tokens": 64,
    }


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_temperature_is_sent_when_asked_for_and_absent_otherwise(model_server: ModelServer, api: str) -> None:
    model_server.script(reply("a"), reply("b"))
    provider = provider_from_config(model_server.config(api))
    await provider.complete(CompletionRequest(system="s", user="u", temperature=0.0))
    await provider.complete(CompletionRequest(system="s", user="u"))
    asked, default = model_server.requests
    assert asked.body["temperature"] == 0
    assert "temperature" not in default.body, "no temperature asked for: the server's default"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_an_empty_answer_cut_off_by_the_token_limit_is_max_tokens_not_a_failure(
    model_server: ModelServer, api: str
) -> None:
    # A reasoning model can spend its whole budget thinking: `content: null`.
    model_server.script(reply(None, stop="length"))
    response = await provider_from_config(model_server.config(api)).complete(REQUEST)
    assert (response.text, response.stop_reason) == ("", StopReason.MAX_TOKENS)


async def test_refusals_map_to_refusal_in_both_dialects(model_server: ModelServer) -> None:
    model_server.script(refusal(), refusal(category="cyber"))
    openai = await OpenAIProvider(model_server.config("openai")).complete(REQUEST)
    anthropic = await AnthropicProvider(model_server.config("anthropic")).complete(REQUEST)
    assert (openai.stop_reason, openai.text) == (StopReason.REFUSAL, "")
    assert (anthropic.stop_reason, anthropic.refusal_category) == (StopReason.REFUSAL, "cyber")


# ─── Over HTTP: retries and their bounds ────────────────────────────────────


async def test_a_429_is_retried_after_at_least_its_retry_after(model_server: ModelServer) -> None:
    model_server.script(status(429, retry_after=0.3), reply("after the wait"))
    response = await OpenAIProvider(model_server.config("openai", max_backoff_s=5)).complete(REQUEST)
    assert response.text == "after the wait"
    first, second = model_server.requests
    assert second.at - first.at >= 0.3, "the server said how long it needed"


async def test_a_server_error_is_retried_then_succeeds(model_server: ModelServer) -> None:
    model_server.script(status(500), status(503), reply("recovered"))
    response = await AnthropicProvider(model_server.config("anthropic")).complete(REQUEST)
    assert response.text == "recovered"
    assert len(model_server.requests) == 3


async def test_retries_are_bounded_at_max_retries_plus_one_attempts(model_server: ModelServer) -> None:
    model_server.script(*[status(500)] * 10)
    with pytest.raises(ModelFailure) as caught:
        await OpenAIProvider(model_server.config("openai", max_retries=2)).complete(REQUEST)
    assert len(model_server.requests) == 3
    assert "HTTP 500" in str(caught.value) and "attempt 3 of 3" in str(caught.value)


async def test_a_client_error_is_not_retried(model_server: ModelServer) -> None:
    model_server.script(status(400, body='{"error": "max_tokens too large"}'), reply("never reached"))
    with pytest.raises(ModelFailure, match=r"HTTP 400.*max_tokens too large.*not retried"):
        await OpenAIProvider(model_server.config("openai")).complete(REQUEST)
    assert len(model_server.requests) == 1


async def test_a_stall_past_the_timeout_fails_and_says_timeout(model_server: ModelServer) -> None:
    model_server.script(stall(2.0, then=reply("too late")), stall(2.0, then=reply("too late")))
    cfg = model_server.config("openai", timeout_s=0.2, max_retries=1)
    started = time.monotonic()
    with pytest.raises(ModelFailure, match="timed out after 0.2s") as caught:
        await OpenAIProvider(cfg).complete(REQUEST)
    assert time.monotonic() - started < 1.9, "the client gave up; it did not wait the stall out"
    assert len(model_server.requests) == 2 and "attempt 2 of 2" in str(caught.value)


async def test_a_stall_then_a_timely_answer_is_retried_into_success(model_server: ModelServer) -> None:
    model_server.script(stall(2.0), reply("second time lucky"))
    cfg = model_server.config("anthropic", timeout_s=0.2)
    assert (await AnthropicProvider(cfg).complete(REQUEST)).text == "second time lucky"


async def test_a_refused_connection_is_retried_then_reported(model_server: ModelServer) -> None:
    cfg = model_server.config("openai", base_url=f"http://127.0.0.1:{closed_port()}", max_retries=1)
    with pytest.raises(ModelFailure, match=r"connection error.*attempt 2 of 2"):
        await OpenAIProvider(cfg).complete(REQUEST)


async def test_bytes_that_are_not_http_count_as_a_connection_failure(model_server: ModelServer) -> None:
    model_server.script(garbage(b"\x00\x01 not http\r\n\r\n", raw=True), reply("fine now"))
    assert (await OpenAIProvider(model_server.config("openai")).complete(REQUEST)).text == "fine now"


# ─── Over HTTP: unusable bodies ─────────────────────────────────────────────


@pytest.mark.parametrize("action", [garbage(), truncated_json()], ids=["garbage", "truncated"])
async def test_a_body_that_is_not_json_fails_without_a_retry(model_server: ModelServer, action: object) -> None:
    model_server.script(action, reply("never reached"))
    with pytest.raises(ModelFailure, match="not JSON"):
        await OpenAIProvider(model_server.config("openai")).complete(REQUEST)
    assert len(model_server.requests) == 1


def test_the_bound_on_a_reply_grows_with_the_tokens_it_asked_for() -> None:
    assert reply_byte_bound(0) == ENVELOPE_BYTES
    assert reply_byte_bound(8192) > reply_byte_bound(4096) > 4096 * 4  # more than a few bytes a token
    assert reply_byte_bound(4096) < 1 << 20  # and far less than a runaway reply


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_body_past_what_max_tokens_allows_is_cut_off_unread_and_not_retried(
    model_server: ModelServer, api: str
) -> None:
    # Pins: a 600 MB reply read whole into memory (1.8 GB RSS for the pass).
    model_server.script(huge("", "x", 200_000_000), reply("never reached"))
    request = CompletionRequest(system="s", user="u", max_tokens=256)
    with pytest.raises(UnusableReply, match=r"larger than [\d,]+ bytes, more than a reply of the request's max_tokens \(256\)"):
        await provider_from_config(model_server.config(api)).complete(request)
    assert len(model_server.requests) == 1
    assert model_server.sent < 16 << 20, f"{model_server.sent:,} of 200,000,000 bytes sent"


async def test_a_reply_within_its_bound_is_read_whole(model_server: ModelServer) -> None:
    request = CompletionRequest(system="s", user="u", max_tokens=4096)
    model_server.script(huge("", "y", 100_000))
    assert (await OpenAIProvider(model_server.config("openai")).complete(request)).text == "y" * 100_000


async def test_a_large_error_body_is_quoted_not_read_whole(model_server: ModelServer) -> None:
    model_server.script(*[status(500, body=b'{"error": "' + b"z" * 5_000_000 + b'"}')] * 3)
    with pytest.raises(ModelFailure, match="HTTP 500") as caught:
        await OpenAIProvider(model_server.config("openai", max_retries=0, structured="off")).complete(REQUEST)
    assert len(str(caught.value)) < 1000


async def test_a_body_nested_past_any_reply_is_refused_by_name_before_it_is_decoded(model_server: ModelServer) -> None:
    # Pins: a forced tool call whose input nests 1,000 deep raising RecursionError out of the pass.
    deep = b'{"type": "message", "content": [{"type": "tool_use", "name": "t", "input": ' + b'{"a": ' * 1000 + b"1" + b"}" * 1000 + b"}]}"
    model_server.script(garbage(deep), reply("never reached"))
    with pytest.raises(UnusableReply, match="nests deeper than 32 levels"):
        await provider_from_config(model_server.config("anthropic")).complete(REQUEST)
    assert len(model_server.requests) == 1


@pytest.mark.parametrize(
    ("api", "body", "missing"),
    [("openai", b'{"choices": []}', "choices"), ("openai", b'{"choices": [{"finish_reason": "stop"}]}',
      "choices[0].message"), ("anthropic", b'{"type": "message"}', "content")],
)
async def test_json_without_the_expected_fields_names_what_is_missing(
    model_server: ModelServer, api: str, body: bytes, missing: str
) -> None:
    # An empty answer would be acted on; a missing one must be a failure.
    model_server.script(garbage(body))
    with pytest.raises(ModelFailure, match=re.escape(f"no `{missing}`")):
        await provider_from_config(model_server.config(api)).complete(REQUEST)


# ─── The key never leaks ────────────────────────────────────────────────────


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_the_key_never_appears_in_errors_or_logs_even_when_the_server_echoes_it(
    model_server: ModelServer, api: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    model_server.script(echo_auth(500), echo_auth(401))
    provider = provider_from_config(model_server.config(api, api_key_env="TEST_MODEL_KEY"), env=KEY_ENV)
    with pytest.raises(ModelFailure) as caught:
        await provider.complete(REQUEST)
    assert len(model_server.requests) == 2, "the 500 was retried, the 401 was not"
    assert "[redacted]" in str(caught.value), "the server did echo it, and it was scrubbed"
    assert "$TEST_MODEL_KEY" in str(caught.value), "the message names where the key comes from"
    shown = [str(caught.value), repr(caught.value), "".join(traceback.format_exception(caught.value))]
    shown += [r.getMessage() for r in caplog.records]
    assert caplog.records, "the retry was logged"
    for text in shown:
        assert KEY not in text


async def test_a_key_variable_that_is_unset_fails_before_any_request(model_server: ModelServer) -> None:
    provider = OpenAIProvider(model_server.config("openai", api_key_env="NOT_SET_ANYWHERE"), env={})
    with pytest.raises(ModelFailure, match=r"\$NOT_SET_ANYWHERE.*not set"):
        await provider.complete(REQUEST)
    assert model_server.requests == []


# ─── doctor's reachability check ────────────────────────────────────────────


async def test_check_reachable_reports_a_live_server_and_whether_it_lists_the_model(model_server: ModelServer) -> None:
    ok, detail = await check_reachable(model_server.config("openai", api_key_env="TEST_MODEL_KEY"), env=KEY_ENV)
    assert ok and "HTTP 200" in detail and "'scripted-model' is listed" in detail
    assert KEY not in detail
    [sent] = model_server.requests
    assert (sent.method, sent.path) == ("GET", "/v1/models")
    ok, detail = await check_reachable(model_server.config("anthropic", model="absent"))
    assert ok and "not among the 1 listed" in detail


async def test_check_reachable_reports_a_closed_port_as_unreachable() -> None:
    cfg = ModelConfig(api="openai", base_url=f"http://127.0.0.1:{closed_port()}", model="m", source="test")
    ok, detail = await check_reachable(cfg, timeout_s=0.5)
    assert not ok and detail.startswith("unreachable")


async def test_check_reachable_says_when_the_key_variable_is_unset() -> None:
    cfg = ModelConfig(api="anthropic", base_url="http://127.0.0.1:1", model="m", api_key_env="NOPE", source="t")
    ok, detail = await check_reachable(cfg, env={})
    assert not ok and "$NOPE" in detail


# ─── The fake server as a responder and as a process ────────────────────────

REFLECTOR_LIKE = (
    'You study a moment when a person intervened. Answer with JSON: {"skip": false, "reflexion": "..."}'
)
LEARNER_LIKE = 'You maintain the learned rule set. Reply with {"rules": [{"rule": "..."}]}'


async def test_the_lessons_responder_answers_reflector_and_learner_prompts_by_content(
    model_server: ModelServer,
) -> None:
    model_server.responder = lessons_responder
    provider = OpenAIProvider(model_server.config("openai"))
    reflection = await provider.complete(CompletionRequest(
        system=REFLECTOR_LIKE,
        user='<intervention kind="correction">\nstop editing the tests\n</intervention>',
    ))
    answer = msgspec.json.decode(reflection.text)
    assert answer["skip"] is False and "stop editing the tests" in answer["reflexion"]
    assert (answer["error_type"], answer["confidence"]) == ("other", 0.8)

    rules = await provider.complete(CompletionRequest(
        system=LEARNER_LIKE,
        user="## Current learned rules\n- Ask first. (confidence 0.90, from 2)\n\n"
             "## New reflections (1)\n- [correction / overreach] while: x — user: y — lesson: Keep diffs small.",
    ))
    assert [r["rule"] for r in msgspec.json.decode(rules.text)["rules"]] == ["Ask first.", "Keep diffs small."]


@pytest.mark.parametrize(("trigger", "opening"), [("steer", "When the person says"), ("edit", "Write drafts")])
async def test_the_real_reflector_learns_from_the_lessons_responder(
    model_server: ModelServer, trigger: str, opening: str
) -> None:
    # The end-to-end shape other tests rely on: the reflector's own prompts,
    # real HTTP, a lesson that quotes the person.
    from mecha.core.learning import reflection
    from mecha.core.sessions import mining

    model_server.responder = lessons_responder
    reflector = reflection.Reflector(AnthropicProvider(model_server.config("anthropic")))
    found = await reflector.reflect(mining.Intervention(
        trigger=mining.Trigger(trigger), context="drafting", text="never push to main",
    ), reflection.Evidence.FULL)
    assert found is not None and found.reflexion_text.startswith(opening)
    assert "never push to main" in found.reflexion_text


def test_the_server_runs_as_a_separate_process_and_shuts_down_cleanly(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.model_server", "--port", "0", "--responder", "lessons", "--record", str(record)],
        cwd=REPO, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on http://127.0.0.1:")
        url = line.removeprefix("listening on ")
        cfg = resolve_model_config({"baseUrl": url, "model": "demo", "apiKeyEnv": "TEST_MODEL_KEY"}, {}, None)
        assert cfg is not None
        response = anyio.run(OpenAIProvider(cfg, env=KEY_ENV).complete, CompletionRequest(
            system=REFLECTOR_LIKE, user='<intervention kind="denial">\ndo not delete that file\n</intervention>'))
        assert "do not delete that file" in msgspec.json.decode(response.text)["reflexion"]
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    [logged] = [msgspec.json.decode(line) for line in record.read_text().splitlines()]
    assert logged["path"] == "/v1/chat/completions" and logged["body"]["model"] == "demo"
    assert logged["headers"]["authorization"] == "[redacted]"
