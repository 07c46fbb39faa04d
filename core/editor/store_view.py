"""What the editor reads beside the document: which files are a store's
rules documents, the sibling file a document is checked against, and the
store's pending proposals and validation tallies.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from mecha.core.editor.results import PendingProposal
from mecha.core.errors import InvalidDomain
from mecha.core.learning.proposals import is_pending, pending_for
from mecha.core.learning.rules import Rule, active_count, validate_domain
from mecha.core.store.layout import LEARNED_KIND, USER_KIND, sibling_kind
from mecha.core.store.learning_store import LearningStore, Proposal, parse_rules_file, rules_file_path
from mecha.core.store.ledger import RuleTally, rule_tallies

# ─── Which files are rules documents ────────────────────────────────────────


def rules_document_of(path: Path, root: Path) -> tuple[str, str] | None:
    """`(domain, kind)` when `path` is a rules file of the store at `root`:
    directly under `<root>/rules/`, named `<domain>.user.toml` or
    `<domain>.learned.toml` with a valid domain. Anything else — a file in a
    sub-folder, `notes.toml`, `../x.user.toml` — is not a rules document and
    gets no diagnostics (and is never loaded by a run)."""
    path = Path(path)
    if not _same_dir(path.parent, LearningStore(root).rules_dir):
        return None
    for kind in (USER_KIND, LEARNED_KIND):
        suffix = f".{kind}.toml"
        if path.name.endswith(suffix):
            try:
                return validate_domain(path.name[: -len(suffix)]), kind
            except InvalidDomain:
                return None
    return None


def sibling_path(root: Path, domain: str, kind: str) -> Path:
    """The domain's other rules file: a document is checked against it
    (restating a person's rule, the shared budget), so an editor rechecks
    it when this one changes."""
    return rules_file_path(Path(root), domain, sibling_kind(kind))


def sibling_rules(root: Path, domain: str, kind: str, open_text: Callable[[Path], str | None]) -> list[Rule]:
    """The rules of the document's sibling (`sibling_path`), as the person
    sees them: the editor's open buffer when there is one (`open_text`
    gives its text, or `None` when the file is not open), else the file
    on disk, else none.

    A sibling that does not parse counts as no rules: its breakage is that
    file's own `toml-syntax` diagnostic, and guessing at its rules here would
    put a second, misplaced complaint on this one."""
    path = sibling_path(root, domain, kind)
    try:
        text = open_text(path)
        if text is not None:
            return parse_rules_file(text, path.name)
        if path.exists():
            return parse_rules_file(path.read_bytes(), path.name)
    except Exception:  # unreadable, not TOML, not rules, nested past the parser's depth: no rules
        return []
    return []


def _same_dir(a: Path, b: Path) -> bool:
    if Path(os.path.abspath(a)) == Path(os.path.abspath(b)):
        return True
    try:  # an editor may hand over the resolved path of a symlinked store
        return a.resolve() == b.resolve()
    except OSError:
        return False


# ─── What the store says of the domain ──────────────────────────────────────


def pending_of(domain: str, proposals: Sequence[Proposal]) -> list[PendingProposal]:
    """The pending proposals for `domain` among `proposals`, as the editor
    needs them: the ones a person still has to decide on, with the active
    rule counts before and after."""
    return [
        PendingProposal(p.id, active_count(p.rules_before), active_count(p.rules))
        for p in proposals
        if p.domain == domain and is_pending(p)
    ]


def pending_in(store: LearningStore | None, domain: str) -> list[PendingProposal]:
    """`domain`'s pending proposals in `store` (`pending_for`), as the editor
    needs them; none in a store that does not exist yet."""
    return pending_of(domain, pending_for(store, domain)) if store is not None else []


def tallies_in(store: LearningStore | None) -> dict[str, RuleTally]:
    """What the validation ledger of `store` measured of each rule, by id;
    nothing in a store that does not exist yet."""
    return rule_tallies(store.validations()) if store is not None else {}
