"""The store's ledgers: append-only JSONL files of records, and the id lists.

`reflections.jsonl` (evidence), the mining ledgers (`mined.jsonl`,
`mined_outbox.jsonl`, `distilled.jsonl`: one id a line), the reflector's
attempts, `runs.jsonl`, `validations.jsonl`, `imported.jsonl`, and a
rule's record: `repeats.jsonl` and the hook's `started.jsonl`. Every
append is one write of whole lines (`files.append_lines`); the one rewrite,
marking reflections processed, is a temp sibling renamed into place.

Damage stays local: one corrupt line costs that record and is logged.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from mecha.core.domain.record import Asked, Repeat, SessionStart
from mecha.core.domain.rules import validate_domain
from mecha.core.store import files as _files
from mecha.core.store.attempts import Attempt, AttemptState
from mecha.core.store.codec import ENCODER, decoder
from mecha.core.store.layout import (
    ASKED_FILE,
    ATTEMPTS_FILE,
    DISTILLED_FILE,
    IMPORTED_FILE,
    MINED_FILE,
    MINED_OUTBOX_FILE,
    REFLECTIONS_FILE,
    REPEATS_FILE,
    RUNS_FILE,
    STARTED_FILE,
    VALIDATIONS_FILE,
    VOUCHED_FILE,
)
from mecha.core.store.ledger import LeapRun, ValidationRecord

if TYPE_CHECKING:
    # Imported where used: an agent run reads its rules block at startup and
    # needs no reflections.
    from mecha.core.domain.reflexion import Reflexion

log = logging.getLogger(__name__)

T = TypeVar("T")


class ImportRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One session file, as one import read it."""

    source: str
    path: str
    size: int
    mtime_ns: int
    session_id: str
    #: Fingerprints of the interventions this import queued
    #: (`importing.intervention_fingerprint`).
    keys: list[str] = msgspec.field(default_factory=list)
    #: The inbox session id the new part was queued under, if any.
    queued_as: str | None = None
    imported_at: str = ""
    #: The trust the file was read with: the standing entries then and the
    #: run's `--trust-tool`s, and its `--distrust-tool`s. `validate` reads
    #: the file again with them (`None` on a record from before they were
    #: kept: the standing trust of the day is all there is).
    trust: list[str] | None = None
    distrust: list[str] = msgspec.field(default_factory=list)


class VouchRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The person vouched for one held-back correction (`agents.held`):
    which (the reflection that recorded it withheld, its session, message
    and trigger), their words, the call that held it back and why, who and
    when."""

    reflection: str
    session_id: str
    at: int
    trigger: str
    words: str
    by: str
    vouched_at: str
    why: str = ""
    call: str | None = None
    file: str | None = None
    line: int | None = None


class _ReflexionHead(msgspec.Struct):
    """What a pass filters reflections by, read without the rest of the line.
    Same names, types and defaults as `Reflexion`'s (origin as its string)."""

    domain: str
    is_processed: bool = False
    origin: str = "untrusted"
    project: str | None = None


class _MarkHead(msgspec.Struct):
    """What marking needs to know of a line before deciding to touch it."""

    id: str
    is_processed: bool = False


def _reflexion_decoder() -> msgspec.json.Decoder[Reflexion]:
    from mecha.core.domain.reflexion import Reflexion

    return decoder(Reflexion)


def _mark_lines(
    data: bytes, wanted: set[str], run_id: str, rejected: Mapping[str, str] | None = None
) -> tuple[list[bytes | memoryview], int]:
    """The reflections file with the `wanted`, unprocessed ones marked, as
    chunks to write in order, and how many were marked; those in `rejected`
    are also marked rejected with its reason for them. Blank lines are
    dropped; every other line not being marked — a corrupt one included — is
    kept byte for byte, each followed by a newline.

    The file is walked line by line without splitting it into a list, and
    the chunks are runs of untouched lines as views into `data`, so a large
    file is neither copied line by line nor joined back together."""
    view = memoryview(data)
    chunks: list[bytes | memoryview] = []
    marked = 0
    head, full = decoder(_MarkHead), _reflexion_decoder()
    run: int | None = None  # where the current run of untouched lines starts
    size = len(data)
    pos = 0
    while pos <= size:
        end = data.find(b"\n", pos)
        if end == -1:
            end = size
        line = data[pos:end].strip()
        replacement: bytes | None = None
        if line:
            try:
                # The id and flag first; a line that would be marked is then
                # decoded whole, so only a valid reflection is ever marked.
                h = head.decode(line)
                if h.id in wanted and not h.is_processed:
                    r = full.decode(line)
                    if r.id in wanted and not r.is_processed:
                        # Re-encoded from the raw object, not the struct, so
                        # fields a newer writer added survive the marking.
                        obj = msgspec.json.decode(line)
                        obj["is_processed"] = True
                        obj["leap_run_id"] = run_id
                        if rejected and r.id in rejected:
                            obj["rejected"] = rejected[r.id]
                        replacement = ENCODER.encode(obj) + b"\n"
            except msgspec.DecodeError:
                pass
        if line and replacement is None:
            if run is None:
                run = pos
        else:
            if run is not None:
                chunks.append(view[run:pos])  # through the newline before this line
                run = None
            if replacement is not None:
                chunks.append(replacement)
                marked += 1
        pos = end + 1
    if run is not None:
        # The last line had no newline after it.
        chunks.extend((view[run:size], b"\n"))
    return chunks, marked



def file_identity(path: Path) -> tuple[int, int, int] | None:
    """`(inode, size, mtime)` of `path`, `None` when it does not exist: what
    moves when anything appends to it or renames over it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class Records:
    """The ledgers of the store at `root`."""

    def __init__(self, root: Path):
        self._root = root

    def read_jsonl(self, name: str, read: msgspec.json.Decoder[T], what: str) -> list[T]:
        path = self._root / name
        data = _files.read_bytes(path)
        if not data:
            return []
        out: list[T] = []
        with _files.gc_paused():
            for number, line in _files.nonblank_lines(data):
                try:
                    out.append(read.decode(line))
                except msgspec.DecodeError as e:
                    # One corrupt line costs one record, not the file.
                    log.warning("skipping corrupt %s at %s line %d: %s", what, path, number, e)
        return out

    def append_records(self, name: str, records: Iterable[Any]) -> None:
        lines = [ENCODER.encode(r) for r in records]
        _files.append_lines(_files.refuse_links(self._root, self._root / name), lines)

    def read_ids(self, name: str) -> set[str]:
        data = _files.read_bytes(self._root / name)
        if not data:
            return set()
        return {line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()}

    def append_id(self, name: str, record_id: str) -> None:
        from mecha.core.identity import validate_record_id

        validate_record_id(record_id, "id")
        _files.append_lines(_files.refuse_links(self._root, self._root / name), [record_id.encode("utf-8")])

    def append_reflexion(self, r: Reflexion) -> None:
        self.append_reflexions([r])

    def append_reflexions(self, rs: Iterable[Reflexion]) -> None:
        """Append reflections in one write. Each one's domain is checked first:
        a later pass builds a rules path from it."""
        rs = list(rs)
        for r in rs:
            validate_domain(r.domain)
        self.append_records(REFLECTIONS_FILE, rs)

    def reflexions(self) -> list[Reflexion]:
        """Every readable reflection, in file order."""
        return self.read_jsonl(REFLECTIONS_FILE, _reflexion_decoder(), "reflection")

    def learnable_unprocessed(self, domain: str) -> list[Reflexion]:
        """A domain's learnable, unprocessed reflections, in file order: what
        `[r for r in reflexions() if r.domain == domain and not
        r.is_processed and r.learnable()]` returns, without building every
        other record. Each line's domain, flag and origin are read first;
        only the lines that pass are decoded whole (and so validated whole,
        as before). A corrupt line that the filter rules out costs nothing
        and is not reported here."""
        path = self._root / REFLECTIONS_FILE
        data = _files.read_bytes(path)
        if not data:
            return []
        head, full = decoder(_ReflexionHead), _reflexion_decoder()
        out: list[Reflexion] = []
        with _files.gc_paused():
            for number, line in _files.nonblank_lines(data):
                try:
                    h = head.decode(line)
                    if h.domain != domain or h.is_processed or h.origin != "clean":
                        continue
                    r = full.decode(line)
                except msgspec.DecodeError as e:
                    log.warning("skipping corrupt reflection at %s line %d: %s", path, number, e)
                    continue
                if r.learnable():
                    out.append(r)
        return out

    def mark_reflexions_processed(
        self, ids: Iterable[str], run_id: str, rejected: Mapping[str, str] | None = None
    ) -> int:
        """Mark the named, not yet processed reflections as consumed by
        `run_id` (those in `rejected` also rejected, with its reason for
        each); returns how many changed.

        The file is rewritten through a temp sibling and rename, so a crash
        loses the marking, never a reflection. Only the changed lines are
        re-encoded, and from their raw JSON, so fields this version does not
        know survive; every other line — including one that does not parse —
        is kept byte for byte. Callers hold the writer lock; as a second
        guard, if the file changes between the read and the rename (an
        append that did not take the lock), the marking is redone on the new
        contents rather than overwriting it.
        """
        path = self._root / REFLECTIONS_FILE
        for _attempt in range(5):
            marked = self.marked_reflexions(ids, run_id, rejected)
            if marked is None:
                return 0
            chunks, count, before = marked
            if file_identity(path) != before:
                continue
            _files.write_atomic(path, chunks)
            return count
        raise RuntimeError(f"{path} kept changing while it was being marked; is a writer running without the lock?")

    def move_reflexions(self, moves: Mapping[str, str]) -> int:
        """Every reflection whose `project` is a key of `moves` given the
        value as its project instead (a scope merged into another); how many
        moved. Each changed line is re-encoded from its raw object (fields
        this version does not know survive); every other line is kept byte
        for byte; the file is replaced whole through a temp sibling. Caller
        holds the writer lock."""
        path = self._root / REFLECTIONS_FILE
        if not moves:
            return 0
        _files.refuse_links(self._root, path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return 0
        out: list[bytes] = []
        moved = 0
        for raw in data.splitlines():
            line = raw.strip()
            if not line:
                continue
            if b'"project"' in line:
                try:
                    obj = msgspec.json.decode(line)
                except (msgspec.DecodeError, RecursionError):
                    obj = None
                if isinstance(obj, dict) and obj.get("project") in moves:
                    obj["project"] = moves[obj["project"]]
                    out.append(ENCODER.encode(obj))
                    moved += 1
                    continue
            out.append(line)
        if moved:
            _files.write_atomic(path, b"\n".join(out) + b"\n")
        return moved

    def marked_reflexions(
        self, ids: Iterable[str], run_id: str, rejected: Mapping[str, str] | None = None
    ) -> tuple[list[bytes | memoryview], int, tuple[int, int, int]] | None:
        """The reflections file with the named, unprocessed ones marked as
        consumed by `run_id` — as chunks to write in order — how many that
        marks, and the identity (`file_identity`) of the file it was read
        from; `None` when it would mark nothing. Writes nothing."""
        wanted = set(ids)
        path = self._root / REFLECTIONS_FILE
        if not wanted:
            return None
        _files.refuse_links(self._root, path)
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
        except FileNotFoundError:
            return None
        with _files.gc_paused():
            chunks, marked = _mark_lines(data, wanted, run_id, rejected)
        if marked == 0:
            return None
        return chunks, marked, (st.st_ino, st.st_size, st.st_mtime_ns)

    # ── mining ledgers ──

    def mined_sessions(self) -> set[str]:
        """Sessions already mined, so a reflect pass never re-reads one."""
        return self.read_ids(MINED_FILE)

    def mark_mined(self, session_id: str) -> None:
        self.append_id(MINED_FILE, session_id)

    def mined_outbox(self) -> set[str]:
        """Outbox items already mined for writing reflections. A separate
        ledger from sessions: an id in one never satisfies the other."""
        return self.read_ids(MINED_OUTBOX_FILE)

    def mark_outbox_mined(self, item_id: str) -> None:
        self.append_id(MINED_OUTBOX_FILE, item_id)

    def distilled_sessions(self) -> set[str]:
        """Sessions already distilled to the knowledge graph — its own ledger,
        so marking a session mined never makes it look distilled."""
        return self.read_ids(DISTILLED_FILE)

    def mark_distilled(self, session_id: str) -> None:
        self.append_id(DISTILLED_FILE, session_id)

    def attempt_states(self, keys: Iterable[str] | None = None) -> dict[str, AttemptState]:
        """What the reflector has answered so far for each intervention key
        (all keys on file when `keys` is `None`): folded from the attempts
        ledger, oldest line first, so a `retry` line resets what came
        before it."""
        wanted = None if keys is None else set(keys)
        states: dict[str, AttemptState] = {}
        if wanted is not None and not wanted:
            return states
        for rec in self.read_jsonl(ATTEMPTS_FILE, decoder(Attempt), "reflector attempt"):
            if wanted is not None and rec.key not in wanted:
                continue
            state = states.setdefault(rec.key, AttemptState())
            state.apply(rec)
        return states

    def record_attempts(self, records: Iterable[Attempt]) -> None:
        """Append reflector answers to the attempts ledger. Caller holds the lock."""
        self.append_records(ATTEMPTS_FILE, records)

    def append_run(self, run: LeapRun) -> None:
        self.append_records(RUNS_FILE, [run])

    def runs(self) -> list[LeapRun]:
        return self.read_jsonl(RUNS_FILE, decoder(LeapRun), "run record")

    def append_validation(self, rec: ValidationRecord) -> None:
        validate_domain(rec.domain)
        self.append_records(VALIDATIONS_FILE, [rec])

    def validations(self) -> list[ValidationRecord]:
        return self.read_jsonl(VALIDATIONS_FILE, decoder(ValidationRecord), "validation record")

    # ── sessions imported from other agents ──

    def append_imports(self, records: Iterable[ImportRecord]) -> None:
        """Record what an import queued. Caller holds the lock."""
        self.append_records(IMPORTED_FILE, records)

    def imports(self) -> list[ImportRecord]:
        """Every import record, oldest first."""
        return self.read_jsonl(IMPORTED_FILE, decoder(ImportRecord), "import record")

    # ── the person's vouches ──

    def append_vouches(self, records: Iterable[VouchRecord]) -> None:
        """Record what a person vouched for. Caller holds the lock."""
        self.append_records(VOUCHED_FILE, records)

    def vouches(self) -> list[VouchRecord]:
        """Every vouch, oldest first."""
        return self.read_jsonl(VOUCHED_FILE, decoder(VouchRecord), "vouch record")

    def append_repeats(self, records: Iterable[Repeat]) -> None:
        """Record corrections that repeat live rules. Caller holds the lock."""
        self.append_records(REPEATS_FILE, records)

    def repeats(self) -> list[Repeat]:
        """Every repeat on record, oldest first (`domain.record.Repeat`)."""
        return self.read_jsonl(REPEATS_FILE, decoder(Repeat), "repeat")

    def append_asked(self, records: Iterable[Asked]) -> None:
        """Record calls an ask permission asked about. Caller holds the lock."""
        self.append_records(ASKED_FILE, records)

    def asked(self) -> list[Asked]:
        """Every call on record an ask permission asked about, oldest first."""
        return self.read_jsonl(ASKED_FILE, decoder(Asked), "asked call")

    def append_session_start(self, start: SessionStart) -> None:
        """Record a session's start as the hook does: one line in one
        write, no lock needed."""
        self.append_records(STARTED_FILE, [start])

    def session_starts(self) -> list[SessionStart]:
        """Every session start the hook recorded, oldest first
        (`agents.started`; written without the lock, one line per write)."""
        return self.read_jsonl(STARTED_FILE, decoder(SessionStart), "session start")
