"""`hooks install codex` installs mecha's review skills where Codex reads a
person's skills, and `hooks uninstall codex` removes exactly them. Once a
folder copied by hand; checked here with the real `codex debug
prompt-input`, which prints what Codex would show its model, skills list
included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mecha.core.agents.procedures import skill_program
from mecha.core.agents.skills import SKILL_NAMES
from tests.realparts import manifest

from .conftest import REPO, WAIT_S

SKILLS = REPO / "plugins" / "mecha" / "codex" / "skills"
REVIEW_LISTED = "- mecha-review: Review mecha's pending rule proposals"
WHY_LISTED = "- mecha-why: Say where one of mecha's learned rules came from"


def mecha(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "mecha.sidecar", *argv], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=WAIT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def codex_lists(env: dict[str, str], cwd: Path) -> str:
    shown = subprocess.run([str(manifest("agents")["codex"]), "debug", "prompt-input"], env=env, cwd=cwd,
                           capture_output=True, text=True, timeout=WAIT_S * 2)
    assert shown.returncode == 0, shown.stderr[-2000:]
    return json.dumps(json.loads(shown.stdout))


def test_hooks_install_codex_puts_the_review_skills_where_the_real_codex_lists_them_and_uninstall_takes_exactly_them(
    env, tmp_path
):
    # Pins: the review skills reaching Codex only if a person found the folder and copied it by hand.
    home = Path(env["HOME"])
    project = tmp_path / "work"
    project.mkdir()
    assert REVIEW_LISTED not in codex_lists(env, project)
    mine = home / ".agents" / "skills" / "my-notes"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("---\nname: my-notes\ndescription: Keep my notes tidy.\n---\n\nTidy them.\n")

    said = mecha(env, project, "hooks", "install", "codex").stdout
    folder = home / ".agents" / "skills"
    assert f"{folder}: review skills installed (mecha-review, mecha-why)" in said and "type $mecha-review" in said
    # The checked-in skill, with the program by the absolute path it runs as
    # (Codex's login shell resets PATH).
    program = skill_program()
    for name in SKILL_NAMES:
        expected = (SKILLS / name / "SKILL.md").read_text().replace("`mecha-sidecar ", f"`{program} ")
        assert (folder / name / "SKILL.md").read_text() == expected
    listed = codex_lists(env, project)
    assert REVIEW_LISTED in listed and WHY_LISTED in listed and "- my-notes: Keep my notes tidy." in listed
    assert "already installed, unchanged (mecha-review, mecha-why)" in mecha(env, project, "hooks", "install", "codex").stdout

    # A person's own file beside ours stays, and so does its folder.
    (folder / "mecha-why" / "notes.txt").write_text("mine\n")
    said = mecha(env, project, "hooks", "uninstall", "codex").stdout
    assert f"{folder}: mecha's review skills removed (mecha-review, mecha-why)" in said
    assert "files that are not mecha's stay in" in said
    assert not (folder / "mecha-review").exists()
    assert sorted(p.name for p in (folder / "mecha-why").iterdir()) == ["notes.txt"]
    assert (mine / "SKILL.md").is_file()
    listed = codex_lists(env, project)
    assert REVIEW_LISTED not in listed and WHY_LISTED not in listed and "- my-notes: Keep my notes tidy." in listed


def test_a_folder_of_that_name_that_is_not_mechas_is_left_alone_by_name(env, tmp_path):
    home = Path(env["HOME"])
    theirs = home / ".agents" / "skills" / "mecha-review"
    theirs.mkdir(parents=True)
    (theirs / "SKILL.md").write_text("---\nname: robot-review\ndescription: Someone else's.\n---\n")
    said = mecha(env, tmp_path, "hooks", "install", "codex").stdout
    assert f"mecha-review: {theirs} is not mecha's mecha-review skill; left as it is" in said
    assert "review skills installed (mecha-why)" in said
    assert "robot-review" in (theirs / "SKILL.md").read_text()
    said = mecha(env, tmp_path, "hooks", "uninstall", "codex").stdout
    assert "robot-review" in (theirs / "SKILL.md").read_text() and not (theirs.parent / "mecha-why").exists()


def test_project_scope_installs_into_the_repositorys_skills_folder_which_codex_lists_there(env, tmp_path):
    repo = tmp_path / "src" / "ledger"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    inner = repo / "pkg"
    inner.mkdir()
    said = mecha(env, inner, "hooks", "install", "codex", "--scope", "project").stdout
    assert f"{repo / '.agents' / 'skills'}: review skills installed" in said
    assert not (Path(env["HOME"]) / ".agents").exists()
    assert REVIEW_LISTED in codex_lists(env, inner)
    mecha(env, inner, "hooks", "uninstall", "codex", "--scope", "project")
    assert not (repo / ".agents").exists()
    assert not (repo / ".codex" / "hooks.json").exists() or "mecha" not in (repo / ".codex" / "hooks.json").read_text()


def test_codexs_notice_offers_the_review_skill_installed_in_the_repository(env, store_dir, tmp_path):
    # Pins: skills installed with --scope project, then a notice that never offers them.
    from mecha.core.agents.hooks import HOOK_VERB, MODULE
    from mecha.core.domain.reflexion import Origin, Reflexion
    from mecha.core.store.learning_store import LearningStore
    from tests.model_server import ModelServer, lessons_responder

    agent_env = {**env, "MECHA_LEARNING_DIR": str(store_dir)}
    LearningStore.open(store_dir).append_reflexions([
        Reflexion(id=f"R{n}", domain="behavior", session_id=f"s{n}", trigger="steer", context="ctx", intervention=said,
                  reflexion_text=said, created_at="2026-11-01T00:00:00.000000Z", origin=Origin.CLEAN)
        for n, said in enumerate(["Run the test suite before saying a change is done.",
                                  "Ask before deleting files you did not create.",
                                  "Keep commit messages to one line under 72 characters."])
    ])
    with ModelServer(responder=lessons_responder) as model:
        mecha({**agent_env, "MECHA_MODEL_API": "openai", "MECHA_MODEL_BASE_URL": model.url, "MECHA_MODEL": "m"},
              tmp_path, "learn", "behavior")
    repo = tmp_path / "src" / "ledger"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    inner = repo / "pkg"
    inner.mkdir()
    payload = json.dumps({"session_id": "s", "transcript_path": None, "cwd": str(inner), "source": "startup",
                          "hook_event_name": "SessionStart"})

    def notice() -> str:
        done = subprocess.run([sys.executable, "-P", "-m", MODULE, HOOK_VERB, "codex", "session-start"], input=payload,
                              env=agent_env, cwd=inner, capture_output=True, text=True, timeout=WAIT_S)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return str(json.loads(done.stdout)["systemMessage"])

    assert "$mecha-review" not in notice()
    mecha(agent_env, inner, "hooks", "install", "codex", "--scope", "project")
    assert "type $mecha-review to go through it here" in notice()
