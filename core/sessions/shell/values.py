"""What an expansion stands for, where the line itself says.

A word spelled through an expansion is unknown until the line runs, and the
reader fails closed on an unknown word wherever it could be an option or a
program (`make -j$(nproc)` once read as "make, given something unknown").
But some expansions are known from the line alone, as bash would know them:

- **a substitution of a program that prints one plain value**: `$(nproc)`
  is a number, `$(pwd)` and `$(git rev-parse --show-toplevel)` the
  project's folder, `$(git rev-parse HEAD)` a name, `$(which gcc)` the
  program `gcc` itself. The reader stands a representative value in for it
  (`STAND_INS`): a value of the same shape, never an option, never another
  program. Every other substitution stays unknown; what it runs is still
  walked and judged.
- **a variable the line set** before it, for certain (`X=build; ./$X/app`),
  or a `for` loop's variable, one value of its list at a time.

And `PATH` (`LD_LIBRARY_PATH`, …): a change that only adds absolute folders
outside the project (`/usr/local/cuda-12.6/bin`) leaves programs what their
names say; one that adds a folder of the project (`./bin`, `$(pwd)/tools`)
makes a program run after it possibly the project's own, judged as a program
of the project's tree is. A temporary folder (`/tmp/x`) is where downloads
land, not an installation: untrusted, as is any folder the line does not show.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import Enum

from mecha.core.sessions.shell.options import Word

#: What a substituted program prints, by shape: the stand-in for it.
NUMBER = "2"
PROJECT_FOLDER = "."
NAME = "value"

#: `git rev-parse` options whose answer is a plain name or hash.
_GIT_NAMES = frozenset({"HEAD", "--short", "--abbrev-ref", "--verify", "--symbolic-full-name"})


def stand_in(argv: Sequence[Word]) -> str | None:
    """A value of the shape `argv` prints, when it prints one plain value
    the reader can stand in for; `None` otherwise (its output is unknown)."""
    if not argv or argv[0] is None or any(a is None for a in argv):
        return None
    name, args = argv[0], [a for a in argv[1:] if a is not None]
    if name in ("nproc", "getconf") or (name == "id" and args[:1] in (["-u"], ["-g"])):
        return NUMBER
    if name == "pwd" or (name == "git" and args == ["rev-parse", "--show-toplevel"]):
        return PROJECT_FOLDER
    if name == "git" and args[:1] == ["rev-parse"] and set(args[1:]) <= _GIT_NAMES | {"main", "master", "origin/main"}:
        return NAME
    if name == "git" and args in (["branch", "--show-current"], ["symbolic-ref", "--short", "HEAD"]):
        return NAME
    if name in ("whoami", "hostname") and not args:
        return NAME
    if name == "uname" and all(re.fullmatch(r"-[srmpio]+", a) for a in args):
        return NAME
    if name == "date" and all(a.startswith("+%") for a in args):
        return NAME
    if name == "which" and len(args) == 1 and re.fullmatch(r"[\w.+-]+", args[0]) and not args[0].startswith("-"):
        return args[0]  # `$(which gcc)` runs what `gcc` runs
    return None


#: Variables that list folders programs (or their libraries) are found in.
PATH_LISTS = frozenset({"PATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "DYLD_FALLBACK_LIBRARY_PATH"})
#: Folders anyone may write to, where a download lands: not an installation.
_TEMPORARY = re.compile(r"/(?:tmp|var/tmp|dev/shm)(?:/|$)")
#: A project environment's program folder: programs there are known by name.
_ENV_BIN = re.compile(r"(?:\./)?(?:\.?venv|\.tox/[^/:]+|\.nox/[^/:]+)/bin/?|(?:\./)?node_modules/\.bin/?")
#: What the reader writes for the variable's own earlier value (`$PATH`).
OLD_VALUE = "\x00"


class PathChange(Enum):
    """What a `PATH=…` assignment does to the programs run after it."""

    UNCHANGED = "adds only folders outside the project"
    PROJECT = "adds a folder of the project"
    TEMPORARY = "adds a temporary folder, where downloads land: a program run after it may be anyone's"
    UNKNOWN = "sets a variable that changes which program runs"


def path_change(value: str | None) -> PathChange:
    """Judge a folder list, its earlier value spelled `OLD_VALUE`, the home
    folder `~`, and any part known only when it runs making the value `None`."""
    if value is None:
        return PathChange.UNKNOWN
    change = PathChange.UNCHANGED
    for part in value.split(":"):
        if part == OLD_VALUE or _ENV_BIN.fullmatch(part):
            continue
        if OLD_VALUE in part:
            return PathChange.UNKNOWN
        if _TEMPORARY.match(part):
            return PathChange.TEMPORARY
        if ".." in part.split("/"):
            return PathChange.UNKNOWN  # a folder beside the project's, or above it
        if not part.startswith(("/", "~")):
            change = PathChange.PROJECT  # `./bin`, `bin`, and an empty part: the current folder
    return change
