"""Two projects end to end: real processes, real git repositories, real
files, the scripted model over real HTTP.

One repository's sessions reach the sidecar as a harness hands them over
(`mecha/sessionEnded` with `project`), the other's as Claude Code wrote
them (imported, each session's `cwd` naming it). Learned, accepted and
exported, each project's lesson reaches that project alone; the lesson both
share is proposed for promotion, never applied, and once accepted reaches
both from the global rules.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.ccfixture import Claude, text
from tests.model_server import lesson_for

from .conftest import CLEAN, WAIT_S, model_options, multi_steer_session

SHARED = "Run the tests before you say you are done."
ONLY_APP = "Indent with two spaces in this repository."
ALSO_APP = "Keep the README to one screen."
ONLY_TOOL = "Write every commit subject in the imperative."
ALSO_TOOL = "Never touch the vendored code under third_party."


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path.resolve()


@pytest.fixture
def cli(env, store_dir, tmp_path, server):
    def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        run_env = {**env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": server.url, "MECHA_MODEL": "scripted-model"}
        return subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), *argv],
            env=run_env, cwd=cwd or tmp_path, capture_output=True, text=True, timeout=WAIT_S * 2,
        )

    return run


def _claude_session(cwd: Path, said: list[str]) -> bytes:
    """A Claude Code session run in `cwd`: the person's follow-ups `said`."""
    cc = Claude(session="7d3e9c21-5a4b-4c6d-8e7f-0a1b2c3d4e5f", cwd=str(cwd))
    cc.user("Prepare the release branch.")
    cc.assistant(text("The release branch is ready."))
    for n, words in enumerate(said):
        cc.user(words)
        cc.assistant(text(f"Understood ({n})."))
    return cc.bytes()


def _json(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _lesson(words: str) -> str:
    return lesson_for(words, edit=False)


def test_two_projects_learn_apart_export_apart_and_share_only_by_promotion(cli, spawn, server, store_dir, tmp_path):
    home = tmp_path / "home"
    app, tool = git_repo(tmp_path / "src" / "app"), git_repo(tmp_path / "src" / "tool")

    # The app's run, handed over by a harness that names where it ran (a sub-folder).
    (app / "web").mkdir()
    sidecar = spawn()
    sidecar.initialize(store_dir, model=model_options(server))
    ended = sidecar.request("mecha/sessionEnded", {
        "session_id": "run-app", "messages": multi_steer_session([SHARED, ONLY_APP, ALSO_APP]),
        "taint_timeline": CLEAN, "project": str(app / "web"),
    })
    assert ended["interventions"] == 3 and ended["job"] is not None
    assert sidecar.job_finished(ended["job"]["id"])["state"] == "done"
    sidecar.shutdown()

    # The tool's session, as Claude Code recorded it, imported.
    folder = home / ".claude" / "projects" / "-src-tool"
    folder.mkdir(parents=True)
    (folder / "7d3e9c21-5a4b-4c6d-8e7f-0a1b2c3d4e5f.jsonl").write_bytes(_claude_session(tool, [SHARED, ONLY_TOOL, ALSO_TOOL]))
    imported = cli("import", "claude")
    assert imported.returncode == 0, imported.stderr
    assert "3 reflection(s) written (3 learnable)" in imported.stdout

    # One learn: a proposal per project, each from its own reflections.
    learned = cli("learn", "behavior")
    assert learned.returncode == 0, learned.stderr
    assert f"project {app}: proposal" in learned.stdout and f"project {tool}: proposal" in learned.stdout
    proposals = {p["project"]: p for p in _json(cli("--json", "proposals"))["proposals"]}
    assert set(proposals) == {str(app), str(tool)}
    app_rules = [r["text"] for r in proposals[str(app)]["rules"]]
    assert sorted(app_rules) == sorted(_lesson(s) for s in (SHARED, ONLY_APP, ALSO_APP))
    shown = cli("proposals", "show", proposals[str(tool)]["id"])
    assert f"scope: project {tool}" in shown.stdout and _lesson(ONLY_APP) not in shown.stdout

    first = cli("proposals", "accept", proposals[str(app)]["id"])
    assert first.returncode == 0, first.stderr
    assert "filed promotion" not in first.stdout
    second = _json(cli("--json", "proposals", "accept", proposals[str(tool)]["id"]))
    [promotion] = second["promotions"]
    assert promotion["promoted_from"] == [str(app), str(tool)] and promotion["status"] == "pending"
    assert [r["text"] for r in promotion["rules"]] == [_lesson(SHARED)]
    # Filed, never applied: no global rule yet.
    assert not (store_dir / "rules" / "behavior.learned.toml").exists()

    def block(where: Path) -> str:
        return _json(cli("--json", "block", "--project", str(where)))["block"] or ""

    in_app, in_tool = block(app / "web"), block(tool)
    assert _lesson(ONLY_APP) in in_app and _lesson(ONLY_TOOL) not in in_app
    assert _lesson(ONLY_TOOL) in in_tool and _lesson(ONLY_APP) not in in_tool
    assert _json(cli("--json", "block", cwd=tmp_path))["block"] is None, "outside both: no project's rules"

    exported = cli("export", "claude")
    assert exported.returncode == 0, exported.stderr
    # By default each project's rules go where Claude Code reads the person's own instructions.
    app_md, tool_md = (app / "CLAUDE.local.md").read_text(), (tool / "CLAUDE.local.md").read_text()
    assert not (app / "CLAUDE.md").exists() and not (tool / "CLAUDE.md").exists(), "the team's file is left alone"
    assert _lesson(ONLY_APP) in app_md and _lesson(ALSO_APP) in app_md and _lesson(ONLY_TOOL) not in app_md
    assert _lesson(ONLY_TOOL) in tool_md and _lesson(ONLY_APP) not in tool_md
    assert not (home / ".claude" / "CLAUDE.md").exists(), "no global rule yet: no global file made for nothing"

    # The person says the shared lesson holds everywhere.
    promoted = cli("proposals", "accept", promotion["id"], "--global")
    assert promoted.returncode == 0, promoted.stderr
    in_app, in_tool = block(app), block(tool)
    for inside in (in_app, in_tool):
        assert inside.count(_lesson(SHARED)) == 1
        global_part = inside.split("(this project)")[0]
        assert _lesson(SHARED) in global_part, "from the global rules, ahead of the project's"
    assert _lesson(ONLY_APP) in in_app and _lesson(ONLY_TOOL) in in_tool

    again = cli("export", "claude")
    assert again.returncode == 0, again.stderr
    assert _lesson(SHARED) in (home / ".claude" / "CLAUDE.md").read_text()
    assert _lesson(SHARED) not in (app / "CLAUDE.local.md").read_text(), "moved out of the project's file"
    agents = cli("export", "agents", "--project", str(tool))
    assert agents.returncode == 0, agents.stderr
    tool_agents = (tool / "AGENTS.md").read_text()
    assert tool_agents.index(_lesson(SHARED)) < tool_agents.index(_lesson(ONLY_TOOL)) and _lesson(ONLY_APP) not in tool_agents

    log = subprocess.run(["git", "-C", str(store_dir), "log", "--format=%s"], capture_output=True, text=True, check=True)
    assert re.search(r"^propose promoting a behavior lesson to the global rules", log.stdout, re.M)
