"""Which call a rule learned from refusals makes the agent ask before.

A person who refused `git push origin main` three times has said the
clearest thing a session can say, and the agents have an enforced place
for it: Claude Code's `permissions.ask`, Codex's command rules
(`agents.permissions` writes both). A learned rule may carry such an ask
(`Rule.ask`) — decided here, by code, from what was refused, never by the
model that wrote the rule's words: a model may word a rule however it
likes, but the pattern the agent enforces is read off the refused calls
themselves.

`derived_ask` is the one decision, and it fails closed at every step; a
rule gets an ask only when all of these hold:

- every lesson the rule cites is a denial whose refused call its context
  shows (`evidence.focus_line`) — a rule resting on a steer or a
  follow-up too says more than "not that call";
- for shell calls: no refused command is compound (`&&`, `||`, `|`, `;`,
  `&`, `$(`, backticks, redirections — an ask on a pipeline's first half,
  `curl … | sh`, would ask before every plain `curl` of that address
  while the refusal was of running what it fetched) or cut short in the
  context; the commands share a prefix of at least `MIN_PREFIX_WORDS`
  words (`git push origin main` and `git push origin main --force`
  share `git push origin main`; `git push` and `npm publish` share
  nothing), every word of it plain (no quotes, globs or expansions), and
  its program is not an assignment (`FOO=1 git …`);
- for any other tool: every refused call was that one tool;
- the rule's own words name the program (`git`) or the tool
  (`WebFetch`): the person reads the rule, not the pattern, and an ask
  the rule never mentions would be enforcement they did not see coming.
  A person's edit of the words is held to the same test
  (`asks_kept_by`).

Only ever an *ask*: a learned rule may make the agent stop and check,
never let it do more (allow) or lock the person out (deny).

Once accepted, each time the ask asks is counted on the rule's record,
from the session files the hooks and `import` read anyway (`asked_in`):
a call after the accept, in a session of the rule's scope, that matches
its pattern is one the agent asked about, and its result says what the
person did — it ran, the person refused it (`mining.DENIAL_PREFIX`, as
the readers spell a person's refusal), or nobody answered (a headless run
reports the call denied for want of a permission). Read off the
transcript, never asked of a model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

import msgspec

from mecha.core.domain.record import Asked
from mecha.core.domain.reflexion import Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.sessions.evidence import CUT_MARK, command_of, focus_line
from mecha.core.sessions.mining import DENIAL_PREFIX
from mecha.core.sessions.transcript import Block, Message
from mecha.core.sessions.trust import SHELL_SPELLING, SHELL_TOOLS

#: The trigger of a refused call's lesson (`mining.Trigger.DENIAL`).
DENIAL = "denial"
#: The fewest words a shell prefix may have: one word (`git`) would ask
#: before every use of a program for one refused subcommand.
MIN_PREFIX_WORDS = 2
#: The agents' shell tools, whose refused call is a command line;
#: `write_stdin` types into a running process and names no command.
SHELL_CALLS = frozenset({SHELL_SPELLING, *SHELL_TOOLS} - {"write_stdin"})
#: A word a prefix may hold: no shell operator, redirection, substitution,
#: quote, glob or expansion can be spelled with these characters.
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")
#: A tool's name at the start of a rendered call (`WebFetch: …`, `Edit a.py: …`).
_TOOL = re.compile(r"([A-Za-z0-9_.-]+)(?::\s|\s|$)")


def refused_call(lesson: Reflexion) -> tuple[str, str] | None:
    """The call a denial's lesson was about, as `(tool, what)` — for a
    shell tool `what` is the command line (a cut one ending in
    `evidence.CUT_MARK`) — or `None` when the lesson is no denial or its
    context shows no refused call."""
    if lesson.trigger != DENIAL:
        return None
    line = focus_line(lesson.context, DENIAL)
    if line is None:
        return None
    found = _TOOL.match(line)
    if found is None:
        return None
    tool = found.group(1)
    return tool, line[found.end():].strip()


#: What makes a command line more than one program's call: control
#: operators, pipes, substitutions, redirections.
_COMPOUND = re.compile(r"&&|\|\||[|;&`<>]|\$\(")


def command_words(command: str) -> list[str] | None:
    """A refused command's words, or `None` when no prefix of it can say
    what was refused: a compound line (`curl … | sh`, `cd x && git push`,
    `make > log` — the refusal may have been of any part of it, and a
    prefix of the first part would ask before that part alone) or one
    the context cut (`evidence.CUT_MARK`: what was cut may be such a part)."""
    if command.endswith(CUT_MARK) or _COMPOUND.search(command):
        return None
    return command.split()


def common_prefix(commands: Sequence[Sequence[str]]) -> list[str]:
    """The words every command in `commands` starts with."""
    if not commands:
        return []
    out: list[str] = []
    for words in zip(*commands, strict=False):
        if any(w != words[0] for w in words):
            break
        out.append(words[0])
    return out


def plain_prefix(words: Sequence[str]) -> bool:
    """Whether a prefix can be an ask pattern as it stands: long enough,
    every word plain (`_PLAIN_WORD`), its program no assignment."""
    return (
        len(words) >= MIN_PREFIX_WORDS
        and all(_PLAIN_WORD.fullmatch(w) for w in words)
        and "=" not in words[0]
    )


def names(text: str, word: str) -> bool:
    """Whether `text` names `word` as a word of its own (any case; `git`
    in "run `git push`" but not in "digit")."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.IGNORECASE) is not None


def ask_subject(pattern: str) -> str | None:
    """What a rule's words must name for its ask `pattern` to stand: a
    shell prefix's program (`Bash(git push origin main:*)` → `git`, a
    path's last part), or the tool (`WebFetch`)."""
    if pattern.startswith(f"{SHELL_SPELLING}(") and pattern.endswith(":*)"):
        words = pattern[len(SHELL_SPELLING) + 1 : -3].split()
        return words[0].rsplit("/", 1)[-1] if words else None
    return pattern or None


def shell_prefix(pattern: str) -> list[str] | None:
    """The words of a shell ask pattern (`Bash(git push:*)` → `git push`),
    or `None` for a tool's."""
    if pattern.startswith(f"{SHELL_SPELLING}(") and pattern.endswith(":*)"):
        return pattern[len(SHELL_SPELLING) + 1 : -3].split()
    return None


def derived_ask(text: str, lessons: Sequence[Reflexion]) -> str | None:
    """The ask pattern a rule worded `text`, resting on `lessons`, carries
    (`Bash(git push origin main:*)`, `WebFetch`), or `None` — see the
    module docstring for every condition."""
    calls = [refused_call(r) for r in lessons]
    if not calls or any(c is None for c in calls):
        return None
    tools = {c[0] for c in calls if c is not None}
    if tools <= SHELL_CALLS:
        commands = [command_words(c[1]) for c in calls if c is not None]
        if any(words is None for words in commands):
            return None
        prefix = common_prefix([words for words in commands if words is not None])
        if not plain_prefix(prefix):
            return None
        pattern = f"{SHELL_SPELLING}({' '.join(prefix)}:*)"
    elif len(tools) == 1 and next(iter(tools)).replace("_", "").isalnum():
        pattern = next(iter(tools))
    else:
        return None
    subject = ask_subject(pattern)
    return pattern if subject is not None and names(text, subject) else None


def asks_kept_by(text: str, asks: Iterable[str]) -> tuple[list[str], list[str]]:
    """Of a rule's `asks`, those its words `text` still name, and those
    they no longer do (a person's edit took the program's name out)."""
    kept: list[str] = []
    dropped: list[str] = []
    for a in asks:
        subject = ask_subject(a)
        (kept if subject is not None and names(text, subject) else dropped).append(a)
    return kept, dropped


def with_derived_asks(rules: Sequence[Rule], before: Sequence[Rule], lessons: Mapping[str, Reflexion]) -> list[Rule]:
    """A learn pass's `rules` with an ask on each rule new to the scope
    (no rule of `before` has its id) that `derived_ask` gives one, from
    the lessons it cites (`lessons`, by id; a source not there is no
    refusal this pass can read, and the rule gets none). A rule already
    live keeps whatever ask it carries: the person accepted it so."""
    live = {r.id for r in before if r.id is not None}
    out = []
    for rule in rules:
        if rule.id in live or rule.ask or not rule.sources or rule.retired_at is not None:
            out.append(rule)
            continue
        cited = [lessons.get(s) for s in rule.sources]
        found = None if any(c is None for c in cited) else derived_ask(rule.text, [c for c in cited if c is not None])
        out.append(msgspec.structs.replace(rule, ask=[found]) if found else rule)
    return out


# ─── counting each time an ask asked ────────────────────────────────────────


class LiveAsk(msgspec.Struct, frozen=True):
    """A live rule's ask, where it applies and since when."""

    rule_id: str
    pattern: str
    #: The rule's project (its root), or `None`: a global rule, every session.
    project: str | None
    #: When it went live (`record.accepted_at`); `None`: not recorded.
    since: str | None


#: Outcomes of a call an ask asked about (`domain.record.Asked.outcome`).
RAN, REFUSED, NOT_RUN = "ran", "refused", "not_run"
#: What a headless run writes as the result of a call it did not run for
#: want of a permission nobody could grant (Claude Code 2.1.328, `claude -p`).
_NO_PERMISSION = ("requested permissions", "haven't granted", "permission to use")
#: How Codex's output of such a call begins and what it says (0.169,
#: `codex exec`, where a command rule's "prompt" can ask nobody); Codex
#: marks no output an error, so the words alone tell it from a run.
_CODEX_NOT_RUN = ("exec_command failed:", "approval required by policy")


def call_matches(pattern: str, tool: str | None, call_input: object) -> bool:
    """Whether a call (`tool` with `call_input`) is one `pattern` asks
    before: a shell call whose command starts with the pattern's words, or
    a call of the pattern's tool."""
    words = shell_prefix(pattern)
    if words is None:
        return tool == pattern
    if tool not in SHELL_CALLS:
        return False
    command = command_of(call_input)
    return command is not None and command.split()[: len(words)] == words


def call_outcome(result: Block) -> str:
    """What became of a call that asked, by its result."""
    content = result.content if isinstance(result.content, str) else ""
    if result.is_error and content.startswith(DENIAL_PREFIX):
        return REFUSED
    if result.is_error and any(marker in content for marker in _NO_PERMISSION):
        return NOT_RUN
    if content.startswith(_CODEX_NOT_RUN[0]) and _CODEX_NOT_RUN[1] in content:
        return NOT_RUN
    return RAN


def asked_in(
    messages: Sequence[Message], time_at: Callable[[int], str | None], session_id: str, project: str | None,
    asks: Iterable[LiveAsk],
) -> list[Asked]:
    """Every call of one session (`messages`, message `i` written at
    `time_at(i)`, run in `project`) that a live ask asked about: made
    after its rule went live, in its rule's scope, matching its pattern
    and answered (a call with no result yet is still waiting)."""
    mine = [a for a in asks if a.project is None or a.project == project]
    if not mine:
        return []
    results = {b.tool_use_id: b for m in messages if m.role == "user" for b in m.blocks()
               if b.type == "tool_result" and b.tool_use_id}
    out = []
    for i, message in enumerate(messages):
        if message.role != "assistant":
            continue
        at = time_at(i)
        for call in message.blocks():
            if call.type != "tool_use" or not call.id or call.id not in results:
                continue
            for a in mine:
                if (a.since is None or (at is not None and at >= a.since)) and call_matches(a.pattern, call.name, call.input):
                    out.append(Asked(rule_id=a.rule_id, pattern=a.pattern, session_id=session_id, call_id=call.id,
                                     outcome=call_outcome(results[call.id]), at=at, project=project))
    return out


def new_asked(on_file: Iterable[Asked], fresh: Iterable[Asked]) -> list[Asked]:
    """Of `fresh`, those not on record yet (one per rule, session and call:
    a session read again as it grows counts each call once)."""
    seen = {(a.rule_id, a.session_id, a.call_id) for a in on_file}
    out = []
    for a in fresh:
        key = (a.rule_id, a.session_id, a.call_id)
        if key not in seen:
            seen.add(key)
            out.append(a)
    return out
