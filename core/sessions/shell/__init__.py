"""Whether a shell command's output stays on the machine.

Neither Claude Code nor Codex records where a shell command's output came
from, so the readers decide it from the command line alone, and they decide
it **fail closed**: the output is trusted (the person's own machine) only when
every program the line runs is on an allowlist of programs, and of their
subcommands, that do not reach the network. Everything else — an unknown
program, a program spelled through a variable the line does not set, a
script outside the project, `python -c` code that imports a network module
or runs programs, anything the parser cannot parse — is untrusted. A list
of network commands can never be complete; a list of local ones can be.

The line is parsed with tree-sitter-bash, never matched: env prefixes
(`FOO=1 git …`), paths (`/usr/bin/git`), quoting (`'g'it`, `g\\it`), `sudo`
and the other wrappers (`env`, `timeout`, `nice`, `nohup`, `command`, `exec`,
`time`, `xargs`), `sh -c '…'` / `bash -lc "…"` (the script is parsed in
turn), pipes, `&&` / `||` / `;` chains, subshells, groups, loops,
conditionals, `$(…)`, backticks, process substitutions, `${x:-$(…)}`,
unquoted here-documents (which expand) and redirections are all walked, and
every command found anywhere must pass. The line is read as bash runs it
(`values.py`): a substitution that prints one plain value (`$(nproc)`), a
variable the line set, a `for` loop's values and a `PATH` that adds installed
folders are known where bash knows them. A Codex argv array
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
`--distrust-tool 'Bash(git commit)'` (`ShellTrust`). The package is loaded
only when a foreign session is read: the harness endpoint never imports it.

The package, by concern:

- `programs.py` — the table: which programs and subcommands stay local, and
  which are known network clients (only to say why);
- `options.py` — the one option scanner every program's options are read
  by, from a declarative spec;
- `families.py` — one spec per family of programs the reader looks inside
  (wrappers, shells, debuggers, sed, awk, python, builds) and what each runs
  in turn; `git.py` — git's;
- `values.py` — what a substitution, a variable or a `PATH` change stands
  for where the line says;
- `words.py` — the parser and what a word stands for; `names.py` — which
  program a word names; `variables.py` — assignments that change which
  program runs; `scripts.py` — code on the line (sed, awk, `python -c`,
  `node -e`), judged by what it runs and imports;
- `walk.py` — the walk of a line, and the naming of what failed;
  `verdict.py` — the answer, the person's trust and the session's memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from mecha.core.sessions.shell.verdict import (
    DEFAULT_TRUST,
    LOCAL,
    WHY_NETWORK,
    WHY_RUNS_MORE,
    WHY_SENDS,
    WHY_UNKNOWN,
    WHY_UNSEEN,
    ShellMemory,
    ShellTrust,
    Verdict,
)
from mecha.core.sessions.shell.walk import MAX_COMMAND_CHARS, MAX_SHELL_NESTING, judge

__all__ = [
    "DEFAULT_TRUST", "LOCAL", "MAX_COMMAND_CHARS", "MAX_SHELL_NESTING", "WHY_NETWORK", "WHY_RUNS_MORE", "WHY_SENDS", "WHY_UNKNOWN",
    "WHY_UNSEEN", "ShellMemory", "ShellTrust", "Verdict", "command_stays_local", "judge_command",
]


def judge_command(command: str | Sequence[str], trust: ShellTrust = DEFAULT_TRUST, memory: ShellMemory | None = None) -> Verdict:
    """Whether everything `command` runs is known to stay on this machine,
    and if not, the first thing that is not (`Verdict`).

    `command` is a shell command line, or an argv array as Codex records it.
    Local only when every program in it — after every pipe, chain,
    substitution, wrapper and nested `sh -c` — is in the table (with a
    listed subcommand where the program has a list); untrusted for anything
    else, and for anything that does not parse. `memory` carries what the
    session's earlier commands changed (`ShellMemory`) and is updated."""
    failure = judge(command, trust, memory if memory is not None else ShellMemory())
    return LOCAL if failure is None else failure


def command_stays_local(command: str | Sequence[str], trust: ShellTrust = DEFAULT_TRUST, memory: ShellMemory | None = None) -> bool:
    """`judge_command(…).local`."""
    return judge_command(command, trust, memory).local
