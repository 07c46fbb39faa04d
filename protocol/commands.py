"""The editor endpoint's contract beyond LSP: the commands it executes
(`workspace/executeCommand`), the arguments each takes, what each returns,
and the notifications it sends.

Core decides which intention fixes what (`core.editor.results.Act`, which its
code actions and lenses carry) and spells no wire string; `COMMAND_IDS` is
where each intention gets the id an editor runs it by, and `COMMANDS` where
each id's argument shapes and result are spelled. `schema.py` puts the table
in the checked-in JSON Schema the VS Code extension's wire types are
generated from.
"""

from __future__ import annotations

import msgspec

from mecha.core.editor.results import Act

from . import methods as m

#: Sent by the editor endpoint when the set of pending proposals changes.
PROPOSALS_CHANGED = "mecha/proposalsChanged"
JOB_FINISHED = m.JOB_FINISHED

#: The editor endpoint's notifications and their params.
NOTIFICATIONS: dict[str, type] = {
    PROPOSALS_CHANGED: m.ProposalsChangedParams,
    JOB_FINISHED: m.JobFinishedParams,
}


#: Where a client says, under its `capabilities.experimental`, which of the
#: editor endpoint's extensions it handles: `{"mecha": {"notifications":
#: true, "showsResults": true}}`. A client that says nothing is any LSP
#: client, and gets LSP alone.
EXPERIMENTAL_KEY = "mecha"


class ClientExtensions(msgspec.Struct, frozen=True, rename="camel"):
    """What a client told the server it handles beyond LSP.

    `notifications`: send it the `NOTIFICATIONS` (a generic client warns on
    each notification it does not know; lsp-mode raises a window for every
    one). `showsResults`: it shows what a command returns itself — a
    proposal's diff under the `mecha-proposal:` scheme, a review's
    `message` — so the server neither writes the diff to a file and asks it
    to open that (`window/showDocument`) nor sends the message
    (`window/showMessage`), which such a client would show twice."""

    notifications: bool = False
    shows_results: bool = False


def client_extensions(experimental: object) -> ClientExtensions:
    """The extensions a client's `capabilities.experimental` asks for; none
    when it names none, or names them in a shape this server does not read
    (failing closed: LSP alone reaches every client)."""
    if not isinstance(experimental, dict):
        return ClientExtensions()
    try:
        return msgspec.convert(experimental.get(EXPERIMENTAL_KEY) or {}, ClientExtensions)
    except msgspec.ValidationError:
        return ClientExtensions()


class Argument(msgspec.Struct, frozen=True):
    """One positional argument of a command."""

    name: str
    #: `str`, or a params Struct (an object argument).
    type: type
    required: bool = True


#: The command id each of core's intentions is run by. Every `Act` has one,
#: and no two share one (a test holds both).
COMMAND_IDS: dict[Act, str] = {
    Act.ACCEPT_PROPOSAL: "mecha.acceptProposal",
    Act.REJECT_PROPOSAL: "mecha.rejectProposal",
    Act.SHOW_PROPOSAL_DIFF: "mecha.showProposalDiff",
    Act.LIST_PROPOSALS: "mecha.listProposals",
    Act.LEARN_NOW: "mecha.learnNow",
    Act.PROPOSE_RETIREMENT: "mecha.proposeRetirement",
    Act.SHOW_RULES_BLOCK: "mecha.showRulesBlock",
}


class Command(msgspec.Struct, frozen=True):
    act: Act
    id: str
    #: The `mecha/*` method it calls: one implementation per behaviour.
    method: str
    arguments: tuple[Argument, ...]
    result: type
    summary: str


def _c(act: Act, method: str, arguments: tuple[Argument, ...], result: type, summary: str) -> Command:
    return Command(act, COMMAND_IDS[act], method, arguments, result, summary)


_ID = Argument("id", str)

#: Every command the editor endpoint executes, by id.
COMMANDS: dict[str, Command] = {
    c.id: c
    for c in (
        _c(Act.ACCEPT_PROPOSAL, "mecha/acceptProposal", (_ID, Argument("options", m.AcceptOptions, required=False)),
           m.ReviewedProposalResult,
           "Accept a pending proposal (id or unique prefix); options.without leaves out changes by number."),
        _c(Act.REJECT_PROPOSAL, "mecha/rejectProposal", (_ID, Argument("reason", str, required=False)),
           m.ReviewedProposalResult, "Reject a pending proposal, with an optional reason."),
        _c(Act.SHOW_PROPOSAL_DIFF, "mecha/proposal", (_ID,), m.ShowProposalDiffResult,
           "A proposal's diff, and the URI a client shows it under."),
        _c(Act.LIST_PROPOSALS, "mecha/proposals", (Argument("filters", m.ProposalsParams, required=False),),
           m.ProposalListResult, "Proposals, filtered by status and domain, each with its summary."),
        _c(Act.LEARN_NOW, "mecha/learn", (Argument("domain", str),), m.LearnResult,
           "Start a learn pass for a domain."),
        _c(Act.PROPOSE_RETIREMENT, "mecha/proposeRetirement",
           (Argument("domain", str), Argument("rule_id", str), Argument("reason", str)), m.ReviewedProposalResult,
           "Propose retiring a learned rule."),
        _c(Act.SHOW_RULES_BLOCK, "mecha/rulesPromptBlock",
           (Argument("domain", str, required=False), Argument("project", str, required=False)),
           m.RulesPromptBlockResult, "The rules block a run would get (in a project, with its rules)."),
    )
}


def command_params(command: Command, args: list[object]) -> dict[str, object]:
    """The params of the method a command calls, from its positional
    `arguments` as the table spells them: a string argument is the field of
    its name; an object argument (a params Struct) is the params whole.
    A missing optional argument (or `null`) is left out; a missing required
    one, or one of the wrong JSON type, is -32602 naming it by position."""
    from .errors import INVALID_PARAMS, RpcError

    params: dict[str, object] = {}
    for i, arg in enumerate(command.arguments):
        value = args[i] if i < len(args) else None
        if value is None:
            if arg.required:
                raise RpcError(INVALID_PARAMS, f"invalid params: argument {i} ({arg.name}) is required")
            continue
        whole = arg.type is not str
        kind: type = dict if whole else str
        if not isinstance(value, kind):
            raise RpcError(INVALID_PARAMS, f"invalid params: argument {i} ({arg.name}) must be a {kind.__name__}")
        if whole:
            params.update(value)  # type: ignore[call-overload]
        else:
            params[arg.name] = value
    return params
