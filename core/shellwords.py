"""Commands a person is told to paste into a shell: the one place they are
spelled.

The project often ends a message with the command that does the next thing
(`mecha-sidecar trust add 'Bash(bd)'`, `mecha-sidecar --learning-dir DIR
proposals`, `mecha-sidecar learn DOMAIN`). Some of those words came from a
session — a program name an agent ran, a path it worked in — and a session
is a stranger's text. Formatted with quotes around it by hand, a program
named `x';touch PWNED;'` once turned the suggestion `trust add 'Bash(x';touch
PWNED;')'` into two commands, the second the stranger's. So every such
command is built here, word by word:

- `command(*words)` quotes each word for a POSIX shell (`sh`, `bash`,
  `zsh`: as `shlex.quote` does) and joins them; pasted, the shell hands the program
  exactly those words back, whatever they hold.
- A word that cannot be pasted faithfully is refused (`Unpasteable`): a NUL
  (no argument can hold one), or any character that hides from the person
  about to run it (`mecha.core.visible`: a newline or an escape sequence a
  terminal acts on when pasted, a bidi control that shows the command in
  another order, a zero-width character). Quoting would keep the shell
  safe but not the person, who runs what they cannot read.
  `command_or_none` is for a message that can go on without the command,
  and `refusal` says why in words for it.
- `mecha(*words, learning_dir=...)` is the project's own command line, with
  the store named when it is not the default one.

Printed commands of the project are built with these and nothing else; a
test greps the code for the hand-quoted form.
"""

from __future__ import annotations

from mecha.core.errors import InvalidInput
from mecha.core.visible import hidden_problem, shown

#: The program a person runs: the console script's name.
PROGRAM = "mecha-sidecar"

#: The characters a word may hold and still be written bare, as
#: `shlex.quote` has them (its `[^\w@%+=:,./-]` under `re.ASCII`). Spelled
#: here rather than calling `shlex`, which imports `re`: the session-start
#: hook prints a command through this module, and `re` would cost every
#: session's start more than the rest of the hook.
_BARE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


class Unpasteable(InvalidInput):
    """A word of a command to paste that a shell could not be handed as it
    is, or a person could not read as it is; the message names the word's
    problem."""


def refusal(word: str) -> str | None:
    """Why `word` cannot go into a command for a person to paste, or `None`."""
    if "\x00" in word:
        return "it holds a NUL character, which no command-line argument can"
    return hidden_problem(word)


def quote(word: str) -> str:
    """`word`, quoted so that a POSIX shell reads it back exactly; refused
    (`Unpasteable`) when it cannot be pasted faithfully (`refusal`)."""
    why = refusal(word)
    if why is not None:
        raise Unpasteable(f"{shown_word(word)}: cannot be put in a command to paste: {why}")
    if not word:
        return "''"
    if all(c in _BARE for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def command(*words: str) -> str:
    """The command line of `words`, each quoted (`quote`)."""
    return " ".join(quote(w) for w in words)


def command_or_none(*words: str) -> str | None:
    """`command(*words)`, or `None` when a word cannot be pasted."""
    try:
        return command(*words)
    except Unpasteable:
        return None


def mecha(*words: str, learning_dir: str | None = None, program: str = PROGRAM) -> str:
    """`mecha-sidecar [--learning-dir DIR] WORDS…`, quoted; `program` when
    the console script is to be named by its path."""
    store = ("--learning-dir", learning_dir) if learning_dir else ()
    return command(program, *store, *words)


def mecha_or_none(*words: str, learning_dir: str | None = None, program: str = PROGRAM) -> str | None:
    """`mecha(...)`, or `None` when a word cannot be pasted."""
    try:
        return mecha(*words, learning_dir=learning_dir, program=program)
    except Unpasteable:
        return None


def shown_word(word: str) -> str:
    """A word as a message names it, hidden characters escaped."""
    return repr(shown(word.replace("\x00", "\\x00")))
