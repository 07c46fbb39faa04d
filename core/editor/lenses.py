"""The code lenses at the top of a rules document: active learned rules
against the cap, the domain's section against the character budget, the
proposals waiting, and the scope the file's rules apply in.
"""

from __future__ import annotations

from collections.abc import Sequence

from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, RULES_CHAR_BUDGET, Rule, active_count
from mecha.core.editor.document import section_chars
from mecha.core.editor.results import GLOBAL, Act, Lens, Scope
from mecha.core.store.layout import USER_KIND, rules_file_name
from mecha.core.store.rules_text import parse_rules_file


def lens_for(
    domain: str, user_rules: Sequence[Rule], learned_rules: Sequence[Rule], pending: int, scope: Scope = GLOBAL
) -> list[Lens]:
    """The lenses at the top of a rules file: active learned rules against
    the cap, the domain's rendered section against the character budget
    (both per scope), pending proposals when there are any, and the scope
    the file's rules apply in. The counts and the scope show the rules
    block a run in that scope gets: a project's, with its root."""
    active = active_count(learned_rules)
    chars = section_chars(domain, user_rules, learned_rules, project=scope.in_project)
    show: list[object] = [domain] if scope.project is None else [domain, scope.project]
    out = [
        Lens(f"{active}/{MAX_ACTIVE_RULES_PER_DOMAIN} active rules", Act.SHOW_RULES_BLOCK, list(show)),
        Lens(f"{chars}/{RULES_CHAR_BUDGET} chars", Act.SHOW_RULES_BLOCK, list(show)),
    ]
    if pending > 0:
        out.append(
            Lens(
                f"{pending} pending proposal{'s' if pending != 1 else ''}",
                Act.LIST_PROPOSALS,
                [{"status": "pending", "domain": domain}],
            )
        )
    out.append(Lens(f"scope: {scope.label}", Act.SHOW_RULES_BLOCK, list(show)))
    return out


def document_lenses(
    domain: str, kind: str, text: str, sibling: Sequence[Rule], pending: int, scope: Scope = GLOBAL
) -> list[Lens]:
    """The lenses of one rules document as typed (`lens_for`): its rules
    on its own side of the pair, the sibling's (`sibling_rules`) on the
    other, the `pending` proposal count of its domain and scope, and the
    scope.

    A document that does not parse gets no lenses at all: counts over
    rules that cannot be read would be guesses that flicker as a person
    types, and its `toml-syntax` diagnostic already says what is wrong."""
    try:
        mine = parse_rules_file(text, rules_file_name(domain, kind))
    except Exception:  # not TOML, not rules, nested past the parser's depth
        return []
    user, learned = (mine, sibling) if kind == USER_KIND else (sibling, mine)
    return lens_for(domain, user, learned, pending, scope)
