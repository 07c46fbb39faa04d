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
"""

from __future__ import annotations

GLOBAL_SCOPE_WORDS = "global"


def project_name(project: str) -> str:
    """How a prompt names a project: the last part of its root directory
    (`/home/pat/src/mecha` → `mecha`), not the path."""
    name = project.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return name or "the project"


def scope_words(project: str | None) -> str:
    """The scope as the learner's prompt states it on its own line."""
    if project is None:
        return f"{GLOBAL_SCOPE_WORDS} — these rules ride in every project the person works in"
    return f'the project "{project_name(project)}" — these rules apply only when working in it'


def reflector_scope(project: str | None) -> str:
    """The reflector's scope paragraph."""
    if project is None:
        return (
            "Where the lesson applies: this session ran in no particular project, so the lesson "
            "joins the person's global rules, which ride in every project they work in. Write it "
            "so it holds anywhere, and skip a point that only made sense in one codebase."
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
    name = project_name(project)
    return (
        f'These are the rules of ONE PROJECT, "{name}": they ride only in runs in that project. '
        f"A rule may be specific to {name} — its files, commands, conventions — and that is no "
        "reason to drop it. Drop only a rule about one incident that will not come up again."
    )
