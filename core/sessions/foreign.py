"""Sessions recorded by other agents: what the Claude Code and Codex readers share.

A reader turns one session file into what `mecha/sessionEnded` is handed by
the harness — a wire transcript, a taint timeline and an `interactive` flag —
so an imported session goes through exactly the same mining, classification
and passes as one the harness recorded. The readers live in
`claude_code.py` and `codex_cli.py`; this module holds what both need:

- `ReadSession`, the reader's result;
- the **taint policy**. Neither agent records taint, so it is rebuilt from
  what the file says was called, failing closed: the conversation turns
  untrusted from the first result of a tool that can bring a stranger's text
  in — web fetch and search, every MCP tool, any tool the reader does not
  know, a shell command not known to stay on the machine (`shell.py`) — and
  private (but still
  trusted) from the first result that read the person's own files. The lists
  are data (`TaintPolicy`) so a person can trust a local MCP server, or
  distrust a tool the defaults call local;
- the **harness-voice profiles**: text each agent records in the person's
  voice that no person wrote. The readers already drop what they recognise;
  the profile is the second line, applied by the miner to whatever slips
  through (a new wrapper in a newer release);
- **format detection** from a file's first record, and `read_session`, the
  one entry point every CLI verb uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TypeVar

import msgspec

from mecha.core.errors import InvalidInput
from mecha.core.sessions.transcript import Message, Taint, TaintCheckpoint

#: The formats `read_session` knows, in the spelling `--format` takes.
FORMATS = ("mecha", "claude", "codex")
FORMAT_NAMES = {"mecha": "a mecha transcript", "claude": "a Claude Code session", "codex": "a Codex CLI rollout"}

#: What a picture in a person's message becomes in the wire transcript, in
#: every reader: the words beside it are kept, the image is marked.
IMAGE_PLACEHOLDER = "[image]"
#: The result a reader gives a call the person interrupted before it ended.
INTERRUPTED_RESULT = "(interrupted by the person)"


class ReadSession(msgspec.Struct, kw_only=True):
    """One session file, read: the wire transcript and what the file said
    about it."""

    source: str
    session_id: str
    messages: list[Message]
    #: Rebuilt from the tools the file records (`None` only for a mecha JSONL
    #: file that carried none — which classifies untrusted, fail closed).
    taint_timeline: list[TaintCheckpoint] | None
    interactive: bool = True
    #: The working directory the agent ran in, when the file says.
    project: str | None = None
    #: Lines skipped on the way, each naming the file and the line (see
    #: `LineReader`; past `NAMED_SKIPS` of them, one line says how many more).
    warnings: list[str] = msgspec.field(default_factory=list)
    #: How many lines were skipped as not records of the format.
    skipped_lines: int = 0
    #: For each message, the file line (1-based) it began on; empty when
    #: the format does not say.
    lines: list[int] = msgspec.field(default_factory=list)


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
                entry = _command_entry(value)
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

    def taint_of(self, name: str | None, command: str | Sequence[str] | None = None) -> Taint:
        """What the result of one call to `name` brings into the conversation."""
        if name in self.untrusted:
            return Taint(private=True, untrusted=True)
        if name in self.personal:
            return Taint()
        if name in self.local:
            return Taint(private=True)
        if name in self.shell:
            return Taint(private=True, untrusted=command is None or not self._stays_local(command))
        return Taint(private=True, untrusted=True)

    def person_shell_taint(self, tool: str, text: str) -> Taint | None:
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
        return self.taint_of(tool, command)

    def _stays_local(self, command: str | Sequence[str]) -> bool:
        # The parser loads here, on the first shell result read: never on
        # the harness endpoint's path.
        from mecha.core.sessions.shell import ShellTrust, command_stays_local

        trust = ShellTrust(trusted=self.trusted_commands, distrusted=self.distrusted_commands)
        return command_stays_local(command, trust)


#: The command of a person's own shell command, in either agent's record.
_PERSON_SHELL = re.compile(r"<bash-input>(.*?)</bash-input>|<user_shell_command>\s*<command>\n?(.*?)\n?</command>", re.DOTALL)
_TOOL_COMMAND = re.compile(r"[\w.\-]+\((.*)\)", re.DOTALL)
_COMMAND_ENTRY = re.compile(r"[\w.+:\[-]+(?: [\w.+:-]+)?")


def _command_entry(value: str) -> str | None:
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
    """Checkpoints appended as results arrive; taint only ever grows."""

    def __init__(self) -> None:
        self.current = Taint()
        self.checkpoints = [TaintCheckpoint(at=0, taint=self.current)]

    def bring(self, at: int, taint: Taint) -> None:
        merged = Taint(private=self.current.private or taint.private, untrusted=self.current.untrusted or taint.untrusted)
        if merged == self.current:
            return
        self.current = merged
        if self.checkpoints[-1].at == at:
            self.checkpoints[-1] = TaintCheckpoint(at=at, taint=merged)
        else:
            self.checkpoints.append(TaintCheckpoint(at=at, taint=merged))


# ─── harness voices ─────────────────────────────────────────────────────────

#: Text each agent records as a user turn that no person wrote, matched as a
#: prefix by the miner (`Voices.harness_prefixes`). `--voices claude` or
#: `--voices codex` names a profile; the profile of the format being read is
#: always applied.
HARNESS_VOICE_PROFILES: dict[str, tuple[str, ...]] = {
    "claude": (
        "This session is being continued from a previous conversation",
        "[Request interrupted by user",
        "Caveat: The messages below were generated by the user while running local commands",
        "<command-name>",
        "<command-message>",
        "<local-command-stdout>",
        "<local-command-stderr>",
        "<bash-input>",
        "<bash-stdout>",
        "<bash-stderr>",
        "<system-reminder>",
        "<task-notification>",
        "<user-prompt-submit-hook>",
        "Stop hook feedback:",
        "No response requested.",
    ),
    "codex": (
        "<environment_context>",
        "<user_instructions>",
        "# AGENTS.md instructions",
        "<turn_aborted>",
        "<user_shell_command>",
        "<INSTRUCTIONS>",
    ),
}


def expand_voices(values: Iterable[str]) -> tuple[str, ...]:
    """`--voices` values as prefixes: a profile name expands to its
    profile, anything else is a prefix as written. Empty values are dropped."""
    out: list[str] = []
    for value in values:
        for prefix in HARNESS_VOICE_PROFILES.get(value, (value,)):
            if prefix and prefix not in out:
                out.append(prefix)
    return tuple(out)


def voices_from_env_value(raw: str | None) -> tuple[str, ...]:
    """`MECHA_HARNESS_VOICES` as the CLI reads it: a JSON list of strings, or
    (for a shell) one prefix or profile name per line."""
    if not raw or not raw.strip():
        return ()
    stripped = raw.strip()
    if stripped.startswith("["):
        try:
            values = msgspec.json.decode(stripped)
        except msgspec.DecodeError as exc:
            raise InvalidInput(f"MECHA_HARNESS_VOICES: not a JSON list of strings: {exc}") from None
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InvalidInput("MECHA_HARNESS_VOICES: not a JSON list of strings")
        return expand_voices(values)
    return expand_voices(line.strip() for line in stripped.splitlines())


# ─── reading lines ──────────────────────────────────────────────────────────

#: What a reader reads: a file's bytes, or the file itself (read line by
#: line, so memory follows the longest line and the transcript, not the file).
Source = bytes | IO[bytes]


def numbered_lines(source: Source) -> Iterator[tuple[int, bytes, bool]]:
    """`(line number, line, is_last_unterminated)` for each non-blank line.
    The flag lets a reader forgive a last line an agent is still writing."""
    if not isinstance(source, bytes | bytearray | memoryview):
        number = 0
        for chunk in source:
            number += 1
            torn = not chunk.endswith(b"\n")
            line = chunk if torn else chunk[:-1]
            if line and not line.isspace():
                yield number, line, torn
        return
    data = bytes(source)
    number = 0
    start = 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        torn = end < 0
        if torn:
            end = size
        number += 1
        line = data[start:end]
        if line and not line.isspace():
            yield number, line, torn
        start = end + 1


def line_error(path: str, fmt: str, number: int, why: str) -> InvalidInput:
    return InvalidInput(f"{path}:{number}: reading as {FORMAT_NAMES[fmt]}: {why}")


#: How many skipped lines of one file are named one by one; the rest are
#: counted in one more warning. A file of a million bad lines must not make a
#: million warnings.
NAMED_SKIPS = 20

T = TypeVar("T")

#: What decoding a line can raise: not JSON (a bad byte and a lone surrogate
#: included — msgspec refuses both), JSON of the wrong shape, or nesting
#: deeper than the decoder follows (msgspec raises `RecursionError` near the
#: interpreter's recursion limit; one such line once took a whole import down).
LINE_FAULTS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def line_fault(exc: BaseException) -> str:
    """A decoding failure in words, for the warning that names the line."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return str(exc)


#: How deep a tool call's arguments are kept. A line may nest as deep as
#: the decoder follows (near the interpreter's recursion limit); kept that
#: deep, the transcript could not be written to the inbox and read back by a
#: pass with a deeper stack. No real call nests past a few levels.
MAX_INPUT_DEPTH = 32
DEEP_PLACEHOLDER = "[nested too deeply to keep]"


def bounded(value: object, depth: int = MAX_INPUT_DEPTH) -> object:
    """`value` with anything nested deeper than `depth` replaced by a
    placeholder; the same object when nothing is (the common case costs a
    walk, not a copy)."""
    if isinstance(value, dict):
        if depth <= 0:
            return DEEP_PLACEHOLDER
        out = {k: bounded(v, depth - 1) for k, v in value.items()}
        return value if all(out[k] is value[k] for k in value) else out
    if isinstance(value, list):
        if depth <= 0:
            return DEEP_PLACEHOLDER
        items = [bounded(v, depth - 1) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


class LineReader:
    """What every reader of a line-per-record format shares: a line that is
    not a record of the format is skipped with a warning naming the file and
    the line, and counted; a file is refused only when no line of it was a
    record at all (`finish`). One odd line — a torn write, a bad byte, a
    field of a shape a newer release writes — costs that line, never the
    session."""

    def __init__(self, name: str, fmt: str) -> None:
        self.name = name
        self.fmt = fmt
        self.warnings: list[str] = []
        self.skipped = 0
        self.seen = 0
        self._first_fault: tuple[int, str] | None = None

    def decode(self, decoder: msgspec.json.Decoder[T], number: int, raw: bytes | msgspec.Raw, torn: bool = False) -> T | None:
        """`raw` decoded, counted as a record; `None` (the line skipped) when
        it is not one."""
        try:
            return decoder.decode(raw)
        except LINE_FAULTS as exc:
            self.skip(number, line_fault(exc), torn=torn)
            return None

    def skip(self, number: int, why: str, *, torn: bool = False) -> None:
        self.skipped += 1
        if self._first_fault is None:
            self._first_fault = (number, why)
        if self.skipped > NAMED_SKIPS:
            return
        if torn:
            self.warnings.append(f"{self.name}:{number}: skipped a last line cut off mid-write")
        else:
            self.warnings.append(f"{self.name}:{number}: skipped a line that is not a record of {FORMAT_NAMES[self.fmt]}: {why}")

    def lines(self, source: Source) -> Iterator[tuple[int, bytes, bool]]:
        """`numbered_lines(source)`, counting them for `finish`."""
        for item in numbered_lines(source):
            self.seen += 1
            yield item

    def finish(self) -> None:
        """Refuse the file when nothing in it was readable; otherwise say
        how many skipped lines went unnamed."""
        if self.seen == self.skipped and self._first_fault is not None:
            number, why = self._first_fault
            raise line_error(self.name, self.fmt, number, f"no line of the file is a readable record (the first: {why})")
        if self.skipped > NAMED_SKIPS:
            self.warnings.append(f"{self.name}: {self.skipped - NAMED_SKIPS} more line(s) skipped as not records of {FORMAT_NAMES[self.fmt]}")


# ─── detection and the one entry point ──────────────────────────────────────

_CLAUDE_TYPES = frozenset(
    {"user", "assistant", "summary", "system", "attachment", "queue-operation", "file-history-snapshot", "custom-title", "permission-mode"}
)
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})


class _Head(msgspec.Struct):
    type: object = None
    role: object = None
    payload: msgspec.Raw = msgspec.Raw()
    messages: msgspec.Raw = msgspec.Raw()
    sessionId: object = None
    parentUuid: object = None
    record_type: object = None
    instructions: msgspec.Raw = msgspec.Raw()


#: How many lines detection reads looking for the first record (a file whose
#: first lines are all unreadable is still its format).
SNIFF_LINES = 64


def _line_head(source: Source, skip: int = 0) -> _Head | None:
    """The first line of `source` (after `skip` non-blank ones) that decodes
    as a record head, within `SNIFF_LINES` lines."""
    lines = numbered_lines(source)
    for i in range(SNIFF_LINES):
        item = next(lines, None)
        if item is None:
            return None
        if i < skip:
            continue
        try:
            return msgspec.json.decode(item[1], type=_Head)
        except LINE_FAULTS:
            if skip == 0:
                return None  # the first line alone, first: see `detect_format`
            continue
    return None


def detect_format(data: Source) -> str | None:
    """Which format a file is, from its first record; `None` when it is
    none of them. Decided on structure, not on the file's name: a person
    renames files, and every format here is `.jsonl`. The first line is
    tried, then the whole file as one object (a pretty-printed transcript),
    then the next lines (a session whose first line is not a record). Given
    an open file, it reads the head and leaves the file where it found it."""
    if not isinstance(data, bytes | bytearray | memoryview):
        start = data.tell()
        try:
            head = _line_head(data)
            if head is None:
                data.seek(start)
                whole = data.read(_WHOLE_OBJECT_LIMIT + 1)
                head = _whole_object_head(whole) if len(whole) <= _WHOLE_OBJECT_LIMIT else None
            if head is None:
                data.seek(start)
                head = _line_head(data, skip=1)
        finally:
            data.seek(start)
        return _format_of(head)
    stripped = bytes(data).lstrip()
    if not stripped:
        return None
    head = _line_head(stripped) or _whole_object_head(stripped) or _line_head(stripped, skip=1)
    return _format_of(head)


#: A pretty-printed transcript (one JSON object over many lines) is looked
#: at whole only up to this size when detecting from an open file.
_WHOLE_OBJECT_LIMIT = 64 * 2**20


def _whole_object_head(data: bytes) -> _Head | None:
    # A pretty-printed JSON object spans lines: try the whole file.
    try:
        return msgspec.json.decode(data, type=_Head)
    except LINE_FAULTS:
        return None


def _format_of(head: _Head | None) -> str | None:
    if head is None:
        return None
    if head.messages:
        return "mecha"
    if head.role in ("user", "assistant"):
        return "mecha"
    if head.payload and head.type in _CODEX_TYPES:
        return "codex"
    if head.type is None and (head.record_type is not None or bool(head.instructions)):
        return "codex"  # the older rollout shape: a bare meta line first
    if head.type in _CLAUDE_TYPES or head.sessionId is not None or head.parentUuid is not None:
        return "claude"
    return None


def read_session(
    path: Path,
    fmt: str | None = None,
    *,
    policy: TaintPolicy | None = None,
    data: Source | None = None,
) -> ReadSession:
    """Read one session file in any known format (`fmt` forces one), from
    `data` when given (its bytes, or the file already open), else from
    `path`, line by line.

    Errors are `InvalidInput` naming the file, the format tried and, where
    there is one, the line — a session id the store could never record
    (`identity.record_id_problem`) included.
    """
    session = _read_session(path, fmt, policy=policy, data=data)
    from mecha.core.identity import validate_record_id

    validate_record_id(session.session_id, f"{path}: session_id")
    return session


def _read_session(
    path: Path,
    fmt: str | None,
    *,
    policy: TaintPolicy | None,
    data: Source | None,
) -> ReadSession:
    if fmt is not None and fmt not in FORMATS:
        raise InvalidInput(f"--format {fmt!r}: must be one of {', '.join(FORMATS)}")
    if data is None:
        # Read line by line from the file: a session of hundreds of MB is
        # never held whole.
        try:
            with path.open("rb") as f:
                return _read_source(path, fmt, policy, f)
        except OSError as exc:
            raise InvalidInput(f"{path}: {exc.strerror or exc}") from None
    return _read_source(path, fmt, policy, data)


def _read_source(path: Path, fmt: str | None, policy: TaintPolicy | None, data: Source) -> ReadSession:
    found = fmt or detect_format(data)
    if found is None:
        raise InvalidInput(
            f"{path}: not a session file: its first record is neither a mecha transcript, "
            "a Claude Code session line nor a Codex CLI rollout line (use --format to force one)"
        )
    if found == "claude":
        from mecha.core.sessions.claude_code import read_claude_code

        return read_claude_code(data, name=str(path), path=path, policy=policy)
    if found == "codex":
        from mecha.core.sessions.codex_cli import read_codex

        return read_codex(data, name=str(path), path=path, policy=policy)
    from mecha.core.sessions.files import parse_transcript

    session = parse_transcript(path, data if isinstance(data, bytes) else data.read())
    return ReadSession(
        source="mecha",
        session_id=session.session_id,
        messages=session.messages,
        taint_timeline=session.taint_timeline,
        interactive=session.interactive,
    )
