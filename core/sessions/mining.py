"""Mining a recorded conversation for the moments a person stepped in.

Pure on purpose: what counts as an intervention is the most consequential
judgement in the loop (a false intervention becomes a false lesson that rides
in every future prompt), so it lives in one function with direct tests. Three
kinds are found in transcripts, and a fourth arrives from the outbox:

- **steer** — a person's text riding in the same message as tool results: they
  reached in mid-run to redirect. Unambiguous.
- **denial** — a tool result that begins ``Denied by the user:``; a recorded
  refusal of a specific intent.
- **followup** — a later user turn. It *may* be a correction or just the next
  task; mining only flags it, and the reflector is told to skip freely. A
  turn stopped before any reply and sent again with more words is one.
- **edit** — a person changed a staged draft before it was sent. Never found
  in a transcript; built from an outbox item by :func:`edit_intervention`.

Several things are recorded in the user's voice that no person wrote, and
none of them may ever be mined: the harness's forced-answer nudge, other
harness notices (compaction summaries, task notices — configurable prefixes),
slash commands a front end recorded (``/model``), and machine refusals —
``Blocked by a hook: …`` and ``Blocked by policy: …`` are policy, not a
person, and ordinary tool errors are the environment. Learning from any of
those teaches the agent rules it was already obeying. Nor is a slash command
typed after a refusal that refusal's reason (`/exit` is the person leaving),
nor a turn that is only a pasted image (`says_something`): the image never
reaches a reflector, which would be asked to find a correction in "[image]".
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

import msgspec

from mecha.core.sessions.evidence import ContextPieces, cut_at_word, evidence_context, gather_context, head_and_tail
from mecha.core.sessions.evidence import context_sources as _sources
from mecha.core.sessions.outbox import OutboxItem, WritingOutcome
from mecha.core.sessions.transcript import IMAGE_PLACEHOLDER, Block, Message

#: The prefix the harness writes when a *person* refused a tool call. Hook and
#: policy refusals use other wording, and that wording is all that keeps them
#: apart.
DENIAL_PREFIX = "Denied by the user:"

#: How much of "what the assistant was doing" an intervention carries. Enough
#: to argue a lesson from, small enough to keep a reflector's prompt cheap.
CONTEXT_BUDGET = 600

#: The harness's own forced-answer nudge, used when no `finalAnswerNudge` is
#: configured. A harness whose text differs passes its own in
#: `initializationOptions.finalAnswerNudge`.
DEFAULT_FINAL_ANSWER_NUDGE = (
    "You have used all available turns. Stop calling tools and give your final answer now, "
    "based on what you have found so far."
)


#: What an attached document in a person's message becomes in the wire
#: transcript, as a picture becomes `transcript.IMAGE_PLACEHOLDER`: the
#: words beside it are kept, the attachment is marked. A turn of markers
#: alone says nothing a reflector could read (`says_something`).
DOCUMENT_PLACEHOLDER = "[document]"
_PLACEHOLDERS = (IMAGE_PLACEHOLDER, DOCUMENT_PLACEHOLDER)


def says_something(text: str) -> bool:
    """Whether `text` holds any words once attachment markers are taken
    out. An image pasted with no words is not an intervention: the image
    itself never reaches a reflector, so "[image]" alone would be mined as
    a correction with nothing in it."""
    for marker in _PLACEHOLDERS:
        text = text.replace(marker, " ")
    return any(c.isalnum() for c in text)


class Trigger(str, Enum):
    STEER = "steer"
    DENIAL = "denial"
    FOLLOWUP = "followup"
    EDIT = "edit"

    def as_str(self) -> str:
        return self.value

    def domain(self) -> str:
        """Edits teach the person's voice; everything else teaches behaviour."""
        return "writing" if self is Trigger.EDIT else "behavior"


class Intervention(msgspec.Struct, kw_only=True):
    """One moment in a transcript where a person stepped in."""

    trigger: Trigger
    #: What the assistant was doing at that point, compact.
    context: str
    #: What the person said, or the reason they gave for a denial.
    text: str
    #: What the assistant did next. Without it a reflector cannot tell a
    #: correction from a test the model passed.
    aftermath: str = ""
    #: Index of the message the intervention rides in: the key provenance
    #: classification looks up the covering taint with.
    at: int = 0
    #: Distinct tool names called in the last assistant message before `at`.
    tools_before: list[str] = msgspec.field(default_factory=list)
    #: Distinct tool names called in the first assistant message after `at`.
    tools_after: list[str] = msgspec.field(default_factory=list)


class Voices(msgspec.Struct, frozen=True):
    """Text recorded as a user turn that no person wrote.

    `final_answer_nudge` is matched exactly (after trimming); each of
    `harness_prefixes` as a prefix. Slash commands are always excluded.
    """

    final_answer_nudge: str = DEFAULT_FINAL_ANSWER_NUDGE
    harness_prefixes: tuple[str, ...] = ()

    def is_person(self, text: str) -> bool:
        if text == self.final_answer_nudge.strip():
            return False
        if text.startswith("/"):
            return False
        return not any(p and text.startswith(p) for p in self.harness_prefixes)


DEFAULT_VOICES = Voices()


def truncate(text: str, budget: int) -> str:
    """At most `budget` characters, cut at a word with an ellipsis when
    something was cut (`evidence.cut_at_word`)."""
    return cut_at_word(text, budget)


#: How much of the person's own words one reflection keeps, and one reflector
#: prompt carries — and how long the lesson a reflector writes may be
#: (`reflection.Reflector`: a 5 MB lesson was once stored whole and sent to
#: every learner prompt after it). The assistant's side is already held to `CONTEXT_BUDGET`;
#: the person's side had no bound, and a pasted 60 MB log became a 60 MB
#: reflection, entered the store's history and was sent whole to the learner.
#: Eight context budgets is far more than any correction a person types.
INTERVENTION_BUDGET = CONTEXT_BUDGET * 8


def bound_text(text: str, budget: int = INTERVENTION_BUDGET) -> str:
    """`text` if it fits `budget`, else its head and tail with the cut
    marked in the middle (`evidence.head_and_tail`): what a person pasted
    above their point is kept in part, and what they wrote after it (often
    the point itself) is kept too. The result never exceeds `budget`
    characters."""
    return head_and_tail(text, budget)


def _distinct_tool_names(message: Message) -> list[str]:
    return _distinct_names(message.tool_uses())


def _distinct_names(uses: Sequence[Block]) -> list[str]:
    names: list[str] = []
    for block in uses:
        if block.name and block.name not in names:
            names.append(block.name)
    return names


def _render_input(value: object) -> str:
    import json  # not at module level: the harness's cold path never renders one

    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def extract_interventions(
    messages: Sequence[Message], voices: Voices = DEFAULT_VOICES
) -> list[Intervention]:
    """Every intervention in a recorded conversation, in order.

    The first user turn is the task, never an intervention. Tool-result
    messages are the harness speaking, except for text riding beside the
    results, which is the person steering.
    """
    miner = _Miner(voices)
    for index, message in enumerate(messages):
        if message.role == "assistant":
            miner.assistant(message)
        else:
            miner.person(index, message)
    _fill_context(miner.found, messages)
    _fill_aftermath(miner.found, messages)
    return miner.found


class _Miner:
    """The walk `extract_interventions` makes, one message at a time. A
    steer's or a denial's context is chosen afterwards (`_fill_context`),
    from the messages before it: most interventions' turns are never
    rendered at all."""

    def __init__(self, voices: Voices) -> None:
        self.voices = voices
        self.found: list[Intervention] = []
        self.last_assistant_text = ""
        self.seen_task = False
        # The tool calls of the last assistant message (`tools_before`).
        self.last_uses: Sequence[Block] = ()
        # Whether the last message was a follow-up no assistant message has
        # answered yet: the person stopped the turn before any reply and
        # typed again. When the new words hold the old ones (sent again,
        # added to), the model answered them once, as one turn, and they
        # are one follow-up — the later words — not two moments asking a
        # reflector twice about one reply. Words that differ stay their own.
        self.unanswered = False

    def assistant(self, message: Message) -> None:
        self.unanswered = False
        text = message.text().strip()
        if text:
            self.last_assistant_text = text
        self.last_uses = message.tool_uses()

    def person(self, index: int, message: Message) -> None:
        steer_parts: list[str] = []
        has_results = False
        for block in message.blocks():
            if block.type == "tool_result":
                has_results = True
                content = block.content or ""
                if block.is_error and content.startswith(DENIAL_PREFIX):
                    reason = content[len(DENIAL_PREFIX) :].strip()
                    # A slash command typed after a refusal (`/exit`) is the
                    # person leaving, not their reason.
                    if reason and not self.voices.is_person(reason):
                        reason = ""
                    self._add(Trigger.DENIAL, "", reason, index)
            elif block.type == "text":
                steer_parts.append(block.text or "")
        said = "".join(steer_parts).strip()
        unanswered, self.unanswered = self.unanswered, False
        if has_results:
            if said and self.voices.is_person(said) and says_something(said):
                self._add(Trigger.STEER, "", said, index)
        elif said:
            if self.seen_task and self.last_assistant_text and self.voices.is_person(said) and says_something(said):
                if unanswered and _flat(self.found[-1].text) in _flat(said):
                    self.found.pop()  # taken back unanswered and sent again, grown: one moment
                self._add(Trigger.FOLLOWUP, truncate(self.last_assistant_text, CONTEXT_BUDGET), said, index)
                self.unanswered = True
            self.seen_task = True

    def _add(self, trigger: Trigger, context: str, text: str, at: int) -> None:
        self.found.append(
            Intervention(trigger=trigger, context=context, text=text, at=at, tools_before=_distinct_names(self.last_uses))
        )


def _flat(text: str) -> str:
    """`text` with its runs of whitespace made single spaces."""
    return " ".join(text.split())


def _fill_context(found: list[Intervention], messages: Sequence[Message]) -> None:
    """Each steer's and denial's context, chosen within `CONTEXT_BUDGET` by
    `evidence.evidence_context`. A follow-up's is the assistant's last text,
    set as it was found."""
    for intervention in found:
        if intervention.trigger in (Trigger.STEER, Trigger.DENIAL):
            intervention.context = evidence_context(_pieces(messages, intervention), intervention.trigger.value, CONTEXT_BUDGET)


def _pieces(messages: Sequence[Message], intervention: Intervention) -> ContextPieces:
    return gather_context(
        messages,
        intervention.at,
        denial_prefix=DENIAL_PREFIX,
        denial=intervention.trigger is Trigger.DENIAL,
        reason=intervention.text,
    )


def _fill_aftermath(found: list[Intervention], messages: Sequence[Message]) -> None:
    """What the assistant did after each intervention: the first assistant
    text after it, and the tools of the first assistant message after it."""
    for intervention in found:
        first_after = True
        for i in range(intervention.at + 1, len(messages)):  # no slice: a copy per intervention
            message = messages[i]
            if message.role != "assistant":
                continue
            if first_after:
                intervention.tools_after = _distinct_tool_names(message)
                first_after = False
            text = message.text().strip()
            if text:
                intervention.aftermath = truncate(text, CONTEXT_BUDGET)
                break


def context_sources(messages: Sequence[Message], intervention: Intervention) -> list[int]:
    """The indices of the assistant messages an intervention's `context`
    quotes, oldest first; empty when it quotes none (the start of the task).

    A follow-up quotes the last assistant message with text; a steer or a
    denial, the messages `evidence.gather_context` chose from — its call,
    the turn's last claim and its other calls. Provenance needs them all:
    when those words were written decides whether a reflector may see them.
    """
    if intervention.trigger in (Trigger.STEER, Trigger.DENIAL):
        return _sources(_pieces(messages, intervention))
    for j in range(min(intervention.at, len(messages)) - 1, -1, -1):
        message = messages[j]
        if message.role == "assistant" and message.text().strip():
            return [j]
    return []


def context_source(messages: Sequence[Message], intervention: Intervention) -> int | None:
    """The latest message an intervention's `context` quotes
    (`context_sources`), or `None` when it quotes none."""
    sources = context_sources(messages, intervention)
    return sources[-1] if sources else None


def locate_followup(messages: Sequence[Message], text: str) -> int | None:
    """Index of the user turn carrying exactly `text` (trimmed), or `None`.

    The conversation before that index is the prefix a counterfactual probe
    replays. A tool-results message never matches, even when steering text
    rides in it: a steer has no clean cut point. Exact matching on purpose —
    the text was extracted from these very messages.
    """
    wanted = text.strip()
    for index, message in enumerate(messages):
        if message.role == "user" and not message.has_tool_results():
            if message.text().strip() == wanted:
                return index
    return None


def _draft_text(args: object) -> str:
    """The human-readable body of a draft's arguments: a string as is, an
    object as one `key: value` line per field (subject and body first, the
    rest by name, non-string values as JSON), anything else as JSON."""
    if isinstance(args, str):
        return args
    if isinstance(args, dict):
        preferred = [k for k in ("subject", "body_markdown", "body", "text") if k in args]
        rest = sorted(k for k in args if k not in preferred)
        lines = []
        for key in preferred + rest:
            value = args[key]
            lines.append(f"{key}: {value if isinstance(value, str) else _render_input(value)}")
        return "\n".join(lines)
    return _render_input(args)


def edit_intervention(item: OutboxItem) -> Intervention | None:
    """A sent-and-edited message draft as an `edit` intervention, else `None`.

    The context is what the assistant staged; the text is what the person
    actually sent. Anything else an item can say (sent unchanged, pending,
    rejected, a publish) teaches nothing about the person's voice — and
    neither does an item with no staged arguments recorded: with nothing to
    compare against, the whole sent message would be read as "the edit".
    """
    if item.writing_outcome() is not WritingOutcome.SENT_EDITED or item.args_before is None:
        return None
    return Intervention(
        trigger=Trigger.EDIT,
        context=truncate(_draft_text(item.args_before), CONTEXT_BUDGET * 4),
        text=truncate(_draft_text(item.args), CONTEXT_BUDGET * 4),
        at=0,
    )
