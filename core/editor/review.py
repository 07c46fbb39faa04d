"""What an editor says of a proposal under review: the line that lists it,
and the line shown once a person has accepted, rejected or asked to retire
a rule. Spelled here, once, from the proposal itself — its active rule
counts, its domain and its scope — so no client counts rules or words a
message of its own.
"""

from __future__ import annotations

from mecha.core.domain.rules import active_count
from mecha.core.learning.asks import ask_subject
from mecha.core.learning.scope import scope_label
from mecha.core.store.layout import LEARNED_KIND, rules_file_name
from mecha.core.store.proposal_files import Proposal


def proposal_scope_label(p: Proposal) -> str:
    """The scope a proposal's rules apply in, named to a person: `global`,
    or `project <root>` (`Proposal.project`, `None` for global)."""
    return scope_label(p.project)


def proposal_title(p: Proposal) -> str:
    """`behavior · 3 → 4 active rules`, then ` · project <root>` for a
    project's: one proposal in a list."""
    line = f"{p.domain} · {active_count(p.rules_before)} → {active_count(p.rules)} active rules"
    return line if p.project is None else f"{line} · {proposal_scope_label(p)}"


def proposal_writes(p: Proposal) -> str:
    """The rules file an accept of `p` writes, by name."""
    return rules_file_name(p.domain, LEARNED_KIND, p.project)


def accepted_message(p: Proposal) -> str:
    """Said once `p` is accepted: how many learned rules are active now,
    where."""
    where = "" if p.project is None else f" in {proposal_scope_label(p)}"
    dropped = [a for r in p.rules if r.edited is not None and r.edited.proposal_id == p.id for a in r.edited.ask_dropped]
    not_asking = "".join(f"; not asking before `{a}`: your words no longer name `{ask_subject(a)}`" for a in dropped)
    return f"accepted proposal {p.id}; {p.domain} now has {active_count(p.rules)} active learned rules{where}{not_asking}"


def rejected_message(p: Proposal) -> str:
    """Said once `p` is rejected."""
    return f"rejected proposal {p.id}"


def retirement_message(p: Proposal) -> str:
    """Said once a retirement is proposed: it is a proposal like any other."""
    return f"proposal {p.id} would retire the rule; review it like any other"
