"""Scopes of worktrees since removed, merged into their repository's.

A session run in a linked worktree is its repository's project
(`layout.project_root`) — while the worktree exists. The usual life of one
is short: made for an issue, removed after the merge. A session imported
after that named a folder that no longer existed, so it became a project
of its own, and four worktrees of one repository made four projects of one
lesson each, none ever reaching a learn pass. Now the import finds the
repository from what the session recorded, its folder and its branch
(`scope.project_of_session`), and sessions land there.

What an older import already split stays split until something moves it:
that is this module, run by every import that is not a dry run. Each
project the stored lessons name whose folder is gone is looked up again —
the branch from a session file it was learned from (its lines say it),
the repository from its git metadata — and when exactly one repository is
found, the lessons of that scope become the repository's: their
`project` is rewritten, keeping everything else about them (processed,
rejected, the session they came from), and the move is committed to the
store's history naming both scopes and how many lessons moved. A scope
whose repository is not found, or whose files are all gone, is left as it
is. Rules already accepted for such a scope stay in their file: a rule is
the person's decision, and merging two rule sets is a proposal's job, not
an import's.
"""

from __future__ import annotations

import os
from pathlib import Path

from mecha.core.learning.scope import repository_of_removed_worktree
from mecha.core.store.learning_store import LearningStore

#: How many lines of a session file are read for the branch it ran on.
_BRANCH_LINES = 200


def removed_worktree_moves(store: LearningStore) -> dict[str, str]:
    """For each project the stored lessons name whose folder no longer
    exists and whose repository is found, that repository's root."""
    files: dict[str, list[str]] = {}
    for r in store.reflexions():
        if r.project is None or os.path.lexists(r.project):
            continue
        found = files.setdefault(r.project, [])
        if r.found is not None and r.found.file and r.found.file not in found:
            found.append(r.found.file)
    moves: dict[str, str] = {}
    for project, paths in files.items():
        for path in paths:
            branch = recorded_branch(Path(path))
            if branch is None:
                continue
            repository = repository_of_removed_worktree(project, branch)
            if repository is not None and repository != project:
                moves[project] = repository
            break
    return moves


def recorded_branch(path: Path) -> str | None:
    """The git branch a Claude Code session file says it ran on (its
    `gitBranch`), from its first lines; `None` when it says none."""
    import msgspec

    class _Head(msgspec.Struct):
        gitBranch: str | None = None

    decoder = msgspec.json.Decoder(_Head)
    try:
        with path.open("rb") as f:
            for _, line in zip(range(_BRANCH_LINES), f, strict=False):
                if b'"gitBranch"' not in line:
                    continue
                try:
                    branch = decoder.decode(line).gitBranch
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                if branch and branch != "HEAD":
                    return branch
    except OSError:
        return None
    return None


def merge_removed_worktree_scopes(store: LearningStore) -> list[str]:
    """Merge each split scope of a removed worktree into its repository's
    (see the module); one line per scope merged, saying what moved."""
    moves = removed_worktree_moves(store)
    if not moves:
        return []
    said: list[str] = []
    with store.lock():
        counts = {old: sum(1 for r in store.reflexions() if r.project == old) for old in moves}
        moved = store.move_reflexions(moves)
        if not moved:
            return []
        for old, new in sorted(moves.items()):
            said.append(f"{counts[old]} lesson(s) of {old} (a worktree since removed) moved to its repository's scope, {new}")
        store.commit("Merged the scopes of worktrees since removed into their repositories'\n\n" + "\n".join(f"- {s}" for s in said))
    return said
