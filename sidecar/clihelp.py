"""What the command line tells a person who asks it, or gets it wrong.

Two things live here, beside the parser table in `cli`:

- `VERB_DOCS`, each verb's description and examples, which `--help` prints
  above and below its options. A verb's one-line `help` in the verb list
  says what it is; a person who types `mecha-sidecar learn --help` wants to
  know what it does, what its words mean (a *domain*, `--min`) and a line
  to copy. A test holds every verb a person can see to having both.
- `Parser`, an `argparse.ArgumentParser` that answers a misspelt verb,
  choice or option with the nearest one it knows ("did you mean learn?")
  and ends every usage error with the command that shows the help. Python
  3.11's argparse only lists the choices (the hidden verbs among them).

Imported only when the parser is built: the harness endpoint and the agents'
hooks never pay for it.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any, NoReturn

#: Verbs the command line takes but never lists: not for a person to type.
HIDDEN_VERBS = frozenset({"pass"})


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


#: verb → (description, examples), as `--help` prints them.
VERB_DOCS: dict[str, tuple[str, str]] = {
    "serve": (
        "The harness endpoint: JSON-RPC with LSP framing on stdin/stdout. The harness starts one per agent run; "
        "a person never needs to.",
        _examples("mecha-sidecar serve   # the same as mecha-sidecar with no verb"),
    ),
    "lsp": (
        "The editor endpoint: a language server over the rules files (diagnostics, hovers, code actions to "
        "accept or reject proposals). Your editor starts it; see editors/README.md.",
        _examples("mecha-sidecar lsp --stdio"),
    ),
    "demo": (
        "Drives a real sidecar through a bundled sample session against a throwaway store: the rules block, "
        "the interventions, the hand-over, then the background passes — reflections, a learn pass, the "
        "proposal's diff and an accept — against your configured model or agent, or the bundled local model. "
        "It says where the loop stopped and why, and exits 1 when it did not reach an accept, unless "
        "--accept-optional says that is expected. Your own store is never touched.",
        _examples("mecha-sidecar demo", "mecha-sidecar demo --agent   # through your Claude Code or Codex CLI",
                  "mecha-sidecar demo --local --accept-optional   # the bundled 135M model: "
                  "the mechanics, maybe not an accept"),
    ),
    "model": (
        "Chooses the model the background passes use. `use claude-code` or `use codex` writes [model] api into "
        "the config file (~/.mecha/sidecar.toml, or $MECHA_SIDECAR_CONFIG), so the passes — and the agents' "
        "hooks, whatever their environment — run on your own agent's command line, on your account. `serve` "
        "runs the bundled local model (SmolLM2-135M through llama.cpp's server) in the foreground on a loopback "
        "port, and prints the settings that point the passes at it. Small: it shows the mechanics, not judgement.",
        _examples("mecha-sidecar model use claude-code", "mecha-sidecar model use codex",
                  "mecha-sidecar model serve", "mecha-sidecar model serve --port 0"),
    ),
    "block": (
        "Prints the rules block a run would start with: the global rules, then those of the project DIR is in.",
        _examples("mecha-sidecar block", "mecha-sidecar block --project ~/src/app"),
    ),
    "mine": (
        "Prints the interventions in one transcript — the moments a person steered, refused a tool call or "
        "corrected an answer. Reads mecha, Claude Code and Codex files; writes nothing.",
        _examples("mecha-sidecar mine", "mecha-sidecar mine ~/.claude/projects/-src-app/4f1c.jsonl"),
    ),
    "proposals": (
        "Reviews what the learn passes proposed. Nothing learned applies itself: a proposal changes the rules "
        "only when you accept it. `show` prints the diff and each new rule's sources; `accept` applies it; "
        "`reject --reason` turns it down and records why.",
        _examples("mecha-sidecar proposals", "mecha-sidecar proposals show 20261201T0930-ab12",
                  "mecha-sidecar proposals accept 20261201T0930-ab12",
                  'mecha-sidecar proposals reject 20261201T0930-ab12 --reason "too specific to one task"'),
    ),
    "learn": (
        "Starts a learn pass for DOMAIN: the learnable lessons of each scope (global, and each project) are "
        "consolidated into one proposal per scope, for you to review. A domain is which rules a lesson is for: "
        "behavior (how the agent works) or writing (how it writes); yours may add others. A scope needs at "
        "least --min lessons (default 3). Waits for the pass unless --no-wait.",
        _examples("mecha-sidecar learn behavior", "mecha-sidecar learn behavior --min 1",
                  "mecha-sidecar learn behavior --retry   # the last pass kept the rules; ask again anyway"),
    ),
    "reflect": (
        "Reads every transcript file in a folder (any format `mine` reads), queues its interventions and "
        "starts a reflect pass that turns each into a lesson. For Claude Code's or Codex's own session "
        "folders, `import claude` / `import codex` does this and remembers what it read.",
        _examples("mecha-sidecar reflect --sessions ./transcripts"),
    ),
    "import": (
        "Queues what is new in your Claude Code or Codex sessions and starts a reflect pass over it. Running it "
        "again reads only what changed. Ctrl-C stops the waiting, not the pass: it goes on in the background.",
        _examples("mecha-sidecar import claude --dry-run", "mecha-sidecar import claude",
                  "mecha-sidecar import codex --since 2026-11-01"),
    ),
    "export": (
        "Writes each scope's accepted rules where the agent reads your own instructions, in a section it owns: "
        "~/.claude/CLAUDE.md and a project's CLAUDE.local.md for Claude Code, ~/.codex/AGENTS.md and a project's "
        ".codex/config.toml for Codex (each kept out of git), or AGENTS.md for others. With the plugin or hooks "
        "installed every accept does this. A scope with no rule gets no file.",
        _examples("mecha-sidecar export claude", "mecha-sidecar export agents --project .",
                  "mecha-sidecar export claude --check   # exit 1 when a file is out of date"),
    ),
    "share": (
        "Writes the rules you choose into the repository's tracked CLAUDE.md and AGENTS.md, for your team, and "
        "prints the git command that commits them; it commits nothing. The rules stay yours too.",
        _examples("mecha-sidecar share r-3f2a", "mecha-sidecar share r-3f2a r-91c0 --project ~/src/app"),
    ),
    "retire": (
        "Proposes retiring one learned rule, with your reason; it goes when you accept the proposal.",
        _examples('mecha-sidecar retire behavior r-3f2a "we moved off that tool"'),
    ),
    "validate": (
        "Measures whether the rules help: on corrections you made in held-out sessions, the model redoes the "
        "turn with and without them and a judge says whether you would still have stepped in. Says the cost "
        "first; --dry-run calls nothing.",
        _examples("mecha-sidecar validate behavior --dry-run", "mecha-sidecar validate behavior --budget 5"),
    ),
    "hooks": (
        "Installs the Claude Code / Codex hooks that keep the loop running by itself: each session is read "
        "when it ends (then reflected, then learned from once enough lessons wait), and the next session "
        "starts by telling you when a proposal waits. `status` shows what they last did.",
        _examples("mecha-sidecar hooks install claude", "mecha-sidecar hooks status",
                  "mecha-sidecar hooks uninstall claude"),
    ),
    "trust": (
        "Keeps your standing trust decisions in the config file: the programs and tools whose output is your "
        "own machine's, so what you said after them can be learned from. `add` also reads again the sessions "
        "they had held back.",
        _examples("mecha-sidecar trust", "mecha-sidecar trust add 'Bash(bd)'", "mecha-sidecar trust remove 'Bash(bd)'"),
    ),
    "lessons": (
        "Lists the stored lessons, newest first: each one's scope, trigger and origin, and why it may not be "
        "learned from (untrusted, derived) — what a learn pass would work from.",
        _examples("mecha-sidecar lessons", "mecha-sidecar lessons --domain behavior --pending"),
    ),
    "jobs": (
        "Lists the recent background passes, one line each: what they are doing, how far they have got, and a "
        "failed one's reason.",
        _examples("mecha-sidecar jobs", "mecha-sidecar jobs --json"),
    ),
    "inbox": (
        "Shows what waits for a reflect pass, and what a pass set aside (an answer it could not use); "
        "`retry` puts an entry back, `drop` lets it go.",
        _examples("mecha-sidecar inbox", "mecha-sidecar inbox retry 3fa2"),
    ),
    "tallies": (
        "Prints each rule's validation record: probes, improved, regressed.",
        _examples("mecha-sidecar tallies", "mecha-sidecar tallies --domain behavior"),
    ),
    "rules": (
        "Lists the live learned rules, each with its record from your own sessions: how long it has been live, "
        "the sessions it reached, how often you corrected the same thing again since, and the corrections it "
        "was learned from. A rule corrected again twice gets a rewrite proposal; one no session has been in "
        "scope of for 60 days is offered for retirement.",
        _examples("mecha-sidecar rules", "mecha-sidecar rules --project .", "mecha-sidecar rules --global --json"),
    ),
    "why": (
        "Says why a rule exists: the corrections it was learned from, each with its session and line, its "
        "record since it went live (sessions it reached, corrections that came back), and how it measured.",
        _examples("mecha-sidecar why r-3f2a"),
    ),
    "doctor": (
        "Checks the store, the model configuration (and whether it answers), the hooks and the passes; each "
        "line that is not ok says what to do.",
        _examples("mecha-sidecar doctor"),
    ),
    "schema": (
        "Prints the JSON Schema of every JSON-RPC method and of the rules file.",
        _examples("mecha-sidecar schema > mecha-sidecar.schema.json"),
    ),
}


def docs_for(verb: str) -> dict[str, Any]:
    """The `add_parser` keywords that give `verb` its description and examples."""
    if verb not in VERB_DOCS:
        return {}
    description, examples = VERB_DOCS[verb]
    return {"description": description, "epilog": examples, "formatter_class": argparse.RawDescriptionHelpFormatter}


def nearest(word: str, known: list[str]) -> str | None:
    """The one of `known` that `word` most likely misspells, or `None`."""
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return close[0] if close else None


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors name the nearest verb, choice or
    option, and say how to get the help."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is None or value in choices:
            return
        shown = [c for c in choices if c not in HIDDEN_VERBS] if isinstance(value, str) else list(choices)
        guess = nearest(value, [str(c) for c in shown]) if isinstance(value, str) else None
        hint = f"did you mean {guess}? " if guess else ""
        raise argparse.ArgumentError(action, f"invalid choice: “{value}”; {hint}(choose from {', '.join(map(str, shown))})")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        # Kept so an error can name the verb the line gave.
        self._argv = list(args) if args is not None else sys.argv[1:]
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments:"):
            words = message.split(":", 1)[1].split()
            message += self._unrecognized_hint(words)
        self.print_usage()
        self.exit(2, f"{self.prog}: error: {message}\n`{self.prog} --help` shows what it takes.\n")

    def _unrecognized_hint(self, words: list[str]) -> str:
        """For options no verb of this line takes: the nearest other
        spelling (never the same one), or, for an option another verb
        takes, that this verb does not."""
        options = sorted(self._all_option_strings())
        verb = self._verb_in(getattr(self, "_argv", None) or sys.argv[1:])
        said: list[str] = []
        guesses: list[str] = []
        for word in words:
            name = word.split("=", 1)[0]
            if not name.startswith("-"):
                continue
            if name in options:
                takers = self._verbs_taking(name)
                which = f"`{verb}` does not take {name}" if verb else f"this verb does not take {name}"
                said.append(f"{which} (it is an option of: {', '.join(takers)})" if takers else which)
                continue
            guess = nearest(name, [o for o in options if o != name])
            if guess:
                guesses.append(f"{word} → {guess}")
        hint = ""
        if said:
            hint += f" ({'; '.join(said)}; `{self.prog} {verb or 'VERB'} --help` lists what it takes)"
        if guesses:
            hint += f" (did you mean: {', '.join(guesses)}?)"
        return hint

    def _verb_parsers(self) -> dict[str, argparse.ArgumentParser]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    def _verb_in(self, argv: list[str]) -> str | None:
        verbs = self._verb_parsers()
        return next((a for a in argv if a in verbs), None)

    def _verbs_taking(self, option: str) -> list[str]:
        return sorted(name for name, sub in self._verb_parsers().items()
                      if name not in HIDDEN_VERBS and any(option in a.option_strings for a in sub._actions))

    def _all_option_strings(self) -> set[str]:
        found: set[str] = set()
        for action in self._actions:
            found.update(s for s in action.option_strings if s.startswith("--"))
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    for a in sub._actions:
                        found.update(s for s in a.option_strings if s.startswith("--"))
        return found
