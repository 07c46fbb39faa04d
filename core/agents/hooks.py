"""The agents' hooks: what `hooks install` writes into Claude Code's and
Codex's hook settings, how it finds and removes its own entries again, and
what a hook run is given.

Both agents read hooks from a JSON file with the same shape —
`{"hooks": {"<Event>": [{"matcher": "…", "hooks": [{"type": "command",
"command": "…", "timeout": N}]}]}}` — and run each command in a shell (`sh -c`
on Claude Code, `$SHELL -lc` on Codex) with the hook's JSON on stdin
(`session_id`, `transcript_path`, `cwd`, `hook_event_name`) and the
session's project as the working directory:

- Claude Code: `~/.claude/settings.json`, or `<project>/.claude/settings.json`
  (Claude Code's hooks reference, code.claude.com/docs/en/hooks). The file
  also holds the person's permissions, environment and other hooks, so only
  our entries change. `SessionEnd` (and `PreCompact`, so a long session is
  read before it is compacted) queue the session; `SessionStart` tells the
  person when proposals wait. `SessionEnd` hooks share a budget of 1.5 s
  unless a hook's `timeout` raises it: ours asks for `END_TIMEOUT_S`, used only
  when a first read of a very large session is slow.
- Codex: `~/.codex/hooks.json`, or `<project>/.codex/hooks.json` (Codex's hooks
  docs, developers.openai.com/codex/hooks; `codex-rs/hooks`). Codex has
  `SessionStart`, `PreCompact` and `SessionEnd` (whose timeout it caps at 3 s)
  among its events; its `transcript_path` may be null, and then the rollout is
  found by its session id under `~/.codex/sessions`. Codex runs a hook only once
  the person has trusted it (`/hooks`), and only with hooks enabled in its
  config (`[features] hooks`, formerly `codex_hooks`).

The command is an absolute path to the interpreter mecha-sidecar is
installed in, with `-P -c HOOK_CODE hook AGENT session-end|session-start`
(`hook_program` says why not the console script, nor `-m`). Our entries are
recognised by their command — `python [flags] -c HOOK_CODE` or `-m
mecha.sidecar`, or an executable named `mecha-sidecar`, followed by
`hook` — so a
reinstall from another virtual environment replaces them, and uninstall
removes exactly them. Install refuses a file it cannot read as a JSON object
(naming it, writing nothing). A change is made on the file's text
(`settings_after`): every byte around our entries stays the person's —
`1e3`, an inline array, a `\u00e9`, a duplicate key — so uninstall gives
back the bytes install found. It is written as the export writes a
person's file (`confined.rewrite_file`): swapped in, checked against what the
agent or the person wrote meanwhile, and made again from their version if
they did (14 of 711 edits an agent made during 30 runs were once lost),
through a symlink onto its target.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from mecha.core import shellwords
from mecha.core.agents.hookqueue import LostEnd
from mecha.core.environment.agents import AGENTS as AGENT_ROWS
from mecha.core.environment.agents import CODEX, NAMES, HookSpec
from mecha.core.errors import InvalidInput
from mecha.core.nesting import MAX_SETTINGS_DEPTH, json_nesting
from mecha.core.store.layout import checkout_root

SCOPES = ("user", "project")

#: The hook command's own verb (`hook AGENT session-end|session-start`).
HOOK_VERB = "hook"

#: Ours only when run as this program: the console script, or the module.
PROGRAM = "mecha-sidecar"
MODULE = "mecha.sidecar"
#: Interpreter flags a command of ours may carry before `-m` or `-c`.
_INTERPRETER_FLAGS = frozenset({"-P", "-I", "-E", "-s", "-S", "-B"})
#: The code a hook command hands the interpreter (`-c`): the hook runner,
#: given the words after `hook`. `-m mecha.sidecar` would do the same
#: through the module runner, whose imports (runpy, importlib.util,
#: collections, functools, contextlib) were about 3.5 ms of the 8 ms of CPU
#: a session-end hook spent beyond a bare interpreter.
HOOK_CODE = "import sys; from mecha.sidecar.hookrun import run; sys.exit(run(sys.argv[2:]))"


def hook_program(executable: str) -> list[str]:
    """How an agent's hook runs this program: the absolute path of the
    interpreter it is installed in (a virtual environment's `python`, not
    the file it links to, which would lose the environment), `-P`, then
    `-c HOOK_CODE`, the hook runner without the module runner `-m` loads
    (an entry written as `-m mecha.sidecar` is ours as well).

    Why not the `mecha-sidecar` console script beside it: pip's launcher
    imports `re` before our code runs — a small cost on the session-start
    hook every session pays (figure 11 measures both forms: on a quiet
    machine 1.56× against 1.69× a bare interpreter) — and the interpreter's
    path is what the script's own first line names anyway. Why `-P`: `-m` would otherwise put the working directory — the agent's
    project — first on the import path, where any `json.py` or `mecha/` of
    that project would be imported instead; `-P` (Python 3.11) leaves it off
    and keeps everything else (`PYTHONPATH` — where an empty entry still
    means the working directory, as Python reads it — and the user's
    site-packages, which `-I` would drop)."""
    return [os.path.abspath(executable), "-P", "-c", HOOK_CODE]

#: What `hooks install` writes, per agent (the agent table's `hooks`).
SPECS: dict[str, tuple[HookSpec, ...]] = {a.name: a.hooks for a in AGENT_ROWS}

#: Where each agent keeps its hooks, relative to the home directory (user
#: scope) or the project root (project scope): the table's settings files.
SETTINGS_FILES = {a.name: a.settings_home for a in AGENT_ROWS}
PROJECT_SETTINGS_FILES = {a.name: a.settings_project for a in AGENT_ROWS}


def validate_agent(agent: str) -> str:
    if agent not in NAMES:
        raise InvalidInput(f"unknown agent {agent!r}: hooks are for {' or '.join(NAMES)}")
    return agent


# ─── where ──────────────────────────────────────────────────────────────────


def settings_path(agent: str, scope: str, *, home: Path, cwd: Path) -> Path:
    """The agent's hook settings file for `scope`: under the home directory,
    or in the checkout `cwd` is in — its git root (a linked worktree's own,
    since the agent reads the settings of the checkout it runs in), else
    `cwd` itself (`layout.checkout_root`)."""
    name = validate_agent(agent)
    if scope == "user":
        return home.joinpath(*SETTINGS_FILES[name])
    if scope != "project":
        raise InvalidInput(f"unknown scope {scope!r}: user or project")
    return Path(checkout_root(cwd)).joinpath(*PROJECT_SETTINGS_FILES[name])


def scope_root(scope: str, *, cwd: Path) -> Path | None:
    """The folder a `scope`'s files must stay inside when written: the
    checkout's for `project` (a cloned repository's links lead anywhere),
    `None` for `user` (the home's files and their links are the person's)."""
    return Path(checkout_root(cwd)) if scope == "project" else None


# ─── the command ────────────────────────────────────────────────────────────


def hook_command(program: list[str], agent: str, subcommand: str, learning_dir: str | None = None) -> str:
    """The command line an agent runs, quoted for a shell: `program`
    (`hook_program`), then `hook AGENT SUBCOMMAND`, then the store when one
    was named at install."""
    argv = [*program, HOOK_VERB, agent, subcommand]
    if learning_dir:
        argv += ["--learning-dir", learning_dir]
    return shellwords.command(*argv)


def parse_hook_argv(command: str) -> list[str] | None:
    """The arguments after the program when `command` is one of ours
    (`hook AGENT SUBCOMMAND …`), else `None`."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if not argv:
        return None
    if os.path.basename(argv[0]) == PROGRAM:
        rest = argv[1:]
    else:
        i = 1
        while i < len(argv) and argv[i] in _INTERPRETER_FLAGS:
            i += 1
        if argv[i : i + 2] not in (["-m", MODULE], ["-c", HOOK_CODE]):
            return None
        rest = argv[i + 2 :]
    return rest if rest[:1] == [HOOK_VERB] else None


def is_ours(entry: Any) -> bool:
    """Whether a hook object in a settings file is one `install` wrote."""
    return (
        isinstance(entry, dict)
        and entry.get("type") == "command"
        and isinstance(entry.get("command"), str)
        and parse_hook_argv(entry["command"]) is not None
    )


# ─── reading and writing the file ───────────────────────────────────────────


class Settings(msgspec.Struct):
    """A hook settings file as read: its text (`None`: no file yet) and the
    JSON object in it, keys in the file's order."""

    path: Path
    text: str | None
    doc: dict[str, Any]


def read_settings(path: Path) -> Settings:
    """The file at `path`, refused with an error naming it when it is not a
    JSON object whose `hooks` (if any) maps event names to lists. Read as
    the confined writer reads it: a FIFO there (a cloned repository's) is
    refused by name (`ExportFailed`), never waited on."""
    from mecha.core.environment.confined import read_file

    return parse_settings(path, read_file(path))


def parse_settings(path: Path, raw: bytes | None) -> Settings:
    """`read_settings` on bytes already read (`None`: no file)."""
    if raw is None:
        return Settings(path=path, text=None, doc={})
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); nothing was written") from None
    if not text.strip():
        return Settings(path=path, text=text, doc={})
    if json_nesting(text, MAX_SETTINGS_DEPTH) > MAX_SETTINGS_DEPTH:
        raise InvalidInput(f"{path}: its arrays or objects nest more than {MAX_SETTINGS_DEPTH} deep; nothing in it "
                           "was read and nothing was written — fix the file, then run this again")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                           "nothing was written — fix the file, then run this again") from None
    if not isinstance(doc, dict):
        raise InvalidInput(f"{path}: not a JSON object; nothing was written")
    hooks = doc.get("hooks")
    if hooks is not None:
        if not isinstance(hooks, dict):
            raise InvalidInput(f'{path}: "hooks" is not an object; nothing was written')
        for event, groups in hooks.items():
            if not isinstance(groups, list):
                raise InvalidInput(f'{path}: "hooks.{event}" is not a list; nothing was written')
    return Settings(path=path, text=text, doc=doc)


def _indent_of(text: str | None) -> int | str:
    """The indentation the file uses (2 spaces for a new file)."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def render(settings: Settings, doc: dict[str, Any]) -> str:
    """`doc` as the file's text: its indentation, its final newline (a new
    file gets one), non-ASCII kept as it is."""
    text = json.dumps(doc, indent=_indent_of(settings.text), ensure_ascii=False)
    if settings.text is None or settings.text.endswith("\n"):
        text += "\n"
    return text


def settings_after(path: Path, raw: bytes | None, change: Callable[[dict[str, Any]], dict[str, Any]]) -> bytes | None:
    """The bytes of the settings file `path` (now `raw`; `None`: not there)
    once `change` (`with_ours`, `without_ours`) is made to what it holds:
    `raw` itself when that changes nothing (`None`: still no file). Made on
    the text (`jsontext.patch`), so every byte around our entries is the
    person's, as it was; a new or blank file is written whole."""
    from mecha.core.agents.jsontext import patch

    settings = parse_settings(path, raw)
    doc = change(settings.doc)
    if doc == settings.doc:
        return raw
    if settings.text is None or not settings.text.strip():
        return render(settings, doc).encode("utf-8")
    return patch(settings.text, settings.doc, doc, _indent_of(settings.text)).encode("utf-8")


# ─── merging ────────────────────────────────────────────────────────────────


def _entries(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Every hook object under `doc["hooks"]`, with its event and group."""
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                for entry in group["hooks"]:
                    if isinstance(entry, dict):
                        yield event, group, entry


def without_ours(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with every hook entry of ours removed — a matcher group left
    with no hook, an event left with no group, and a `hooks` object left
    empty go with them; everything else stays as it was, in its order."""
    out = {k: v for k, v in doc.items()}
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return out
    new_hooks: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            new_hooks[event] = groups
            continue
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                kept = [entry for entry in group["hooks"] if not is_ours(entry)]
                if not kept and group["hooks"]:
                    continue  # a group that held only our hooks
                if len(kept) != len(group["hooks"]):
                    group = {**group, "hooks": kept}
            kept_groups.append(group)
        if kept_groups or not groups:
            new_hooks[event] = kept_groups
    if new_hooks:
        out["hooks"] = new_hooks
    else:
        del out["hooks"]
    return out


def with_ours(doc: dict[str, Any], agent: str, program: list[str], learning_dir: str | None = None) -> dict[str, Any]:
    """`doc` with our entries for `agent` in place: an existing entry of ours
    for an event is rewritten where it stands (same place, new command), any
    second one dropped; a missing one is appended to the event's groups as a
    group of its own. Other keys, events and hooks keep their order."""
    out = {k: v for k, v in doc.items()}
    hooks = out.get("hooks")
    hooks = {k: v for k, v in hooks.items()} if isinstance(hooks, dict) else {}
    for spec in SPECS[validate_agent(agent)]:
        wanted: dict[str, Any] = {
            "type": "command",
            "command": hook_command(program, agent, spec.subcommand, learning_dir),
            "timeout": spec.timeout,
        }
        group_wanted: dict[str, Any] = {"hooks": [wanted]}
        if spec.matcher is not None:
            group_wanted = {"matcher": spec.matcher, **group_wanted}
        groups = hooks.get(spec.event)
        groups = list(groups) if isinstance(groups, list) else []
        placed = False
        new_groups = []
        for group in groups:
            if not (isinstance(group, dict) and isinstance(group.get("hooks"), list)) or not any(
                is_ours(e) for e in group["hooks"]
            ):
                new_groups.append(group)
                continue
            if placed:
                kept = [e for e in group["hooks"] if not is_ours(e)]
                if kept:
                    new_groups.append({**group, "hooks": kept})
                continue
            placed = True
            if group.get("matcher") == spec.matcher and len(group["hooks"]) == 1:
                new_groups.append(group_wanted if group != group_wanted else group)
                continue
            # Ours shares a group (or its matcher changed): ours leaves it,
            # in a group of its own right after it.
            kept = [e for e in group["hooks"] if not is_ours(e)]
            if kept:
                new_groups.append({**group, "hooks": kept})
            new_groups.append(group_wanted)
        if not placed:
            new_groups.append(group_wanted)
        hooks[spec.event] = new_groups
    out["hooks"] = hooks
    return out


class Installed(msgspec.Struct, kw_only=True):
    """Which of our entries a settings file holds."""

    path: str
    exists: bool
    #: Event → the command installed for it.
    events: dict[str, str] = msgspec.field(default_factory=dict)
    #: Of `SPECS[agent]`, the events with no entry of ours.
    missing: list[str] = msgspec.field(default_factory=list)
    #: Programs named by our commands that are not there to run any more.
    stale_programs: list[str] = msgspec.field(default_factory=list)


def installed(settings: Settings, agent: str) -> Installed:
    found: dict[str, str] = {}
    stale: list[str] = []
    for event, _group, entry in _entries(settings.doc):
        if is_ours(entry):
            found.setdefault(event, entry["command"])
            program = shlex.split(entry["command"])[0]
            if os.path.isabs(program) and not os.access(program, os.X_OK) and program not in stale:
                stale.append(program)
    missing = [s.event for s in SPECS[agent] if s.event not in found]
    return Installed(path=str(settings.path), exists=settings.text is not None, events=found, missing=missing,
                     stale_programs=stale)


# ─── a hook run's input ─────────────────────────────────────────────────────


class HookInput(msgspec.Struct, kw_only=True):
    """What both agents send a command hook on stdin (other keys ignored)."""

    session_id: str
    hook_event_name: str = ""
    transcript_path: str | None = None
    cwd: str | None = None


def parse_hook_input(data: bytes) -> HookInput:
    """The hook's JSON, or an error naming what is wrong with it."""
    if not data.strip():
        raise InvalidInput("the hook was given no input on stdin (the agent sends a JSON object)")
    try:
        got = msgspec.json.decode(data, type=HookInput)
    except msgspec.ValidationError as exc:
        raise InvalidInput(f"the hook's input is not what an agent sends: {exc}") from None
    except msgspec.DecodeError as exc:
        raise InvalidInput(f"the hook's input is not JSON: {exc}") from None
    if not got.session_id.strip():
        raise InvalidInput("the hook's input has an empty session_id")
    return got


def codex_rollout(sessions_root: Path, session_id: str) -> Path | None:
    """The rollout file of Codex session `session_id` under `sessions_root`
    (`YYYY/MM/DD/rollout-<time>-<id>.jsonl`), newest days first, or `None`."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        return None
    suffix = f"-{session_id}.jsonl"

    def newest_first(folder: Path) -> list[Path]:
        try:
            return sorted((p for p in folder.iterdir() if p.is_dir()), reverse=True)
        except OSError:
            return []

    for year in newest_first(sessions_root):
        for month in newest_first(year):
            for day in newest_first(month):
                try:
                    names = os.listdir(day)
                except OSError:
                    continue
                for name in names:
                    if name.startswith("rollout-") and name.endswith(suffix):
                        return day / name
    return None


def session_file(agent: str, got: HookInput, *, home: Path) -> Path:
    """The session file a hook run is about: the `transcript_path` the agent
    gave, else (Codex, where it may be null) the rollout with the session's
    id. An error naming what is missing when there is none."""
    if got.transcript_path:
        path = Path(got.transcript_path).expanduser()
        if not path.is_absolute() and got.cwd:
            path = Path(got.cwd) / path
        if not path.is_file():
            raise InvalidInput(f"session {got.session_id}: its transcript {path} is not there")
        return path
    if agent == CODEX.name:
        root = home.joinpath(*CODEX.sessions_home)
        found = codex_rollout(root, got.session_id)
        if found is None:
            raise InvalidInput(f"session {got.session_id}: no rollout-*-{got.session_id}.jsonl under {root}")
        return found
    raise InvalidInput(f"session {got.session_id}: the hook's input names no transcript_path")


# ─── the hook log ───────────────────────────────────────────────────────────


def log_hook_run(root: Path, agent: str, subcommand: str, what: str, *, session_id: str | None = None,
                 cwd: str | None = None) -> None:
    """One line in the store's hook log (`layout.hook_log_path`): when, which
    agent and hook, the session and its working directory, and what happened
    — the only place a hook says anything, since its output is the agent's."""
    from mecha.core.identity import now
    from mecha.core.store.files import append_lines, ensure_private_dir
    from mecha.core.store.layout import hook_log_path

    path = Path(hook_log_path(root))
    ensure_private_dir(path.parent, root=root)
    fields = [now(), agent, subcommand]
    if session_id is not None:
        fields.append(f"session={session_id}")
    if cwd:
        fields.append(f"cwd={cwd}")
    line = " ".join(fields) + ": " + " ".join(what.split())
    append_lines(path, [line.encode("utf-8", "replace")])


def lost_session_ends(root: Path, imported: dict[str, str]) -> list[LostEnd]:
    """The session ends an agent's session-end hook could not queue (the
    store's disk full, a store not writable) and nothing has read since,
    oldest first (`hookqueue.lost_ends`), but those an import read after
    the hook ran (`imported`: the latest `imported_at` by session id, as
    `imported_since` gives it). A hook must exit 0 whatever happens; such a
    session was once lost with one log line, and only a manual import would
    read it. Now the next hook pass queues it again (`hookqueue.requeue`)."""
    from mecha.core.agents.hookqueue import lost_ends

    return [e for e in lost_ends(str(root)) if imported.get(e.session_id, "") < e.at]


def imported_since(records: Iterable[Any]) -> dict[str, str]:
    """The latest time each session was imported, by its bare id, from the
    store's import records (`store.imports()`)."""
    latest: dict[str, str] = {}
    for r in records:
        sid = r.session_id.rpartition(":")[2]
        if r.imported_at > latest.get(sid, ""):
            latest[sid] = r.imported_at
    return latest


def hook_log_tail(root: Path, lines: int = 5) -> list[str]:
    """The last `lines` lines of the hook log (none when there is no log)."""
    from mecha.core.store.layout import hook_log_path

    try:
        with open(hook_log_path(root), "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read()
    except OSError:
        return []
    return [line.decode("utf-8", "replace") for line in data.splitlines()[-lines:] if line.strip()]


# ─── the model the hooks' passes will use ───────────────────────────────────


def hooks_model_note(config: Any, source_env: str, found_agents: list[str]) -> str:
    """One line for `hooks install`: the model the passes its hooks start
    will use, or what to do when there is none. `config` is the resolved
    model configuration (`None`: none) and `source_env` the label of the
    environment source; `found_agents` names the agent command lines
    installed here (`installed.find_agents`), any of which can serve.

    The hooks run in the agent's environment, not the shell's this command
    runs in, so a model configured only in variables here may not reach
    them: said, with the file that always does."""
    if config is not None and config.source != source_env:
        return f"the passes will use the {config.describe()}; `mecha-sidecar doctor` checks that it answers"
    if config is not None:
        return (
            f"this shell configures the {config.describe()}, but the hooks run in your agent's environment, which "
            "may not have those variables: put the model in ~/.mecha/sidecar.toml ([model] api, base_url, model) "
            "so they always find it"
        )
    if found_agents:
        return (
            f"no model is configured; {found_agents[0]} is installed here and can serve the passes: see "
            "docs/models.md, then `mecha-sidecar doctor`"
        )
    return (
        "no model is configured, so the passes will wait in the inbox: configure one in ~/.mecha/sidecar.toml "
        "(docs/models.md), then `mecha-sidecar doctor` checks it"
    )
