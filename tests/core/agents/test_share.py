"""Sharing a rule with the team: into the repository's tracked files, by the
person's decision, the rule staying theirs. Real git repositories, a real
store."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mecha.core.agents.share import share
from mecha.core.domain.rules import Rule
from mecha.core.errors import Ambiguous, ExportFailed, NotFound
from mecha.core.store.learning_store import LearningStore
from tests.builders import write_learned_rules


def git(cwd: Path | str, *argv: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *argv], capture_output=True, text=True, check=True).stdout


def team_repository(root: Path, claude_md: str) -> Path:
    """A repository at `root` whose one commit is the team's `CLAUDE.md`."""
    root.mkdir()
    git(root, "init", "-q")
    (root / "CLAUDE.md").write_text(claude_md)
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "team")
    return root.resolve()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return team_repository(tmp_path / "app", "# Team\n\nUse the Makefile.\n")


def test_a_shared_rule_lands_in_the_tracked_file_and_git_shows_exactly_that(repo: Path, tmp_path: Path) -> None:
    # Pins: sharing that rewrites the team's text around the section, drops
    # a rule shared before, or takes the rule out of the person's store.
    store = LearningStore.open(tmp_path / "learning")
    write_learned_rules(store, "behavior", [Rule(text="Never push to main.", id="r-push"),
                                            Rule(text="Run make test first.", id="r-test")], str(repo))
    write_learned_rules(store, "behavior", [Rule(text="Answer in English.", id="r-lang")])
    done = share(store, ["r-push"], str(repo))
    assert [r.text for r in done.rules] == ["Never push to main."] and done.files == [(str(repo / "CLAUDE.md"), True)]
    assert git(repo, "status", "--porcelain") == " M CLAUDE.md\n"
    text = (repo / "CLAUDE.md").read_text()
    assert text.startswith("# Team\n\nUse the Makefile.\n\n<!-- mecha:rules:begin") and "- Never push to main." in text
    share(store, ["r-lang", "r-pu"], str(repo))  # a global rule, and a prefix of one shared already
    text = (repo / "CLAUDE.md").read_text()
    assert text.count("- Never push to main.") == 1 and "- Answer in English." in text and "make test" not in text
    assert [r.id for r in store.learned_rules("behavior", str(repo))] == ["r-push", "r-test"]


def test_agents_md_is_written_too_when_the_team_has_one(repo: Path, tmp_path: Path) -> None:
    store = LearningStore.open(tmp_path / "learning")
    write_learned_rules(store, "behavior", [Rule(text="Never push to main.", id="r-push")], str(repo))
    (repo / "AGENTS.md").write_text("# Agents\n")
    done = share(store, ["r-push"], str(repo))
    assert [Path(p).name for p, _ in done.files] == ["CLAUDE.md", "AGENTS.md"]
    assert "- Never push to main." in (repo / "AGENTS.md").read_text()


def test_an_unknown_or_ambiguous_rule_is_refused_by_name_and_nothing_is_written(repo: Path, tmp_path: Path) -> None:
    store = LearningStore.open(tmp_path / "learning")
    write_learned_rules(store, "behavior", [Rule(text="A.", id="r-a1"), Rule(text="B.", id="r-a2")], str(repo))
    with pytest.raises(NotFound, match="'r-zz'"):
        share(store, ["r-zz"], str(repo))
    with pytest.raises(Ambiguous, match="r-a1, r-a2"):
        share(store, ["r-a"], str(repo))
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("where", ["no-repository", "missing/folder"])
def test_a_folder_in_no_repository_is_refused_by_name_and_nothing_is_made(tmp_path: Path, where: str) -> None:
    # Pins: a folder outside any git repository got a CLAUDE.md of its own
    # (and one that did not exist was created, parents and all), with a
    # `git add` to run that could only fail: sharing is for a team's
    # tracked files, and such a folder has none.
    store = LearningStore.open(tmp_path / "learning")
    write_learned_rules(store, "behavior", [Rule(text="Answer in English.", id="r-lang")])
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    folder = outside / where
    if where == "no-repository":
        folder.mkdir()
    with pytest.raises(ExportFailed, match=f"{folder} is in no git repository"):
        share(store, ["r-lang"], str(folder))
    assert [p.relative_to(outside).as_posix() for p in outside.rglob("*")] == (["no-repository"] if where == "no-repository" else [])


def test_the_commit_to_paste_runs_only_git_and_spells_out_hidden_text(tmp_path: Path) -> None:
    # Pins: the commit command built with shlex.quote by hand beside the
    # project's one builder of commands to paste, handing the person a rule's
    # bidi control inside `commit -m` where they could not read it.
    from mecha.core.agents.share import commit_command

    root = team_repository(tmp_path / "it's; touch PWNED; $(touch PWNED2) `touch PWNED3`", "# Team\n")
    store = LearningStore.open(tmp_path / "learning")
    write_learned_rules(store, "behavior", [Rule(text="Never push\u202e to main.", id="r-push")], str(root))
    done = share(store, ["r-push"], str(root))
    command = commit_command(done)
    assert command is not None and "\u202e" not in command, command
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run(["sh", "-c", command], cwd=tmp_path, env=env, check=True, capture_output=True)
    assert not list(tmp_path.rglob("PWNED*")), "the pasted command ran more than git"
    assert git(root, "log", "-1", "--format=%s") == "Share learned rules: Never push\\u202e to main.\n"
    assert git(root, "status", "--porcelain") == ""


def test_a_rule_with_a_hidden_character_is_shared_once_spelled_out(repo: Path, tmp_path: Path) -> None:
    # Pins: the file holding the rule spelled out, each later share reading
    # that back as another rule and adding the same rule again.
    store = LearningStore.open(tmp_path / "learning")
    write_learned_rules(store, "behavior", [Rule(text="Never push\u202e to main.", id="r-push")], str(repo))
    share(store, ["r-push"], str(repo))
    share(store, ["r-push"], str(repo))
    text = (repo / "CLAUDE.md").read_text()
    assert "\u202e" not in text and text.count("- Never push\\u202e to main.") == 1, text
