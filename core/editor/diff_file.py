"""A proposal's diff as a real file, for editors that can open files and
nothing else.

Our own extensions show a diff as a read-only document under the
`mecha-proposal:` scheme, which only they know how to open. Any other LSP
client (eglot, lsp-mode, Helix, Zed) can open a file: the server writes the
diff to `cache/diffs/<proposal id>.diff` in the store and asks the client to
show that. The file is derived and rewritten on every request, so it is
always the proposal's diff as of the request; it lives in the store's cache
(git-ignored, owner-only, never written through a link) so nothing is left
next to the store and nothing reaches its history.
"""

from __future__ import annotations

from pathlib import Path

from mecha.core.store.files import ensure_private_dir, refuse_links, write_atomic
from mecha.core.store.proposal_files import ProposalFiles


def proposal_diff_path(root: Path, proposal_id: str) -> Path:
    """Where `proposal_id`'s diff file goes; an id that could not name a
    proposal is refused by the same check as a proposal's own file."""
    return ProposalFiles(root).diff_path(proposal_id)


def write_proposal_diff(root: Path, proposal_id: str, diff: str) -> Path:
    """Write `diff` as `proposal_id`'s diff file, atomically, and return its
    path. An empty diff still gets a file that says so, so the editor opens
    something a person can read."""
    path = proposal_diff_path(root, proposal_id)
    ensure_private_dir(path.parent, root=root)
    text = diff if diff.strip() else f"# proposal {proposal_id} changes no rule text\n"
    write_atomic(refuse_links(root, path), text.encode("utf-8"))
    return path
