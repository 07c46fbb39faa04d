"""A repository is one project however many checkouts it has: every linked
worktree (`git worktree add`) resolves to its repository's main worktree,
while a submodule, a bare repository's worktree and anything unreadable
stay projects of their own; and a project's rules are exported into every
worktree's instructions file. Real git repositories, real worktrees and a
real submodule, made by `git` itself, in a temp dir."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mecha.core.agents.export_targets import (
    ExportTarget,
    chosen_targets,
    export_all,
    project_targets,
    scope_targets,
    target_for_file,
)
from mecha.core.agents.hooks import settings_path
from mecha.core.domain.rules import Rule
from mecha.core.learning.learn import scopes_ready
from mecha.core.learning.reflect import reflect_inbox
from mecha.core.learning.reflection import Reflector
from mecha.core.learning.scope import project_of_cwd
from mecha.core.sessions.transcript import Block, Message, Taint, TaintCheckpoint
from mecha.core.store.inbox import enqueue, session_entry
from mecha.core.store.layout import checkout_root, linked_worktrees, main_worktree, project_root
from mecha.core.store.learning_store import LearningStore
from tests.builders import write_learned_rules
from tests.fakes import ScriptedProvider

_ID = ["-c", "user.name=t", "-c", "user.email=t@t"]


def git(*args: str | Path) -> None:
    subprocess.run(["git", *_ID, *map(str, args)], check=True, capture_output=True)


def repo_with_commit(path: Path) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", path)
    git("-C", path, "commit", "-q", "--allow-empty", "-m", "first")
    return path.resolve()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A repository with two linked worktrees beside it."""
    main = repo_with_commit(tmp_path / "app")
    git("-C", main, "worktree", "add", "-q", tmp_path / "app-feature")
    git("-C", main, "worktree", "add", "-q", "-b", "fix", tmp_path / "wts" / "app-fix")
    return main, (tmp_path / "app-feature").resolve(), (tmp_path / "wts" / "app-fix").resolve()


# ─── which project a checkout is ────────────────────────────────────────────


def test_every_linked_worktree_is_its_repositorys_project(repo: tuple[Path, Path, Path]) -> None:
    # Pins: four worktrees of one repository learning into four scopes, none
    # of which ever reaches the learn minimum.
    main, feature, fix = repo
    (fix / "src" / "pkg").mkdir(parents=True)
    assert (feature / ".git").is_file()
    for where in (main, feature, fix, fix / "src" / "pkg"):
        assert project_root(where) == str(main)
    assert checkout_root(fix / "src" / "pkg") == str(fix)
    assert checkout_root(main) == str(main)
    assert linked_worktrees(str(main)) == sorted([str(feature), str(fix)])
    assert linked_worktrees(str(feature)) == [], "a linked worktree has no worktrees of its own"


def test_a_worktree_reached_through_a_link_is_still_the_repositorys(repo: tuple[Path, Path, Path], tmp_path: Path) -> None:
    main, feature, _ = repo
    (tmp_path / "shortcut").symlink_to(feature)
    assert project_root(tmp_path / "shortcut") == str(main)


def test_a_submodule_stays_a_project_of_its_own(tmp_path: Path) -> None:
    # Pins: a submodule folded into its superproject — it is another
    # repository with its own conventions.
    upstream = repo_with_commit(tmp_path / "lib")
    main = repo_with_commit(tmp_path / "app")
    git("-C", main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", upstream.as_uri(), "vendor/lib")
    sub = main / "vendor" / "lib"
    assert (sub / ".git").is_file() and "modules" in (sub / ".git").read_text()
    assert project_root(sub) == str(sub)
    assert main_worktree(str(sub)) is None
    assert project_root(main / "vendor") == str(main)


def test_a_bare_repositorys_worktree_stays_a_project_of_its_own(tmp_path: Path) -> None:
    # No main worktree to be the project: the common git directory is not a
    # `.git` folder inside a checkout.
    origin = repo_with_commit(tmp_path / "origin")
    bare = tmp_path / "app.git"
    git("clone", "-q", "--bare", origin, bare)
    git("-C", bare, "worktree", "add", "-q", tmp_path / "wt")
    wt = (tmp_path / "wt").resolve()
    assert (wt / ".git").is_file()
    assert project_root(wt) == str(wt)
    assert project_root(bare) == str(bare.resolve())


@pytest.mark.parametrize(
    "damage",
    ["no-commondir", "backlink-elsewhere", "moved-worktree", "gitdir-garbage", "gitdir-fifo", "common-gone"],
)
def test_a_worktree_whose_bookkeeping_does_not_agree_stays_its_own_project(
    repo: tuple[Path, Path, Path], tmp_path: Path, damage: str
) -> None:
    # Fails to the folder itself, as every checkout did before: never to
    # some other repository a hand-written `.git` file names.
    main, feature, _ = repo
    admin = main / ".git" / "worktrees" / "app-feature"
    wt = feature
    if damage == "no-commondir":
        (admin / "commondir").unlink()
    elif damage == "backlink-elsewhere":
        (admin / "gitdir").write_text(str(tmp_path / "elsewhere" / ".git") + "\n")
    elif damage == "moved-worktree":
        wt = tmp_path / "moved"
        feature.rename(wt)
    elif damage == "gitdir-garbage":
        (feature / ".git").write_bytes(b"\xff\xfe not a pointer")
    elif damage == "gitdir-fifo":
        (feature / ".git").unlink()
        os.mkfifo(feature / ".git")
    elif damage == "common-gone":
        shutil.rmtree(main / ".git")
        (main / ".git").mkdir()
        (main / ".git" / "worktrees" / "app-feature").mkdir(parents=True)
    assert project_root(wt) == str(wt)


def test_a_hand_written_git_file_cannot_claim_another_repository(repo: tuple[Path, Path, Path], tmp_path: Path) -> None:
    # Pins: an unpacked archive whose `.git` file names a real worktree's
    # git directory taking that repository's rules for its own.
    main, _, _ = repo
    stranger = tmp_path / "download"
    stranger.mkdir()
    (stranger / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'app-feature'}\n")
    assert project_root(stranger) == str(stranger)


def test_a_relative_gitdir_is_read_against_the_worktrees_folder(repo: tuple[Path, Path, Path]) -> None:
    # git >= 2.48 writes these with `worktree.useRelativePaths`.
    main, feature, _ = repo
    admin = main / ".git" / "worktrees" / "app-feature"
    (feature / ".git").write_text("gitdir: " + os.path.relpath(admin, feature) + "\n")
    (admin / "gitdir").write_text(os.path.relpath(feature / ".git", admin) + "\n")
    assert project_root(feature) == str(main)
    assert str(feature) in linked_worktrees(str(main))


# ─── the export reaches every checkout ──────────────────────────────────────


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    return LearningStore.open(tmp_path / "learning")


def test_a_projects_rules_are_written_into_every_worktrees_file(
    repo: tuple[Path, Path, Path], store: LearningStore, tmp_path: Path
) -> None:
    # Pins: a rule accepted in one worktree missing from the sibling's
    # instructions file.
    main, feature, fix = repo
    write_learned_rules(store, "behavior", [Rule(text="Run the linter before committing.", id="r-1")], str(main))
    home = tmp_path / "home"
    home.mkdir()
    results = export_all(store, scope_targets("claude", [str(main)], home=home))
    written = {Path(r.path): r for r in results}
    for checkout in (main, feature, fix):
        assert written[checkout / "CLAUDE.md"].changed and written[checkout / "CLAUDE.md"].project == str(main)
        assert "Run the linter before committing." in (checkout / "CLAUDE.md").read_text()
    # `export agents` run in a worktree, and `--project` naming the repository.
    every_agents_md = [main / "AGENTS.md", feature / "AGENTS.md", fix / "AGENTS.md"]
    from_worktree = chosen_targets("agents", None, None, projects=[], home=home, cwd=str(fix))
    assert [t.path for t in from_worktree] == every_agents_md and {t.project for t in from_worktree} == {str(main)}
    assert [t.checkout for t in from_worktree] == [None, str(feature), str(fix)]
    named = chosen_targets("agents", None, str(main), projects=[], home=home, cwd=str(main))
    assert [t.path for t in named] == every_agents_md

    # A file named by hand in a worktree is written there, inside that checkout.
    (feature / "docs").mkdir()
    [by_hand] = export_all(store, [target_for_file("agents", feature / "docs" / "AGENTS.md", home=home)])
    assert by_hand.error is None and by_hand.changed
    again = chosen_targets("claude", feature / "CLAUDE.md", str(main), projects=[], home=home, cwd=str(feature))
    assert [(t.path, t.checkout) for t in again] == [(feature / "CLAUDE.md", str(feature))]
    assert "Run the linter before committing." in (feature / "docs" / "AGENTS.md").read_text()

    # A worktree removed by hand (no `git worktree prune`) is skipped quietly.
    shutil.rmtree(fix)
    assert [t.path for t in project_targets("claude", str(main))] == [main / "CLAUDE.md", feature / "CLAUDE.md"]


def test_a_worktrees_file_is_kept_inside_that_worktree(
    repo: tuple[Path, Path, Path], store: LearningStore, tmp_path: Path
) -> None:
    # The export's own reach check, with the worktree as the folder: a
    # link out of it, to the main worktree's file included, is refused by
    # name and the other checkouts are still written.
    main, feature, fix = repo
    write_learned_rules(store, "behavior", [Rule(text="Keep commits small.", id="r-1")], str(main))
    (feature / "CLAUDE.md").symlink_to(tmp_path / "home-bashrc")
    (fix / "CLAUDE.md").symlink_to(main / "CLAUDE.md")
    results = {Path(r.path): r for r in export_all(store, project_targets("claude", str(main)))}
    for refused in (feature, fix):
        error = results[refused / "CLAUDE.md"].error
        assert error is not None and error.startswith("ExportFailed: ") and str(refused) in error
    assert not (tmp_path / "home-bashrc").exists()
    assert results[main / "CLAUDE.md"].changed and "Keep commits small." in (main / "CLAUDE.md").read_text()


def test_a_file_named_in_a_worktree_is_told_its_repositorys_rules(repo: tuple[Path, Path, Path], tmp_path: Path) -> None:
    main, feature, _ = repo
    home = tmp_path / "home"
    assert target_for_file("claude", feature / "CLAUDE.md", home=home) == ExportTarget(
        "claude", feature / "CLAUDE.md", str(main), checkout=str(feature)
    )
    assert target_for_file("claude", feature / "docs" / "CLAUDE.md", home=home).project is None
    named = target_for_file("agents", feature / "sub" / "AGENTS.md", home=home)
    assert (named.project, named.checkout) == (str(main), str(feature))


def test_a_store_holding_a_worktree_as_its_own_project_leaves_that_scope_alone(
    repo: tuple[Path, Path, Path], store: LearningStore, tmp_path: Path
) -> None:
    # A store written when each worktree was its own project: the old
    # scope's rules stay in the store, and its file is not fought over —
    # it carries the repository's rules.
    main, feature, _ = repo
    write_learned_rules(store, "behavior", [Rule(text="Old worktree rule.", id="r-old")], str(feature))
    write_learned_rules(store, "behavior", [Rule(text="Repository rule.", id="r-new")], str(main))
    home = tmp_path / "home"
    home.mkdir()
    results = export_all(store, scope_targets("claude", [str(feature), str(main)], home=home))
    [old] = [r for r in results if r.project == str(feature)]
    assert old.skipped is not None and f"worktree of the repository at {main}" in old.skipped
    text = (feature / "CLAUDE.md").read_text()
    assert "Repository rule." in text and "Old worktree rule." not in text
    assert [r.text for r in store.learned_rules("behavior", str(feature))] == ["Old worktree rule."]


def test_project_hooks_go_into_the_worktree_the_agent_runs_in(repo: tuple[Path, Path, Path], tmp_path: Path) -> None:
    # The agent reads the settings of its own checkout, not the main one's.
    _, feature, _ = repo
    (feature / "src").mkdir()
    path = settings_path("claude", "project", home=tmp_path / "home", cwd=feature / "src")
    assert path == feature / ".claude" / "settings.json"


# ─── lessons add up across worktrees ────────────────────────────────────────


def _steered(words: str) -> list[Message]:
    return [
        Message.user("tidy the docs"),
        Message.assistant([Block.text_block("reading"), Block.tool_use("t1", "fs_read", {"path": "a.md"})]),
        Message.tool_results([Block.tool_result("t1", "contents"), Block.text_block(words)]),
        Message.assistant("Done."),
    ]


async def test_lessons_from_three_worktrees_reach_the_learn_minimum_as_one_project(
    repo: tuple[Path, Path, Path], store: LearningStore
) -> None:
    # Pins: one lesson per worktree, three scopes, none of which a learn
    # pass would ever take.
    main, feature, fix = repo
    clean = [TaintCheckpoint(at=0, taint=Taint())]
    for n, cwd in enumerate((main, feature / ".", fix)):
        enqueue(store, session_entry(f"s-{n}", _steered(f"use two spaces here ({n})"), clean, project=project_of_cwd(str(cwd))))
    reply = json.dumps({"skip": False, "reflexion": "Indent with two spaces.", "error_type": "style", "confidence": 0.8})
    await reflect_inbox(store, Reflector(ScriptedProvider(reply, reply, reply)))
    assert {r.project for r in store.reflexions()} == {str(main)}
    [domain] = {r.domain for r in store.reflexions()}
    ready, why = scopes_ready(store, domain, 3)
    assert ready == [str(main)], why
