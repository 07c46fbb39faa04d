"""The one option scanner: a program's words, read the way its own option
parser reads them, from a declarative `OptionSpec`.

Every program the shell reader looks inside (a wrapper that runs another
program, git, sed, a debugger, an interpreter) differs only in its table:
which options take a value, which make it run something not on the line,
whether the first operand ends the options, whether short options bundle
(`-euo pipefail`), whether long ones may be abbreviated (`--exe` for
`--exec`). The reader once had a hand-written loop per program, and each
loop had its own idea of an attached value or of `--`; one scanner gives
every program the same reading and puts what differs in data beside the
program's family (`families.py`).

The scan **fails closed**: it answers `None` (the line is untrusted) on an
option that runs something (`runs`, an abbreviation of one, a `runs_prefixes`
word), on an option the spec does not know when the spec says unknown
options are not flags, and on a word spelled through an expansion where an
option could stand (its value is known only when it runs: it might be
`-exec`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

#: A word of a command: its text after quote removal, or `None` when it
#: holds an expansion the reader does not know the value of.
Word = str | None


@dataclass(frozen=True, kw_only=True)
class OptionSpec:
    """How one program (or family) reads its options.

    `flags` take no value; `valued` take one — the next word, or attached
    (`--name=value`, and `-Xvalue` for a one-letter option); `optional`
    take a value only when attached (`sed -i.bak`); `code` take a value
    that is code the caller checks (`gdb -ex`, `git filter-branch
    --tree-filter`), and an abbreviation of one fails; `runs` make the
    program run something not on the line, and fail, as does any word
    starting with one of `runs_prefixes` (`gcc -wrapper…`, `@file`).
    `attached` are prefixes of options that carry their value in the same
    word (`nice -5`). `ends` are options after which every word is a
    command (`gdb --args`)."""

    flags: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    code: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()
    runs_prefixes: tuple[str, ...] = ()
    attached: tuple[str, ...] = ()
    ends: frozenset[str] = frozenset()
    #: An option not listed is a flag (True) or fails the scan (False).
    unknown_is_flag: bool = False
    #: The first operand ends the options (POSIX, and every wrapper): what
    #: follows is the command or the operands, whatever it looks like.
    stops: bool = True
    #: `-abc` is `-a -b -c`; a valued letter takes the rest of the word or
    #: the next word (`-euo pipefail`).
    bundles: bool = False
    #: `+o` is an option too (the shells').
    plus: bool = False
    #: A long option may be abbreviated (git's and getopt_long's
    #: `--exe` for `--exec`): an abbreviation of a `runs` or `code` option fails.
    abbreviates: bool = False
    #: `-name=value` and `-name value` are long options with one dash (gdb's).
    single_dash_long: bool = False
    #: A word known only when it runs is read as an operand, not as a
    #: possible option (a compiler, whose options no expansion alone can spell
    #: into running a program).
    unseen_is_operand: bool = False


def spec(
    flags: Sequence[str] = (),
    valued: Sequence[str] = (),
    *,
    optional: Sequence[str] = (),
    code: Sequence[str] = (),
    runs: Sequence[str] = (),
    **more: object,
) -> OptionSpec:
    """An `OptionSpec` from plain sequences (the families' tables read better so)."""
    return OptionSpec(
        flags=frozenset(flags), valued=frozenset(valued), optional=frozenset(optional), code=frozenset(code),
        runs=frozenset(runs), **more,  # type: ignore[arg-type]
    )


class Scan(NamedTuple):
    """What a scan found: the options in order, each with its value (`None`
    for a flag, or a value spelled through an expansion); the operands met
    among the options (only when the spec does not stop at the first); and
    the words after the options ended (at the first operand, `--`, or an
    `ends` option)."""

    options: list[tuple[str, Word]]
    operands: list[Word]
    rest: list[Word]

    def values(self, *names: str) -> list[Word]:
        """The values given to any of `names`, in order."""
        return [value for name, value in self.options if name in names]

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    @property
    def words(self) -> list[Word]:
        """The operands, then the words after the options."""
        return [*self.operands, *self.rest]


class Runs(NamedTuple):
    """What a program runs besides itself: commands (argvs) and shell
    scripts, each checked by the walker as the line is."""

    commands: tuple[list[Word], ...] = ()
    scripts: tuple[str, ...] = ()


NOTHING = Runs()


class _Refused(Exception):
    """The scan meets something that fails it closed."""


@dataclass
class _Scanner:
    spec: OptionSpec
    args: Sequence[Word]
    at: int = 0
    options: list[tuple[str, Word]] = field(default_factory=list)

    def next_word(self) -> Word:
        """The word after the current one, consumed as a value."""
        self.at += 1
        if self.at >= len(self.args):
            raise _Refused  # a valued option with nothing after it
        return self.args[self.at]

    def long(self, word: str) -> None:
        s = self.spec
        name, has_value, value = word.partition("=")
        if name in s.runs or (s.abbreviates and _abbreviates_any(name, s.runs | s.code)):
            raise _Refused
        if name in s.valued or name in s.code:
            self.options.append((name, value if has_value else self.next_word()))
        elif name in s.flags or name in s.optional or name in s.ends:
            self.options.append((name, value if has_value else None))
        elif s.unknown_is_flag:
            self.options.append((name, value if has_value else None))
        else:
            raise _Refused

    def short(self, word: str) -> None:
        s = self.spec
        if word in s.runs or word[:2] in s.runs:
            raise _Refused
        if word in s.valued or word in s.code:
            self.options.append((word, self.next_word()))
        elif word in s.flags or word in s.ends:
            self.options.append((word, None))
        elif word[:2] in s.valued and not s.bundles:
            self.options.append((word[:2], word[2:]))  # `-Xvalue`
        elif s.attached and word.startswith(s.attached):
            self.options.append((word, None))
        elif s.bundles and len(word) > 2:
            self.bundle(word)
        elif word in s.optional or word[:2] in s.optional:
            self.options.append((word[:2], word[2:] or None))
        elif s.unknown_is_flag:
            self.options.append((word, None))
        else:
            raise _Refused

    def bundle(self, word: str) -> None:
        """`-abc` letter by letter: a valued letter takes the rest of the
        word, or the next word; an optional one the rest of the word."""
        s = self.spec
        sign = word[0]
        for i, letter in enumerate(word[1:], start=1):
            name, tail = sign + letter, word[i + 1 :]
            if name in s.runs:
                raise _Refused
            if name in s.valued or name in s.code:
                self.options.append((name, tail if tail else self.next_word()))
                return
            if name in s.optional:
                self.options.append((name, tail or None))
                return
            if name in s.flags or s.unknown_is_flag:
                self.options.append((name, None))
            else:
                raise _Refused


def _abbreviates_any(name: str, longs: frozenset[str]) -> bool:
    """`--exe` abbreviates `--exec`: at least one letter past the dashes."""
    return name.startswith("--") and len(name) >= 3 and any(long.startswith(name) and long != name for long in longs if long.startswith("--"))


def _is_option(word: str, spec: OptionSpec) -> bool:
    if word in ("-", "--") or len(word) < 2:
        return False
    return word[0] == "-" or (spec.plus and word[0] == "+")


def scan(args: Sequence[Word], spec: OptionSpec) -> Scan | None:
    """Read `args` (the words after a program's name) by `spec`; `None`
    when the reading fails closed (see the module's docstring)."""
    scanner = _Scanner(spec, args)
    operands: list[Word] = []
    if spec.runs_prefixes and any(word is not None and word.startswith(spec.runs_prefixes) for word in args):
        return None
    try:
        while scanner.at < len(args):
            word = args[scanner.at]
            if word is None:
                if not spec.unseen_is_operand:
                    raise _Refused
                operands.append(word)
            elif word == "--":
                return Scan(scanner.options, operands, list(args[scanner.at + 1 :]))
            elif not _is_option(word, spec):
                if spec.stops:
                    return Scan(scanner.options, operands, list(args[scanner.at :]))
                operands.append(word)
            else:
                if word.startswith("--") or spec.single_dash_long:
                    scanner.long(word)
                else:
                    scanner.short(word)
                if scanner.options and scanner.options[-1][0] in spec.ends:
                    return Scan(scanner.options, operands, list(args[scanner.at + 1 :]))
            scanner.at += 1
    except _Refused:
        return None
    return Scan(scanner.options, operands, [])
