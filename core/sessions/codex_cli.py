"""Codex CLI rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) read
into a wire transcript.

Pure: bytes in, `ReadSession` out. Each line is `{"timestamp", "type",
"payload"}`; the kinds and the quirks handled:

- **`session_meta`** gives the session id, the working directory and the
  git branch checked out there (`git.branch`: what finds the repository of
  a worktree since removed, `scope.project_of_session`). Its
  `source` says who drove the session: a subagent (an object) or another
  program (`exec`, `mcp`) is not a person at a terminal, so the session is
  `interactive: false` and classifies `derived`.
- **`turn_context`** (per-turn settings) and `compacted` records say nothing a
  person said; skipped.
- **`response_item`**: a `message` (role `user` or `assistant`; `developer`
  and `system` are the harness's), `function_call` / `custom_tool_call` /
  `local_shell_call` (tool calls, joined to the assistant message they follow
  so `tools_before` sees them all), `function_call_output` /
  `custom_tool_call_output` (results, consecutive ones in one wire message;
  the output is a string, `{content, success}`, or a list of content items),
  `web_search_call` (a call whose results went straight to the model),
  `reasoning` (dropped).
- **Wrappers in the person's voice**: `<environment_context>`,
  `<user_instructions>`, `# AGENTS.md instructions …`, `<user_shell_command>`
  and `<turn_aborted>` texts ride in user messages and are the harness's (a
  `<user_shell_command>` — a command the person ran with `!` — also taints
  what follows as a `shell` call of its command would: its output reached
  the model).
- **`event_msg`**: `user_message` repeats what the person typed (a newer
  file has both it and the user `message` item; the pair is read once),
  `agent_message` repeats the assistant's text (skipped),
  `turn_aborted` is an interrupt: calls left without a result get one saying
  so, and the person's next words ride beside them — a steer. Approval
  requests are not persisted by Codex; a person's refusal shows as a call's
  output (`exec command rejected by user`, `patch rejected by user`), and
  that, with the person's next words as its reason, is one `denial` whose
  context is the refused call.
- **The older rollout shape** (a bare meta line, then bare response items,
  `record_type` state lines) reads the same way.
- A **function call's `arguments`** is a JSON string; some files hold the
  object itself, which is read as the arguments.
- **Lines that are not records** (cut off mid-write, a bad byte, a lone
  surrogate, nested too deeply, a field of an unknown shape) are skipped
  with a warning naming the file and line, and counted; only a file with no
  readable record is refused (`reader.LineReader`).

Taint is rebuilt from the calls (see `reader.TaintPolicy`): web search,
every MCP tool (Codex names them `server__tool`), unknown tools and any
shell command not known to stay on the machine (`shell.py`) are untrusted. A
`write_stdin` result (more output of a process an exec call left running,
"Process running with session ID 42") is decided by the command that started
that session; a session the file never started is untrusted. A
**subagent's report** (`wait_agent`) is as trusted as the subagent's own
rollout: the child `spawn_agent` named (`{"agent_id": …}`) is looked for
under the sessions folder (`rollout-*<thread id>.jsonl`) and must read clean
to its end; a missing or untrusted one leaves the report untrusted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from mecha.core.environment.agents import CODEX
from mecha.core.errors import InvalidInput
from mecha.core.sessions.lines import LINE_FAULTS, SessionFormat, Source, bounded
from mecha.core.sessions.mining import DENIAL_PREFIX
from mecha.core.sessions.reader import (
    IMAGE_PLACEHOLDER,
    INTERRUPTED_RESULT,
    UNCHECKED_SUBAGENT,
    Blame,
    ReaderCore,
    ReadSession,
    TaintPolicy,
    stamp_of,
    subagent_blame,
)
from mecha.core.sessions.transcript import Block, Message, Taint, taint_at

CODEX_POLICY = TaintPolicy(
    local=frozenset({"apply_patch", "update_plan", "view_image", "read_file", "list_dir", "grep_files"}),
    # `write_stdin` reads more output of a process `exec_command` started.
    shell=frozenset({"shell", "shell_command", "exec_command", "local_shell", "container.exec", "unified_exec", "write_stdin"}),
    untrusted=frozenset({"web_search", "web_fetch"}),
)

#: How an exec call's output says its process is still running, and as which
#: session (`write_stdin`'s `session_id`).
_EXEC_SESSION = re.compile(r"Process running with session ID (\d+)")
#: What Codex writes as a call's output when the person refused it.
REJECTIONS = ("exec command rejected by user", "patch rejected by user")
_HARNESS_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<user_shell_command>",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
)


class _Content(msgspec.Struct):
    type: str = ""
    text: str | None = None


class _Payload(msgspec.Struct):
    type: str = ""
    # session_meta
    id: str | None = None
    cwd: str | None = None
    source: Any = None
    #: `{commit_hash, branch, repository_url}`, when the folder is a checkout.
    git: Any = None
    # message
    role: str | None = None
    content: list[_Content] | str | None = None
    # calls
    name: str | None = None
    #: A JSON string as the Responses API has it; some files hold the
    #: object itself, read as the arguments.
    arguments: Any = None
    input: Any = None
    call_id: str | None = None
    action: Any = None
    output: Any = None
    # event_msg
    message: str | None = None
    images: list[Any] | None = None
    reason: str | None = None


class _Line(msgspec.Struct):
    type: str | None = None
    #: When the line was written (ISO 8601, UTC): a correction's time.
    timestamp: str | None = None
    payload: _Payload | None = None
    # the older shape: a bare meta line / bare items
    id: str | None = None
    record_type: str | None = None


_line = msgspec.json.Decoder(_Line)
_payload = msgspec.json.Decoder(_Payload)


def output_text(output: Any, depth: int = 0) -> str:
    """A call's output as text, whichever shape the version wrote."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        inner = output.get("content", output.get("output"))
        if inner is not None and depth < 8:
            return output_text(inner, depth + 1)
        try:
            return msgspec.json.encode(output).decode()
        except (RecursionError, TypeError, UnicodeError):
            return "[an output nested too deeply to read]"
    if isinstance(output, list):
        parts = []
        for item in output:
            if isinstance(item, dict):
                if isinstance(item.get("text"), str):
                    parts.append(item["text"])
                elif str(item.get("type", "")).endswith("image"):
                    parts.append(IMAGE_PLACEHOLDER)
            elif isinstance(item, str):
                parts.append(item)
        return "\n".join(parts)
    return str(output)


def call_arguments(arguments: Any) -> Any:
    """A function call's arguments: the JSON string decoded (kept as the
    string when it is not JSON, or nested too deeply to follow), or the
    object a file holds in its place."""
    if arguments is None or arguments == "":
        return {}
    if not isinstance(arguments, str):
        return arguments
    try:
        return msgspec.json.decode(arguments)
    except LINE_FAULTS:
        return arguments


def person_text(text: str) -> str | None:
    """The person's words in one user text item; `None` for a harness wrapper."""
    stripped = text.strip()
    if not stripped or stripped.startswith(_HARNESS_PREFIXES):
        return None
    return stripped


def shell_command(name: str | None, args: Any) -> str | list[str] | None:
    """What a shell call ran, for the trust decision: the argv array it was
    given (`["bash", "-lc", "<script>"]`, `["ls", "-la"]`: checked as an
    argv, so a `-c` script is parsed and no quoting is lost), or its command
    line. `None` (untrusted) when the call says neither."""
    if not isinstance(args, dict):
        return args if isinstance(args, str) else None
    for key in ("command", "cmd"):
        value = args.get(key)
        if isinstance(value, list):
            return [str(v) for v in value]
        if isinstance(value, str):
            return value
    return None


def interactive_source(source: Any) -> bool:
    """Whether a person drove the session: the CLI, the IDE extension, or no
    record of who (the older files) — never a subagent or another program."""
    if isinstance(source, dict):
        return False
    return source not in ("exec", "mcp")


class _Reader(ReaderCore):
    def __init__(self, name: str, policy: TaintPolicy):
        super().__init__(name, SessionFormat.CODEX, policy)
        #: The command each still-running exec session was started with.
        self.exec_sessions: dict[str, str | list[str]] = {}
        self.interactive = True
        #: The person's words already read this turn (the item/event pair).
        self.said_this_turn: list[str] = []
        self.searches = 0
        #: The subagents this session spawned (their thread ids), and where
        #: their rollouts are looked for (`sessions_root`; none: reports
        #: are untrusted).
        self.children: list[str] = []
        self.sessions_root: Path | None = None

    def _assistant_blocks(self, blocks: list[Block]) -> None:
        self.pending_denial = None
        self.interrupted = False
        self.said_this_turn = []
        if self.out and self.out[-1].role == "assistant":
            content = self.out[-1].content
            assert isinstance(content, list)
            content.extend(blocks)
        else:
            self.out.append(Message(role="assistant", content=blocks))

    def _results(self, blocks: list[Block], brought: tuple[Taint, Blame | None]) -> None:
        self.add_results(blocks)
        self.taint.bring(len(self.out) - 1, *brought)

    def person(self, words: str) -> None:
        if words in self.said_this_turn:
            return
        self.said_this_turn.append(words)
        if self.fold_words(words):
            return
        self.out.append(Message.user(words))

    def line(self, number: int, raw: bytes, torn: bool) -> None:
        line = self.lines.decode(_line, number, raw, torn)
        if line is None:
            return
        self.stamp = stamp_of(line.timestamp)
        kind, payload = line.type, line.payload
        if payload is None:
            if line.record_type is not None:
                return
            if kind is None:
                # The older shape's first line: bare session metadata.
                if line.id and self.session_id is None:
                    self.session_id = line.id
                return
            payload = self.lines.decode(_payload, number, raw)
            if payload is None:
                return
            kind = "response_item"
        if kind == "session_meta":
            if payload.id and self.session_id is None:
                self.session_id = payload.id
                self.project = payload.cwd
                self.interactive = interactive_source(payload.source)
                branch = payload.git.get("branch") if isinstance(payload.git, dict) else None
                self.branch = branch if isinstance(branch, str) and branch and branch != "HEAD" else None
        elif kind == "response_item":
            self._item(payload)
        elif kind == "event_msg":
            self._event(payload)

    def _item(self, p: _Payload) -> None:
        kind = p.type
        if kind == "message":
            texts = p.content if isinstance(p.content, list) else [_Content(type="input_text", text=p.content or "")]
            if p.role == "assistant":
                parts = [c.text for c in texts if c.text and c.type in ("output_text", "text")]
                if parts:
                    self._assistant_blocks([Block.text_block("".join(parts))])
            elif p.role == "user":
                words: list[str] = []
                for c in texts:
                    if c.type in ("input_image", "image"):
                        words.append(IMAGE_PLACEHOLDER)
                    elif c.text:
                        if c.text.strip().startswith("<turn_aborted>"):
                            self._abort()
                        self.person_ran("shell", c.text)
                        said = person_text(c.text)
                        if said:
                            words.append(said)
                said = " ".join(words).strip()
                if said:
                    self.person(said)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = p.call_id or p.id or f"call-{len(self.calls)}"
            if kind == "function_call":
                args = call_arguments(p.arguments)
                name = p.name or ""
            elif kind == "custom_tool_call":
                args, name = p.input, p.name or ""
            else:
                args, name = p.action, "local_shell"
            use = Block.tool_use(call_id, name, bounded(args))
            self.calls[call_id] = use
            self._assistant_blocks([use])
        elif kind == "web_search_call":
            self.searches += 1
            query = p.action.get("query") if isinstance(p.action, dict) else None
            use = Block.tool_use(p.id or f"web-search-{self.searches}", "web_search", {"query": query} if query else {})
            self._assistant_blocks([use])
            # Its results went straight into the model's context.
            self.taint.bring(len(self.out) - 1, *self.judge("web_search"))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(p)

    def _output(self, p: _Payload) -> None:
        call_id = p.call_id or ""
        text = output_text(p.output)
        call = self.calls.get(call_id)
        if text.strip().startswith(REJECTIONS):
            first = self.pending_denial is None and not self.denied_in_batch()
            if first:
                block = Block.tool_result(call_id, DENIAL_PREFIX, True)
                self.pending_denial = block
            else:
                block = Block.tool_result(call_id, text, True)
            self._results([block], (Taint(), None))
            return
        name = call.name if call is not None else None
        args = call.input if call is not None else None
        if name == "write_stdin":
            # More output of a process an exec call started: decided by the
            # command that started it (a session the file never started:
            # untrusted). What is typed into it changes nothing — a shell or
            # an interpreter reading its input is untrusted to begin with.
            session = args.get("session_id") if isinstance(args, dict) else None
            command: str | list[str] | None = self.exec_sessions.get(str(session)) if session is not None else None
        else:
            command = shell_command(name, args)
            running = _EXEC_SESSION.search(text) if name in self.policy.shell else None
            if running is not None and command is not None:
                self.exec_sessions[running.group(1)] = command
        if is_agent_tool(name, "spawn_agent"):
            # Its output names the child (`{"agent_id": …}`): ids, no text
            # of the child's yet. What the child says comes back through
            # `wait_agent`, decided by the child's own rollout.
            child = spawned_child(text)
            if child is not None:
                self.children.append(child)
            brought = (Taint(private=True), None) if child is not None else self.judge(name, command)
        elif is_agent_tool(name, "wait_agent") and self.sessions_root is not None:
            brought = children_taint(self.sessions_root, waited_for(args, self.children), self.policy)
        else:
            brought = self.judge(name, command)
        failed = isinstance(p.output, dict) and p.output.get("success") is False
        self._results([Block.tool_result(call_id, text, failed)], brought)

    def _abort(self) -> None:
        """The person interrupted the turn: every call still without a result
        gets one saying so, and their next words ride beside it."""
        if self.interrupted:
            return
        answered = {b.tool_use_id for m in self.out[-2:] if m.role == "user" for b in m.blocks()}
        last = next((m for m in reversed(self.out) if m.role == "assistant"), None)
        open_calls = [u for u in (last.tool_uses() if last else []) if u.id not in answered and u.name != "web_search"]
        if open_calls and self.out[-1].role == "assistant":
            self._results([Block.tool_result(u.id or "", INTERRUPTED_RESULT, True) for u in open_calls], (Taint(), None))
        self.interrupted = True

    def _event(self, p: _Payload) -> None:
        if p.type == "user_message":
            words = person_text(p.message or "")
            extra = [IMAGE_PLACEHOLDER] * len(p.images or [])
            said = " ".join([*([words] if words else []), *extra]).strip()
            if said:
                self.person(said)
        elif p.type == "turn_aborted":
            self._abort()


# ─── subagents ──────────────────────────────────────────────────────────────

#: The namespaces Codex's own multi-agent tools are recorded under. An MCP
#: server's tool that happens to be called `spawn_agent` is not one of them.
_AGENT_NAMESPACES = ("", "collaboration__", "multi_agent_v1__", "collaboration.", "multi_agent_v1.")
#: What a `spawn_agent` output may hold besides the child's id: short labels.
_SPAWN_KEYS = frozenset({"agent_id", "nickname", "task_name", "agent_type", "status"})


def is_agent_tool(name: str | None, tool: str) -> bool:
    """`spawn_agent` / `wait_agent`, bare or under Codex's own namespaces."""
    return name is not None and any(name == ns + tool for ns in _AGENT_NAMESPACES)


def spawned_child(output: str) -> str | None:
    """The thread id a `spawn_agent` output names — only when the output is
    nothing but the id and short labels (`{"agent_id": …, "nickname": …}`):
    anything longer is text in the model's context, decided like any tool's."""
    try:
        value = msgspec.json.decode(output)
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(value, dict) or not set(value) <= _SPAWN_KEYS:
        return None
    if not all(isinstance(v, str) and len(v) <= 64 for v in value.values()):
        return None
    child = value.get("agent_id")
    return child if isinstance(child, str) and re.fullmatch(r"[\w.:-]+", child) else None


def waited_for(args: Any, children: list[str]) -> list[str]:
    """The children a `wait_agent` call waits on: those its arguments name,
    or — naming none the reader knows — every child spawned so far."""
    named: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str) and value in children:
            named.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(args)
    return named or list(children)


def sessions_root(path: Path | None) -> Path | None:
    """The folder Codex keeps rollouts under (`~/.codex/sessions`, above the
    `YYYY/MM/DD` folders), where a subagent's own rollout is looked for;
    the rollout's own folder when it is not laid out by date."""
    if path is None:
        return None
    parents = path.parents
    if len(parents) > 3 and all(p.name.isdigit() for p in (parents[0], parents[1], parents[2])):
        return parents[3]
    return path.parent


def children_taint(root: Path, children: list[str], policy: TaintPolicy) -> tuple[Taint, Blame | None]:
    """A subagent's report is as trusted as the subagent's own rollout:
    local when the rollout of every child waited on is found under `root`
    (its file name ends with the child's thread id) and reads clean to its
    end; untrusted otherwise, saying which."""
    def unchecked(why: str, program: str | None = None) -> tuple[Taint, Blame]:
        label = "wait_agent" if program is None else f"wait_agent({program})"
        return Taint(private=True, untrusted=True), Blame(tool="wait_agent", program=program, why=why,
                                                          stranger=f"{label}: {why} ({UNCHECKED_SUBAGENT})")

    if not children:
        return unchecked("a subagent's report whose rollout the file does not name")
    for child in children:
        if "/" in child or child.startswith("."):
            return unchecked("a subagent's report whose rollout the file does not name")
        found = sorted(root.rglob(f"rollout-*{child}.jsonl"))
        if not found:
            return unchecked("a subagent's report: its rollout is not in the sessions folder", child)
        try:
            with found[0].open("rb") as f:
                read = read_codex(f, name=str(found[0]), policy=policy)
        except (OSError, InvalidInput) as exc:
            return unchecked(f"a subagent's report: its rollout cannot be read ({exc})", child)
        last = taint_at(read.taint_timeline, max(len(read.messages) - 1, 0))
        if last is None or last.untrusted:
            return Taint(private=True, untrusted=True), subagent_blame("wait_agent", child, "rollout", read.blames)
    return Taint(private=True), None


def read_codex(
    data: Source,
    *,
    name: str = "<codex rollout>",
    path: Path | None = None,
    policy: TaintPolicy | None = None,
) -> ReadSession:
    """One Codex CLI rollout file as a wire transcript (see the module's
    docstring for every quirk handled)."""
    reader = _Reader(name, policy or CODEX_POLICY)
    reader.sessions_root = sessions_root(path)
    lines = reader.read(data)
    base = reader.base_id(path)
    return reader.session(SessionFormat.CODEX, f"{CODEX.session_id_prefix}{base}", lines, interactive=reader.interactive)
