"""The agent table (`environment.agents`): one row per agent, and the
lookups every other module asks it."""

from __future__ import annotations

from typing import get_args

import pytest

from mecha.core.environment import agents, spellings


def test_the_wire_types_spell_exactly_the_tables_names():
    # Pins: a row added without its name in the wire's Literal types (a
    # params struct that refuses the new agent), or the other way round.
    assert get_args(spellings.AgentName) == agents.NAMES
    assert get_args(spellings.AgentApi) == agents.APIS
    assert get_args(spellings.ExportTargetName) == agents.EXPORT_TARGETS


def test_a_session_id_says_whose_reader_gave_it():
    # Pins: a Codex session's held-back intervention re-read with Claude
    # Code's taint policy (its id prefix ignored).
    assert agents.of_session_id("codex:0199-a") is agents.CODEX
    assert agents.of_session_id("4f1c-77") is agents.CLAUDE


def test_an_agents_home_follows_its_variable_when_set():
    assert agents.agent_home(agents.CODEX, "/home/pat", {}) == "/home/pat/.codex"
    assert agents.agent_home(agents.CODEX, "/home/pat", {"CODEX_HOME": "/srv/codex"}) == "/srv/codex"
    assert agents.agent_home(agents.CLAUDE, "/home/pat", {"CODEX_HOME": "/srv/codex"}) == "/home/pat/.claude"


def test_a_row_that_leaves_a_field_out_is_refused():
    with pytest.raises(TypeError, match="missing"):
        agents.Agent(name="x")
