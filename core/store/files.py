"""The three ways the learning store touches a file, and nothing else.

The store is plain files that a person may read and edit, and that an agent
run reads with no lock at startup. That fixes the rules every write follows:

- **Owner-only, whatever the umask.** Reflections quote what a person said to
  their agent; nobody else on the machine should read them. Modes are passed
  to `os.open` *and* set again with `fchmod`, because the first is filtered
  through the process umask and the second is not.
- **Whole or not at all.** A file that is rewritten (a rules file, a
  proposal, the reflections ledger when a pass marks it) is written to a temp
  sibling, fsynced, and renamed over the original, so a reader sees the old
  file or the new one and never half of either.
- **An append costs at most itself.** A JSONL append is one `os.write` of a
  whole line on an `O_APPEND` descriptor. If a crash tore the previous append
  (the file does not end in a newline), a newline goes first, so the torn
  line stays one unreadable record and the new one starts clean on its own
  line instead of being glued to the wreck.
"""

from __future__ import annotations

import errno
import gc
import logging
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from mecha.core.errors import InvalidStore, StoreFull
from mecha.core.store.layout import GITIGNORE_FILE, TMP_SUFFIX

log = logging.getLogger(__name__)

#: Directories of the store: owner only.
DIR_MODE = 0o700
#: Files of the store: owner read/write only.
FILE_MODE = 0o600

# In-flight temp files end in `layout.TMP_SUFFIX`. Ignored by git (the
# store's `.gitignore`) and never read as data: a crash can leave one behind,
# and the next write in the same directory sweeps it (`is_stale_temp`).

#: A temp name `write_atomic` makes: `<file>.<pid>-<8 hex>.tmp`, or, from
#: before names carried the writer's pid, `<file>.<8 hex>.tmp`.
_TEMP_NAME = re.compile(r"^.+\.(?:(\d+)-)?[0-9a-f]{8}\.tmp$")

#: A temp younger than this is never swept, whatever its name says: its
#: writer may be in another pid namespace (a container sharing the store),
#: where its pid means nothing here.
STALE_TEMP_S = 60.0


def process_alive(pid: int) -> bool:
    """Whether `pid` is a running process (a zombie is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state != b"Z"
    except (OSError, IndexError):
        return True


def is_stale_temp(name: str, age_s: float, alive: Callable[[int], bool] = process_alive) -> bool:
    """Whether a file called `name`, last written `age_s` seconds ago, is a
    temp of `write_atomic`'s whose writer is gone, so it can be removed.

    Why these conditions: a temp whose writer lives may be mid-write and is
    never touched; a name the store does not make is not the store's; one
    from a dead writer is litter (a whole transcript, perhaps) that nothing
    will ever rename. Below `STALE_TEMP_S` nothing is judged, and a name
    without a pid (older temps) is judged by age alone.
    """
    found = _TEMP_NAME.match(name)
    if found is None or age_s < STALE_TEMP_S:
        return False
    pid = found.group(1)
    return pid is None or not alive(int(pid))


def sweep_stale_temps(directory: Path) -> int:
    """Remove the stale temps (`is_stale_temp`) in `directory`; how many.
    Best effort: the write that calls it has already succeeded."""
    import time

    if _UNREMOVED:
        _retry_unremoved(directory)
    swept = 0
    try:
        entries = os.scandir(directory)
    except OSError:
        return 0
    now = time.time()
    with entries:
        for entry in entries:
            if not entry.name.endswith(TMP_SUFFIX):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and is_stale_temp(entry.name, now - st.st_mtime):
                    os.unlink(entry.path)
                    swept += 1
            except OSError:
                continue
    if swept:
        log.info("removed %d temp file(s) left in %s by a writer that did not finish", swept, directory)
    return swept


#: What an `OSError` says when the store, not the request, is the problem:
#: a read-only mount, a file or directory its owner took write access from.
_NOT_WRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


def not_writable(path: Path | str, exc: OSError) -> InvalidStore:
    """The `InvalidStore` for a write the store's files refused, naming the
    path. Why a named store error and not an internal one: nothing is wrong
    with the request or the code — the person's store cannot be written
    (a read-only window, a permission taken away), and the same request
    succeeds once it can."""
    why = exc.strerror or type(exc).__name__
    return InvalidStore(
        f"{path} is not writable ({why}); the learning store must be writable by its owner, "
        "and nothing was changed",
        path=str(path),
    )


#: What an `OSError` says when the filesystem under the store has no room:
#: no free block (or inode), or the owner's quota is used up.
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def store_full(path: Path | str, exc: OSError | None = None, *, kept: str | None = None) -> StoreFull:
    """The `StoreFull` for a write that ran out of room, naming the path and
    what was kept (`kept`; by default: the file as it was)."""
    why = (exc.strerror if exc is not None else None) or "No space left on device"
    return StoreFull(
        f"the filesystem holding {path} is full ({why}); "
        + (kept or f"{path} was kept as it was")
        + "; free some space and try again",
        path=str(path),
    )


def store_fault(path: Path | str, exc: OSError) -> InvalidStore | None:
    """The named store error an `OSError` is, writing `path` — refused
    (`not_writable`), or out of room (`store_full`) — else `None`."""
    if exc.errno in _NOT_WRITABLE:
        return not_writable(path, exc)
    if exc.errno in _FULL:
        return store_full(path, exc)
    return None


@contextmanager
def writing(path: Path | str) -> Iterator[None]:
    """Turn a refused write inside the block into `not_writable(path)`, and
    one that ran out of room into `store_full(path)`; any other failure
    passes through unchanged."""
    try:
        yield
    except OSError as exc:
        named = store_fault(path, exc)
        if named is not None:
            raise named from None
        raise


def refuse_links(root: Path, path: Path) -> Path:
    """`path`, unless it or a directory between `root` and it is a symbolic
    link: then `InvalidStore` naming the link.

    The store writes only inside itself. A link planted in it — a rules
    file, `proposals/`, the inbox — would turn a write into one outside it
    (an append follows a link; a chmod does; a rename into a linked
    directory lands in the target), so every writer checks first and
    refuses, leaving the person to decide what the link was for. `root`
    itself may be a link: where the store lives is the person's choice.
    """
    rel = path.relative_to(root)
    if ".." in rel.parts:
        raise InvalidStore(f"{path} is not inside the learning store {root}", path=str(path))
    here = root
    for part in rel.parts:
        here = here / part
        if os.path.islink(here):
            raise InvalidStore(
                f"{here} is a symbolic link; the learning store does not write through links "
                "(replace it with a regular file or directory)",
                path=str(here),
            )
    try:
        st = os.lstat(path)
    except OSError:
        return path
    refuse_hard_link(path, st)
    return path


def refuse_hard_link(path: Path, st: os.stat_result) -> None:
    """`InvalidStore` naming `path` when it is a regular file with another
    name somewhere (`st`: its `stat`, from the path or an open descriptor).

    Why: the other name may be outside the store, and an append or a chmod
    through this one changes that file too, exactly as a symbolic link
    would. A rename over it would not, but a store file with two names is
    not one the store made, so every writer refuses it alike and leaves the
    person to decide what the second name was for."""
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise InvalidStore(
            f"{path} is a hard link ({st.st_nlink} names for one file); the learning store does not "
            "write through links (replace it with a copy: `cp` it aside and move the copy back)",
            path=str(path),
        )


def ensure_private_dir(path: Path, *, root: Path | None = None) -> None:
    """Create `path` (and parents) if needed and make it owner-only.

    Parents the store did not ask for keep whatever mode the umask gives them;
    only `path` itself is the store's to lock down. With `root`, a `path`
    below it that is (or sits in) a symbolic link is refused, not chmod-ed.
    """
    if root is not None:
        refuse_links(root, path)
    if not path.is_dir():
        with writing(path.parent):
            path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    try:
        if (os.stat(path).st_mode & 0o777) != DIR_MODE:
            os.chmod(path, DIR_MODE)
    except PermissionError as e:  # not ours to change; still usable
        log.warning("cannot make %s owner-only: %s", path, e)


def ensure_ignored_dir(path: Path, *, root: Path) -> None:
    """`ensure_private_dir`, and a `.gitignore` of `*` inside: a folder of
    transient files that hold what people and assistants said (the inbox,
    kept transcripts), which a pass's commit (`git add -A`) must never carry
    into the store's history."""
    ensure_private_dir(path, root=root)
    ignore = path / GITIGNORE_FILE
    if not ignore.exists():
        write_atomic(ignore, b"*\n")


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_durably(fd: int, data: bytes | Sequence[bytes | memoryview]) -> None:
    """`data` (bytes, or chunks in order) written whole to `fd`, then
    fsynced: what every atomic write here puts in its temp file before the
    rename, the store's (`write_temp`) and the export's into a person's file
    alike. An `OSError` comes as it is; the caller names it."""
    for chunk in (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data:
        _write_all(fd, chunk)
    os.fsync(fd)


def write_atomic(path: Path, data: bytes | Sequence[bytes | memoryview]) -> None:
    """Replace `path` with `data` (bytes, or chunks written in order): temp
    sibling, fsync, rename, mode 0600.

    The temp name is unique per call so two writers can never interleave
    bytes in one temp file (writers hold the store lock; this is the belt to
    that pair of braces).
    """
    try:
        refuse_hard_link(path, os.lstat(path))
    except FileNotFoundError:
        pass
    with _held_temp(path, data) as tmp:
        try:
            with writing(path):
                os.replace(tmp, path)
        except BaseException:
            discard_temp(tmp)
            raise
    fsync_dir(path.parent)
    # This directory's writer is here: what a killed one left, it clears.
    sweep_stale_temps(path.parent)


def temp_name(path: Path) -> Path:
    """A fresh temp sibling of `path`: `<name>.<pid>-<8 hex>.tmp`."""
    return path.with_name(f"{path.name}.{os.getpid()}-{os.urandom(4).hex()}{TMP_SUFFIX}")


def write_temp(path: Path, data: bytes | Sequence[bytes | memoryview], tmp: Path | None = None) -> Path:
    """`data` written whole and fsynced to a new temp file (`tmp`, else a
    fresh sibling of `path`), mode 0600: the first half of an atomic write,
    for a caller that renames it into place later. A failure removes what
    it wrote and raises `writing(path)`'s named errors."""
    with _held_temp(path, data, tmp) as named:
        return named


@contextmanager
def _held_temp(path: Path, data: bytes | Sequence[bytes | memoryview], tmp: Path | None = None) -> Iterator[Path]:
    """`write_temp`'s temp, given a name only once it is whole, and held
    open for writing until the block ends.

    Why both: a store turned read-only mid-write once left 26 temps in
    `jobs/` over 300 writes, each unremovable by then (removing a name is
    a write too). Written as an unnamed file (`O_TMPFILE`), a temp that
    fails before it is whole leaves nothing to remove: it never had a
    name. And a file open for writing keeps its filesystem from being
    remounted read-only (the kernel answers `EBUSY`), so a writer that
    renames inside the block cannot be cut off between naming the temp
    and renaming it. What is left (write permission taken away between
    those two calls, or a system with no unnamed files) `discard_temp`
    removes while the refusal lasts a moment, else at the next write."""
    tmp = temp_name(path) if tmp is None else tmp
    fd, named = _open_temp(tmp)
    try:
        try:
            with writing(path):
                os.fchmod(fd, FILE_MODE)
                write_durably(fd, data)
            if not named:
                try:
                    _name_unnamed(fd, tmp)
                except InvalidStore:
                    raise
                except OSError:
                    # Naming it failed in a way that says nothing of the
                    # store (`/proc` unusable, a filesystem refusing
                    # `linkat` of an unnamed file): the bytes go to a named
                    # temp instead, once — once a raw traceback on every write.
                    os.close(fd)
                    fd = -1
                    with writing(tmp.parent):
                        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
                    named = True
                    with writing(path):
                        os.fchmod(fd, FILE_MODE)
                        write_durably(fd, data)
                named = True
        except BaseException:
            if named:
                discard_temp(tmp)
            raise
        yield tmp
    finally:
        if fd >= 0:
            os.close(fd)


def _name_unnamed(fd: int, tmp: Path) -> None:
    """Give the unnamed file `fd` the name `tmp`: `linkat` of its
    `/proc/self/fd` entry, following it (a plain `link` would not, and
    `os.link` only calls `linkat` when given a folder descriptor)."""
    proc = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with writing(tmp.parent):
            os.link(str(fd), tmp, src_dir_fd=proc, follow_symlinks=True)
    finally:
        os.close(proc)


def _open_temp(tmp: Path) -> tuple[int, bool]:
    """A descriptor to write `tmp`'s bytes to, and whether it is `tmp`
    already: an unnamed file in its folder where the filesystem makes them
    (and `/proc` can name it), else `tmp` itself, created."""
    unnamed = getattr(os, "O_TMPFILE", 0)
    if unnamed and os.path.isdir("/proc/self/fd"):
        try:
            return os.open(tmp.parent, os.O_WRONLY | unnamed | os.O_CLOEXEC, FILE_MODE), False
        except OSError as exc:
            # Anything but room: try the named temp, which says by name
            # whether the folder is really not writable. `EACCES`/`EPERM`
            # from an unnamed open alone (a security module, a filesystem
            # that refuses only those) once failed every write of a
            # writable store as "not writable".
            if exc.errno in _FULL:
                with writing(tmp.parent):
                    raise
    with writing(tmp.parent):
        return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE), True


#: Temps this process wrote and could not remove (their directory turned
#: read-only under it): retried at its next write in that directory, and at
#: exit. Nobody else may remove them while this process lives — its pid is
#: in their names — so it must.
_UNREMOVED: set[Path] = set()


#: The waits (seconds) before each further try `discard_temp` makes at
#: removing a temp its directory refused to let go: about 40 ms in all.
#: Why it tries again at all: the refusal that made the rename fail is
#: most often a moment long (a sync tool or a backup flipping the folder
#: read-only and back), and the removal right after it met the same
#: moment — one race in two against a flipping `jobs/` left a `.tmp` there,
#: its writer a pass that exited before writing there again. Short enough
#: to spend on a write that failed anyway; a folder read-only for longer
#: keeps the temp for this process's next write there, or its exit.
DISCARD_WAITS_S = (0.0005, 0.001, 0.002, 0.004, 0.008, 0.024)


def discard_temp(tmp: Path) -> None:
    """Remove a temp of this process's that will never be renamed. Never
    raises: the failure that made the write give up is what the caller
    reports. A removal the directory refuses is tried again for a moment
    (`DISCARD_WAITS_S`); a temp that cannot go even then is kept in mind
    and removed by this process's next write in its directory (or at
    exit)."""
    import time

    for wait in (*DISCARD_WAITS_S, None):
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            break
        except OSError as exc:
            if wait is not None and exc.errno in _NOT_WRITABLE | {errno.EBUSY}:
                time.sleep(wait)
                continue
            if not _UNREMOVED:
                import atexit

                atexit.register(_retry_unremoved, None)
            _UNREMOVED.add(tmp)
            log.warning("could not remove the temp file %s (%s); it goes with the next write there", tmp, exc)
            return
        break
    _UNREMOVED.discard(tmp)


def _retry_unremoved(directory: Path | None) -> None:
    """Remove the temps `discard_temp` could not, in `directory` (all of
    them with `None`); those that still cannot go are kept in mind."""
    for tmp in [t for t in _UNREMOVED if directory is None or t.parent == directory]:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        except OSError:
            continue
        _UNREMOVED.discard(tmp)


def fsync_dir(path: Path) -> None:
    """Make a rename durable. Best effort: some filesystems refuse it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _open_for_append(path: Path) -> int:
    """`path` opened to append, created if absent; never through a link
    (`InvalidStore` naming it), and a full or read-only store named."""
    try:
        # O_APPEND follows a symbolic link; O_NOFOLLOW refuses one.
        return os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
    except OSError as e:
        named = store_fault(path if path.exists() else path.parent, e)
        if named is not None:
            raise named from None
        if e.errno != errno.ELOOP:
            raise
        raise InvalidStore(
            f"{path} is a symbolic link; the learning store does not append through links "
            "(replace it with a regular file)",
            path=str(path),
        ) from None


def append_lines(path: Path, lines: Sequence[bytes]) -> None:
    """Append records, each with its newline, in a single write.

    Each of `lines` must be one line (the caller encodes to one). Reads the
    file's last byte first: if an earlier append was torn, the new records
    are preceded by a newline so the first cannot be glued onto the wreck.
    """
    for line in lines:
        if b"\n" in line or b"\r" in line:
            raise ValueError("a ledger record must be a single line")
    if not lines:
        return
    fd = _open_for_append(path)
    try:
        st = os.fstat(fd)
        refuse_hard_link(path, st)  # checked on the open file: no window between check and write
        with writing(path):
            os.fchmod(fd, FILE_MODE)
        size = st.st_size
        lead = b""
        if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
            lead = b"\n"
        try:
            _write_all(fd, lead + b"\n".join(lines) + b"\n")
        except OSError as e:
            named = store_fault(path, e)
            if named is None:
                raise
            # A short write left part of a record: cut it off again, so the
            # file ends where it did (a torn tail would cost the next line).
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass
            if isinstance(named, StoreFull):
                named = store_full(path, e, kept=f"nothing was appended to {path}")
            raise named from None
    finally:
        os.close(fd)


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or `None` when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def nonblank_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """`(1-based line number, stripped line)` for each non-blank line.

    Walks `data` rather than splitting it, so a large ledger is never held
    twice (once whole, once as a list of its lines)."""
    size = len(data)
    pos = 0
    number = 0
    while pos <= size:
        end = data.find(b"\n", pos)
        if end == -1:
            end = size
        number += 1
        line = data[pos:end].strip()
        if line:
            yield number, line
        pos = end + 1


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector around a bulk decode.

    Decoding a 100k-line ledger allocates 100k container objects, and the
    collector re-walks them each time a generation fills — about half the
    cost of the read. Decoded JSON cannot form reference cycles, so nothing
    is lost by collecting once afterwards instead.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
