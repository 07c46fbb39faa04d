"""The harness endpoint's first stage: a run's first requests, answered with
the standard library alone.

A harness starts one sidecar per agent run and waits for its rules block
before the run's first model call. The full server's imports (msgspec, the
method table, the store) cost several times a bare interpreter's start, and
what that run asks first — `initialize`, `initialized`,
`mecha/rulesPromptBlock`, `shutdown`, `exit` — is almost always what the
previous run was told. So the first stage reads stdin itself and answers
those from the block cache (`mecha.core.store.blockcache`) that the full server
writes whenever it reads a rules block afresh, keyed by the server's own code
(`code_identity`) and the store's rules fingerprint, so nothing is served
from a file (or a version) that changed.

Everything else is the full server's, and the first stage hands over at the
first message it does not serve itself — or, once it has served the rules
block, when the input stays quiet for `IDLE_HANDOVER_S`: the run's model is
thinking, and the requests after it are the full server's — without losing or reordering one:
the bytes it read and did not serve, whether it answered `initialize` (the
full server runs that `initialize` again, without replying, to have the same
context) and whether it was told `shutdown` (`RpcServer.resume`). It hands
over on a cache miss, on any other method, on anything it was not sent in
the plain case (`mecha.protocol.plainwire`: a frame, a body or params it
cannot be sure the full server reads the same way), and on any request whose
answer would be an error, so every error keeps the full server's wording.
Its answers are the full server's bytes, kept by it: the cache holds the
result JSON msgspec wrote, and the envelope around it is the one
`jsonrpc.encode_result` writes.

It imports `os`, `select` and the `json` package's C scanner (`_json`) from
the standard library, and five small modules of this project;
`tests/test_import_budget.py` pins that. Once it has served a whole
conversation, the process ends without the interpreter's teardown
(`teardown_is_needless`).
"""

from __future__ import annotations

import os
import select
import sys

from mecha.core.store import blockcache
from mecha.core.store.layout import project_root, resolve_root, root_problem, rules_fingerprint
from mecha.protocol import lifecycle as lc
from mecha.protocol import plainwire as pw

from ._version import code_identity

#: How long a frame whose rest has not arrived yet is waited for here before
#: the full server takes over: its framing has the stall timeout and the
#: rules for a frame that never completes; this stage only spares a client
#: that writes a header and its body separately a hand-over.
MID_FRAME_WAIT_S = 0.05

#: How long the input may stay quiet after the rules block was served
#: before the full server is started anyway. A harness asks for the block
#: just before its run's first model call, which takes hundreds of
#: milliseconds at the least; the run's next requests (`liveAffect`, the
#: interventions) are the full server's, and were answered only after its
#: imports (130 ms on a busy machine) when the hand-over waited for them.
#: Started in that quiet time instead, it is up before they come. Requests
#: sent back to back (a run that only wanted its block, then `shutdown`)
#: arrive well inside this, and the first stage serves them alone.
IDLE_HANDOVER_S = 0.05

_CHUNK = 1 << 16

#: What `_serve` decided about a message.
_SERVED, _EXIT, _HAND_OVER = "served", "exit", "hand over"


class FirstStage:
    """Serve the plain start of one conversation over a pair of descriptors,
    until `exit`, the end of input, or the first message to hand over."""

    def __init__(self, in_fd: int, out_fd: int):
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.buf = bytearray()
        #: Where the first byte not yet served is.
        self.pos = 0
        self.eof = False
        #: The body of the `initialize` this stage answered, if it did.
        self.initialize: bytes | None = None
        #: The lifecycle gate every endpoint asks (`mecha.protocol.lifecycle`);
        #: its state goes with a hand-over.
        self.lifecycle = lc.Lifecycle()
        self.root = ""
        self.cache: blockcache.Kept | None = None
        #: Answers already looked up under `fingerprint`.
        self.fingerprint: list[list[object]] | None = None
        #: `(domain, project root)` → answer.
        self.answers: dict[tuple[str | None, str | None], bytes] = {}
        #: Whether a rules block was answered here (the run's model is next).
        self.block_served = False
        #: Whether the hand-over is for quiet input after the block.
        self.went_quiet = False

    def pending(self) -> bytes:
        """What was read and not served: the full server's input starts here."""
        return bytes(self.buf[self.pos :])

    def exit_code(self) -> int:
        """The full server's: 0 after `shutdown`, else 1."""
        return self.lifecycle.exit_code

    def run(self) -> int | None:
        """The exit code if the conversation ended here; `None` to hand over."""
        while True:
            if self.pos == len(self.buf):
                quiet_ends = IDLE_HANDOVER_S if self.block_served and self.lifecycle.live else None
                if not self._fill(quiet_ends):
                    if not self.eof:
                        self.went_quiet = True
                        return None  # quiet after the block: start the full server now
                    return self.exit_code()  # the input ended between frames
                continue
            found = pw.plain_frame(self.buf, self.pos)
            if isinstance(found, str):  # `pw.INCOMPLETE`
                if not self._fill(MID_FRAME_WAIT_S):
                    return None
                continue
            if found is None:
                return None
            start, end = found
            body = bytes(self.buf[start:end])
            msg = pw.decode_plain(body)
            if msg is None:
                return None
            decision = self._serve(msg, body)
            if decision == _HAND_OVER:
                return None
            self.pos = end
            if decision == _EXIT:
                return self.exit_code()

    def _fill(self, timeout: float | None) -> bool:
        """Read more input; False at its end, or after `timeout` with none."""
        if self.eof:
            return False
        if timeout is not None:
            ready, _, _ = select.select([self.in_fd], [], [], timeout)
            if not ready:
                return False
        data = os.read(self.in_fd, _CHUNK)
        if not data:
            self.eof = True
            return False
        if self.pos:
            del self.buf[: self.pos]
            self.pos = 0
        self.buf += data
        return True

    def _send(self, frame: bytes) -> None:
        view = memoryview(frame)
        try:
            while view:
                view = view[os.write(self.out_fd, view) :]
        except OSError:
            pass  # the peer went away; as the full server, read on to the end

    def _serve(self, msg: pw.Plain, body: bytes) -> str:
        """Serve what the lifecycle lets through and the cache can answer
        exactly as the full server would; hand over the rest (and every
        refusal, so its error keeps the full server's wording)."""
        request = msg.id is not None
        verdict = self.lifecycle.admit(msg.method, request).verdict
        if verdict == lc.INITIALIZE:
            return self._initialize(msg, body)
        if verdict == lc.SERVE and request and msg.method == "mecha/rulesPromptBlock":
            return self._rules_block(msg)
        if verdict == lc.SHUTDOWN and pw.ignored_params(msg.params):
            assert msg.id is not None
            self._send(pw.result_frame(msg.id, b"null"))
            self.lifecycle.shutdown_received()
            return _SERVED
        if verdict in (lc.DROP, lc.PROTOCOL):
            return _SERVED  # the full server drops it too, whatever it carries
        if verdict == lc.EXIT and not request and pw.ignored_params(msg.params):
            return _EXIT
        return _HAND_OVER

    def _initialize(self, msg: pw.Plain, body: bytes) -> str:
        assert msg.id is not None
        learning_dir = pw.initialize_learning_dir(msg.params)
        if not (learning_dir is None or isinstance(learning_dir, str)) or (learning_dir and root_problem(learning_dir)):
            return _HAND_OVER  # the full server names what is wrong with it
        # `Context.from_options`: `learningDir` when given and not empty.
        root = resolve_root(learning_dir)
        if root.startswith("~"):
            return _HAND_OVER  # no home to expand it against: the full server says so
        cache = blockcache.read(root, code_identity())
        if cache is None:
            return _HAND_OVER
        self._send(pw.result_frame(msg.id, cache.initialize))
        self.initialize = body
        self.lifecycle.initialize_succeeded()
        self.root = root
        self.cache = cache
        return _SERVED

    def _rules_block(self, msg: pw.Plain) -> str:
        assert msg.id is not None and self.cache is not None
        params = pw.rules_block_params(msg.params)
        if not isinstance(params, tuple):  # `pw.REFUSED`
            return _HAND_OVER
        domain, project = params
        # As the full server resolves it (`scope.resolve_project`): the
        # run's directory up to its git root.
        if project is not None:
            project = project_root(project)
        fingerprint = rules_fingerprint(self.root)
        if fingerprint != self.fingerprint:
            self.fingerprint, self.answers = fingerprint, {}
        answer = self.answers.get((domain, project))
        if answer is None:
            answer = blockcache.lookup(self.cache, fingerprint, domain, project)
            if answer is None:
                return _HAND_OVER
            self.answers[(domain, project)] = answer
        self._send(pw.result_frame(msg.id, answer))
        self.block_served = True
        return _SERVED


def teardown_is_needless() -> bool:
    """Whether this process may end without the interpreter's teardown once
    the first stage has served the whole conversation.

    Tearing down even this few modules is a tenth of a bare interpreter's
    start, and nothing here needs it: every frame went out with `os.write`,
    unbuffered; the first stage starts no thread and registers nothing to
    run at exit. Something else might have — coverage measurement started
    from a `.pth` file, a `sitecustomize` — and then the teardown is kept,
    so its exit handlers run as they always do."""
    import atexit

    return atexit._ncallbacks() == 0


def serve() -> int:
    """The harness endpoint on stdio: the first stage, then, if it hands
    over, the full server from where it stopped."""
    stage = FirstStage(0, 1)
    try:
        code = stage.run()
    except Exception as exc:  # a fault here must cost the speed, never the run
        # Nothing is lost: what was read and not served is still pending.
        sys.stderr.write(f"mecha-sidecar: first stage: {type(exc).__name__}: {exc}; the full server takes over\n")
        code = None
    if code is not None:
        if teardown_is_needless():
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os._exit(code)
        return code
    from .serve import serve_stdio

    return serve_stdio(
        pending=stage.pending(),
        initialized_by=stage.initialize,
        shutdown=stage.lifecycle.shutdown,
        warm=stage.went_quiet,
    )
