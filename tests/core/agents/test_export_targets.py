"""The export per scope: which file is told which rules. Real files, real git
repositories for the projects, a real store."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mecha.core.agents.export_targets import (
    ExportTarget,
    block_for,
    configured_targets,
    export_all,
    project_target,
    scope_targets,
    target_for_file,
)
from mecha.core.domain.rules import Rule
from mecha.core.errors import InvalidInput
from mecha.core.store.learning_store import LearningStore
from tests.builders import write_learned_rules


def git_repo(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return str(path.resolve())


@pytest.fixture
def world(tmp_path: Path) -> tuple[LearningStore, str, str, Path]:
    store = LearningStore.open(tmp_path / "learning")
    app, tool = git_repo(tmp_path / "app"), git_repo(tmp_path / "tool")
    write_learned_rules(store, "behavior", [Rule(text="Ask before deleting anything.", id="r-g")])
    write_learned_rules(store, "behavior", [Rule(text="Indent with two spaces.", id="r-app")], app)
    write_learned_rules(store, "behavior", [Rule(text="Tabs, never spaces.", id="r-tool")], tool)
    home = tmp_path / "home"
    home.mkdir()
    return store, app, tool, home


def test_claude_files_get_their_own_scopes_rules_and_agents_files_the_whole_block(world) -> None:
    # Pins: one repository's convention written into every CLAUDE.md, the
    # global rules repeated in a project's CLAUDE.md that Claude Code reads
    # beside ~/.claude/CLAUDE.md, or an AGENTS.md missing the global rules
    # its agent has no other file for.
    store, app, tool, home = world
    results = export_all(store, scope_targets("claude", [app, tool], home=home))
    assert [(Path(r.path), r.project, r.changed, r.error) for r in results] == [
        (home / ".claude" / "CLAUDE.md", None, True, None),
        (Path(app) / "CLAUDE.md", app, True, None),
        (Path(tool) / "CLAUDE.md", tool, True, None),
    ]
    global_md = (home / ".claude" / "CLAUDE.md").read_text()
    app_md, tool_md = (Path(app) / "CLAUDE.md").read_text(), (Path(tool) / "CLAUDE.md").read_text()
    assert "Ask before deleting" in global_md and "spaces" not in global_md
    assert "Indent with two spaces." in app_md and "Tabs" not in app_md and "Ask before" not in app_md
    assert "Tabs, never spaces." in tool_md and "Indent" not in tool_md
    assert "### behavior (this project)" in app_md

    [agents] = export_all(store, [project_target("agents", app)])
    text = (Path(app) / "AGENTS.md").read_text()
    assert agents.changed and text.index("Ask before deleting") < text.index("Indent with two spaces.")
    assert (block_for(store, project_target("agents", app)) or "") in text and "Tabs" not in text
    assert all(not r.changed for r in export_all(store, scope_targets("claude", [app, tool], home=home), check=True))


def test_a_project_file_is_not_created_for_nothing_but_an_emptied_one_is_updated(world, tmp_path: Path) -> None:
    # Pins: an empty rules section planted in every repository's CLAUDE.md,
    # or a lesson promoted away from a project left in its CLAUDE.md.
    store, app, _, home = world
    bare = git_repo(tmp_path / "bare")
    write_learned_rules(store, "writing", [], bare)
    [skipped] = export_all(store, [project_target("claude", bare)])
    assert not skipped.changed and skipped.error is None and not (Path(bare) / "CLAUDE.md").exists()

    export_all(store, [project_target("claude", app)])
    write_learned_rules(store, "behavior", [], app)
    [emptied] = export_all(store, [project_target("claude", app)])
    assert emptied.changed and "Indent" not in (Path(app) / "CLAUDE.md").read_text()
    assert "(no learned rules are active yet)" in (Path(app) / "CLAUDE.md").read_text()


def test_a_project_whose_folder_is_gone_is_named_and_the_rest_still_export(world, tmp_path: Path) -> None:
    store, app, _, home = world
    gone = str(tmp_path / "moved-away")
    write_learned_rules(store, "behavior", [Rule(text="Keep commits small.", id="r-m")], gone)
    results = export_all(store, scope_targets("claude", [gone, app], home=home))
    by_path = {Path(r.path): r for r in results}
    failed = by_path[Path(gone) / "CLAUDE.md"]
    assert failed.error is not None and failed.error.startswith("ExportFailed: ") and "not there" in failed.error
    assert not Path(gone).exists(), "no folder made for it"
    assert by_path[Path(app) / "CLAUDE.md"].changed and by_path[home / ".claude" / "CLAUDE.md"].changed


def test_a_named_file_is_told_the_rules_of_the_scope_it_is_in(world, tmp_path: Path) -> None:
    store, app, _, home = world
    assert target_for_file("claude", Path(app) / "CLAUDE.md", home=home) == ExportTarget(
        "claude", Path(app) / "CLAUDE.md", app)
    assert target_for_file("claude", Path(app) / ".claude" / "CLAUDE.md", home=home).project == app
    assert target_for_file("claude", Path(app) / "docs" / "CLAUDE.md", home=home).project is None
    # A home folder that is a dotfiles repository keeps its global file global.
    subprocess.run(["git", "init", "-q", str(home)], check=True)
    assert target_for_file("claude", home / ".claude" / "CLAUDE.md", home=home).project is None
    assert target_for_file("agents", Path(app) / "sub" / "AGENTS.md", home=home).project == app


def test_the_export_table_follows_scopes(world, tmp_path: Path) -> None:
    # Pins: `claude = true` writing only ~/.claude/CLAUDE.md once lessons
    # live per project, or into the team's CLAUDE.md rather than the
    # person's own CLAUDE.local.md; a configured AGENTS.md told another
    # project's rules.
    store, app, tool, home = world
    config = tmp_path / "sidecar.toml"
    config.write_text(f'[export]\nclaude = true\nagents = ["{app}/AGENTS.md"]\n')
    targets = configured_targets(config, projects=[app, tool], home=home)
    assert [(t.agent, t.path, t.project) for t in targets] == [
        ("claude", home / ".claude" / "CLAUDE.md", None),
        ("claude", Path(app) / "CLAUDE.local.md", app),
        ("claude", Path(tool) / "CLAUDE.local.md", tool),
        ("agents", Path(app) / "AGENTS.md", app),
    ]
    config.write_text("[export]\nagents = true\n")
    assert [t.path for t in configured_targets(config, projects=[tool], home=home)] == [Path(tool) / "AGENTS.md"]
    config.write_text("[export]\nagents = 5\n")
    with pytest.raises(InvalidInput, match="expected true, false, a file path"):
        configured_targets(config, projects=[], home=home)
