"""The lean JSON-RPC loop the harness talks to.

Started once per agent run, and waited on before the run's first model call,
so it imports nothing it does not need: msgspec, the stdlib, and the method
table. No pygls, no lsprotocol, no httpx.

Two threads. The reader parses frames and envelopes, answers framing and
envelope errors itself, records `$/cancelRequest`s as they arrive, and queues
everything else. The dispatcher serves the queue in order. A request whose
cancel arrived before it was served is answered -32800 without running; one
that is running sees the cancel through its `Cancel` token at its next check.
Replies and the sidecar's own notifications share one locked writer.

Every bad message gets an error reply naming what was wrong (or, for a bad
notification, nothing) and the next message is served: nothing a client sends
stops the loop except `exit` or the end of its input.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

import msgspec

from mecha.protocol import errors as codes
from mecha.protocol import lifecycle as lc
from mecha.protocol.errors import RpcError, rpc_error_from
from mecha.protocol.framing import FrameReader, FrameWriter
from mecha.protocol.jsonrpc import (
    Incoming,
    decode_envelope,
    encode_error,
    encode_notification,
    encode_result,
    request_id_of,
)

log = logging.getLogger("mecha.sidecar.rpc")


#: Requests the reader serves itself when nothing is queued or running: the
#: harness's hot path, read-only and answered from a cache, so skipping the
#: thread hand-off takes a scheduler wake-up out of every run's start. A
#: cancel cannot be read while one runs, and none needs to be.
INLINE_METHODS = frozenset({"mecha/rulesPromptBlock"})


class Cancelled(Exception):
    """Raised inside a handler when its request was cancelled."""


class Cancel:
    """A request's cancellation flag, checked by long handlers."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()


#: A dispatcher: (method, raw params, cancel token) → result builtins/Structs.
#: Raises `RpcError` (or a domain error) to answer with an error.
Dispatch = Callable[[str, "msgspec.Raw | None", Cancel], Any]


class RpcServer:
    """Serve one peer over a pair of file descriptors until `exit` or EOF."""

    def __init__(
        self,
        in_fd: int,
        out_fd: int,
        dispatch: Dispatch,
        *,
        on_initialize: Callable[[msgspec.Raw | None], Any],
        is_request_method: Callable[[str], bool],
    ):
        self.reader = FrameReader(in_fd)
        self.writer = FrameWriter(out_fd)
        self.dispatch = dispatch
        self.on_initialize = on_initialize
        self.queue: queue.Queue[Incoming | None] = queue.Queue()
        self.cancels: dict[int | str, Cancel] = {}
        self.cancels_lock = threading.Lock()
        #: Messages queued or being served by the dispatcher.
        self.outstanding = 0
        self.outstanding_lock = threading.Lock()
        #: The one lifecycle gate (`mecha.protocol.lifecycle`), asked about
        #: every message this endpoint serves.
        self.lifecycle = lc.Lifecycle(is_request_method=is_request_method)

    def resume(self, pending: bytes, initialized_by: bytes | None, shutdown: bool) -> None:
        """Carry on a conversation the first stage began (`first_stage`):
        `pending` is what it read and did not serve, so this server reads it
        first; `initialized_by` the body of the `initialize` it answered,
        run again here without a reply so this server has the same context;
        `shutdown` whether it was told to shut down."""
        self.reader.buf[:0] = pending
        if initialized_by is not None:
            try:
                self.on_initialize(_raw(decode_envelope(initialized_by)))
            except Exception:  # the first stage only answers what this accepts
                log.exception("the first stage's initialize does not initialize this server")
            else:
                self.lifecycle.initialize_succeeded()
        if shutdown:
            self.lifecycle.shutdown_received()

    # ── output ──
    def send(self, body: bytes) -> None:
        try:
            self.writer.write(body)
        except (BrokenPipeError, OSError) as exc:  # the peer went away
            log.debug("write failed: %s", exc)

    def notify(self, method: str, params: Any) -> None:
        from mecha.protocol.methods import to_builtins

        self.send(encode_notification(method, to_builtins(params)))

    def _reply_error(self, id: Any, error: RpcError) -> None:
        self.send(encode_error(id, error))

    # ── input ──
    def _read_loop(self) -> None:
        while True:
            frame = self.reader.read_frame()
            if frame is None:
                break
            if frame.error is not None:
                self._reply_error(None, RpcError(codes.PARSE_ERROR, f"bad frame: {frame.error}"))
                continue
            assert frame.body is not None
            try:
                msg = decode_envelope(frame.body)
            except Exception as exc:  # this thread must outlive any one frame
                self._reply_error(request_id_of(frame.body), rpc_error_from(exc))
                continue
            if not (msg.is_request or msg.is_notification):
                continue  # a response to a request this server never sends
            # What cannot wait for the queue: a cancel applies now, and
            # nothing after an `exit` is read.
            verdict = self.lifecycle.admit(msg.method_name, msg.is_request).verdict
            if verdict == lc.CANCEL:
                self._cancel(msg)
                continue
            rid = msg.request_id
            if msg.is_request and rid is not None:
                with self.cancels_lock:
                    self.cancels.setdefault(rid, Cancel())
            with self.outstanding_lock:
                inline = msg.is_request and msg.method_name in INLINE_METHODS and self.outstanding == 0
                if not inline:
                    self.outstanding += 1
                    self.queue.put(msg)
            if inline:
                # Nothing is queued or running, so serving it here keeps
                # the order and saves the hand-off to the dispatcher.
                self._serve_request(msg)
            if verdict == lc.EXIT:
                return
        self.queue.put(None)

    def _cancel(self, msg: Incoming) -> None:
        try:
            target = lc.cancel_target(msgspec.json.decode(msg.params or b"{}"))
        except (msgspec.DecodeError, RecursionError):
            return
        if target is not None:
            with self.cancels_lock:
                # Only a request that is queued or running can be cancelled; a
                # cancel for an unknown or finished id is ignored rather than
                # kept, so it can never cancel a later request reusing the id.
                pending = self.cancels.get(target)
                if pending is not None:
                    pending.set()

    # ── serving ──
    def serve(self) -> int:
        """Serve until `exit` (0 after `shutdown`, else 1) or end of input."""
        reader = threading.Thread(target=self._read_loop, name="mecha-rpc-reader", daemon=True)
        reader.start()
        while True:
            msg = self.queue.get()
            if msg is None or self.lifecycle.admit(msg.method_name, msg.is_request).verdict == lc.EXIT:
                return self.lifecycle.exit_code
            try:
                if msg.is_notification:
                    self._serve_notification(msg)
                else:
                    self._serve_request(msg)
            finally:
                with self.outstanding_lock:
                    self.outstanding -= 1

    def _serve_notification(self, msg: Incoming) -> None:
        method = msg.method_name
        # Dropped before `initialize` and after `shutdown`, and LSP's own
        # (`initialized`, `$/setTrace`): this endpoint has nothing to do with them.
        if self.lifecycle.admit(method, False).verdict != lc.SERVE:
            return
        try:
            self.dispatch(method, _raw(msg), Cancel())
        except Exception as exc:  # a notification has no reply; log and go on
            log.warning("notification %s failed: %s", method, exc)

    def _serve_request(self, msg: Incoming) -> None:
        id = msg.request_id
        method = msg.method_name
        with self.cancels_lock:
            cancel = (self.cancels.get(id) if id is not None else None) or Cancel()
        try:
            if cancel.cancelled:
                raise RpcError(codes.REQUEST_CANCELLED, f"request {id!r} was cancelled")
            admission = self.lifecycle.admit(method, True)
            if admission.verdict == lc.REFUSE:
                raise admission.error()
            if admission.verdict == lc.INITIALIZE:
                result = self.on_initialize(_raw(msg))
                self.lifecycle.initialize_succeeded()
            elif admission.verdict == lc.SHUTDOWN:
                self.lifecycle.shutdown_received()
                result = None
            else:
                result = self.dispatch(method, _raw(msg), cancel)
            body = _encode_result(id, result)
        except Cancelled:
            body = encode_error(id, RpcError(codes.REQUEST_CANCELLED, f"request {id!r} was cancelled"))
        except Exception as exc:
            err = rpc_error_from(exc)
            if err.code == codes.INTERNAL_ERROR:
                log.exception("%s failed", method)
            body = encode_error(id, err)
        finally:
            if id is not None:
                with self.cancels_lock:
                    self.cancels.pop(id, None)
        self.send(body)


def _raw(msg: Incoming) -> msgspec.Raw | None:
    return None if msg.params is msgspec.UNSET else msg.params


def _encode_result(id: Any, result: Any) -> bytes:
    try:
        return encode_result(id, result)
    except (TypeError, NotImplementedError):
        from mecha.protocol.methods import to_builtins

        return encode_result(id, to_builtins(result))
