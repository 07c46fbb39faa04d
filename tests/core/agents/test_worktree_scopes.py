"""A repository outlives its worktrees: a session from a linked worktree
since removed is learned for the repository, and scopes split off that way
before are merged into it — with real git repositories and worktrees."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mecha.core.agents.importing import import_sessions
from mecha.core.domain.reflexion import FoundAt
from mecha.core.learning.scope import project_of_session, repository_of_removed_worktree
from mecha.core.sessions.mining import DEFAULT_VOICES
from mecha.core.store.inbox import queued_sessions
from mecha.core.store.learning_store import LearningStore
from tests.builders import reflexion
from tests.core.ccfixture import Claude, text


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=Pat", "-c", "user.email=pat@example.org", "-c", "init.defaultBranch=main", *args],
                   cwd=cwd, check=True, capture_output=True)


def repository_with_removed_worktrees(home: Path) -> Path:
    """`home/projects/spotter` with two worktrees made for issues and
    removed: `spotter-gqc` (its branch kept) and `spotter-dov` (merged, its
    branch deleted); and a second repository beside it that knows neither."""
    repo = home / "projects" / "spotter"
    repo.mkdir(parents=True)
    git("init", "-q", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=repo)
    for issue in ("spotter-gqc", "spotter-dov"):
        tree = home / "projects" / "spotter-worktrees" / issue
        git("worktree", "add", "-q", "-b", issue, str(tree), cwd=repo)
        git("commit", "-q", "--allow-empty", "-m", f"work on {issue}", cwd=tree)
        git("worktree", "remove", str(tree), cwd=repo)
    git("merge", "-q", "--ff-only", "spotter-dov", cwd=repo)
    git("branch", "-q", "-D", "spotter-dov", cwd=repo)
    other = home / "projects" / "notes"
    other.mkdir()
    git("init", "-q", cwd=other)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=other)
    return repo


def session_in(tree: Path, branch: str, session: str) -> bytes:
    cc = Claude(session=session, cwd=str(tree))
    cc.user("Fix the annotation bug.").assistant(text(f"Fixed on {branch}.")).user(f"Name the test after {branch}.")
    for line in cc.assistant(text("Renamed.")).lines:
        line["gitBranch"] = branch
    return cc.bytes()


def test_a_session_from_a_removed_worktree_is_learned_for_its_repository(tmp_path: Path) -> None:
    # Pins: sessions from worktrees `spotter-gqc`, `-dov`, … removed after
    # merge became one project each, of one lesson, none reaching a learn pass.
    repo = repository_with_removed_worktrees(tmp_path)
    worktrees = tmp_path / "projects" / "spotter-worktrees"
    gqc, dov = worktrees / "spotter-gqc", worktrees / "spotter-dov"
    assert not gqc.exists() and not dov.exists()
    assert repository_of_removed_worktree(str(gqc), "spotter-gqc") == str(repo), "its branch is still a ref"
    assert repository_of_removed_worktree(str(dov), "spotter-dov") == str(repo), "merged and deleted: the reflog names it"
    assert repository_of_removed_worktree(str(gqc), "spotter-unknown") is None, "no repository knows the branch"
    assert project_of_session(str(gqc), None) == str(gqc), "no branch recorded: its own project, as before"
    folder = tmp_path / "claude" / "-home-pat-projects-spotter-worktrees-spotter-gqc"
    folder.mkdir(parents=True)
    for n, (tree, branch) in enumerate(((gqc, "spotter-gqc"), (dov, "spotter-dov"))):
        path = folder / f"s{n}.jsonl"
        path.write_bytes(session_in(tree, branch, f"ffff000{n}-1111-4222-8333-444455556666"))
        os.utime(path, (1_700_000_000, 1_700_000_000))
    store = LearningStore.open(tmp_path / "learning")
    import_sessions(store, "claude", tmp_path / "claude", voices=DEFAULT_VOICES)
    entries = queued_sessions(store, "claude:")
    assert len(entries) == 2 and {e.project for e in entries} == {str(repo)}


def test_scopes_split_off_by_an_earlier_import_are_merged_into_the_repository(tmp_path: Path) -> None:
    # Pins: what an older import split stayed four one-lesson projects for good.
    repo = repository_with_removed_worktrees(tmp_path)
    gqc = tmp_path / "projects" / "spotter-worktrees" / "spotter-gqc"
    folder = tmp_path / "claude" / "-home-pat-projects-spotter-worktrees-spotter-gqc"
    folder.mkdir(parents=True)
    session = folder / "s.jsonl"
    session.write_bytes(session_in(gqc, "spotter-gqc", "ffff0009-1111-4222-8333-444455556666"))
    store = LearningStore.open(tmp_path / "learning")
    with store.lock():
        store.append_reflexions([
            reflexion("r-1", "Name tests after the bug they pin.", project=str(gqc), is_processed=True,
                      found=FoundAt(at=2, file=str(session), line=3)),
            reflexion("r-2", "Keep the notes repository's own rules.", project=str(tmp_path / "projects" / "notes")),
        ])
    report = import_sessions(store, "claude", tmp_path / "claude", voices=DEFAULT_VOICES)
    assert report.merged and str(gqc) in report.merged[0] and str(repo) in report.merged[0]
    moved, other = store.reflexions()
    assert moved.project == str(repo) and moved.is_processed, "moved with its history"
    assert other.project == str(tmp_path / "projects" / "notes"), "a scope whose folder exists is not touched"
    log = subprocess.run(["git", "-C", str(store.root), "log", "-1", "--format=%B"], capture_output=True, text=True).stdout
    assert "worktrees since removed" in log and str(gqc) in log
    assert import_sessions(store, "claude", tmp_path / "claude", voices=DEFAULT_VOICES).merged == [], "merged once"


@pytest.mark.parametrize("branch", ["main", "HEAD", ""])
def test_a_branch_every_repository_has_finds_no_repository(tmp_path: Path, branch: str) -> None:
    repository_with_removed_worktrees(tmp_path)
    gone = tmp_path / "projects" / "spotter-worktrees" / "spotter-zzz"
    assert repository_of_removed_worktree(str(gone), branch) is None


def test_a_codex_session_names_its_branch_for_the_same_search(tmp_path: Path) -> None:
    # Codex records the checkout's git state in its session_meta.
    from mecha.core.sessions.foreign import read_session
    from tests.core.ccfixture import Codex

    cx = Codex().user("Fix it.").say("Fixed.").user("Name the test after the bug.")
    cx.lines[0]["payload"]["git"] = {"branch": "spotter-gqc", "commit_hash": "99b497c"}
    read = read_session(tmp_path / "rollout.jsonl", "codex", data=cx.bytes())
    assert read.branch == "spotter-gqc"
