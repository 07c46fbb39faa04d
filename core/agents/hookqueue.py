"""The session-end hook's queue, and the one pass that empties it.

The agent waits for a session-end hook (Claude Code gives it 10 s here,
Codex 3 s) and kills it past that. The hook once read the session itself:
fifty sessions ending at once on two cores took 16.8–17.4 s each, every one
of them past its timeout, each reading its own transcript while the others
did. Now a hook only writes down which session ended — one small file in
`hook-queue/` — and hands the reading to the **hook pass**, a detached
process that reads every queued session, one after another, and starts
one reflect pass for all of them. The hook returns in the time an
interpreter starts, whatever else runs.

Concurrent hooks share one pass. Whether a pass is running is a lock only
the pass holds (`flock` on `hook-queue/.pass.lock`): a hook that finds it
free starts one; one that finds it held leaves its file for that pass. The
pass, once the queue is empty, lets go of the lock and then looks at the
queue once more, so a file written while it let go is never left behind:
either the hook saw the lock held, and the pass's second look finds its
file, or it saw it free, and started a pass of its own. Two passes started
at once take turns: the second finds the lock held and leaves.

A session end the hook could not queue (the store's disk full) is not
lost: the hook's log line says so in words this module alone writes and
reads (`not_queued_words`, `lost_ends`), with what the hook was told, and
the next hook pass queues it again (`requeue`) — started by the next hook
of any kind, import or learn that finds such a line. Queued again under a
name of its own, so a second try while the first waits queues nothing
twice; once read, the pass's line for the session ends it.

A queued file holds only what the hook was told (agent, session, file,
working directory, whether the session ended), written whole through a
temp name and a rename. It is read by the pass with nothing trusted: a
file that does not read as an entry is logged by name and removed. This
module uses the standard library alone: the hook imports it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time

from mecha.core.environment.agents import NAMES
from mecha.core.plainjson import dumps_flat, loads
from mecha.core.store.layout import HOOK_LOG_NOT_QUEUED, LOST_SCAN_BYTES, hook_log_path, hook_queue_dir

# The hook imports this module: nothing here but the standard library's
# cheapest (no `json`, `contextlib`, `typing`; `plainjson` says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection

#: The lock only a running hook pass holds.
PASS_LOCK = ".pass.lock"
#: A queued session's file: `<ns since epoch>-<pid>-<random>.json`.
ENTRY_SUFFIX = ".json"
#: The fields an entry has: what the agent told the hook (its
#: `transcript_path` and `cwd` may be null), and which agent it was.
FIELDS = ("agent", "session_id", "transcript_path", "cwd", "event")


def queue_dir(root: str) -> str:
    return hook_queue_dir(root)


def _ensure_dir(path: str) -> None:
    """The queue folder, owner-only, never through a link."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not os.path.isdir(path) or os.path.islink(path):
        raise OSError(errno.ENOTDIR, f"{path} is not a folder of the store (a link, or a file)")
    if st.st_mode & 0o777 != 0o700:
        os.chmod(path, 0o700)


def hook_fields(data: bytes) -> dict[str, object] | None:
    """What a hook's stdin says — `session_id`, `transcript_path`, `cwd`,
    `hook_event_name` — read with the standard library alone, or `None`
    when it is anything but a JSON object with a session id (the hook then
    asks `hooks.parse_hook_input` to say what is wrong, by name)."""
    try:
        value = loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if not isinstance(value, dict):
        return None
    sid, path, cwd, event = (value.get(k) for k in ("session_id", "transcript_path", "cwd", "hook_event_name"))
    if not isinstance(sid, str) or not sid.strip():
        return None
    if not all(v is None or isinstance(v, str) for v in (path, cwd, event)):
        return None
    return {"session_id": sid, "transcript_path": path, "cwd": cwd, "event": event or ""}


def enqueue(root: str, agent: str, fields: dict[str, object]) -> str:
    """Write one queued session (`hook_fields`, and the agent); the file it
    is in."""
    folder = queue_dir(root)
    os.makedirs(root, mode=0o700, exist_ok=True)
    _ensure_dir(folder)
    entry = {"agent": agent, **fields}
    name = f"{time.time_ns()}-{os.getpid()}-{os.urandom(4).hex()}"
    tmp = os.path.join(folder, f".{name}.tmp")
    final = os.path.join(folder, name + ENTRY_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        data = dumps_flat(entry).encode("ascii")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    try:
        os.rename(tmp, final)
    except BaseException:
        os.unlink(tmp)
        raise
    return final


def pending(root: str, passed: Collection[str] = ()) -> list[str]:
    """The queued files, oldest first, but those in `passed` (files a pass
    could not take out of the queue: it reads each once)."""
    try:
        names = os.listdir(queue_dir(root))
    except OSError:
        return []
    found = (os.path.join(queue_dir(root), n) for n in names if n.endswith(ENTRY_SUFFIX) and not n.startswith("."))
    return sorted(p for p in found if p not in passed)


def entry_problem(value: object) -> str | None:
    """What is wrong with a decoded entry, or `None` when it is one."""
    if not isinstance(value, dict) or sorted(value) != sorted(FIELDS):
        return f"not a queued session (expected the fields {', '.join(FIELDS)})"
    for key in ("agent", "session_id"):
        if not isinstance(value[key], str) or not value[key]:
            return f"{key} is not a non-empty string"
    if value["agent"] not in NAMES:
        return f"agent {value['agent']!r} is neither {' nor '.join(NAMES)}"
    for key in ("transcript_path", "cwd"):
        if value[key] is not None and not isinstance(value[key], str):
            return f"{key} is neither a string nor null"
    if not isinstance(value["event"], str):
        return "event is not a string"
    return None


def read_entry(path: str) -> dict[str, object] | str:
    """A queued file's entry, or what is wrong with it (read without
    following a link, and at most 1 MiB: the hook writes a few hundred
    bytes)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not a regular file"
        data = os.read(fd, 1 << 20)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)
    try:
        value = loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        return f"not JSON ({exc})"
    problem = entry_problem(value)
    if problem is not None:
        return problem
    assert isinstance(value, dict)  # entry_problem said so
    return value


def remove(path: str) -> str | None:
    """Take a queued file out of the queue; why it could not be, if not
    (the pass then passes it by until it ends)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        return f"{path} could not be taken out of the queue ({exc.strerror or exc})"
    return None


class pass_lock:  # noqa: N801 - used as the function it once was: `with pass_lock(root) as held:`
    """The hook pass's lock, taken without waiting: `True` while held,
    `False` when another pass holds it."""

    __slots__ = ("root", "fd", "held")

    def __init__(self, root: str) -> None:
        self.root, self.fd, self.held = root, -1, False

    def __enter__(self) -> bool:
        folder = queue_dir(self.root)
        _ensure_dir(folder)
        self.fd = os.open(os.path.join(folder, PASS_LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except BaseException:
            os.close(self.fd)
            raise
        self.held = True
        return True

    def __exit__(self, *exc: object) -> None:
        try:
            if self.held:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            self.held = False
            os.close(self.fd)


def pass_running(root: str) -> bool:
    """Whether a hook pass holds the lock now (a hook starts one when not)."""
    with pass_lock(root) as held:
        return not held


# ─── session ends the hook could not queue ──────────────────────────────────

#: The hook log's words for a session end whose queued file could not be
#: written (`layout.HOOK_LOG_NOT_QUEUED`); `lost_ends` looks for them.
NOT_QUEUED = HOOK_LOG_NOT_QUEUED
#: What separates those words from what the hook was told, on the line.
_AGAIN = "; it is queued again once there is room: "


def not_queued_words(fields: dict[str, object], exc: BaseException) -> str:
    """The hook log's words for a session end `enqueue` failed to write:
    why, and what the hook was told (`hook_fields`) as one JSON word, its
    spaces escaped, so the log's one-line form keeps it whole."""
    told = {k: fields.get(k) for k in ("session_id", "transcript_path", "cwd", "event")}
    word = dumps_flat({k: v if isinstance(v, str) else None for k, v in told.items()}).replace(" ", "\\u0020")
    return f"failed: {NOT_QUEUED} ({type(exc).__name__}: {exc}){_AGAIN}{word}"


class LostEnd:
    """A session end the hook could not queue, as its log line says it:
    the `line`, when the hook ran (`at`, `identity.now`'s form, which sorts
    as it reads), the `agent`, and what the hook was told (`fields`, as
    `hook_fields` gives them)."""

    __slots__ = ("line", "at", "agent", "fields")

    def __init__(self, line: str, at: str, agent: str, fields: dict[str, object]) -> None:
        self.line, self.at, self.agent, self.fields = line, at, agent, fields

    @property
    def session_id(self) -> str:
        return str(self.fields["session_id"])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LostEnd) and other.line == self.line

    def __hash__(self) -> int:
        return hash(self.line)

    def __repr__(self) -> str:
        return f"LostEnd({self.line!r})"


def _log_tail(root: str) -> str:
    try:
        with open(hook_log_path(root), "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - LOST_SCAN_BYTES))
            data = f.read()
    except OSError:
        return ""
    if NOT_QUEUED.encode() not in data:
        return ""
    return data.decode("utf-8", "replace")


def _line_session(rest: str) -> str | None:
    """The session a `session-end` line is about (`session=ID`), if any."""
    if not rest.startswith("session="):
        return None
    sid = rest[len("session="):]
    for end in (" cwd=", ": "):
        sid = sid.split(end, 1)[0]
    return sid


def lost_ends(root: str) -> list[LostEnd]:
    """The session ends the hook log says a hook could not queue, with no
    later session-end line for the same session (a later end queued it, or
    a pass read it), oldest first. Reads the log's last `LOST_SCAN_BYTES`,
    and parses them only when the words are there: every session-start
    hook asks."""
    lost: dict[tuple[str, str], LostEnd] = {}
    for line in _log_tail(root).splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 4 or parts[2] != "session-end":
            continue
        at, agent, rest = parts[0], parts[1], parts[3]
        sid = _line_session(rest)
        if sid is None:
            continue
        head, sep, word = rest.rpartition(_AGAIN)
        if sep and f": failed: {NOT_QUEUED} (" in head:
            try:
                told = loads(word)
            except (ValueError, RecursionError):
                told = None
            if isinstance(told, dict) and entry_problem({"agent": agent, **told}) is None:
                lost[(agent, str(told["session_id"]))] = LostEnd(line, at, agent, told)
                continue
        lost.pop((agent, sid), None)
    return list(lost.values())


def requeue(root: str, end: LostEnd) -> bool:
    """Queue a lost session end again, under a name its log line fixes;
    `False` when it is queued under that name already. Raises what
    writing it raises (the disk still full)."""
    folder = queue_dir(root)
    _ensure_dir(folder)
    import hashlib

    name = "0-lost-" + hashlib.sha256(end.line.encode("utf-8", "replace")).hexdigest()[:24]
    final = os.path.join(folder, name + ENTRY_SUFFIX)
    if os.path.lexists(final):
        return False
    tmp = os.path.join(folder, f".{name}-{os.getpid()}-{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            view = memoryview(dumps_flat({"agent": end.agent, **end.fields}).encode("ascii"))
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.link(tmp, final)
    except FileExistsError:
        return False
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return True
