"""A folder that names the person is never named in a prompt: a session run
in the home folder was told it ran in the project "cwtrocks" — the person's
login — and the learner was told the same. Read through the real Reflector
and Learner, with the login and home folder set as a person's shell sets
them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mecha.core.domain.reflexion import Evidence
from mecha.core.learning.consolidation import Learner
from mecha.core.learning.framing import (
    HOME_FOLDER_WORDS,
    NAMED_REPOSITORY_WORDS,
    OUTSIDE_REPOSITORY_WORDS,
    names_the_person,
)
from mecha.core.learning.reflection import Reflector
from mecha.core.learning.scope import project_of_cwd
from mecha.core.sessions.mining import Intervention, Trigger
from tests.fakes import ScriptedProvider

LOGIN = "cwtrocks"
LESSON = json.dumps({"skip": False, "reflexion": "Ask before deleting files.", "error_type": "overreach", "confidence": 0.8})
NO_RULES = '{"rules": [], "dropped": []}'


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / LOGIN
    folder.mkdir()
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(name, LOGIN)
    monkeypatch.setenv("HOME", str(folder))
    return folder


def steer() -> Intervention:
    return Intervention(trigger=Trigger.STEER, context="Its last call: Bash: rm -rf build/",
                        text="don't delete build/, it is cached", aftermath="Stopped.", at=3)


async def prompts_for(project: str) -> tuple[str, str]:
    """What the reflector and the learner are shown for a lesson of `project`."""
    reflector = ScriptedProvider(LESSON)
    await Reflector(reflector).reflect(steer(), Evidence.FULL, project=project)
    learner = ScriptedProvider(NO_RULES)
    await Learner(learner).learn("behavior", [], [], [], project=project)
    return reflector.prompts(), learner.prompts()


async def test_a_session_in_the_home_folder_is_told_it_ran_in_the_home_folder_never_the_login(home: Path):
    # Pins: 'this session ran in the project "cwtrocks"' for a session run in ~.
    project = project_of_cwd(str(home))
    assert project is not None
    for seen in await prompts_for(project):
        assert LOGIN not in seen
        assert HOME_FOLDER_WORDS in seen


async def test_a_folder_named_like_the_login_is_named_generically(home: Path):
    notes = home / "work" / f"{LOGIN}-notes"
    notes.mkdir(parents=True)
    reflected, learned = await prompts_for(str(notes))
    assert LOGIN not in reflected and LOGIN not in learned
    assert f"this session ran in {OUTSIDE_REPOSITORY_WORDS}" in reflected
    assert f"ONE FOLDER, {OUTSIDE_REPOSITORY_WORDS}" in learned and f"Scope: one folder, {OUTSIDE_REPOSITORY_WORDS}" in learned


async def test_a_repository_named_after_the_person_is_called_that(home: Path):
    profile = home / "src" / LOGIN
    (profile / ".git").mkdir(parents=True)
    project = project_of_cwd(str(profile / "docs"))
    assert project == str(profile.resolve())
    reflected, learned = await prompts_for(project)
    assert LOGIN not in reflected + learned and NAMED_REPOSITORY_WORDS in reflected and NAMED_REPOSITORY_WORDS in learned


async def test_a_project_under_the_home_folder_keeps_its_name(home: Path):
    # The generic name is for folders that say who the person is, not for every project they have.
    repo = home / "src" / "cuda-bench"
    (repo / ".git").mkdir(parents=True)
    reflected, learned = await prompts_for(str(repo))
    assert 'this session ran in the project "cuda-bench"' in reflected
    assert 'Scope: the project "cuda-bench"' in learned and "may be specific to cuda-bench" in learned
    assert LOGIN not in reflected + learned


@pytest.mark.parametrize(("project", "why"), [
    ("/home/cwtrocks", "home"),
    ("/home/somebody-else/", "home"),
    ("/Users/Dana", "home"),
    ("C:\\Users\\dana", "home"),
    ("/root", "home"),
    ("/srv/me/cwtrocks", "login"),
    ("/srv/CWTROCKS.github.io", "login"),
    ("/srv/dotfiles_cwtrocks", "login"),
    ("/srv/cwtrocks/site", None),
    ("/srv/cwtrocksify", None),
    ("/root/projects/site", None),
    ("/home/cwtrocks/src/mecha", None),
])
def test_which_folders_name_the_person(project: str, why: str | None):
    assert names_the_person(project, LOGIN, "/home/cwtrocks") == why


def test_a_one_letter_login_names_no_folder():
    assert names_the_person("/srv/x-tools", "x", None) is None
    assert names_the_person("/srv/x", "x", None) is None
