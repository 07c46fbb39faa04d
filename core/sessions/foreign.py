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
  know, a shell command that reaches the network — and private (but still
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
    #: Lines skipped on the way (a torn last line, an unknown record kind).
    warnings: list[str] = msgspec.field(default_factory=list)
    #: For each message, the file line (1-based) it began on; empty when
    #: the format does not say.
    lines: list[int] = msgspec.field(default_factory=list)


def note_lines(lines: list[int], messages: Sequence[object], number: int) -> None:
    """Record `number` as the line of every message a reader added while
    reading it (and forget lines of messages it took back)."""
    del lines[len(messages):]
    lines.extend([number] * (len(messages) - len(lines)))


# ─── taint ──────────────────────────────────────────────────────────────────

#: Shell commands that fetch from the network: a fetching program in command
#: position anywhere in the line (after `;`, `&&`, `|`, `$(`, a quote opening
#: a `bash -c` script, `sudo`, …), or
#: a fetching subcommand of git, gh or a package manager. Broad on purpose:
#: a false alarm costs one intervention its full evidence, a miss lets a
#: stranger's text argue for a rule.
NETWORK_COMMANDS = re.compile(
    r"""(?:^|[;&|(`"']|\$\()\s*"""
    r"(?:(?:sudo|env|time|command|exec|nohup|xargs)\s+(?:-\S+\s+)*|\w+=\S*\s+)*"
    r"(?:curl|wget|http|https|xh|nc|ncat|telnet|ssh|scp|sftp|ftp|rsync|aria2c|lynx|w3m|links)(?=$|[\s;&|)])"
    r"|\bgit\s+(?:clone|fetch|pull|push|ls-remote|submodule)\b"
    r"|\bgh\s+(?:issue|pr|api|repo|release|run|search|gist)\b"
    r"|\b(?:pip3?|uv|npm|npx|pnpm|yarn|bun|cargo|go|gem|brew|apt|apt-get|dnf|docker|podman)\s+(?:install|add|get|pull|fetch|download|update|search)\b"
    r"|\b(?:urlopen|urllib\.request|requests\.(?:get|post)|httpx\.|fetch\()"
)


class TaintPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Which recorded tool results taint a conversation, and how.

    `local` tools read or change the person's machine: their results make
    the conversation private, not untrusted. `shell` tools are local unless
    the command fetches from the network. `untrusted` tools bring
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

    def with_overrides(self, *, trust: Iterable[str] = (), distrust: Iterable[str] = ()) -> TaintPolicy:
        """This policy with some tools moved: `trust` to local, `distrust` to
        untrusted (a distrusted name wins over a trusted one)."""
        trust, distrust = frozenset(trust), frozenset(distrust)
        return msgspec.structs.replace(
            self,
            local=(self.local | trust) - distrust,
            shell=self.shell - distrust,
            personal=self.personal - distrust,
            untrusted=(self.untrusted - trust) | distrust,
        )

    def taint_of(self, name: str | None, command: str | None = None) -> Taint:
        """What the result of one call to `name` brings into the conversation."""
        if name in self.untrusted:
            return Taint(private=True, untrusted=True)
        if name in self.personal:
            return Taint()
        if name in self.local:
            return Taint(private=True)
        if name in self.shell:
            networked = command is None or NETWORK_COMMANDS.search(command) is not None
            return Taint(private=True, untrusted=networked)
        return Taint(private=True, untrusted=True)


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


def numbered_lines(data: bytes) -> Iterator[tuple[int, bytes, bool]]:
    """`(line number, line, is_last_unterminated)` for each non-blank line.
    The flag lets a reader forgive a last line an agent is still writing."""
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
        if line.strip():
            yield number, line, torn
        start = end + 1


def line_error(path: str, fmt: str, number: int, why: str) -> InvalidInput:
    return InvalidInput(f"{path}:{number}: reading as {FORMAT_NAMES[fmt]}: {why}")


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


def detect_format(data: bytes) -> str | None:
    """Which format a file is, from its first record; `None` when it is none
    of them. Decided on structure, not on the file's name: a person renames
    files, and every format here is `.jsonl`."""
    stripped = data.lstrip()
    if not stripped:
        return None
    first = next(numbered_lines(stripped), None)
    head = None
    if first is not None:
        try:
            head = msgspec.json.decode(first[1], type=_Head)
        except (msgspec.DecodeError, msgspec.ValidationError):
            head = None
    if head is None:
        # A pretty-printed JSON object spans lines: try the whole file.
        try:
            head = msgspec.json.decode(stripped, type=_Head)
        except (msgspec.DecodeError, msgspec.ValidationError):
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
    data: bytes | None = None,
) -> ReadSession:
    """Read one session file in any known format (`fmt` forces one).

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
    data: bytes | None,
) -> ReadSession:
    if fmt is not None and fmt not in FORMATS:
        raise InvalidInput(f"--format {fmt!r}: must be one of {', '.join(FORMATS)}")
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InvalidInput(f"{path}: {exc.strerror or exc}") from None
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

    session = parse_transcript(path, data)
    return ReadSession(
        source="mecha",
        session_id=session.session_id,
        messages=session.messages,
        taint_timeline=session.taint_timeline,
        interactive=session.interactive,
    )
