"""A recorded conversation, as the harness hands it over, and its taint timeline.

The shapes are the harness's own serde JSON (see `protocol/README.md`):

- a `Message` is `{"role": "user" | "assistant", "content": [Block] | str}`;
  a bare string is shorthand for one text block;
- a `Block` is tagged by `type`: `text`, `tool_use` or `tool_result`.

`Block` is one flat Struct rather than a tagged union on purpose. A harness
that records a block kind this module has never heard of (an image, a thinking
block) must not make a whole transcript undecodable: an unknown block decodes,
is kept, and is ignored by everything that reads transcripts here. Field types
are still checked, so `"is_error": "yes"` is an error that names the field.

Taint is recorded by the harness as a timeline of checkpoints; the taint
*covering* message `i` is the last checkpoint at or before `i`. No covering
checkpoint is `None`, which every reader treats as untrusted (fail closed).

Taint says what *had entered* the model's context, so it only grows: a later
checkpoint that says less does not take back what an earlier one said, unless
it is marked `reset` — the harness rebuilt the context at that message (a
fresh context, a compaction that dropped the earlier turns), and from there
its own taint is the whole story. `taint_at` is that reading; it is the one
every decision about provenance uses.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Role = Literal["user", "assistant"]


class Block(msgspec.Struct, omit_defaults=True):
    """One content block of a message. Which fields mean anything depends on
    `type`; the rest stay at their defaults and are omitted on the wire."""

    type: str
    # text
    text: str | None = None
    # tool_use
    id: str | None = None
    name: str | None = None
    input: Any = None
    # tool_result
    tool_use_id: str | None = None
    content: str | None = None
    is_error: bool = False

    @classmethod
    def text_block(cls, text: str) -> Block:
        return cls(type="text", text=text)

    @classmethod
    def tool_use(cls, id: str, name: str, input: Any = None) -> Block:
        return cls(type="tool_use", id=id, name=name, input={} if input is None else input)

    @classmethod
    def tool_result(cls, tool_use_id: str, content: str, is_error: bool = False) -> Block:
        return cls(type="tool_result", tool_use_id=tool_use_id, content=content, is_error=is_error)


class Message(msgspec.Struct):
    role: Role
    content: list[Block] | str

    # ── constructors the tests and samples read naturally with ──
    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=[Block.text_block(text)])

    @classmethod
    def assistant(cls, blocks: list[Block] | str) -> Message:
        if isinstance(blocks, str):
            blocks = [Block.text_block(blocks)]
        return cls(role="assistant", content=blocks)

    @classmethod
    def tool_results(cls, blocks: list[Block]) -> Message:
        return cls(role="user", content=blocks)

    # ── readers ──
    def blocks(self) -> list[Block]:
        """The content as blocks, expanding the string shorthand."""
        if isinstance(self.content, str):
            return [Block.text_block(self.content)]
        return self.content

    def text(self) -> str:
        """All text blocks concatenated, as the harness's `Message::text` does."""
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text or "" for b in self.content if b.type == "text")

    def tool_uses(self) -> list[Block]:
        if isinstance(self.content, str):
            return []
        return [b for b in self.content if b.type == "tool_use"]

    def has_tool_results(self) -> bool:
        if isinstance(self.content, str):
            return False
        return any(b.type == "tool_result" for b in self.content)


class Taint(msgspec.Struct, frozen=True):
    """What had entered a conversation by some point. Both default false."""

    private: bool = False
    untrusted: bool = False


class TaintCheckpoint(msgspec.Struct, frozen=True, omit_defaults=True):
    """From message index `at` on (until the next checkpoint), `taint` holds.

    `reset`: the model's context was rebuilt at `at`, without what came
    before, so earlier checkpoints no longer count (see `taint_at`). Absent
    means false, so a timeline recorded before the field existed decodes
    as it did."""

    at: int
    taint: Taint
    reset: bool = False


def covering_taint(timeline: list[TaintCheckpoint] | None, index: int) -> Taint | None:
    """The taint covering message `index`: the last checkpoint with `at <= index`.

    `None` when there is no timeline or nothing covers the index — a torn or
    pre-taint recording — which callers must read as untrusted. The timeline
    is not assumed sorted: the covering checkpoint is the one with the
    greatest `at` not past `index` (on a tie, the later entry wins, as a
    recorder appending updates would mean).
    """
    if not timeline:
        return None
    best: TaintCheckpoint | None = None
    for cp in timeline:
        if cp.at <= index and (best is None or cp.at >= best.at):
            best = cp
    return best.taint if best is not None else None


def taint_at(timeline: list[TaintCheckpoint] | None, index: int) -> Taint | None:
    """What had entered the model's context by message `index`: every
    checkpoint at or before it, since the last one marked `reset`, folded
    together — `untrusted` (and `private`) if any of them says so.

    Why not the covering checkpoint alone: a timeline that goes untrusted at
    4 and clean at 7 describes a context that still holds what arrived at 4
    (nothing took it out), so the assistant's text at 8 may quote it. Only
    the harness knows when a context was rebuilt, and it says so with
    `reset`; short of that, the reading fails closed. `None` exactly when
    `covering_taint` is `None` (nothing covers the index), which callers
    read as untrusted. Ties at one `at` keep their timeline order.
    """
    if not timeline:
        return None
    upto = sorted((cp for cp in timeline if cp.at <= index), key=lambda cp: cp.at)
    if not upto:
        return None
    start = 0
    for k, cp in enumerate(upto):
        if cp.reset:
            start = k
    since = upto[start:]
    return Taint(
        private=any(cp.taint.private for cp in since),
        untrusted=any(cp.taint.untrusted for cp in since),
    )
