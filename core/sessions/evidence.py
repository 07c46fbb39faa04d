"""What fills a steer's or a denial's 600 characters of context.

The reflector sees an intervention through three windows: what the assistant
was doing, what the person said, and what the assistant did next. The first
is held to `mining.CONTEXT_BUDGET` characters, and what goes into them
decides what the reflector can know. The seeds filled them with the last
assistant message: its text cut at half the budget, then each tool call as
its JSON input cut at 120 characters. Read by a capable model over sixty
real interventions, that showed the wrong 600 characters:

- the refused call cut mid-argument (`nvcc -I/usr/local/cuda-12.6/targets/x86_64-l…`),
  so the reflector could not say what was refused;
- the claim the person reacted to ("there is no matrix multiplication
  function") was in an earlier message than the last one, which held only a
  tool call, so it was not shown at all;
- a steer arrived beside a `TodoWrite` call, and its context was that call's
  JSON blob.

Six of 38 verdicts changed once the right evidence was shown. So the budget
is spent in order of what a reflector needs, by `evidence_context`:

1. **the call the intervention is about**, whole — the refused call of a
   denial, the call a steer arrived beside — rendered as a person would read
   it (`Bash: make test`, `Edit src/a.py: "x" → "y"`), never as JSON, and cut
   only when it alone would not fit;
2. **the assistant's last claim** before the intervention: its last words in
   the turn, from whichever message held them, head and tail kept when long
   (`head_and_tail`);
3. **what the assistant was doing**: the turn's other calls, most recent
   first, each whole on its own line or left out with a count.

The pieces are laid out in the order they happened. A follow-up keeps the
seeds' context (the assistant's last text): it answers a finished turn, and
that text is the claim. The aftermath stays as the seeds define it.

Pure: messages in, text out. `context_sources` names the messages the text
quotes, so provenance can withhold it when any was written under untrusted
taint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from mecha.core.sessions.transcript import Block, Message

#: How far back from an intervention the walk looks for the turn's claim and
#: calls. A turn of thousands of tool calls is read no further than this:
#: nothing that far back fits the budget, and a walk per intervention over a
#: whole long session would cost a pass over it for each one.
LOOKBACK_MESSAGES = 400
#: At most this many of the turn's other calls are considered (the budget
#: holds a handful at most).
MAX_OTHER_CALLS = 12
#: One other call's line is held to this many characters, so a single long
#: call cannot crowd out the rest of what the assistant was doing.
OTHER_CALL_BUDGET = 160
#: What the claim leaves for the other calls when there are some: a call or
#: two still shows what the assistant was doing beside a long claim.
CALLS_RESERVE = 140
#: The least room worth giving a claim; below it, a claim cut to a few words
#: misleads more than it tells.
MIN_CLAIM = 40
#: How much of what a call writes (a file's content, an edit's strings) its
#: line quotes: the path and the shape of the change are the point, and a
#: refused 166-line file must not crowd out the claim beside it.
QUOTE_BUDGET = 180

FOCUS_LABEL = {"denial": "Refused call: ", "steer": "Its last call: "}
CLAIM_LABEL = "It said: "
CALL_LABEL = "It called: "
#: What `cut_at_word` ends a cut text with.
CUT_MARK = "…"


def focus_line(context: str, trigger: str) -> str | None:
    """The call an intervention's `context` is about, as `render_call`
    wrote it after its label (`Bash: git push origin main`), or `None`
    when the context shows none. The last such line: the call is the
    latest thing the context quotes, and a claim quoted before it cannot
    stand in for it."""
    label = FOCUS_LABEL.get(trigger)
    if label is None:
        return None
    found = [line[len(label):] for line in context.split("\n") if line.startswith(label)]
    return found[-1] if found and found[-1].strip() else None


class ContextPieces(msgspec.Struct, kw_only=True):
    """What an intervention's context may quote, with where each came from."""

    #: The assistant's last words in the turn before the intervention, and
    #: the index of the message that holds them.
    claim: str = ""
    claim_at: int | None = None
    #: The call the intervention is about, and its message's index.
    focus: Block | None = None
    focus_at: int | None = None
    #: The turn's other calls, oldest first, each with its message's index.
    calls: list[tuple[int, Block]] = msgspec.field(default_factory=list)


# ─── Rendering one call ─────────────────────────────────────────────────────


def _s(value: Any) -> str | None:
    return value if isinstance(value, str) else None


#: How far back from a cut `cut_at_word` looks for a space to cut at,
#: beyond which a word is cut rather than lose this much of the text.
WORD_CUT_WINDOW = 24


def _word_end(text: str, at: int) -> int:
    """Where to end a head of `text` cut near `at`: the last space within
    `WORD_CUT_WINDOW` before it (and in its last third), else `at` itself
    (a run with no space)."""
    space = text.rfind(" ", max(at - WORD_CUT_WINDOW, at * 2 // 3, 0), at + 1)
    return space if space > 0 else at


def _word_start(text: str, at: int) -> int:
    """Where to start a tail of `text` cut near `at`: just after the first
    space within `WORD_CUT_WINDOW` after it, else `at` itself."""
    if at <= 0 or text[at - 1].isspace():
        return at
    space = text.find(" ", at, at + WORD_CUT_WINDOW)
    return space + 1 if space >= 0 else at


def cut_at_word(text: str, limit: int) -> str:
    """`text` if it fits `limit` characters, else its head cut at a word
    with "…" after it (never more than `limit` characters): "I see th…"
    read as a typo, "I see…" as a cut."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    return text[: _word_end(text, limit - 1)].rstrip() + CUT_MARK


_cut = cut_at_word


def _one_line(text: str, limit: int | None = None) -> str:
    """`text` on one line, its runs of spaces and newlines made one space.
    With `limit`, only as much of it is read as could show in that many
    characters (a megabyte heredoc is not split whole to show a line)."""
    if limit is not None and len(text) > 4 * limit + 64:
        text = text[: 4 * limit + 64]
    return " ".join(text.split())


def _quoted(text: str, limit: int) -> str:
    return '"' + _cut(_one_line(text, limit), max(limit - 2, 1)) + '"'


def _todo_line(todos: Any) -> str | None:
    """A todo list as what is in progress and what comes next."""
    if not isinstance(todos, list):
        return None
    doing, pending, done = [], [], 0
    for t in todos:
        if not isinstance(t, dict):
            continue
        content = _s(t.get("content")) or _s(t.get("activeForm")) or ""
        status = t.get("status")
        if status == "in_progress":
            doing.append(content)
        elif status == "completed":
            done += 1
        else:
            pending.append(content)
    parts = []
    if doing:
        parts.append("doing " + "; ".join(f'"{_one_line(d)}"' for d in doing))
    if pending:
        parts.append("next " + f'"{_one_line(pending[0])}"' + (f" and {len(pending) - 1} more" if len(pending) > 1 else ""))
    if done:
        parts.append(f"{done} done")
    return ", ".join(parts) if parts else "an empty list"


_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "fish", "pwsh", "powershell", "cmd", "cmd.exe"})


def _command_text(value: Any) -> str | None:
    """A command as it would be typed: a string as is; an argument list (as
    Codex records one) joined, or the script of a `bash -lc SCRIPT`."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        return None
    program = value[0].rsplit("/", 1)[-1]
    if program in _SHELLS and len(value) >= 3 and value[-2] in ("-c", "-lc", "-ic", "/c", "-Command"):
        return str(value[-1])
    import shlex

    return shlex.join(value)


def command_of(call_input: Any) -> str | None:
    """The command line a shell call ran (`command` or `cmd`, a string or
    an argument list, `_command_text`), or `None`."""
    if not isinstance(call_input, dict):
        return None
    return _command_text(call_input.get("command")) or _command_text(call_input.get("cmd"))


def _questions_line(questions: Any) -> str:
    """The questions an AskUserQuestion call put to the person, in order."""
    if not isinstance(questions, list):
        return "a question"
    texts = [_one_line(q["question"]) for q in questions if isinstance(q, dict) and isinstance(q.get("question"), str)]
    return " ".join(f'"{t}"' for t in texts) if texts else "a question"


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _one_line(value)
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return f"[{len(value)} item(s)]"
    if isinstance(value, dict):
        return f"{{{len(value)} field(s)}}"
    return str(value)


def render_call(call: Block, limit: int = 10_000) -> str:
    """One tool call as a person reads it: the tool and what it acts on (the
    command, the path, the pattern), never its JSON. Within `limit`
    characters, cutting what matters least first: an edit's strings before
    its path, a command only when it alone does not fit."""
    name = call.name or "tool"
    args = call.input if isinstance(call.input, dict) else {}
    command = _command_text(args.get("command")) or _command_text(args.get("cmd"))
    path = _s(args.get("file_path")) or _s(args.get("path")) or _s(args.get("notebook_path"))
    if command is not None:
        return _cut(f"{name}: {_one_line(command, limit)}", limit)
    if name in ("Edit", "MultiEdit", "NotebookEdit", "str_replace_based_edit_tool") or (
        "old_string" in args and path is not None
    ):
        return _render_edit(name, path or "?", args, limit)
    if name == "Write" and path is not None:
        content = _s(args.get("content")) or ""
        lines = content.count("\n") + (0 if content.endswith("\n") else 1) if content else 0
        head = f"{name} {path} ({lines} lines)"
        room = min(limit - len(head) - 2, QUOTE_BUDGET)
        return head + (f": {_quoted(content, room)}" if content and room >= 12 else "") if len(head) <= limit else _cut(head, limit)
    if name == "TodoWrite":
        return _cut(f"{name}: {_todo_line(args.get('todos'))}", limit)
    if name == "AskUserQuestion":
        return _cut(f"{name}: {_questions_line(args.get('questions'))}", limit)
    if name == "Grep":
        pattern = _s(args.get("pattern")) or ""
        where = f" in {path}" if path else ""
        return _cut(f'{name} "{_one_line(pattern, limit)}"{where}', limit)
    for key in ("url", "query", "pattern", "description", "prompt", "skill", "question"):
        value = _s(args.get(key))
        if value:
            text = f"{name}: {_one_line(value, limit)}" if path is None else f"{name} {path}: {_one_line(value, limit)}"
            return _cut(text, limit)
    if path is not None:
        return _cut(f"{name} {path}", limit)
    if not args:
        return _cut(name, limit)
    fields = " ".join(f"{k}={_scalar(v)}" for k, v in args.items())
    return _cut(f"{name} {fields}", limit)


def _render_edit(name: str, path: str, args: dict[str, Any], limit: int) -> str:
    head = f"{name} {path}"
    old, new = _s(args.get("old_string")), _s(args.get("new_string"))
    if old is None and new is None:
        edits = args.get("edits")
        if isinstance(edits, list) and edits:
            first = edits[0] if isinstance(edits[0], dict) else {}
            old, new = _s(first.get("old_string")), _s(first.get("new_string"))
            head += f" ({len(edits)} edit(s))"
        else:
            source = _s(args.get("new_source"))
            return _cut(head + (f": {_quoted(source, limit - len(head) - 2)}" if source else ""), limit)
    if len(head) >= limit:
        return _cut(head, limit)
    room = min(limit - len(head) - len(": ") - len(" → "), 2 * QUOTE_BUDGET)
    if room < 12:
        return head
    half = room // 2
    old_text, new_text = _one_line(old or "", room), _one_line(new or "", room)
    # Whichever string is short gives the other its room.
    if len(old_text) + 2 < half:
        new_room = room - len(old_text) - 2
        old_room = len(old_text) + 2
    elif len(new_text) + 2 < half:
        old_room = room - len(new_text) - 2
        new_room = len(new_text) + 2
    else:
        old_room, new_room = half, room - half
    return f"{head}: {_quoted(old_text, old_room)} → {_quoted(new_text, new_room)}"


# ─── Gathering the pieces ───────────────────────────────────────────────────


def _denied_call(results: Message, uses: dict[str, Block], reason: str, denial_prefix: str) -> Block | None:
    """The call a denial in `results` refused: the one whose result carries
    `reason`, else the first denial's."""
    first: Block | None = None
    for block in results.blocks():
        if block.type != "tool_result" or not block.is_error:
            continue
        content = block.content or ""
        if not content.startswith(denial_prefix):
            continue
        call = uses.get(block.tool_use_id or "")
        if call is None:
            continue
        if content[len(denial_prefix) :].strip() == reason:
            return call
        if first is None:
            first = call
    return first


def gather_context(
    messages: Sequence[Message], at: int, *, denial_prefix: str, denial: bool, reason: str = ""
) -> ContextPieces:
    """The pieces a steer's or a denial's context may quote: the turn's last
    claim, the call the intervention is about, and the turn's other calls.

    The turn is everything since the person last spoke (a user message with
    no tool results), read back from `at` no further than
    `LOOKBACK_MESSAGES`. A denial's call is the one its result refused; a
    steer's, the last call before it.
    """
    pieces = ContextPieces()
    others: list[tuple[int, Block]] = []
    focus_id: str | None = None
    if denial and 0 <= at < len(messages):
        # Calls by id, from the assistant messages just before the results.
        uses: dict[str, Block] = {}
        for j in range(at - 1, max(-1, at - 1 - LOOKBACK_MESSAGES), -1):
            m = messages[j]
            if m.role == "assistant":
                for u in m.tool_uses():
                    if u.id:
                        uses.setdefault(u.id, u)
                break
        found = _denied_call(messages[at], uses, reason, denial_prefix)
        focus_id = found.id if found is not None else None
    stop = max(-1, min(at, len(messages)) - 1 - LOOKBACK_MESSAGES)
    for j in range(min(at, len(messages)) - 1, stop, -1):
        m = messages[j]
        if m.role == "user":
            if m.has_tool_results():
                continue
            break  # the person spoke: the turn began here
        uses_here = m.tool_uses()
        for u in reversed(uses_here):
            if pieces.focus is None and (focus_id is None or u.id == focus_id):
                pieces.focus, pieces.focus_at = u, j
            elif len(others) < MAX_OTHER_CALLS:
                others.append((j, u))
        if not pieces.claim:
            text = m.text().strip()
            if text:
                pieces.claim, pieces.claim_at = text, j
        if pieces.claim and pieces.focus is not None and len(others) >= MAX_OTHER_CALLS:
            break
    others.reverse()
    pieces.calls = others
    return pieces


# ─── Filling the budget ─────────────────────────────────────────────────────


#: From how many characters cut `head_and_tail` says how many: a paste of
#: a log or a file is worth knowing the size of; a sentence cut short is
#: not, and "[… 183 characters cut …]" in the middle of one only gets in
#: the way of reading it.
COUNT_CUT_FROM = 1000


def head_and_tail(text: str, budget: int) -> str:
    """`text` if it fits `budget`, else its head and tail with the cut
    marked in the middle: what comes first (often the point) and what comes
    last (often where it led) are both kept, each cut at a word. The mark
    is " … ", and names the characters cut when they are `COUNT_CUT_FROM`
    or more. Never more than `budget` characters."""
    if len(text) <= budget:
        return text
    keep = budget
    marker = " … "
    for _ in range(3):  # the marker's length depends on the count it states
        cut = len(text) - keep
        marker = f"\n[… {cut:,} characters cut …]\n" if cut >= COUNT_CUT_FROM else " … "
        keep = max(budget - len(marker), 0)
    if keep < 2 * WORD_CUT_WINDOW:
        head = keep * 2 // 3
        tail = keep - head
        return text[:head] + marker + (text[len(text) - tail :] if tail else "")
    head_end = _word_end(text, keep * 2 // 3)
    tail_start = _word_start(text, len(text) - (keep - head_end))
    return text[:head_end].rstrip() + marker + text[tail_start:].lstrip()


def evidence_context(pieces: ContextPieces, trigger: str, budget: int) -> str:
    """The context text for a steer or a denial, within `budget` characters:
    the call the intervention is about whole, then the assistant's last
    claim, then as many of the turn's other calls as fit (most recent
    first), laid out in the order they happened."""
    lines: list[tuple[int, int, str]] = []  # (message index, order within it, line)
    room = budget
    if pieces.focus is not None:
        label = FOCUS_LABEL.get(trigger, "Its last call: ")
        line = label + render_call(pieces.focus, room - len(label))
        lines.append((pieces.focus_at or 0, 2, line))
        room -= len(line) + 1
    if pieces.claim and room >= MIN_CLAIM + len(CLAIM_LABEL):
        reserve = min(CALLS_RESERVE, room // 3) if pieces.calls else 0
        claim_room = room - reserve - len(CLAIM_LABEL)
        claim = head_and_tail(pieces.claim, claim_room)
        lines.append((pieces.claim_at or 0, 0, CLAIM_LABEL + claim))
        room -= len(CLAIM_LABEL) + len(claim) + 1
    left_out = 0
    for index, call in reversed(pieces.calls):
        # Each whole (to its own cap), or left out and counted: a call cut
        # to a stub ("Bash: fin…") says nothing and costs the room.
        if left_out or room <= len(CALL_LABEL) + 8:
            left_out += 1
            continue
        rendered = render_call(call, OTHER_CALL_BUDGET)
        if len(CALL_LABEL) + len(rendered) + 1 > room:
            left_out += 1
            continue
        lines.append((index, 1, CALL_LABEL + rendered))
        room -= len(CALL_LABEL) + len(rendered) + 1
    lines.sort(key=lambda item: (item[0], item[1]))
    text = "\n".join(line for _, _, line in lines)
    if left_out and len(text) + 40 <= budget:
        text = f"(and {left_out} earlier call(s))\n" + text
    return text[:budget] if len(text) > budget else text


def context_sources(pieces: ContextPieces) -> list[int]:
    """The indices of the messages a context built from `pieces` may quote."""
    found = {i for i, _ in pieces.calls}
    if pieces.claim_at is not None:
        found.add(pieces.claim_at)
    if pieces.focus_at is not None:
        found.add(pieces.focus_at)
    return sorted(found)
