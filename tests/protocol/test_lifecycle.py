"""The lifecycle gate's rules, one decision at a time (the endpoints that
ask it are held to the same answers end to end in
`tests/wire/test_lifecycle_gate.py`)."""

from __future__ import annotations

import pytest

from mecha.protocol import errors as codes
from mecha.protocol import lifecycle as lc


def _gate(state: str, **predicates: object) -> lc.Lifecycle:
    gate = lc.Lifecycle(**predicates)  # type: ignore[arg-type]
    if state in ("live", "shut down"):
        gate.initialize_succeeded()
    if state == "shut down":
        gate.shutdown_received()
    return gate


@pytest.mark.parametrize(
    ("state", "method", "with_id", "verdict", "code"),
    [
        # before initialize
        ("new", "initialize", True, lc.INITIALIZE, None),
        ("new", "mecha/rulesPromptBlock", True, lc.REFUSE, codes.SERVER_NOT_INITIALIZED),
        ("new", "shutdown", True, lc.REFUSE, codes.SERVER_NOT_INITIALIZED),
        ("new", "initialized", True, lc.REFUSE, codes.SERVER_NOT_INITIALIZED),
        ("new", "initialized", False, lc.DROP, None),
        ("new", "mecha/anything", False, lc.DROP, None),
        ("new", "exit", False, lc.EXIT, None),
        ("new", "$/cancelRequest", False, lc.CANCEL, None),
        # live
        ("live", "initialize", True, lc.REFUSE, codes.INVALID_REQUEST),
        ("live", "mecha/rulesPromptBlock", True, lc.SERVE, None),
        ("live", "shutdown", True, lc.SHUTDOWN, None),
        ("live", "initialized", True, lc.REFUSE, codes.INVALID_REQUEST),
        ("live", "$/setTrace", True, lc.REFUSE, codes.INVALID_REQUEST),
        ("live", "initialized", False, lc.PROTOCOL, None),
        ("live", "$/setTrace", False, lc.PROTOCOL, None),
        ("live", "$/progress", False, lc.PROTOCOL, None),
        ("live", "textDocument/didOpen", False, lc.SERVE, None),
        ("live", "exit", True, lc.EXIT, None),
        ("live", "$/cancelRequest", True, lc.CANCEL, None),
        # after shutdown
        ("shut down", "mecha/rulesPromptBlock", True, lc.REFUSE, codes.INVALID_REQUEST),
        ("shut down", "initialize", True, lc.REFUSE, codes.INVALID_REQUEST),
        ("shut down", "shutdown", True, lc.REFUSE, codes.INVALID_REQUEST),
        ("shut down", "textDocument/didOpen", False, lc.DROP, None),
        ("shut down", "exit", False, lc.EXIT, None),
    ],
)
def test_each_message_gets_the_lifecycles_verdict(state: str, method: str, with_id: bool, verdict: str, code: int | None) -> None:
    # Pins: any one lifecycle rule of protocol/README.md §2 changing (a
    # -32002 that became -32600, a notification after shutdown served).
    admission = _gate(state).admit(method, with_id)

    assert admission.verdict == verdict
    if code is None:
        assert admission.code == 0
    else:
        assert admission.error().code == code
        assert method in admission.error().message


def test_the_refusals_say_what_was_wrong() -> None:
    # Pins: the wording the contract documents, which clients match on.
    assert _gate("new").admit("mecha/jobs", True).message == "mecha/jobs: initialize has not been received"
    assert _gate("live").admit("initialize", True).message == "initialize was already received"
    assert _gate("live").admit("exit", True).verdict == lc.EXIT
    assert _gate("live").admit("initialized", True).message == "initialized is a notification: send it without an id"
    assert _gate("shut down").admit("mecha/jobs", True).message == "mecha/jobs: the server is shutting down"


def test_an_endpoints_own_notifications_are_refused_as_requests_and_its_requests_dropped_as_notifications() -> None:
    # Pins: a request method sent without an id being run with nobody to
    # answer, or a notification sent with an id left unanswered.
    gate = _gate("live", is_notification_method=lambda m: m == "textDocument/didOpen", is_request_method=lambda m: m == "mecha/jobs")

    assert gate.admit("textDocument/didOpen", True).verdict == lc.REFUSE
    assert gate.admit("mecha/jobs", False).verdict == lc.DROP
    assert gate.admit("mecha/jobs", True).verdict == lc.SERVE
    # The lifecycle's own notifications stay refused whatever the endpoint says.
    assert gate.admit("initialized", True).verdict == lc.REFUSE


def test_admit_only_decides_and_the_endpoint_reports_what_it_did() -> None:
    # Pins: the first stage asking about an `initialize` or a `shutdown` it
    # then hands over, and the full server finding the state already moved.
    gate = lc.Lifecycle()
    assert gate.admit("initialize", True).verdict == lc.INITIALIZE
    assert gate.admit("initialize", True).verdict == lc.INITIALIZE
    assert not gate.initialized

    gate.initialize_succeeded()
    assert gate.admit("shutdown", True).verdict == lc.SHUTDOWN
    assert gate.live and gate.exit_code == 1

    gate.shutdown_received()
    assert not gate.live and gate.exit_code == 0


@pytest.mark.parametrize(
    ("params", "target"),
    [({"id": 4}, 4), ({"id": "a"}, "a"), ({"id": True}, None), ({"id": [1]}, None), ({"id": None}, None), ({}, None), ([4], None), (None, None)],
)
def test_a_cancel_names_an_id_only_if_a_request_could_have_it(params: object, target: object) -> None:
    # Pins: `true` (an int to Python) cancelling request 1, or a list id
    # reaching a dict lookup.
    assert lc.cancel_target(params) == target
