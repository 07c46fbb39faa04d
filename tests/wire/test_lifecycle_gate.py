"""One lifecycle for every endpoint: the same messages get the same answers
from the harness endpoint's first stage, its full server and the editor
endpoint, each a real process, because all three ask one gate
(`mecha.protocol.lifecycle`) and only act on its answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mecha.protocol import errors as codes
from mecha.protocol.framing import FrameReader

from .client import clean_env
from .helpers import open_store, write_user_rules
from .test_first_stage import FULL, PROBE, cached, msg

#: The editor endpoint, as `mecha-sidecar lsp` starts it.
LSP = "from mecha.sidecar.cli import main\nraise SystemExit(main(['lsp']))\n"


def _run(tmp_path: Path, program: str, data: bytes) -> tuple[dict[Any, dict[str, Any]], int]:
    """Feed `data` to a real endpoint process; its replies by id (what it
    sends of its own accord — logs, progress — left out) and its exit code."""
    env = clean_env(tmp_path, {"FIRST_STAGE_PROBE_OUT": str(tmp_path / "modules.txt")})
    proc = subprocess.run([sys.executable, "-c", program], input=data, capture_output=True, env=env, cwd=tmp_path, timeout=60)
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    replies: dict[Any, dict[str, Any]] = {}
    read_fd, write_fd = os.pipe()
    os.write(write_fd, proc.stdout)
    os.close(write_fd)
    reader = FrameReader(read_fd)
    while (frame := reader.read_frame()) is not None:
        assert frame.body is not None, frame.error
        body = json.loads(frame.body)
        if "method" not in body:
            assert body["id"] not in replies, f"answered twice: {body}"
            replies[body["id"]] = body
    os.close(read_fd)
    return replies, proc.returncode


def _first_stage_alone(tmp_path: Path) -> bool:
    """Whether the last `PROBE` run was served by the first stage without a
    hand-over (it never imports msgspec; the full server does)."""
    return "msgspec" not in (tmp_path / "modules.txt").read_text().split()


def _errors(replies: dict[Any, dict[str, Any]]) -> dict[Any, tuple[int, str]]:
    return {i: (r["error"]["code"], r["error"]["message"]) for i, r in replies.items() if "error" in r}


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "learning"
    open_store(root)
    write_user_rules(root, "coding", "Run the tests before you commit.")
    return root


def init(root: Path, id: int, **params: Any) -> bytes:
    """An `initialize` both endpoints accept (the editor endpoint, an LSP
    server, requires `capabilities`)."""
    return msg("initialize", {"processId": 4242, "capabilities": {}, "initializationOptions": {"learningDir": str(root)}, **params}, id)


def _whole_lifecycle(root: Path) -> bytes:
    return (
        msg("mecha/rulesPromptBlock", {}, 10)  # before initialize
        + msg("mecha/rulesPromptBlock", {})  # a notification before initialize: dropped
        + msg("initialized", {}, 11)  # still before initialize
        + init(root, 1)
        + msg("initialize", {}, 12)  # a second
        + msg("initialized", {})
        + msg("initialized", {}, 13)  # a notification sent as a request
        + msg("$/cancelRequest", {"id": 999})  # names nothing queued: ignored
        + msg("mecha/rulesPromptBlock", {"domain": "coding"})  # a request sent as a notification: dropped
        + msg("shutdown", None, 14)
        + msg("mecha/rulesPromptBlock", {}, 15)  # after shutdown
        + msg("initialize", {}, 16)  # after shutdown, too
        + msg("exit")
    )


#: What the lifecycle answers, whichever endpoint serves it.
WHOLE_LIFECYCLE_ERRORS = {
    10: (codes.SERVER_NOT_INITIALIZED, "mecha/rulesPromptBlock: initialize has not been received"),
    11: (codes.SERVER_NOT_INITIALIZED, "initialized: initialize has not been received"),
    12: (codes.INVALID_REQUEST, "initialize was already received"),
    13: (codes.INVALID_REQUEST, "initialized is a notification: send it without an id"),
    15: (codes.INVALID_REQUEST, "mecha/rulesPromptBlock: the server is shutting down"),
    16: (codes.INVALID_REQUEST, "initialize: the server is shutting down"),
}


@pytest.mark.parametrize("program", [FULL, LSP], ids=["harness endpoint", "editor endpoint"])
def test_both_endpoints_answer_the_whole_lifecycle_alike(tmp_path: Path, program: str) -> None:
    # Pins: the editor endpoint and the harness endpoint drifting apart on a
    # lifecycle rule (each used to write its own), e.g. -32002 vs -32600 for
    # `initialized` before `initialize`, or a reply to a dropped notification.
    replies, code = _run(tmp_path, program, _whole_lifecycle(_store(tmp_path)))

    assert _errors(replies) == WHOLE_LIFECYCLE_ERRORS
    assert "result" in replies[1] and replies[14] == {"jsonrpc": "2.0", "id": 14, "result": None}
    assert sorted(replies) == [1, 10, 11, 12, 13, 14, 15, 16], "a dropped message was answered"
    assert code == 0


@pytest.mark.parametrize("program", [FULL, LSP], ids=["harness endpoint", "editor endpoint"])
def test_exit_without_shutdown_is_one_on_both_endpoints(tmp_path: Path, program: str) -> None:
    # Pins: an endpoint that ends 0 although it was never told to shut down.
    replies, code = _run(tmp_path, program, init(_store(tmp_path), 1) + msg("initialized", {}) + msg("exit"))

    assert "result" in replies[1]
    assert code == 1


def test_the_first_stage_hands_its_lifecycle_over_with_the_conversation(tmp_path: Path) -> None:
    # Pins: a hand-over that loses the first stage's lifecycle state, so the
    # full server takes a second `initialize` as the first, or serves a
    # request after the `shutdown` the first stage answered.
    root = _store(tmp_path)
    cached(tmp_path, root)
    after_initialize = init(root, 1) + msg("initialized", {}) + msg("initialize", {}, 2) + msg("shutdown", None, 3) + msg("exit")
    after_shutdown = init(root, 1) + msg("shutdown", None, 2) + msg("mecha/rulesPromptBlock", {}, 3) + msg("exit")

    replies, code = _run(tmp_path, PROBE, after_initialize)
    assert not _first_stage_alone(tmp_path)  # it answered `initialize`, then handed over
    assert _errors(replies) == {2: (codes.INVALID_REQUEST, "initialize was already received")}
    assert replies[3]["result"] is None and code == 0

    replies, code = _run(tmp_path, PROBE, after_shutdown)
    assert replies[2]["result"] is None
    assert _errors(replies) == {3: (codes.INVALID_REQUEST, "mecha/rulesPromptBlock: the server is shutting down")}
    assert code == 0


def test_the_first_stage_answers_the_plain_lifecycle_as_the_full_server(tmp_path: Path) -> None:
    # Pins: the first stage ending with another exit code than the full
    # server for the same conversation, or dropping what the full server
    # answers.
    root = _store(tmp_path)
    cached(tmp_path, root)
    plain = (
        msg("initialized", {})  # before initialize: dropped by both
        + init(root, 1)
        + msg("initialized", {"anything": True})
        + msg("mecha/rulesPromptBlock", {}, 2)
        + msg("shutdown", None, 3)
        + msg("exit")
    )

    first, first_code = _run(tmp_path, PROBE, plain)
    assert _first_stage_alone(tmp_path)
    full, full_code = _run(tmp_path, FULL, plain)

    assert sorted(first) == sorted(full) == [1, 2, 3]
    assert first[2] == full[2] and first[3] == full[3]
    assert first_code == full_code == 0


@pytest.mark.parametrize("program", [FULL, LSP], ids=["harness endpoint", "editor endpoint"])
def test_an_initialize_with_bad_params_leaves_the_server_waiting_for_a_good_one(tmp_path: Path, program: str) -> None:
    # Pins: the editor endpoint counting itself initialized after refusing
    # `initialize` (pygls refused params the context had accepted), so the
    # client's corrected `initialize` was "already received".
    root = _store(tmp_path)
    bad_option = msg("initialize", {"capabilities": {}, "initializationOptions": {"learningDir": 5}}, 1)
    data = bad_option + msg("mecha/rulesPromptBlock", {}, 2) + init(root, 3) + msg("shutdown", None, 4) + msg("exit")

    replies, code = _run(tmp_path, program, data)

    assert replies[1]["error"]["code"] == codes.INVALID_PARAMS
    assert "learningDir" in replies[1]["error"]["message"]
    assert replies[2]["error"]["code"] == codes.SERVER_NOT_INITIALIZED
    assert "result" in replies[3], replies[3]
    assert replies[4]["result"] is None and code == 0


def test_the_editor_endpoint_refuses_an_initialize_lsp_would_and_can_still_start(tmp_path: Path) -> None:
    # Pins: the same, for params only LSP's reader refuses (`capabilities`
    # is required of an editor).
    root = _store(tmp_path)
    no_capabilities = msg("initialize", {"initializationOptions": {"learningDir": str(root)}}, 1)

    replies, code = _run(tmp_path, LSP, no_capabilities + init(root, 2) + msg("shutdown", None, 3) + msg("exit"))

    assert replies[1]["error"]["code"] == codes.INVALID_PARAMS
    assert "capabilities" in replies[1]["error"]["message"]
    assert "result" in replies[2] and code == 0
