"""What the Claude Code and Codex readers share: one reader core.

A reader turns one session file into what `mecha/sessionEnded` is handed by
the harness — a wire transcript, a taint timeline and an `interactive` flag —
so an imported session goes through exactly the same mining, classification
and passes as one the harness recorded. The readers (`claude_code.py`,
`codex_cli.py`) spell only what their format says; this module holds the
rest:

- `ReadSession`, a reader's result, and `ReaderCore`, the state and moves
  both readers make: the wire messages so far, the open results message,
  the refused call waiting for the person's reason, the interrupted turn
  whose next words ride beside its results, and the line loop;
- the **taint policy**. Neither agent records taint, so it is rebuilt from
  what the file says was called, failing closed: the conversation turns
  untrusted from the first result of a tool that can bring a stranger's text
  in — web fetch and search, every MCP tool, any tool the reader does not
  know, a shell command not known to stay on the machine (`shell.py`) — and
  private (but still trusted) from the first result that read the person's
  own files. The lists are data (`TaintPolicy`) so a person can trust a
  local MCP server, or distrust a tool the defaults call local;
- the line loop over `lines.py`, where a line that is not a record is
  skipped with a warning, never the session.

Format detection and `read_session`, the one entry point, are in
`foreign.py`, above both readers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from mecha.core.errors import InvalidInput
from mecha.core.sessions.lines import LineReader, OverlongLine, SessionFormat, Source
from mecha.core.sessions.mining import DENIAL_PREFIX
from mecha.core.sessions.transcript import IMAGE_PLACEHOLDER as IMAGE_PLACEHOLDER  # the readers' marker, re-exported
from mecha.core.sessions.transcript import Block, Message, Taint, TaintCheckpoint
from mecha.core.visible import shown

if TYPE_CHECKING:
    from mecha.core.sessions.shell import ShellMemory


#: The result a reader gives a call the person interrupted before it ended.
INTERRUPTED_RESULT = "(interrupted by the person)"


class Blame(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A call that made a session untrusted from there on, as a person is
    told it: the tool, the program it ran (`git fetch`, `bd`), the command
    line (shortened), the file line of its result, why in words, and the
    trust entry that would make it local (`Bash(bd)`, `mcp__notes__read`)
    — absent where trusting it is no answer (a web fetch, a network client,
    a line the parser cannot read)."""

    why: str
    #: The message the call's result rides in.
    at: int = 0
    line: int | None = None
    tool: str | None = None
    program: str | None = None
    command: str | None = None
    entry: str | None = None
    #: What stranger's text the call put in context, in words (`a web
    #: page's text`, `curl: reaches the network`), when it is one a known
    #: network or web source wrote; absent when the reader only doubts (a
    #: program the table does not know, shell it cannot see through, a
    #: script). The person may vouch for what doubt held back, never for
    #: this (`core.agents.held`).
    stranger: str | None = None

    def reason(self) -> str:
        """Where and why, without the command line: `line 12: Bash (bd): not in …`."""
        where = f"line {self.line}: " if self.line is not None else ""
        what = self.tool or "a record"
        if self.program:
            what += f" ({self.program})"
        return f"{where}{what}: {self.why}"

    def describe(self) -> str:
        """One line: where, what and why (`line 12: Bash `bd ready` — bd: not in …`)."""
        where = f"line {self.line}: " if self.line is not None else ""
        what = shown(self.tool or "a record")
        if self.command:
            what += f" `{shown(self.command)}`"
        subject = f"{shown(self.program)}: " if self.program else ""
        return f"{where}{what} — {subject}{shown(self.why)}"


#: How many blames one session keeps: the first of each tool and program.
MAX_BLAMES = 64
#: How much of a command line a blame keeps.
BLAME_COMMAND_CHARS = 120


def first_blame(blames: Sequence[Blame], at: int) -> Blame | None:
    """The first call, at or before message `at`, that made the session
    untrusted: what held back an intervention riding in message `at`."""
    return next((b for b in blames if b.at <= at), None)


class ReadSession(msgspec.Struct, kw_only=True):
    """One session file, read: the wire transcript and what the file said
    about it."""

    source: SessionFormat
    session_id: str
    messages: list[Message]
    #: Rebuilt from the tools the file records (`None` only for a mecha JSONL
    #: file that carried none — which classifies untrusted, fail closed).
    taint_timeline: list[TaintCheckpoint] | None
    interactive: bool = True
    #: The working directory the agent ran in, when the file says.
    project: str | None = None
    #: The git branch checked out there, when the file says (Claude Code's
    #: `gitBranch`): what finds the repository of a worktree since removed
    #: (`scope.project_of_session`).
    branch: str | None = None
    #: Lines skipped on the way, each naming the file and the line (see
    #: `LineReader`; past `NAMED_SKIPS` of them, one line says how many more).
    warnings: list[str] = msgspec.field(default_factory=list)
    #: How many lines were skipped as not records of the format.
    skipped_lines: int = 0
    #: For each message, the file line (1-based) it began on; empty when
    #: the format does not say.
    lines: list[int] = msgspec.field(default_factory=list)
    #: The calls that made the session untrusted, in file order (the first
    #: of each tool and program; `first_blame`).
    blames: list[Blame] = msgspec.field(default_factory=list)
    #: For each message, when the file dates the line it began on (UTC,
    #: `identity.now`'s format, `stamp_of`), `None` where that line has no
    #: readable time; empty when the format does not say.
    times: list[str | None] = msgspec.field(default_factory=list)

    def time_at(self, at: int) -> str | None:
        """When message `at` was written, as the file dates it."""
        return self.times[at] if 0 <= at < len(self.times) else None


def stamp_of(value: object) -> str | None:
    """A record's `timestamp` (ISO 8601, as both agents write it) in the
    store's spelling of a moment, so it orders against an accept's time;
    `None` for anything else."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def note_lines(lines: list[int], messages: Sequence[object], number: int) -> None:
    """Record `number` as the line of every message a reader added while
    reading it (and forget lines of messages it took back)."""
    del lines[len(messages):]
    lines.extend([number] * (len(messages) - len(lines)))


# ─── taint ──────────────────────────────────────────────────────────────────

class TaintPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Which recorded tool results taint a conversation, and how.

    `local` tools read or change the person's machine: their results make
    the conversation private, not untrusted. `shell` tools are local only
    when everything their command line runs is known to stay on the machine
    (`shell.command_stays_local`; `shell_trust` is the person's change to
    that allowlist); any other command is untrusted. `untrusted` tools bring
    third-party text. Anything in none of the lists is untrusted — which is
    how every MCP tool is read (`mcp__server__tool` in Claude Code,
    `server__tool` in Codex) unless a person trusts it by name: fail closed.
    """

    local: frozenset[str]
    shell: frozenset[str]
    untrusted: frozenset[str]
    #: Tools whose results are the person's own words (an answer to the
    #: agent's question): neither private nor untrusted.
    personal: frozenset[str] = frozenset()
    #: Shell-command allowlist entries the person added (`"make"`, `"git
    #: fetch"`) and took away, from `--trust-tool 'Bash(make)'`.
    trusted_commands: frozenset[str] = frozenset()
    distrusted_commands: frozenset[str] = frozenset()

    def with_overrides(self, *, trust: Iterable[str] = (), distrust: Iterable[str] = ()) -> TaintPolicy:
        """This policy with some tools moved: `trust` to local, `distrust` to
        untrusted (a distrusted name wins over a trusted one). A value
        spelled `TOOL(PROGRAM)` or `TOOL(PROGRAM SUBCOMMAND)` — `Bash(make)`,
        `shell(git fetch)` — changes the shell-command allowlist instead, for
        every shell tool."""
        tools: dict[bool, set[str]] = {True: set(), False: set()}
        commands: dict[bool, set[str]] = {True: set(), False: set()}
        for trusted, values in ((True, trust), (False, distrust)):
            for value in values:
                entry = command_entry(value)
                (tools if entry is None else commands)[trusted].add(value if entry is None else entry)
        trust_set, distrust_set = frozenset(tools[True]), frozenset(tools[False])
        return msgspec.structs.replace(
            self,
            local=(self.local | trust_set) - distrust_set,
            shell=self.shell - distrust_set,
            personal=self.personal - distrust_set,
            untrusted=(self.untrusted - trust_set) | distrust_set,
            trusted_commands=(self.trusted_commands | commands[True]) - commands[False],
            distrusted_commands=(self.distrusted_commands - commands[True]) | commands[False],
        )

    def taint_of(self, name: str | None, command: str | Sequence[str] | None = None, memory: ShellMemory | None = None) -> Taint:
        """What the result of one call to `name` brings into the conversation."""
        return self.judge(name, command, memory)[0]

    def judge(
        self, name: str | None, command: str | Sequence[str] | None = None, memory: ShellMemory | None = None
    ) -> tuple[Taint, Blame | None]:
        """`taint_of`, and for an untrusted result the `Blame` that says why
        (its `at` and `line` are the reader's to fill). `memory` is the
        session's shell memory (`shell.ShellMemory`): what its earlier
        commands changed."""
        if name in self.untrusted:
            why = _UNTRUSTED_TOOLS.get(name or "", "brings in third-party text")
            stranger = None if name in _UNREAD_TOOLS else f"{name}: {why}"
            return Taint(private=True, untrusted=True), Blame(tool=name, why=why, stranger=stranger)
        if name in self.personal:
            return Taint(), None
        if name in self.local:
            return Taint(private=True), None
        if name in self.shell:
            if command is None:
                return Taint(private=True, untrusted=True), Blame(tool=name, why="more output of a command the file does not show")
            # The parser loads here, on the first shell result read: never
            # on the harness endpoint's path.
            from mecha.core.sessions.shell import ShellTrust, judge_command
            from mecha.core.sessions.shell.programs import SENDING

            remote = self.kept_remote()
            trust = ShellTrust(trusted=self.trusted_commands, distrusted=self.distrusted_commands | remote)
            verdict = judge_command(command, trust, memory)
            if verdict.local:
                return Taint(private=True), None
            line = " ".join((command if isinstance(command, str) else " ".join(command)).split())
            if len(line) > BLAME_COMMAND_CHARS:
                line = line[: BLAME_COMMAND_CHARS - 1] + "…"
            why = verdict.why or "not known to stay on this machine"
            entry = verdict.entry
            if verdict.program in remote and verdict.program not in self.distrusted_commands:
                program = verdict.program.partition(" ")[0]
                why = (f"talks to a remote: what it prints is someone else's text (trusting {program} "
                       f"does not trust it; Bash({verdict.program}) would, on its own)")
                if verdict.program in SENDING:
                    entry = f"Bash({verdict.program})"  # the person's own remote, named alone
            whole = command if isinstance(command, str) else " ".join(command)
            stranger = shell_stranger(verdict.program, why, whole, network=verdict.network)
            blame = Blame(tool=name, program=verdict.program, command=line, why=why, entry=entry, stranger=stranger)
            return Taint(private=True, untrusted=True), blame
        web = web_word(name)
        if web is not None:
            why = f"its name says it reaches the web ({web!r}): its results are a stranger's text, which no standing trust can make the person's"
            return Taint(private=True, untrusted=True), Blame(tool=name, why=why, stranger=f"{name}: a web tool's results")
        why = "a tool the reader does not know (an MCP tool is untrusted until you trust it by name)"
        return Taint(private=True, untrusted=True), Blame(tool=name, why=why, entry=name if name else None)

    def kept_remote(self) -> frozenset[str]:
        """The subcommands that talk to a remote (`remote_subcommands`) of
        every program the person trusted whole (`Bash(bd)`), except those
        they trusted by name (`Bash(bd sync)`): a program entry never
        trusts them."""
        programs = [c for c in self.trusted_commands if " " not in c]
        if not programs:
            return frozenset()
        return frozenset(e for p in programs for e in remote_subcommands(p)) - self.trusted_commands

    def person_shell_taint(self, tool: str, text: str, memory: ShellMemory | None = None) -> tuple[Taint, Blame | None] | None:
        """What a shell command the person ran themselves brings in —
        Claude Code's `!` bash mode (`<bash-input>…`), Codex's `!`
        (`<user_shell_command>…`): its output goes into the model's context
        like a tool's, so it is decided like `tool`'s. `None` when `text` is
        no such record."""
        stripped = text.lstrip()
        if not stripped.startswith(("<bash-input>", "<user_shell_command>")):
            return None
        found = _PERSON_SHELL.match(stripped)
        command = None if found is None else (found.group(1) if found.group(1) is not None else found.group(2))
        return self.judge(tool, command, memory)


#: Parts of a tool's name that say it reaches the web or a remote service.
#: A tool the reader does not know (an MCP server's, `mcp__serper__google_search`)
#: with one of these in its name is read like `WebSearch`: never offered to
#: be trusted, and refused for good. The list fails closed — a local tool
#: that happens to say "search" is trusted for one run with `--trust-tool`.
WEB_WORDS = (
    "search", "fetch", "web", "browse", "browser", "http", "url", "crawl", "scrape", "download", "internet",
    "online", "google", "bing", "duckduckgo", "ddg", "tavily", "serper", "brave", "perplexity", "firecrawl",
    "playwright", "puppeteer", "wiki", "reddit", "twitter", "news", "github", "gitlab", "slack", "gmail", "email",
    "jira", "linear", "notion", "request", "curl", "wget", "remote", "cloud", "api",
)


def web_word(name: str | None) -> str | None:
    """The part of a tool's name that says it reaches the web (`search` in
    `mcp__serper__google_search`), else `None`."""
    if not name:
        return None
    lowered = name.lower()
    return next((w for w in WEB_WORDS if w in lowered), None)


#: Untrusted tools whose output the reader cannot read rather than a
#: stranger's by what they are: a watched command, a PowerShell line. What
#: they held back is the reader's doubt, which the person may vouch for.
_UNREAD_TOOLS = frozenset({"Monitor", "PowerShell"})

#: Network programs whose names are also everyday words (`host: db`,
#: `links/`): on a line the reader could not see through they are read as
#: words; run as the program, they are still a stranger's text.
_COMMON_WORDS = frozenset({"host", "links", "hub", "dig", "az", "ping", "http", "https"})

#: The words of a shell line, for `shell_stranger`.
_WORDS = re.compile(r"[A-Za-z0-9_.+-]+")


def shell_stranger(program: str | None, why: str, command: str, *, network: bool = False) -> str | None:
    """What stranger's text an untrusted shell command put in context, in
    words, or `None` when the reader only doubts it. A network client or a
    fetching subcommand the table names (`curl`, `git push`, `bd sync`) is
    one; so is any line whose words, or whose reason (a git config write
    it quotes), name one anywhere — a brace expansion hiding `curl`, `python
    -c` importing `http.client`: where the reader could not see what runs,
    a network program on the line is taken to be what ran (fail closed).
    `network` is the shell reader's own word that what failed reaches the
    network (`Verdict.network`: `python -c` code importing `socket`)."""
    from mecha.core.sessions.shell.programs import NETWORK, REMOTE_SUBCOMMANDS, is_network

    if network:
        return f"{program or 'the command'}: {why}"
    if program:
        first, _, rest = program.partition(" ")
        if is_network(first, rest or None) or program in REMOTE_SUBCOMMANDS:
            return f"{program}: reaches the network"
    words = _WORDS.findall(f"{command} {why}")
    for i, word in enumerate(words):
        name = word.split(".", 1)[0]
        pair = f"{name} {words[i + 1]}" if i + 1 < len(words) else ""
        if (name in NETWORK and name not in _COMMON_WORDS) or pair in NETWORK or pair in REMOTE_SUBCOMMANDS:
            return f"{pair if pair in NETWORK or pair in REMOTE_SUBCOMMANDS else name}: a network program on a line the reader could not see through"
    return None


def remote_subcommands(program: str) -> frozenset[str]:
    """Every subcommand of `program` known to talk to a remote
    (`REMOTE_SUBCOMMANDS` and the table's fetching subcommands), each
    spelled `program sub`."""
    from mecha.core.sessions.shell.programs import NETWORK, REMOTE_SUBCOMMANDS

    return frozenset(e for e in (*REMOTE_SUBCOMMANDS, *NETWORK) if e.partition(" ")[0] == program and " " in e)


#: Why a subagent's report whose own transcript cannot be read is taken as
#: a stranger's text, not the reader's doubt: a subagent can search and
#: read the web, and nothing left on this machine says whether it did.
UNCHECKED_SUBAGENT = "a subagent can read the web, and nothing here says whether this one did"


def subagent_blame(tool: str, program: str, whose: str, blames: list[Blame]) -> Blame:
    """Why a subagent's report is untrusted, from its own transcript's
    `blames`: the first stranger's text it read when there is one (which
    makes the report one too), else the first call it doubted."""
    stranger = next((b for b in blames if b.stranger is not None), None)
    first = stranger or (blames[0] if blames else None)
    inner = first.describe() if first is not None else "it reads untrusted"
    why = f"a subagent's report, whose own {whose} is untrusted from {inner}"
    said = None if stranger is None else f"{tool}({program}): a subagent that read {stranger.stranger}"
    return Blame(tool=tool, program=program, why=why, stranger=said)


#: Why each built-in untrusted tool is, in a person's words.
_UNTRUSTED_TOOLS = {
    "WebFetch": "a web page's text", "WebSearch": "web search results", "web_search": "web search results",
    "web_fetch": "a web page's text", "ReadMcpResourceTool": "an MCP server's resource",
    "Task": "a subagent's report, whose own transcript was not found clean",
    "Agent": "a subagent's report, whose own transcript was not found clean",
    "Workflow": "a workflow's result, whose subagents' transcripts were not all found clean",
    "ToolSearch": "tool descriptions an MCP server wrote",
    "WaitForMcpServers": "what MCP servers said while connecting",
    "SendMessage": "another agent's words", "ListAgents": "other sessions' names and states, some on other machines",
    "TeamCreate": "an agent team's words", "TeamDelete": "an agent team's words",
    "RemoteTrigger": "routines kept on claude.ai", "Artifact": "a page published on claude.ai",
    "ShareOnboardingGuide": "a link from claude.ai", "Monitor": "a watched command's or socket's output, unread by the shell parser",
    "PowerShell": "a PowerShell command's output, which the shell parser does not read",
}


#: The command of a person's own shell command, in either agent's record.
_PERSON_SHELL = re.compile(r"<bash-input>(.*?)</bash-input>|<user_shell_command>\s*<command>\n?(.*?)\n?</command>", re.DOTALL)
_TOOL_COMMAND = re.compile(r"[\w.\-]+\((.*)\)", re.DOTALL)
_COMMAND_ENTRY = re.compile(r"[\w.+:\[-]+(?: [\w.+:-]+)?")


def command_entry(value: str) -> str | None:
    """`Bash(make)` → `"make"`, `shell(git fetch)` → `"git fetch"`; `None`
    for a tool's name."""
    match = _TOOL_COMMAND.fullmatch(value.strip())
    if match is None:
        return None
    entry = " ".join(match.group(1).split())
    if not _COMMAND_ENTRY.fullmatch(entry):
        raise InvalidInput(f"{value!r}: a shell command to trust is a program, or a program and one subcommand: Bash(make), Bash(git fetch)")
    return entry


class TaintTimeline:
    """Checkpoints appended as results arrive; taint only ever grows. The
    calls that made it untrusted are kept beside it (`blames`)."""

    def __init__(self) -> None:
        self.current = Taint()
        self.checkpoints = [TaintCheckpoint(at=0, taint=self.current)]
        self.blames: list[Blame] = []
        self._blamed: set[tuple[str | None, str | None, bool]] = set()
        #: The file line being read, for the blames it causes.
        self.line: int | None = None

    def bring(self, at: int, taint: Taint, blame: Blame | None = None) -> None:
        if taint.untrusted:
            self.blame(at, blame or Blame(why="a record the reader could not read while a tool's result was awaited"))
        merged = Taint(private=self.current.private or taint.private, untrusted=self.current.untrusted or taint.untrusted)
        if merged == self.current:
            return
        self.current = merged
        if self.checkpoints[-1].at == at:
            self.checkpoints[-1] = TaintCheckpoint(at=at, taint=merged)
        else:
            self.checkpoints.append(TaintCheckpoint(at=at, taint=merged))

    def blame(self, at: int, blame: Blame) -> None:
        # The first of each tool and program, and of each kind: a call
        # that put a stranger's text in context is kept even when the same
        # program was only doubted before (a vouch must see it).
        key = (blame.tool, blame.program, blame.stranger is not None)
        if key in self._blamed or len(self.blames) >= MAX_BLAMES:
            return
        self._blamed.add(key)
        self.blames.append(msgspec.structs.replace(blame, at=at, line=self.line))


# ─── the reader core ────────────────────────────────────────────────────────

#: Words of a line that may record a tool's call or result, in any agent's
#: spelling (`tool_use`, `tool_result`, `toolUseResult`, `function_call`,
#: `local_shell_call`, …): broad on purpose, since a line it misses fails
#: open and one it catches needlessly costs only clean evidence.
_TOOL_WORDS = re.compile(rb"tool|_call|function", re.IGNORECASE)


class ReaderCore:
    """The state and the moves of a reader, whichever agent wrote the file.

    A subclass reads one line at a time (`line`) and says what the line
    meant through the moves here: results go into the open results message
    (`add_results`), the person's words after a refusal become its reason
    and after an interrupt ride beside the cut-off results (`fold_words`), a
    shell command the person ran taints what follows (`person_ran`).
    `read` runs the line loop and builds the `ReadSession`."""

    def __init__(self, name: str, fmt: SessionFormat, policy: TaintPolicy) -> None:
        self.name = name
        self.lines = LineReader(name, fmt)
        self.policy = policy
        self.out: list[Message] = []
        self.taint = TaintTimeline()
        #: Every tool call so far, by id: a result is decided by its call.
        self.calls: dict[str, Block] = {}
        #: The calls whose results have been read (or given up on).
        self.answered: set[str] = set()
        self.session_id: str | None = None
        self.project: str | None = None
        self.branch: str | None = None
        #: A refusal's result, waiting for the person's next words as its reason.
        self.pending_denial: Block | None = None
        #: The person interrupted the turn: their next words are a steer.
        self.interrupted = False
        self._memory: ShellMemory | None = None
        #: The time of the line being read (`stamp_of` its `timestamp`),
        #: set by the subclass; each message it adds is dated with it.
        self.stamp: str | None = None
        self.times: list[str | None] = []

    def line(self, number: int, raw: bytes, torn: bool) -> None:
        raise NotImplementedError

    def end(self) -> None:
        """After the last line: whatever the format leaves open."""

    def read(self, data: Source) -> list[int]:
        """Every line of `data` through `line`; the file line each message
        began on. Refuses a file with no readable record (`LineReader`)."""
        lines: list[int] = []
        number = 0
        for number, raw, torn in self.lines.lines(data):
            self.taint.line = number
            self.stamp = None
            if isinstance(raw, OverlongLine):  # skipped already (`LineReader.lines`)
                self.unread_line(raw)
                self._note(lines, number)
                continue
            skipped = self.lines.skipped
            self.line(number, raw, torn)
            if self.lines.skipped > skipped and not torn:  # a torn last line has nothing after it
                self.unread_line(raw)
            self._note(lines, number)
        self.lines.finish()
        self.stamp = None
        self.end()
        self._note(lines, number)
        return lines

    def _note(self, lines: list[int], number: int) -> None:
        """The line and the time of every message added since the last note."""
        note_lines(lines, self.out, number)
        del self.times[len(self.out):]
        self.times.extend([self.stamp] * (len(self.out) - len(self.times)))

    def base_id(self, path: Path | None) -> str:
        """The session's id as the file gives it, else the file's name."""
        return self.session_id or (path.stem if path is not None else "session")

    def session(self, source: SessionFormat, session_id: str, lines: list[int], *, interactive: bool) -> ReadSession:
        return ReadSession(
            source=source,
            session_id=session_id,
            messages=self.out,
            taint_timeline=self.taint.checkpoints,
            interactive=interactive,
            project=self.project,
            branch=self.branch,
            warnings=self.lines.warnings,
            skipped_lines=self.lines.skipped,
            lines=lines,
            blames=self.taint.blames,
            times=self.times,
        )

    def shell_memory(self) -> ShellMemory:
        """What this session's shell commands changed so far (`shell.ShellMemory`)."""
        if self._memory is None:
            from mecha.core.sessions.shell import ShellMemory

            self._memory = ShellMemory()
        return self._memory

    def judge(self, name: str | None, command: str | Sequence[str] | None = None) -> tuple[Taint, Blame | None]:
        """One call's result decided under this session's shell memory."""
        memory = self.shell_memory() if name in self.policy.shell else None
        return self.policy.judge(name, command, memory)

    def unread_line(self, raw: bytes) -> None:
        """A line (or part of one) could not be read. If calls wait for
        their results, it may have been one; if it speaks of a tool at all,
        it may have been a call and its result at once. Either may carry a
        stranger's text the assistant goes on to quote, with nothing read to
        say so: fail closed, untrusted from here — from the last message
        when it is the assistant's, which the next lines may still extend
        (with no result between, its next words join it). A `curl`'s result
        nested past what the decoder follows once left the person's next
        words clean with the planted instruction quoted as their context.
        Any other line (a person's message with a bad byte) costs only
        itself."""
        waiting = [i for i in self.calls if i not in self.answered]
        if not waiting and _TOOL_WORDS.search(raw) is None:
            return
        self.answered.update(waiting)
        open_turn = bool(self.out) and self.out[-1].role == "assistant"
        why = "a line that could not be read, which may have been a tool's call or result"
        self.taint.bring(len(self.out) - 1 if open_turn else len(self.out), Taint(untrusted=True), Blame(why=why))

    # ── moves ──

    def results_message(self) -> Message | None:
        """The last message, when it is the person's side holding results."""
        if self.out and self.out[-1].role == "user" and self.out[-1].has_tool_results():
            return self.out[-1]
        return None

    def say_beside(self, message: Message, words: str) -> None:
        assert isinstance(message.content, list)
        message.content.append(Block.text_block(words))

    def add_results(self, blocks: list[Block]) -> Message:
        """`blocks` into the open results message, or a new one; that message."""
        self.answered.update(b.tool_use_id for b in blocks if b.type == "tool_result" and b.tool_use_id)
        message = self.results_message()
        if message is None:
            self.out.append(Message.tool_results(blocks))
            return self.out[-1]
        assert isinstance(message.content, list)
        message.content.extend(blocks)
        return message

    def denied_in_batch(self, batch: Sequence[Block] = ()) -> bool:
        """Whether this batch of results (the open message's, and `batch`)
        already holds a denial: only the first refusal carries the reason."""
        message = self.results_message()
        earlier = message.blocks() if message is not None else []
        return any(b.type == "tool_result" and (b.content or "").startswith(DENIAL_PREFIX) for b in [*earlier, *batch])

    def fold_words(self, words: str) -> bool:
        """The person's words as the reason of a refusal waiting for one, or
        beside the results of a turn they interrupted; False when they are
        neither (an ordinary turn of the person's)."""
        if self.pending_denial is not None:
            self.pending_denial.content = f"{DENIAL_PREFIX} {words}"
            self.pending_denial = None
            self.interrupted = False
            return True
        if self.interrupted:
            self.interrupted = False
            message = self.results_message()
            if message is not None:
                self.say_beside(message, words)
                return True
        return False

    def person_ran(self, tool: str, text: str) -> None:
        """A shell command the person ran themselves (`!`), if `text` is
        one: its output reaches the model before whatever comes next, so it
        taints from here as a call of `tool` with that command would."""
        ran = self.policy.person_shell_taint(tool, text, self.shell_memory())
        if ran is not None:
            self.taint.bring(len(self.out), *ran)
