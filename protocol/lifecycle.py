"""The LSP lifecycle, decided in one place for every endpoint.

`initialize → initialized → requests … → shutdown → exit` (protocol/README.md
§2). Each endpoint — the harness endpoint's first stage and full server, and
the editor endpoint — reads a message, asks `Lifecycle.admit` what the
lifecycle makes of it, and acts on the answer with its own machinery (a
cache, a dispatcher thread, pygls). So the rules are the same wherever a
message lands:

- a request after `shutdown` is -32600, whatever it is;
- `initialize` is served once; a second is -32600;
- any other request before `initialize` is -32002;
- `shutdown` is answered `null`, and from then on nothing else is served;
- a notification sent with an id is -32600 (JSON-RPC answers every request,
  and a null result would hide the client's mistake);
- `exit` ends the conversation, as a notification or not: exit code 0 after
  `shutdown`, else 1;
- `$/cancelRequest` is the endpoint's to apply to its own requests;
- a notification before `initialize` or after `shutdown` is dropped, and so
  is a request method sent as a notification: there is nobody to answer.

`admit` only decides. The two transitions — `initialize` succeeded,
`shutdown` answered — are the endpoint's to report (`initialize_succeeded`,
`shutdown_received`), because only it knows whether it served the message or
handed it on: the first stage asks, then hands a message it cannot serve
from its cache to the full server, which must find the lifecycle as it was.

Standard library only, with no `typing` at run time: the first stage uses it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from .errors import RpcError

#: The lifecycle's notifications (LSP defines them so): a client that sends
#: one with an id is answered rather than left waiting.
LIFECYCLE_NOTIFICATIONS = frozenset({"initialized", "exit", "$/cancelRequest", "$/setTrace", "$/logTrace"})

# What `admit` makes of a message.
#: The endpoint serves it (a request: dispatch and answer; a notification:
#: hand it to whatever handles notifications).
SERVE = "serve"
#: Run `initialize`; on success, report `initialize_succeeded`.
INITIALIZE = "initialize"
#: Answer `shutdown` with `null`, and report `shutdown_received`.
SHUTDOWN = "shutdown"
#: End the conversation with `exit_code`.
EXIT = "exit"
#: A `$/cancelRequest`: the endpoint cancels the request it names, if it
#: is queued or running (`cancel_target`).
CANCEL = "cancel"
#: A notification of LSP's own machinery (`initialized`, `$/setTrace`, …)
#: while the conversation is live: an endpoint that has such machinery
#: passes it on; one that has not drops it.
PROTOCOL = "protocol"
#: Nothing to do and nobody to answer.
DROP = "drop"
#: Answer with `Admission.error()`.
REFUSE = "refuse"


class Admission:
    """The lifecycle's answer about one message: a verdict, and for
    `REFUSE` the error's code and message."""

    __slots__ = ("verdict", "code", "message")

    def __init__(self, verdict: str, code: int = 0, message: str = ""):
        self.verdict = verdict
        self.code = code
        self.message = message

    def error(self) -> RpcError:
        from .errors import RpcError

        return RpcError(self.code, self.message)

    def __repr__(self) -> str:
        return f"Admission({self.verdict!r}, {self.code}, {self.message!r})" if self.code else f"Admission({self.verdict!r})"


_SERVE = Admission(SERVE)
_INITIALIZE = Admission(INITIALIZE)
_SHUTDOWN = Admission(SHUTDOWN)
_EXIT = Admission(EXIT)
_CANCEL = Admission(CANCEL)
_PROTOCOL = Admission(PROTOCOL)
_DROP = Admission(DROP)


def _refused(message: str, *, before_initialize: bool = False) -> Admission:
    # Imported here: a refusal is never served by the first stage (it hands
    # the message over), so its imports stay the standard library's.
    from .errors import INVALID_REQUEST, SERVER_NOT_INITIALIZED

    return Admission(REFUSE, SERVER_NOT_INITIALIZED if before_initialize else INVALID_REQUEST, message)


def _lifecycle_only(method: str) -> bool:
    return method in LIFECYCLE_NOTIFICATIONS


def _none(method: str) -> bool:
    return False


class Lifecycle:
    """One conversation's lifecycle state, and the rules applied to it.

    `is_notification_method`: the methods this endpoint knows as
    notifications, so one sent with an id is refused (always including the
    lifecycle's own). `is_request_method`: the methods it knows as requests,
    so one sent without an id is dropped rather than run with nobody to
    answer."""

    __slots__ = ("initialized", "shutdown", "_is_notification_method", "_is_request_method")

    def __init__(
        self,
        *,
        is_notification_method: Callable[[str], bool] | None = None,
        is_request_method: Callable[[str], bool] | None = None,
    ):
        self.initialized = False
        self.shutdown = False
        self._is_notification_method = is_notification_method or _lifecycle_only
        self._is_request_method = is_request_method or _none

    @property
    def live(self) -> bool:
        return self.initialized and not self.shutdown

    @property
    def exit_code(self) -> int:
        """0 if `shutdown` came first, else 1 (LSP's rule, also for the end
        of input)."""
        return 0 if self.shutdown else 1

    def initialize_succeeded(self) -> None:
        self.initialized = True

    def shutdown_received(self) -> None:
        self.shutdown = True

    def admit(self, method: str, is_request: bool) -> Admission:
        """What the lifecycle makes of a message with this method, sent with
        an id (`is_request`) or without. Decides only: the state changes when
        the endpoint reports what it did."""
        if method == "exit":
            return _EXIT
        if method == "$/cancelRequest":
            return _CANCEL
        if not is_request:
            if not self.live or self._is_request_method(method):
                return _DROP
            if method in LIFECYCLE_NOTIFICATIONS or method.startswith("$/"):
                return _PROTOCOL
            return _SERVE
        if self.shutdown:
            return _refused(f"{method}: the server is shutting down")
        if method == "initialize":
            if self.initialized:
                return _refused("initialize was already received")
            return _INITIALIZE
        if not self.initialized:
            return _refused(f"{method}: initialize has not been received", before_initialize=True)
        if method == "shutdown":
            return _SHUTDOWN
        if method in LIFECYCLE_NOTIFICATIONS or self._is_notification_method(method):
            return _refused(f"{method} is a notification: send it without an id")
        return _SERVE


def cancel_target(params: object) -> int | str | None:
    """The id a `$/cancelRequest`'s (decoded) params name, or `None` when
    they name none a request could have (JSON-RPC ids are numbers or
    strings; a boolean is neither, though Python says it is an int)."""
    target = params.get("id") if isinstance(params, dict) else None
    if isinstance(target, bool) or not isinstance(target, (int, str)):
        return None
    return target
