"""The person's standing trust decisions: which of their own tools and
programs the session readers may read as the person's machine.

A reader decides a session's taint from the calls it records (`reader.py`,
`shell.py`), failing closed on anything its tables do not know. What the
tables cannot know is the person's own tools: a local issue tracker, a
script in their dotfiles, an MCP server they wrote. Asked once, the answer
is kept in the config file every reader already finds
(`$MECHA_SIDECAR_CONFIG`, else `~/.mecha/sidecar.toml`), in one table:

```toml
[trust]
allow = ["Bash(bd)", "Bash(git fetch)", "mcp__notes__read"]
```

Three forms, the same as `--trust-tool` takes for one run: a program
(`Bash(bd)`: any arguments), a program and one subcommand (`Bash(git
fetch)`), a tool by name (`mcp__notes__read`). A program entry applies to
every agent's shell tools (Claude Code's `Bash`, Codex's `shell`,
`exec_command`, …), so it is stored as `Bash(…)` whichever tool it was
written for.

What the file cannot hold is a switch that trusts whole classes of
third-party text: every shell command at once (`Bash`), the web tools, or a
subagent by name (a subagent is as trusted as its own transcript, which the
reader checks). Those stay a one-run `--trust-tool`, where the person sees
the choice each time; a standing one would make every future stranger's
text learnable without anyone looking.

The table is read and written in `environment.trust` (`load_trust`,
`add_trust`, `remove_trust`), which keeps every other byte of the file; this
module says what an entry means (`check_entry`, `refusal`) and how a reader
applies the decisions (`Trust.policy`). Import, the hooks, `mine`, `reflect
--sessions` and `validate` load them and hand them to the reader, which
never opens the config file itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum

import msgspec

from mecha.core import shellwords
from mecha.core.environment.agents import CODEX
from mecha.core.errors import InvalidInput
from mecha.core.sessions.reader import Blame, TaintPolicy, command_entry, web_word
from mecha.core.shellwords import mecha_or_none
from mecha.core.visible import shown

#: The config file's table and key the decisions live under.
TRUST_TABLE = "trust"
TRUST_KEY = "allow"

#: The tool name a program entry is stored under, whichever agent it was
#: written for: the entry changes the shell allowlist of every shell tool.
SHELL_SPELLING = "Bash"

#: Tools whose results are third-party text by what they are, never the
#: person's own tool: a standing decision may not trust them (a one-run
#: `--trust-tool` still can). The shell tools are here bare — trusting
#: `Bash` whole would trust `curl` too; a program of theirs can be trusted.
NEVER_STANDING = frozenset(
    {
        "WebFetch", "WebSearch", "web_search", "web_fetch", "Task", "Agent", "Workflow", "ReadMcpResourceTool",
        "ToolSearch", "SendMessage", "ListAgents", "RemoteTrigger", "Monitor", "PowerShell",
        "Bash", "BashOutput", "shell", "shell_command", "exec_command", "local_shell", "container.exec",
        "unified_exec", "write_stdin",
    }
)

#: The shell tools of the agents, refused whole (a program of theirs is not).
SHELL_TOOLS = frozenset({"shell", "shell_command", "exec_command", "local_shell", "container.exec", "unified_exec", "write_stdin"})


class TrustAction(str, Enum):
    """What `trust` does with the standing decisions."""

    ADD = "add"
    REMOVE = "remove"
    LIST = "list"


class Trust(msgspec.Struct, frozen=True, kw_only=True):
    """The decisions read from the config file: `entries` in their stored
    spelling (`Bash(bd)`, `Bash(git fetch)`, `mcp__notes__read`), in the
    order the file lists them. `path` is the file they came from."""

    entries: tuple[str, ...] = ()
    path: str | None = None
    #: What the file lists that no standing decision may say (a web tool, a
    #: subagent, a spelling that is not a trust entry — perhaps written by an
    #: older release, or by hand), each as `(the entry as written, why)`:
    #: honoured by no reader, never an error that stops one (a hook would
    #: then fail on every session), and taken out by `trust remove`.
    ignored: tuple[tuple[str, str], ...] = ()

    def stored(self) -> list[str]:
        """Every entry the file lists, honoured or not, in its order."""
        return [*self.entries, *(raw for raw, _ in self.ignored)]

    def policy(self, source: str, *, trust: Iterable[str] = (), distrust: Iterable[str] = ()) -> TaintPolicy:
        """The taint policy a reader of `source` (`claude`, `codex`; anything
        else reads as Claude Code's) uses: its built-in lists, these standing
        decisions, then one run's `--trust-tool` / `--distrust-tool` (a
        distrusted name wins over everything)."""
        if source == CODEX.name:
            from mecha.core.sessions.codex_cli import CODEX_POLICY as base
        else:
            from mecha.core.sessions.claude_code import CLAUDE_POLICY as base
        return base.with_overrides(trust=[*self.entries, *trust], distrust=list(distrust))

    def covers(self, entry: str) -> bool:
        """Whether `entry` (any spelling `check_entry` takes) is trusted here."""
        return check_entry(entry, standing=False) in self.entries


class Reclassified(msgspec.Struct, kw_only=True):
    """What a change of trust made learnable."""

    #: Session files held back interventions and were read again.
    sessions: int = 0
    #: Interventions that now read clean, queued to be asked.
    asked_again: int = 0
    #: The inbox entries queued for them.
    queued: list[str] = msgspec.field(default_factory=list)
    #: Held-back interventions that still read untrusted.
    still_untrusted: int = 0
    #: Held-back interventions asked again at an earlier change of trust
    #: (answered, or still waiting): not asked a second time.
    already_asked: int = 0
    #: Files that could not be read again (gone, or no longer a session),
    #: each with why.
    unreadable: list[str] = msgspec.field(default_factory=list)


class HeldBack(msgspec.Struct, frozen=True, kw_only=True):
    """One call that held back interventions: the first call that made
    each of them untrusted, and how many."""

    blame: Blame
    interventions: int


class Unknown(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A program or tool that held back interventions, as the import's
    summary offers it. For one a trust entry can answer and whose trust
    frees some of them, `command` trusts it and `interventions` is exactly
    how many trusting it alone frees (`agents.offers`), in `sessions`
    sessions. For any other, `interventions` is how many it held back (every
    one it came before) and `refused` says why no offer is made: a
    stranger's text (`stranger`), or the reader's doubt — which the person
    may answer by vouching for the corrections themselves."""

    entry: str
    interventions: int
    sessions: int
    command: str | None = None
    refused: str | None = None
    #: The call put a stranger's text in context (`reader.Blame.stranger`):
    #: nothing the person says makes what it held back learnable.
    stranger: bool = False
    #: For an entry that trusts what is not this machine's own output — a
    #: subcommand that sends to a remote (`Bash(git push)`) — what the
    #: person would be trusting, in words: the remote's replies. Set on an
    #: offer, and on a row not offered only because trusting it alone
    #: frees nothing (it is a stranger's text, yet not beyond trust).
    trusts: str | None = None


def held_back(blames: Iterable[Blame | None]) -> list[HeldBack]:
    """Each intervention's first blame (`reader.first_blame`), grouped:
    which calls held how many back, in the order first met."""
    counts: dict[Blame, int] = {}
    for blame in blames:
        if blame is not None:
            counts[blame] = counts.get(blame, 0) + 1
    return [HeldBack(blame=b, interventions=n) for b, n in counts.items()]


def blockers(blames: Iterable[Blame], untrusted_at: Iterable[int]) -> list[HeldBack]:
    """Every call that held back one of the untrusted interventions riding
    in messages `untrusted_at`: each of a session's `blames` with how many
    of them came at or after it. Trusting only the first blocker leaves the
    next one holding the same interventions, so the person is shown all."""
    ats = sorted(untrusted_at)
    out: list[HeldBack] = []
    for blame in blames:
        n = sum(1 for at in ats if at >= blame.at)
        if n:
            out.append(HeldBack(blame=blame, interventions=n))
    return out


def trust_command(entry: str) -> str | None:
    """The command that trusts `entry` for good, quoted for a shell
    (`shellwords`); `None` when `trust add` would refuse the entry
    (`check_entry`: a program name no entry can spell, with a space, a
    parenthesis or a shell metacharacter) or it cannot be pasted faithfully
    (a program name holding a control or invisible character). A command
    that would only fail is never offered."""
    if _entry_refusal(entry) is not None:
        return None
    return mecha_or_none("trust", "add", entry)


def untrustable(entry: str) -> str:
    """Why no command is offered for an entry `trust_command` refused."""
    why = shellwords.refusal(entry) or _entry_refusal(entry) or "it cannot be pasted"
    return f"no command is offered for it: {why}"


def _entry_refusal(entry: str) -> str | None:
    """Why `trust add` would refuse `entry`, as `check_entry` says it."""
    try:
        check_entry(entry)
    except InvalidInput as exc:
        return str(exc)
    return None


def _label(blame: Blame) -> str:
    """What a person calls the call `blame` names: its trust entry, else
    `Bash(curl)`, `WebSearch`, or the record."""
    if blame.entry is not None:
        return blame.entry
    if blame.tool and blame.program:
        return f"{blame.tool}({blame.program})"
    return blame.tool or blame.program or "a record the reader could not read"


def remote_replies(entry: str) -> str | None:
    """What trusting `entry` takes as the person's own when it is a
    subcommand that sends to a remote (`shell.programs.SENDING`: `git push`,
    `npm publish`): what every remote it sends to prints back. `None` for
    any other entry, whose output is this machine's, and for one `trust
    add` would refuse (a program name with a shell metacharacter), which
    trusts nothing."""
    try:
        command = command_entry(entry)
    except InvalidInput:
        return None
    if command is None or " " not in command:
        return None
    from mecha.core.sessions.shell.programs import SENDING

    if command not in SENDING:
        return None
    return f"what every remote `{shown(command)}` sends to prints back (its text, not this machine's): trust it if those remotes are yours"


#: Why an entry a trust entry could answer is not offered.
FREES_NONE = "trusting it alone frees none of them: another call holds the same corrections back"


def unknown_summary(sessions: Iterable[tuple[Iterable[HeldBack], Mapping[str, int]]]) -> list[Unknown]:
    """Every program and tool that held back interventions, over many
    sessions, each given as its `blockers` and what each entry would free
    (`offers.exact_offers`): first the offers — the entries that free some,
    with the command, most first; then those that free none or that no
    trust entry can answer, with why."""
    held: dict[str, int] = {}
    seen: dict[str, int] = {}
    why: dict[str, str | None] = {}
    stranger: dict[str, bool] = {}
    freed: dict[str, int] = {}
    freed_in: dict[str, int] = {}
    for blocking, frees in sessions:
        labels = set()
        for h in blocking:
            label = _label(h.blame)
            held[label] = held.get(label, 0) + h.interventions
            why.setdefault(label, None if h.blame.entry is not None else h.blame.why)
            stranger[label] = stranger.get(label, False) or h.blame.stranger is not None
            labels.add(label)
        for label in labels:
            seen[label] = seen.get(label, 0) + 1
        for entry, n in frees.items():
            if n > 0:
                freed[entry] = freed.get(entry, 0) + n
                freed_in[entry] = freed_in.get(entry, 0) + 1
    rows = []
    for e, n in freed.items():
        command = trust_command(e)
        if command is not None:
            rows.append(Unknown(entry=shown(e), interventions=n, sessions=freed_in[e], command=command, trusts=remote_replies(e)))
        else:
            freed_in.pop(e)
    for label, n in held.items():
        if label in freed_in:
            continue
        refused = why[label] or (untrustable(label) if label in freed or trust_command(label) is None else FREES_NONE)
        # A remote's replies its own entry would answer, were another call
        # not holding the same corrections back: say what it would trust.
        trusts = remote_replies(label) if why[label] is None else None
        rows.append(Unknown(entry=shown(label), interventions=n, sessions=seen[label], refused=refused, stranger=stranger[label],
                            trusts=trusts))
    return sorted(rows, key=lambda u: (u.command is None, u.stranger, -u.interventions, u.entry))


class Withheld(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An intervention recorded without a model call because it read
    untrusted, not yet asked again: where it is, the person's words
    (shortened), and what held it back."""

    session_id: str
    words: str
    why: str
    file: str | None = None
    line: int | None = None
    #: Set when its session reads clean at it under the trust kept now but
    #: it was not asked again yet (the trust changed by hand): says so, and
    #: what asks it (`held.CLEAN_NOW`).
    now: str | None = None


def check_entry(value: str, *, standing: bool = True) -> str:
    """`value` in its stored spelling, or `InvalidInput` saying what is
    wrong and what to write instead. `standing`: refuse the entries a
    config file may not hold (`NEVER_STANDING`)."""
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise InvalidInput("a trust entry is empty: write a program (Bash(bd)), a program and a subcommand (Bash(git fetch)) or a tool's name (mcp__notes__read)")
    command = command_entry(text)
    if command is not None:
        return f"{SHELL_SPELLING}({command})"
    if any(c.isspace() for c in text) or "(" in text or ")" in text:
        raise InvalidInput(f"{value!r}: not a trust entry: write a program (Bash(bd)), a program and a subcommand (Bash(git fetch)) or a tool's name (mcp__notes__read)")
    if standing:
        why = refusal(text)
        if why is not None:
            raise InvalidInput(f"{text!r} cannot be trusted for good: {why}")
    return text


def refusal(tool: str) -> str | None:
    """Why the tool `tool` may not be trusted for good, with what to do
    instead; `None` when it may. Web tools, subagents and whole shells are
    refused by name (`NEVER_STANDING`); any other tool whose name says it
    reaches the web (`reader.web_word`) too — fail closed."""
    if tool in NEVER_STANDING:
        if tool in ("Task", "Agent", "Workflow"):
            return ("it runs subagents, whose reports are as trusted as their own transcripts (which the reader checks). "
                    "Use --trust-tool for one run")
        if tool in ("Bash", "BashOutput") or tool in SHELL_TOOLS:
            return "a shell tool runs any program, curl too. Trust one program instead (Bash(bd), Bash(git fetch)), or use --trust-tool for one run"
        return "its results are a stranger's text. Use --trust-tool for one run if you must"
    web = web_word(tool)
    if web is not None:
        return (f"its name says it reaches the web ({web!r}), so its results are a stranger's text. "
                "Use --trust-tool for one run if it is in fact your own local tool")
    return None
