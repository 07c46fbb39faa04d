"""The editor endpoint's contract beyond LSP: the commands it executes
(`workspace/executeCommand`), the arguments each takes, what each returns,
and the notifications it sends.

The ids are the ones `core.rulecheck`'s code actions and lenses carry (core
decides which command fixes what and cannot import this layer); this table is
where their argument shapes and results are spelled, and `schema.py` puts it
in the checked-in JSON Schema the VS Code extension's wire types are
generated from.
"""

from __future__ import annotations

import msgspec

from mecha.core import rulecheck

from . import methods as m

#: Sent by the editor endpoint when the set of pending proposals changes.
PROPOSALS_CHANGED = "mecha/proposalsChanged"
JOB_FINISHED = m.JOB_FINISHED

#: The editor endpoint's notifications and their params.
NOTIFICATIONS: dict[str, type] = {
    PROPOSALS_CHANGED: m.ProposalsChangedParams,
    JOB_FINISHED: m.JobFinishedParams,
}


class Argument(msgspec.Struct, frozen=True):
    """One positional argument of a command."""

    name: str
    #: `str`, or a params Struct (an object argument).
    type: type
    required: bool = True


class Command(msgspec.Struct, frozen=True):
    id: str
    #: The `mecha/*` method it calls: one implementation per behaviour.
    method: str
    arguments: tuple[Argument, ...]
    result: type
    summary: str


def _c(id: str, method: str, arguments: tuple[Argument, ...], result: type, summary: str) -> Command:
    return Command(id, method, arguments, result, summary)


_ID = Argument("id", str)

#: Every command the editor endpoint executes, by id.
COMMANDS: dict[str, Command] = {
    c.id: c
    for c in (
        _c(rulecheck.ACCEPT_PROPOSAL_COMMAND, "mecha/acceptProposal", (_ID,), m.ProposalResult,
           "Accept a pending proposal (id or unique prefix)."),
        _c(rulecheck.REJECT_PROPOSAL_COMMAND, "mecha/rejectProposal", (_ID, Argument("reason", str, required=False)),
           m.ProposalResult, "Reject a pending proposal, with an optional reason."),
        _c(rulecheck.SHOW_PROPOSAL_DIFF_COMMAND, "mecha/proposal", (_ID,), m.ShowProposalDiffResult,
           "A proposal's diff, and the URI a client shows it under."),
        _c(rulecheck.LIST_PROPOSALS_COMMAND, "mecha/proposals", (Argument("filters", m.ProposalsParams, required=False),),
           m.ProposalsResult, "Proposals, filtered by status and domain."),
        _c(rulecheck.LEARN_NOW_COMMAND, "mecha/learn", (Argument("domain", str),), m.LearnResult,
           "Start a learn pass for a domain."),
        _c(rulecheck.PROPOSE_RETIREMENT_COMMAND, "mecha/proposeRetirement",
           (Argument("domain", str), Argument("rule_id", str), Argument("reason", str)), m.ProposalResult,
           "Propose retiring a learned rule."),
        _c(rulecheck.SHOW_RULES_BLOCK_COMMAND, "mecha/rulesPromptBlock", (Argument("domain", str, required=False),),
           m.RulesPromptBlockResult, "The rules block a run would get."),
    )
}
