"""Rules, their lineage, their budget, and the block that rides in a prompt.

The floor under the store: the rule types the store persists, the domain
name rule that guards every path built from a name, and the one test of
whether two rules are the same rule. Nothing here reads or writes a file or
imports from the store or the passes, so every floor above can share it.

A domain's rules live in two TOML files: `<domain>.user.toml`, the person's
own and never written by code, and `<domain>.learned.toml`, written only when
a person accepts a proposal. Everything that turns rule sets into the text a
run sees is here and pure, so the gate can render a *candidate* set exactly
as a run would see it, before anything is written anywhere.

The budget has two halves. `RULES_CHAR_BUDGET` bounds a domain's rendered
size; `MAX_ACTIVE_RULES_PER_DOMAIN` bounds the count of active learned rules,
and is the half that is enforced in code (`budget_refuses`) rather than left
to the learner listening to its prompt. User rules count against neither:
they are the person's own budget to spend.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import msgspec

from mecha.core.errors import InvalidDomain
from mecha.core.identity import mint_rule_id

#: The heading the rules block opens with. A validator strips an old block by
#: it before injecting a candidate one, so a session recorded *with* rules
#: never carries them twice. Contract: do not reword.
RULES_BLOCK_HEADING = "## Learned rules"

#: The paragraph under the heading, in this project's words.
RULES_BLOCK_PREAMBLE = (
    "These rules were distilled from how this person has corrected you before. "
    "Follow them unless the person says otherwise in this conversation."
)

#: Roughly how large one domain's rendered section may grow, in characters
#: (about four per token). Read by the editor diagnostics and `doctor`.
RULES_CHAR_BUDGET = 1600

#: Hard cap on *active learned* rules per domain. Read by `budget_refuses`
#: (the learn gate), `over_budget_domains` (startup warning), the learner's
#: prompt (interpolated, never spelled out) and the editor diagnostics — one
#: number, four readers. Fifteen because adherence falls off well before
#: fifty, and the block rides in every run's cached prefix.
MAX_ACTIVE_RULES_PER_DOMAIN = 15

#: How many learnable unprocessed reflections a domain needs before a learn
#: pass consolidates: the default behind `learn --min` and the floor the
#: doctor's starved-learner check measures against.
LEARN_MIN_REFLECTIONS = 3

#: The domains whose rules ride in every ordinary agent run.
RUN_DOMAINS: tuple[str, ...] = ("behavior", "writing")

#: The mail classifier's own learning domain.
TRIAGE_DOMAIN = "triage"

#: Domains loaded by a named pass rather than by a general run.
PASS_DOMAINS: tuple[str, ...] = (TRIAGE_DOMAIN,)

_DOMAIN_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def validate_domain(domain: object) -> str:
    """`domain` if it is a safe domain name, else `InvalidDomain`.

    Checked before any path is built from a name: a domain becomes a file
    name under `rules/`, so `../x` or `a/b` must never get that far.
    """
    if not isinstance(domain, str) or not _DOMAIN_RE.fullmatch(domain):
        raise InvalidDomain(
            f"invalid domain {domain!r}: a domain is 1-64 characters of lowercase "
            "letters, digits, '-' and '_', starting with a letter or digit"
        )
    return domain


class RuleEdit(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A person's rewording of a proposed rule, made as they accepted it
    (`proposals accept ID --edit N TEXT`)."""

    #: The words the learner proposed, which the person replaced.
    was: str
    #: The proposal it was accepted from.
    proposal_id: str
    at: str
    #: The ask permissions the proposed rule carried that the person's
    #: words no longer name (`learning.asks.asks_kept_by`), so not written.
    ask_dropped: list[str] = msgspec.field(default_factory=list)


class Rule(msgspec.Struct, omit_defaults=True, kw_only=True):
    """One rule in a domain's TOML file.

    Every lineage field is optional so rule files written before lineage
    existed load unchanged; absent lineage on an accepted rule is history,
    not a threat, so unlike a reflection's origin it does not fail closed.
    """

    text: str
    enabled: bool = True
    confidence: float | None = None
    based_on_count: int | None = None
    #: Minted when the rule first enters the store; what the ledger keys on.
    id: str | None = None
    #: Reflection ids the rule rests on: the ones the learner cited for it
    #: (rules learned before citations existed carry their whole batch).
    sources: list[str] = msgspec.field(default_factory=list)
    #: Ids of the earlier learned rules this one rewrote or merged, as the
    #: learner said when it was proposed.
    supersedes: list[str] = msgspec.field(default_factory=list)
    #: Ask permissions the rule carries (`Bash(git push origin main:*)`):
    #: a rule learned from refusals of one call, written into the person's
    #: agent settings while the rule is live (`agents.permissions`).
    ask: list[str] = msgspec.field(default_factory=list)
    created_at: str | None = None
    #: Set instead of deleting: a retired rule was measured harmful, and the
    #: learner is shown it so the lesson cannot come back reworded.
    retired_at: str | None = None
    retired_reason: str | None = None
    #: Set when a person rewrote the rule's words as they accepted it: what
    #: the learner had proposed, and when. The person's own words are the
    #: strongest evidence a rule has (`sources.sources_of` names them first).
    edited: RuleEdit | None = None

    def active(self) -> bool:
        """Rides in prompts. Retirement wins over a hand edit that left
        `enabled = true`."""
        return self.enabled and self.retired_at is None


class RuleDrop(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A live learned rule a proposal leaves out, and why: a new rule of the
    proposal absorbs it, or a reflection of the pass contradicts it. A drop
    with neither is refused by the learn gate, so a filed drop always has
    one."""

    #: The live rule's id (absent on rules older than ids).
    rule_id: str | None = None
    text: str
    #: The text of the proposed rule that rewrites or merges it.
    absorbed_by: str | None = None
    #: The id of the reflection that contradicts it.
    contradicted_by: str | None = None


class Refusal(msgspec.Struct, kw_only=True):
    """Something the learner proposed that the learn gate refused."""

    #: `rule`: a proposed rule left out of the proposal; `drop`: a live rule
    #: the learner left out with no cited reason, kept as it is.
    kind: str
    #: The proposed rule's text, or the live rule's.
    rule: str
    reason: str


class LeftOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One change of a proposal a person left out when accepting it, or
    named as resting on wrong lessons when rejecting it."""

    #: The change's number, as `proposals show` lists them (from 1).
    number: int
    #: `added`, `changed`, `removed` or `retired` (`sources.RuleChange`).
    change: str
    text: str
    rule_id: str | None = None
    #: The person's reason, when they gave one.
    reason: str | None = None
    #: The reflections marked rejected for it.
    rejected: list[str] = msgspec.field(default_factory=list)


class RulesFile(msgspec.Struct, omit_defaults=True):
    rules: list[Rule] = msgspec.field(default_factory=list)


def finalize_rules(
    new_rules: Iterable[Rule],
    previous: Sequence[Rule],
    batch_sources: Sequence[str],
    now: str,
) -> list[Rule]:
    """Give a freshly learned rule set its identity, carrying lineage forward.

    The learner rewrites whole sets, so identity must survive a rewrite: a
    rule whose text matches one in `previous` *is* that rule restated and keeps
    its id, `created_at`, retirement and (unless it brings its own) sources; a
    rule with new text is new — a fresh id, `now`, and the reflections it
    cites as sources (the batch's, when it brings none). Retired rules in `previous` that the new set omits are
    carried over untouched: a consolidation can neither resurrect nor erase
    what retirement recorded.
    """
    by_text: dict[str, Rule] = {}
    for earlier in previous:
        by_text.setdefault(earlier.text, earlier)
    out: list[Rule] = []
    for rule in new_rules:
        r = msgspec.structs.replace(rule, sources=list(rule.sources))
        prev = by_text.get(r.text)
        if prev is not None:
            r.id = prev.id
            r.created_at = prev.created_at
            if not r.sources:
                r.sources = list(prev.sources)
            r.retired_at = prev.retired_at
            r.retired_reason = prev.retired_reason
            if prev.retired_at is not None:
                r.enabled = False  # as a retirement leaves it (`proposals.retired`)
        if r.id is None:
            r.id = mint_rule_id()
            r.created_at = now
            r.sources = list(r.sources or batch_sources)
        out.append(r)
    kept = {r.text for r in out}
    for prev in previous:
        if prev.retired_at is not None and prev.text not in kept:
            out.append(msgspec.structs.replace(prev))
            kept.add(prev.text)
    return out


def rule_handle(index: int) -> str:
    """How a prompt names the `index`th live learned rule of a scope: the
    learner's (`consolidation`) and the reflector's (`reflection`, whose
    reply names the rules a correction repeats by it) — one numbering, so
    `L2` is the same rule to both."""
    return f"L{index + 1}"


def active_count(rules: Iterable[Rule]) -> int:
    return sum(1 for r in rules if r.active())


def budget_refuses(active_before: int, active_after: int) -> bool:
    """The budget gate: a set that ends over the cap may land only if it is
    not growing. Growth past the cap is refused however it was argued; an
    over-cap legacy set may shrink toward the cap or be rewritten at the same
    size, or the refusal would wedge the store it exists to shrink."""
    return active_after > MAX_ACTIVE_RULES_PER_DOMAIN and active_after > active_before


def one_line(text: str) -> str:
    """A rule's text as the one line the block gives it: every line break
    (any that `str.splitlines` knows) and the blanks around it become one
    space. Text without one is returned as it is, so its block and hash do
    not change."""
    parts = text.splitlines()
    if len(parts) <= 1 and text == (parts[0] if parts else ""):
        return text
    return " ".join(p.strip() for p in parts if p.strip())


#: What a project's section adds to its domain's heading, so the model can
#: tell a repository's conventions from the person's standing rules.
PROJECT_SECTION_SUFFIX = " (this project)"


def section_heading(domain: str, *, project: bool = False) -> str:
    """`### <domain>`, or `### <domain> (this project)` for a project's rules."""
    return f"### {domain}{PROJECT_SECTION_SUFFIX if project else ''}"


def domain_rules_section(
    domain: str, user: Sequence[Rule], learned: Sequence[Rule], *, project: bool = False
) -> str | None:
    """One domain's section in one scope: its heading (`section_heading`)
    then a `- <text>` line per active rule, user rules first. `None` when
    nothing in it is active.

    Each rule is one line (`one_line`), whatever its text holds: a rule with
    a line break in it could otherwise start a heading of its own in the
    block, or end the section an export writes it into."""
    lines = [f"- {one_line(r.text)}" for r in (*user, *learned) if r.active()]
    if not lines:
        return None
    return section_heading(domain, project=project) + "\n" + "\n".join(lines)


#: Sentence punctuation a rule may end with or not. Only these: a trailing
#: `/`, `%` or `)` is part of what the rule says.
_TRAILING_PUNCTUATION = ".,;:!?\u2026\u3002\uff01\uff1f"


def rule_key(text: str) -> str:
    """What makes two rules the same rule, everywhere the project asks: the
    editor's duplicate check, the learn gate's repeat check, a lesson live in
    two projects (promotion) and a project rule the global rules already
    hold. Casefolded, whitespace collapsed, trailing sentence punctuation
    stripped: "Never edit reports/." and "never edit  reports/" say one thing
    and cost the budget twice.

    Deliberately this conservative — no stemming, no model, no similarity
    score: "these two are the same rule" is a claim a person can check by
    reading both. Rules that say one thing in other words are the learn
    gate's separate, named judgement (`sense.near_identical`)."""
    return " ".join(text.casefold().split()).rstrip(_TRAILING_PUNCTUATION + " ")


def wrap_rules_block(sections: Iterable[str]) -> str | None:
    """The sections under the heading and preamble; `None` for no sections,
    so an empty store spends no prompt tokens on a bare heading."""
    sections = list(sections)
    if not sections:
        return None
    return f"{RULES_BLOCK_HEADING}\n\n{RULES_BLOCK_PREAMBLE}\n\n" + "\n\n".join(sections)


def strip_rules_block(system: str) -> str:
    """A recorded system prompt with any injected rules block removed."""
    pos = system.find(RULES_BLOCK_HEADING)
    if pos == -1:
        return system
    return system[:pos].rstrip()


def run_domains_including(domain: str | None) -> list[str]:
    """The domains a run exercising `domain` carries: `RUN_DOMAINS`, then
    `domain` itself when it is not one of them."""
    out = list(RUN_DOMAINS)
    if domain is not None and domain not in out:
        out.append(domain)
    return out


def routed_domains() -> list[str]:
    """Every domain something actually loads — a run or a named pass. What
    "unrouted" is measured against: a rules file for any other domain is read
    by nothing at run time unless a run names that domain."""
    out = list(RUN_DOMAINS)
    out.extend(d for d in PASS_DOMAINS if d not in out)
    return out
