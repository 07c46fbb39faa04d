"""The inbox: work waiting for a reflect pass, what a pass set aside —
listed, retried or dropped — and the corrections held back as untrusted,
which the person may vouch for."""

from __future__ import annotations

from mecha.core.agents.held import HeldResult, Vouched, held_now, withheld
from mecha.core.agents.held import vouch as held_vouch
from mecha.core.environment.agents import NAMES
from mecha.core.environment.trust import load_trust
from mecha.core.errors import InvalidInput
from mecha.core.sessions.trust import Trust
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
        trust = Trust()  # the reader's own lists alone; `trust list` names the fault
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


def held_corrections(ctx: Context, p: m.HeldParams, cancel: Cancel) -> HeldResult:
    """Every correction held back, with what holds it back now (`held.held_now`)."""
    if p.limit is not None and p.limit < 1:
        raise InvalidInput("limit: must be at least 1")
    store = ctx.existing_store()
    if store is None:
        return HeldResult(count=0, vouchable=0, held=[])
    mining = ctx.with_voices(*NAMES)
    count, rows = held_now(store, voices=mining.voices)
    return HeldResult(count=count, vouchable=sum(r.vouchable for r in rows), held=rows[: p.limit] if p.limit else rows)


def vouch(ctx: Context, p: m.VouchParams, cancel: Cancel) -> Vouched:
    """The person vouches for held corrections (`held.vouch`); a reflect
    pass asks about those queued."""
    store = ctx.existing_store()
    if store is None:
        raise InvalidInput("vouch: there is no store yet, so no correction is held back")
    mining = ctx.with_voices(*NAMES)
    done = held_vouch(store, p.ids, by=p.by, voices=mining.voices)
    if done.entries:
        done.job = background.start_pass(mining, "reflect")
    return done
