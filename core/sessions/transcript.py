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

A `tool_result`'s `content` is a string, or — the Anthropic Messages API's
own shape, which a harness mirroring those types sends — a list of blocks:
text blocks, and images. Such a list is read as its text when the block is
decoded (an image as `[image]`, as every session reader marks one), so
everything downstream sees one string, as before. Inside a tool result the
reading is strict where the message level is lenient: a block of another
type there is refused by name (a message's unknown block is only ignored
because it carries nothing the miner reads; a result's block *is* what the
miner reads, and dropping it would turn an error the person saw into
silence).

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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

import msgspec

Role = Literal["user", "assistant"]

#: What a picture becomes in the wire transcript, in every reader (a tool
#: result's image block here, a person's image in the session readers): the
#: words beside it are kept, the image is marked.
IMAGE_PLACEHOLDER = "[image]"

#: The block types a tool result's content list may hold (the Anthropic
#: shape): read by `result_text`, refused otherwise by `Block`.
RESULT_PART_TYPES = ("text", "image")


class ResultPartLike(Protocol):
    @property
    def type(self) -> str: ...

    @property
    def text(self) -> str | None: ...


class ResultPart(msgspec.Struct):
    """One block of a tool result's content list. Only `type` and `text` are
    read; an image's `source` (its bytes, base64) is skipped unread."""

    type: str
    text: str | None = None


def result_text(parts: Sequence[ResultPartLike]) -> str:
    """A tool result's content blocks as the one string the miner reads:
    the texts, and `[image]` for each image, a line each; other types add
    nothing (`Block` refuses them on the wire before this is reached)."""
    out: list[str] = []
    for part in parts:
        if part.type == "text" and part.text:
            out.append(part.text)
        elif part.type == "image":
            out.append(IMAGE_PLACEHOLDER)
    return "\n".join(out)


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
    if TYPE_CHECKING:
        # After `__post_init__`, always a string or `None`.
        content: str | None = None
    else:
        content: str | list[ResultPart] | None = None
    is_error: bool = False

    def __post_init__(self) -> None:
        # Runs on decode and on construction alike, so no reader ever sees
        # a list here. A ValueError becomes the decoder's -32602, with the
        # block's JSON path.
        content: Any = self.content
        if isinstance(content, list):
            for k, part in enumerate(content):
                if part.type not in RESULT_PART_TYPES:
                    raise ValueError(
                        f"a tool_result's content[{k}] is a block of type {part.type!r}, which is not read; "
                        f"send a string, or a list of {' and '.join(RESULT_PART_TYPES)} blocks"
                    )
            self.content = result_text(content)

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
