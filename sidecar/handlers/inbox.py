"""The inbox: work waiting for a reflect pass, and what a pass set aside
— listed, retried or dropped."""

from __future__ import annotations

from mecha.core.agents.retrust import withheld
from mecha.core.environment.trust import load_trust
from mecha.core.errors import InvalidInput
from mecha.core.store.inbox import count_waiting, drop_set_aside, list_set_aside, pass_after_queue, retry_set_aside
from mecha.protocol import methods as m

from .. import jobs as background
from ..context import Context
from ..rpc import Cancel


def inbox(ctx: Context, p: m.Empty, cancel: Cancel) -> m.InboxResult:
    store = ctx.existing_store()
    if store is None:
        return m.InboxResult(waiting=0, set_aside=[])
    try:
        trust = load_trust()
    except InvalidInput:
        trust = None  # the reasons are shown as recorded; `trust list` names the fault
    count, recent = withheld(store, trust)
    return m.InboxResult(waiting=count_waiting(store), set_aside=list_set_aside(store), withheld=count, withheld_recent=recent)


def inbox_retry(ctx: Context, p: m.InboxRetryParams, cancel: Cancel) -> m.InboxRetryResult:
    if p.id is None:
        after = pass_after_queue(ctx.store(), False, lambda: background.start_pass(ctx, "reflect"))
        return m.InboxRetryResult(entry=None, job=after.job)
    entry = retry_set_aside(ctx.store(), p.id)
    return m.InboxRetryResult(entry=entry, job=background.start_pass(ctx, "reflect"))


def inbox_drop(ctx: Context, p: m.IdParams, cancel: Cancel) -> m.InboxDropResult:
    return m.InboxDropResult(entry=drop_set_aside(ctx.store(), p.id))
