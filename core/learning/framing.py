"""What the reflector's and the learner's prompts say of where a lesson
applies.

A lesson is learned for a scope (`scope`): the global rules, or one
project's. Neither model was told which. The reflector wrote "in this
library, …" without knowing which library; the learner was told only
`Domain: behavior` and to "drop rules too narrow to ever apply again", so a
good rule of one repository ("run the tests with `make check`") read to it
as over-narrow, and it could not tell the two apart. Each prompt now says
the scope in words: global, or the project by name — its directory's name,
never its path, which holds the person's home directory.

A directory's name is not always safe to say either. A session run in the
person's home folder, outside any repository, has that folder as its
project, and its name is the person's login: the reflector was told "this
session ran in the project \"cwtrocks\"", and the learner the same — a
login in every prompt of that scope, and an invitation to write it into a
rule. So a folder that names the person (`names_the_person`: the home
folder, any `/home/<x>`-shaped folder, or a folder whose name is the
login or holds it as a word) is named generically — "the person's home
folder", "a folder outside any repository", "a repository named after the
person" — and never by its name. Failing closed: a project that happens to
share a word with the login loses its name in the prompt, which costs the
model a little context; the other way round costs a login in every prompt.
"""

from __future__ import annotations

import os
import re

GLOBAL_SCOPE_WORDS = "global"

#: How a folder that names the person is called in a prompt instead.
HOME_FOLDER_WORDS = "the person's home folder, outside any repository"
OUTSIDE_REPOSITORY_WORDS = "a folder outside any repository"
NAMED_REPOSITORY_WORDS = "a repository named after the person"

#: A home folder by its shape, whoever owns it: a session imported from
#: another machine names its owner's home, not this login's.
_HOME_SHAPE = re.compile(r"^(?:(?:/home|/Users|[A-Za-z]:/Users)(?:/[^/]+)?|/root)$", re.IGNORECASE)
#: Shorter logins are left alone: a one-letter login would make every
#: folder with that letter as a word nameless.
_MIN_LOGIN = 2


def _normal(path: str) -> str:
    return path.replace("\\", "/").rstrip("/") or "/"


def names_the_person(project: str, login: str | None, home: str | None) -> str | None:
    """Why the folder `project` may not be named in a prompt — `"home"`
    when it is a home folder (the person's `home`, or shaped like one),
    `"login"` when its name is the `login` or holds it as a word
    (`cwtrocks`, `cwtrocks-notes`) — or `None` when its name is safe to
    say. Pure: the caller supplies who the person is (`person`)."""
    path = _normal(project)
    if (home and path == _normal(home)) or _HOME_SHAPE.match(path):
        return "home"
    if login and len(login) >= _MIN_LOGIN:
        name = path.rsplit("/", 1)[-1].lower()
        if name == login.lower() or login.lower() in re.split(r"[^a-z0-9]+", name):
            return "login"
    return None


def person() -> tuple[str | None, str | None]:
    """The login name and home folder of whoever runs this process, as far
    as they can be told (`None` for what cannot). The home folder is
    resolved as a project root is (`layout.project_root`), so the two
    compare."""
    import getpass

    try:
        login: str | None = getpass.getuser()
    except Exception:  # no name in the environment and no password entry
        login = None
    home = os.path.expanduser("~")
    return login, (os.path.realpath(home) if home != "~" else None)


def generic_name(project: str) -> str | None:
    """The words a prompt uses for `project` in place of its name when that
    name would say who the person is (`names_the_person`), else `None`."""
    login, home = person()
    why = names_the_person(project, login, home)
    if why is None:
        return None
    if why == "home":
        return HOME_FOLDER_WORDS
    if os.path.lexists(os.path.join(project, ".git")):
        return NAMED_REPOSITORY_WORDS
    return OUTSIDE_REPOSITORY_WORDS


def project_name(project: str) -> str:
    """How a prompt names a project: the last part of its root directory
    (`/home/pat/src/mecha` → `mecha`), not the path."""
    name = project.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return name or "the project"


def scope_words(project: str | None) -> str:
    """The scope as the learner's prompt states it on its own line."""
    if project is None:
        return f"{GLOBAL_SCOPE_WORDS} — these rules ride in every project the person works in"
    generic = generic_name(project)
    if generic is not None:
        return f"one folder, {generic} — these rules apply only when working in it"
    return f'the project "{project_name(project)}" — these rules apply only when working in it'


def reflector_scope(project: str | None) -> str:
    """The reflector's scope paragraph."""
    if project is None:
        return (
            "Where the lesson applies: this session ran in no particular project, so the lesson "
            "joins the person's global rules, which ride in every project they work in. Write it "
            "so it holds anywhere, and skip a point that only made sense in one codebase."
        )
    generic = generic_name(project)
    if generic is not None:
        return (
            f"Where the lesson applies: this session ran in {generic}, and the lesson joins that "
            "folder's rules only. Write it so it holds for any work there; never name the folder "
            "or the person."
        )
    name = project_name(project)
    return (
        f'Where the lesson applies: this session ran in the project "{name}", and the lesson '
        f"joins that project's rules only. It may name {name}'s own files, commands and "
        "conventions when those are the point; say so by name rather than \"this library\"."
    )


def learner_scope(project: str | None) -> str:
    """The learner's scope paragraph: what a rule of this scope may be, and
    which rules are too narrow for it."""
    if project is None:
        return (
            "These are the person's GLOBAL rules: they ride in every project they work in. Drop or "
            "generalise a rule that only holds in one codebase or one incident."
        )
    generic = generic_name(project)
    if generic is not None:
        return (
            f"These are the rules of ONE FOLDER, {generic}: they ride only in runs there. Keep a rule "
            "that holds for the work done there; drop a rule about one incident that will not come "
            "up again. Never name the folder or the person in a rule."
        )
    name = project_name(project)
    return (
        f'These are the rules of ONE PROJECT, "{name}": they ride only in runs in that project. '
        f"A rule may be specific to {name} — its files, commands, conventions — and that is no "
        "reason to drop it. Drop only a rule about one incident that will not come up again."
    )


def learned_in(lesson_project: str | None, scope: str | None) -> str:
    """The mark a lesson's line carries in the global learner's prompt when
    it was learned in a project (`learning.common`); empty otherwise."""
    if scope is not None or lesson_project is None:
        return ""
    return f' — learned in project "{project_name(lesson_project)}"'


#: What the global learner is told when some of its lessons were learned in
#: projects (`learned_in`, `learning.common`).
LEARNED_IN_NOTE = (
    'Some lessons below are marked "learned in project …": each project had too few lessons for a pass of its '
    "own. Make a global rule of them only where the lessons of two or more projects (or a lesson learned outside "
    "any project) teach the same thing, and word it so it holds in any project; leave a point only one project "
    "taught — it waits for that project's own pass."
)
