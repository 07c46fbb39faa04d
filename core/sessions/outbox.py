"""Drafts the agent staged for its person to release: the harness's outbox.

A sent message whose arguments differ from what was staged is the person's
edit, and the one recorded moment that teaches the `writing` domain. A sent
message nobody touched is the one signal in the whole system that says
something went *well*.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

import msgspec

from mecha.core.sessions.transcript import Taint


class WritingOutcome(str, Enum):
    SENT_UNCHANGED = "sent_unchanged"
    SENT_EDITED = "sent_edited"


class OutboxItem(msgspec.Struct, kw_only=True):
    id: str
    status: str
    tool: str
    kind: Literal["message", "publish"] = "message"
    args: Any = None
    args_before: Any = None
    summary: str = ""
    session_id: str | None = None
    workspace: str | None = None
    taint: Taint = msgspec.field(default_factory=Taint)
    created_at: str = ""
    resolved_at: str | None = None
    reason: str | None = None
    error: str | None = None

    def writing_outcome(self) -> WritingOutcome | None:
        """What releasing this item says about the drafting, if anything.

        Only a *sent message* speaks to writing: a publish's arguments are a
        path and bookkeeping, and a pending or rejected item never went out.
        """
        if self.kind != "message" or self.status != "sent":
            return None
        if self.args == self.args_before:
            return WritingOutcome.SENT_UNCHANGED
        return WritingOutcome.SENT_EDITED
