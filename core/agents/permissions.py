"""A refused call, kept refused: an *ask* permission in the agent's own
settings, beside the rule learned from the refusals.

A denial is the clearest correction there is, and prose in a prompt is
where rules are most often ignored; Claude Code has an enforced place for
exactly this — the `permissions.ask` list of a settings file (patterns
such as `Bash(git push origin main:*)`), which makes the agent ask the
person before a matching call (checked with the real CLI, 2.1.328: in
`claude -p`, where nobody can answer, a call that must ask is not run and
is reported in `permission_denials`). So a rule learned from denials that
names the call may carry an ask pattern (`Rule.ask`), and an accept writes
it into the person's own settings (`~/.claude/settings.json`); retiring
or rejecting the rule takes it out again.

Only *ask*, never *allow* or *deny*: a learned rule may make the agent
stop and check with the person, never let it do more, and never lock the
person out of what they may still want.

The change is made as the hooks' is (`hooks.settings_after`, on the file's
text with `jsontext.patch`): every byte around the entry is the person's,
so taking the entry out gives back the bytes that were there — a
`permissions` object or `ask` list this made is taken out with its last
entry. An entry the person wrote is theirs: it is never added twice, and
it is taken out only with the rule that carries it.

Codex has the same place under another name: command rules, Starlark
files in `~/.codex/rules/` that Codex loads at start, where
`prefix_rule(pattern = ["git", "push", "origin", "main"], decision =
"prompt")` makes it ask before any command starting with those words
(checked with the real CLI, 0.169.0: `codex execpolicy check` answers
`prompt` for `git push origin main --force`, nothing for `git status`; and
`codex exec`, which can ask nobody, does not run a matching command — its
output says "approval required by policy" — while it ran it before the
rule was written, and runs it again once the rule is gone).
There the project writes a file of its own (`CODEX_RULES_FILE`), whole,
through the same confined writer: each shell ask as one prefix rule, a
tool's ask (`WebFetch`) having no command to match is left out. The file
is rendered from the asks alone (`codex_rules_text`), so a file that is
not exactly that was changed by someone else and is refused, never
overwritten; when the last ask goes the file goes (and the rules folder,
if that leaves it empty). Written only when Codex is an agent the accept exports to.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from mecha.core.agents.hooks import settings_after, settings_path
from mecha.core.agents.personal import codex_home
from mecha.core.domain.rules import Rule
from mecha.core.environment.agents import CLAUDE, CODEX_RULES_FILE
from mecha.core.environment.confined import read_file, remove_file, rewrite_file
from mecha.core.errors import ExportFailed
from mecha.core.learning.asks import shell_prefix

#: The settings key and list an ask permission lives in.
PERMISSIONS, ASK = "permissions", "ask"


def ask_pattern(tool: str, call_input: Any) -> str | None:
    """The ask pattern for a refused call, or `None` when it names nothing
    a pattern can hold: a shell call by its command as a prefix
    (`Bash(git push origin main:*)`, which also matches the same command
    with more arguments), any other tool by its name alone."""
    if tool == "Bash":
        command = call_input.get("command") if isinstance(call_input, dict) else None
        if not isinstance(command, str) or not command.strip() or "\n" in command:
            return None
        return f"Bash({' '.join(command.split())}:*)"
    if tool and tool.replace("_", "").isalnum():
        return tool
    return None


def with_ask(doc: dict[str, Any], patterns: Iterable[str]) -> dict[str, Any]:
    """`doc` with each pattern in `permissions.ask` (once)."""
    wanted = [p for p in patterns]
    if not wanted:
        return doc
    out: dict[str, Any] = json.loads(json.dumps(doc))
    perms = out.setdefault(PERMISSIONS, {})
    if not isinstance(perms, dict):
        raise ValueError(f"{PERMISSIONS} is not an object")
    ask = perms.setdefault(ASK, [])
    if not isinstance(ask, list):
        raise ValueError(f"{PERMISSIONS}.{ASK} is not a list")
    ask.extend(p for p in wanted if p not in ask)
    return out


def without_ask(doc: dict[str, Any], patterns: Iterable[str]) -> dict[str, Any]:
    """`doc` with each pattern out of `permissions.ask`; an `ask` list or
    `permissions` object left empty goes too."""
    gone = set(patterns)
    perms = doc.get(PERMISSIONS)
    if not gone or not isinstance(perms, dict) or not isinstance(perms.get(ASK), list):
        return doc
    out: dict[str, Any] = json.loads(json.dumps(doc))
    left = [p for p in out[PERMISSIONS][ASK] if p not in gone]
    if left:
        out[PERMISSIONS][ASK] = left
    else:
        del out[PERMISSIONS][ASK]
        if not out[PERMISSIONS]:
            del out[PERMISSIONS]
    return out


def set_asks(path: Path, add: Iterable[str], remove: Iterable[str]) -> bool:
    """Add and take out ask patterns in the settings file `path`, through
    the confined writer (`confined.rewrite_file`); whether it changed."""
    add, remove = list(add), [p for p in remove if p not in set(add)]

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        return with_ask(without_ask(doc, remove), add)

    if not add and not path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    return rewrite_file(path, lambda raw: settings_after(path, raw, change), appends=False,
                        what="the ask permissions").changed


def _live(rule: Rule) -> bool:
    return rule.enabled and not rule.retired_at


def asks_after(before: Iterable[Rule], after: Iterable[Rule]) -> tuple[list[str], list[str]]:
    """What an accept changes in the settings: the ask patterns of the
    rules live after it (to be there), and those of rules it retired or
    dropped that no live rule still carries (to be taken out)."""
    after = list(after)
    keep = list(dict.fromkeys(p for r in after if _live(r) for p in r.ask))
    gone = [p for r in [*before, *after] if not _live(r) or r not in after for p in r.ask]
    return keep, list(dict.fromkeys(p for p in gone if p not in keep))


# ─── Codex's command rules ──────────────────────────────────────────────────

#: What opens the rules file: what it is, and where its rules come from.
CODEX_RULES_HEADER = (
    "# Written by mecha-sidecar: each rule asks before a command that a learned rule says to ask\n"
    "# before. Accepting, retiring or rejecting learned rules rewrites this file; edit them there\n"
    "# (`mecha-sidecar rules`), not here.\n"
)


def codex_rules_file(home: Path, env: Mapping[str, str] | None = None) -> Path:
    """The command rules file the project writes in Codex's home."""
    return codex_home(home, env).joinpath(*CODEX_RULES_FILE)


def codex_rules_text(patterns: Iterable[str]) -> str | None:
    """The rules file for the shell asks among `patterns`, in their order:
    one `prefix_rule` with `decision = "prompt"` each; `None` when none is
    a shell ask (no file)."""
    rules = []
    for pattern in patterns:
        words = shell_prefix(pattern)
        if not words:
            continue
        tokens = ", ".join(json.dumps(w) for w in words)
        why = json.dumps(f"a learned rule says to ask before {' '.join(words)}")
        rules.append(f"prefix_rule(\n    pattern = [{tokens}],\n    decision = \"prompt\",\n    justification = {why},\n)\n")
    return CODEX_RULES_HEADER + "\n" + "\n".join(rules) if rules else None


def codex_asks_in(text: str) -> list[str]:
    """The shell asks a rules file of ours holds, as ask patterns, in its
    order (read off its `pattern` lines)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("pattern = [") and line.endswith("],"):
            words = json.loads(line[len("pattern = ") : -1])
            out.append(f"Bash({' '.join(words)}:*)")
    return out


def set_codex_asks(path: Path, add: Iterable[str], remove: Iterable[str]) -> bool:
    """Add and take out shell asks in the Codex rules file `path`;
    whether it changed. A file that is not exactly what this module
    renders is refused (`ExportFailed`) and left as it is."""
    add, gone = [p for p in add if shell_prefix(p)], set(remove)

    def after(raw: bytes | None) -> tuple[list[str], bytes | None]:
        held = [] if raw is None else codex_asks_in(raw.decode("utf-8", "replace"))
        if raw is not None and (codex_rules_text(held) or "").encode("utf-8") != raw:
            raise ExportFailed(f"{path}: changed since it was written; the ask rules were not written — "
                               "remove it by hand to let an accept write it again")
        wanted = [p for p in held if p not in gone] + [p for p in add if p not in held and p not in gone]
        text = codex_rules_text(wanted)
        return held, None if text is None else text.encode("utf-8")

    if not path.exists() and not add:
        return False
    raw = read_file(path)  # a FIFO there is refused by name, not waited on
    held, wanted = after(raw)
    if wanted is None:
        if raw is None or not remove_file(path, (codex_rules_text(held) or "").encode("utf-8"), what="the ask rules"):
            return False
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # a rules folder left empty goes too: it was made for this file
        return True
    path.parent.mkdir(parents=True, exist_ok=True)
    return rewrite_file(path, lambda now: after(now)[1], appends=False, what="the ask rules").changed


# ─── one accept's asks, written where each agent reads them ─────────────────


class AskWrite(msgspec.Struct, frozen=True):
    """One agent settings file an accept's asks were written to or taken
    out of: whether it changed, or why it could not be."""

    path: str
    changed: bool = False
    error: str | None = None


def write_asks(before: Iterable[Rule], after: Iterable[Rule], *, home: Path, codex: bool,
               env: Mapping[str, str] | None = None) -> list[AskWrite]:
    """Make the agents' settings say what an accept from rules `before` to
    `after` changes in their asks (`asks_after`): Claude Code's user
    settings always, Codex's rules file when `codex` (an agent the accept
    exports to) and a shell ask is among them. Never raises: the accept
    has landed, and a file that cannot be written is reported by name."""
    add, remove = asks_after(before, after)
    if not add and not remove:
        return []
    places = [(settings_path(CLAUDE.name, "user", home=home, cwd=home), set_asks)]
    if codex and any(shell_prefix(p) for p in [*add, *remove]):
        places.append((codex_rules_file(home, env), set_codex_asks))
    out = []
    for path, change in places:
        try:
            out.append(AskWrite(str(path), changed=change(path, add, remove)))
        except Exception as exc:  # reported, never the accept's error
            out.append(AskWrite(str(path), error=f"{type(exc).__name__}: {exc}"))
    return out
