"""The editor commands: every intention core's actions and lenses carry is
run by exactly one command id, spelled only in protocol/commands.py."""

from __future__ import annotations

from collections import Counter

import pytest

from mecha.core.editor.results import Act
from mecha.protocol.commands import COMMAND_IDS, COMMANDS, command_params


def test_every_act_has_a_command_id_and_no_two_share_one():
    # Pins: a code action core offers that no editor can run (an `Act`
    # with no id), or two intentions an editor cannot tell apart.
    assert set(COMMAND_IDS) == set(Act), sorted(a.name for a in set(Act) - set(COMMAND_IDS))
    shared = [cid for cid, n in Counter(COMMAND_IDS.values()).items() if n > 1]
    assert not shared, shared


def test_each_command_is_its_acts_id_and_each_act_has_one_command():
    # Pins: the command table drifting from the id map, so a lens runs an
    # id the endpoint does not execute.
    assert sorted(c.act.name for c in COMMANDS.values()) == sorted(a.name for a in Act)
    for cid, command in COMMANDS.items():
        assert cid == command.id == COMMAND_IDS[command.act]


def test_the_command_ids_are_the_contracts():
    # Pins: an id renamed in passing, which every installed editor client
    # (the VS Code extension, the Neovim plugin) would stop finding.
    assert {a.name: cid for a, cid in COMMAND_IDS.items()} == {
        "SHOW_RULES_BLOCK": "mecha.showRulesBlock",
        "LIST_PROPOSALS": "mecha.listProposals",
        "ACCEPT_PROPOSAL": "mecha.acceptProposal",
        "REJECT_PROPOSAL": "mecha.rejectProposal",
        "SHOW_PROPOSAL_DIFF": "mecha.showProposalDiff",
        "PROPOSE_RETIREMENT": "mecha.proposeRetirement",
        "LEARN_NOW": "mecha.learnNow",
    }


def test_a_commands_params_are_spelled_by_its_arguments_in_the_table() -> None:
    # Pins: a command's runner naming its params by hand, and drifting from
    # the argument names the contract (and the generated wire types) say.

    retire = COMMANDS[COMMAND_IDS[Act.PROPOSE_RETIREMENT]]
    assert command_params(retire, ["coding", "r-1", "stale"]) == {"domain": "coding", "rule_id": "r-1", "reason": "stale"}
    reject = COMMANDS[COMMAND_IDS[Act.REJECT_PROPOSAL]]
    assert command_params(reject, ["p-1"]) == {"id": "p-1"}
    assert command_params(reject, ["p-1", None]) == {"id": "p-1"}
    listing = COMMANDS[COMMAND_IDS[Act.LIST_PROPOSALS]]
    assert command_params(listing, [{"status": "pending"}]) == {"status": "pending"}
    assert command_params(listing, []) == {}


@pytest.mark.parametrize(
    ("act", "args", "message"),
    [
        (Act.ACCEPT_PROPOSAL, [], "argument 0 (id) is required"),
        (Act.ACCEPT_PROPOSAL, [7], "argument 0 (id) must be a str"),
        (Act.PROPOSE_RETIREMENT, ["coding", "r-1"], "argument 2 (reason) is required"),
        (Act.LIST_PROPOSALS, ["pending"], "argument 0 (filters) must be a dict"),
    ],
)
def test_a_missing_or_mistyped_argument_is_invalid_params_naming_it(act: Act, args: list[object], message: str) -> None:
    # Pins: a bad argument reaching the handler as a wrong params shape (or
    # a KeyError), instead of -32602 saying which argument.
    from mecha.protocol.errors import INVALID_PARAMS, RpcError

    with pytest.raises(RpcError) as caught:
        command_params(COMMANDS[COMMAND_IDS[act]], args)
    assert caught.value.code == INVALID_PARAMS and message in caught.value.message
