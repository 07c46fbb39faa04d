"""The store's writer lock: an advisory `flock` on `.lock`.

Writers — a reflect pass, a learn pass, an accept — take it *before reading
the state they act on*, because the read is where the race lives. Readers
take nothing (every rewrite is a rename into place). Advisory, so it orders
mecha's own writers and does nothing to a person's editor.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from mecha.core.store import files as _files
from mecha.core.store.layout import LOCK_FILE


class StoreLock:
    """The store's writer lock, held until `release()`, the end of a `with`
    block, garbage collection, or the death of the process — the kernel drops
    an `flock` when its file closes, so a crashed pass can never wedge the
    store."""

    def __init__(self, fd: int):
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            # Explicit unlock first: a forked child may share this open file
            # description, and closing our copy alone would not free it.
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> StoreLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:
            pass



def take_lock(root: Path, *, blocking: bool) -> StoreLock | None:
    """The writer lock of the store at `root`; without `blocking`, `None`
    when another holder has it. Each call opens its own file description,
    so a second call contends even within one process."""
    path = _files.refuse_links(root, root / LOCK_FILE)
    with _files.writing(path if path.exists() else root):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, _files.FILE_MODE)
    try:
        _files.refuse_hard_link(path, os.fstat(fd))
        os.fchmod(fd, _files.FILE_MODE)
        fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return StoreLock(fd)
