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
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mecha.core.agents.hooks import settings_after
from mecha.core.domain.rules import Rule
from mecha.core.environment.confined import rewrite_file

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
