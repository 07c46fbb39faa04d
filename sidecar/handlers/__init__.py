"""One handler per `mecha/*` method, grouped by feature, shared by the
harness endpoint, the editor endpoint and the CLI.

Each handler is wiring: typed params in, a core call, a typed result out.
Decisions live in `mecha.core`; if a handler grows an `if` about the domain,
that `if` belongs there.

`ROUTES` is the one place a method is tied to its code: the feature module
and the function in it. A module is imported the first time one of its
methods is called, so a harness's first request (the rules block) loads
`rules` and nothing of proposals, passes or agents; each feature module
imports what it uses at its top, where a reader sees it. Every endpoint
resolves a method through `handler_for` — the dispatcher the stdio server
and the editor server run (`make_dispatch`) and the CLI's and editor
commands' `call` — so none can reach a handler the others cannot.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from mecha.core.store.files import gc_paused
from mecha.protocol import methods as m
from mecha.protocol.errors import METHOD_NOT_FOUND, RpcError

from ..context import Context
from ..rpc import Cancel

Handler = Callable[[Context, Any, Cancel], Any]

#: Each method served here: the feature module (in this package) and the
#: function in it that handles the method.
ROUTES: dict[str, tuple[str, str]] = {
    # the rules block (the harness's hot path)
    "mecha/rulesPromptBlock": ("rules", "rules_prompt_block"),
    # pure readings of a transcript
    "mecha/extractInterventions": ("transcript", "extract"),
    "mecha/locateFollowup": ("transcript", "locate"),
    "mecha/liveAffect": ("transcript", "live_affect"),
    "mecha/appraiseSession": ("transcript", "appraise"),
    # handing work over to the background passes
    "mecha/sessionEnded": ("sessions", "session_ended"),
    "mecha/draftResolved": ("sessions", "draft_resolved"),
    "mecha/importSessions": ("sessions", "import_sessions"),
    "mecha/trust": ("sessions", "trust"),
    "mecha/heldCorrections": ("inbox", "held_corrections"),
    "mecha/vouch": ("inbox", "vouch"),
    # the passes themselves
    "mecha/learn": ("passes", "learn"),
    "mecha/validate": ("passes", "validate"),
    "mecha/jobs": ("passes", "jobs"),
    # work waiting for a pass, or set aside by one
    "mecha/inbox": ("inbox", "inbox"),
    "mecha/inboxRetry": ("inbox", "inbox_retry"),
    "mecha/inboxDrop": ("inbox", "inbox_drop"),
    # the agents' hooks and rules files
    "mecha/hookStatus": ("agents", "hook_status"),
    "mecha/installHooks": ("agents", "install_hooks"),
    "mecha/exportRules": ("agents", "export_rules"),
    "mecha/shareRules": ("agents", "share_rules"),
    # proposals
    "mecha/proposals": ("proposals", "proposals"),
    "mecha/proposal": ("proposals", "proposal"),
    "mecha/acceptProposal": ("proposals", "accept"),
    "mecha/rejectProposal": ("proposals", "reject"),
    "mecha/proposeRetirement": ("proposals", "propose_retirement"),
    "mecha/renderCandidate": ("proposals", "render_candidate"),
    # the ledger and the lessons behind the rules
    "mecha/recordValidation": ("ledger", "record_validation"),
    "mecha/ruleSources": ("ledger", "rule_sources"),
    "mecha/rules": ("ledger", "rules"),
    "mecha/ruleTallies": ("ledger", "rule_tallies"),
    "mecha/lessons": ("ledger", "lessons"),
    # the gate's verdicts
    "mecha/judge": ("gate", "judge"),
    "mecha/judgeDrawn": ("gate", "judge_drawn"),
    "mecha/doctor": ("doctor", "doctor"),
}


def handler_for(method: str) -> Handler | None:
    """The function that handles `method`, its module imported on first
    use; None for a method nothing here serves (a notification, or a name
    the protocol does not have)."""
    route = ROUTES.get(method)
    if route is None:
        return None
    module, function = route
    found: Handler = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    return found


#: Params larger than this are decoded with the cyclic collector paused.
_BULK_PARAMS = 64 * 1024


def make_dispatch(ctx: Context) -> Callable[[str, Any, Cancel], Any]:
    """The dispatcher the harness endpoint serves: raw params decoded straight
    into the method's Struct, then the handler."""

    def dispatch(method: str, raw: Any, cancel: Cancel) -> Any:
        spec = m.METHODS.get(method)
        handler = None if spec is None or spec.notification else handler_for(method)
        if spec is None or handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")
        if raw is not None and len(raw) > _BULK_PARAMS:
            # A transcript decodes to tens of thousands of objects; without
            # the collector re-walking them as they are made, several times
            # faster (decoded JSON holds no reference cycles).
            with gc_paused():
                params = m.decode_params(spec.params, raw)
        else:
            params = m.decode_params(spec.params, raw)
        return handler(ctx, params, cancel)

    return dispatch


def call(ctx: Context, method: str, params: Any, cancel: Cancel | None = None) -> Any:
    """Call a handler with already-decoded JSON params (the CLI's and the
    editor endpoint's path), returning JSON-ready builtins."""
    spec = m.METHODS[method]
    handler = handler_for(method)
    if handler is None:
        raise KeyError(method)
    typed = m.convert_params(spec.params, params)
    return m.to_builtins(handler(ctx, typed, cancel or Cancel()))
