"""One function per CLI verb, grouped by feature like the handlers
(`handlers.ROUTES`), and `VERBS`, the one place a verb is tied to its code.

`cli.py` parses the command line and dispatches through `verb_for`; each
verb's function lives in the module of its feature (`proposals`,
`sessions`, `passes`, …), mostly a call on a `mecha/*` handler with the
verb's options as params and its result shown as a person reads it
(`output.emit`) — the same code path as the method on the wire. A module
is imported when its verb runs, so `mecha-sidecar jobs` loads nothing of
`import` or `export`.

Two kinds of verb: the endpoints and processes of their own (`ENDPOINTS`,
in `endpoints`) take the parsed arguments alone and speak for themselves;
every other verb takes the store's context too, and the CLI words its
errors (`mecha-sidecar: InvalidInput: …`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

#: Each verb: the feature module (in this package) and its function.
VERBS: dict[str, tuple[str, str]] = {
    # processes of their own
    "serve": ("endpoints", "serve"),
    "lsp": ("endpoints", "lsp"),
    "pass": ("endpoints", "run_pass"),
    "demo": ("endpoints", "demo"),
    "model": ("endpoints", "model"),
    "schema": ("endpoints", "schema"),
    # the rules block, and a pure reading of a session
    "block": ("rules", "block"),
    "mine": ("transcript", "mine"),
    # handing sessions over
    "import": ("sessions", "import_sessions"),
    "reflect": ("sessions", "reflect"),
    "trust": ("sessions", "trust"),
    # the passes
    "learn": ("passes", "learn"),
    "validate": ("passes", "validate"),
    "jobs": ("passes", "jobs"),
    "inbox": ("inbox", "inbox"),
    # proposals
    "proposals": ("proposals", "proposals"),
    "retire": ("proposals", "retire"),
    # the agents' hooks and instructions files
    "export": ("agents", "export"),
    "share": ("agents", "share"),
    "hooks": ("agents", "hooks"),
    # the ledger and the lessons behind the rules
    "rules": ("ledger", "rules"),
    "lessons": ("ledger", "lessons"),
    "why": ("ledger", "why"),
    "tallies": ("ledger", "tallies"),
    "doctor": ("doctor", "doctor"),
}

#: The verbs that take no context (see the module docstring).
ENDPOINTS = frozenset(verb for verb, (module, _) in VERBS.items() if module == "endpoints")


def verb_for(verb: str) -> Callable[..., int]:
    """The function that runs `verb`, its module imported now; a
    `ValueError` naming a verb nothing here runs."""
    route = VERBS.get(verb)
    if route is None:
        raise ValueError(f"unknown verb {verb!r}")
    module, function = route
    found: Callable[..., int] = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    return found
