"""The route table of the handlers: every request method of the protocol
is routed to a function of a feature module, and every endpoint reaches a
handler through it.

That a feature module is loaded only when one of its methods is called is
pinned where the cold path is, in `tests/test_import_budget.py`.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from mecha.core.errors import InvalidInput
from mecha.core.store import jobs as jobs_mod
from mecha.protocol import methods as m
from mecha.protocol.errors import METHOD_NOT_FOUND, RpcError
from mecha.sidecar import handlers
from mecha.sidecar.context import Context
from mecha.sidecar.rpc import Cancel

PACKAGE = Path(handlers.__file__).parent


def test_every_request_method_is_routed_and_nothing_else() -> None:
    requests = {name for name, spec in m.METHODS.items() if not spec.notification}
    unrouted = sorted(requests - set(handlers.ROUTES))
    assert unrouted == [], f"no handler for {unrouted}: add a row to ROUTES in sidecar/handlers/__init__.py"
    stray = sorted(set(handlers.ROUTES) - requests)
    assert stray == [], f"routes for {stray}, which the method table (protocol/methods.py) has no request for"


def test_each_route_names_a_function_of_its_feature_module() -> None:
    for method, (module, function) in handlers.ROUTES.items():
        assert (PACKAGE / f"{module}.py").is_file(), f"{method}: no module {module}"
        found = getattr(importlib.import_module(f"mecha.sidecar.handlers.{module}"), function, None)
        assert callable(found), f"{method}: {module} has no function {function}"
        assert found.__module__ == f"mecha.sidecar.handlers.{module}", f"{method}: {function} is imported, not defined"
        assert handlers.handler_for(method) is found


def test_an_unknown_method_or_a_notification_has_no_handler() -> None:
    assert handlers.handler_for("mecha/noSuchMethod") is None
    dispatch = handlers.make_dispatch(Context(root=Path("/nonexistent-store")))
    for method in ("mecha/noSuchMethod", "mecha/jobFinished"):
        with pytest.raises(RpcError) as caught:
            dispatch(method, None, Cancel())
        assert caught.value.code == METHOD_NOT_FOUND


def test_the_wire_and_the_cli_reach_the_same_handler(tmp_path: Path) -> None:
    ctx = Context(root=tmp_path / "learning")
    raw = b'{"messages": [{"role": "user", "content": "x"}], "text": "x"}'
    over_wire = handlers.make_dispatch(ctx)("mecha/locateFollowup", raw, Cancel())
    by_call = handlers.call(ctx, "mecha/locateFollowup", {"messages": [{"role": "user", "content": "x"}], "text": "x"})
    assert m.to_builtins(over_wire) == by_call
    with pytest.raises(InvalidInput, match="min: must be at least 1"):
        handlers.call(ctx, "mecha/learn", {"domain": "coding", "min": 0})
    assert not ctx.root.exists(), "a refused request made a store"


def _imports_inside_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            found += [f"{path.name}: {n.module}" if isinstance(n, ast.ImportFrom) else f"{path.name}: {n.names[0].name}"
                      for n in ast.walk(fn) if isinstance(n, ast.Import | ast.ImportFrom)]
    return found


#: The imports a handler keeps inside itself: the rules block's, which the
#: harness's first request pays for (`tests/test_import_budget.py`), of what
#: only a run naming its project needs.
COLD_PATH_LAZY = ["rules.py: mecha.core.learning.scope"]


def test_feature_modules_import_at_their_top() -> None:
    # Pins: an import hidden in a handler, where a reader following a call
    # loses the route (the lazy loading is the route table's, not each
    # handler's).
    inside = [hit for path in sorted(PACKAGE.glob("*.py")) for hit in _imports_inside_functions(path)]
    assert inside == COLD_PATH_LAZY


def test_the_doors_that_hand_work_over_agree_on_the_pass_it_needs(tmp_path: Path) -> None:
    # Pins: a run's end with nothing to queue starting a second reflect pass
    # beside one still at work on the inbox (`inbox.pass_after_queue`).
    from tests.core.store.test_pass_after_queue import queue_a_steer, running_job

    ctx = Context(root=tmp_path / "learning")
    queue_a_steer(ctx.store())
    running = running_job(ctx.root, "reflect")
    quiet = {"session_id": "s-quiet", "messages": [{"role": "user", "content": "Thanks, that is all."}]}
    ended = handlers.call(ctx, "mecha/sessionEnded", quiet)
    retried = handlers.call(ctx, "mecha/inboxRetry", {})
    assert ended["interventions"] == 0
    assert ended["job"]["id"] == retried["job"]["id"] == running.id
    assert [j.id for j in jobs_mod.list_jobs(ctx.root)] == [running.id], "no second pass was started"
