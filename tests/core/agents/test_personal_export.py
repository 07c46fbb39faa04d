"""The export by default: the person's rules into the person's own files of
each agent they connected, never into a file the team tracks. Real git
repositories, real settings files, a real store."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest

from mecha.core.agents import personal
from mecha.core.agents.export_targets import configured_targets, connected_agents, export_all, personal_targets
from mecha.core.agents.hooks import hook_program, settings_path, with_ours
from mecha.core.domain.rules import Rule
from mecha.core.errors import ExportFailed
from mecha.core.store.learning_store import LearningStore
from tests.builders import write_learned_rules


def git(cwd: Path | str, *argv: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *argv], capture_output=True, text=True, check=True)
    return done.stdout


def team_repo(path: Path) -> str:
    """A repository whose team committed its own CLAUDE.md and AGENTS.md."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    (path / "CLAUDE.md").write_text("# Team\n\nUse the Makefile.\n")
    (path / "AGENTS.md").write_text("# Team\n\nUse the Makefile.\n")
    git(path, "add", ".")
    git(path, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "team")
    return str(path.resolve())


@pytest.fixture
def world(tmp_path: Path) -> tuple[LearningStore, str, Path]:
    store = LearningStore.open(tmp_path / "learning")
    app = team_repo(tmp_path / "app")
    write_learned_rules(store, "behavior", [Rule(text="Ask before deleting anything.", id="r-g")])
    write_learned_rules(store, "behavior", [Rule(text="Indent with two spaces.", id="r-app")], app)
    home = tmp_path / "home"
    home.mkdir()
    return store, app, home


def connect(agent: str, home: Path) -> None:
    path = settings_path(agent, "user", home=home, cwd=home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(with_ours({}, agent, hook_program("/usr/bin/python3"))))


def test_nothing_is_exported_until_an_agent_is_connected_and_then_to_its_own_files_without_configuration(
    world, tmp_path: Path
) -> None:
    # Pins: an accept that ends in the store unless [export] is written by
    # hand, and a person who never connected Codex finding ~/.codex files.
    store, app, home = world
    config = tmp_path / "sidecar.toml"
    assert connected_agents(home, [app]) == []
    assert configured_targets(config, projects=[app], home=home) == []
    connect("claude", home)
    assert connected_agents(home, [app]) == ["claude"]
    targets = configured_targets(config, projects=[app], home=home)
    assert [(t.path, t.project) for t in targets] == [
        (home / ".claude" / "CLAUDE.md", None), (Path(app) / "CLAUDE.local.md", app)]
    connect("codex", home)
    env = {"CODEX_HOME": str(home / ".codex")}
    assert [t.path for t in configured_targets(config, projects=[app], home=home, env=env)][2:] == [
        home / ".codex" / "AGENTS.md", Path(app) / ".codex" / "config.toml"]
    config.write_text("[export]\nclaude = false\n")
    assert [t.agent for t in configured_targets(config, projects=[app], home=home, env=env)] == ["codex", "codex"]


def test_a_persons_project_rules_reach_claude_local_md_and_git_status_shows_nothing(world) -> None:
    # Pins: one person's lessons written into the team's committed CLAUDE.md,
    # which git then shows as changed in every checkout.
    store, app, home = world
    team = (Path(app) / "CLAUDE.md").read_bytes()
    results = export_all(store, personal_targets("claude", [app], home=home))
    assert [(Path(r.path), r.changed, r.error) for r in results] == [
        (home / ".claude" / "CLAUDE.md", True, None), (Path(app) / "CLAUDE.local.md", True, None)]
    assert (Path(app) / "CLAUDE.md").read_bytes() == team
    local = (Path(app) / "CLAUDE.local.md").read_text()
    assert "Indent with two spaces." in local and "Ask before deleting" not in local
    assert "Ask before deleting" in (home / ".claude" / "CLAUDE.md").read_text()
    assert git(app, "status", "--porcelain") == ""
    assert "/CLAUDE.local.md" in (Path(app) / ".git" / "info" / "exclude").read_text().splitlines()
    # Once is enough: a second export adds no second exclude line.
    export_all(store, personal_targets("claude", [app], home=home))
    assert (Path(app) / ".git" / "info" / "exclude").read_text().count("/CLAUDE.local.md") == 1


def test_a_linked_worktree_gets_the_file_too_and_stays_clean(world, tmp_path: Path) -> None:
    # Pins: a worktree whose agent never sees the project's rules, or whose
    # status shows the person's file (its exclude lives in the common dir).
    store, app, home = world
    worktree = tmp_path / "app-wt"
    git(app, "worktree", "add", "-q", str(worktree))
    results = export_all(store, personal_targets("claude", [app], home=home))
    assert all(r.error is None for r in results)
    assert "Indent with two spaces." in (worktree / "CLAUDE.local.md").read_text()
    assert git(worktree, "status", "--porcelain") == "" and git(app, "status", "--porcelain") == ""


def test_a_file_the_team_tracks_is_never_written_as_the_persons(world) -> None:
    # Pins: a committed CLAUDE.local.md (some teams do) rewritten, and shown
    # as changed, by one person's accept.
    store, app, home = world
    (Path(app) / "CLAUDE.local.md").write_text("team's local notes\n")
    git(app, "add", "CLAUDE.local.md")
    git(app, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "local")
    _, mine = export_all(store, personal_targets("claude", [app], home=home))
    assert mine.error is not None and "tracks this file" in mine.error and "export claude FILE" in mine.error
    assert (Path(app) / "CLAUDE.local.md").read_text() == "team's local notes\n"
    assert git(app, "status", "--porcelain") == ""


def test_codex_is_told_the_global_rules_in_its_home_and_a_projects_in_its_project_configuration(
    world, tmp_path: Path
) -> None:
    # Pins: Codex rules written into the team's AGENTS.md, or a project
    # configuration that loses the person's own keys and comments.
    store, app, home = world
    env = {"CODEX_HOME": str(home / "codex-home")}
    config = Path(app) / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('# mine\nmodel = "o4"\n\n[tools]\nweb = true\n')
    results = export_all(store, personal_targets("codex", [app], home=home, env=env))
    assert [(Path(r.path), r.error) for r in results] == [
        (home / "codex-home" / "AGENTS.md", None), (config, None)]
    assert "Ask before deleting" in (home / "codex-home" / "AGENTS.md").read_text()
    text = config.read_text()
    parsed = tomllib.loads(text)
    assert parsed["model"] == "o4" and parsed["tools"] == {"web": True} and text.startswith("# mine\n")
    assert "Indent with two spaces." in parsed["developer_instructions"]
    assert parsed["developer_instructions"].startswith("## Learned rules")
    assert (Path(app) / "AGENTS.md").read_text() == "# Team\n\nUse the Makefile.\n"
    assert git(app, "status", "--porcelain") == ""
    # A checkout with no .codex folder yet gets one, kept out of git too.
    other = team_repo(tmp_path / "other")
    write_learned_rules(store, "behavior", [Rule(text="Tabs, never spaces.", id="r-o")], other)
    results = export_all(store, personal_targets("codex", [other], home=home, env=env))
    assert [r.error for r in results] == [None, None]
    assert "Tabs, never spaces." in (Path(other) / ".codex" / "config.toml").read_text()
    assert git(other, "status", "--porcelain") == ""
    # No project rule any more: the key goes, and the person's bytes are as they were.
    write_learned_rules(store, "behavior", [], app)
    export_all(store, personal_targets("codex", [app], home=home, env=env))
    assert config.read_text() == '# mine\nmodel = "o4"\n\n[tools]\nweb = true\n'


def test_codex_instructions_the_person_wrote_are_not_replaced() -> None:
    with pytest.raises(ExportFailed, match="developer_instructions is set by you"):
        personal.codex_config_after(b'developer_instructions = "be terse"\n', "## Learned rules\n\n- x", name="c")
    assert personal.codex_config_after(None, None, name="c") is None


def test_codex_reads_a_projects_configuration_only_when_the_project_is_trusted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(f'[projects."{tmp_path}"]\ntrust_level = "trusted"\n')
    assert personal.codex_trusts(str(tmp_path / "app"), home, env={})
    assert not personal.codex_trusts("/elsewhere", home, env={})
