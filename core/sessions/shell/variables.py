"""Variables a line sets that change which program runs.

`PATH=… ls`, `LD_PRELOAD=… cat`, `GIT_PAGER='curl …' git log`: an
assignment to one of these, in a prefix, an `export` or on its own, makes
the program that runs something other than what the line names, so it is
untrusted — unless it names nothing (`GIT_AUTHOR_NAME`), or sets an editor
or pager to a program that only passes text on (`GIT_EDITOR=true`).
"""

from __future__ import annotations

import re

#: Variables that change which program runs or make one run another.
RUNNING_VARIABLES = re.compile(
    r"PATH|LD_\w+|DYLD_\w+|BASH_ENV|ENV|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|IFS|MANPAGER|LESSOPEN|LESSCLOSE|"
    r"GIT_\w+|PYTHONSTARTUP|PYTHONHOME|NODE_OPTIONS|PERL5OPT|PERL5LIB|RUBYOPT|RUSTC|RUSTC_WRAPPER|"
    r"CARGO_BUILD_RUSTC_WRAPPER|CARGO_TARGET_\w+_RUNNER|SSH_ASKPASS|PAGER|EDITOR|VISUAL"
)
#: Of those, the git ones that name no program.
_GIT_PLAIN_VARIABLES = re.compile(
    r"GIT_(?:DIR|WORK_TREE|INDEX_FILE|OPTIONAL_LOCKS|TERMINAL_PROMPT|(?:AUTHOR|COMMITTER)_(?:NAME|EMAIL|DATE)|TRACE\w*|FLUSH|PAGER_IN_USE)"
)
#: Editor and pager variables set to a program that does nothing but pass
#: text on (`GIT_EDITOR=true git rebase --continue`, `PAGER=cat git log`).
_EDITOR_VARIABLES = frozenset({"GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "EDITOR", "VISUAL", "GIT_PAGER", "PAGER", "MANPAGER"})
_PASSIVE_PROGRAMS = frozenset({"true", ":", "cat", "less", "more"})


def assignment_ok(name: str, value: str | None) -> bool:
    """Whether `NAME=value` before or between commands leaves which
    programs run as the line says."""
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return False
    if not RUNNING_VARIABLES.fullmatch(name) or _GIT_PLAIN_VARIABLES.fullmatch(name):
        return True
    return name in _EDITOR_VARIABLES and value is not None and value.strip() in _PASSIVE_PROGRAMS
