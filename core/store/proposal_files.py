"""Proposals: rule changes waiting for a person, one JSON file each under
`proposals/`, written whole (temp sibling and rename) so a listing never
reads a half-written file from a running pass."""

from __future__ import annotations

import logging
import os
import re
from enum import Enum
from pathlib import Path

import msgspec

from mecha.core.domain.rules import LeftOut, Refusal, Rule, RuleDrop, validate_domain
from mecha.core.errors import InvalidInput, NotFound
from mecha.core.store import files as _files
from mecha.core.store.codec import ENCODER, decoder
from mecha.core.store.layout import PROPOSAL_DIFFS_DIR, PROPOSALS_DIR

log = logging.getLogger(__name__)

#: A proposal id becomes a file name, so it is checked before any path is
#: built: no separators, no leading dot, a length a filesystem accepts.
_PROPOSAL_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class ProposalStatus(str, Enum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    #: The paired gate measured the candidate and refused it; its reflections
    #: return to the pool to be argued again.
    REJECTED_BY_GATE = "rejected_by_gate"


class Proposal(msgspec.Struct, kw_only=True):
    """A rule change waiting for a person, with what argues for it.

    Unattended learning may only *propose*: the live learned file changes
    when a person accepts. `rules_before` is the learned set the candidate
    was generated (and measured) against, so review shows the diff that was
    measured, and an accept can see that the live rules moved underneath it.
    """

    id: str
    domain: str
    status: ProposalStatus
    #: The reflections the candidate was learned from; marked processed only
    #: when a person resolves the proposal.
    reflexion_ids: list[str]
    rules_before: list[Rule]
    rules: list[Rule]
    #: What the gate measured, for a person to read. Empty: nothing in the
    #: batch was measurable — review by reading, not by score.
    evidence: str
    created_at: str
    resolved_at: str | None = None
    reason: str | None = None
    #: The scope whose learned rules `rules_before` and `rules` are: a
    #: project's root, or `None` — global, which is also what a proposal
    #: written before scopes reads as.
    project: str | None = None
    #: Set on a *promotion*: the projects whose live rules each hold the
    #: lesson this global proposal adds (`learning.proposals`); accepting it
    #: moves the lesson out of their files into the global one.
    promoted_from: list[str] = msgspec.field(default_factory=list)
    #: Set when a person accepted a project's lesson as global (`accept
    #: --global`): its new rules went to the global file instead.
    accepted_as_global: bool = False
    #: Live learned rules the candidate leaves out, each with why (a rule of
    #: the candidate absorbs it, or a reflection contradicts it).
    drops: list[RuleDrop] = msgspec.field(default_factory=list)
    #: What the learn gate refused of the learner's answer, and why.
    refusals: list[Refusal] = msgspec.field(default_factory=list)
    #: The changes a person left out when accepting (`accept --without`),
    #: or named as resting on wrong lessons when rejecting (`reject
    #: --wrong`); their lessons are marked rejected.
    left_out: list[LeftOut] = msgspec.field(default_factory=list)
    #: Set on a *rewrite*: the live learned rules the person corrected again
    #: after accepting them (`learning.record`), whose new corrections are
    #: this proposal's lessons.
    rewrite_of: list[str] = msgspec.field(default_factory=list)


class ProposalFiles:
    """The proposals of the store at `root`."""

    def __init__(self, root: Path):
        self._root = root

    def path(self, proposal_id: str) -> Path:
        """`proposals/<id>.json`, after `proposal_id` is checked to be an id."""
        if not isinstance(proposal_id, str) or not _PROPOSAL_ID_RE.fullmatch(proposal_id):
            raise InvalidInput(
                f"invalid proposal id {proposal_id!r}: an id is letters, digits, '.', '_' and '-', "
                "starting with a letter or digit"
            )
        return self._root / PROPOSALS_DIR / f"{proposal_id}.json"

    def diff_path(self, proposal_id: str) -> Path:
        """`cache/diffs/<id>.diff`, the proposal's diff written as a file for
        an editor that can only open files (`editor.diff_file`); the id is
        checked as `path` checks it."""
        self.path(proposal_id)
        return self._root / PROPOSAL_DIFFS_DIR / f"{proposal_id}.diff"

    def write(self, p: Proposal) -> None:
        """Write or rewrite one proposal, atomically: a listing never reads
        a half-written file from a running pass. Resolving a proposal
        rewrites the same file."""
        _files.write_atomic(*self.render(p))

    def render(self, p: Proposal) -> tuple[Path, bytes]:
        """The file of `p` and its bytes, written nowhere yet (its folder is
        made, and a link in the way refused)."""
        path = self.path(p.id)
        validate_domain(p.domain)
        _files.ensure_private_dir(path.parent, root=self._root)
        _files.refuse_links(self._root, path)
        return path, msgspec.json.format(ENCODER.encode(p), indent=2) + b"\n"

    def all(self) -> list[Proposal]:
        """Every readable proposal, oldest first (ids sort by creation time).
        An unreadable file is skipped with a warning; temp files are never
        read."""
        directory = self._root / PROPOSALS_DIR
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out: list[Proposal] = []
        read = decoder(Proposal)
        for entry in entries:
            if not entry.name.endswith(".json") or entry.name.startswith("."):
                continue
            try:
                found = read.decode(Path(entry.path).read_bytes())
            except (OSError, msgspec.DecodeError) as e:
                log.warning("skipping unreadable proposal %s: %s", entry.path, e)
                continue
            if not _PROPOSAL_ID_RE.fullmatch(found.id):
                # Its id names its file when it is resolved: one that is not
                # an id (`../x`) could never be, so it is not offered.
                log.warning("skipping proposal %s: its id %r is not an id", entry.path, found.id)
                continue
            out.append(found)
        out.sort(key=lambda p: p.id)
        return out

    def find(self, id_or_prefix: str) -> Proposal:
        """One proposal by exact id, else by unique prefix.

        An exact id always wins, even when it is also a prefix of another
        id. No match is `NotFound`; several are `Ambiguous`, listing them —
        a guess would accept the wrong rule change.
        """
        if not id_or_prefix:
            raise NotFound("no proposal id given")
        from mecha.core.identity import one_by_id_or_prefix

        missing = f"no proposal matching `{id_or_prefix}`"
        return one_by_id_or_prefix(self.all(), id_or_prefix, lambda p: p.id, plural="proposals", missing=missing)
