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
stranger's text (README.md, a test's output); the README's trust model says
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

#: A command line longer than this is not parsed: untrusted.
MAX_COMMAND_CHARS = 200_000
#: How deep `sh -c 'sh -c "…"'` may nest before the line is untrusted.
MAX_SHELL_NESTING = 8

# ─── the allowlist ──────────────────────────────────────────────────────────

#: Programs trusted whatever their arguments: they read, compare, list or
#: change local files and print what they found, and none opens a socket.
PROGRAMS = frozenset(
    {
        # reading and listing files
        "cat", "head", "tail", "wc", "ls", "tree", "file", "stat", "du", "df", "realpath", "readlink",
        "basename", "dirname", "pwd", "nl", "tac", "rev", "od", "xxd", "hexdump", "strings",
        # searching and comparing
        "grep", "egrep", "fgrep", "diff", "cmp", "comm",
        # text filters
        "sort", "uniq", "cut", "tr", "paste", "join", "fold", "fmt", "column", "expand", "unexpand", "jq",
        "base64", "md5sum", "sha1sum", "sha256sum", "sha512sum", "shasum", "cksum", "tee", "seq",
        # changing local files
        "mkdir", "rmdir", "touch", "cp", "mv", "rm", "ln", "chmod", "chown",
        # the shell's own and the machine's state
        "cd", "pushd", "popd", "echo", "printf", "true", "false", ":", "test", "[", "set", "shift",
        "exit", "return", "read", "wait", "sleep", "date", "whoami", "id", "uname", "which", "type",
        "printenv", "nproc", "ps", "kill", "umask", "ulimit", "clear", "break", "continue",
        # formatters, linters and test runners: they run the repository's
        # own code (see the module docstring)
        "pytest", "py.test", "ruff", "black", "isort", "flake8", "pyflakes", "pylint",
        "tsc", "eslint", "prettier", "jest", "vitest", "mocha", "gofmt", "rustfmt",
    }
)

#: git subcommands that work on the local repository only (`fetch`, `pull`,
#: `push`, `clone`, `ls-remote`, `submodule`, `remote update`, … are not here).
GIT_SUBCOMMANDS = frozenset(
    {
        "status", "diff", "log", "show", "blame", "annotate", "branch", "rev-parse", "rev-list", "ls-files",
        "ls-tree", "cat-file", "grep", "describe", "shortlog", "reflog", "stash", "tag", "add", "commit",
        "restore", "checkout", "switch", "reset", "rm", "mv", "merge", "rebase", "cherry-pick", "revert",
        "init", "config", "worktree", "merge-base", "name-rev", "range-diff", "whatchanged", "show-ref",
        "symbolic-ref", "for-each-ref", "count-objects", "fsck", "gc", "clean", "apply", "format-patch",
        "diff-tree", "diff-files", "diff-index", "check-ignore", "check-attr", "var", "version", "help",
        "remote",
    }
)
#: `git -c KEY=VALUE`: only keys that cannot make git run another program.
_GIT_SAFE_CONFIG = re.compile(r"(?:color\.[\w.-]+|core\.quotepath|core\.abbrev|user\.name|user\.email|safe\.directory|advice\.[\w.-]+|init\.defaultbranch|commit\.gpgsign)=", re.IGNORECASE)
#: Subcommand options that make git run a command: the short letter (also
#: inside a bundle, `-ix`) and the long spelling.
_GIT_RUNS = {"rebase": ("x", "--exec"), "grep": ("O", "--open-files-in-pager")}

#: `python -m MODULE` for these modules: test runners and checkers.
PYTHON_MODULES = frozenset({"pytest", "unittest", "mypy", "ruff", "black", "isort", "flake8", "pyflakes", "pylint", "py_compile", "compileall", "json.tool", "doctest"})
_PYTHON = re.compile(r"python(?:\d(?:\.\d+)?)?")

#: Per-program subcommand lists: the build and test subcommands of package
#: managers (none of `install`, `add`, `update`, `fetch`, `run`, `view`, …).
SUBCOMMANDS: dict[str, frozenset[str]] = {
    "cargo": frozenset({"test", "build", "check", "clippy", "fmt"}),
    "go": frozenset({"test", "build", "vet", "fmt", "version", "env"}),
    "npm": frozenset({"test", "t"}),
    "yarn": frozenset({"test"}),
    "pnpm": frozenset({"test"}),
}

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


def command_stays_local(command: str | Sequence[str], trust: ShellTrust = DEFAULT_TRUST) -> bool:
    """Whether everything `command` runs is known to stay on this machine.

    `command` is a shell command line, or an argv array as Codex records it.
    `True` only when every program in it — after every pipe, chain,
    substitution, wrapper and nested `sh -c` — is allowlisted (with an
    allowlisted subcommand where the program has a list); `False` for
    anything else, and for anything that does not parse."""
    try:
        if isinstance(command, str):
            return _Check(trust).line(command, 0)
        argv: list[str | None] = [str(word) for word in command]
        return _Check(trust).argv(argv, 0)
    except RecursionError:
        return False


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


class _Check:
    def __init__(self, trust: ShellTrust):
        self.trust = trust

    # the tree

    def line(self, command: str, depth: int) -> bool:
        if depth > MAX_SHELL_NESTING or len(command) > MAX_COMMAND_CHARS or "\x00" in command:
            return False
        tree = _parser().parse(command.encode("utf-8", "surrogatepass"))
        root = tree.root_node
        if root.has_error:
            return False
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
            return False  # `${x@P}` runs what a prompt string holds
        if kind in _WALKED:
            return all(self.node(c, depth) for c in node.children)
        # A function definition (and then a call to a name nobody listed),
        # and anything this walker does not know: untrusted.
        return kind in _INERT

    def assignment(self, node: tree_sitter.Node, depth: int) -> bool:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or not assignment_ok(_text(name), "" if value is None else _literal(value)):
            return False
        return all(self.node(c, depth) for c in node.named_children if c is not name)

    def redirect(self, node: tree_sitter.Node, depth: int) -> bool:
        target = node.child_by_field_name("destination")
        if target is not None:
            path = _literal(target)
            # bash opens sockets for these paths itself; a target only known
            # when it runs might be one.
            if path is None or path.startswith(("/dev/tcp/", "/dev/udp/")):
                return False
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
            if not self.node(word, depth):  # substitutions inside the word
                return False
            argv.append(_literal(word))
        return self.argv(argv, depth)

    # one command's argv

    def argv(self, argv: Sequence[str | None], depth: int) -> bool:
        if not argv:
            return True  # only assignments or redirections, each checked
        name = _program_name(argv[0])
        if name is None:
            return False
        args = list(argv[1:])
        sub = _subcommand(name, args)
        if name in self.trust.distrusted or (sub is not None and f"{name} {sub}" in self.trust.distrusted):
            return False
        if name in self.trust.trusted or (sub is not None and f"{name} {sub}" in self.trust.trusted):
            return True
        wrapper = _WRAPPERS.get(name)
        if wrapper is not None:
            rest = wrapper(args)
            if rest is None:
                return False
            return True if not rest and name in _BARE_OK else bool(rest) and self.argv(rest, depth)
        if name in _SHELLS:
            script = _shell_script(args)
            return script is not None and self.line(script, depth + 1)
        if name == "find":
            return self.find(args, depth)
        if name == "git":
            return _git(args)
        if _PYTHON.fullmatch(name):
            return _python(args)
        if name in ("sed", "gsed"):
            return _sed(args)
        if name in ("awk", "gawk", "mawk", "nawk"):
            return _awk(args)
        if name == "rg":
            return not any(a is None or a == "--pre" or a.startswith("--pre=") for a in args)
        if name == "mypy":
            return "--install-types" not in args
        if name == "sort":  # `--compress-program=PROG` runs one
            return not any(a is None or a.startswith("--compress") for a in args)
        if name in SUBCOMMANDS:
            return sub in SUBCOMMANDS[name]
        return name in PROGRAMS

    def find(self, args: list[str | None], depth: int) -> bool:
        i = 0
        while i < len(args):
            if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(args) and args[j] not in (";", "+"):
                    j += 1
                if j == len(args) or not self.argv(args[i + 1 : j], depth):
                    return False
                i = j
            i += 1
        return True


# ─── per-program rules ──────────────────────────────────────────────────────


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


def _git(args: list[str | None]) -> bool:
    i = _git_subcommand_at(args)
    if i is None:
        return False
    if i >= len(args):
        return True  # `git --version`, or git alone (its usage)
    sub, rest = args[i], args[i + 1 :]
    if sub not in GIT_SUBCOMMANDS:
        return False
    if sub == "remote":
        # Listing the remotes reads the config; `remote show` and `remote
        # update` reach them.
        return all(a in ("-v", "--verbose") for a in rest) or rest[:1] == ["get-url"]
    runs = _GIT_RUNS.get(sub or "")
    if runs is None:
        # A word known only when it runs (`-m "$(cat <<'EOF' …)"`) is an
        # operand or an option's value, and no option of these runs anything.
        return True
    letter, long = runs
    for arg in rest:
        if arg is None or arg.startswith(long) or (re.match(r"-[A-Za-z]", arg) is not None and letter in arg.split("=")[0]):
            return False
    return True


def _python(args: list[str | None]) -> bool:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg is None:
            return False
        if arg in ("-V", "--version"):
            return True
        if arg == "-m":
            return i + 1 < len(args) and args[i + 1] in PYTHON_MODULES
        if arg.startswith("-m"):
            return arg[2:] in PYTHON_MODULES
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
