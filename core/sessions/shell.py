"""Whether a shell command's output stays on the machine.

Neither Claude Code nor Codex records where a shell command's output came
from, so the readers decide it from the command line alone, and they decide
it **fail closed**: the output is trusted (the person's own machine) only when
every program the line runs is on an allowlist of programs, and of their
subcommands, that do not reach the network. Everything else — an unknown
program, a program spelled through a variable, a script file, `python -c`,
anything the parser cannot parse — is untrusted. A list of network commands
can never be complete; a list of local ones can be.

The line is parsed with tree-sitter-bash, never matched: env prefixes
(`FOO=1 git …`), paths (`/usr/bin/git`), quoting (`'g'it`, `g\\it`), `sudo`
and the other wrappers (`env`, `timeout`, `nice`, `nohup`, `command`, `exec`,
`time`, `xargs`), `sh -c '…'` / `bash -lc "…"` (the script is parsed in
turn), pipes, `&&` / `||` / `;` chains, subshells, groups, loops,
conditionals, `$(…)`, backticks, process substitutions, `${x:-$(…)}`,
unquoted here-documents (which expand) and redirections are all walked, and
every command found anywhere must pass. A Codex argv array
(`["bash", "-lc", "…"]`, `["ls", "-la"]`) is checked as the argv it is.

The lines judged are ones an agent wrote before any stranger's text reached
it (after that, the conversation is untrusted anyway): the decision is built
to see through every way an agent spells a command, not to out-think a line
crafted to hide one in a variable's value that bash later runs as code
(arithmetic on an array subscript, say) — although each such spelling it
knows of (`eval`, `${x@P}`, `trap`, an alias, a function) is untrusted.

What "local" means is the trust model's: reading a file on the machine, or
running a repository's tests, trusts what that file or that code prints as
the person's own. For a repository cloned from a stranger, that is a
stranger's text (README.md, a test's output); docs/trust-model.md says
so and names the switches.

The allowlist (`PROGRAMS`, `GIT_SUBCOMMANDS`, `PYTHON_MODULES`, …) is data;
a person widens or narrows it with `--trust-tool 'Bash(make)'` /
`--distrust-tool 'Bash(git commit)'` (`ShellTrust`). The module is loaded
only when a foreign session is read: the harness endpoint never imports it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import msgspec
import tree_sitter
import tree_sitter_bash

from mecha.core.sessions.programs import (
    DPKG_QUERIES,
    GIT_SUBCOMMANDS,
    MIX_FETCHING,
    MIX_FETCHING_PREFIXES,
    NETWORK,
    PIP_QUERIES,
    PROGRAMS,
    PYTHON_MODULES,
    SUBCOMMANDS,
    is_network,
)

#: A command line longer than this is not parsed: untrusted.
MAX_COMMAND_CHARS = 200_000
#: How deep `sh -c 'sh -c "…"'` may nest before the line is untrusted.
MAX_SHELL_NESTING = 8

# ─── the allowlist ──────────────────────────────────────────────────────────
# The table itself, family by family and why, is `programs.py`.

#: `git -c KEY=VALUE` and `git config KEY VALUE`: only keys that cannot make
#: git run another program (or include a file that could say one).
_GIT_SAFE_CONFIG = re.compile(
    r"(?:color\.[\w.-]+|core\.(?:quotepath|abbrev|autocrlf|filemode|ignorecase|safecrlf|eol|whitespace|longpaths)|"
    r"user\.(?:name|email|signingkey)|safe\.directory|advice\.[\w.-]+|init\.defaultbranch|commit\.gpgsign|"
    r"merge\.conflictstyle|diff\.(?:algorithm|renames|colormoved|mnemonicprefix|noprefix)|rerere\.enabled|"
    r"pull\.(?:rebase|ff)|push\.(?:default|autosetupremote)|fetch\.prune|branch\.[\w./-]+\.(?:remote|merge|rebase)|"
    r"rebase\.(?:autosquash|autostash|updaterefs)|log\.(?:date|decorate|follow)|status\.[\w.-]+|format\.pretty)"
    r"(?:=|$)",
    re.IGNORECASE,
)
#: Subcommand options that make git run a command: the short letter (also
#: inside a bundle, `-ix`) and the long spelling — which git also takes
#: abbreviated (`--exe` is `--exec`), so any prefix of it counts.
_GIT_RUNS = {"rebase": ("x", "--exec"), "grep": ("O", "--open-files-in-pager")}
#: `git filter-branch` options whose value is a shell script git runs.
_FILTER_SCRIPTS = ("--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter",
                   "--commit-filter", "--tag-name-filter", "--setup")
#: `git config` spellings that only read.
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
                               "-l", "--list", "get", "list", "--unset", "--unset-all", "unset", "--show-origin",
                               "--show-scope", "--name-only"})
#: Where git reads its configuration from: a command that writes to one of
#: these (a redirection, `cp`, `tee`, `sed -i`) has changed git's config.
_GIT_CONFIG_FILE = re.compile(r"(?:^|/)(?:\.git/config|\.gitconfig|git/config)$|(?:^|/)\.git/config\.")
#: Programs that write the files their arguments name.
_FILE_WRITERS = frozenset({"cp", "mv", "ln", "tee", "sed", "gsed", "install", "patch", "dd", "truncate", "touch", "printf"})

#: Directories whose programs are taken by their name (`/usr/bin/git` is git);
#: any other path is a program nobody listed.
SYSTEM_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin", "/opt/homebrew/bin"})
#: A project's own environment: `.venv/bin/pytest`, `node_modules/.bin/jest`.
_ENV_BIN = re.compile(r"(?:.*/)?(?:\.?venv|\.tox/[^/]+|\.nox/[^/]+)/bin|(?:.*/)?node_modules/\.bin")

#: Variables that change which program runs or make one run another: an
#: assignment to any of them (`PATH=… ls`, `LD_PRELOAD=… cat`) is untrusted,
#: in a prefix, an `export` or on its own.
_RUNNING_VARIABLES = re.compile(
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
    if not _RUNNING_VARIABLES.fullmatch(name) or _GIT_PLAIN_VARIABLES.fullmatch(name):
        return True
    return name in _EDITOR_VARIABLES and value is not None and value.strip() in _PASSIVE_PROGRAMS


_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})


class ShellTrust(msgspec.Struct, frozen=True, kw_only=True):
    """A person's changes to the allowlist: entries `"make"` (a program,
    any arguments) or `"git fetch"` (a program's subcommand — its first
    argument that is not an option, git's past its global options). A
    distrusted entry wins over the defaults and over a trusted one."""

    trusted: frozenset[str] = frozenset()
    distrusted: frozenset[str] = frozenset()


DEFAULT_TRUST = ShellTrust()


# ─── the decision ───────────────────────────────────────────────────────────


class ShellMemory:
    """What one session's earlier commands changed that decides its later
    ones. A reader keeps one per session and hands it to every decision in
    file order.

    `git_config`: the command that wrote a git configuration key that can
    name a program (`core.pager`, `diff.external`, `core.fsmonitor`,
    `alias.*`, `include.path`, … — every key not known to be inert), or
    wrote one of git's config files another way. From then on every git
    call may run that program, whatever its subcommand: untrusted."""

    def __init__(self) -> None:
        self.git_config: str | None = None


class Verdict(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A command line's decision, and for an untrusted one what made it so:
    the first program that failed (`git fetch`, `bd`; absent when no
    program is to blame — a line that does not parse, a brace expansion),
    why in words, and the trust entry that would make that program local
    (`Bash(bd)`), only for a program the table does not know — never for a
    network client, nor for a known program run in a way that can run
    another."""

    local: bool
    program: str | None = None
    why: str | None = None
    entry: str | None = None


LOCAL = Verdict(local=True)

#: Why a command was untrusted, in the words a person is shown.
WHY_UNKNOWN = "not in the table of programs known to stay on this machine"
WHY_NETWORK = "reaches the network: what it prints is someone else's text"
WHY_RUNS_MORE = "run with arguments that can make it run another program or read code not on the line"
WHY_UNSEEN = "names its program through something known only when it runs"


def judge_command(command: str | Sequence[str], trust: ShellTrust = DEFAULT_TRUST, memory: ShellMemory | None = None) -> Verdict:
    """Whether everything `command` runs is known to stay on this machine,
    and if not, the first thing that is not (`Verdict`).

    `command` is a shell command line, or an argv array as Codex records it.
    Local only when every program in it — after every pipe, chain,
    substitution, wrapper and nested `sh -c` — is in the table (with a
    listed subcommand where the program has a list); untrusted for anything
    else, and for anything that does not parse. `memory` carries what the
    session's earlier commands changed (`ShellMemory`) and is updated."""
    check = _Check(trust, memory if memory is not None else ShellMemory())
    try:
        if isinstance(command, str):
            ok = check.line(command, 0)
        else:
            argv: list[str | None] = [str(word) for word in command]
            ok = check.argv(argv, 0)
    except RecursionError:
        return Verdict(local=False, why="nested deeper than the reader follows")
    if ok:
        return LOCAL
    return check.failure or Verdict(local=False, why=WHY_UNKNOWN)


def command_stays_local(command: str | Sequence[str], trust: ShellTrust = DEFAULT_TRUST, memory: ShellMemory | None = None) -> bool:
    """`judge_command(…).local`."""
    return judge_command(command, trust, memory).local


_PARSER: tree_sitter.Parser | None = None


def _parser() -> tree_sitter.Parser:
    global _PARSER
    if _PARSER is None:
        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER


#: Nodes that hold statements or words and run nothing themselves: walked.
_WALKED = frozenset(
    {
        "program", "list", "pipeline", "subshell", "compound_statement", "redirected_statement", "negated_command",
        "if_statement", "elif_clause", "else_clause", "while_statement", "for_statement", "c_style_for_statement",
        "do_group", "case_statement", "case_item", "test_command", "binary_expression", "unary_expression",
        "ternary_expression", "parenthesized_expression", "postfix_expression", "command_substitution",
        "process_substitution", "arithmetic_expansion", "expansion", "string", "concatenation", "array",
        "heredoc_redirect", "heredoc_body", "herestring_redirect", "subscript", "brace_expression",
    }
)
#: Nodes with nothing inside that could run.
_INERT = frozenset(
    {
        "comment", "word", "raw_string", "ansi_c_string", "translated_string", "number", "string_content",
        "variable_name", "special_variable_name", "simple_expansion", "heredoc_start", "heredoc_end",
        "heredoc_content", "file_descriptor", "test_operator", "regex", "extglob_pattern",
    }
)


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _unescape_word(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text.replace("\\\n", ""), flags=re.DOTALL)


def _literal(node: tree_sitter.Node) -> str | None:
    """The text a word node stands for after quote removal, or `None` when
    it holds an expansion (its value is not known from the line)."""
    kind = node.type
    text = _text(node)
    if kind == "word":
        return _unescape_word(text)
    if kind == "number":
        return text
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        out = []
        for child in node.named_children:
            if child.type != "string_content":
                return None
            out.append(re.sub(r"\\([$`\"\\])", r"\1", _text(child).replace("\\\n", "")))
        return "".join(out)
    if kind == "concatenation":
        parts = [_literal(child) for child in node.named_children]
        return None if any(p is None for p in parts) else "".join(p for p in parts if p is not None)
    return None


#: An unquoted `{a,b}` or `{1..3}`: bash makes several words of it.
_BRACES = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")


def brace_expands(node: tree_sitter.Node) -> bool:
    """Whether bash would brace-expand this word into words the line does
    not show (`{-exec,}` is `-exec` to `find`; `{-e,}` hides a sed script).
    Quoted and escaped braces do not expand; `{}` alone does not."""
    if node.type == "brace_expression":
        return True
    if node.type == "word":
        return _BRACES.search(re.sub(r"\\.", "_", _text(node), flags=re.DOTALL)) is not None
    if node.type == "concatenation":
        if any(child.type == "brace_expression" for child in node.named_children):
            return True
        skeleton = "".join(re.sub(r"\\.", "_", _text(c), flags=re.DOTALL) if c.type == "word" else "_" for c in node.named_children)
        return _BRACES.search(skeleton) is not None
    return False


def _entry_for(name: str, sub: str | None) -> str:
    """The trust entry that names `name` (with its subcommand, for a program
    whose subcommand decides)."""
    if sub is not None and (name in SUBCOMMANDS or name == "git") and not sub.startswith("-"):
        return f"Bash({name} {sub})"
    return f"Bash({name})"


class _Check:
    def __init__(self, trust: ShellTrust, memory: ShellMemory):
        self.trust = trust
        self.memory = memory
        self.failure: Verdict | None = None

    def fail(self, why: str, program: str | None = None, entry: str | None = None) -> bool:
        """Record the first reason the line is untrusted; always False."""
        if self.failure is None:
            self.failure = Verdict(local=False, program=program, why=why, entry=entry)
        return False

    # the tree

    def line(self, command: str, depth: int) -> bool:
        if depth > MAX_SHELL_NESTING:
            return self.fail("nested `sh -c` deeper than the reader follows")
        if len(command) > MAX_COMMAND_CHARS or "\x00" in command:
            return self.fail("too long, or holding a NUL byte, to read")
        tree = _parser().parse(command.encode("utf-8", "surrogatepass"))
        root = tree.root_node
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
        if kind == "expansion" and "@P" in _text(node):
            return self.fail("`${x@P}` runs what a prompt string holds")
        if kind in _WALKED:
            return all(self.node(c, depth) for c in node.children)
        # A function definition (and then a call to a name nobody listed),
        # and anything this walker does not know: untrusted.
        return kind in _INERT or self.fail(f"a shell construct the reader does not look through ({kind})")

    def assignment(self, node: tree_sitter.Node, depth: int) -> bool:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or not assignment_ok(_text(name), "" if value is None else _literal(value)):
            return self.fail("sets a variable that changes which program runs", _text(name) if name is not None else None)
        return all(self.node(c, depth) for c in node.named_children if c is not name)

    def redirect(self, node: tree_sitter.Node, depth: int) -> bool:
        target = node.child_by_field_name("destination")
        if target is not None:
            path = _literal(target)
            # bash opens sockets for these paths itself; a target only known
            # when it runs might be one.
            if path is None or path.startswith(("/dev/tcp/", "/dev/udp/")):
                return self.fail("a redirection to a socket, or to a file known only when it runs")
            if not _text(node).lstrip("0123456789").startswith("<") and _GIT_CONFIG_FILE.search(path):
                self.memory.git_config = _text(node)
        return all(self.node(c, depth) for c in node.named_children)

    def command(self, node: tree_sitter.Node, depth: int) -> bool:
        argv: list[str | None] = []
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
                return self.fail("a brace expansion makes words the line does not show", _text(word))
            if not self.node(word, depth):  # substitutions inside the word
                return False
            argv.append(_literal(word))
        return self.argv(argv, depth)

    # one command's argv

    def argv(self, argv: Sequence[str | None], depth: int) -> bool:
        if self._argv(argv, depth):
            return True
        if self.failure is None and argv:
            word = argv[0]
            name = _program_name(word)
            if name is None:
                base = _outside_program(word)
                entry = None if base is None else f"Bash({base})"
                return self.fail(WHY_UNSEEN if word is None else "a program outside the system's and the project's folders", word, entry)
            sub = _subcommand(name, argv[1:])
            label = f"{name} {sub}" if sub is not None and (name in SUBCOMMANDS or name == "git" or f"{name} {sub}" in NETWORK) else name
            if is_network(name, sub):
                return self.fail(WHY_NETWORK, label)
            # `source FILE` / `. FILE` run a script in this shell, as `bash
            # FILE` does: trusting the word would trust every script.
            known = (name in PROGRAMS or name in SUBCOMMANDS or name in _WRAPPERS or name in _SHELLS or name in _CHECKED
                     or name in ("xargs", "source", "."))
            if _PYTHON.fullmatch(name):
                return self.fail("runs code the line does not show (`-c`, a script, a module that is not a checker)", label)
            if known and (name not in SUBCOMMANDS or sub in SUBCOMMANDS[name]) and not (name == "git" and sub not in GIT_SUBCOMMANDS):
                return self.fail(WHY_RUNS_MORE, label)
            return self.fail(WHY_UNKNOWN, label, _entry_for(name, sub))
        return False

    def _argv(self, argv: Sequence[str | None], depth: int) -> bool:
        if not argv:
            return True  # only assignments or redirections, each checked
        word = argv[0]
        if _project_program(word):
            return True
        name = _program_name(word)
        if name is None:
            # A program by a path outside the system's folders (a tool under
            # the person's home: `~/android-sdk/emulator/emulator`) is known
            # only by the person's word for its name, never by the table.
            base = _outside_program(word)
            return base is not None and base not in self.trust.distrusted and base in self.trust.trusted
        args = list(argv[1:])
        sub = _subcommand(name, args)
        if name in _FILE_WRITERS and any(a is not None and _GIT_CONFIG_FILE.search(a) for a in args):
            self.memory.git_config = " ".join(a or "…" for a in argv)
        if name in self.trust.distrusted or (sub is not None and f"{name} {sub}" in self.trust.distrusted):
            return self.fail("distrusted by the person", name if sub is None else f"{name} {sub}")
        if name in self.trust.trusted or (sub is not None and f"{name} {sub}" in self.trust.trusted):
            return True
        if name == "xargs":
            return self.xargs(args, depth)
        wrapper = _WRAPPERS.get(name)
        if wrapper is not None:
            rest = wrapper(args)
            if rest is None:
                return False
            return True if not rest and name in _BARE_OK else bool(rest) and self.argv(rest, depth)
        if name in _SHELLS:
            if _syntax_check_only(args):
                return True
            script = _shell_script(args)
            return script is not None and self.line(script, depth + 1)
        checked = _CHECKED.get(name)
        if checked is not None:
            return checked(self, args, depth)
        if _PYTHON.fullmatch(name):
            return _python(args)
        if name in SUBCOMMANDS:
            return sub in SUBCOMMANDS[name]
        return name in PROGRAMS

    def xargs(self, args: list[str | None], depth: int) -> bool:
        """`xargs CMD …` runs CMD with words read from its input appended
        (or, with `-I R`, put where R stands): the program is on the line,
        its arguments are not. They are checked as unknown words, so any
        program whose behaviour an argument can change (`env`, `sh`, `git`,
        `sed`, `find`) is untrusted, while `xargs wc -l` is not."""
        replace: str | None = None
        i = 0
        flags = {"-0", "-r", "-t", "-x", "-p", "--null", "--no-run-if-empty", "--verbose", "--exit", "--interactive", "-o", "--open-tty"}
        valued = {"-n", "-L", "-P", "-d", "-s", "-E", "-a", "-I", "--max-args", "--max-procs", "--delimiter", "--arg-file", "--max-lines", "--max-chars", "--eof"}
        while i < len(args):
            arg = args[i]
            if arg is None:
                return False
            if arg == "--":
                i += 1
                break
            if not arg.startswith("-") or arg == "-":
                break
            if arg == "-I" and i + 1 < len(args):
                replace = args[i + 1]
                i += 2
            elif arg.startswith("-I") or arg.startswith("--replace=") or arg.startswith("-i"):
                replace = arg[2:] if arg.startswith("-I") else (arg.split("=", 1)[1] if "=" in arg else (arg[2:] or "{}"))
                i += 1
            elif arg == "--replace":
                replace = "{}"
                i += 1
            elif arg in flags:
                i += 1
            elif arg in valued:
                i += 2
            elif re.fullmatch(r"-[nLPdsEa].+|--(?:max-args|max-procs|delimiter|arg-file|max-lines|max-chars|eof)=.*", arg):
                i += 1
            else:
                return False
        rest = args[i:]
        if not rest:
            return True  # xargs runs echo
        if replace is None:
            command: list[str | None] = [*rest, None]
        else:
            command = [None if a is None or replace in a else a for a in rest]
        return self.argv(command, depth)

    def find(self, args: list[str | None], depth: int) -> bool:
        i = 0
        while i < len(args):
            if args[i] is None:
                return False  # an expression word known only when it runs may be `-exec`
            if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(args) and args[j] not in (";", "+"):
                    j += 1
                if j == len(args) or not self.argv(args[i + 1 : j], depth):
                    return False
                i = j
            elif args[i] in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args) and _GIT_CONFIG_FILE.search(args[i + 1] or ""):
                self.memory.git_config = "find " + " ".join(a or "…" for a in args)
            i += 1
        return True

    def git(self, args: list[str | None], depth: int) -> bool:
        i = _git_subcommand_at(args)
        if i is None:
            return False
        if self.memory.git_config is not None:
            return self.fail(f"git's configuration was changed earlier in the session ({_short(self.memory.git_config)}): a later git call may run any program", "git")
        if i >= len(args):
            return True  # `git --version`, or git alone (its usage)
        sub, rest = args[i], args[i + 1 :]
        if sub not in GIT_SUBCOMMANDS:
            return False
        if sub == "remote":
            # Listing the remotes reads the config; `remote show` and `remote
            # update` reach them.
            return all(a in ("-v", "--verbose") for a in rest) or rest[:1] == ["get-url"]
        if sub == "config":
            if _git_config_writes_a_program(rest):
                self.memory.git_config = "git config " + " ".join(a or "…" for a in rest)
            return True
        if sub == "filter-branch":
            return self.filter_branch(rest, depth)
        if sub == "bisect":
            if rest[:1] == ["run"]:
                return self.argv(rest[1:], depth)
            return not rest or rest[0] in ("start", "good", "bad", "new", "old", "reset", "log", "skip", "terms", "replay")
        runs = _GIT_RUNS.get(sub or "")
        if runs is None:
            # A word known only when it runs (`-m "$(cat <<'EOF' …)"`) is an
            # operand or an option's value, and no option of these runs anything.
            return True
        letter, long = runs
        for arg in rest:
            if arg is None or _abbreviates(arg, long) or (re.match(r"-[A-Za-z]", arg) is not None and letter in arg.split("=")[0]):
                return False
        return True

    def filter_branch(self, args: list[str | None], depth: int) -> bool:
        """`git filter-branch`: each filter is a shell script git runs, so
        it is checked as a line (an abbreviated filter option fails closed)."""
        i = 0
        while i < len(args):
            arg = args[i]
            if arg is None:
                return False
            name, has_value, value = arg.partition("=")
            if name in _FILTER_SCRIPTS:
                script = value if has_value else (args[i + 1] if i + 1 < len(args) else None)
                if script is None or not self.line(script, depth + 1):
                    return False
                i += 1 if has_value else 2
                continue
            if name.startswith("--") and any(_abbreviates(name, opt) for opt in _FILTER_SCRIPTS):
                return False
            i += 1
        return True

    def compiler(self, args: list[str | None], depth: int) -> bool:
        """A C-family compiler: local, unless an option makes it run a
        program of the line's choosing (`-wrapper`, `-B`, a plugin, a specs
        file, a response file, `-ccbin`)."""
        for arg in args:
            if arg is None:
                continue  # an operand or a value: no option of a compiler is spelled through one alone
            if arg.startswith(("-wrapper", "-B", "-fplugin", "-specs", "--specs", "-Xclang", "@", "-ccbin", "--compiler-bindir", "-Xcompiler", "-no-integrated-cpp")):
                return False
        return True

    def make(self, args: list[str | None], depth: int) -> bool:
        """`make`: the project's recipes are the project's code; a variable
        set on the line (`CC=…`, `SHELL=…`) or `--eval` could make it run
        another program, so only plain values are let through."""
        for i, arg in enumerate(args):
            if arg is None:
                return False
            if arg.startswith(("--eval", "-E")) or (arg in ("-f", "--file", "--makefile") and not _in_tree(args[i + 1] if i + 1 < len(args) else None)):
                return False
            if "=" in arg and not arg.startswith("-"):
                name, _, value = arg.partition("=")
                if not re.fullmatch(r"[\w.,:+/-]*", value):
                    return False
                if re.search(r"CC|CXX|LD|AR|AS|CPP|SHELL|MAKE|PROG|CMD|COMMAND|TOOL|EXE|PYTHON|PERL|RUN|WRAP", name.upper()) and value:
                    program = _program_name(value)
                    if program is None or not (program in PROGRAMS or _PYTHON.fullmatch(program) or _project_program(value)):
                        return False
        return True

    def cmake(self, args: list[str | None], depth: int) -> bool:
        """`cmake`: configuring and building are local; `-E` runs a tool,
        of which only the ones that touch files are."""
        for i, arg in enumerate(args):
            if arg == "-E":
                tool = args[i + 1] if i + 1 < len(args) else None
                return tool in _CMAKE_TOOLS
        return True

    def latexmk(self, args: list[str | None], depth: int) -> bool:
        """`latexmk`: `-e CODE`, `-r FILE` and `-pdflatex=COMMAND` choose
        what it runs; without them it runs the TeX programs."""
        return not any(a is None or a.startswith(("-e", "-r")) or (a.startswith("-") and "=" in a) for a in args)

    def mix(self, args: list[str | None], depth: int) -> bool:
        """`mix TASK`: the project's own tasks are local, the fetching ones
        are not (`MIX_FETCHING`)."""
        task = _first_operand(args)
        if task is None:
            return not args  # `mix` alone runs the default task (compile)
        return task not in MIX_FETCHING and not task.startswith(MIX_FETCHING_PREFIXES)

    def dpkg(self, args: list[str | None], depth: int) -> bool:
        return bool(args) and args[0] in DPKG_QUERIES

    def traced(self, args: list[str | None], depth: int) -> bool:
        """`valgrind`, `strace`, `ltrace`: the program they run is checked;
        a debugger hook that runs a command (`--db-command`), or output
        piped to one (`strace -o '|cmd'`), is not trusted."""
        valued = {"-o", "-e", "-p", "-s", "-u", "-E", "-P", "-a", "-X", "-b", "-O", "-S", "-I", "-U"}
        i = 0
        while i < len(args):
            arg = args[i]
            if arg is None:
                return False
            if arg == "--":
                i += 1
                break
            if not arg.startswith("-"):
                break
            if "command" in arg or arg.startswith(("-o|", "-o!", "--output=|", "--output=!")):
                return False
            if arg in valued:
                value = args[i + 1] if i + 1 < len(args) else None
                if value is None or value.startswith(("|", "!")):
                    return False
                i += 2
            else:
                i += 1
        rest = args[i:]
        return not rest or self.argv(rest, depth)

    def perf(self, args: list[str | None], depth: int) -> bool:
        sub = args[0] if args else None
        if sub in SUBCOMMANDS["perf"]:
            return True
        if sub not in ("record", "stat", "trace"):
            return False
        valued = {"-o", "-e", "-p", "-t", "-c", "-F", "-C", "-m", "-r", "-u", "-G", "-I", "-x", "-j", "--output", "--event", "--pid", "--freq", "--repeat"}
        i = 1
        while i < len(args):
            arg = args[i]
            if arg is None:
                return False
            if arg == "--":
                i += 1
                break
            if not arg.startswith("-"):
                break
            i += 2 if arg in valued else 1
        rest = args[i:]
        return not rest or self.argv(rest, depth)

    def gdb(self, args: list[str | None], depth: int) -> bool:
        """`gdb`: reports on a program the person built. Its own shell,
        pipe and scripting commands (`-ex 'shell …'`, `-x FILE`) are not
        trusted; the program it runs (after `--args`, or its first operand)
        is checked."""
        i = 0
        program: list[str | None] | None = None
        while i < len(args):
            arg = args[i]
            if arg is None:
                return False
            if arg == "--args":
                program = args[i + 1 :]
                break
            name, has_value, value = arg.partition("=")
            if name in ("-x", "--command", "-ix", "--init-command", "-cd", "--cd", "-d", "--directory", "-D", "--data-directory"):
                return False
            if name in ("-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--init-eval-command"):
                command = value if has_value else (args[i + 1] if i + 1 < len(args) else None)
                if command is None or _GDB_ESCAPES.match(command):
                    return False
                i += 1 if has_value else 2
                continue
            if name in ("-p", "--pid", "-c", "--core", "-s", "--symbols", "-e", "--exec", "-se", "-tty", "--tty"):
                i += 2
                continue
            if not arg.startswith("-") and program is None:
                program = [arg]
            i += 1
        return program is None or not program or self.argv(program, depth)


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _abbreviates(arg: str, long: str) -> bool:
    """Whether `arg` is `long` or an abbreviation git (or getopt_long) takes
    for it: `--exe` and `--exe=…` for `--exec`."""
    name = arg.split("=", 1)[0]
    return name.startswith("--") and len(name) >= 3 and long.startswith(name)


def _git_config_writes_a_program(args: Sequence[str | None]) -> bool:
    """Whether `git config ARGS` may make a later git call run a program:
    a write (a key and a value, `set`, `--add`, `--replace-all`, `--edit`,
    `--rename-section`, …) of any key not known to be inert. A read
    (`--get`, `--list`, one key alone) writes nothing."""
    if any(a is None for a in args):
        return True
    words = [a for a in args if a is not None]
    if any(w in ("-e", "edit", "rename-section", "remove-section") for w in words):
        return True
    if any(_abbreviates(w, long) for w in words for long in ("--edit", "--rename-section", "--remove-section")):
        return True  # git takes `--ed` for `--edit`
    if any(w in _GIT_CONFIG_READS for w in words):
        return False
    operands: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("-f", "--file", "--blob", "--type", "--default", "--comment"):
            i += 2
            continue
        if not w.startswith("-"):
            operands.append(w)
        i += 1
    if operands[:1] == ["set"]:
        operands = operands[1:]
    elif len(operands) < 2:
        return False  # one key alone: a read
    return not operands or _GIT_SAFE_CONFIG.match(operands[0]) is None


#: gdb commands that run a shell, a pipe or a script: untrusted in `-ex`.
_GDB_ESCAPES = re.compile(r"\s*(?:!|\||shell\b|pipe\b|python|py\b|pi\b|source\b|guile|gu\b|make\b|compile\b|define\b|eval\b)", re.IGNORECASE)
#: `cmake -E` tools that only touch files and print.
_CMAKE_TOOLS = frozenset({"make_directory", "copy", "copy_directory", "copy_if_different", "remove", "remove_directory", "rm", "echo", "echo_append", "touch", "touch_nocreate", "create_symlink", "md5sum", "sha1sum", "sha256sum", "compare_files", "rename", "cat", "capabilities", "true", "false", "environment"})

_CHECKED: dict[str, Callable[[_Check, list[str | None], int], bool]] = {
    "find": _Check.find,
    "git": _Check.git,
    "make": _Check.make,
    "gmake": _Check.make,
    "cmake": _Check.cmake,
    "latexmk": _Check.latexmk,
    "dpkg": _Check.dpkg,
    "mix": _Check.mix,
    "valgrind": _Check.traced,
    "strace": _Check.traced,
    "ltrace": _Check.traced,
    "perf": _Check.perf,
    "gdb": _Check.gdb,
    **{cc: _Check.compiler for cc in ("gcc", "g++", "cc", "c++", "clang", "clang++", "cpp", "nvcc")},
    "sed": lambda c, a, d: _sed(a),
    "gsed": lambda c, a, d: _sed(a),
    **{awk: (lambda c, a, d: _awk(a)) for awk in ("awk", "gawk", "mawk", "nawk")},
    "rg": lambda c, a, d: not any(x is None or _abbreviates(x, "--pre") or x.startswith("--pre=") or x == "--pre" for x in a),
    "mypy": lambda c, a, d: not any(x is None or _abbreviates(x, "--install-types") for x in a),
    # `--compress-program=PROG` runs one
    "sort": lambda c, a, d: not any(x is None or _abbreviates(x, "--compress-program") for x in a),
}


# ─── per-program rules ──────────────────────────────────────────────────────

_PYTHON = re.compile(r"python(?:\d(?:\.\d+)?)?")


def _in_tree(word: str | None) -> bool:
    """A relative path with no `..`: inside the folder the command runs in."""
    return bool(word) and word is not None and not word.startswith(("/", "~", "-")) and "$" not in word and ".." not in word.split("/")


def _project_program(word: str | None) -> bool:
    """A program the project holds or built, run by its path from inside
    the tree (`./build/bench`, `tests/unit_tests`, `./configure`): its own
    code, as its tests are. A project environment's folder (`.venv/bin`,
    `node_modules/.bin`) is not this: what is installed there is known by
    its name. Nor is a program named like a network client (`tools/curl`)."""
    if not word or "/" not in word or not _in_tree(word):
        return False
    folder, _, name = word.rpartition("/")
    if not name or _ENV_BIN.fullmatch(folder):
        return False
    return name not in NETWORK


def _program_name(word: str | None) -> str | None:
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


def _outside_program(word: str | None) -> str | None:
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


#: A program's name as a trust entry spells it.
_COMMAND_NAME = re.compile(r"[\w.+:-]+")


def _syntax_check_only(args: Sequence[str | None]) -> bool:
    """`bash -n script.sh`, `sh -n -c '…'`: the shell reads the commands and
    checks their syntax without running any (`-n`, `-o noexec`), so it
    brings in nothing but its own diagnostics. Only the options before the
    first operand count (after it they are the script's arguments), and an
    interactive shell (`-i`), which ignores `-n`, is not one."""
    noexec = False
    for i, arg in enumerate(args):
        if arg is None:
            return False
        if arg in ("--", "-") or not arg.startswith(("-", "+")):
            break
        if arg.startswith("--"):
            if arg in ("--noprofile", "--norc", "--posix", "--restricted", "--verbose"):
                continue
            return False
        if arg.startswith("+"):
            return False
        flags = arg[1:]
        if "i" in flags or "s" in flags:
            return False
        if "n" in flags:
            noexec = True
        if "o" in flags:
            value = args[i + 1] if i + 1 < len(args) else None
            if value == "noexec":
                noexec = True
    return noexec


def _subcommand(name: str, args: Sequence[str | None]) -> str | None:
    """A program's subcommand: git's past its global options, any other's
    its first argument that is not an option."""
    if name == "git":
        at = _git_subcommand_at(args)
        return args[at] if at is not None and at < len(args) else None
    return _first_operand(args)


def _first_operand(args: Sequence[str | None]) -> str | None:
    for arg in args:
        if arg is None:
            return None
        if not arg.startswith("-"):
            return arg
    return None


def _options(
    args: list[str | None], *, flags: Iterable[str] = (), valued: Iterable[str] = (), attached: Iterable[str] = ()
) -> list[str | None] | None:
    """`args` past the wrapper's own options; `None` on an option not
    listed (or one spelled through an expansion). `valued` options take the
    next word; `attached` ones may carry their value in the same word
    (`-n5`, `--user=x`)."""
    flags, valued, attached = set(flags), set(valued), tuple(attached)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg is None:
            return None
        if arg == "--":
            return args[i + 1 :]
        if not arg.startswith("-") or arg == "-":
            return args[i:]
        if arg in flags:
            i += 1
        elif arg in valued:
            i += 2
        elif attached and arg.startswith(attached):
            i += 1
        else:
            return None
    return []


def _env(args: list[str | None]) -> list[str | None] | None:
    rest = _options(args, flags=("-i", "-0", "--ignore-environment", "--null"), valued=("-u", "--unset", "-C", "--chdir"), attached=("--unset=", "--chdir="))
    while rest and rest[0] is not None and "=" in rest[0]:
        name, value = rest[0].split("=", 1)
        if not assignment_ok(name, value):
            return None
        rest = rest[1:]
    return rest


def _timeout(args: list[str | None]) -> list[str | None] | None:
    rest = _options(args, flags=("--preserve-status", "--foreground", "-v", "--verbose"), valued=("-s", "--signal", "-k", "--kill-after"), attached=("--signal=", "--kill-after="))
    return None if not rest else rest[1:]  # the duration, then the command


def _project_run(args: list[str | None]) -> list[str | None] | None:
    """`uv run CMD`, `poetry run CMD`: CMD in the project's environment (not
    `--with`, which adds a package from elsewhere to it)."""
    if not args or args[0] != "run":
        return None
    return _options(
        args[1:],
        flags=("--frozen", "--locked", "--offline", "--no-sync", "--all-extras", "--no-dev", "--dev", "--isolated", "-q", "--quiet", "-v", "--verbose"),
        valued=("--python", "-p", "--project", "--directory", "--package", "--extra", "--group", "--only-group"),
        attached=("--python=", "--project=", "--directory=", "--package=", "--extra=", "--group=", "--only-group="),
    )


_WRAPPERS: dict[str, Callable[[list[str | None]], list[str | None] | None]] = {
    "sudo": lambda a: _options(
        a,
        flags=("-E", "-H", "-n", "-S", "-k", "-b", "-P", "--preserve-env", "--non-interactive", "--stdin", "--set-home", "--background"),
        valued=("-u", "-g", "-C", "-D", "-p", "-r", "-t", "-T", "-U", "-h", "--user", "--group", "--chdir", "--prompt"),
        attached=("--user=", "--group=", "--chdir=", "--prompt=", "--preserve-env="),
    ),
    "env": _env,
    "uv": _project_run,
    "poetry": _project_run,
    "nice": lambda a: _options(a, valued=("-n", "--adjustment"), attached=("--adjustment=", "-1", "-2", "-3", "-4", "-5", "-6", "-7", "-8", "-9")),
    "nohup": lambda a: _options(a),
    "timeout": _timeout,
    "command": lambda a: [] if a and a[0] in ("-v", "-V") else _options(a, flags=("-p",)),
    "exec": lambda a: _options(a, flags=("-c", "-l"), valued=("-a",)),
    "time": lambda a: _options(a, flags=("-p", "-v", "--verbose", "--portability", "-a", "--append"), valued=("-f", "--format", "-o", "--output"), attached=("--format=", "--output=")),
    "stdbuf": lambda a: _options(a, valued=("-i", "-o", "-e"), attached=("-i", "-o", "-e", "--input=", "--output=", "--error=")),
    "xargs": lambda a: _options(
        a,
        flags=("-0", "-r", "-t", "-x", "--null", "--no-run-if-empty", "--verbose", "--exit"),
        valued=("-I", "-n", "-L", "-P", "-d", "-s", "-E", "-a", "--max-args", "--max-procs", "--delimiter", "--arg-file"),
        attached=("-I", "-i", "-n", "-L", "-l", "-P", "-d", "-s", "--max-args=", "--max-procs=", "--delimiter=", "--arg-file=", "--replace"),
    ),
}
#: Wrappers that, given no command, run nothing (`env` prints the
#: environment, `xargs` runs `echo`, `exec` with only redirections).
_BARE_OK = frozenset({"env", "xargs", "exec", "command", "time"})


def _shell_script(args: list[str | None]) -> str | None:
    """The script of `sh -c SCRIPT` (any options before it, `-lc` and the
    like); `None` when the shell would read a file or its input instead."""
    has_c = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg is None:
            return None
        if arg in ("-o", "+o", "-O", "+O"):
            i += 2
            continue
        if arg in ("--login", "--norc", "--noprofile", "--posix", "--noediting"):
            i += 1
            continue
        if re.fullmatch(r"[-+][a-zA-Z]+", arg):
            has_c = has_c or "c" in arg[1:]
            # `-euo pipefail`: an `o` among the letters takes the next word.
            i += 2 if "o" in arg[1:] or "O" in arg[1:] else 1
            continue
        if arg == "--":
            i += 1
        break
    if not has_c or i >= len(args):
        return None
    return args[i]


def _git_subcommand_at(args: Sequence[str | None]) -> int | None:
    """Where git's subcommand is, past its global options; `len(args)` when
    there is none (`git --version`); `None` on a global option that can run
    a program or reach elsewhere (`--exec-path`, `-c core.pager=…`)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg is None:
            return None
        if arg in ("-C", "--git-dir", "--work-tree", "--namespace"):
            i += 2
        elif arg == "-c":
            value = args[i + 1] if i + 1 < len(args) else None
            if value is None or not _GIT_SAFE_CONFIG.match(value):
                return None
            i += 2
        elif arg.startswith(("--git-dir=", "--work-tree=", "--namespace=")) or arg in (
            "-P", "--no-pager", "-p", "--paginate", "--bare", "--no-replace-objects", "--literal-pathspecs",
            "--no-optional-locks", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--version", "--help",
        ):
            i += 1
        elif arg.startswith("-"):
            return None
        else:
            return i
    return len(args)


def _python(args: list[str | None]) -> bool:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg is None:
            return False
        if arg in ("-V", "--version"):
            return True
        if arg.startswith("-m"):
            module, rest = (args[i + 1] if i + 1 < len(args) else None, args[i + 2 :]) if arg == "-m" else (arg[2:], args[i + 1 :])
            if module == "pip":  # `python -m pip list` asks; `… install` fetches
                return _first_operand(rest) in PIP_QUERIES
            return module in PYTHON_MODULES
        if arg in ("-W", "-X"):
            i += 2
        elif re.fullmatch(r"-[uBEsSIOqbd]+|-[WX].+", arg):
            i += 1
        else:
            return False  # `-c`, a script, stdin: code nobody can read from the line
    return False


# sed: a script made only of addresses and the commands that print, delete,
# substitute, transliterate or add text (no `e`, `w`, `r`, `W`, `R`, `F`,
# and no `s///e` or `s///w`).
_SED_ADDR = r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/I?)"
_SED_DELIMITED = r"(?P<{0}>[^\\\n\w\s;{{}}])(?:(?!(?P={0}))[^\\\n]|\\.)*(?P={0})(?:(?!(?P={0}))[^\\\n]|\\.)*(?P={0})"
_SED_STEP = re.compile(
    r"\s*(?:[;\n}]"
    rf"|(?:{_SED_ADDR}(?:\s*,\s*(?:{_SED_ADDR}|[+~]\d+))?)?\s*!?\s*"
    r"(?:\{"
    r"|(?:[pPdDqQ=nNgGhHxlz](?:[ \t]*\d+)?"
    rf"|s{_SED_DELIMITED.format('s')}[gpiImM0-9]*"
    rf"|y{_SED_DELIMITED.format('y')}"
    r"|[aic]\\?[^\n]*)(?=\s*(?:[;\n}]|$))))",
)


def _sed_script_ok(script: str) -> bool:
    pos = 0
    while script[pos:].strip():
        match = _SED_STEP.match(script, pos)
        if match is None or match.end() == pos:
            return False
        pos = match.end()
    return True


def _sed(args: list[str | None]) -> bool:
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg is None:
            return False
        if arg in ("-e", "--expression"):
            if i + 1 >= len(args) or args[i + 1] is None:
                return False
            scripts.append(args[i + 1] or "")
            i += 2
            continue
        if arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
        elif arg in ("-l", "--line-length"):
            i += 1
        elif arg.startswith("-i") or arg.startswith("--in-place") or arg in (
            "-n", "--quiet", "--silent", "-E", "-r", "--regexp-extended", "-s", "--separate", "-u", "--unbuffered",
            "-z", "--null-data", "--posix", "--debug", "--sandbox", "-En", "-nE", "-rn", "-nr",
        ):
            pass
        elif arg.startswith("-") and arg != "-":
            return False  # `-f FILE` and anything else: a script not on the line
        else:
            operands.append(arg)
        i += 1
    if not scripts:
        if not operands:
            return False
        scripts.append(operands[0])
    return all(_sed_script_ok(s) for s in scripts)


#: awk programs that can run a command, read one's output or open a socket.
_AWK_RUNS = re.compile(r"system|getline|\||/inet|@|ENVIRON\s*\[")


def _awk(args: list[str | None]) -> bool:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg is None:
            return False
        if arg in ("-F", "-v"):
            i += 2
        elif arg.startswith(("-F", "-v")) and len(arg) > 2:
            i += 1
        elif arg == "--":
            i += 1
            break
        elif arg.startswith("-"):
            return False  # `-f FILE`, `--source`, `-E`: a program not on the line
        else:
            break
    if i >= len(args) or args[i] is None:
        return False
    return _AWK_RUNS.search(args[i] or "") is None
