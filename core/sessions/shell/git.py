"""git, read closely: its global options, the subcommand options that run
a command, and the configuration that can name a program.

git is the program an agent runs most, and the one with the most ways to
run another: `-c core.pager=…`, `rebase --exec`, `grep -O`, a filter
script, `bisect run`, and any configuration key that names a program
(`diff.external`, `core.fsmonitor`, `alias.*`). What can be read from the
line is read here; a configuration written earlier in the session is
remembered (`ShellMemory.git_config`) and taints every later git call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mecha.core.sessions.shell.names import first_operand
from mecha.core.sessions.shell.options import NOTHING, Runs, Word, scan, spec
from mecha.core.sessions.shell.programs import GIT_SUBCOMMANDS

#: `git -c KEY=VALUE` and `git config KEY VALUE`: only keys that cannot make
#: git run another program (or include a file that could say one).
SAFE_CONFIG = re.compile(
    r"(?:color\.[\w.-]+|core\.(?:quotepath|abbrev|autocrlf|filemode|ignorecase|safecrlf|eol|whitespace|longpaths)|"
    r"user\.(?:name|email|signingkey)|safe\.directory|advice\.[\w.-]+|init\.defaultbranch|commit\.gpgsign|"
    r"merge\.conflictstyle|diff\.(?:algorithm|renames|colormoved|mnemonicprefix|noprefix)|rerere\.enabled|"
    r"pull\.(?:rebase|ff)|push\.(?:default|autosetupremote)|fetch\.prune|branch\.[\w./-]+\.(?:remote|merge|rebase)|"
    r"rebase\.(?:autosquash|autostash|updaterefs)|log\.(?:date|decorate|follow)|status\.[\w.-]+|format\.pretty)"
    r"(?:=|$)",
    re.IGNORECASE,
)
#: Where git reads its configuration from: a command that writes to one of
#: these (a redirection, `cp`, `tee`, `sed -i`) has changed git's config.
CONFIG_FILE = re.compile(r"(?:^|/)(?:\.git/config|\.gitconfig|git/config)$|(?:^|/)\.git/config\.")
#: Programs that write the files their arguments name.
FILE_WRITERS = frozenset({"cp", "mv", "ln", "tee", "sed", "gsed", "install", "patch", "dd", "truncate", "touch", "printf"})

#: git's own options, before its subcommand.
GLOBAL = spec(
    ["-P", "--no-pager", "-p", "--paginate", "--bare", "--no-replace-objects", "--literal-pathspecs",
     "--no-optional-locks", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--version", "--help"],
    ["-C", "--git-dir", "--work-tree", "--namespace", "-c"],
)
#: Subcommands with an option that makes git run a command: the short
#: letter (also inside a bundle, `-ix`) and the long spelling — which git
#: also takes abbreviated (`--exe` is `--exec`).
RUNS = {
    sub: spec(runs=runs, unknown_is_flag=True, stops=False, bundles=True, abbreviates=True)
    for sub, runs in (
        ("rebase", ("-x", "--exec")),
        ("grep", ("-O", "--open-files-in-pager")),
        # The program run at the other end, which a local or `ext::` remote runs here.
        ("push", ("--receive-pack", "--exec")),
    )
}
#: `git filter-branch`: each filter is a shell script git runs (an
#: abbreviated filter option fails closed).
FILTER_BRANCH = spec(
    code=["--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter", "--commit-filter",
          "--tag-name-filter", "--setup"],
    unknown_is_flag=True, stops=False, abbreviates=True,
)
#: `git config` spellings that only read.
_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
                           "-l", "--list", "get", "list", "--unset", "--unset-all", "unset", "--show-origin",
                           "--show-scope", "--name-only"})
_CONFIG_OPTIONS = spec(valued=["-f", "--file", "--blob", "--type", "--default", "--comment"], unknown_is_flag=True, stops=False)
#: `git bisect` steps that run nothing (`run` runs its command, checked).
BISECT_STEPS = frozenset({"start", "good", "bad", "new", "old", "reset", "log", "skip", "terms", "replay"})


def subcommand_at(args: Sequence[Word]) -> int | None:
    """Where git's subcommand is, past its global options; `len(args)` when
    there is none (`git --version`); `None` on a global option that can run
    a program or reach elsewhere (`--exec-path`, `-c core.pager=…`)."""
    found = scan(args, GLOBAL)
    if found is None or any(v is None or not SAFE_CONFIG.match(v) for v in found.values("-c")):
        return None
    return len(args) - len(found.rest)


def subcommand_of(name: str, args: Sequence[Word]) -> str | None:
    """A program's subcommand: git's past its global options, any other's
    its first argument that is not an option."""
    if name == "git":
        at = subcommand_at(args)
        return args[at] if at is not None and at < len(args) else None
    return first_operand(args)


def config_writes_a_program(args: Sequence[Word]) -> bool:
    """Whether `git config ARGS` may make a later git call run a program:
    a write (a key and a value, `set`, `--add`, `--replace-all`, `--edit`,
    `--rename-section`, …) of any key not known to be inert. A read
    (`--get`, `--list`, one key alone) writes nothing."""
    if any(a is None for a in args):
        return True
    words = [a for a in args if a is not None]
    if any(w in ("-e", "edit", "rename-section", "remove-section") for w in words):
        return True
    longs = frozenset({"--edit", "--rename-section", "--remove-section"})
    if any(w.startswith("--") and len(w) >= 3 and any(long.startswith(w.split("=", 1)[0]) for long in longs) for w in words):
        return True  # git takes `--ed` for `--edit`
    if any(w in _CONFIG_READS for w in words):
        return False
    found = scan(words, _CONFIG_OPTIONS)
    operands = [w for w in found.words if w is not None] if found is not None else []
    if operands[:1] == ["set"]:
        operands = operands[1:]
    elif len(operands) < 2:
        return False  # one key alone: a read
    return not operands or SAFE_CONFIG.match(operands[0]) is None


def remote_only_lists(rest: Sequence[Word]) -> bool:
    """`git remote -v` and `get-url` read the config; `remote show` and
    `remote update` reach the remotes."""
    return all(a in ("-v", "--verbose") for a in rest) or list(rest[:1]) == ["get-url"]


def subcommand_runs(sub: Word, rest: list[Word], *, trusted: bool = False) -> Runs | None:
    """What `git SUB REST…` runs besides git (`bisect run`'s command, a
    filter's script), or `None` when it reaches elsewhere or runs what the
    line does not show. `trusted`: the person trusted this subcommand (or
    git), so one the table does not list (`push`) is judged only by the
    options that make it run a command."""
    if sub not in GIT_SUBCOMMANDS and not trusted:
        return None
    if sub == "remote" and not trusted:
        return NOTHING if remote_only_lists(rest) else None
    if sub == "filter-branch":
        found = scan(rest, FILTER_BRANCH)
        scripts = [] if found is None else found.values(*FILTER_BRANCH.code)
        if found is None or any(s is None for s in scripts):
            return None
        return Runs(scripts=tuple(s for s in scripts if s is not None))
    if sub == "bisect":
        if rest[:1] == ["run"]:
            return Runs(commands=(rest[1:],))
        return NOTHING if not rest or rest[0] in BISECT_STEPS else None
    options = RUNS.get(sub or "")
    # A word known only when it runs (`-m "$(cat <<'EOF' …)"`) is an operand
    # or an option's value, and no option of the other subcommands runs anything.
    return NOTHING if options is None or scan(rest, options) is not None else None


def find_writes_config(args: Sequence[Word]) -> bool:
    """Whether `find ARGS` writes one of git's config files (`-fprint`)."""
    return any(
        a in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args) and CONFIG_FILE.search(args[i + 1] or "") is not None
        for i, a in enumerate(args)
    )
