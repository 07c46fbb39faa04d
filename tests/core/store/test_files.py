"""The store's atomic writer against a directory that turns read-only at
any moment of a write (`mecha.core.store.files.write_atomic`).

The race a flipping mount or permission makes is replayed here without a
clock: a window of refusals (`EROFS`, what a read-only remount answers)
opens after a given number of the writer's calls that touch the directory,
and lasts a given number of them, so every place a write can be cut is
tried, with the unnamed temp (`O_TMPFILE`) and with the named fallback a
system without it (or refusing it) uses. Whatever the cut, the file is the
old one or the new one, a refusal is the named `InvalidStore`, and no temp
file is left in the directory once the window has passed.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from mecha.core.errors import InvalidStore
from mecha.core.store import files

#: The writer's calls that need the directory writable.
_TOUCHING = ("open", "link", "replace", "unlink")


class Flip:
    """A read-only window over the writer's directory calls: open after
    `after` of them succeeded, for `length` of them (`None`: until the test
    closes it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, after: int, length: int | None) -> None:
        self.after, self.length, self.seen, self.refused = after, length, 0, 0
        self.closed = False
        for name in _TOUCHING:
            monkeypatch.setattr(os, name, self._wrap(getattr(os, name), name))

    def _wrap(self, real, name: str):  # type: ignore[no-untyped-def]
        def call(*args, **kw):  # type: ignore[no-untyped-def]
            if name == "open" and not _creates(args[1]):
                return real(*args, **kw)  # a read, or the folder's fsync: a read-only mount allows it
            if not self.closed and self.seen >= self.after and (self.length is None or self.refused < self.length):
                self.refused += 1
                raise OSError(errno.EROFS, "Read-only file system", str(args[0]))
            self.seen += 1
            return real(*args, **kw)

        return call


def _creates(flags: int) -> bool:
    """Whether an `open` with `flags` makes a file (a named one, or an
    unnamed temp: `O_TMPFILE` holds `O_DIRECTORY`'s bit, so all of it)."""
    unnamed = getattr(os, "O_TMPFILE", 0)
    return bool(flags & os.O_CREAT) or (unnamed != 0 and flags & unnamed == unnamed)


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("unnamed", [True, False], ids=["O_TMPFILE", "named-fallback"])
@pytest.mark.parametrize("length", [1, 2, 3])
@pytest.mark.parametrize("after", range(6))
def test_a_write_cut_by_a_momentary_read_only_flip_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: int, length: int, unnamed: bool
) -> None:
    # Pins: the rename refused by the flip, then the temp's removal refused
    # too (the directory still read-only a moment longer), and a `.tmp` left
    # in `jobs/` until some later write there, if any came.
    target = tmp_path / "job.json"
    target.write_bytes(b"old\n")
    if not unnamed:
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    Flip(monkeypatch, after, length)
    try:
        files.write_atomic(target, b"new\n")
    except InvalidStore as exc:
        assert "not writable" in str(exc), exc
    assert target.read_bytes() in (b"old\n", b"new\n")
    assert _temps(tmp_path) == []


@pytest.mark.parametrize(("unnamed", "after"), [(True, 0), (True, 1), (True, 2), (False, 0), (False, 1)])
def test_a_temp_a_lasting_read_only_directory_keeps_goes_with_the_next_write_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: int, unnamed: bool
) -> None:
    # What no retry can remove (the directory stays read-only) is this
    # process's to remove at its next write there.
    target = tmp_path / "job.json"
    target.write_bytes(b"old\n")
    if not unnamed:
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    flip = Flip(monkeypatch, after, None)
    with pytest.raises(InvalidStore):
        files.write_atomic(target, b"new\n")
    flip.closed = True
    files.write_atomic(tmp_path / "other.json", b"x\n")
    assert target.read_bytes() == b"old\n"
    assert _temps(tmp_path) == []
