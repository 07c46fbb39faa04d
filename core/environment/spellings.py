"""The agents' names as types, for the wire's params (`protocol.methods`)
and mypy: `Literal` types cannot be built from the table at run time and
still be read by a type checker, so they are spelled here once more, beside
the table, and checked against it when this module loads — a row added
without its name here fails at import, naming both lists.

Apart from `agents` because `typing` is a cost the session-start hook,
which reads the table, does not pay.
"""

from __future__ import annotations

from typing import Literal, get_args

from mecha.core.environment.agents import APIS, EXPORT_TARGETS, NAMES

#: An agent's name (`agents.NAMES`).
AgentName = Literal["claude", "codex"]
#: An `export` target (`agents.EXPORT_TARGETS`).
ExportTargetName = Literal["claude", "codex", "agents"]
#: A model configuration's `api` that runs an agent's command line
#: (`agents.APIS`).
AgentApi = Literal["claude-code", "codex"]

_PAIRS = ((AgentName, NAMES), (ExportTargetName, EXPORT_TARGETS), (AgentApi, APIS))
if any(get_args(spelled) != table for spelled, table in _PAIRS):  # pragma: no cover - a row added alone
    raise ImportError(
        "environment.spellings is out of step with the agent table: "
        + "; ".join(f"{get_args(spelled)} against {table}" for spelled, table in _PAIRS)
    )
