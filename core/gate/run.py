"""What the harness records about one run: its stop cause, counters and
homeostatic readings. Defined by the harness's session module; mirrored here
because the candidate gate and the appraisal read them.

Every field defaults (0 / false / null) so a harness that records fewer
counters still decodes — and a defaulted `taint` reads *clean*, which is why
the appraisal never takes a run's origin from here.
"""

from __future__ import annotations

from enum import Enum

import msgspec

from mecha.core.sessions.transcript import Taint


class StopCause(str, Enum):
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    LOOP = "loop"
    NO_OUTPUT = "no_output"
    MAX_TURNS = "max_turns"
    OUTPUT_TOKEN_BUDGET = "output_token_budget"
    COST_BUDGET = "cost_budget"

    def cut_short(self) -> bool:
        """The harness ended the run rather than the model finishing it.
        `interrupted` is a person stopping it, which is not the harness's doing."""
        return self not in (StopCause.COMPLETED, StopCause.INTERRUPTED)


class Homeostat(msgspec.Struct):
    peak_context_pressure: float | None = None
    load_avg_1m: float | None = None


class RunStats(msgspec.Struct):
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    tool_denied: int = 0
    blocked_sends: int = 0
    malformed_tool_args: int = 0
    compactions: int = 0
    ended_on_failed_call: bool = False
    stop_cause: StopCause | None = None
    context_overflows: int | None = None
    boredom_notices: int | None = None
    taint: Taint = msgspec.field(default_factory=Taint)
    homeostat: Homeostat | None = None
