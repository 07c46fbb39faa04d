"""The domain's failures, one class each, so every endpoint and CLI verb
reports the same thing the same way. `mecha.protocol.errors` maps each to its
JSON-RPC code; nothing here knows about codes."""

from __future__ import annotations


class LearningError(Exception):
    """Base class: a failure a client should be told about by name."""


class NotFound(LearningError):
    """No proposal / rule / job with that id."""


class Ambiguous(LearningError):
    """An id prefix matched several records; the message lists them."""

    def __init__(self, message: str, matches: list[str]):
        super().__init__(message)
        self.matches = matches


class Stale(LearningError):
    """An accept found the live learned rules moved since the proposal was made."""


class InvalidStore(LearningError):
    """A rules file does not parse; the message names the file and line.

    `path` and `line` (1-based) carry the same facts for a client that places
    a diagnostic rather than printing the message."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        super().__init__(message)
        self.path = path
        self.line = line


class StoreFull(InvalidStore):
    """The filesystem holding the store has no room left (or the owner's
    quota is spent): a write could not be made whole. The message names the
    file and says what was kept; `path` carries the file. A kind of
    `InvalidStore` — the store, not the request, is what must change — with
    a name of its own, because the remedy (free some space) is not the
    remedy for a store that cannot be written at all."""


class NoModel(LearningError):
    """A pass needs a model and none is configured."""


class InvalidDomain(LearningError):
    """A domain name outside `[a-z0-9][a-z0-9_-]{0,63}`."""


class NotPending(LearningError):
    """Accept or reject of a proposal that is already resolved."""


class InvalidInput(LearningError):
    """A request's parameters are well-typed but make no sense (e.g. a probe
    that names no intervention); the message names the offending field."""


class ExportFailed(InvalidInput):
    """The rules could not be written into an agent's instructions file
    (`mecha-sidecar export`, or the export an accept runs): its markers are
    damaged, it is read-only or has several names, its links loop, its
    folder cannot be written, or it kept changing while it was written. The
    message names the file and what was wrong; the file is as it was."""


class ModelFailure(LearningError):
    """The model answered, but not usably (refusal, unparseable twice,
    truncated) or not at all (timeouts, exhausted retries).

    `status` is the HTTP status the server answered the last attempt with,
    when it answered with an error status at all: what tells a request the
    server turned down (a 400: it will never take it) from a server that was
    not there (no status)."""

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class UnusableReply(ModelFailure):
    """The model answered, but with no answer: it refused, hit its token
    limit first, sent nothing, wrote no JSON that meets the reply contract,
    or offered markup or the template's own words as its lesson. Specific to
    what it was asked, so a pass leaves that one piece of work pending,
    keeps it, and goes on with the rest. `reply` is what the model wrote
    (for the pass log, never for the store's history)."""

    def __init__(self, message: str, *, reply: str | None = None):
        super().__init__(message)
        self.reply = reply
