"""A change of several store files made as one: staged, decided, applied.

Accepting a proposal changes a learned rules file (what every run's block is
rendered from), the reflections it was learned from (marked processed), the
proposal itself (now accepted) and the history (a commit). Made one file at a
time, a full disk or a crash between two of them leaves a state nobody
decided: rules live while the proposal still reads pending — and a reject
of it then leaves a rejected proposal's rules in the block. So a change is
made in three steps:

1. **Stage.** Every new file is written whole into `journal/` and fsynced.
   This is where the room goes: a full disk here is `StoreFull` saying
   nothing was changed — the staged files are removed, no live file was
   touched.
2. **Decide.** `journal/intent.json` names each staged file's target.
   Written whole and durably, it is the point of no return: from here the
   change is finished, never undone.
3. **Apply.** Each staged file is renamed over its target (a rename takes
   no new room), the history commit is made, the intent removed.

A crash, or a full disk, after the decision leaves the intent, and the next
writer finishes the change before it reads anything (`finish_interrupted`,
from `LearningStore.lock` and `LearningStore.open`): a staged file still
there is renamed, one gone was renamed already; then the commit. A reader in
between may see some of the files already — an accept's rules, say — but
only of a change that is decided and will be finished, never rolled back.
Staged files with no intent are a change abandoned before it was decided,
and are removed.

The journal trusts nothing it reads. It lies in the store, a folder a
person (or a stranger's tool) can write, and an intent is a list of renames
and deletions: a planted `marks` step with an absolute `staged` path once
made the next writer delete that file wherever it was, a staged symbolic
link was moved in as the rules file, and an intent aimed outside the store,
refused, then stopped every writer. So before anything of an intent is
done, every step is checked (`step_problem`): its staged file a bare name
in `journal/`, shaped as `stage` names it, and a regular file with one name
(or gone: already put in place); its target a relative path inside the
store, through no link, and not into the journal or git's own folder. An
intent that fails any check, or cannot be read at all, is done nothing of:
the journal folder is set aside whole under a name that says so
(`journal.set-aside-<time>`, git-ignored like the journal), a warning names
the step and what was wrong, and the store goes on working.

The reflections file is the one target that is appended to. Its staged copy
was marked from the file as it was; if the file moved since, the marking is
made again on the live file rather than renaming a copy that lacks the new
lines.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from mecha.core.errors import InvalidStore, StoreFull
from mecha.core.store import files as _files
from mecha.core.store.codec import ENCODER, decoder
from mecha.core.store.history import History
from mecha.core.store.layout import INTENT_FILE, JOURNAL_ASIDE, JOURNAL_DIR, REFLECTIONS_FILE
from mecha.core.store.records import Records, file_identity

log = logging.getLogger(__name__)


class Step(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One file of a change: staged under `journal/`, bound for `target`."""

    #: The staged file's name in `journal/`.
    staged: str
    #: Where it goes, relative to the store root.
    target: str
    #: For the reflections file: the ids the staged copy marks, by which
    #: run, and the `file_identity` of the file it was marked from.
    marks: list[str] | None = None
    run_id: str | None = None
    #: Of the marked ids, those a person rejected, with their reason.
    rejected: dict[str, str] | None = None
    source: list[int] | None = None


class Intent(msgspec.Struct, kw_only=True):
    """A decided change: what it is (for messages), its files, its commit."""

    what: str
    steps: list[Step]
    message: str


class Transaction:
    """One change being staged in the store at `root` (under its lock).
    `what` names it in every message: `accept of proposal <id>`."""

    def __init__(self, root: Path, what: str):
        self._root = root
        self._what = what
        self._dir = root / JOURNAL_DIR
        self._steps: list[Step] = []

    def stage(self, target: Path, data: bytes | Sequence[bytes | memoryview], **marks: object) -> None:
        """Write `data` whole into `journal/`, bound for `target`."""
        _files.refuse_links(self._root, target)
        name = f"{len(self._steps)}.{target.name}"
        try:
            _files.ensure_private_dir(self._dir, root=self._root)
            _files.write_temp(target, data, tmp=self._dir / name)
        except BaseException as exc:
            self.abandon()
            raise self._unmade(exc) from None
        self._steps.append(msgspec.convert({"staged": name, "target": str(target.relative_to(self._root)), **marks}, Step))

    def stage_marks(
        self, records: Records, ids: Sequence[str], run_id: str, rejected: Mapping[str, str] | None = None
    ) -> int:
        """Stage the reflections file with `ids` marked processed by
        `run_id`, those in `rejected` also rejected with their reason
        (`Records.marked_reflexions`); how many it marks."""
        marked = records.marked_reflexions(ids, run_id, rejected)
        if marked is None:
            return 0
        chunks, count, source = marked
        extra: dict[str, object] = {"rejected": dict(rejected)} if rejected else {}
        self.stage(
            self._root / REFLECTIONS_FILE, chunks, marks=sorted(set(ids)), run_id=run_id, source=list(source), **extra
        )
        return count

    def decide(self, message: str) -> Intent:
        """Write the intent: from here the change is made, whatever happens."""
        intent = Intent(what=self._what, steps=self._steps, message=message)
        try:
            _files.ensure_private_dir(self._dir, root=self._root)
            _files.write_atomic(self._root / INTENT_FILE, ENCODER.encode(intent))
        except BaseException as exc:
            self.abandon()
            raise self._unmade(exc) from None
        return intent

    def abandon(self) -> None:
        """Remove what was staged: nothing live was touched."""
        for step in self._steps:
            _files.discard_temp(self._dir / step.staged)
        self._steps = []

    def _unmade(self, exc: BaseException) -> BaseException:
        if isinstance(exc, StoreFull):
            return StoreFull(
                f"the filesystem holding {exc.path} is full; nothing was changed: the {self._what} "
                "was not made and the store is as it was; free some space and try again",
                path=exc.path,
            )
        return exc


def run(root: Path, history: History, transaction: Transaction, message: str) -> None:
    """Decide `transaction` and apply it: its files, then its commit. A full
    disk after the decision is `StoreFull` saying what was kept; the change
    is finished by the next writer (`finish_interrupted`)."""
    intent = transaction.decide(message)
    try:
        _apply(root, history, intent)
    except StoreFull as exc:
        raise _kept(intent, exc, _placed(root, intent)) from None
    except InvalidStore as exc:
        # Refused mid-way (a folder turned read-only): decided all the same.
        raise InvalidStore(
            f"{exc}".split("; ")[0] + f"; the {intent.what} is decided and kept in the store's journal: "
            "the next write finishes it once the store can be written",
            path=exc.path,
        ) from None


def finish_interrupted(root: Path, history: History) -> str | None:
    """Finish the change a crash or a full disk cut short, if any (caller
    holds the writer lock); what it was, or `None`. Staged files of a change
    never decided are removed. A commit that still finds no room is left to
    the next writer, with a warning; files that cannot be put in place are
    `StoreFull`, since no other write may go before them."""
    journal = root / JOURNAL_DIR
    if not os.path.isdir(journal):
        return None
    try:
        data = _files.read_bytes(root / INTENT_FILE)
    except OSError as e:  # a folder, a FIFO: not an intent this store wrote
        _set_aside(root, f"{INTENT_FILE} cannot be read as a file ({e.strerror or e})")
        return None
    if data is None:
        _sweep_abandoned(journal)
        return None
    try:
        intent = decoder(Intent).decode(data)
    except msgspec.DecodeError as e:
        _set_aside(root, f"{INTENT_FILE} is not a change this version can finish ({e})")
        return None
    for number, step in enumerate(intent.steps, 1):
        problem = step_problem(root, step)
        if problem is not None:
            _set_aside(root, f"step {number} of the {intent.what!r} in {INTENT_FILE}: {problem}")
            return None
    log.warning("finishing the %s, which was cut short", intent.what)
    try:
        _apply(root, history, intent)
    except StoreFull as exc:
        if not _placed(root, intent):
            raise _kept(intent, exc, False) from None
        log.warning("the %s is made but not yet in the store's history: %s", intent.what, exc)
    return intent.what


#: How `Transaction.stage` names a staged file: its step's number, a dot,
#: the target's own name.
_STAGED_NAME = re.compile(r"^[0-9]+\.[^/\\]+$")
#: Folders of the store no change is ever staged for.
_NEVER_TARGETS = frozenset({JOURNAL_DIR, ".git"})


def step_problem(root: Path, step: Step) -> str | None:
    """What is wrong with one step of an intent read from disk, or `None`
    when it is a step `Transaction` could have written (see the module
    docstring). Reads the file system: the staged file's type, the links
    on the target's way."""
    staged = step.staged
    if not _STAGED_NAME.fullmatch(staged) or staged in (".", ".."):
        return f"its staged file {staged!r} is not a name the store stages under {JOURNAL_DIR}/"
    try:
        st = os.lstat(root / JOURNAL_DIR / staged)
    except FileNotFoundError:
        st = None  # put in place before the cut
    except OSError as e:
        return f"its staged file {staged!r} cannot be looked at ({e.strerror or e})"
    if st is not None and (not stat.S_ISREG(st.st_mode) or st.st_nlink != 1):
        what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else (
            "a file with several names" if stat.S_ISREG(st.st_mode) else "not a regular file")
        return f"its staged file {staged!r} is {what}, not a file the store staged"
    target = step.target
    parts = Path(target).parts
    if not target or os.path.isabs(target) or ".." in parts or os.path.normpath(target) != target:
        return f"its target {target!r} is not a path inside the store"
    if parts[0] in _NEVER_TARGETS:
        return f"its target {target!r} is in {parts[0]}/, where no change is staged for"
    try:
        _files.refuse_links(root, root / target)
    except InvalidStore as e:
        return f"its target {target!r}: {e}"
    if os.path.isdir(root / target):
        return f"its target {target!r} is a folder"
    return None


def _set_aside(root: Path, why: str) -> None:
    """Move the journal folder out of the way, whole, and say why: an
    intent the store cannot trust is never acted on, and never deleted
    either — a person may want to see what was there."""
    import time

    journal = root / JOURNAL_DIR
    aside = root / f"{JOURNAL_ASIDE}{time.strftime('%Y%m%dT%H%M%S')}-{os.urandom(3).hex()}"
    with _files.writing(journal):
        os.rename(journal, aside)
    log.warning("%s; nothing of it was done, and the journal was set aside as %s — the store goes on without it", why, aside)


def _apply(root: Path, history: History, intent: Intent) -> None:
    for step in intent.steps:
        _apply_step(root, step)
    for folder in {(root / step.target).parent for step in intent.steps}:
        _files.fsync_dir(folder)
    history.commit(intent.message, full_is_error=True)
    (root / INTENT_FILE).unlink(missing_ok=True)
    _sweep_abandoned(root / JOURNAL_DIR)


def _apply_step(root: Path, step: Step) -> None:
    staged = root / JOURNAL_DIR / step.staged
    target = root / step.target
    if not staged.exists():
        return  # put in place before the cut
    _files.refuse_links(root, target)
    if step.marks is not None and step.run_id is not None:
        source = None if step.source is None else tuple(step.source)
        if file_identity(target) != source:
            # Appended to since it was marked: mark the live file instead.
            Records(root).mark_reflexions_processed(step.marks, step.run_id, step.rejected)
            _files.discard_temp(staged)
            return
    with _files.writing(target):
        os.replace(staged, target)


def _placed(root: Path, intent: Intent) -> bool:
    """Whether every file of `intent` is in place (only its commit waits)."""
    return not any((root / JOURNAL_DIR / step.staged).exists() for step in intent.steps)


def _sweep_abandoned(journal: Path) -> None:
    """Remove what `journal/` holds but an intent, and the folder itself
    once it is empty: a store with no change in flight has no journal, so a
    writer's check for one is a single `stat`."""
    try:
        names = os.listdir(journal)
    except FileNotFoundError:
        return
    for name in names:
        if name != os.path.basename(INTENT_FILE):
            _files.discard_temp(journal / name)
    try:
        os.rmdir(journal)
    except OSError:
        pass  # an intent is kept there, or a temp could not go yet


def _kept(intent: Intent, exc: StoreFull, placed: bool) -> StoreFull:
    """The `StoreFull` for a change cut short after it was decided."""
    kept = (
        "is made and its files are in place, but it is not in the store's history yet: "
        "the next write commits it once there is room"
        if placed
        else "is decided and kept in the store's journal: the next write finishes it once there is room"
    )
    return StoreFull(f"the filesystem holding {exc.path} is full; the {intent.what} {kept}", path=exc.path)
