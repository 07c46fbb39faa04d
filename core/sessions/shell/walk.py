"""The walk: every command a line runs, found in its syntax tree and judged.

The walker visits every node of the parsed line — pipes, chains,
subshells, groups, loops, conditionals, substitutions, redirections — and
judges each simple command by its argv: its program by name (`names.py`)
against the table (`programs.py`), the person's entries (`ShellTrust`),
and for a program of a family the reader looks inside (`families.py`,
`git.py`), what that program runs in turn, walked the same way. The first
thing that fails is kept as the line's `Verdict`, named so that the person
is told why and what would change it.
"""

from __future__ import annotations

from collections.abc import Sequence

import tree_sitter

from mecha.core.sessions.shell import git as gitrules
from mecha.core.sessions.shell.families import FAMILIES, python
from mecha.core.sessions.shell.names import PYTHON, entry_for, outside_program, program_name, project_program
from mecha.core.sessions.shell.options import Runs, Word
from mecha.core.sessions.shell.programs import GIT_SUBCOMMANDS, NETWORK, PROGRAMS, SUBCOMMANDS, is_network
from mecha.core.sessions.shell.variables import assignment_ok
from mecha.core.sessions.shell.verdict import (
    WHY_CODE,
    WHY_DISTRUSTED,
    WHY_NETWORK,
    WHY_OUTSIDE,
    WHY_RUNS_MORE,
    WHY_UNKNOWN,
    WHY_UNSEEN,
    ShellMemory,
    ShellTrust,
    Verdict,
)
from mecha.core.sessions.shell.words import INERT, WALKED, brace_expands, literal, parse, text

#: A command line longer than this is not parsed: untrusted.
MAX_COMMAND_CHARS = 200_000
#: How deep `sh -c 'sh -c "…"'` may nest before the line is untrusted.
MAX_SHELL_NESTING = 8


def _short(line: str, limit: int = 80) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _known(name: str) -> bool:
    """A program the reader knows (so that failing it is a matter of how it
    was run, not of trusting it). `source FILE` / `. FILE` run a script in
    this shell, as `bash FILE` does: trusting the word would trust every script."""
    return name in PROGRAMS or name in SUBCOMMANDS or name in FAMILIES or name in ("git", "source", ".")


class Walker:
    """One decision's walk: the person's trust, the session's memory, and
    the first failure met."""

    def __init__(self, trust: ShellTrust, memory: ShellMemory):
        self.trust = trust
        self.memory = memory
        self.failure: Verdict | None = None

    def fail(self, why: str, program: str | None = None, entry: str | None = None) -> bool:
        """Record the first reason the line is untrusted; always False."""
        if self.failure is None:
            self.failure = Verdict(local=False, program=program, why=why, entry=entry)
        return False

    # ─── the tree ───────────────────────────────────────────────────────────

    def line(self, command: str, depth: int) -> bool:
        if depth > MAX_SHELL_NESTING:
            return self.fail("nested `sh -c` deeper than the reader follows")
        if len(command) > MAX_COMMAND_CHARS or "\x00" in command:
            return self.fail("too long, or holding a NUL byte, to read")
        root = parse(command)
        if root.has_error:
            return self.fail("a line the shell parser cannot read")
        return self.node(root, depth)

    def node(self, node: tree_sitter.Node, depth: int) -> bool:
        if not node.is_named:
            return True
        kind = node.type
        if kind == "command":
            return self.command(node, depth)
        if kind == "variable_assignment":
            return self.assignment(node, depth)
        if kind == "declaration_command":
            # `export A=1`, `local B`: what is assigned is checked like a prefix.
            return all(self.node(c, depth) for c in node.named_children)
        if kind == "unset_command":
            return True
        if kind == "file_redirect":
            return self.redirect(node, depth)
        if kind == "expansion" and "@P" in text(node):
            return self.fail("`${x@P}` runs what a prompt string holds")
        if kind in WALKED:
            return all(self.node(c, depth) for c in node.children)
        # A function definition (and then a call to a name nobody listed),
        # and anything this walker does not know: untrusted.
        return kind in INERT or self.fail(f"a shell construct the reader does not look through ({kind})")

    def assignment(self, node: tree_sitter.Node, depth: int) -> bool:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or not assignment_ok(text(name), "" if value is None else literal(value)):
            return self.fail("sets a variable that changes which program runs", text(name) if name is not None else None)
        return all(self.node(c, depth) for c in node.named_children if c is not name)

    def redirect(self, node: tree_sitter.Node, depth: int) -> bool:
        target = node.child_by_field_name("destination")
        if target is not None:
            path = literal(target)
            # bash opens sockets for these paths itself; a target only known
            # when it runs might be one.
            if path is None or path.startswith(("/dev/tcp/", "/dev/udp/")):
                return self.fail("a redirection to a socket, or to a file known only when it runs")
            if not text(node).lstrip("0123456789").startswith("<") and gitrules.CONFIG_FILE.search(path):
                self.memory.git_config = text(node)
        return all(self.node(c, depth) for c in node.named_children)

    def command(self, node: tree_sitter.Node, depth: int) -> bool:
        argv: list[Word] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                if not self.assignment(child, depth):
                    return False
                continue
            word = child.named_children[0] if child.type == "command_name" and child.named_children else child
            if child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                if not self.node(child, depth):
                    return False
                continue
            if brace_expands(word):
                return self.fail("a brace expansion makes words the line does not show", text(word))
            if not self.node(word, depth):  # substitutions inside the word
                return False
            argv.append(literal(word))
        return self.argv(argv, depth)

    # ─── one command's argv ─────────────────────────────────────────────────

    def argv(self, argv: Sequence[Word], depth: int) -> bool:
        """Whether one command stays local; if not, its failure is named."""
        if self.local_argv(argv, depth):
            return True
        if self.failure is None and argv:
            return self.blame(argv)
        return False

    def blame(self, argv: Sequence[Word]) -> bool:
        """Name the program of a command that failed without saying why,
        with the reason a person is shown and the entry that would trust it."""
        word = argv[0]
        name = program_name(word)
        if name is None:
            base = outside_program(word)
            entry = None if base is None else f"Bash({base})"
            return self.fail(WHY_UNSEEN if word is None else WHY_OUTSIDE, word, entry)
        sub = gitrules.subcommand_of(name, argv[1:])
        label = f"{name} {sub}" if sub is not None and (name in SUBCOMMANDS or name == "git" or f"{name} {sub}" in NETWORK) else name
        if is_network(name, sub):
            return self.fail(WHY_NETWORK, label)
        if PYTHON.fullmatch(name):
            return self.fail(WHY_CODE, label)
        if _known(name) and (name not in SUBCOMMANDS or sub in SUBCOMMANDS[name]) and not (name == "git" and sub not in GIT_SUBCOMMANDS):
            return self.fail(WHY_RUNS_MORE, label)
        return self.fail(WHY_UNKNOWN, label, entry_for(name, sub))

    def local_argv(self, argv: Sequence[Word], depth: int) -> bool:
        if not argv:
            return True  # only assignments or redirections, each checked
        word = argv[0]
        if project_program(word):
            return True
        name = program_name(word)
        if name is None:
            # A program by a path outside the system's folders (a tool under
            # the person's home: `~/android-sdk/emulator/emulator`) is known
            # only by the person's word for its name, never by the table.
            base = outside_program(word)
            return base is not None and base not in self.trust.distrusted and base in self.trust.trusted
        args = list(argv[1:])
        sub = gitrules.subcommand_of(name, args)
        if (name in gitrules.FILE_WRITERS and any(a is not None and gitrules.CONFIG_FILE.search(a) for a in args)) or (
            name == "find" and gitrules.find_writes_config(args)
        ):
            self.memory.git_config = " ".join(a or "…" for a in argv)
        if name in self.trust.distrusted or (sub is not None and f"{name} {sub}" in self.trust.distrusted):
            return self.fail(WHY_DISTRUSTED, name if sub is None else f"{name} {sub}")
        if name in self.trust.trusted or (sub is not None and f"{name} {sub}" in self.trust.trusted):
            return True
        return self.by_family(name, sub, args, depth)

    def by_family(self, name: str, sub: str | None, args: list[Word], depth: int) -> bool:
        """A program judged by its family's rule, or by the table."""
        if name == "git":
            return self.run(self.git(args), depth)
        family = FAMILIES.get(name)
        if family is not None:
            return self.run(family(args), depth)
        if PYTHON.fullmatch(name):
            return self.run(python(args), depth)
        if name in SUBCOMMANDS:
            return sub in SUBCOMMANDS[name]
        return name in PROGRAMS

    def run(self, runs: Runs | None, depth: int) -> bool:
        """Whether everything a program runs in turn stays local."""
        if runs is None:
            return False
        return all(self.argv(c, depth) for c in runs.commands) and all(self.line(s, depth + 1) for s in runs.scripts)

    def git(self, args: list[Word]) -> Runs | None:
        at = gitrules.subcommand_at(args)
        if at is None:
            return None
        if self.memory.git_config is not None:
            self.fail(f"git's configuration was changed earlier in the session ({_short(self.memory.git_config)}): a later git call may run any program", "git")
            return None
        if at >= len(args):
            return Runs()  # `git --version`, or git alone (its usage)
        sub, rest = args[at], args[at + 1 :]
        if sub == "config" and gitrules.config_writes_a_program(rest):
            self.memory.git_config = "git config " + " ".join(a or "…" for a in rest)
        return gitrules.subcommand_runs(sub, rest)


def judge(command: str | Sequence[str], trust: ShellTrust, memory: ShellMemory) -> Verdict | None:
    """The walk of one command line (or Codex argv); `None` when local."""
    walker = Walker(trust, memory)
    try:
        if isinstance(command, str):
            ok = walker.line(command, 0)
        else:
            argv: list[Word] = [str(word) for word in command]
            ok = walker.argv(argv, 0)
    except RecursionError:
        return Verdict(local=False, why="nested deeper than the reader follows")
    if ok:
        return None
    return walker.failure or Verdict(local=False, why=WHY_UNKNOWN)
