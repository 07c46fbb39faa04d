"""The plain case of the wire: what the first stage reads with the standard
library must be read the same way by the full server, so whatever it cannot
be sure of, it refuses (and the full server reads the bytes instead)."""

from __future__ import annotations

import msgspec
import pytest

from mecha.protocol import jsonrpc
from mecha.protocol import plainwire as pw
from mecha.protocol.framing import encode_frame
from mecha.protocol.initialize import ClientInfo, InitializationOptions, InitializeParams
from mecha.protocol.methods import RulesPromptBlockParams


def _keys(struct: type) -> set[str]:
    return {f.encode_name for f in msgspec.structs.fields(struct)}


def test_the_plain_keys_are_the_keys_the_structs_read() -> None:
    # Pins: a field added to a Struct that the first stage keeps ignoring.
    assert set(pw.INITIALIZE_PARAMS_KEYS) == _keys(InitializeParams)
    assert set(pw.CLIENT_INFO_KEYS) == _keys(ClientInfo)
    assert set(pw.INITIALIZATION_OPTIONS_KEYS) == _keys(InitializationOptions)
    assert set(pw.RULES_PROMPT_BLOCK_KEYS) == _keys(RulesPromptBlockParams)


def test_a_plain_frame_is_found_waited_for_or_refused() -> None:
    # Pins: a frame the framing module would read differently taken as plain, or a partial one refused.
    frame = encode_frame(b"{}")
    assert pw.plain_frame(frame, 0) == (len(frame) - 2, len(frame))
    assert pw.plain_frame(b"xx" + frame, 2) == (len(frame), len(frame) + 2)
    for cut in range(len(frame)):
        assert pw.plain_frame(frame[:cut], 0) == pw.INCOMPLETE, frame[:cut]
    for other in (
        b"content-length: 2\r\n\r\n{}",
        b"Content-Length:2\r\n\r\n{}",
        b"Content-Length: 2\n\n{}",
        b"Content-Type: x\r\nContent-Length: 2\r\n\r\n{}",
        b"\r\nContent-Length: 2\r\n\r\n{}",
        b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
        b"Content-Length: 12345678\r\n\r\n",
        b"Content-Length: %d\r\n\r\n" % (pw.MAX_PLAIN_BODY + 1),
    ):
        assert pw.plain_frame(other, 0) is None, other


def _body(**message: object) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", **message})


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "shutdown"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown", "params": [NaN]}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown", "params": [1e999]}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown", "params": ["\\ud800"]}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown", "params": [99999999999999999999]}',
        b'{"jsonrpc": "2.0", "id": 1.0, "method": "shutdown"}',
        b'{"jsonrpc": "2.0", "id": true, "method": "shutdown"}',
        b'{"jsonrpc": "2.0", "id": null, "method": "shutdown"}',
        b'{"jsonrpc": "2.0", "id": "a\\"b", "method": "shutdown"}',
        b'{"jsonrpc": "2.0", "id": "\xc3\xa9", "method": "shutdown"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown", "result": 1}',
        b'{"jsonrpc": "1.0", "id": 1, "method": "shutdown"}',
        b'{"id": 1, "method": "shutdown"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": 7}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown"',
        b'\xff{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}',
        b'\xef\xbb\xbf{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}',
        b'[{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}]',
        b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown", "params": ' + b"[" * 40 + b"]" * 40 + b"}",
    ],
)
def test_anything_json_and_msgspec_might_read_apart_is_refused(body: bytes) -> None:
    # Pins: the first stage answering a message the full server reads otherwise (or refuses).
    assert pw.decode_plain(body) is None


def test_a_plain_id_is_written_back_as_the_full_server_writes_it() -> None:
    # Pins: a reply whose id differs by a byte from the full server's.
    for id in (0, 7, -3, 2**63 - 1, "abc", "run-0142/1", " spaced id "):
        msg = pw.decode_plain(_body(id=id, method="shutdown"))
        assert msg is not None and msg.id is not None
        ours = pw.result_frame(msg.id, b'{"x":[1,"\xc3\xa9"]}')
        theirs = encode_frame(jsonrpc.encode_result(id, {"x": [1, "é"]}))
        assert ours == theirs
    assert pw.decode_plain(b'{"jsonrpc":"2.0","id":-0,"method":"shutdown"}').id == b"0"


def test_initialize_params_are_plain_only_as_the_lifecycle_structs_accept_them(tmp_path) -> None:
    # Pins: the first stage answering an initialize the full server would refuse or read differently.
    plain = [
        pw.ABSENT,
        {},
        {"processId": None, "capabilities": {"general": {}}, "rootUri": None},
        {"processId": 4242, "clientInfo": {"name": "mecha", "version": "0.9.0"}},
        {"initializationOptions": {"learningDir": str(tmp_path), "harnessVoices": ["[x]"], "model": {"api": "openai"}}},
        {"initializationOptions": None},
    ]
    for params in plain:
        raw = b"{}" if params is pw.ABSENT else msgspec.json.encode(params)
        msgspec.json.decode(raw, type=InitializeParams)  # the full server accepts it
        assert pw.initialize_learning_dir(params) is not pw.REFUSED, params
    assert pw.initialize_learning_dir(plain[4]) == str(tmp_path)
    refused = [
        None,
        [],
        {"processId": "1"},
        {"processId": True},
        {"clientInfo": "mecha"},
        {"clientInfo": {"name": 1}},
        {"initializationOptions": []},
        {"initializationOptions": {"learningDir": 1}},
        {"initializationOptions": {"harnessVoices": None}},
        {"initializationOptions": {"harnessVoices": [1]}},
        {"initializationOptions": {"model": "local"}},
        {"initializationOptions": {"learning_dir": "/elsewhere"}},
        {"initializationOptions": {"somethingNew": True}},
    ]
    for params in refused:
        assert pw.initialize_learning_dir(params) is pw.REFUSED, params


def test_rules_block_params_are_plain_only_as_the_method_struct_reads_them() -> None:
    # Pins: a -32602 the first stage would answer with a block instead.
    assert pw.rules_block_params(pw.ABSENT) == (None, None)
    assert pw.rules_block_params({}) == (None, None)
    assert pw.rules_block_params({"domain": None}) == (None, None)
    assert pw.rules_block_params({"domain": "triage"}) == ("triage", None)
    assert pw.rules_block_params({"project": "/src/app", "domain": None}) == (None, "/src/app")
    refused = (
        None, [], {"domain": 5}, {"domain": ["x"]}, {"domain": "x", "extra": 1},
        # A project the full server refuses with -32602 (not absolute, not a string).
        {"project": "app"}, {"project": ""}, {"project": 3}, {"project": "/a\x00b"},
    )
    for params in refused:
        assert pw.rules_block_params(params) is pw.REFUSED, params


def test_the_plain_model_keys_are_the_keys_the_model_config_reads() -> None:
    # Pins: a model key added to the config that the first stage hands over
    # (or one it passes that the full server would name as ignored).
    from mecha.core.providers.config import INIT_KEYS

    assert set(pw.MODEL_OPTION_KEYS) == set(INIT_KEYS.values())
