"""Claude Code session files (`~/.claude/projects/<project>/<session-id>.jsonl`)
read into a wire transcript.

Pure: bytes in, `ReadSession` out. One JSON event per line; a line's `type`
says what it is (`user`, `assistant`, `attachment`, and bookkeeping kinds —
`summary`, `system`, `queue-operation`, `file-history-snapshot`, … — that say
nothing a person said and are skipped). The quirks handled, each because
mining the file naively taught the wrong lesson or missed the right one:

- **One assistant message over several lines.** Each content block is written
  as its own line sharing `message.id`; lines with the id of the last
  assistant message are merged into it, so `tools_before` sees every call.
  Thinking blocks are dropped; a `<synthetic>` assistant line (Claude Code's
  own "No response requested.") is not the model.
- **Tool results** arrive one per user line (parallel calls give several);
  consecutive result lines become one wire message. A result's `content` is
  a string or a list of blocks (text and images).
- **`isMeta` lines** (caveats, skill loads, hook output) and **`isSidechain`
  lines** in a main file are not the person and are skipped. A file under a
  session's `subagents/` folder (or an `agent-*.jsonl` file, or one whose
  first line is a sidechain) is a subagent's: read whole, `interactive:
  false`, so its reflections classify `derived`. So is a headless session
  (`claude -p`, an Agent SDK program: its `entrypoint`), as Codex's `exec`
  sessions are (`headless_entrypoint`).
- **Compaction**: the summary a new context opens with (`isCompactSummary`,
  "This session is being continued from a previous conversation…") is the
  harness's, never a person's turn.
- **Wrappers in the person's voice**: `<command-name>` blocks become the
  slash command the person typed (`/model sonnet`), which the miner never
  mines; `<local-command-stdout>`, `<bash-input>`/`<bash-stdout>`,
  `<task-notification>`, `<bash-notification>`, `<user-prompt-submit-hook>`, "Caveat: …" and
  "Stop hook feedback:" text is dropped (a command the person ran with `!`
  is not their words, but its output reached the model: it taints what
  follows as a `Bash` call of that command would); `<system-reminder>` blocks
  and what an editor reports (`<ide_opened_file>`, `<ide_selection>`, any
  `<ide_…>` tag) are cut out of whatever text they ride in: a turn of only
  those is no turn.
- **Interrupt markers** (`[Request interrupted by user]`, `… for tool use]`,
  also at the start of a tool result) are events, never the person's text:
  the person's next words after an interrupt that cut a call short ride beside
  that call's result — a steer whose context is what was cut off.
- **Denials folded.** Claude Code's stock rejection ("The user doesn't want to
  proceed with this tool use…"), the interrupt marker after it and the
  person's next words are one denial: the result becomes the wire's
  `Denied by the user: <their words>`, so its context is the refused call. A
  reason typed into the rejection itself ("…the user said:") is used as is,
  unless it is Claude Code's own ("The user wants to clarify these
  questions.", written when the person chose to talk a question over).
  Only the first rejection in a batch carries it; the rest keep the stock
  text and are not mined twice.
- **Queued messages** — typed while the agent worked — are recorded as
  `queue-operation` lines: `enqueue` with the words, then one of `remove`
  (taken into the running turn), `dequeue` (sent as the next turn, which
  follows as an ordinary user line) or `popAll` (taken back into the input
  box: never delivered). A message is a steer at its delivery — the
  `remove` — riding beside the results it arrived with, or before the next
  answer when none are open. One delivered while a call waits for its result
  (a `remove` written before that result, or, when the person pressed Esc, a
  `dequeue` and its user line written before the refusal) goes with that
  result: the refusal's reason, or a steer beside it. Newer files also write a `queued_command`
  attachment for the same delivery (older ones only the attachment); the
  pair is read once. A queued task notification is not the person, and it
  waits behind the person's words: a `remove` that does not name what it
  took took the first message the person typed (a notice is handed over
  when the turn ends, as a user line of its own, which takes it out of the
  queue). (The
  movements are as public readers of the format describe them, e.g. a
  count over 116 real transcripts of enqueue against remove / dequeue /
  popAll; the fixtures here are written to that shape.)
- **AskUserQuestion answers** are the person's words: they ride beside the
  question's result as a steer whose context is the question.
- **Images** become an `[image]` placeholder beside the words they came with.
- **Background shells**: a `Bash` call with `run_in_background` names its
  shell in its result ("… running in background with ID: bash_3"); a later
  `BashOutput` of that shell is decided by the command that started it, and
  one whose start the file does not show is untrusted.
- **Lines that are not records** — a last line cut off mid-write (the
  agent is still running), a bad byte, a lone surrogate, nesting past what
  the decoder follows, a `message` that is a string — are skipped with a
  warning naming the file and line, and counted (`reader.LineReader`); a
  bookkeeping line's odd fields are never decoded at all. Only a file with
  no readable record is refused. A tool call's input is kept
  `reader.MAX_INPUT_DEPTH` levels deep.

Taint is rebuilt from the tools called (see `reader.TaintPolicy`): the
Claude Code policy below lists its built-in tools. A **subagent's report**
(`Task`, `Agent`) is as trusted as the subagent's own transcript, which
Claude Code keeps beside the session (`<session>/subagents/agent-<id>.jsonl`
since 2.1.2; before, `agent-<id>.jsonl` in the project folder, its lines
naming the session; the id named in the result's `agentId`): clean when that
file is found and reads clean, untrusted otherwise (`subagent_taint`).
Claude Code 1.0 wrote a subagent's lines into the session's own file
(`isSidechain`, chained by `parentUuid`) and named no agent in the result:
its report is matched to the chain started with its prompt that ends with
its words (`InlineSubagents`). A **workflow's result**
(`Workflow`) is as trusted as every transcript of its run
(`<session>/subagents/workflows/<run>/`, the run named in the result's
`runId`), all of them found through the run's journal and read the same
way; one missing or unclean, or no journal, keeps it untrusted
(`workflow_taint`). A call Claude Code **refused to run** — cancelled with a
sibling that failed, a tool or a workflow it does not have — answers in its
own fixed words and brought nothing in (`refused_unrun`); any other error is
judged as the tool's result, since a failed fetch or run can quote a
stranger.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from mecha.core.sessions.claude_subagents import (
    SUBAGENT_TOOLS,
    InlineSubagents,
    is_subagent_path,
    refused_unrun,
    safe_name,
    spawned_agent,
    subagent_dir,
    subagent_taint,
    workflow_run,
    workflow_taint,
)
from mecha.core.sessions.claude_words import INTERRUPT_MARKER, answers_text, person_text, rejection_reason
from mecha.core.sessions.lines import SessionFormat, Source, bounded
from mecha.core.sessions.mining import DENIAL_PREFIX, DOCUMENT_PLACEHOLDER
from mecha.core.sessions.reader import (
    IMAGE_PLACEHOLDER,
    INTERRUPTED_RESULT,
    Blame,
    ReaderCore,
    ReadSession,
    TaintPolicy,
    stamp_of,
)
from mecha.core.sessions.transcript import Block, Message, Taint, result_text

#: Claude Code's built-in tools, by what their results bring in (checked
#: against its tools reference: every name it lists is in one list here;
#: a name it adds later is unknown, so untrusted, until it is placed).
CLAUDE_POLICY = TaintPolicy(
    # The person's files, the language server's diagnostics on them, and
    # the session's own bookkeeping — task lists (`TaskCreate`, …, as
    # `TodoWrite`), plan mode, worktrees, scheduled prompts, stopping a
    # background task: each result is the machine's state or an
    # acknowledgement of what the model itself asked for.
    local=frozenset(
        {
            "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead", "Glob", "Grep", "LS", "LSP",
            "TodoWrite", "TodoRead", "TaskCreate", "TaskGet", "TaskList", "TaskUpdate", "TaskStop",
            "ExitPlanMode", "EnterPlanMode", "EnterWorktree", "ExitWorktree", "KillShell", "KillBash", "Skill",
            "SlashCommand", "ListMcpResourcesTool", "CronCreate", "CronDelete", "CronList", "ScheduleWakeup",
            "PushNotification",
        }
    ),
    shell=frozenset({"Bash", "BashOutput"}),
    # `Task`/`Agent` run a subagent that may itself have fetched the web:
    # read from a file, its report is decided by the subagent's own
    # transcript beside it (`subagent_taint`); anywhere else it is
    # untrusted. `Workflow` runs many subagents and returns their combined
    # result: decided by every transcript of its run (`workflow_taint`),
    # untrusted anywhere else.
    # The rest bring another party's words: the web, MCP servers' resources
    # and tool descriptions, other agents and sessions, claude.ai; and
    # `PowerShell` / `Monitor`, whose commands the shell parser does not read.
    untrusted=frozenset(
        {
            "WebFetch", "WebSearch", "Task", "Agent", "Workflow", "ReadMcpResourceTool", "ToolSearch",
            "WaitForMcpServers", "SendMessage", "ListAgents", "TeamCreate", "TeamDelete", "RemoteTrigger",
            "Artifact", "ShareOnboardingGuide", "Monitor", "PowerShell",
        }
    ),
    personal=frozenset({"AskUserQuestion"}),
)

#: How a background Bash call's result names its shell (`BashOutput`'s `bash_id`).
_BACKGROUND_ID = re.compile(r"running in background with ID: ([\w-]+)|moved to the background \(ID: ([\w-]+)\)")
class _Inner(msgspec.Struct):
    type: str = ""
    text: str | None = None


class _Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    tool_use_id: str | None = None
    content: str | list[_Inner] | None = None
    is_error: bool | None = None


class _Message(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    content: str | list[_Block] | None = None


class _Origin(msgspec.Struct):
    kind: str | None = None


class _Attachment(msgspec.Struct):
    type: str | None = None
    commandMode: str | None = None
    prompt: str | list[_Inner] | None = None
    origin: _Origin | None = None
    isMeta: bool = False


class _Line(msgspec.Struct):
    type: str = ""
    #: Decoded only for the kinds that carry one (`user`, `assistant`): a
    #: bookkeeping line of an odd shape is nobody's words and costs nothing.
    message: msgspec.Raw = msgspec.Raw()
    isMeta: bool = False
    isSidechain: bool = False
    isCompactSummary: bool = False
    #: The line's own id and the one it follows: how a subagent's lines
    #: written into the session's file (Claude Code 1.0) chain together.
    uuid: str | None = None
    parentUuid: str | None = None
    sessionId: str | None = None
    cwd: str | None = None
    #: How the session was started: `cli` at a terminal, `sdk-cli` for
    #: `claude -p`, `sdk-ts` / `sdk-py` for a program on the Agent SDK.
    entrypoint: str | None = None
    gitBranch: str | None = None
    #: When the line was written (ISO 8601, UTC): a correction's time.
    timestamp: str | None = None
    attachment: msgspec.Raw = msgspec.Raw()
    #: A `queue-operation` line's movement and the words it moved.
    operation: str | None = None
    content: msgspec.Raw = msgspec.Raw()
    #: Decoded only for an AskUserQuestion result (it holds whole files for
    #: an edit, so it is never decoded otherwise).
    toolUseResult: msgspec.Raw = msgspec.Raw()


_line = msgspec.json.Decoder(_Line)
_message = msgspec.json.Decoder(_Message | None)
_attachment = msgspec.json.Decoder(_Attachment | None)
_queued_words = msgspec.json.Decoder(str | list[_Inner] | None)


def is_workflow_record(path: Path) -> bool:
    """A file Claude Code keeps for a workflow (`Workflow`) run:
    `<session>/subagents/workflows/wf_*/agent-*.jsonl` and its
    `journal.jsonl`. The subagents' transcripts and the run's own ledger,
    never a person's session: an import passes them over without a word."""
    parts = path.parts
    return any(a == "subagents" and b == "workflows" for a, b in zip(parts, parts[1:], strict=False))


def flatten_result(content: str | list[_Inner] | None) -> str:
    """A tool result's content as text: a string as is, a list of blocks as
    the wire reads one (`transcript.result_text`); a block of a type Claude
    Code adds later is skipped here rather than failing the session."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return result_text(content)


class _Reader(ReaderCore):
    def __init__(self, name: str, policy: TaintPolicy, sidechain_file: bool, subagents: Path | None = None):
        super().__init__(name, SessionFormat.CLAUDE, policy)
        #: Where this session's subagents' transcripts are, when it is a
        #: main session read from its file (`subagent_dir`).
        self.subagents = subagents
        #: Subagents' lines written into this file itself (`InlineSubagents`).
        self.inline = InlineSubagents()
        self.sidechain_file = sidechain_file
        self.decided_sidechain = sidechain_file
        #: The command line of each shell started in the background, by id.
        self.background: dict[str, str] = {}
        self.last_assistant_id: str | None = None
        self.last_assistant_at = -1
        self.queued: list[str] = []
        #: How the session was started (`_Line.entrypoint`), from its first line that says.
        self.entrypoint: str | None = None
        #: What the person typed into the queue and is still waiting there
        #: (`queue-operation` enqueues not yet moved on).
        self.waiting: list[str] = []
        #: Queued words already delivered, by one record of the pair a
        #: delivery writes (`remove`, `queued_command`), so the other is not
        #: read as a second message.
        self.delivered_by_remove: list[str] = []
        self.delivered_by_attachment: list[str] = []

    def end(self) -> None:
        self._flush_queued()

    def _flush_queued(self) -> None:
        for words in self.queued:
            self.out.append(Message.user(words))
        self.queued = []

    # ── lines ──

    def line(self, number: int, raw: bytes, torn: bool) -> None:
        line = self.lines.decode(_line, number, raw, torn)
        if line is None:
            return
        self.stamp = stamp_of(line.timestamp)
        if line.sessionId and self.session_id is None:
            self.session_id = line.sessionId
        if line.cwd and self.project is None:
            self.project = line.cwd
        if line.entrypoint and self.entrypoint is None:
            self.entrypoint = line.entrypoint
        if line.gitBranch and self.branch is None and line.gitBranch != "HEAD":
            self.branch = line.gitBranch
        kind = line.type
        if kind == "queue-operation":
            self._queue_operation(number, line)
            return
        if kind not in ("user", "assistant", "attachment"):
            return
        if not self.decided_sidechain and kind in ("user", "assistant"):
            # The first conversational line says whose file this is.
            self.decided_sidechain = True
            self.sidechain_file = line.isSidechain
        if line.isSidechain and not self.sidechain_file:
            self.inline.add(line.uuid, line.parentUuid, self._opening(number, line), bytes(raw))
            return
        if kind == "attachment":
            if line.attachment:
                attachment = self.lines.decode(_attachment, number, line.attachment)
                if attachment is not None:
                    self._attachment(attachment)
            return
        if line.isMeta or line.isCompactSummary or not line.message:
            return
        message = self.lines.decode(_message, number, line.message)
        if message is None:
            return
        if kind == "assistant":
            self._assistant(message)
        else:
            self._user(line, message)

    # ── the queue ──

    def _queue_operation(self, number: int, line: _Line) -> None:
        """The queue of messages typed while the agent works, as Claude Code
        records each movement of it: `enqueue` (the words typed), then one
        of `remove` (taken into the running turn — the delivery of a steer,
        at this point of the conversation), `dequeue` (sent as the next turn:
        a user line with the words follows, read as any other) or `popAll`
        (taken back into the input box: nothing was delivered)."""
        words = None
        if line.content:
            content = self.lines.decode(_queued_words, number, line.content)
            if content is not None:
                words = _prompt_text(content)
        op = line.operation
        if op == "enqueue":
            if words is not None:
                self.waiting.append(words)
        elif op == "remove":
            if words is None:
                words = _next_delivered(self.waiting)
            if words is None:
                return
            _take(self.waiting, words)
            if not _take(self.delivered_by_attachment, words):
                if self._deliver_queued(words):
                    self.delivered_by_remove.append(words)
        elif op == "dequeue":
            if self.waiting:
                self.waiting.pop(0)
        elif op == "popAll":
            self.waiting.clear()

    def _deliver_queued(self, text: str) -> bool:
        """Queued words delivered into the running turn: a steer beside the
        results they arrived with, or, between turns, before the next
        answer. False when they are not the person's (a task notice)."""
        words = person_text(text)
        if not words:
            return False
        results = self.results_message()
        if results is not None:
            self.say_beside(results, words)
        else:
            self.queued.append(words)
        return True

    def _attachment(self, a: _Attachment) -> None:
        if a.type != "queued_command" or a.isMeta:
            return
        if a.commandMode not in (None, "prompt"):
            return
        if a.origin is not None and a.origin.kind not in (None, "human"):
            return
        text = _prompt_text(a.prompt)
        if _take(self.delivered_by_remove, text):
            return  # the `remove` just before it delivered these words
        _take(self.waiting, text)
        if self._deliver_queued(text):
            self.delivered_by_attachment.append(text)

    def _assistant(self, message: _Message) -> None:
        if message.model == "<synthetic>":
            return
        content = message.content
        blocks: list[Block] = []
        if isinstance(content, str):
            if content.strip():
                blocks.append(Block.text_block(content))
        else:
            for b in content or []:
                if b.type == "text" and b.text:
                    blocks.append(Block.text_block(b.text))
                elif b.type == "tool_use" and b.id:
                    use = Block.tool_use(b.id, b.name or "", bounded(b.input))
                    self.calls[b.id] = use
                    blocks.append(use)
        if not blocks:
            return
        # The model moved on: a denial with no words after it stays reasonless,
        # an interrupt with none is only an interrupt.
        self.pending_denial = None
        self.interrupted = False
        if message.id is not None and message.id == self.last_assistant_id and self.last_assistant_at >= 0:
            target = self.out[self.last_assistant_at]
            assert isinstance(target.content, list)
            target.content.extend(blocks)
            return
        self._flush_queued()
        self.out.append(Message(role="assistant", content=blocks))
        self.last_assistant_id = message.id
        self.last_assistant_at = len(self.out) - 1

    def _user(self, line: _Line, message_: _Message) -> None:
        content = message_.content
        if isinstance(content, str):
            content = [_Block(type="text", text=content)]
        results: list[Block] = []
        brought: list[tuple[Taint, Blame | None]] = []
        words: list[str] = []
        for b in content or []:
            if b.type == "tool_result":
                results.append(self._result(b, line, brought, words, results))
            elif b.type == "text" and b.text is not None:
                if b.text.strip().startswith(INTERRUPT_MARKER):
                    self.interrupted = True
                    continue
                self.person_ran("Bash", b.text)
                # Sent from the queue as a turn of its own (a task notice
                # does this with no record of the queue's): no longer waiting.
                _take(self.waiting, b.text)
                said = person_text(b.text)
                if said:
                    words.append(said)
            elif b.type == "image":
                words.append(IMAGE_PLACEHOLDER)
            elif b.type == "document":
                words.append(DOCUMENT_PLACEHOLDER)
        said = " ".join(words).strip()
        if results:
            fresh = self.results_message() is None
            message = self.add_results(results)
            if fresh:
                self._flush_queued_into(message)
            at = len(self.out) - 1
            for taint, blame in brought:
                self.taint.bring(at, taint, blame)
            if said:
                self.say_beside(message, said)
            return
        if not said:
            return
        if said.startswith("/"):
            # A slash command (`/exit`) is the person leaving or changing a
            # setting: never a refusal's reason, and the refusal before it
            # stays reasonless.
            self.pending_denial = None
            self.interrupted = False
        elif self.fold_words(said):
            return
        elif self._call_waiting():
            # Words sent from the queue while a call waits for its result
            # (Claude Code writes them before the result when the person
            # pressed Esc): they go with that result, as its refusal's reason
            # or beside it.
            self.queued.append(said)
            return
        self._flush_queued()
        self.out.append(Message.user(said))

    def _call_waiting(self) -> bool:
        """Whether the last message is the assistant's with a call still
        waiting for its result."""
        if not self.out or self.out[-1].role != "assistant":
            return False
        return any(u.id is not None and u.id not in self.answered for u in self.out[-1].tool_uses())

    def _flush_queued_into(self, message: Message) -> None:
        """Queued words into the results they arrived with: the first as the
        reason of a refusal there that has none, the rest beside them."""
        queued, self.queued = self.queued, []
        for words in queued:
            if not self.fold_words(words):
                self.say_beside(message, words)

    def _result(self, b: _Block, line: _Line, brought: list[tuple[Taint, Blame | None]], words: list[str], batch: list[Block]) -> Block:
        text = flatten_result(b.content)
        call = self.calls.get(b.tool_use_id or "")
        name = call.name if call is not None else None
        is_error = bool(b.is_error)
        if text.lstrip().startswith(INTERRUPT_MARKER):
            self.interrupted = True
            return Block.tool_result(b.tool_use_id or "", INTERRUPTED_RESULT, True)
        reason = rejection_reason(text)
        if reason is not None:
            if self.pending_denial is None and not self.denied_in_batch(batch):
                block = Block.tool_result(b.tool_use_id or "", f"{DENIAL_PREFIX} {reason}".rstrip(), True)
                if not reason:
                    self.pending_denial = block
                return block
            return Block.tool_result(b.tool_use_id or "", text, True)
        command = None
        if call is not None and isinstance(call.input, dict):
            value = call.input.get("command")
            command = value if isinstance(value, str) else None
            if name == "BashOutput":
                # The output of a shell started in the background: decided by
                # the command that started it (unknown: untrusted).
                shell_id = call.input.get("bash_id")
                command = self.background.get(shell_id) if isinstance(shell_id, str) else None
            elif command is not None:
                # Started in the background, or moved there while it ran
                # (the person's Ctrl+B): its result names the task. The first
                # command to name an id keeps it — no later output can
                # claim a task another command started.
                started = _BACKGROUND_ID.search(text)
                if started is not None:
                    self.background.setdefault(started.group(1) or started.group(2), command)
        if is_error and refused_unrun(text):
            # Claude Code's own words for a call it never ran: nothing came in.
            brought.append((Taint(private=True), None))
        elif name in SUBAGENT_TOOLS and not is_error and self.subagents is not None:
            brought.append(self._report(call, text, spawned_agent(text, line.toolUseResult)))
        elif name == "Workflow" and not is_error and self.subagents is not None:
            brought.append(workflow_taint(read_claude_code, self.subagents, workflow_run(text, line.toolUseResult), self.policy))
        elif name == "TaskOutput":
            brought.append(self._task_output(call))
        else:
            brought.append(self.judge(name, command))
        if name == "AskUserQuestion" and not is_error:
            answer = answers_text(text, line.toolUseResult)
            if answer:
                words.append(answer)
        return Block.tool_result(b.tool_use_id or "", text, is_error)


    def _report(self, call: Block | None, report: str, agent: str | None) -> tuple[Taint, Blame | None]:
        """A subagent's report, decided by its transcript wherever the
        Claude Code that wrote the session put it: `<session>/subagents/`
        (2.1.2 on), the project folder beside the session (before), or —
        for a result naming no agent, as 1.0's did — its lines in this very
        file (`InlineSubagents`)."""
        assert self.subagents is not None
        if agent is None:
            prompt = call.input.get("prompt") if call is not None and isinstance(call.input, dict) else None
            found = self.inline.taint(read_claude_code, prompt, report, self.policy) if isinstance(prompt, str) else None
            if found is not None:
                return found
        return subagent_taint(read_claude_code, self.subagents, agent, self.policy, elsewhere=self.subagents.parent.parent, owner=self.session_id)

    def _opening(self, number: int, line: _Line) -> str | None:
        """The words a sidechain line that follows nothing opens with (a
        subagent's prompt); `None` for any other line, or one unreadable."""
        if line.parentUuid is not None or not line.message:
            return None
        message = self.lines.decode(_message, number, line.message)
        if message is None:
            return None
        content = message.content
        return content if isinstance(content, str) else "\n".join(b.text or "" for b in content or [] if b.type == "text")

    def _task_output(self, call: Block | None) -> tuple[Taint, Blame | None]:
        """More output of a background task (`TaskOutput`): a shell started
        in the background is decided by its command, a subagent by its own
        transcript wherever its Claude Code kept it (`<session>/subagents/`,
        or the project folder beside the session before 2.1.2, there only
        when it names this session); a task the file does not show is
        untrusted."""
        task = call.input.get("task_id") if call is not None and isinstance(call.input, dict) else None
        if isinstance(task, str) and task in self.background:
            return self.judge("BashOutput", self.background[task])
        if isinstance(task, str) and self.subagents is not None and safe_name(task):
            name = f"agent-{task}.jsonl"
            project = self.subagents.parent.parent
            if (self.subagents / name).is_file() or (project / name).is_file():
                return subagent_taint(read_claude_code, self.subagents, task, self.policy, elsewhere=project, owner=self.session_id)
        why = "more output of a background task the file does not show"
        return Taint(private=True, untrusted=True), Blame(tool="TaskOutput", why=why, stranger=f"TaskOutput: {why} (a subagent's, perhaps, which can read the web)")


def _prompt_text(prompt: str | list[_Inner] | None) -> str:
    """The words of a queued prompt: a string, or text blocks."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(i.text or "" for i in (prompt or []) if i.type == "text")


def _next_delivered(waiting: list[str]) -> str | None:
    """What a `remove` that does not name its words took into the running
    turn: the first waiting message the person typed. Task notices wait
    behind the person's words — Claude Code hands them over when the turn
    ends, as their own user line — so one still waiting is not what a
    `remove` moved while the person's words wait too (taking the queue's
    head once mined a notice, dropped as not the person, and left the
    person's words to ride with the next `remove`, calls later)."""
    return next((w for w in waiting if person_text(w)), waiting[0] if waiting else None)


def _take(items: list[str], text: str) -> bool:
    """Remove the first `text` from `items`; whether there was one."""
    try:
        items.remove(text)
    except ValueError:
        return False
    return True


def read_claude_code(
    data: Source,
    *,
    name: str = "<claude code session>",
    path: Path | None = None,
    policy: TaintPolicy | None = None,
) -> ReadSession:
    """One Claude Code session file as a wire transcript (see the module's
    docstring for every quirk handled)."""
    reader = _Reader(name, policy or CLAUDE_POLICY, is_subagent_path(path), subagent_dir(path))
    lines = reader.read(data)
    base = reader.base_id(path)
    session_id = f"claude:{base}"
    if reader.sidechain_file and path is not None and path.stem != base:
        session_id = f"{session_id}/{path.stem}"
    interactive = not reader.sidechain_file and not headless_entrypoint(reader.entrypoint)
    return reader.session(SessionFormat.CLAUDE, session_id, lines, interactive=interactive)


def headless_entrypoint(entrypoint: str | None) -> bool:
    """Whether a session was started headless — `claude -p` (`sdk-cli`) or
    a program on the Agent SDK (`sdk-ts`, `sdk-py`) — rather than by a
    person at a terminal or in an editor. Read like Codex's `exec` and `mcp`
    sources (`codex_cli.interactive_source`): its prompts may be a script's,
    and nobody watched it run to steer it, so it is `interactive: false` and
    its reflections classify `derived`. An older file that names no
    entrypoint was written by the terminal client."""
    return entrypoint is not None and entrypoint.startswith("sdk")
