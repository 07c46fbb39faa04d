"""What the session-start hook records: a session began, where, and which
learned rules reached the agent then — with the standard library alone.

A rule's record counts the sessions it could have changed (its
*exposure*, `learning.record`): the sessions that ran in its scope while
it was live *and* that it reached. Whether it reached an agent is a fact
about the moment the session began, not about where an export once wrote
a file: the person may have moved the file, pointed the agent elsewhere,
or turned the export off since. So the hook reads what the agent reads at
that moment — its instruction files for the session's working directory —
and records which rule lines are in them, each as a hash of the line
(`rule_line_hash`, the one definition both sides use). A rule reached the
agent when the line its text renders to (`rules.domain_rules_section`'s
`- <text>`) is among them, whichever file, section or key held it: the
person's own copy of a rule counts as much as an export's.

Which files: everything either agent reads as instructions for a
directory — the person's own (`~/.claude/CLAUDE.md`, Codex's home
`AGENTS.md`) and the project's, from the working directory up to its
checkout's root (`CLAUDE.md`, `CLAUDE.local.md`, `.claude/CLAUDE.md`,
`AGENTS.md`, `AGENTS.override.md`, `.codex/config.toml`). Reading a file
the agent does not read costs a stat and can only over-count a rule it
does not hold, which the line hash rules out.

The hook runs before every session and the agent's first answer waits for
it, so this module imports `os` alone at load and the JSON scanner the
notice already holds (`notice`); a missing store records nothing (no rule
is live there), and nothing here raises past the hook
(`hookrun.session_start` logs a failure).
"""

from __future__ import annotations

import os

from mecha.core.environment.agents import AGENTS, CODEX, agent_home
from mecha.core.plainjson import quote as _quote
from mecha.core.plainjson import scan as _scan
from mecha.core.store.layout import fnv1a_64, started_path

#: The instruction files read in each folder from the working directory up
#: to its checkout's root: Claude Code's and Codex's, whichever the agent.
FOLDER_FILES = tuple(os.path.join(*parts) for a in AGENTS for parts in a.instructions_read)
#: The largest instruction file read (a real one is a few KiB).
MAX_FILE_BYTES = 1 << 20
#: The most rule lines one start records (a rules block holds 15 learned
#: rules per domain and scope; the rest of a long file's bullets are not ours).
MAX_LINES = 400
#: How many folders up from the working directory are looked in, at most.
MAX_DEPTH = 32


def rule_line_hash(line: str) -> str:
    """A line of an instruction file as the record keeps it: the FNV-1a 64
    of its text with the blanks around it stripped. The rule record hashes
    `- <rule text on one line>` the same way to ask whether it reached."""
    return fnv1a_64(line.strip().encode("utf-8"))


def personal_files(home: str, codex_home: str | None) -> list[str]:
    """The person's own instruction files, read in every session."""
    env = {} if codex_home is None else {CODEX.home_env or "": codex_home}
    return [os.path.join(agent_home(a, home, env), name) for a in AGENTS for name in a.home_instructions]


def folder_files(cwd: str) -> list[str]:
    """The instruction files of `cwd` and each folder above it, up to the
    first that holds `.git` (only `cwd`'s own outside a repository)."""
    out: list[str] = []
    here = os.path.abspath(cwd)
    folders = []
    for _ in range(MAX_DEPTH):
        folders.append(here)
        if os.path.exists(os.path.join(here, ".git")):
            break
        parent = os.path.dirname(here)
        if parent == here:
            folders = folders[:1]  # no repository: the folder alone
            break
        here = parent
    for folder in folders:
        out.extend(os.path.join(folder, name) for name in FOLDER_FILES)
    return out


def rule_lines(paths: list[str]) -> list[str]:
    """The hashes of every bullet line (`- …`) in the files at `paths` that
    exist, each once, in the order met; at most `MAX_LINES`."""
    seen: dict[str, None] = {}
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
        except OSError:
            continue
        if len(data) > MAX_FILE_BYTES:
            continue
        for raw in data.decode("utf-8", "replace").splitlines():
            line = raw.strip()
            if line.startswith("- ") and len(line) < 4096:
                seen.setdefault(rule_line_hash(line), None)
                if len(seen) >= MAX_LINES:
                    return list(seen)
    return list(seen)


def _fields(data: bytes) -> tuple[str, str | None] | None:
    """`(session_id, cwd)` from the hook's JSON, or `None`."""
    try:
        text = data.decode("utf-8").strip(" \t\r\n")
        value, end = _scan(text, 0)
    except (ValueError, StopIteration, RecursionError, UnicodeDecodeError):
        return None
    if end != len(text) or not isinstance(value, dict):
        return None
    sid, cwd = value.get("session_id"), value.get("cwd")
    if not isinstance(sid, str) or not sid or len(sid) > 256:
        return None
    return sid, cwd if isinstance(cwd, str) and os.path.isabs(cwd) else None


def start_line(agent: str, data: bytes, home: str, codex_home: str | None, at: str) -> bytes | None:
    """The `started.jsonl` line for the hook input `data`, or `None` when
    it names no session."""
    fields = _fields(data)
    if fields is None:
        return None
    sid, cwd = fields
    paths = personal_files(home, codex_home) + (folder_files(cwd) if cwd else [])
    hashes = ",".join(_quote(h) for h in rule_lines(paths))
    where = f',"cwd":{_quote(cwd)}' if cwd else ""
    # Spelled as the importers spell a session of this agent
    # (`claude:<id>`, `codex:<id>`), so a start and the corrections of the
    # same session name it alike.
    return (
        f'{{"session_id":{_quote(f"{agent}:{sid}")},"agent":{_quote(agent)}{where},"at":{_quote(at)},"rules":[{hashes}]}}\n'
    ).encode()


def _utc_now() -> str:
    """`identity.now`'s format, without `datetime`."""
    import time

    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1_000_000):06d}Z"


def record_start(root: str, agent: str, data: bytes) -> bool:
    """Append the session's start to the store at `root` (one write of one
    whole line, as every ledger append); `False` when nothing was recorded
    (no store yet, or input naming no session)."""
    if not os.path.isdir(root):
        return False
    line = start_line(agent, data, os.path.expanduser("~"), os.environ.get(CODEX.home_env or ""), _utc_now())
    if line is None:
        return False
    fd = os.open(started_path(root), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    return True
