"""The program families the reader looks inside, one declarative spec each.

A family's spec says how its programs read their options (`OptionSpec`:
which take a value, which run another program); its check, a few lines on
what the one scanner (`options.scan`) found, says what the program runs in
turn (`Runs`: the commands a wrapper, `xargs`, a debugger or `find -exec`
runs, the scripts a shell or `git filter-branch` runs) or that it fails
closed (`None`). The walker (`walk.py`) checks what a family runs as it
checks the line itself, so `sudo nice timeout 9 curl …` is as untrusted as
`curl …`.

Which programs and subcommands stay local at all, and which fetch, is the
table's (`programs.py`); git, the largest family, is `git.py`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mecha.core.sessions.shell.names import PYTHON, first_operand, in_tree, program_name, project_program
from mecha.core.sessions.shell.options import NOTHING, OptionSpec, Runs, Word, scan, spec
from mecha.core.sessions.shell.programs import (
    DPKG_QUERIES,
    MIX_FETCHING,
    MIX_FETCHING_PREFIXES,
    NETWORK,
    PIP_QUERIES,
    PROGRAMS,
    PYTHON_MODULES,
    SUBCOMMANDS,
)
from mecha.core.sessions.shell.scripts import CodeDoubt, awk_program_ok, node_code_doubt, python_code_doubt, sed_script_ok
from mecha.core.sessions.shell.variables import assignment_ok

Check = Callable[[list[Word]], "Runs | None"]


def _ok(local: bool) -> Runs | None:
    return NOTHING if local else None


# ─── wrappers: options, then the command they run ───────────────────────────

_SUDO = spec(
    ["-E", "-H", "-n", "-S", "-k", "-b", "-P", "--preserve-env", "--non-interactive", "--stdin", "--set-home", "--background"],
    ["-u", "-g", "-C", "-D", "-p", "-r", "-t", "-T", "-U", "-h", "--user", "--group", "--chdir", "--prompt"],
)
_ENV = spec(["-i", "-0", "--ignore-environment", "--null"], ["-u", "--unset", "-C", "--chdir"])
_NICE = spec(valued=["-n", "--adjustment"], attached=tuple(f"-{n}" for n in range(1, 10)))
_TIMEOUT = spec(["--preserve-status", "--foreground", "-v", "--verbose"], ["-s", "--signal", "-k", "--kill-after"])
_TIME = spec(["-p", "-v", "--verbose", "--portability", "-a", "--append"], ["-f", "--format", "-o", "--output"])
_STDBUF = spec(valued=["-i", "-o", "-e", "--input", "--output", "--error"])
_PROJECT_RUN = spec(
    ["--frozen", "--locked", "--offline", "--no-sync", "--all-extras", "--no-dev", "--dev", "--isolated", "-q", "--quiet", "-v", "--verbose"],
    ["--python", "-p", "--project", "--directory", "--package", "--extra", "--group", "--only-group"],
)
_XARGS = spec(
    ["-0", "-r", "-t", "-x", "-p", "--null", "--no-run-if-empty", "--verbose", "--exit", "--interactive", "-o", "--open-tty"],
    ["-n", "-L", "-P", "-d", "-s", "-E", "-a", "-I", "--max-args", "--max-procs", "--delimiter", "--arg-file", "--max-lines", "--max-chars", "--eof"],
    optional=["-i", "--replace"],
)


def _command(rest: list[Word], bare_ok: bool) -> Runs | None:
    """A wrapper's command; with none, it runs nothing only where `bare_ok`
    (`env` prints the environment, `exec` with only redirections)."""
    if not rest:
        return NOTHING if bare_ok else None
    return Runs(commands=(rest,))


def _wrapper(options: OptionSpec, bare_ok: bool = False) -> Check:
    def check(args: list[Word]) -> Runs | None:
        found = scan(args, options)
        return None if found is None else _command(found.rest, bare_ok)

    return check


def _assigning(options: OptionSpec, bare_ok: bool) -> Check:
    """`env`, `sudo`: options, then `NAME=VALUE` words that set the
    command's environment (checked as a prefix assignment is), then the command."""

    def check(args: list[Word]) -> Runs | None:
        found = scan(args, options)
        if found is None:
            return None
        rest = found.rest
        while rest and rest[0] is not None and "=" in rest[0].split("/", 1)[0]:
            name, value = rest[0].split("=", 1)
            if not assignment_ok(name, value):
                return None
            rest = rest[1:]
        return _command(rest, bare_ok)

    return check


def _timeout(args: list[Word]) -> Runs | None:
    found = scan(args, _TIMEOUT)
    return None if found is None or not found.rest else _command(found.rest[1:], bare_ok=False)  # the duration first


def _project_run(args: list[Word]) -> Runs | None:
    """`uv run CMD`, `poetry run CMD`: CMD in the project's environment (not
    `--with`, which adds a package from elsewhere to it)."""
    if not args or args[0] != "run":
        return None
    found = scan(args[1:], _PROJECT_RUN)
    return None if found is None else _command(found.rest, bare_ok=False)


def _command_builtin(args: list[Word]) -> Runs | None:
    if args and args[0] in ("-v", "-V"):
        return NOTHING
    found = scan(args, spec(["-p"]))
    return None if found is None else _command(found.rest, bare_ok=True)


def xargs(args: list[Word]) -> Runs | None:
    """`xargs CMD …` runs CMD with words read from its input appended (or,
    with `-I R`, put where R stands): the program is on the line, its
    arguments are not. They are checked as unknown words, so any program
    whose behaviour an argument can change (`env`, `sh`, `git`, `sed`,
    `find`) is untrusted, while `xargs wc -l` is not."""
    found = scan(args, _XARGS)
    if found is None:
        return None
    if not found.rest:
        return NOTHING  # xargs runs echo
    replace: Word = None
    for name, value in found.options:
        if name == "-I":
            replace = value
        elif name in ("-i", "--replace"):
            replace = value or "{}"
    if replace is None:
        return Runs(commands=([*found.rest, None],))
    return Runs(commands=([None if a is None or replace in a else a for a in found.rest],))


WRAPPERS: dict[str, Check] = {
    "sudo": _assigning(_SUDO, bare_ok=False),
    "env": _assigning(_ENV, bare_ok=True),
    "uv": _project_run,
    "poetry": _project_run,
    "nice": _wrapper(_NICE),
    "nohup": _wrapper(spec()),
    "timeout": _timeout,
    "command": _command_builtin,
    "exec": _wrapper(spec(["-c", "-l"], ["-a"]), bare_ok=True),
    "time": _wrapper(_TIME, bare_ok=True),
    "stdbuf": _wrapper(_STDBUF),
    "xargs": xargs,
}

# ─── shells ─────────────────────────────────────────────────────────────────

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
_LETTERS = "abcdefghijklmnpqrstuvwxyzABCDEFGHIJKLMNPQRSTUVWXYZ"
_SHELL = spec(
    [*(sign + letter for sign in "-+" for letter in _LETTERS), "--login", "--norc", "--noprofile", "--posix", "--noediting", "--restricted", "--verbose"],
    ["-o", "+o", "-O", "+O"],
    bundles=True, plus=True,
)


def _syntax_check_only(found) -> bool:  # type: ignore[no-untyped-def]
    """`bash -n script.sh`, `sh -n -c '…'`: the shell reads the commands and
    checks their syntax without running any (`-n`, `-o noexec`), so it
    brings in nothing but its own diagnostics. An interactive shell (`-i`),
    which ignores `-n`, is not one."""
    noexec = False
    for name, value in found.options:
        if name in ("-i", "-s", "--login", "--noediting") or name.startswith("+"):
            return False
        if name in ("-o", "-O"):
            if value != "noexec":
                return noexec  # an option the reader does not weigh: what follows is not read as a check
            noexec = True
        noexec = noexec or name == "-n"
    return noexec


#: Options with which a shell runs a script file as `./script` would: they
#: stop it on errors or trace it, and read no other file nor its input.
_PLAIN_RUN = frozenset({"-e", "-u", "-x", "-v", "-o", "+e", "+u", "+x", "+v"})
_PLAIN_SET = frozenset({"pipefail", "errexit", "nounset", "xtrace", "verbose"})


def _runs_project_script(found) -> bool:  # type: ignore[no-untyped-def]
    """`bash scripts/check.sh`, `sh -e ./x.sh`: a script of the project's
    tree run by a shell with only the options `./x.sh` could carry in its
    own first line — the project's code, as `./x.sh` and `python3
    bench/run.py` are. Not an interactive or login shell (it reads startup
    files), nor one reading its input (`-s`)."""
    plain = all(n in _PLAIN_RUN and (n not in ("-o", "+o") or v in _PLAIN_SET) for n, v in found.options)
    return plain and bool(found.rest) and _project_script(found.rest[0])


def shell(args: list[Word]) -> Runs | None:
    """`sh -c SCRIPT` runs SCRIPT (checked as a line); a script of the
    project runs as it would by its path; a shell reading any other file
    or its input runs what the line does not show."""
    found = scan(args, _SHELL)
    if found is None:
        return None
    if _syntax_check_only(found):
        return NOTHING
    if not found.has("-c"):
        return NOTHING if _runs_project_script(found) else None
    if not found.rest or found.rest[0] is None:
        return None
    return Runs(scripts=(found.rest[0],))


# ─── debuggers and tracers: what they trace is checked ──────────────────────

_TRACED = spec(valued=["-o", "-e", "-p", "-s", "-u", "-E", "-P", "-a", "-X", "-b", "-O", "-S", "-I", "-U"], unknown_is_flag=True)
_PERF = spec(valued=["-o", "-e", "-p", "-t", "-c", "-F", "-C", "-m", "-r", "-u", "-G", "-I", "-x", "-j", "--output", "--event", "--pid", "--freq", "--repeat"], unknown_is_flag=True)
_GDB = spec(
    valued=["-p", "--pid", "-c", "--core", "-s", "--symbols", "-e", "--exec", "-se", "-tty", "--tty"],
    code=["-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--init-eval-command"],
    runs=["-x", "--command", "-ix", "--init-command", "-cd", "--cd", "-d", "--directory", "-D", "--data-directory"],
    ends=frozenset({"--args"}), unknown_is_flag=True, stops=False, single_dash_long=True,
)
#: gdb commands that run a shell, a pipe or a script: untrusted in `-ex`.
_GDB_ESCAPES = re.compile(r"\s*(?:!|\||shell\b|pipe\b|python|py\b|pi\b|source\b|guile|gu\b|make\b|compile\b|define\b|eval\b)", re.IGNORECASE)


def traced(args: list[Word]) -> Runs | None:
    """`valgrind`, `strace`, `ltrace`: the program they run is checked; a
    debugger hook that runs a command (`--db-command`), or output piped to
    one (`strace -o '|cmd'`), is not trusted."""
    found = scan(args, _TRACED)
    if found is None or any(v is None for v in found.values(*_TRACED.valued)):
        return None
    if any("command" in name or (value or "").startswith(("|", "!")) for name, value in found.options):
        return None
    return _command(found.rest, bare_ok=True)


def perf(args: list[Word]) -> Runs | None:
    sub = args[0] if args else None
    if sub in SUBCOMMANDS["perf"]:
        return NOTHING
    if sub not in ("record", "stat", "trace"):
        return None
    found = scan(args[1:], _PERF)
    return None if found is None else _command(found.rest, bare_ok=True)


def gdb(args: list[Word]) -> Runs | None:
    """`gdb`: reports on a program the person built. Its own shell, pipe
    and scripting commands (`-ex 'shell …'`, `-x FILE`) are not trusted;
    the program it runs (after `--args`, or its first operand) is checked."""
    found = scan(args, _GDB)
    if found is None or any(v is None or _GDB_ESCAPES.match(v) for v in found.values(*_GDB.code)):
        return None
    program = found.rest if found.has("--args") else [*found.operands, *found.rest][:1]
    return _command(program, bare_ok=True)


# ─── interpreters and text tools given code on the line ─────────────────────

_SED = spec(
    ["-n", "--quiet", "--silent", "-E", "-r", "--regexp-extended", "-s", "--separate", "-u", "--unbuffered", "-z",
     "--null-data", "--posix", "--debug", "--sandbox"],
    ["-e", "--expression", "-l", "--line-length"],
    optional=["-i", "--in-place"], runs=["-f", "--file"], bundles=True, stops=False,
)
_AWK = spec(valued=["-F", "-v"])
_PYTHON = spec(["-u", "-B", "-E", "-s", "-S", "-I", "-O", "-q", "-b", "-d", "-V", "--version"], ["-W", "-X", "-m"], code=["-c"],
               ends=frozenset({"-m", "-c"}), bundles=True)
_NODE = spec(
    ["-v", "--version", "--no-warnings", "--enable-source-maps", "--trace-warnings", "--trace-uncaught", "--no-deprecation"],
    ["--input-type", "--stack-size", "--max-old-space-size"],
    code=["-e", "--eval", "-p", "--print"], runs=["-r", "--require", "--import", "--loader", "--experimental-loader"],
    ends=frozenset({"-e", "--eval", "-p", "--print"}),
)


def sed(args: list[Word]) -> Runs | None:
    """sed: local when every script is made of commands that print, delete,
    substitute, transliterate or add text (`scripts.sed_script_ok`)."""
    found = scan(args, _SED)
    if found is None:
        return None
    scripts = found.values("-e", "--expression")
    if not scripts:
        scripts = found.words[:1]
    return _ok(bool(scripts) and all(s is not None and sed_script_ok(s) for s in scripts))


def awk(args: list[Word]) -> Runs | None:
    found = scan(args, _AWK)
    return _ok(found is not None and bool(found.rest) and found.rest[0] is not None and awk_program_ok(found.rest[0]))


def _project_script(word: Word) -> bool:
    """A script of the project's own tree (`bench/run.py`,
    `run_benchmarks.py`): its code, as a program it built is."""
    return in_tree(word) and word is not None and word.rpartition("/")[2] not in NETWORK


def python(args: list[Word]) -> Runs | None:
    """`python -m CHECKER`, `python -V`, a script of the project, and `-c`
    code that imports only the machine's own modules: local. A script
    elsewhere, or stdin: code nobody can read from the line."""
    found = scan(args, _PYTHON)
    if found is None:
        return None
    if found.has("-V", "--version"):
        return NOTHING
    modules, code = found.values("-m"), found.values("-c")
    if code:
        return _ok(code[0] is not None and python_code_doubt(code[0]) is None)
    if not modules:
        return _ok(bool(found.rest) and _project_script(found.rest[0]))
    if modules[0] == "pip":  # `python -m pip list` asks; `… install` fetches
        return _ok(first_operand(found.rest) in PIP_QUERIES)
    return _ok(modules[0] in PYTHON_MODULES)


def node(args: list[Word]) -> Runs | None:
    """`node -e CODE` that requires only the machine's own modules, and a
    script of the project: local. A module preloaded (`-r`), or stdin: not."""
    found = scan(args, _NODE)
    if found is None:
        return None
    if found.has("-v", "--version"):
        return NOTHING
    code = found.values(*_NODE.code)
    if code:
        return _ok(code[0] is not None and node_code_doubt(code[0]) is None)
    return _ok(bool(found.rest) and _project_script(found.rest[0]))


def fed_code(name: str, args: list[Word], code: str) -> list[Word] | None:
    """The arguments of a Python or Node that reads its program from a
    here-document (`python3 - <<'EOF'`, `node <<EOF`) with that program
    given on the line instead (`-c`, `-e`), to be judged as code on the line
    is. `None` when the program is neither, or is given its code, a module
    or a script already: the here-document is then its input, not its code."""
    if PYTHON.fullmatch(name):
        options, flag = _PYTHON, "-c"
    elif name == "node":
        options, flag = _NODE, "-e"
    else:
        return None
    found = scan(args, options)
    if found is None or found.has(*options.code, "-m") or (found.rest and found.rest[0] != "-"):
        return None
    at = len(args) - len(found.rest)
    return [*args[:at], flag, code, *found.rest[1:]]


def code_doubt(name: str, args: list[Word]) -> CodeDoubt | None:
    """Why the code a program was given on the line is untrusted, in the
    words a person is shown, and whether it reaches the network; `None`
    when it is not its code that failed."""
    if name in ("sed", "gsed"):
        found = scan(args, _SED)
        scripts = [] if found is None else found.values("-e", "--expression") or found.words[:1]
        if any(s is not None and not sed_script_ok(s) for s in scripts):
            return CodeDoubt("its script runs a command (`e`), or reads or writes a file the line does not name (`r`, `w`)")
        return None
    if name not in ("node",) and PYTHON.fullmatch(name) is None:
        return None
    options = _PYTHON if name != "node" else _NODE
    found = scan(args, options)
    code = [] if found is None else found.values(*options.code)
    if not code or code[0] is None:
        return None
    return node_code_doubt(code[0]) if name == "node" else python_code_doubt(code[0])


# ─── builds and the project's own tools ─────────────────────────────────────

_COMPILER = spec(
    runs_prefixes=("-wrapper", "-B", "-fplugin", "-specs", "--specs", "-Xclang", "@", "-ccbin", "--compiler-bindir", "-Xcompiler", "-no-integrated-cpp"),
    unknown_is_flag=True, stops=False, unseen_is_operand=True,
)
_MAKE = spec(valued=["-f", "--file", "--makefile"], runs_prefixes=("--eval", "-E"), unknown_is_flag=True, stops=False)
#: `make` variables that name a program it runs.
_MAKE_PROGRAM_VARIABLE = re.compile(r"CC|CXX|LD|AR|AS|CPP|SHELL|MAKE|PROG|CMD|COMMAND|TOOL|EXE|PYTHON|PERL|RUN|WRAP")
_LATEXMK = spec(runs_prefixes=("-e", "-r"), unknown_is_flag=True, stops=False, single_dash_long=True)
#: `cmake -E` tools that only touch files and print.
_CMAKE_TOOLS = frozenset({"make_directory", "copy", "copy_directory", "copy_if_different", "remove", "remove_directory", "rm", "echo", "echo_append", "touch", "touch_nocreate", "create_symlink", "md5sum", "sha1sum", "sha256sum", "compare_files", "rename", "cat", "capabilities", "true", "false", "environment"})


def make(args: list[Word]) -> Runs | None:
    """`make`: the project's recipes are the project's code; a variable set
    on the line (`CC=…`, `SHELL=…`), `--eval` or a makefile outside the
    tree could make it run another program, so only plain values are let through."""
    found = scan(args, _MAKE)
    if found is None or not all(in_tree(f) for f in found.values("-f", "--file", "--makefile")):
        return None
    for word in found.words:
        if word is None:
            return None
        name, has_value, value = word.partition("=")
        if not has_value:
            continue
        if not re.fullmatch(r"[\w.,:+/-]*", value):
            return None
        if _MAKE_PROGRAM_VARIABLE.search(name.upper()) and value:
            program = program_name(value)
            if program is None or not (program in PROGRAMS or PYTHON.fullmatch(program) or project_program(value)):
                return None
    return NOTHING


def cmake(args: list[Word]) -> Runs | None:
    """`cmake`: configuring and building are local; `-E` runs a tool, of
    which only the ones that touch files are."""
    if "-E" in args:
        at = args.index("-E")
        return _ok(at + 1 < len(args) and args[at + 1] in _CMAKE_TOOLS)
    return NOTHING


def latexmk(args: list[Word]) -> Runs | None:
    """`latexmk`: `-e CODE`, `-r FILE` and `-pdflatex=COMMAND` choose what
    it runs; without them it runs the TeX programs."""
    found = scan(args, _LATEXMK)
    if found is None or any(value is not None for _, value in found.options):
        return None
    # latexmk reads an option anywhere, `--` or not.
    return _ok(not any(w is not None and w.startswith("-") and "=" in w for w in found.rest))


def mix(args: list[Word]) -> Runs | None:
    """`mix TASK`: the project's own tasks are local, the fetching ones are
    not (`MIX_FETCHING`)."""
    task = first_operand(args)
    if task is None:
        return _ok(not args)  # `mix` alone runs the default task (compile)
    return _ok(task not in MIX_FETCHING and not task.startswith(MIX_FETCHING_PREFIXES))


def find(args: list[Word]) -> Runs | None:
    """`find`: its `-exec`/`-ok` commands are checked; a word known only
    when it runs may be `-exec`."""
    commands: list[list[Word]] = []
    i = 0
    while i < len(args):
        if args[i] is None:
            return None
        if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), None)
            if end is None:
                return None
            commands.append(args[i + 1 : end])
            i = end
        i += 1
    return Runs(commands=tuple(commands))


def _refuses(*longs: str) -> Check:
    """A program local unless given an option (or an abbreviation of one)
    that runs another program (`rg --pre`, `sort --compress-program`)."""
    options = spec(runs=longs, unknown_is_flag=True, stops=False, abbreviates=True)
    return lambda args: _ok(scan(args, options) is not None)


FAMILIES: dict[str, Check] = {
    **WRAPPERS,
    **{name: shell for name in SHELLS},
    **{name: traced for name in ("valgrind", "strace", "ltrace")},
    "perf": perf,
    "gdb": gdb,
    "find": find,
    "make": make,
    "gmake": make,
    "cmake": cmake,
    "latexmk": latexmk,
    "mix": mix,
    "dpkg": lambda args: _ok(bool(args) and args[0] in DPKG_QUERIES),
    **{cc: (lambda args: _ok(scan(args, _COMPILER) is not None)) for cc in ("gcc", "g++", "cc", "c++", "clang", "clang++", "cpp", "nvcc")},
    "sed": sed,
    "gsed": sed,
    **{name: awk for name in ("awk", "gawk", "mawk", "nawk")},
    "rg": _refuses("--pre"),
    "mypy": _refuses("--install-types"),
    "sort": _refuses("--compress-program"),
    "node": node,
}

