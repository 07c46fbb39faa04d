"""The process's lifecycle and framing, as the harness sees them: how it
starts, how it ends, what a broken frame costs, and what it imports."""

from __future__ import annotations

import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from mecha.protocol import errors as codes
from mecha.protocol.framing import MAX_FRAME_BYTES
from tests.builders import write_learned_rules

from .client import SIDECAR_ARGV, SpawnSidecar, encode, frame
from .helpers import (
    assert_served,
    assistant_text,
    big_transcript,
    open_store,
    rule,
    steered,
    user,
    write_user_rules,
)

#: The contract's method table (protocol/README.md), spelled out so a method
#: dropped from the server's table fails here.
CONTRACT_METHODS = [
    "mecha/rulesPromptBlock",
    "mecha/extractInterventions",
    "mecha/liveAffect",
    "mecha/appraiseSession",
    "mecha/sessionEnded",
    "mecha/draftResolved",
    "mecha/renderCandidate",
    "mecha/locateFollowup",
    "mecha/learn",
    "mecha/jobs",
    "mecha/inbox",
    "mecha/inboxRetry",
    "mecha/inboxDrop",
    "mecha/importSessions",
    "mecha/exportRules",
    "mecha/shareRules",
    "mecha/hookStatus",
    "mecha/installHooks",
    "mecha/trust",
    "mecha/lessons",
    "mecha/heldCorrections",
    "mecha/vouch",
    "mecha/proposals",
    "mecha/proposal",
    "mecha/acceptProposal",
    "mecha/rejectProposal",
    "mecha/proposeRetirement",
    "mecha/recordValidation",
    "mecha/ruleSources",
    "mecha/ruleTallies",
    "mecha/rules",
    "mecha/validate",
    "mecha/judge",
    "mecha/judgeDrawn",
    "mecha/doctor",
]

CONSOLE_SCRIPT = Path(sys.executable).parent / "mecha-sidecar"

# ─── start and stop ─────────────────────────────────────────────────────────


def test_initialize_answers_with_the_methods_and_the_server(spawn_sidecar: SpawnSidecar) -> None:
    s = spawn_sidecar(initialize=False)
    got = s.initialize()
    assert got == {
        "capabilities": {
            "experimental": {
                "mecha": {"methods": sorted(CONTRACT_METHODS), "notifications": ["mecha/jobFinished"]},
            }
        },
        "serverInfo": {"name": "mecha-sidecar", "version": version("mecha-sidecar")},
        "ignoredOptions": [],
    }


def test_exit_after_shutdown_is_exit_code_zero(sidecar) -> None:
    assert_served(sidecar)
    assert sidecar.shutdown_and_exit() == 0


def test_exit_without_shutdown_is_exit_code_one(spawn_sidecar: SpawnSidecar) -> None:
    s = spawn_sidecar()
    assert_served(s)
    s.notify("exit")
    assert s.wait_exit() == 1
    never = spawn_sidecar(initialize=False)
    never.notify("exit")
    assert never.wait_exit() == 1


def test_end_of_input_ends_the_process(spawn_sidecar: SpawnSidecar) -> None:
    # A harness that dies without a goodbye must not leave a sidecar behind.
    s = spawn_sidecar()
    assert_served(s)
    s.proc.stdin.close()
    assert s.wait_exit() == 1, "no shutdown was requested"
    shut = spawn_sidecar()
    assert shut.call("shutdown") is None
    shut.proc.stdin.close()
    assert shut.wait_exit() == 0


@pytest.mark.parametrize(
    "argv",
    [
        [str(CONSOLE_SCRIPT), "--stdio"],
        [str(CONSOLE_SCRIPT), "serve", "--stdio"],
        [str(CONSOLE_SCRIPT)],
        [*SIDECAR_ARGV, "--stdio"],
        [*SIDECAR_ARGV, "serve", "--stdio"],
    ],
    ids=["script--stdio", "script-serve--stdio", "script", "module--stdio", "module-serve--stdio"],
)
def test_the_stdio_flag_is_accepted(spawn_sidecar: SpawnSidecar, argv: list[str]) -> None:
    # Editor clients append --stdio by habit; it must not stop the server.
    assert CONSOLE_SCRIPT.exists()
    s = spawn_sidecar(argv=argv)
    assert_served(s)
    assert s.shutdown_and_exit() == 0
    assert "usage:" not in s.stderr


# ─── frames ─────────────────────────────────────────────────────────────────


def _locate(id: int) -> bytes:
    body = {
        "jsonrpc": "2.0",
        "id": id,
        "method": "mecha/locateFollowup",
        "params": {"messages": [user("a"), assistant_text("b"), user("c")], "text": "c"},
    }
    return encode(body)


def test_header_names_are_case_insensitive_and_a_bare_newline_terminator_is_accepted(sidecar) -> None:
    sidecar.send_raw(b"content-length: %d\r\n\r\n" % len(_locate(501)) + _locate(501))
    assert sidecar.response(501)["result"] == {"index": 2}
    sidecar.send_raw(b"CONTENT-LENGTH:%d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(_locate(502)) + _locate(502))
    assert sidecar.response(502)["result"] == {"index": 2}
    sidecar.send_raw(b"Content-Length: %d\n\n" % len(_locate(503)) + _locate(503))
    assert sidecar.response(503)["result"] == {"index": 2}


def test_a_content_length_too_short_costs_only_that_frame(sidecar) -> None:
    short = _locate(601)
    # Declared 10 bytes short; the next frame follows in the same write, so
    # the leftover tail is glued to its header.
    sidecar.send_raw(b"Content-Length: %d\r\n\r\n" % (len(short) - 10) + short + frame(_locate(602)))
    err = sidecar.null_id_reply()["error"]
    assert err["code"] == codes.PARSE_ERROR and "invalid JSON" in err["message"]
    assert sidecar.response(602)["result"] == {"index": 2}
    assert_served(sidecar)


def test_a_content_length_too_long_is_reported_and_the_frame_it_ran_into_is_served(
    spawn_sidecar: SpawnSidecar,
) -> None:
    s = spawn_sidecar(env={"MECHA_SIDECAR_FRAME_STALL_S": "0.3"})
    body = _locate(701)
    swallowed = frame(_locate(702))
    declared = len(body) + len(swallowed) + 1000
    s.send_raw(b"Content-Length: %d\r\n\r\n" % declared + body + swallowed)
    err = s.null_id_reply()["error"]
    assert err["code"] == codes.PARSE_ERROR
    assert f"declared {declared} bytes but the next frame's header began after {len(body)}" in err["message"]
    assert s.response(702)["result"] == {"index": 2}, "reading resumes at the header inside the declared body"
    # With nothing behind it, only the stall gives the lie away.
    started = time.monotonic()
    s.send_raw(b"Content-Length: %d\r\n\r\n" % declared + body)
    err = s.null_id_reply()["error"]
    assert time.monotonic() - started >= 0.3, "reported only once the body stopped arriving"
    assert f"declared {declared} bytes" in err["message"] and "no data for 0.3s" in err["message"]
    s.send_raw(frame(_locate(703)))
    assert s.response(703)["result"] == {"index": 2}
    assert_served(s)


def test_a_frame_over_the_size_limit_is_refused_naming_the_limit(spawn_sidecar: SpawnSidecar) -> None:
    s = spawn_sidecar(env={"MECHA_SIDECAR_FRAME_STALL_S": "0.3"})
    declared = MAX_FRAME_BYTES + 1
    s.send_raw(b"Content-Length: %d\r\n\r\n" % declared + b'{"jsonrpc":"2.0","id":801,"method":"mecha/doctor"}' + b" " * 100)
    err = s.null_id_reply()["error"]
    assert err["code"] == codes.PARSE_ERROR
    assert str(declared) in err["message"] and f"limit of {MAX_FRAME_BYTES} bytes" in err["message"]
    s.send_raw(frame(_locate(802)))
    assert s.response(802)["result"] == {"index": 2}
    assert_served(s)
    s.assert_no_output(0.2)


def test_garbage_between_frames_and_blank_lines_are_survived(sidecar) -> None:
    sidecar.send_raw(b"\r\n\r\n" + frame(_locate(901)))
    assert sidecar.response(901)["result"] == {"index": 2}
    sidecar.send_raw(b"this is not a frame\r\n\r\n" + frame(_locate(902)))
    err = sidecar.null_id_reply()["error"]
    assert err["code"] == codes.PARSE_ERROR and "bad frame" in err["message"]
    assert sidecar.response(902)["result"] == {"index": 2}


# ─── what the harness endpoint imports ──────────────────────────────────────

_RECORD_MODULES = """\
import os, sys
from mecha.sidecar.cli import main
try:
    code = main(["serve"])
finally:
    with open(os.environ["MECHA_TEST_MODULES_OUT"], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
raise SystemExit(code)
"""

HEAVY = ("pygls", "lsprotocol", "httpx", "anyio", "tomlkit")


def test_a_full_harness_exchange_imports_nothing_heavy(spawn_sidecar: SpawnSidecar, tmp_path: Path) -> None:
    # The harness endpoint starts for every agent run and must
    # not pay for the editor server or the model client.
    root = tmp_path / "learning"
    store = open_store(root)
    write_user_rules(root, "behavior", "Answer in English")
    write_learned_rules(store, "behavior", [rule("Ask before deleting files", "r-1")])
    out = tmp_path / "modules.txt"
    s = spawn_sidecar(
        argv=[sys.executable, "-c", _RECORD_MODULES],
        env={"MECHA_TEST_MODULES_OUT": str(out)},
        initialize=False,
    )
    s.initialize()
    got = s.call("mecha/rulesPromptBlock", {})
    assert got["rule_ids"] == ["r-1"] and "- Answer in English" in got["block"]
    assert len(s.call("mecha/extractInterventions", {"messages": steered()})["interventions"]) == 1
    assert s.call("mecha/liveAffect", {"session_id": "s1", "messages": steered(), "stats": {"stop_cause": "max_turns"}, "run_started_at": 3}) == {"affect": "anger"}
    appraisal = s.call("mecha/appraiseSession", {"session_id": "s1", "messages": steered(), "taint_timeline": [{"at": 0, "taint": {}}]})
    assert appraisal["origin"] == "clean"
    assert s.shutdown_and_exit() == 0

    modules = set(out.read_text().splitlines())
    # The record is of the process that served the exchange.
    assert {"msgspec", "mecha.sidecar.serve", "mecha.core.gate.appraisal", "mecha.core.sessions.mining", "tomllib"} <= modules
    loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert loaded == [], f"the harness endpoint imported {loaded}"


def test_the_rules_block_is_answered_in_order_behind_queued_work(sidecar) -> None:
    # The hot path may be served without the dispatcher hand-off only when
    # nothing is queued; behind a slow request it must wait its turn.
    slow_id, slow = sidecar.request_frame("mecha/extractInterventions", {"messages": big_transcript(20000)})
    block_id, block = sidecar.request_frame("mecha/rulesPromptBlock", {})
    sidecar.send_raw(slow + block)
    assert "block" in sidecar.response(block_id, timeout=30)["result"]
    # The slow reply was written first, so it is already here.
    assert sidecar.response(slow_id, timeout=0.05)["result"]["interventions"] == []
    # And with nothing queued, the block is still answered (the fast path).
    assert sidecar.call("mecha/rulesPromptBlock", {})["block"] is None
