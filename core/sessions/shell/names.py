"""Which program a command's first word names, and how a person names it.

`/usr/bin/git` is git; `./build/bench` is a program of the project's own
tree (its code, as its tests are); `~/android-sdk/emulator/emulator` is a
program known only by the person's word for its name (`Bash(emulator)`);
`$TOOL` is a program known only when the line runs. A trust entry names a
program, or a program and its subcommand for a program whose subcommand
decides (`Bash(git fetch)`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mecha.core.sessions.shell.options import Word
from mecha.core.sessions.shell.programs import NETWORK, SUBCOMMANDS

#: Directories whose programs are taken by their name (`/usr/bin/git` is git);
#: any other path is a program nobody listed.
SYSTEM_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin", "/opt/homebrew/bin"})
#: A project's own environment: `.venv/bin/pytest`, `node_modules/.bin/jest`.
_ENV_BIN = re.compile(r"(?:.*/)?(?:\.?venv|\.tox/[^/]+|\.nox/[^/]+)/bin|(?:.*/)?node_modules/\.bin")
#: A program's name as a trust entry spells it.
_COMMAND_NAME = re.compile(r"[\w.+:-]+")
#: Python's interpreters by name: `python`, `python3`, `python3.12`.
PYTHON = re.compile(r"python(?:\d(?:\.\d+)?)?")


def in_tree(word: Word) -> bool:
    """A relative path with no `..`: inside the folder the command runs in."""
    return bool(word) and word is not None and not word.startswith(("/", "~", "-")) and "$" not in word and ".." not in word.split("/")


def project_program(word: Word) -> bool:
    """A program the project holds or built, run by its path from inside
    the tree (`./build/bench`, `tests/unit_tests`, `./configure`): its own
    code, as its tests are. A project environment's folder (`.venv/bin`,
    `node_modules/.bin`) is not this: what is installed there is known by
    its name. Nor is a program named like a network client (`tools/curl`)."""
    if not word or "/" not in word or not in_tree(word):
        return False
    folder, _, name = word.rpartition("/")
    if not name or _ENV_BIN.fullmatch(folder):
        return False
    return name not in NETWORK


def program_name(word: Word) -> str | None:
    """`git` for `git` and `/usr/bin/git`; `None` for a program that is not
    known from the line, or a path outside the system's and a project
    environment's program folders."""
    if not word:
        return None
    if "/" not in word:
        return word
    folder, _, name = word.rpartition("/")
    if folder in SYSTEM_DIRS or _ENV_BIN.fullmatch(folder):
        return name or None
    return None


def outside_program(word: Word) -> str | None:
    """The name of a program run by a path outside the system's and the
    project's folders (`/home/u/android-sdk/emulator/emulator` →
    `emulator`), by which a person may trust it (`Bash(emulator)`); `None`
    for a word that is no such path, or whose name is a network client's."""
    if not word or "/" not in word or word.endswith("/"):
        return None
    name = word.rpartition("/")[2]
    if not _COMMAND_NAME.fullmatch(name) or name in NETWORK:
        return None
    return name


def first_operand(args: Sequence[Word]) -> str | None:
    """The first word that is not an option (`None` past a word known only
    when it runs)."""
    for arg in args:
        if arg is None:
            return None
        if not arg.startswith("-"):
            return arg
    return None


def entry_for(name: str, sub: str | None) -> str:
    """The trust entry that names `name` (with its subcommand, for a program
    whose subcommand decides)."""
    if sub is not None and (name in SUBCOMMANDS or name == "git") and not sub.startswith("-"):
        return f"Bash({name} {sub})"
    return f"Bash({name})"
