"""What the shell reader answers, what it is told, and what it remembers.

`Verdict` is the answer for one command line, with its reason as a value so
the session reader can tell the person what held a correction back and
what would change it (`reader.Blame`). `ShellTrust` is the person's word
on programs (`Bash(make)`, `Bash(git fetch)`); `ShellMemory` is what a
session's earlier commands changed that decides its later ones.
"""

from __future__ import annotations

import msgspec


class ShellTrust(msgspec.Struct, frozen=True, kw_only=True):
    """A person's changes to the allowlist: entries `"make"` (a program,
    any arguments) or `"git fetch"` (a program's subcommand — its first
    argument that is not an option, git's past its global options). A
    distrusted entry wins over the defaults and over a trusted one."""

    trusted: frozenset[str] = frozenset()
    distrusted: frozenset[str] = frozenset()


DEFAULT_TRUST = ShellTrust()


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
    (`Bash(bd)`), only for a program the table does not know or a
    subcommand that only sends to a remote (`Bash(git push)`: the person's
    word on their own remote) — never for a network client or a fetching
    subcommand, nor for a known program run in a way that can run another. `network`: what failed reaches the network (a network client,
    a fetching subcommand, code that imports a network module), so what it
    printed is a stranger's text — never the reader's doubt, which the
    person may vouch for."""

    local: bool
    program: str | None = None
    why: str | None = None
    entry: str | None = None
    network: bool = False


LOCAL = Verdict(local=True)

#: Why a command was untrusted, in the words a person is shown.
WHY_UNKNOWN = "not in the table of programs known to stay on this machine"
WHY_NETWORK = "reaches the network: what it prints is someone else's text"
WHY_REMOTE = "talks to a remote: what it prints is someone else's text, whichever program of that name runs"
WHY_SENDS = ("sends to a remote: what it prints back is the remote's text, "
             "trusted only when you trust this subcommand by name, as your own remote")
WHY_RUNS_MORE = "run with arguments that can make it run another program or read code not on the line"
WHY_UNSEEN = "names its program through something known only when it runs"
WHY_CODE = "runs code the line does not show (a script outside the project, its input, a module it loads by name)"
WHY_OUTSIDE = "a program outside the system's and the project's folders"
WHY_DISTRUSTED = "distrusted by the person"
