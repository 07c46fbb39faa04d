"""The one writer of a person's files: every file mecha changes outside
its store (the exported instructions, an agent's settings, a skill, the
config file, the exclude list) is changed here, by `rewrite_file`.

The write is a temp sibling swapped in for the file (through a symlink, onto
its target, which keeps a dotfiles checkout linked), keeping the file's mode —
and it is checked against a person writing the same file meanwhile. Exports
running while a person's editor appended to `CLAUDE.md` once lost 200 of
6,210 of their lines: the file was read, spliced and renamed over with no
look at what had happened since. Now the file is read again just before the
swap and the swap is an exchange (`renameat2(RENAME_EXCHANGE)` where the
kernel has it), so what it displaced is known exactly: if anything differs
from what the section was spliced into, the person's version is put back and
the export starts over from it, up to `WRITE_ATTEMPTS` times, then refuses.
What is left is a writer that opened the file before the swap and writes
into it after the check, which no rename-based writer can see.

Every failure is an `ExportFailed` naming the file and what was wrong, and
the file is as it was. Refused rather than rewritten: a file with no write
permission (its owner made it read-only: it is not ours to override), and a
file with several names (hard links) — replacing it would split the names,
the others keeping the old text; writing it in place instead would risk a
torn file, the person's own text half-written, on a crash. A symbolic link
is the way to keep one file under two names, and the export follows it —
for a project's file only while it stays inside the project
(`reach_problem`). A repository may be a stranger's clone: its `CLAUDE.md`
linked to `~/.bashrc` once got the rules section appended to the person's
shell start-up, and a link to nothing created folders and a file under
`~/.config/autostart/`. So a link leaving the project, or leading nowhere,
is refused by name before anything is created or opened for writing. The
global file is the person's own, in their home, and its links are theirs.
A FIFO, socket or device is refused by name too: the file is opened
without blocking and its type read from the open descriptor (`file_kind`)
— one FIFO once hung every export, and every accept's re-export, in
`open()` forever.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from mecha.core.errors import ExportFailed
from mecha.core.store.files import write_durably

#: How many times a write starts over because the file changed under it
#: before the export refuses: a person saving twice in the same instant is
#: plausible, a file rewritten five times in a row while one export runs is
#: a writer that will not stop, and racing it on would only lose.
WRITE_ATTEMPTS = 5


class ExportOutcome(msgspec.Struct, frozen=True):
    path: str
    changed: bool
    #: Why the file was left alone on purpose (no rule for its scope yet).
    skipped: str | None = None


def rewrite_file(
    path: Path,
    render: Callable[[bytes | None], bytes | None],
    *,
    check: bool = False,
    within: Path | None = None,
    appends: bool = True,
    what: str = "the rules section",
    mode: int | None = None,
) -> ExportOutcome:
    """Change a person's file to `render(what it holds)` (`None`: it is not
    there yet), with every check above: the swap that keeps what they wrote
    meanwhile (rendered again from their version), up to `WRITE_ATTEMPTS`
    times. `render` may raise `ExportFailed` (or `InvalidInput`) to refuse
    what it finds. With `appends` false, bytes appended in the instant of
    the swap are not spliced in after the new text (which a JSON file would
    not survive): the file is rendered again from the version holding
    them. `what` names the change in the refusal. `render` giving `None`
    (or `raw` itself) leaves the file as it is. The file keeps its own
    mode (a new one gets 0644), or gets `mode` when one is given."""
    name = str(path)
    for _ in range(WRITE_ATTEMPTS):
        target = _target(path, within)
        raw, info = _read(target, name)
        updated = render(raw)
        changed = updated is not None and updated != raw
        if check or updated is None or not changed:
            return ExportOutcome(path=name, changed=changed)
        with _exporting_in(target.parent, name):
            raw, info = _read(target, name)
            updated = render(raw)
            if updated is None or updated == raw:
                return ExportOutcome(path=name, changed=False)
            _refuse_unwritable(info, name)
            if _swap_in(target, raw, updated, info, name, appends, mode):
                return ExportOutcome(path=name, changed=True)
    raise ExportFailed(
        f"{name}: the file was rewritten {WRITE_ATTEMPTS} times while it was being written; "
        f"every change to it was kept and {what} was not written — run it again"
    )


def remove_file(path: Path, expected: bytes, *, what: str) -> bool:
    """Remove the file at `path` that holds exactly `expected` (a file
    the project wrote whole, now with nothing left to say), under the same
    folder lock and checks as `rewrite_file`; whether it was there to
    remove. A file that holds anything else was changed by someone else
    and is refused by name, as it is."""
    name = str(path)
    target = _target(path)
    if not target.exists() and not target.is_symlink():
        return False
    with _exporting_in(target.parent, name):
        raw, info = _read(target, name)
        if raw is None:
            return False
        _refuse_unwritable(info, name)
        if raw != expected:
            raise ExportFailed(f"{name}: changed since it was written; {what} left as it is — remove it by hand")
        try:
            os.unlink(target)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise ExportFailed(f"{name}: could not be removed ({exc.strerror or exc}); the file is as it was") from None
    return True


def read_file(path: Path) -> bytes | None:
    """What a person's file holds (`None`: not there), read as the writer
    reads it: through its links, opened without blocking, and refused by
    name (`ExportFailed`) when it is a FIFO, socket or device — a look at a
    cloned repository's file must not wait forever on a pipe."""
    return _read(_target(path), str(path))[0]


def reach_problem(path: Path, within: Path) -> str | None:
    """Why a write to `path` would land outside the folder `within`, or
    `None` when it stays inside. Followed as the kernel follows them, every
    symbolic link on the way counts: one that leads out of the folder (a
    cloned repository's `CLAUDE.md` linked to `~/.bashrc`), one that leads
    nowhere (writing through it would create the file, and its folders,
    wherever it names), and a loop. A file that is simply not there yet is
    inside when its nearest folder that is there is, through no link; the
    folders missing between are created there. And the folder it lands in
    must be the person's own (`foreign_owner`): a repository unpacked from
    someone else's archive can name another user's folder as one of its
    checkouts."""
    root = os.path.realpath(within)
    try:
        real = os.path.realpath(path, strict=True)
    except FileNotFoundError:
        real, problem = _missing_tail(path)
        if problem is not None:
            return problem
    except OSError as exc:
        why = "its symbolic links loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        return f"its symbolic links cannot be followed ({why})"
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        return f"a symbolic link takes it outside the project {root}, to {real}"
    return foreign_owner(real)


def _missing_tail(path: Path) -> tuple[str, str | None]:
    """Where a file that is not there would be created, through its nearest
    folder that is there (resolved); or, as a problem, the link to nothing
    met on the way (the file itself, or a folder above it)."""
    tail: list[str] = []
    here = Path(os.path.abspath(path))
    while True:
        if os.path.islink(here):
            try:
                os.stat(here)
            except FileNotFoundError:
                what = "it is" if not tail else f"its folder {here} is"
                return "", (f"{what} a symbolic link to {os.readlink(here)}, which is not there, "
                            "and nothing is created through a link")
            except OSError as exc:
                why = "its symbolic links loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
                return "", f"its symbolic links cannot be followed ({why})"
        if os.path.lexists(here):
            return os.path.join(os.path.realpath(here), *reversed(tail)), None
        if here.parent == here:
            return "", "no folder above it is there"
        tail.append(here.name)
        here = here.parent


def foreign_owner(real: str) -> str | None:
    """Why the resolved path `real` is not the person's to write: the file,
    or the nearest folder above it that is there, belongs to another user
    (`None`: it is theirs, or the system cannot say)."""
    here = real
    while True:
        try:
            info = os.lstat(here)
        except FileNotFoundError:
            parent = os.path.dirname(here)
            if parent == here:
                return None
            here = parent
            continue
        except OSError:
            return None
        if info.st_uid != os.getuid():
            return f"{here} belongs to another user (uid {info.st_uid}), and mecha writes only in folders of yours"
        return None


def _target(path: Path, within: Path | None = None) -> Path:
    """The file a write lands on: through any symbolic links (a link to a
    file not there yet: where it points), refusing a loop by name — and,
    with `within`, anything `reach_problem` finds."""
    if within is not None:
        problem = reach_problem(path, within)
        if problem is not None:
            inside = "" if os.path.realpath(within) == os.sep else f", only inside {within}"
            raise ExportFailed(
                f"{path}: {problem}; nothing was written. Mecha writes a file only in folders of yours, "
                f"through no link to nothing{inside}: make it a regular file there, or remove the link"
            )
    if not path.is_symlink():
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        return Path(os.path.realpath(path))
    except OSError as exc:
        raise ExportFailed(f"{path}: its symbolic links cannot be followed ({exc.strerror or exc}); nothing was written") from None


def _read(target: Path, name: str) -> tuple[bytes | None, os.stat_result | None]:
    """The file's bytes and what it is (`None`, `None` when it is missing)."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        try:  # a socket cannot be opened at all (ENXIO): say what it is
            _refuse_special(os.stat(target).st_mode, name)
        except OSError:
            pass
        why = "its symbolic links loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise ExportFailed(f"{name}: cannot be read ({why}); nothing was written") from None
    try:
        with open(fd, "rb") as f:
            info = os.fstat(f.fileno())
            _refuse_special(info.st_mode, name)
            return f.read(), info
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        why = "its symbolic links loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise ExportFailed(f"{name}: cannot be read ({why}); nothing was written") from None


def file_kind(mode: int) -> str | None:
    """What a file that is not a regular one is, as a person would name it
    (`None` for a regular file). A FIFO is why this is asked of the open
    file: opened without `O_NONBLOCK`, one with no writer blocked every
    export, and every accept's re-export behind it, forever."""
    if stat.S_ISREG(mode):
        return None
    kinds = {
        stat.S_ISFIFO: "a FIFO (named pipe)", stat.S_ISSOCK: "a socket", stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device", stat.S_ISDIR: "a folder",
    }
    return next((said for test, said in kinds.items() if test(mode)), "not a regular file")


def _refuse_special(mode: int, name: str) -> None:
    kind = file_kind(mode)
    if kind is not None:
        raise ExportFailed(
            f"{name}: is {kind}, not a regular file, and the export writes only into a regular file; "
            "nothing was written — replace it with a regular file to export into it"
        )


def _refuse_unwritable(info: os.stat_result | None, name: str) -> None:
    if info is None:
        return
    mode = stat.S_IMODE(info.st_mode)
    if not mode & 0o222:
        raise ExportFailed(
            f"{name}: the file is read-only (mode {mode:04o}); the export does not rewrite a file its owner "
            "made read-only. Nothing was written: make it writable to export into it"
        )
    if info.st_nlink > 1:
        raise ExportFailed(
            f"{name}: the file has {info.st_nlink} names (hard links); replacing it would split them and "
            "writing it in place could tear it. Nothing was written: keep one file and make the other "
            "names symbolic links to it, which the export follows"
        )


def _swap_in(
    target: Path, raw: bytes | None, data: bytes, info: os.stat_result | None, name: str, appends: bool = True,
    mode: int | None = None,
) -> bool:
    """Put `data` (`render(raw)`) at `target`, which was `raw` (`None`:
    missing) when it was read. Swapped in by an exchange, what it displaced
    is checked and anything written since folded in (`_fold_in`); where the
    kernel cannot exchange, the file is read once more just before a plain
    rename. `False`, with the file as the person left it, when it changed
    and the caller should start over from it."""
    folder = target.parent
    held: list[Path] = []
    try:
        tmp = _temp_with(folder, data, info, name, mode)
        held.append(tmp)
        if raw is None:
            try:
                os.link(tmp, target)  # fails if the file appeared meanwhile
            except FileExistsError:
                return False
            return True
        # Written and synced, the temp took a while: one more look first,
        # so the swap lands within microseconds of the last read. A writer
        # that reads the file and writes it back builds on what it read;
        # between the swap and the fold-in below it would read ours, which
        # lacks what it wrote just before, and write it back without it.
        if _read(target, name)[0] != raw:
            return False
        if _exchange(tmp, target):
            return _fold_in(target, tmp, raw, data, info, name, held, appends)
        # No exchange here: one last look, then a plain rename.
        if _read(target, name)[0] != raw:
            return False
        os.replace(tmp, target)
        return True
    except OSError as exc:
        raise ExportFailed(f"{name}: could not be replaced ({exc.strerror or exc}); the file is as it was") from None
    finally:
        for path in held:
            try:
                os.unlink(path)
            except OSError:
                pass  # gone already (linked in, or swapped in)


def _fold_in(
    target: Path,
    tmp: Path,
    expected: bytes,
    placed: bytes,
    info: os.stat_result | None,
    name: str,
    held: list[Path],
    appends: bool = True,
) -> bool:
    """After `tmp` (holding `placed`) was exchanged with `target`: `tmp`
    now holds what the swap displaced (`_settled`: once its writers closed
    it). When that is `expected`, done. When it is not, someone wrote the
    file in the instant of the swap, and what they wrote is only in `tmp`:

    - appended (`expected` plus more — a writer in append mode, as `>>`
      is), where the file takes that (`appends`): the added bytes go in
      after what was placed, before anything appended to the new file since
      (`_insert_appended`);
    - anything else (an editor saving the whole file, an agent rewriting
      its settings): theirs goes straight back in place, by one more swap,
      and `False` says to start over from it. Straight back, not after
      working our change into it: while ours stands in its place, a writer
      that reads the file and writes it back would build on ours, which
      lacks what it wrote a moment before — and write that back lost.

    If the swap back itself displaces something other than `placed` (the
    file was written again in that instant), that newest version is put
    back in place instead."""
    displaced = _settled(tmp)
    if displaced == expected:
        return True
    if appends and displaced.startswith(expected):
        _insert_appended(target, placed, displaced[len(expected) :], info, name, held)
        return True
    if not _exchange(tmp, target):  # pragma: no cover - it exchanged a moment ago
        raise OSError(errno.ENOTSUP, "the filesystem stopped exchanging names", str(target))
    if _settled(tmp) != placed:  # written again in that instant: the newest back in place
        _exchange(tmp, target)
    return False


def _insert_appended(
    target: Path, placed: bytes, appended: bytes, info: os.stat_result | None, name: str, held: list[Path]
) -> None:
    """Bytes appended to the displaced file belong right after `placed`,
    and before whatever was appended to the file in place since: one more
    swap puts them there, and what lands in the instant of that swap is
    appended at the end (a few lines racing it may then swap places; none
    is lost)."""
    fresh = _temp_with(target.parent, placed + appended, info, name)
    held.append(fresh)
    current = _read(target, name)[0] or b""
    if current.startswith(placed):
        with open(fresh, "ab") as f:
            f.write(current[len(placed) :])
        if _exchange(fresh, target):
            displaced = _settled(fresh)
            if displaced.startswith(current):
                _append(target, displaced[len(current) :])
            else:  # rewritten in that instant: theirs back, and the bytes at its end
                _exchange(fresh, target)
                _append(target, appended)
            return
    _append(target, appended)  # the file in place was rewritten: at its end, then


def _append(target: Path, data: bytes) -> None:
    if not data:
        return
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        write_durably(fd, data)
    finally:
        os.close(fd)


#: How long to wait for the writers that still hold a displaced file open
#: (an append opened before the swap, written after it) to close it.
SETTLE_S = 0.5


def _settled(path: Path) -> bytes:
    """The bytes of a file the swap just displaced, once no one holds it open
    for writing any more: a writer that opened it before the swap may still
    be appending, and its lines would be lost with the file.

    Linux tells: a read lease (`F_SETLEASE`) is granted only while no one has
    the file open for writing. Its break signal is set to `SIGURG`, which is
    ignored unless a handler is installed, so a stray opener of the temp name
    cannot kill the process. Elsewhere, or after `SETTLE_S`, the bytes as
    they are."""
    import fcntl
    import signal
    import time

    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        leased = False
        setlease: int = getattr(fcntl, "F_SETLEASE", 0)
        if setlease:
            deadline = time.monotonic() + SETTLE_S
            try:
                fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
                while True:
                    try:
                        fcntl.fcntl(fd, setlease, fcntl.F_RDLCK)
                        leased = True
                        break
                    except BlockingIOError:  # open for writing somewhere
                        if time.monotonic() >= deadline:
                            break
                        time.sleep(0.001)
            except OSError:
                pass  # not ours to lease, or a filesystem without leases
        try:
            with open(fd, "rb", closefd=False) as f:
                return f.read()
        finally:
            if leased:
                fcntl.fcntl(fd, setlease, fcntl.F_UNLCK)
    finally:
        os.close(fd)


def _temp_with(folder: Path, data: bytes, info: os.stat_result | None, name: str, mode: int | None = None) -> Path:
    """A new temp file in `folder` holding `data`, with `mode`, else the
    file's own (0644 for a file that was not there)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{_TEMP_PREFIX}{os.urandom(6).hex()}{_TEMP_SUFFIX}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise ExportFailed(f"{name}: cannot write in {folder} ({exc.strerror or exc}); nothing was written") from None
    try:
        own = stat.S_IMODE(info.st_mode) if info is not None else 0o644
        os.fchmod(fd, own if mode is None else mode)
        write_durably(fd, data)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


#: How long an export waits for another export into the same folder.
LOCK_WAIT_S = 10.0


@contextlib.contextmanager
def _exporting_in(folder: Path, name: str) -> Iterator[None]:
    """Exports into one folder, one at a time: an advisory lock on the folder
    itself (nothing is added to it), which only other exports take. Two
    exports swapping the same file would otherwise each read the other's
    version as a person's rewrite, and chase it."""
    import fcntl
    import time

    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ExportFailed(f"{name}: cannot write in {folder} ({exc.strerror or exc}); nothing was written") from None
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        locked = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                locked = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ExportFailed(
                        f"{name}: another export into {folder} has been running for {LOCK_WAIT_S:g}s; nothing was written"
                    ) from None
                time.sleep(0.005)
            except OSError:
                break  # a filesystem without flock: exports there are not serialised
        if locked:
            _remove_dead_temps(folder)
        yield
    finally:
        os.close(fd)


#: How the writer's temp files are named: `.mecha-export.<12 hex>.tmp`.
_TEMP_PREFIX, _TEMP_SUFFIX = ".mecha-export.", ".tmp"


def _remove_dead_temps(folder: Path) -> None:
    """Remove the temps of writes into `folder` that were killed mid-way
    (`kill -9`, a power loss), called holding the folder's lock, when no
    other write there is running. One killed while its temp was written
    holds only the new text, never shown; one killed between linking a new
    file in and removing the temp is a second name of that file, which
    made every later write refuse it as hard-linked. Only a kill in the
    microseconds between a swap and its check could leave a temp holding
    the version it displaced."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    size = len(_TEMP_PREFIX) + 12 + len(_TEMP_SUFFIX)
    for entry in names:
        middle = entry[len(_TEMP_PREFIX):-len(_TEMP_SUFFIX)]
        if (len(entry) == size and entry.startswith(_TEMP_PREFIX) and entry.endswith(_TEMP_SUFFIX)
                and all(c in "0123456789abcdef" for c in middle)):
            with contextlib.suppress(OSError):
                os.unlink(folder / entry)


#: `renameat2` flags and the "current directory" dirfd (linux/fs.h, fcntl.h).
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_no_exchange = False


def _exchange(a: Path, b: Path) -> bool:
    """Swap two names atomically; `False` where the kernel or the filesystem
    cannot (then the caller renames, having checked the file just before)."""
    global _no_exchange
    if _no_exchange:
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        _no_exchange = True
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code == errno.ENOSYS:  # an older kernel: never on this machine
        _no_exchange = True
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):  # EINVAL: not on this filesystem
        return False
    raise OSError(code, os.strerror(code), str(b))
