"""The learning store: plain files under one owner-only directory.

Files rather than a database, on purpose: the person this system learns from
must be able to read, grep, edit and revert everything it knows, with the
tools they already have. The layout is the Rust harness's, so both can share
one directory:

```text
reflections.jsonl            append-only evidence, one reflection per line
mined.jsonl                  session ids already mined, one per line
mined_outbox.jsonl           outbox item ids already mined, one per line
distilled.jsonl              session ids already distilled, one per line
runs.jsonl                   one LeapRun per consolidation pass
validations.jsonl            one ValidationRecord per probe
imported.jsonl               one ImportRecord (records.py) per session file imported from another agent
vouched.jsonl                one VouchRecord (records.py) per correction the person vouched for
repeats.jsonl                one Repeat per correction that showed a live rule was not followed
asked.jsonl                  one Asked per call a rule's ask permission asked about, and what the person did
started.jsonl                one SessionStart per agent session the session-start hook saw begin
proposals/<id>.json          rule changes waiting for a person
rules/<domain>.user.toml     the person's own rules — never written by code
rules/<domain>.learned.toml  written only when a person accepts a proposal
rules/<domain>@<project>.learned.toml   the same for one project's rules (`layout`)
jobs/<id>.json, logs/        background passes
journal/                     a change of several files in flight (`transaction`)
```

`LearningStore` is a facade: each concern is a part in its own module, and
the store's methods hand each call to the part that owns it —

- `rules_files` — finding, reading and writing rules files (`rules_text`
  is their text: the parser and the comment-keeping TOML writer);
- `rules_block` — the block a run carries, rendered from them;
- `records` — the JSONL ledgers (reflections, mining, attempts, runs,
  validations, imports);
- `proposal_files` — proposals waiting for a person;
- `history` — the store's git repository (the audit trail);
- `lock` — the writer lock;
- `transaction` — changes of several files made as one (resolving a
  proposal), finished by the next writer when cut short;
- `watch` — what an editor polls to see the store change.

The directory is a git repository when git is available (`git log` is the
audit trail, `git revert` the undo for a bad acceptance); without git the
history is lost and nothing else is.

Concurrency has two halves. Writers — a reflect pass, a learn pass, an
accept — take the advisory `flock` on `.lock` *before reading the state they
act on*, because the read is where the race lives (two passes that both read
`mined.jsonl` before either marks it would mine one session twice). Readers
take nothing: an agent run reads the rules block at startup and must never
wait on a pass. That is only safe because every rewrite is a temp sibling
renamed into place, so a reader sees the old file or the new one, and every
append is one write of whole lines (see `files`). The store's methods do
not take the lock themselves; the pass that strings several of them together
does, around the whole read-decide-write sequence.

Damage stays local. One corrupt line in a JSONL file costs that record and
is logged; an unreadable proposal file is skipped; a rules file that does not
parse raises `InvalidStore` naming the file and line, because silently
dropping a person's rules would change what every run is told.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mecha.core.domain.rules import Rule, validate_domain
from mecha.core.store import files as _files
from mecha.core.store import transaction
from mecha.core.store.attempts import MAX_UNUSABLE_ANSWERS, Attempt, AttemptKind, AttemptState, SetAside
from mecha.core.store.history import GIT_IDENTITY, History
from mecha.core.store.layout import (
    GIT_DIR,
    GITIGNORE_ENTRIES,
    GITIGNORE_FILE,
    INBOX_DIR,
    JOBS_DIR,
    JOURNAL_DIR,
    LOCAL_MODEL_LOG,
    LOGS_DIR,
    PROPOSALS_DIR,
    REFLECTIONS_FILE,
    RULES_DIR,
    RULES_SUFFIX,
    SET_ASIDE_DIR,
    STRUCTURED_MODES_FILE,
    default_root,
    resolve_root,
)
from mecha.core.store.ledger import LeapRun, ValidationRecord
from mecha.core.store.lock import StoreLock, take_lock
from mecha.core.store.proposal_files import Proposal, ProposalFiles, ProposalStatus
from mecha.core.store.records import ImportRecord, Records, VouchRecord
from mecha.core.store.rules_block import RenderedBlock, RuleSet, render_candidate, render_rules
from mecha.core.store.rules_files import RulesFiles, parse_rules_name, rules_file_path
from mecha.core.store.rules_text import parse_rules_file, render_learned_toml, rules_file_project
from mecha.core.store.watch import ReflectionsById, store_identity

if TYPE_CHECKING:
    from mecha.core.domain.record import Asked, Repeat, SessionStart
    from mecha.core.domain.reflexion import Reflexion

#: The names this module has always offered, each now defined by the part
#: that owns it.
__all__ = [
    "GIT_IDENTITY",
    "MAX_UNUSABLE_ANSWERS",
    "Attempt",
    "AttemptKind",
    "AttemptState",
    "LearningStore",
    "Proposal",
    "ProposalStatus",
    "ReflectionsById",
    "RenderedBlock",
    "RuleSet",
    "SetAside",
    "StoreLock",
    "parse_rules_file",
    "parse_rules_name",
    "render_learned_toml",
    "render_rules",
    "rules_file_path",
    "rules_file_project",
    "store_identity",
]


class LearningStore:
    """The learning directory, as methods. Constructing one touches nothing
    on disk; `open` creates the layout, `open_existing` refuses to."""

    def __init__(self, root: str | os.PathLike[str]):
        self._root = Path(root)
        self.rules_files = RulesFiles(self._root)
        self.records = Records(self._root)
        self.proposal_files = ProposalFiles(self._root)
        self.history = History(self._root)

    def __repr__(self) -> str:
        return f"LearningStore({str(self._root)!r})"

    @property
    def root(self) -> Path:
        return self._root

    # ── paths: the layout is `layout`'s, joined to the root here alone ──

    @property
    def rules_dir(self) -> Path:
        return self.rules_files.directory

    @property
    def reflections_path(self) -> Path:
        return self._root / REFLECTIONS_FILE

    @property
    def inbox_path(self) -> Path:
        return self._root / INBOX_DIR

    @property
    def set_aside_path(self) -> Path:
        return self._root / SET_ASIDE_DIR

    @property
    def structured_modes_path(self) -> Path:
        """Which structured reply mode each model server accepted
        (`providers.structured.ModeMemory`)."""
        return self._root / STRUCTURED_MODES_FILE

    @property
    def local_model_log_path(self) -> Path:
        """The log of a local model server started for this store (the demo's)."""
        return self._root / LOCAL_MODEL_LOG

    def has_history(self) -> bool:
        """Whether the store is a git repository (its audit trail)."""
        return self.history.exists()

    def loose_entries(self) -> list[str]:
        """What in the store others could read or that is a symbolic link,
        each as `<path relative to the root> (<mode>)`, the root itself
        first (as `.`); git's own folder is git's business and not walked."""
        import stat

        loose = []
        for dirpath, dirnames, filenames in os.walk(self._root):
            if GIT_DIR in dirnames:
                dirnames.remove(GIT_DIR)
            for name in [*dirnames, *filenames]:
                path = Path(dirpath, name)
                try:
                    mode = path.lstat().st_mode
                except OSError:
                    continue
                if stat.S_ISLNK(mode):
                    loose.append(f"{path.relative_to(self._root)} (symlink)")
                elif mode & 0o077:
                    loose.append(f"{path.relative_to(self._root)} ({stat.filemode(mode)})")
        try:
            root_mode = self._root.stat().st_mode
            if root_mode & 0o077:
                loose.insert(0, f". ({stat.filemode(root_mode)})")
        except OSError:
            pass
        return loose

    def seed_rules_from(self, other_root: Path) -> list[Path]:
        """Copy every rules file of the store-shaped folder `other_root` (the
        bundled samples) into this store's rules, creating the folder: how a
        throwaway store starts with rules. Returns the files written."""
        source = other_root / RULES_DIR
        _files.ensure_private_dir(self._root)
        _files.ensure_private_dir(self._root / RULES_DIR, root=self._root)
        written = []
        for path in sorted(source.glob("*" + RULES_SUFFIX)):
            dest = _files.refuse_links(self._root, self._root / RULES_DIR / path.name)
            _files.write_atomic(dest, path.read_bytes())
            written.append(dest)
        return written

    # ── opening ──

    @staticmethod
    def default_root() -> Path:
        """`$MECHA_LEARNING_DIR`, else `~/.mecha/learning`, as an absolute
        path (`layout.default_root`)."""
        return Path(default_root())

    @staticmethod
    def resolve_root(given: str | os.PathLike[str] | None) -> Path:
        """The store root `given` names, else the default, made absolute
        once where it enters (`layout.resolve_root` says why)."""
        return Path(resolve_root(given))

    @classmethod
    def open(cls, root: str | os.PathLike[str] | None = None) -> LearningStore:
        """Open the store for writing, creating its layout if missing.

        Every directory is made owner-only, and a git repository is created
        best-effort: git being absent degrades to plain files — the audit
        trail is lost, the data is not.
        """
        store = cls(cls.default_root() if root is None else root)
        # The root holds reflections and ledgers directly, so it gets the
        # owner-only mode itself, not only through its subdirectories.
        _files.ensure_private_dir(store._root)
        for sub in (RULES_DIR, PROPOSALS_DIR, JOBS_DIR, LOGS_DIR):
            _files.ensure_private_dir(store._root / sub, root=store._root)
        store._ensure_gitignore()
        if not (store._root / GIT_DIR).exists():
            store.history.init()
        if (store._root / JOURNAL_DIR).is_dir():
            held = store.try_lock()  # finishes what was cut short
            if held is not None:
                held.release()
        return store

    @classmethod
    def open_existing(cls, root: str | os.PathLike[str] | None = None) -> LearningStore | None:
        """The store at `root` (default location if `None`) if that directory
        exists, else `None`. For read paths — a run's prompt assembly — that
        must not create state as a side effect."""
        path = Path(cls.default_root() if root is None else root)
        return cls(path) if path.is_dir() else None

    def _ensure_gitignore(self) -> None:
        path = _files.refuse_links(self._root, self._root / GITIGNORE_FILE)
        data = _files.read_bytes(path)
        present = set() if data is None else {line.strip() for line in data.decode("utf-8", "replace").splitlines()}
        missing = [entry.encode() for entry in GITIGNORE_ENTRIES if entry not in present]
        if not missing:
            return
        if data is None:
            _files.write_atomic(path, b"\n".join(missing) + b"\n")
        else:
            _files.append_lines(path, missing)

    # ── history (`history`) ──

    def commit(self, message: str) -> bool:
        """Commit the store's current state; `True` if a commit was made
        (best effort, always: see `History.commit`)."""
        return self.history.commit(message)

    # ── locking (`lock`) ──

    def lock(self) -> StoreLock:
        """Take the writer lock, blocking until it is free.

        Take it before reading the state a pass will act on. Advisory, so it
        orders mecha's own writers and does nothing to a person's editor.
        Each call opens its own file description, so a second call contends
        even within one process.
        """
        held = take_lock(self._root, blocking=True)
        assert held is not None
        return self._finish_interrupted(held)

    def try_lock(self) -> StoreLock | None:
        """The writer lock if it is free now, else `None`."""
        held = take_lock(self._root, blocking=False)
        return None if held is None else self._finish_interrupted(held)

    def _finish_interrupted(self, held: StoreLock) -> StoreLock:
        """`held`, once a change a crash or a full disk cut short is finished
        (`transaction`): every writer takes the lock first, so none reads
        the store half-changed. The lock is released if it cannot be."""
        try:
            transaction.finish_interrupted(self._root, self.history)
        except BaseException:
            held.release()
            raise
        return held

    def refuse_links(self, *paths: Path) -> None:
        """`InvalidStore` naming the first of `paths` that is, or sits in a
        directory of the store that is, a symbolic link (see
        `files.refuse_links`): for a writer to check every file it will
        touch before it changes any."""
        for path in paths:
            _files.refuse_links(self._root, path)

    # ── reflections (`records`) ──

    def append_reflexion(self, r: Reflexion) -> None:
        self.records.append_reflexions([r])

    def append_reflexions(self, rs: Iterable[Reflexion]) -> None:
        """Append reflections in one write, each one's domain checked first."""
        self.records.append_reflexions(rs)

    def reflexions(self) -> list[Reflexion]:
        """Every readable reflection, in file order."""
        return self.records.reflexions()

    def learnable_unprocessed(self, domain: str) -> list[Reflexion]:
        """A domain's learnable, unprocessed reflections, in file order."""
        return self.records.learnable_unprocessed(domain)

    def mark_reflexions_processed(self, ids: Iterable[str], run_id: str) -> int:
        """Mark the named, not yet processed reflections as consumed by
        `run_id`; returns how many changed. Callers hold the writer lock."""
        return self.records.mark_reflexions_processed(ids, run_id)

    # ── mining ledgers (`records`) ──

    def mined_sessions(self) -> set[str]:
        """Sessions already mined, so a reflect pass never re-reads one."""
        return self.records.mined_sessions()

    def mark_mined(self, session_id: str) -> None:
        self.records.mark_mined(session_id)

    def mined_outbox(self) -> set[str]:
        """Outbox items already mined for writing reflections."""
        return self.records.mined_outbox()

    def mark_outbox_mined(self, item_id: str) -> None:
        self.records.mark_outbox_mined(item_id)

    def distilled_sessions(self) -> set[str]:
        """Sessions already distilled to the knowledge graph."""
        return self.records.distilled_sessions()

    def mark_distilled(self, session_id: str) -> None:
        self.records.mark_distilled(session_id)

    # ── reflector answers, per intervention (`records`) ──

    def attempt_states(self, keys: Iterable[str] | None = None) -> dict[str, AttemptState]:
        """What the reflector has answered so far for each intervention key
        (all keys on file when `keys` is `None`)."""
        return self.records.attempt_states(keys)

    def record_attempts(self, records: Iterable[Attempt]) -> None:
        """Append reflector answers to the attempts ledger. Caller holds the lock."""
        self.records.record_attempts(records)

    # ── rules files (`rules_files`) ──

    def rules_path(self, domain: str, kind: str, project: str | None = None) -> Path:
        """`rules/<domain>.<kind>.toml`, or the file of the project whose root
        is `project` (`layout`), after the domain is validated."""
        return self.rules_files.path(domain, kind, project)

    def user_rules(self, domain: str, project: str | None = None) -> list[Rule]:
        """The person's own rules (globally, or for one project)."""
        return self.rules_files.user(domain, project)

    def learned_rules(self, domain: str, project: str | None = None) -> list[Rule]:
        """A domain's learned rules in one scope: global, or the project
        whose root is `project`."""
        return self.rules_files.learned(domain, project)

    def domains(self) -> list[str]:
        """Every domain with a rules file on disk, in any scope, sorted."""
        return self.rules_files.domains()

    def projects(self) -> dict[str, str | None]:
        """Every project with a rules file on disk: its id → its root, or
        `None` where no file of it names one."""
        return self.rules_files.projects()

    def project_domains(self, project: str) -> list[str]:
        """The domains with a rules file for the project whose root is `project`."""
        return self.rules_files.project_domains(project)

    def rules_fingerprint(self) -> list[list[Any]] | None:
        """The identity of every rules file, `None` without a rules directory
        (`layout.rules_fingerprint`): what a cached rules block is keyed by,
        in this process and across runs."""
        return self.rules_files.fingerprint()

    def over_budget_domains(self) -> list[tuple[str, int]]:
        """Domains on disk whose *global* active learned rules exceed the
        cap (`MAX_ACTIVE_RULES_PER_DOMAIN`), with the count."""
        return [(d, n) for d, p, n in self.over_budget_scopes(None) if p is None]

    def over_budget_scopes(self, project: str | None) -> list[tuple[str, str | None, int]]:
        """`(domain, scope, active)` for every learned file over the cap, in
        the global scope and, given a project root, in that project."""
        return self.rules_files.over_budget(project)

    # ── the rules block (`rules_block`) ──

    def render_block(self, domain: str | None = None, project: str | None = None) -> RenderedBlock:
        """The block a run exercising `domain` carries: `RUN_DOMAINS` in
        order, then `domain` if it is not one of them; per domain the user's
        rules first, then active learned ones — the global scope's, then,
        when the run is in a project (its root, `layout.project_root`), that
        project's (`render_rules`)."""
        return self.render_candidate(None if domain is None else validate_domain(domain), None, project)

    def rules_prompt_block(self, domain: str | None = None, project: str | None = None) -> str | None:
        """Just the text of `render_block(domain, project)`."""
        return self.render_block(domain, project).block

    def render_candidate(
        self,
        domain: str | None,
        learned_rules: Sequence[Rule] | None,
        project: str | None = None,
        *,
        scope: str | None = None,
    ) -> RenderedBlock:
        """The block a run would carry if the learned rules of `domain` in
        `scope` were `learned_rules` (`rules_block.render_candidate`)."""
        return render_candidate(self.rules_files, domain, learned_rules, project, scope=scope)

    # ── proposals (`proposal_files`) ──

    def proposal_path(self, proposal_id: str) -> Path:
        """`proposals/<id>.json`, after `proposal_id` is checked to be an id."""
        return self.proposal_files.path(proposal_id)

    def write_proposal(self, p: Proposal) -> None:
        """Write or rewrite one proposal, atomically."""
        self.proposal_files.write(p)

    def resolve_proposal(
        self,
        p: Proposal,
        *,
        learned: Sequence[tuple[str, str | None, Sequence[Rule]]] = (),
        processed: Sequence[str] = (),
        rejected: Mapping[str, str] | None = None,
        run_id: str,
        message: str,
    ) -> None:
        """Record `p` (resolved), replace each learned rules file in
        `learned` — `(domain, project root or None, rules)` — mark the
        reflections `processed` by `run_id` (those in `rejected` also
        rejected by a person, with their reason), and commit with `message`: as
        one change (`transaction`), so the rules block never shows a
        proposal's rules that the proposal file does not say are accepted.
        A full disk before the change is decided is `StoreFull` with
        nothing changed; after, `StoreFull` saying what is kept, and the
        next writer finishes it. Caller holds the writer lock."""
        self._ensure_gitignore()
        verb = {ProposalStatus.ACCEPTED: "accept", ProposalStatus.REJECTED: "reject"}.get(p.status, p.status.value)
        change = transaction.Transaction(self._root, f"{verb} of proposal {p.id}")
        for domain, project, rules in learned:
            change.stage(*self.rules_files.render_learned(domain, rules, project))
        change.stage_marks(self.records, processed, run_id, rejected)
        change.stage(*self.proposal_files.render(p))
        transaction.run(self._root, self.history, change, message)

    def proposals(self) -> list[Proposal]:
        """Every readable proposal, oldest first."""
        return self.proposal_files.all()

    def proposal(self, id_or_prefix: str) -> Proposal:
        """One proposal by exact id, else by unique prefix (`NotFound`,
        `Ambiguous` otherwise)."""
        return self.proposal_files.find(id_or_prefix)

    # ── runs, validations and imports (`records`) ──

    def append_run(self, run: LeapRun) -> None:
        self.records.append_run(run)

    def runs(self) -> list[LeapRun]:
        return self.records.runs()

    def append_validation(self, rec: ValidationRecord) -> None:
        self.records.append_validation(rec)

    def validations(self) -> list[ValidationRecord]:
        return self.records.validations()

    def append_imports(self, records: Iterable[ImportRecord]) -> None:
        """Record what an import queued. Caller holds the lock."""
        self.records.append_imports(records)

    def imports(self) -> list[ImportRecord]:
        """Every import record, oldest first (`records.ImportRecord`)."""
        return self.records.imports()

    def move_reflexions(self, moves: Mapping[str, str]) -> int:
        """Reflections of the scopes `moves` names moved to the scope it
        maps each to (`records.Records.move_reflexions`). Caller holds the lock."""
        return self.records.move_reflexions(moves)

    def append_vouches(self, records: Iterable[VouchRecord]) -> None:
        """Record what a person vouched for (`agents.held`). Caller holds the lock."""
        self.records.append_vouches(records)

    def vouches(self) -> list[VouchRecord]:
        """Every vouch, oldest first (`records.VouchRecord`)."""
        return self.records.vouches()

    def append_repeats(self, records: Iterable[Repeat]) -> None:
        """Record corrections that repeat live rules. Caller holds the lock."""
        self.records.append_repeats(records)

    def repeats(self) -> list[Repeat]:
        return self.records.repeats()

    def append_asked(self, records: Iterable[Asked]) -> None:
        """Record calls an ask permission asked about. Caller holds the lock."""
        self.records.append_asked(records)

    def asked(self) -> list[Asked]:
        return self.records.asked()

    def append_session_start(self, start: SessionStart) -> None:
        self.records.append_session_start(start)

    def session_starts(self) -> list[SessionStart]:
        return self.records.session_starts()
