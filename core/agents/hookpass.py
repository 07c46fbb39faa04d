"""The hook pass's reading rule: every queued session read once per round,
and once per pass.

The session-end hook only queues a session (`hookqueue`); the hook pass
reads the queue in rounds (hooks that end while one round is read make the
next). This module is what a round does, apart from how the pass runs (a
detached process, its lock, its waits: `sidecar.hookrun`) and from how one
session is read (handed in: `import_one`, which the pass gives the same
`import_sessions` call `import claude` / `import codex` makes).

The rule, and why:

- **One read per session per round**, however many hooks queued it (a
  compaction, then the end): the queued files are grouped by agent and
  session file, and the group read once, as ended when any of its hooks
  says the session ended (`ended_event`).
- **One read per session per pass** (`already_read`): Claude Code with
  both mecha's plugin and hooks in a settings file runs two session-end
  hooks for one session, and the second can land in the next round. A
  session already read this pass, its file unchanged since, is not read
  again — unless it is now read as ended and was not then (a compaction,
  then the end: a refusal the session ended on is queued only at its end).
- **Nothing trusted in a queued file**: one that does not read as an entry,
  or names no session file, is said (in the hook log) and removed; a file
  that cannot be removed is said and set aside for the rest of the pass
  (`passed`), so the pass cannot loop on it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from mecha.core.agents.hookqueue import pending, read_entry, remove
from mecha.core.agents.hooks import HookInput, session_file

#: What reading one queued session came to: its agent, the hook log's
#: words for it, its session and working directory, whether it queued
#: anything new.
Said = tuple[str, str, "str | None", "str | None", bool]

#: What the pass remembers of a session it read: the file's size and
#: mtime then, and whether it was read as ended; by agent and session id.
Read = dict[tuple[str, str], tuple[int, int, bool]]

#: Reads one session file for an agent, as ended or not: the hook log's
#: words for what it came to, and whether it queued anything new.
ImportOne = Callable[[str, Path, bool], tuple[str, bool]]

#: Writes one line of the hook log that is about no session (a queued file
#: that does not read, or cannot be removed).
Note = Callable[[str], None]

ALREADY_READ = (
    "already read by this pass: another hook ran for the same session (the Claude Code "
    "plugin and hooks in a settings file? `mecha-sidecar hooks status` says)"
)


def ended_event(event: str) -> bool:
    """Whether the hook's event means the session is over (`SessionEnd`),
    rather than still going on (`PreCompact`)."""
    return event == "SessionEnd"


def already_read(before: tuple[int, int, bool] | None, stat: tuple[int, int] | None, ended: bool) -> bool:
    """Whether a session read earlier this pass (`before`: its file's size,
    mtime and whether it was read as ended) is left alone now: its file is
    as it was (`stat`), and it was read as ended or is not ended now."""
    return stat is not None and before is not None and before[:2] == stat and (before[2] or not ended)


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _grouped(files: list[str], said: list[Said], note: Note, home: Path) -> dict[tuple[str, Path], list[HookInput]]:
    """The queued files as the sessions they name, grouped by agent and
    session file, in the order queued; what cannot be grouped is said."""
    groups: dict[tuple[str, Path], list[HookInput]] = {}
    for path in files:
        try:
            entry = read_entry(path)
        except Exception as exc:  # named, and the queue goes on
            entry = f"cannot be read ({type(exc).__name__}: {exc})"
        if isinstance(entry, str):
            note(f"skipped the queued file {path}: {entry}")
            continue
        agent = str(entry["agent"])
        got = HookInput(session_id=str(entry["session_id"]), hook_event_name=str(entry["event"]),
                        transcript_path=_text(entry["transcript_path"]), cwd=_text(entry["cwd"]))
        try:
            session = session_file(agent, got, home=home)
        except Exception as exc:
            said.append((agent, f"failed: {type(exc).__name__}: {exc}", got.session_id, got.cwd, False))
            continue
        groups.setdefault((agent, session), []).append(got)
    return groups


def read_round(root: str, passed: set[str], read: Read, import_one: ImportOne, note: Note,
               *, home: Path | None = None) -> list[Said]:
    """One round: every session queued now under store `root` (but the
    files in `passed`) read by `import_one` under the rule above, the
    queued files removed; what each came to."""
    said: list[Said] = []
    files = pending(root, passed)
    groups = _grouped(files, said, note, Path.home() if home is None else home)
    for (agent, session), hooks in groups.items():
        last = hooks[-1]
        key, stat = (agent, last.session_id), _stat_key(session)
        ended = any(ended_event(h.hook_event_name) for h in hooks)
        if already_read(read.get(key), stat, ended):
            said.append((agent, ALREADY_READ, last.session_id, last.cwd, False))
            continue
        try:
            what, new = import_one(agent, session, ended)
            said.append((agent, what, last.session_id, last.cwd, new))
            if stat is not None:
                read[key] = (*stat, ended)
        except Exception as exc:
            said.append((agent, f"failed: {type(exc).__name__}: {exc}", last.session_id, last.cwd, False))
    for path in files:
        problem = remove(path)
        if problem is not None:
            passed.add(path)
            note(problem)
    return said
