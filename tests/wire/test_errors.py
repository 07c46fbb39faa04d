"""Every error code the design names, provoked over the wire against the
real sidecar process: the code, a message that says what was wrong, and the
next valid request served."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mecha.core.domain.reflexion import Origin
from mecha.core.store.learning_store import ProposalStatus
from mecha.core.store.ledger import IMPROVED
from mecha.protocol import errors as codes
from tests.builders import write_learned_rules

from .client import Sidecar, SpawnSidecar, encode, frame
from .helpers import (
    assert_served,
    big_transcript,
    open_store,
    proposal,
    reflexion,
    rule,
    steered,
)

# ─── -32700 parse error ─────────────────────────────────────────────────────


def test_a_body_that_is_not_json_is_a_parse_error_with_a_null_id(sidecar: Sidecar) -> None:
    # A client bug in its JSON encoder must cost one message, not the session.
    sidecar.send_raw(frame(b'{"jsonrpc": "2.0", "id": 4, "method": '))
    err = sidecar.null_id_reply()["error"]
    assert err["code"] == codes.PARSE_ERROR
    assert "invalid JSON" in err["message"] and "truncated" in err["message"]
    assert_served(sidecar)
    sidecar.send_raw(frame(b"{nope}"))
    err = sidecar.null_id_reply()["error"]
    assert err["code"] == codes.PARSE_ERROR
    assert "invalid JSON" in err["message"] and "malformed" in err["message"]
    assert_served(sidecar)


def test_a_truncated_array_is_reported_as_bad_json_not_as_a_wrong_shape(sidecar: Sidecar) -> None:
    # `[` is not an array of the wrong shape; it is not JSON at all, and the
    # message must say so rather than describe a shape it never had.
    sidecar.send_raw(frame(b"[1, 2"))
    err = sidecar.null_id_reply()["error"]
    assert err["code"] == codes.PARSE_ERROR
    assert "truncated" in err["message"], err
    assert_served(sidecar)


def test_a_body_that_is_not_utf8_is_a_parse_error_naming_utf8(sidecar: Sidecar) -> None:
    # RFC 8259 JSON is UTF-8; bytes that are not cannot be a message, even
    # when the bad byte hides inside params the envelope does not look at.
    for body in (
        b'{"jsonrpc":"2.0","id":5,"method":"mecha/\xff"}',
        b'{"jsonrpc":"2.0","id":6,"method":"mecha/locateFollowup","params":{"messages":[],"text":"\xc3("}}',
    ):
        sidecar.send_raw(frame(body))
        reply = sidecar.null_id_reply()
        err = reply["error"]
        assert err["code"] == codes.PARSE_ERROR, reply
        assert "UTF-8" in err["message"], err
        assert_served(sidecar)


@pytest.mark.parametrize(
    ("header", "why"),
    [
        (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n", "missing Content-Length"),
        (b"Content-Length: twelve\r\n\r\n", "non-negative integer"),
        (b"Content-Length: -3\r\n\r\n", "non-negative integer"),
        (b"Content-Length: 4\r\nContent-Length: 5\r\n\r\n", "disagree"),
    ],
)
def test_a_frame_with_a_bad_header_is_a_parse_error_with_a_null_id(sidecar: Sidecar, header: bytes, why: str) -> None:
    # The reply cannot name a request it could not read, so its id is null.
    sidecar.send_raw(header + b'{"x": 1}')
    reply = sidecar.null_id_reply()
    assert reply["id"] is None
    assert reply["error"]["code"] == codes.PARSE_ERROR
    assert "bad frame" in reply["error"]["message"] and why in reply["error"]["message"]
    assert_served(sidecar)


# ─── -32600 invalid request ─────────────────────────────────────────────────


@pytest.mark.parametrize(("body", "shape"), [(b"[]", "array"), (b'[{"jsonrpc":"2.0"}]', "array"), (b"42", "int")])
def test_json_that_is_not_an_object_is_an_invalid_request(sidecar: Sidecar, body: bytes, shape: str) -> None:
    sidecar.send_raw(frame(body))
    err = sidecar.null_id_reply()["error"]
    assert err["code"] == codes.INVALID_REQUEST
    assert "not a JSON-RPC message" in err["message"] and f"got `{shape}`" in err["message"]
    assert_served(sidecar)


def test_a_request_without_jsonrpc_is_invalid_and_answered_at_its_id(sidecar: Sidecar) -> None:
    sidecar.send({"id": 77, "method": "mecha/doctor", "params": {}})
    err = sidecar.response(77)["error"]
    assert err["code"] == codes.INVALID_REQUEST
    assert '"jsonrpc"' in err["message"] and '"2.0"' in err["message"]
    sidecar.send({"jsonrpc": "1.0", "id": 78, "method": "mecha/doctor"})
    assert sidecar.response(78)["error"]["code"] == codes.INVALID_REQUEST
    assert_served(sidecar)


def test_a_request_after_shutdown_is_invalid_and_exit_still_works(sidecar: Sidecar) -> None:
    assert sidecar.call("shutdown") is None
    err = sidecar.error("mecha/rulesPromptBlock", {})
    assert err["code"] == codes.INVALID_REQUEST
    assert "mecha/rulesPromptBlock" in err["message"] and "shutting down" in err["message"]
    sidecar.notify("exit")
    assert sidecar.wait_exit() == 0


def test_a_second_initialize_is_invalid(sidecar: Sidecar) -> None:
    err = sidecar.error("initialize", {"capabilities": {}})
    assert err["code"] == codes.INVALID_REQUEST
    assert "initialize" in err["message"] and "already" in err["message"]
    assert_served(sidecar)


# ─── -32601 method not found ────────────────────────────────────────────────


def test_an_unknown_method_is_not_found_by_name(sidecar: Sidecar) -> None:
    err = sidecar.error("mecha/nope", {})
    assert err["code"] == codes.METHOD_NOT_FOUND
    assert "mecha/nope" in err["message"]
    # A notification is a method name too, but nobody can request it.
    err = sidecar.error("mecha/jobFinished", {"job": {}})
    assert err["code"] == codes.METHOD_NOT_FOUND
    assert_served(sidecar)


# ─── -32602 invalid params ──────────────────────────────────────────────────


def test_a_wrong_type_names_the_json_path(sidecar: Sidecar) -> None:
    messages = steered()
    messages[0]["role"] = "system"
    err = sidecar.error("mecha/extractInterventions", {"messages": messages})
    assert err["code"] == codes.INVALID_PARAMS
    assert "$.messages[0].role" in err["message"]
    assert_served(sidecar)

    err = sidecar.error("mecha/liveAffect", {"session_id": "s1", "messages": [], "stats": {"turns": "three"}})
    assert err["code"] == codes.INVALID_PARAMS
    assert "$.stats.turns" in err["message"] and "int" in err["message"]
    assert_served(sidecar)

    err = sidecar.error("mecha/locateFollowup", {"messages": []})
    assert err["code"] == codes.INVALID_PARAMS
    assert "text" in err["message"]
    assert_served(sidecar)


def test_params_as_an_array_are_invalid(sidecar: Sidecar) -> None:
    err = sidecar.error("mecha/extractInterventions", [steered()])
    assert err["code"] == codes.INVALID_PARAMS
    assert "object" in err["message"] and "array" in err["message"]
    assert_served(sidecar)


@pytest.mark.parametrize(
    ("learning_dir", "why"),
    [
        ("/tmp/store\x00evil", "NUL"),
        ("/tmp/" + "a" * 300, "255"),
        ("/tmp/" + "/".join(["b" * 200] * 25), "bytes long"),
    ],
    ids=["nul", "a-300-character-name", "a-5000-byte-path"],
)
def test_a_learning_dir_no_path_can_be_is_invalid_params_naming_it_at_initialize(
    spawn_sidecar: SpawnSidecar, tmp_path: Path, learning_dir: str, why: str
) -> None:
    # Pins: `initialize` taking such a `learningDir`, and every request
    # after it answering -32603 "ValueError: embedded null byte" or
    # "OSError: File name too long". Each cache of the first stage (which
    # answers `initialize` itself when it can) is in play: one is written
    # first for a good store, so only the option itself can send it on.
    good = spawn_sidecar(options={"learningDir": str(tmp_path / "good")})
    good.call("mecha/rulesPromptBlock", {})
    good.shutdown_and_exit()
    s = spawn_sidecar(initialize=False)
    reply = s.response(s.request("initialize", {"capabilities": {}, "initializationOptions": {"learningDir": learning_dir}}))
    assert "error" in reply, reply
    err = reply["error"]
    assert err["code"] == codes.INVALID_PARAMS, err
    assert "learningDir" in err["message"] and why in err["message"], err
    # The client can send a good `initialize` next.
    s.call("initialize", {"capabilities": {}, "initializationOptions": {"learningDir": str(tmp_path / "good")}})
    assert_served(s)


def test_a_zero_holdout_divisor_is_invalid_params_naming_it(sidecar: Sidecar) -> None:
    params = {
        "class": "config",
        "prediction": {"metric": "tool_error_rate", "rationale": "r"},
        "holdout_in": 0,
        "pairs": [],
    }
    err = sidecar.error("mecha/judge", params)
    assert err["code"] == codes.INVALID_PARAMS
    assert "holdout_in" in err["message"]
    assert_served(sidecar)


def test_a_probe_that_names_no_intervention_is_invalid_params_naming_at(sidecar: Sidecar) -> None:
    params = {
        "session_id": "s1",
        "messages": steered(),
        "taint_timeline": [{"at": 0, "taint": {}}],
        "probes": [{"at": 1, "verdict": "mattered"}],
    }
    err = sidecar.error("mecha/appraiseSession", params)
    assert err["code"] == codes.INVALID_PARAMS
    assert "`at`" in err["message"] and "1" in err["message"]
    # The same probe at the steer's own index is fine.
    params["probes"] = [{"at": 2, "verdict": "mattered"}]
    assert sidecar.call("mecha/appraiseSession", params)["label"] == "regret"


# ─── -32603 internal error ──────────────────────────────────────────────────


def test_a_learning_dir_that_is_a_file_is_an_internal_error_naming_it(spawn_sidecar: SpawnSidecar, tmp_path: Path) -> None:
    # No hook in the server: a misconfigured store root (a regular file) is
    # an environment failure the domain has no name for, so it is -32603,
    # the message names the exception and the path, and serving goes on.
    not_a_dir = tmp_path / "learning-file"
    not_a_dir.write_text("not a directory")
    s = spawn_sidecar(options={"learningDir": str(not_a_dir)})
    record = {
        "reflexion_id": "x1",
        "trigger": "steer",
        "domain": "behavior",
        "rules_hash": "0000000000000000",
        "rule_ids": [],
        "outcome": IMPROVED,
        "model": "m",
        "created_at": "2026-08-05T01:00:00Z",
    }
    err = s.error("mecha/recordValidation", record)
    assert err["code"] == codes.INTERNAL_ERROR
    assert "FileExistsError" in err["message"] and str(not_a_dir) in err["message"]
    assert "Traceback" not in err["message"]
    assert not_a_dir.read_text() == "not a directory"
    assert_served(s)


# ─── -32800 cancelled ───────────────────────────────────────────────────────


def test_a_request_cancelled_before_it_is_served_is_answered_cancelled(sidecar: Sidecar) -> None:
    # One write: a slow request, a second one queued behind it, and the
    # second one's cancel. The reader sees the cancel while the dispatcher
    # is still busy with the first, so the second never runs.
    slow_id, slow = sidecar.request_frame("mecha/extractInterventions", {"messages": big_transcript(20000)})
    victim_id, victim = sidecar.request_frame("mecha/extractInterventions", {"messages": steered()})
    cancel = frame(encode({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": victim_id}}))
    sidecar.send_raw(slow + victim + cancel)

    slow_reply = sidecar.response(slow_id, timeout=30)
    assert slow_reply["result"]["interventions"] == [], "the uncancelled request is served in full"
    err = sidecar.response(victim_id)["error"]
    assert err["code"] == codes.REQUEST_CANCELLED
    assert str(victim_id) in err["message"] and "cancelled" in err["message"]
    # The same method with the same params is served when nobody cancels it.
    assert len(sidecar.call("mecha/extractInterventions", {"messages": steered()})["interventions"]) == 1
    assert_served(sidecar)


def test_cancelling_an_unknown_or_finished_request_changes_nothing(sidecar: Sidecar) -> None:
    sidecar.notify("$/cancelRequest", {"id": 9999})
    sidecar.notify("$/cancelRequest", {"id": None})
    sidecar.notify("$/cancelRequest", "garbage")
    assert_served(sidecar)
    sidecar.assert_no_output(0.2)


# ─── -32002 server not initialized ──────────────────────────────────────────


def test_a_request_before_initialize_is_refused_and_initialize_still_works(spawn_sidecar: SpawnSidecar) -> None:
    s = spawn_sidecar(initialize=False)
    err = s.error("mecha/rulesPromptBlock", {})
    assert err["code"] == codes.SERVER_NOT_INITIALIZED
    assert "mecha/rulesPromptBlock" in err["message"] and "initialize" in err["message"]
    assert "capabilities" in s.initialize()
    assert_served(s)


# ─── -31001 NotFound ────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("method", "key"),
    [
        ("mecha/proposal", "id"),
        ("mecha/acceptProposal", "id"),
        ("mecha/rejectProposal", "id"),
        ("mecha/renderCandidate", "proposal_id"),
    ],
)
def test_an_unknown_proposal_id_is_not_found_naming_it(sidecar: Sidecar, method: str, key: str) -> None:
    err = sidecar.error(method, {key: "20260101T000000-deadbeef"})
    assert err["code"] == codes.NOT_FOUND
    assert "20260101T000000-deadbeef" in err["message"]
    assert err["data"]["name"] == "NotFound"
    assert_served(sidecar)


def test_retiring_a_rule_that_is_not_there_is_not_found(sidecar: Sidecar) -> None:
    err = sidecar.error("mecha/proposeRetirement", {"domain": "behavior", "rule_id": "r-ghost", "reason": "harmful"})
    assert err["code"] == codes.NOT_FOUND
    assert "r-ghost" in err["message"] and "behavior" in err["message"]
    assert_served(sidecar)


# ─── -31002 Ambiguous ───────────────────────────────────────────────────────


def test_a_prefix_of_two_proposals_is_ambiguous_and_lists_both(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    a, b = "20260101T000000-aaaa1111", "20260101T000000-aaaa2222"
    store.write_proposal(proposal(a))
    store.write_proposal(proposal(b, domain="writing"))
    for method in ("mecha/proposal", "mecha/acceptProposal", "mecha/rejectProposal"):
        err = sidecar.error(method, {"id": "20260101T000000-aaaa"})
        assert err["code"] == codes.AMBIGUOUS
        assert a in err["message"] and b in err["message"]
        assert sorted(err["data"]["matches"]) == [a, b]
    # Nothing was resolved by the refused calls, and a unique prefix resolves.
    assert sidecar.call("mecha/proposal", {"id": "20260101T000000-aaaa2"})["proposal"]["id"] == b
    assert {p["status"] for p in sidecar.call("mecha/proposals", {})["proposals"]} == {"pending"}


def test_an_exact_id_that_is_also_a_prefix_resolves(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    store.write_proposal(proposal("p-1"))
    store.write_proposal(proposal("p-10"))
    assert sidecar.call("mecha/proposal", {"id": "p-1"})["proposal"]["id"] == "p-1"
    assert sidecar.error("mecha/proposal", {"id": "p"})["code"] == codes.AMBIGUOUS
    assert_served(sidecar)


# ─── -31003 Stale ───────────────────────────────────────────────────────────


def test_accepting_against_rules_that_moved_is_stale_and_writes_nothing(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    write_learned_rules(store, "behavior", [rule("Landed since the proposal", "r-live")])
    learned = store.rules_path("behavior", "learned")
    before = learned.read_bytes()
    store.write_proposal(proposal("20260101T000000-stale001", rules_before=[]))
    err = sidecar.error("mecha/acceptProposal", {"id": "20260101T000000-stale001"})
    assert err["code"] == codes.STALE
    assert "20260101T000000-stale001" in err["message"] and "behavior" in err["message"]
    assert "changed" in err["message"] or "moved" in err["message"], err["message"]
    assert learned.read_bytes() == before
    assert sidecar.call("mecha/proposal", {"id": "20260101T000000-stale001"})["proposal"]["status"] == "pending"


# ─── -31004 InvalidStore ────────────────────────────────────────────────────


def test_a_rules_file_that_does_not_parse_is_invalid_store_naming_file_and_line(sidecar: Sidecar) -> None:
    path = sidecar.learning_dir / "rules" / "behavior.user.toml"
    path.parent.mkdir(parents=True)
    path.write_text('# mine\n[[rules]]\ntext = "fine"\n\n[[rules]\ntext = "broken header"\n')
    err = sidecar.error("mecha/rulesPromptBlock", {})
    assert err["code"] == codes.INVALID_STORE
    assert "behavior.user.toml" in err["message"]
    assert "behavior.user.toml:5" in err["message"], err["message"]
    assert err["data"]["name"] == "InvalidStore"
    # Fixing the file is seen at once.
    path.write_text('[[rules]]\ntext = "fine"\n')
    assert "- fine" in sidecar.call("mecha/rulesPromptBlock", {})["block"]


# ─── -31005 NoModel ─────────────────────────────────────────────────────────


def test_a_learn_pass_without_a_model_fails_with_no_model(sidecar: Sidecar) -> None:
    # The process really runs with no model anywhere: no MECHA_MODEL* variable
    # and a config file path that does not exist.
    environ = dict(
        line.split(b"=", 1) for line in Path(f"/proc/{sidecar.proc.pid}/environ").read_bytes().split(b"\0") if b"=" in line
    )
    assert not [k for k in environ if k.startswith(b"MECHA_MODEL")]
    assert not Path(environ[b"MECHA_SIDECAR_CONFIG"].decode()).exists()
    store = open_store(sidecar.learning_dir)
    store.append_reflexions([reflexion(f"refl-{i}") for i in range(3)])
    started = sidecar.call("mecha/learn", {"domain": "behavior"})
    job = started["job"]
    assert job is not None, started
    assert (job["kind"], job["domain"], job["state"]) == ("learn", "behavior", "running")

    finished = sidecar.notification("mecha/jobFinished", lambda p: p["job"]["id"] == job["id"], timeout=30)["job"]
    assert finished["state"] == "failed"
    assert finished["outcome"].startswith("NoModel"), finished
    assert finished.get("proposal_id") is None
    listed = {j["id"]: j for j in sidecar.call("mecha/jobs", {})["jobs"]}
    assert listed[job["id"]]["state"] == "failed"
    assert listed[job["id"]]["outcome"].startswith("NoModel")
    assert sidecar.call("mecha/proposals", {})["proposals"] == [], "a failed pass proposes nothing"
    assert_served(sidecar)


def test_learn_refuses_without_enough_learnable_reflections(sidecar: Sidecar) -> None:
    # Only learnable reflections count toward the floor.
    store = open_store(sidecar.learning_dir)
    store.append_reflexions([reflexion("c1"), reflexion("c2"), reflexion("u1", origin=Origin.UNTRUSTED)])
    got = sidecar.call("mecha/learn", {"domain": "behavior"})
    assert got["job"] is None
    assert "2 learnable" in got["reason"]
    assert sidecar.call("mecha/jobs", {})["jobs"] == []


# ─── -31006 InvalidDomain ───────────────────────────────────────────────────

BAD_DOMAINS = ["../x", "A", "a" * 65]


def _domain_calls(domain: str) -> list[tuple[str, dict]]:
    return [
        ("mecha/rulesPromptBlock", {"domain": domain}),
        ("mecha/learn", {"domain": domain}),
        ("mecha/proposals", {"domain": domain}),
        ("mecha/proposeRetirement", {"domain": domain, "rule_id": "r-1", "reason": "harmful"}),
        (
            "mecha/recordValidation",
            {
                "reflexion_id": "x",
                "trigger": "steer",
                "domain": domain,
                "rules_hash": "0",
                "rule_ids": [],
                "outcome": "improved",
                "model": "m",
                "created_at": "t",
            },
        ),
        ("mecha/ruleTallies", {"domain": domain}),
    ]


@pytest.mark.parametrize("method", [m for m, _ in _domain_calls("x")])
@pytest.mark.parametrize("store_exists", [False, True], ids=["no-store", "store"])
def test_every_method_taking_a_domain_refuses_a_bad_one(
    sidecar: Sidecar, tmp_path: Path, method: str, store_exists: bool
) -> None:
    if store_exists:
        open_store(sidecar.learning_dir)
    for bad in BAD_DOMAINS:
        params = dict(_domain_calls(bad))[method]
        err = sidecar.error(method, params)
        assert err["code"] == codes.INVALID_DOMAIN, (method, bad, err)
        assert repr(bad) in err["message"]
        assert_served(sidecar)
    # Nothing was written outside the learning dir or under a bad name.
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.user.toml").exists()
    rules = sidecar.learning_dir / "rules"
    assert not rules.exists() or os.listdir(rules) == []
    validations = sidecar.learning_dir / "validations.jsonl"
    assert not validations.exists() or validations.read_bytes() == b""


# ─── -31007 NotPending ──────────────────────────────────────────────────────


def test_resolving_a_resolved_proposal_is_not_pending(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    store.write_proposal(proposal("20260101T000000-acc00001"))
    store.write_proposal(proposal("20260101T000000-rej00001", domain="writing"))

    accepted = sidecar.call("mecha/acceptProposal", {"id": "20260101T000000-acc00001"})["proposal"]
    assert accepted["status"] == "accepted"
    for method in ("mecha/acceptProposal", "mecha/rejectProposal"):
        err = sidecar.error(method, {"id": "20260101T000000-acc00001"})
        assert err["code"] == codes.NOT_PENDING
        assert "20260101T000000-acc00001" in err["message"] and "already accepted" in err["message"]

    rejected = sidecar.call("mecha/rejectProposal", {"id": "20260101T000000-rej00001", "reason": "no"})["proposal"]
    assert rejected["status"] == "rejected"
    for method in ("mecha/rejectProposal", "mecha/acceptProposal"):
        err = sidecar.error(method, {"id": "20260101T000000-rej00001"})
        assert err["code"] == codes.NOT_PENDING
        assert "already rejected" in err["message"]
    # The refused accept of the rejected proposal wrote no writing rules.
    assert not store.rules_path("writing", "learned").exists()
    assert_served(sidecar)


def test_a_proposal_the_gate_rejected_cannot_be_accepted(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    store.write_proposal(proposal("20260101T000000-gate0001", status=ProposalStatus.REJECTED_BY_GATE))
    err = sidecar.error("mecha/acceptProposal", {"id": "20260101T000000-gate0001"})
    assert err["code"] == codes.NOT_PENDING
    assert "rejected_by_gate" in err["message"]
    assert_served(sidecar)
