"""What the editor reads beside the document: which files are a store's
rules documents and whose scope each is, the sibling file a document is
checked against, and the store's pending proposals and validation tallies.

A rules document belongs to one scope (`layout`): `rules/<domain>.<kind>.toml`
is global, `rules/<domain>@<project id>.<kind>.toml` one project's. The id
cannot be turned back into a directory; the project's files name it in
their `project` key, and that is where the editor reads the path it shows.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from mecha.core.domain.rules import Rule, active_count
from mecha.core.editor.results import PendingProposal, Scope
from mecha.core.learning.proposals import is_pending, numbered_changes, pending_for
from mecha.core.learning.record import live_records
from mecha.core.learning.scope import scope_label
from mecha.core.store.layout import LEARNED_KIND, project_id, scoped_rules_name, sibling_kind
from mecha.core.store.learning_store import LearningStore
from mecha.core.store.ledger import RuleTally, rule_tallies, rule_tallies_by_model
from mecha.core.store.proposal_files import Proposal
from mecha.core.store.rules_files import parse_rules_name
from mecha.core.store.rules_text import parse_rules_file, rules_file_project

# ─── Which files are rules documents ────────────────────────────────────────


class RulesDocument(msgspec.Struct, frozen=True):
    """A rules file of the store, by its name: where it is, its domain, its
    kind (`user` or `learned`) and its scope — the project id its name
    carries, `None` for a global file."""

    path: Path
    domain: str
    kind: str
    project_id: str | None = None


def rules_document_of(path: Path, root: Path) -> RulesDocument | None:
    """The rules document `path` is, when it is a rules file of the store at
    `root`: directly under `<root>/rules/`, named `<domain>.<kind>.toml` or
    `<domain>@<project id>.<kind>.toml` (`layout`) with a valid domain and
    kind `user` or `learned`. Anything else — a file in a sub-folder,
    `notes.toml`, `../x.user.toml`, a malformed project id — is not a rules
    document and gets no diagnostics (and is never loaded by a run)."""
    path = Path(path)
    if not _same_dir(path.parent, LearningStore(root).rules_dir):
        return None
    found = parse_rules_name(path.name)
    if found is None:
        return None
    domain, kind, pid = found
    return RulesDocument(path, domain, kind, pid)


def sibling_path(doc: RulesDocument) -> Path:
    """The other rules file of the document's domain in the same scope: a
    document is checked against it (restating a person's rule, the shared
    budget), so an editor rechecks it when this one changes."""
    return doc.path.with_name(scoped_rules_name(doc.domain, sibling_kind(doc.kind), doc.project_id))


def sibling_rules(doc: RulesDocument, open_text: Callable[[Path], str | None]) -> list[Rule]:
    """The rules of the document's sibling (`sibling_path`), as the person
    sees them: the editor's open buffer when there is one (`open_text`
    gives its text, or `None` when the file is not open), else the file
    on disk, else none.

    A sibling that does not parse counts as no rules: its breakage is that
    file's own `toml-syntax` diagnostic, and guessing at its rules here would
    put a second, misplaced complaint on this one."""
    path = sibling_path(doc)
    try:
        text = _seen_text(path, open_text)
        return [] if text is None else parse_rules_file(text, path.name)
    except Exception:  # unreadable, not TOML, not rules, nested past the parser's depth: no rules
        return []


def document_project(doc: RulesDocument, text: str, open_text: Callable[[Path], str | None]) -> str | None:
    """The root of the project a project's document belongs to, as its files
    name it: the document's own `project` key, else its sibling's. `None`
    for a global document, or when neither file names the project."""
    if doc.project_id is None:
        return None
    project = rules_file_project(text)
    if project is None:
        try:
            sibling = _seen_text(sibling_path(doc), open_text)
        except OSError:
            sibling = None
        project = None if sibling is None else rules_file_project(sibling)
    return project


def document_scope(doc: RulesDocument, text: str, open_text: Callable[[Path], str | None]) -> Scope:
    """The document's scope as the editor names it (`scope.scope_label`):
    global, or the project whose root its files name (`document_project`);
    a project whose files name no root is named by its id."""
    if doc.project_id is None:
        return Scope(scope_label(None))
    project = document_project(doc, text, open_text)
    return Scope(scope_label(project if project is not None else doc.project_id), project, in_project=True)


def _seen_text(path: Path, open_text: Callable[[Path], str | None]) -> str | bytes | None:
    """The open buffer's text for `path`, else the file's bytes, else `None`."""
    text = open_text(path)
    if text is not None:
        return text
    return path.read_bytes() if path.exists() else None


def _same_dir(a: Path, b: Path) -> bool:
    if Path(os.path.abspath(a)) == Path(os.path.abspath(b)):
        return True
    try:  # an editor may hand over the resolved path of a symlinked store
        return a.resolve() == b.resolve()
    except OSError:
        return False


# ─── What the store says of the domain ──────────────────────────────────────


def pending_of(doc: RulesDocument, proposals: Sequence[Proposal]) -> list[PendingProposal]:
    """The pending proposals for the document's domain and scope among
    `proposals`, as the editor needs them: the ones a person still has to
    decide on, with the active rule counts before and after. A proposal's
    scope is its `project` (`None`: global), matched by the id the
    document's name carries."""
    return [
        PendingProposal(
            p.id,
            active_count(p.rules_before),
            active_count(p.rules),
            tuple((c.number, c.change, c.text) for c in numbered_changes(p)),
        )
        for p in proposals
        if p.domain == doc.domain and _scope_id(p.project) == doc.project_id and is_pending(p)
    ]


def pending_in(store: LearningStore | None, doc: RulesDocument) -> list[PendingProposal]:
    """The document's pending proposals in `store` (`pending_for`), as the
    editor needs them; none in a store that does not exist yet."""
    return pending_of(doc, pending_for(store, doc.domain)) if store is not None else []


def _scope_id(project: str | None) -> str | None:
    return None if project is None else project_id(project)


def tallies_by_model_in(store: LearningStore | None) -> dict[str, dict[str, RuleTally]]:
    """The same, kept apart per model the probes drove (rule id → model →
    tally); nothing in a store that does not exist yet."""
    return rule_tallies_by_model(store.validations()) if store is not None else {}


def record_lines_in(store: LearningStore | None, doc: RulesDocument, scope: Scope, now: str) -> dict[str, str]:
    """Each live learned rule of the document `doc` (in `scope`) → its
    record's one line (`record.record_line`); nothing for a person's own
    rules file (a record is kept of learned rules), in a store that does not
    exist yet, or for a project's document whose files name no root."""
    if store is None or doc.kind != LEARNED_KIND or (scope.in_project and scope.project is None):
        return {}
    records = live_records(store, domain=doc.domain, scopes=[scope.project], now=now)
    return {s.record.rule_id: s.record.line for s in records}


def tallies_in(store: LearningStore | None) -> dict[str, RuleTally]:
    """What the validation ledger of `store` measured of each rule, by id;
    nothing in a store that does not exist yet."""
    return rule_tallies(store.validations()) if store is not None else {}
