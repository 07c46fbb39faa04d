"""The agents' own command lines as a model: `claude -p` and `codex exec`.

A person who uses Claude Code or Codex every day already has a strong model
on their own account; `api = "claude-code"` or `api = "codex"` lets the
passes use it with no key and no server. Each request is one headless run
of the agent's own program:

- Claude Code: `claude -p --output-format json --json-schema SCHEMA --tools ""
  --no-session-persistence --system-prompt-file FILE`, the prompt on stdin.
  The CLI offers the model a `StructuredOutput` tool and validates the
  answer against the schema; its one JSON result carries it as
  `structured_output`. No built-in tool, no MCP server
  (`--strict-mcp-config`), no hook (`disableAllHooks`), no slash command.
- Codex: `codex exec --ephemeral --output-schema FILE -s read-only --json -`,
  the system frame as `developer_instructions`, the prompt on stdin. The
  schema is sent as the Responses API's `text.format`; the reply is the
  last `agent_message` of its event stream. Its shell, sub-agents and web
  search are turned off (`CODEX_TOOLS_OFF`), the sandbox is read-only and no
  approval is ever asked for, so a model that reached for a tool could
  neither run nor change anything.

One turn, the reply held to the pass's schema, the model named
(`--model`/`-m`) or the agent's default when the configuration names none.

**Its own calls never come back as lessons.** A call is a session of the
agent like any other, and the agents' session readers (`import`, the
session-end hook) would otherwise queue the passes' own prompts as a person's
work. Three things keep them out: the calls ask the agent not to keep a
transcript at all (`--no-session-persistence`, `--ephemeral`); they run
from a folder of their own under the user's cache (`own_calls_dir`), which
the importer recognises by the session's working directory and skips
(`installed.is_own_call`); and they carry `MECHA_OWN_MODEL_CALL=1` in their
environment, on which this project's hooks do nothing.

**Bounded.** Each call has the configuration's timeout; the program runs in
a process group of its own, and at the deadline the whole group is
stopped (SIGTERM, then SIGKILL), so a helper it started cannot outlive it.
The output read is bounded too. Failures are `ModelFailure`s that say what
to do: the program is missing (install it, or configure another model), it
exited non-zero (its own words quoted: not signed in, an unknown model), it
ran out of time, or it printed something that is not its JSON. A reply that
does not meet the schema is `UnusableReply`, as from any provider. The CLIs
retry the API themselves, so nothing is retried here: each call this module
makes is one call on the person's account, which is what a pass states
before it starts (`metered`).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mecha.core.environment.agents import CLAUDE, CODEX, OWN_CALL_ENV, by_api
from mecha.core.environment.installed import locate, own_calls_dir
from mecha.core.errors import ModelFailure, UnusableReply
from mecha.core.providers.base import CompletionRequest, CompletionResponse
from mecha.core.providers.config import ModelConfig

#: The most of a call's output that is read: a reply of the largest
#: contract is a few kB; the CLIs' JSON envelopes add a few more.
MAX_OUTPUT_BYTES = 8 << 20

#: How long a stopped program gets between SIGTERM and SIGKILL.
KILL_GRACE_S = 3.0

#: What stderr contributes to a failure's message, at most.
STDERR_EXCERPT = 600


def model_option(flag: str, model: str) -> str:
    """`--model=NAME` as one argument: a model name is configuration a
    person (or a repository's config file) wrote, and one starting with `-`
    after a separate `--model` would be read by the agent's parser as an
    option of its own (`--model --dangerously-skip-permissions`). Joined,
    both command lines (commander's and clap's) take it as the value."""
    return f"{flag}={model}"


def claude_args(program: str, request: CompletionRequest, cfg: ModelConfig, system_file: Path) -> list[str]:
    """The `claude -p` command line for one request (the prompt goes on stdin)."""
    args = [
        program, "-p", "--output-format", "json", "--tools", "", "--no-session-persistence",
        "--strict-mcp-config", "--disable-slash-commands", "--settings", '{"disableAllHooks": true}',
        "--system-prompt-file", str(system_file),
    ]
    if request.reply_schema is not None and cfg.structured != "off":
        args += ["--json-schema", json.dumps(request.reply_schema.schema)]
    model = request.model or cfg.model
    if model:
        args.append(model_option("--model", model))
    return args


#: Codex's tools a pass's call turns off, as config overrides: its shell,
#: sub-agents, goals, image generation and web search. As `-c
#: features.NAME=false`, not `--disable NAME`, because `--disable` refuses a
#: name its version does not know, and these names move between releases;
#: an override it does not know is ignored. What 0.169.0 still offers after
#: them (`view_image`, `request_user_input`) reads nothing and asks no one in
#: a read-only, never-approving headless run.
CODEX_TOOLS_OFF: tuple[str, ...] = (
    "features.shell_tool=false", "features.multi_agent=false", "features.goals=false",
    "features.image_generation=false", 'web_search="disabled"',
)


def codex_args(program: str, request: CompletionRequest, cfg: ModelConfig, schema_file: Path | None) -> list[str]:
    """The `codex exec` command line for one request (the prompt goes on
    stdin, `-`)."""
    args = [
        program, "exec", "--ephemeral", "--skip-git-repo-check", "--sandbox", "read-only", "--color", "never",
        "--json", "-c", 'approval_policy="never"', "-c", f"developer_instructions={json.dumps(request.system)}",
    ]
    for override in CODEX_TOOLS_OFF:
        args += ["-c", override]
    if schema_file is not None:
        args += ["--output-schema", str(schema_file)]
    model = request.model or cfg.model
    if model:
        args.append(model_option("--model", model))
    return [*args, "-"]


def parse_claude_output(stdout: str, label: str) -> CompletionResponse:
    """`claude -p --output-format json`'s one object → the reply: the
    structured answer when there is one, else the result text."""
    data = _json_object(stdout, label)
    if data.get("is_error") or data.get("subtype") not in (None, "success"):
        said = data.get("result") or data.get("subtype") or "an error"
        status = data.get("api_error_status")
        raise ModelFailure(
            f"{label} answered with an error: {_one_line(str(said))}; "
            "run `claude` yourself to check it is signed in and works",
            status=status if isinstance(status, int) else None,
        )
    model = _claude_model(data)
    structured = data.get("structured_output")
    if isinstance(structured, dict):
        return CompletionResponse(text=json.dumps(structured), model=model, structured="json_schema")
    result = data.get("result")
    if not isinstance(result, str):
        raise ModelFailure(f"{label} printed no result (its JSON had neither `structured_output` nor `result`)")
    return CompletionResponse(text=result, model=model, structured="off")


def parse_codex_output(stdout: str, label: str) -> CompletionResponse:
    """`codex exec --json`'s event lines → the last agent message; a failed
    turn or an error event is the failure it names."""
    message: str | None = None
    failure: str | None = None
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        found = event.get("item")
        item: dict[str, Any] = found if isinstance(found, dict) else {}
        if kind == "item.completed" and item.get("type") == "agent_message" and isinstance(item.get("text"), str):
            message = item["text"]
        elif kind == "turn.failed":
            error = event.get("error")
            failure = str(error.get("message") if isinstance(error, dict) else error)
        elif kind == "error" and isinstance(event.get("message"), str):
            failure = failure or event["message"]
    if message is None:
        if failure:
            raise ModelFailure(f"{label} failed: {_one_line(failure)}; run `codex` yourself to check it is signed in and works")
        raise ModelFailure(f"{label} printed no answer (no agent message among its events)")
    return CompletionResponse(text=message, structured="json_schema")


def _json_object(stdout: str, label: str) -> dict[str, Any]:
    text = stdout.strip()
    # The result is the last line; anything before it is not ours to read.
    last = text.rsplit("\n", 1)[-1] if text else ""
    try:
        data = json.loads(last)
    except ValueError:
        raise UnusableReply(f"{label} printed something that is not its JSON result", reply=text[:2000]) from None
    if not isinstance(data, dict):
        raise UnusableReply(f"{label} printed JSON that is not an object", reply=text[:2000])
    return data


def _claude_model(data: Mapping[str, Any]) -> str | None:
    usage = data.get("modelUsage")
    if isinstance(usage, dict) and usage:
        return str(next(iter(usage)))
    return None


def _tail(text: str) -> str:
    """The last lines of what a program wrote, its warnings left out: the
    reason it stopped is at the end."""
    lines = [line for line in text.strip().splitlines() if line.strip() and not line.startswith("WARNING:")]
    return "\n".join(lines[-4:])


def _one_line(text: str, limit: int = STDERR_EXCERPT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class AgentCliProvider:
    """A `Provider` that runs an agent's own command line per request."""

    def __init__(self, cfg: ModelConfig, *, env: Mapping[str, str] | None = None):
        self.cfg = cfg
        agent = by_api(cfg.api)
        if agent is None:
            raise ValueError(f"{cfg.api!r} is not an agent's command line")
        self.agent = agent
        self._env = dict(os.environ if env is None else env)
        self.label = f"{self.agent.label} (`{self.agent.program}`)"
        #: Whose account the calls go on, as a person names it.
        self.account = self.agent.label
        #: Programs started so far: each is one call on the person's account.
        self.calls = 0

    def program(self) -> str:
        """The program to run; `ModelFailure` saying how to get it when it
        is not installed."""
        found = locate(self.agent, self._env)
        if found is None:
            raise ModelFailure(
                f"the model is configured as {self.cfg.api} (from {self.cfg.source}), but `{self.agent.program}` "
                f"is not installed or not on PATH: install {self.agent.label}, or configure another model "
                "(`mecha-sidecar doctor` lists what is available)"
            )
        return str(found)

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        program = self.program()
        where = own_calls_dir(self._env)
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.TemporaryDirectory(prefix="call-", dir=where) as tmp:
            folder = Path(tmp)
            if self.agent is CLAUDE:
                system_file = folder / "system.md"
                system_file.write_text(request.system, encoding="utf-8")
                args = claude_args(program, request, self.cfg, system_file)
            else:
                schema_file = None
                if request.reply_schema is not None and self.cfg.structured != "off":
                    schema_file = folder / "schema.json"
                    schema_file.write_text(json.dumps(request.reply_schema.schema), encoding="utf-8")
                args = codex_args(program, request, self.cfg, schema_file)
            stdout = await self._run(args, request.user, folder)
        if self.agent is CLAUDE:
            return parse_claude_output(stdout, self.label)
        response = parse_codex_output(stdout, self.label)
        response.model = request.model or self.cfg.model or None
        if request.reply_schema is None or self.cfg.structured == "off":
            response.structured = "off"
        return response

    async def _run(self, args: Sequence[str], prompt: str, cwd: Path) -> str:
        """One run of the program: the prompt on stdin, stdout back; a
        non-zero exit, a timeout or too much output is a `ModelFailure`."""
        token = os.urandom(8).hex()
        env = {**self._env, OWN_CALL_ENV: "1", CALL_TOKEN_ENV: token}
        try:
            return await self._run_marked(args, prompt, cwd, env)
        finally:
            stop_marked(token)

    async def _run_marked(self, args: Sequence[str], prompt: str, cwd: Path, env: dict[str, str]) -> str:
        try:
            proc = await asyncio.create_subprocess_exec(
                *args, cwd=cwd, env=env, start_new_session=True,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise ModelFailure(f"{self.label} could not be started: {exc.strerror or exc}") from None
        self.calls += 1
        try:
            out, err = await asyncio.wait_for(self._talk(proc, prompt), timeout=self.cfg.timeout_s)
        except TimeoutError:
            await _stop_group(proc)
            raise ModelFailure(
                f"{self.label} gave no answer within {self.cfg.timeout_s:g} s and was stopped; "
                "raise timeout_s in the model configuration if the agent is just slow"
            ) from None
        except BaseException:
            await _stop_group(proc)
            raise
        if proc.returncode != 0:
            # Each reports what went wrong on stdout in its own format
            # (Claude Code's result object, Codex's error events): that is
            # the message to quote, when there is one.
            text = out.decode("utf-8", "replace")
            if self.agent is CLAUDE and text.strip().startswith("{"):
                parse_claude_output(text, self.label)
            elif self.agent is CODEX:
                parse_codex_output(text, self.label)
            said = _one_line(_tail(err.decode("utf-8", "replace") or text))
            raise ModelFailure(
                f"{self.label} exited with status {proc.returncode}: {said or 'it said nothing'}; "
                f"run `{self.agent.program}` yourself to check it is signed in and works"
            )
        return out.decode("utf-8", "replace")

    async def _talk(self, proc: asyncio.subprocess.Process, prompt: str) -> tuple[bytes, bytes]:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            proc.stdin.write(prompt.encode("utf-8"))
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            proc.stdin.close()
        out, err = await asyncio.gather(_read_bounded(proc.stdout, self.label), _read_bounded(proc.stderr, self.label))
        await proc.wait()
        return out, err


#: Set, to a value of its own, in the environment of every agent call: what
#: the call started carries it, wherever it went (`stop_marked`).
CALL_TOKEN_ENV = "MECHA_AGENT_CALL"


def stop_marked(token: str) -> int:
    """Kill every process of this user still carrying the call's token in
    its environment, once the call is over; how many. The call runs in a
    process group of its own, and stopping the group stops what stayed in
    it — but a helper the agent CLI started with `setsid` (a new session,
    so a new group) once outlived the call it belonged to, holding the
    call's files and the person's account. Its environment is what it
    cannot leave behind. Linux (`/proc`); elsewhere, the group alone."""
    import signal as _signal

    mark = f"{CALL_TOKEN_ENV}={token}".encode()
    own = os.getpid()
    stopped = 0
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        if pid == own:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mark not in f.read().split(b"\0"):
                    continue
            os.kill(pid, _signal.SIGKILL)
            stopped += 1
        except OSError:
            continue
    return stopped


async def _read_bounded(stream: asyncio.StreamReader, label: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(1 << 16):
        size += len(chunk)
        if size > MAX_OUTPUT_BYTES:
            raise UnusableReply(f"{label} printed more than {MAX_OUTPUT_BYTES >> 20} MiB; its answer was not read")
        chunks.append(chunk)
    return b"".join(chunks)


async def _stop_group(proc: asyncio.subprocess.Process) -> None:
    """Stop the program and everything it started (its process group)."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            await asyncio.wait_for(proc.wait(), timeout=wait)
            return
        except TimeoutError:
            continue
