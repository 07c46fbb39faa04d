"""What an editor watches of a store: one cheap identity that moves when
anything it shows could, and the reflections by id, read again only when
their file changed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mecha.core.store.layout import (
    JOBS_DIR,
    PROPOSALS_DIR,
    REFLECTIONS_FILE,
    RULES_DIR,
    TMP_SUFFIX,
    VALIDATIONS_FILE,
    rules_fingerprint,
)

if TYPE_CHECKING:
    from mecha.core.domain.reflexion import Reflexion
    from mecha.core.store.learning_store import LearningStore


#: The store's parts whose every file an editor shows something of: a
#: proposal as a diagnostic and a lens, a job as progress.
_WATCHED_DIRS = (PROPOSALS_DIR, JOBS_DIR)
#: The ledgers an editor shows something of: tallies and lessons in a hover.
_WATCHED_FILES = (VALIDATIONS_FILE, REFLECTIONS_FILE)


def _stat_key(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_ino, st.st_mtime_ns, st.st_size


def store_identity(root: Path) -> tuple[Any, ...]:
    """What changes when anything an editor shows of the store at `root`
    could: the rules files (by `rules_fingerprint`), every proposal and job
    record, the validation ledger and the reflections. Comparable with `==`
    and cheap (stats, no reads), so a watcher polls it and recomputes only
    when it moved, whoever moved it (a pass, the CLI, another editor).

    A write in progress (a `*.tmp` file beside its target) is left out: it
    is not a change until it is renamed into place, and counting it would
    announce the same change twice. A part that does not exist yet is
    simply absent, so a store that does not exist has an identity too."""
    ident: list[Any] = [(RULES_DIR, repr(rules_fingerprint(root)))]
    for sub in _WATCHED_DIRS:
        try:
            with os.scandir(root / sub) as it:
                for e in it:
                    if e.name.endswith(TMP_SUFFIX):
                        continue
                    ident.append((sub, e.name, *_stat_key(e.stat(follow_symlinks=False))))
        except FileNotFoundError:
            continue
    for name in _WATCHED_FILES:
        try:
            ident.append((name, *_stat_key((root / name).stat())))
        except FileNotFoundError:
            pass
    ident.sort()
    return tuple(ident)


class ReflectionsById:
    """A store's reflections by id, read again only when the file changed.

    A hover names the lessons a rule was learned from, and an editor asks
    for a hover at every pause of the cursor: reading and decoding the
    whole reflections file each time would cost more than everything else
    a hover does. The file only ever changes by a write that moves its
    inode, mtime or size (an append, or a rename into place), so those,
    with the store's root, key the copy kept here."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._by_id: dict[str, Reflexion] = {}

    def of(self, store: LearningStore | None) -> dict[str, Reflexion]:
        """The reflections of `store` by id; empty when there is no store or
        no reflections file yet."""
        if store is None:
            return {}
        try:
            key = (store.root, *_stat_key((store.root / REFLECTIONS_FILE).stat()))
        except FileNotFoundError:
            return {}
        if key != self._key:
            self._by_id = {r.id: r for r in store.reflexions()}
            self._key = key
        return self._by_id
