"""The editor commands: every intention core's actions and lenses carry is
run by exactly one command id, spelled only in protocol/commands.py."""

from __future__ import annotations

from collections import Counter

from mecha.core.rulecheck import Act
from mecha.protocol.commands import COMMAND_IDS, COMMANDS


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
