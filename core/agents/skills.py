"""mecha's review skills for Codex: installed where Codex reads a person's
skills, and removed again — exactly them.

The review inside Codex is two skills (`mecha-review`, `mecha-why`),
rendered from the same procedures as the Claude Code plugin's commands
(`procedures`, whose sources ship in the package through the
`procedure_files` link). A person once had to find the skills' folder and
copy it by hand; `hooks install codex` now puts them where Codex looks, and
`hooks uninstall codex` takes them out. Installed, a skill names the
program by the absolute path it runs as (`procedures.skill_program`): Codex
runs a skill's commands in a login shell that resets `PATH`, where a bare
`mecha-sidecar` is "command not found". The copies checked in under
`plugins/mecha/codex/skills` say `mecha-sidecar`, for a person who copies
them by hand with the program on their `PATH`.

Where: Codex (0.169, checked with the real `codex debug prompt-input`) lists
a person's skills from `$HOME/.agents/skills` — the open agent-skills
location its documentation names for user skills — and a repository's from
`<repo>/.agents/skills`; the older `$CODEX_HOME/skills` still works and is
not written to. Scope `user` installs under the home folder, `project`
under the project's root, as the hooks' own scopes do.

What is ours: a folder named like one of our skills whose `SKILL.md` names
that skill in its front matter. Install writes our files into it (over an
older version of ours), and refuses — by name, writing nothing for it — a
folder of that name that is someone else's. Uninstall removes our files
from our folders, and the folder when nothing else is left in it; a file a
person added beside ours stays, and so does its folder.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from mecha.core.environment.agents import CODEX
from mecha.core.environment.confined import reach_problem, read_file, rewrite_file
from mecha.core.errors import ExportFailed, InvalidInput
from mecha.core.store.layout import project_root

from . import procedures

#: Where the procedures the skills render ship.
SOURCE = procedures.SOURCE
#: Our skills, as a person mentions them (`$mecha-review`).
SKILL_NAMES = tuple(f"mecha-{name}" for name in procedures.PROCEDURES)
SKILL_FILE = "SKILL.md"
#: Codex's folder for skills, under the home folder or a project's root.
SKILLS_HOME: tuple[str, ...] = CODEX.skills_home or ()
SKILLS_PROJECT: tuple[str, ...] = CODEX.skills_project or ()

_NAME_RE = re.compile(r"\A---\s*\n(?:.*\n)*?name:\s*['\"]?([\w.-]+)['\"]?\s*\n(?:.*\n)*?---", re.MULTILINE)


class SkillsChange(msgspec.Struct, kw_only=True):
    """What an install or uninstall did to the skills folder."""

    #: The folder Codex reads the skills from.
    folder: str
    #: The skills installed (or updated) or removed.
    changed: list[str] = msgspec.field(default_factory=list)
    #: Already as we would write them.
    unchanged: list[str] = msgspec.field(default_factory=list)
    #: Skills left alone, each with why.
    left: list[str] = msgspec.field(default_factory=list)


def skills_folder(scope: str, *, home: Path, cwd: Path) -> Path:
    """Where Codex reads skills for `scope`: the person's (`user`) or the
    project's `cwd` is in (`project`)."""
    if scope == "user":
        return home.joinpath(*SKILLS_HOME)
    if scope == "project":
        return Path(project_root(cwd)).joinpath(*SKILLS_PROJECT)
    raise InvalidInput(f"unknown scope {scope!r}: user or project")


def skill_name(text: str) -> str | None:
    """The `name:` of a SKILL.md's front matter, or `None`."""
    m = _NAME_RE.match(text)
    return m.group(1) if m else None


def shipped(program: str = procedures.PROGRAM, source: Path = SOURCE) -> dict[str, dict[str, bytes]]:
    """Each of our skills, running `program`: its files (relative name → bytes)."""
    return {
        f"mecha-{name}": {SKILL_FILE: procedures.render(procedures.source_text(name, source), CODEX.name, name,
                                                        program).encode()}
        for name in procedures.PROCEDURES
    }


def _ours(folder: Path, name: str) -> bool | None:
    """Whether the skill folder `folder` is our skill `name` (`None`: not there)."""
    if not folder.exists() and not folder.is_symlink():
        return None
    if folder.is_symlink() or not folder.is_dir():
        return False
    try:
        text = (read_file(folder / SKILL_FILE) or b"").decode("utf-8")
    except (ExportFailed, UnicodeDecodeError):  # a FIFO there, say: not ours, and not waited on
        return False
    return skill_name(text) == name


def _write(path: Path, data: bytes, within: Path | None) -> None:
    """One skill file written whole, by the writer every file of the
    person's goes through (`confined.rewrite_file`): confined to `within` (a
    project's checkout) against links, other users' folders and FIFOs."""
    rewrite_file(path, lambda raw: data, appends=False, within=within, what="the skill")


def install_skills(
    target: Path, program: str = procedures.PROGRAM, source: Path = SOURCE, *, within: Path | None = None
) -> SkillsChange:
    """Our skills, running `program`, written into the skills folder
    `target`; with `within` (a project's checkout), refused by name where a
    link or another user's folder would take a file outside it, before
    anything is written."""
    change = SkillsChange(folder=str(target))
    for name, files in shipped(program, source).items():
        folder = target / name
        if within is not None:
            for rel in files:
                problem = reach_problem(folder / rel, within)
                if problem is not None:
                    raise ExportFailed(f"{folder / rel}: {problem}; no skill was written. Mecha writes a project's "
                                       "files only inside the project: remove the link, then run this again")
        if _ours(folder, name) is False:
            change.left.append(f"{name}: {folder} is not mecha's {name} skill; left as it is (move it, then run this again)")
            continue
        stale = [rel for rel, data in files.items() if _read(folder / rel) != data]
        if not stale:
            change.unchanged.append(name)
            continue
        for rel in stale:
            _write(folder / rel, files[rel], within)
        change.changed.append(name)
    return change


def _read(path: Path) -> bytes | None:
    try:
        return read_file(path)
    except ExportFailed:
        return None


def uninstall_skills(target: Path, source: Path = SOURCE, *, within: Path | None = None) -> SkillsChange:
    """Our skills taken out of the skills folder `target`: our files from
    our folders, each folder with them when nothing else is in it. With
    `within`, a folder a link takes outside it is left and named."""
    change = SkillsChange(folder=str(target))
    for name, files in shipped(source=source).items():
        folder = target / name
        problem = None if within is None else reach_problem(folder / SKILL_FILE, within)
        if problem is not None:
            change.left.append(f"{name}: {folder / SKILL_FILE}: {problem}; left as it is")
            continue
        ours = _ours(folder, name)
        if ours is None:
            continue
        if not ours:
            change.left.append(f"{name}: {folder} is not mecha's {name} skill; left as it is")
            continue
        for rel in [*files, SKILL_FILE]:
            (folder / rel).unlink(missing_ok=True)
        for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            _rmdir_if_empty(sub)
        if _rmdir_if_empty(folder):
            change.changed.append(name)
        else:
            change.changed.append(name)
            change.left.append(f"{name}: files that are not mecha's stay in {folder}")
    if change.changed and _rmdir_if_empty(target):
        _rmdir_if_empty(target.parent)  # `.agents`, when the skills were all it held
    return change


def _rmdir_if_empty(folder: Path) -> bool:
    try:
        folder.rmdir()
    except OSError:
        return not folder.exists()
    return True
