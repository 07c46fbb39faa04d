"""Where Claude Code keeps a subagent's transcript, and how a report is
judged by it.

A subagent (`Task`, `Agent`) or a workflow's subagents (`Workflow`) can read
the web; their report is handed to the model as the tool's result. So a
report is as trusted as the transcript behind it, read by the same reader
as the session (`ReadTranscript`, handed in so this module stays below the
Claude Code reader): clean only when that transcript is found, is the one
the report came from, and reads clean to its end. Claude Code has written
those transcripts in three places over its versions, and each is read:

- `<project>/<session-id>/subagents/agent-<id>.jsonl` (2.1.2 on), and for a
  workflow run `…/subagents/workflows/<run>/` with its `journal.jsonl`;
- `<project>/agent-<id>.jsonl` beside every session of the project (2.0):
  counted only when its lines name the session that ran it;
- the session's own file (1.0): the subagent's lines marked `isSidechain`
  and chained by `parentUuid`, the result naming no agent
  (`InlineSubagents`, matched by prompt and last words).

Any other place — a backup tool's own folder layout, say — is not looked in:
a report whose transcript is not found stays held back (fail closed), and
says so. A call Claude Code refused to run brought nothing in at all
(`refused_unrun`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import msgspec

from mecha.core.errors import InvalidInput
from mecha.core.sessions.lines import LINE_FAULTS, Source
from mecha.core.sessions.reader import UNCHECKED_SUBAGENT, Blame, ReadSession, TaintPolicy, subagent_blame
from mecha.core.sessions.transcript import Taint, taint_at


class ReadTranscript(Protocol):
    """The Claude Code reader (`claude_code.read_claude_code`)."""

    def __call__(self, data: Source, *, name: str = ..., path: Path | None = ..., policy: TaintPolicy | None = ...) -> ReadSession: ...


def is_subagent_path(path: Path | None) -> bool:
    """A subagent's transcript, by where Claude Code files it."""
    if path is None:
        return False
    return path.parent.name == "subagents" or path.name.startswith("agent-")


class _Spawned(msgspec.Struct):
    agentId: str | None = None


#: Claude Code's whole answer for a call it did not run, each spelled in
#: full (`refused_unrun`): a call cancelled because another in its batch
#: failed, a tool the session does not have, a workflow name it does not
#: know (its "Available" list is the names it knows).
_UNRUN = re.compile(
    r"<tool_use_error>(?:Sibling tool call errored|(?:Error: )?No such tool available: [\w.-]+"
    r'|Workflow "[^"\n]{1,200}" not found\. Available: [\w:., -]*)</tool_use_error>'
)


def refused_unrun(result: str) -> bool:
    """Whether an errored result is, whole, Claude Code's refusal of a call
    it never ran — so no tool, subagent or site had a word in it. Only the
    exact spellings in `_UNRUN`: any other error (a run that failed midway,
    which names its run; a fetch whose error quotes the site) is judged as
    the tool's result, and a refusal with anything after it is not one —
    fail closed."""
    return _UNRUN.fullmatch(result.strip()) is not None


#: The tools that run a subagent and hand back its report.
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
_AGENT_ID = re.compile(r"\bagent_?[iI]d:\s*([\w.@-]+)")


def subagent_dir(path: Path | None) -> Path | None:
    """Where Claude Code keeps the subagents' transcripts of the session in
    `path`: `<project>/<session-id>/subagents/`. `None` for a subagent's own
    file (its subagents are not looked for: a report of a report is
    untrusted) or a session not read from a file."""
    if path is None or is_subagent_path(path):
        return None
    return path.parent / path.stem / "subagents"


def spawned_agent(result: str, raw: msgspec.Raw) -> str | None:
    """The id of the subagent a `Task` result reports for: the structured
    record's `agentId`, else the `agentId: …` line of its text."""
    return _named(result, raw, lambda r: msgspec.json.decode(r, type=_Spawned).agentId, _AGENT_ID)


def _named(result: str, raw: msgspec.Raw, structured: Callable[[msgspec.Raw], str | None], line: re.Pattern[str]) -> str | None:
    """What a tool's structured record names (`structured` reads it), else
    what the first match of `line` in its text names; `None` when neither
    does. A record that does not decode is only a text."""
    if raw:
        try:
            found = structured(raw)
        except LINE_FAULTS:
            found = None
        if found:
            return found
    match = line.search(result)
    return match.group(1) if match else None


def subagent_taint(
    reader: ReadTranscript,
    folder: Path,
    agent: str | None,
    policy: TaintPolicy,
    tool: str = "Task",
    run: str | None = None,
    *,
    elsewhere: Path | None = None,
    owner: str | None = None,
) -> tuple[Taint, Blame | None]:
    """A subagent's report is as trusted as its own transcript: local when
    `agent-<id>.jsonl` is found in `folder` and reads clean to its end (the
    report is its last words; a transcript that went on after it is held to
    what came later too — fail closed); otherwise untrusted, saying which.
    `tool` and `run` name who asked (a `Workflow` run's subagents).
    `elsewhere` is a second place to look — the project folder, where Claude
    Code before 2.1.2 wrote every session's subagents side by side — and a
    transcript found there counts only when its lines name the session that
    ran it, `owner` (one naming no session, or another, is not this one's)."""
    if agent is None or not safe_name(agent):
        why = "a subagent's report whose transcript the result does not name"
        return Taint(private=True, untrusted=True), Blame(tool=tool, why=why, stranger=f"{tool}: {why} ({UNCHECKED_SUBAGENT})")
    path = folder / f"agent-{agent}.jsonl"
    program = f"{run}/agent-{agent}" if run else f"agent-{agent}"
    shared = elsewhere is not None and not path.is_file() and (elsewhere / path.name).is_file()
    if shared:
        assert elsewhere is not None
        path = elsewhere / path.name

    def held(why: str) -> tuple[Taint, Blame]:
        return Taint(private=True, untrusted=True), Blame(tool=tool, program=program, why=f"a subagent's report ({program}): {why}",
                                                          stranger=f"{tool}({program}): {why} ({UNCHECKED_SUBAGENT})")

    try:
        with path.open("rb") as f:
            read = reader(f, name=str(path), path=path, policy=policy)
    except (OSError, InvalidInput) as exc:
        return held("its transcript is not beside the session" if isinstance(exc, FileNotFoundError) else f"its transcript cannot be read ({exc})")
    if shared and (owner is None or read.session_id.partition("/")[0] != f"claude:{owner}"):
        return held(f"the {path.name} in the project folder was run by another session")
    last = taint_at(read.taint_timeline, max(len(read.messages) - 1, 0))
    if last is not None and not last.untrusted:
        return Taint(private=True), None
    return Taint(private=True, untrusted=True), subagent_blame(tool, program, f"transcript ({path.name})", read.blames)


class InlineSubagents:
    """The subagents' lines Claude Code 1.0 wrote into the session's own
    file: marked `isSidechain`, each chained to the one before by
    `parentUuid` from the subagent's prompt (a line that follows nothing),
    and the `Task` result naming no agent. A report is matched to the chains
    whose prompt is the call's `prompt` and whose last words are the report
    itself; it is as trusted as all of them read whole, by the same reader
    (`taint`). A line that chains to nothing read — its parent unreadable —
    is in no chain, so the chain after it never ends with the report and
    the report stays held back: fail closed."""

    def __init__(self) -> None:
        self.root_of: dict[str, str] = {}
        self.lines: dict[str, list[bytes]] = {}
        self.prompts: dict[str, str] = {}

    def add(self, uuid: str | None, parent: str | None, prompt: str | None, raw: bytes) -> None:
        """One sidechain line: `uuid` and the `parent` it follows, and for
        a line that follows nothing, the `prompt` it opens with (`None`:
        unreadable, so it starts no chain)."""
        if uuid is None:
            return
        if parent is None:
            if prompt is None:
                return
            root = uuid
            self.prompts[root] = prompt
        else:
            found = self.root_of.get(parent)
            if found is None:
                return
            root = found
        self.root_of[uuid] = root
        self.lines.setdefault(root, []).append(raw)

    def taint(self, reader: ReadTranscript, prompt: str, report: str, policy: TaintPolicy) -> tuple[Taint, Blame | None] | None:
        """The report's taint from the chains it came from; `None` when no
        chain in the file was started with `prompt` (it was not written
        here)."""
        roots = [r for r, p in self.prompts.items() if p == prompt]
        if not roots:
            return None
        ends = []
        for root in roots:
            try:
                read = reader(b"\n".join(self.lines[root]), name=f"subagent lines from {root}", policy=policy)
            except InvalidInput:
                continue
            if read.messages and read.messages[-1].role == "assistant" and read.messages[-1].text().strip() == report.strip():
                ends.append(read)
        if not ends:
            why = "its lines in the session do not end with its report"
            return Taint(private=True, untrusted=True), Blame(tool="Task", why=f"a subagent's report: {why}",
                                                              stranger=f"Task: {why} ({UNCHECKED_SUBAGENT})")
        for read in ends:
            last = taint_at(read.taint_timeline, max(len(read.messages) - 1, 0))
            if last is None or last.untrusted:
                return Taint(private=True, untrusted=True), subagent_blame("Task", "inline", "lines in the session", read.blames)
        return Taint(private=True), None


def safe_name(name: str) -> bool:
    """A name from the record that may become one file name in a folder."""
    return bool(name) and "/" not in name and "\\" not in name and not name.startswith(".")


class _Ledger(msgspec.Struct):
    agentId: str | None = None


class _Run(msgspec.Struct):
    runId: str | None = None


_RUN_ID = re.compile(r"^Run ID: (wf_[\w.-]+)\s*$", re.MULTILINE)


def workflow_run(result: str, raw: msgspec.Raw) -> str | None:
    """The run a `Workflow` result names: the structured record's `runId`,
    else the `Run ID: wf_…` line of its text."""
    return _named(result, raw, lambda r: msgspec.json.decode(r, type=_Run).runId, _RUN_ID)


def workflow_taint(reader: ReadTranscript, folder: Path, run: str | None, policy: TaintPolicy) -> tuple[Taint, Blame | None]:
    """A workflow's result is written by the subagents it ran, so it is as
    trusted as their transcripts, which Claude Code keeps beside the session
    (`<session>/subagents/workflows/<run>/agent-<id>.jsonl`, with the run's
    `journal.jsonl` naming the subagents it started). Local only when the
    journal is read, every subagent it names has its transcript there, and
    every transcript there reads clean (`subagent_taint`, the same reader);
    a run not named, a journal missing or unreadable, a transcript missing
    or unclean keeps the result untrusted, saying which — fail closed."""
    def held(why: str, program: str = "") -> tuple[Taint, Blame]:
        named = f"Workflow({program})" if program else "Workflow"
        return Taint(private=True, untrusted=True), Blame(tool="Workflow", program=program or None, why=f"a workflow's result: {why}",
                                                          stranger=f"{named}: {why} ({UNCHECKED_SUBAGENT})")

    if run is None or not safe_name(run):
        return held("the result does not name its run")
    run_dir = folder / "workflows" / run
    journal = run_dir / "journal.jsonl"
    try:
        started = [msgspec.json.decode(line, type=_Ledger).agentId for line in journal.read_bytes().splitlines() if line.strip()]
        present = sorted(p.name[len("agent-") : -len(".jsonl")] for p in run_dir.glob("agent-*.jsonl"))
    except FileNotFoundError:
        return held("its run's journal is not beside the session", run)
    except (OSError, *LINE_FAULTS) as exc:
        return held(f"its run's journal cannot be read ({exc})", run)
    agents = list(dict.fromkeys([a for a in started if a] + present))
    if not agents:
        return held("its run names no subagent transcript", run)
    for agent in agents:
        taint, blame = subagent_taint(reader, run_dir, agent, policy, tool="Workflow", run=run)
        if taint.untrusted:
            return taint, blame
    return Taint(private=True), None
