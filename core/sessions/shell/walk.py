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

import re
from collections.abc import Sequence

import tree_sitter

from mecha.core.sessions.shell import git as gitrules
from mecha.core.sessions.shell.families import FAMILIES, code_doubt, fed_code, python
from mecha.core.sessions.shell.names import PYTHON, entry_for, outside_program, program_name, project_program
from mecha.core.sessions.shell.options import Runs, Word
from mecha.core.sessions.shell.programs import (
    GIT_SUBCOMMANDS,
    NETWORK,
    PROGRAMS,
    SENDING,
    SUBCOMMANDS,
    is_network,
    talks_to_remote,
)
from mecha.core.sessions.shell.values import OLD_VALUE, PATH_LISTS, PathChange, path_change, stand_in
from mecha.core.sessions.shell.variables import assignment_ok
from mecha.core.sessions.shell.verdict import (
    WHY_CODE,
    WHY_DISTRUSTED,
    WHY_NETWORK,
    WHY_OUTSIDE,
    WHY_REMOTE,
    WHY_RUNS_MORE,
    WHY_SENDS,
    WHY_UNKNOWN,
    WHY_UNSEEN,
    ShellMemory,
    ShellTrust,
    Verdict,
)
from mecha.core.sessions.shell.words import INERT, WALKED, Known, brace_expands, brace_words, heredoc_text, literal, parse, text

#: A command line longer than this is not parsed: untrusted.
MAX_COMMAND_CHARS = 200_000
#: How deep `sh -c 'sh -c "…"'` may nest before the line is untrusted.
MAX_SHELL_NESTING = 8


#: How many values of a `for` list the body is walked with, one by one.
MAX_LOOP_VALUES = 16
#: Nodes that may assign a variable the walker does not follow.
_ASSIGNING = frozenset({"binary_expression", "postfix_expression", "unary_expression", "c_style_for_statement", "arithmetic_expansion"})
#: Commands that may set a variable the walker does not follow (`read X`).
_SETTERS = frozenset({"read", "mapfile", "readarray", "printf", "getopts", "let", "declare", "typeset", "local", "export", "readonly", "eval", "source", ".", "set"})


def _variable_of(node: tree_sitter.Node) -> str | None:
    """`X` for `$X` and `${X}`; `None` for any other expansion."""
    if node.type == "simple_expansion":
        inner = node.named_children
        return text(inner[0]) if len(inner) == 1 and inner[0].type == "variable_name" else None
    match = re.fullmatch(r"\$\{(\w+)\}", text(node)) if node.type == "expansion" else None
    return match.group(1) if match else None


def _line_breaks(command: tree_sitter.Node) -> set[int]:
    """Where, in a command node, tree-sitter-bash read words of the next
    line into it (it does after `sed \\;` in some pipelines): the start of
    each child after a newline no backslash joins. Bash ends the command
    there; what follows is a command of its own."""
    raw, start = command.text or b"", command.start_byte
    children = command.children
    return {
        after.start_byte
        for before, after in zip(children, children[1:])
        if b"\n" in raw[before.end_byte - start : after.start_byte - start].replace(b"\\\n", b"")
    }


def _runs_first(parent: tree_sitter.Node, child: tree_sitter.Node) -> bool:
    """Whether `child`, first of `parent`, runs in this shell whenever
    `parent` does: the left of `&&`/`||`; and the list tree-sitter-bash puts
    first in a pipeline for `a && b | c` (bash reads `a && (b | c)`)."""
    if parent.type == "list":
        return True
    body = child.child_by_field_name("body") if child.type == "redirected_statement" else child
    return parent.type == "pipeline" and body is not None and body.type == "list"


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
        #: Variables this line set before the word being read (`known`).
        self.values: dict[str, str | None] = {}
        #: Whether the statement being walked runs whenever the line does.
        self.definite = True
        #: Whether a folder of the project may be on `PATH` here.
        self.project_path = False
        #: What a here-document feeds a command, by the command's span (`feed`).
        self.fed: dict[tuple[int, int], str] = {}

    def fail(self, why: str, program: str | None = None, entry: str | None = None, *, network: bool = False) -> bool:
        """Record the first reason the line is untrusted; always False."""
        if self.failure is None:
            self.failure = Verdict(local=False, program=program, why=why, entry=entry, network=network)
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
            return self.assignment(node, depth, record=True)
        if kind == "declaration_command":
            return self.declaration(node, depth)
        if kind == "unset_command":
            self.values.clear()
            return True
        if kind == "file_redirect":
            return self.redirect(node, depth)
        if kind == "expansion" and "@P" in text(node):
            return self.fail("`${x@P}` runs what a prompt string holds")
        if kind == "for_statement":
            return self.for_loop(node, depth)
        if kind == "redirected_statement":
            # A here-document is expanded before its command starts: what
            # its substitutions run is judged first, and before its code.
            redirects = node.children_by_field_name("redirect")
            if not all(self.node(r, depth) for r in redirects if r.type == "heredoc_redirect"):
                return False
            self.feed(node.child_by_field_name("body"), redirects)
        if kind in _ASSIGNING or (kind == "expansion" and "=" in text(node)):
            self.values.clear()  # `((n=1))`, `${X:=v}`: a variable changed where the reader does not follow
        if kind in WALKED:
            return self.children(node, depth)
        # A function definition (and then a call to a name nobody listed),
        # and anything this walker does not know: untrusted.
        return kind in INERT or self.fail(f"a shell construct the reader does not look through ({kind})")

    def children(self, node: tree_sitter.Node, depth: int) -> bool:
        """Walk a node's children. What runs whenever the line does stays
        definite (`definite`): the line's own statements and the first of a
        `&&`/`||` list; a branch, a loop's body, a pipe's side are not."""
        definite, first = self.definite, True
        try:
            for child in node.children:
                if not child.is_named:
                    continue
                self.definite = definite and (node.type in ("program", "redirected_statement") or (first and _runs_first(node, child)))
                first = False
                if not self.node(child, depth):
                    return False
            return True
        finally:
            self.definite = definite

    def declaration(self, node: tree_sitter.Node, depth: int) -> bool:
        """`export A=1`, `local B`: what is assigned is checked like a
        prefix; with options (`declare -n`) its value is not followed."""
        plain = not any(c.type == "word" and text(c).startswith(("-", "+")) for c in node.named_children)
        for child in node.named_children:
            ok = self.assignment(child, depth, record=plain) if child.type == "variable_assignment" else self.node(child, depth)
            if not ok:
                return False
        return True

    def assignment(self, node: tree_sitter.Node, depth: int, *, record: bool) -> bool:
        """`NAME=value`: a variable that changes which program runs is
        untrusted, a folder list (`PATH`) judged by what it adds; `record`
        keeps the value for the words after it (a statement's, not a prefix's)."""
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        name = text(name_node) if name_node is not None else ""
        if name in PATH_LISTS:
            change = path_change("" if value is None else literal(value, self.path_part(name)))
            if change in (PathChange.UNKNOWN, PathChange.TEMPORARY):
                return self.fail(change.value, name)
            self.project_path = self.project_path or change is PathChange.PROJECT
        elif name_node is None or not assignment_ok(name, "" if value is None else literal(value)):
            return self.fail("sets a variable that changes which program runs", name or None)
        if not all(self.node(c, depth) for c in node.named_children if c is not name_node):
            return False
        if record:
            known = "" if value is None else literal(value, self.known)
            self.values[name] = known if self.definite and name not in PATH_LISTS else None
        return True

    def for_loop(self, node: tree_sitter.Node, depth: int) -> bool:
        """`for f in a b; do …; done`: the body is walked once with each
        value of the list the line shows (`sections/*.tex` stands for the
        files it matches), or once with the variable unknown."""
        items = node.children_by_field_name("value")
        if not all(self.node(item, depth) for item in items):
            return False
        variable, body = node.child_by_field_name("variable"), node.child_by_field_name("body")
        name = text(variable) if variable is not None else ""
        choices = list(dict.fromkeys(v for item in items for v in self.loop_values(item))) if items else [None]
        definite, self.definite = self.definite, False
        try:
            for choice in choices if len(choices) <= MAX_LOOP_VALUES else [None]:
                self.values[name] = choice
                if body is not None and not self.node(body, depth):
                    return False
            return True
        finally:
            self.definite = definite
            self.values[name] = None

    def loop_values(self, item: tree_sitter.Node) -> list[str | None]:
        """The values one word of a `for` list makes (several for a brace
        expansion), each kept when it can be neither an option nor several
        words: a pattern must start with a folder (`src/*.py`), as a name
        matched by `*` might start with `-`."""
        values = brace_words(item) if brace_expands(item) else [literal(item, self.known)]
        if values is None:
            return [None]
        return [None if v is None or not v or v[0] in "-*?[" or any(c.isspace() for c in v) else v for v in values]

    def feed(self, body: tree_sitter.Node | None, redirects: Sequence[tree_sitter.Node]) -> None:
        """Note the code a here-document feeds a command on its standard
        input (`fed`), when it is the statement's one redirection of
        standard input. The command is the statement's last: tree-sitter-bash
        hangs `a && b <<EOF` on the list, and bash gives it to `b`."""
        # tree-sitter-bash hangs a redirection written after `<<EOF` inside it.
        every = [*redirects, *(c for r in redirects if r.type == "heredoc_redirect" for c in r.named_children if c.type.endswith("redirect"))]
        stdin = [r for r in every if r.type in ("heredoc_redirect", "herestring_redirect") or (r.type == "file_redirect" and "<" in text(r).split(None, 1)[0])]
        if len(stdin) != 1 or stdin[0].type != "heredoc_redirect" or any(c.type == "file_descriptor" for c in stdin[0].named_children):
            return
        while body is not None and body.type in ("list", "pipeline"):
            body = body.named_children[-1] if body.named_children else None
        code = heredoc_text(stdin[0], self.known) if body is not None and body.type == "command" else None
        if body is not None and code is not None:
            self.fed[(body.start_byte, body.end_byte)] = code

    def redirect(self, node: tree_sitter.Node, depth: int) -> bool:
        target = node.child_by_field_name("destination")
        if target is not None:
            path = literal(target, self.known)
            # bash opens sockets for these paths itself; a target only known
            # when it runs might be one.
            if path is None or path.startswith(("/dev/tcp/", "/dev/udp/")):
                return self.fail("a redirection to a socket, or to a file known only when it runs")
            if not text(node).lstrip("0123456789").startswith("<") and gitrules.CONFIG_FILE.search(path):
                self.memory.git_config = text(node)
        return all(self.node(c, depth) for c in node.named_children)

    def command(self, node: tree_sitter.Node, depth: int) -> bool:
        """One simple command: its prefix assignments and redirections
        checked, its words read, its argv judged — as several commands when
        the parser ran the next line's words into it (`_line_breaks`)."""
        argv: list[Word] = []
        commands = [argv]
        project_path, breaks = self.project_path, _line_breaks(node)
        try:
            for child in node.named_children:
                if child.start_byte in breaks:
                    argv = []
                    commands.append(argv)
                if child.type == "variable_assignment":
                    if not self.assignment(child, depth, record=False):
                        return False
                    continue
                word = child.named_children[0] if child.type == "command_name" and child.named_children else child
                if child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                    if not self.node(child, depth):
                        return False
                    continue
                if not self.node(word, depth):  # substitutions inside the word
                    return False
                if brace_expands(word):
                    made = brace_words(word)
                    if made is None:
                        return self.fail("a brace expansion makes words the line does not show", text(word))
                    argv.extend(made)
                    continue
                argv.append(literal(word, self.known))
            self.feed(node, [c for c in node.named_children if c.type.endswith("redirect")])
            code = self.fed.pop((node.start_byte, node.end_byte), None)
            name = program_name(commands[0][0]) if code is not None and commands[0] else None
            fed = fed_code(name, commands[0][1:], code) if name is not None and code is not None else None
            if fed is not None:
                commands[0] = [commands[0][0], *fed]
            return self.argv(commands[0], depth) and all(self.argv(self.unprefixed(c), depth) for c in commands[1:])
        finally:
            self.project_path = project_path  # a prefix `PATH=…` is the command's alone

    def unprefixed(self, argv: list[Word]) -> list[Word]:
        """A command the parser ran into the one before, past its own
        `NAME=value` prefix (read as words), each checked as a prefix is."""
        while argv and argv[0] is not None and re.match(r"[A-Za-z_]\w*=", argv[0]):
            name, value = argv[0].split("=", 1)
            if not assignment_ok(name, value):
                self.fail("sets a variable that changes which program runs", name)
                return [None]
            argv = argv[1:]
        return argv

    # ─── what an expansion stands for ───────────────────────────────────────

    def known(self, node: tree_sitter.Node) -> str | None:
        """The value of an expansion the line shows (`values.py`): a
        substitution of a plain value's program, or a variable the line set."""
        if node.type == "command_substitution":
            return self.substituted(node)
        value = self.values.get(_variable_of(node) or "")
        return value if value is not None and not any(c.isspace() for c in value) else None

    def substituted(self, node: tree_sitter.Node) -> str | None:
        """The stand-in for `$(CMD)` when CMD is one command printing one
        plain value (`$(nproc)`); its errors may go to `/dev/null`."""
        statements = node.named_children
        if len(statements) != 1:
            return None
        command = statements[0]
        if command.type == "redirected_statement":
            redirects = command.children_by_field_name("redirect")
            if not all(literal(r.child_by_field_name("destination") or r) == "/dev/null" for r in redirects):
                return None
            command = command.child_by_field_name("body") or command
        if command.type != "command":
            return None
        argv: list[Word] = []
        for child in command.named_children:
            if child.type in ("variable_assignment", "file_redirect", "herestring_redirect", "heredoc_redirect"):
                return None
            argv.append(literal(child.named_children[0] if child.type == "command_name" and child.named_children else child, self.known))
        return stand_in([program_name(argv[0]) if argv else None, *argv[1:]])

    def path_part(self, name: str) -> Known:
        """What the parts of a folder list stand for: the variable's own
        earlier value, the home folder (outside the project), the current one."""

        def known(node: tree_sitter.Node) -> str | None:
            variable = _variable_of(node)
            if variable == name:
                return OLD_VALUE
            return {"HOME": "~", "PWD": "."}.get(variable or "") or self.known(node)

        return known

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
        if name == "git" and gitrules.subcommand_at(argv[1:]) is None:
            return self.fail(WHY_RUNS_MORE, name)  # `git -c core.pager=…`: no entry trusts what it runs
        sub = gitrules.subcommand_of(name, argv[1:])
        label = f"{name} {sub}" if sub is not None and (name in SUBCOMMANDS or name == "git" or f"{name} {sub}" in NETWORK) else name
        if is_network(name, sub):
            return self.fail(WHY_NETWORK, label, network=True)
        if f"{name} {sub}" in SENDING:
            at = gitrules.subcommand_at(argv[1:]) if name == "git" else None
            if at is not None and gitrules.subcommand_runs(sub, list(argv[at + 2 :]), trusted=True) is None:
                return self.fail(WHY_RUNS_MORE, label)  # `git push --receive-pack=…`
            # Its reply is the remote's text; the person may say the remote is theirs.
            return self.fail(WHY_SENDS, f"{name} {sub}", f"Bash({name} {sub})", network=True)
        doubt = code_doubt(name, list(argv[1:]))
        if doubt is not None:
            return self.fail(doubt.why, label, network=doubt.network)
        if PYTHON.fullmatch(name) or name == "node":
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
            # Trusting git or one of its subcommands trusts what git prints,
            # never a program its options or configuration make it run.
            return name != "git" or self.run(self.git(args, trusted=True), depth)
        if name in _SETTERS:
            self.values.clear()
        if self.project_path and "/" not in (word or "/") and not _known(name) and not PYTHON.fullmatch(name):
            # A folder of the project is on PATH: a name the table does not
            # know may be the project's own program there (`values.py`) —
            # but not when it names a subcommand that talks to a remote.
            if talks_to_remote(name, sub) and not is_network(name, sub):
                return self.fail(WHY_REMOTE, f"{name} {sub}", network=True)
            return not is_network(name, sub)
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

    def git(self, args: list[Word], *, trusted: bool = False) -> Runs | None:
        """What `git ARGS` runs besides git, or `None` when it is not local.
        `trusted`: the person trusted git or this subcommand, so a
        subcommand the table does not list is git's own — but its global
        options, the session's config writes and the options that run a
        command are still read."""
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
        return gitrules.subcommand_runs(sub, rest, trusted=trusted)


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
