"""Figure 16: a reflect pass's wall time on the real local model, with the
reply budget its contracts size against the 4,096 tokens every request
asked for before.

The real local model (the `local` extra's server and SmolLM2-135M), the
real pass (`reflect_inbox`, concurrency 1 as the demo runs it) over one
session of 8 steers, in a fresh store each time; the baseline is the same
pass with every request's `max_tokens` set back to 4,096, interleaved with
it round by round on the same server. A reply that rambles inside its JSON
string runs to the budget, so what the budget changes is the cost of the
replies that are unusable anyway: the counts of replies cut off and of
usable lessons are printed beside the times.

Needs the local model (`python -m tests.realparts llama`), so this figure
runs only when asked: `python -m tests.bench --only 16`.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import Figure, median

OLD_BUDGET = 4096
STEERS = [
    "stop, don't delete the build folder, ask me first",
    "no, keep the edits inside docs/ only",
    "use two spaces for indentation, not tabs",
    "run the tests before you say it's done",
    "don't push to main, open a branch",
    "quote the whole error message, not a summary",
    "write dates as 2026-12-02, not 12/2/26",
    "leave the lockfile alone",
]


class _Budget:
    """A provider that asks every request with one `max_tokens`, and counts
    what came back cut off at it."""

    def __init__(self, provider: Any, max_tokens: int | None):
        self.provider = provider
        self.max_tokens = max_tokens
        self.calls = 0
        self.cut_off = 0

    async def complete(self, request: Any) -> Any:
        import msgspec

        from mecha.core.providers.base import StopReason

        if self.max_tokens is not None:
            request = msgspec.structs.replace(request, max_tokens=self.max_tokens)
        response = await self.provider.complete(request)
        self.calls += 1
        self.cut_off += response.stop_reason is StopReason.MAX_TOKENS
        return response


def _session() -> list:
    from mecha.core.sessions.transcript import Block, Message

    messages = [Message.user("tidy up the repository")]
    for i, text in enumerate(STEERS):
        messages.append(Message.assistant([Block.text_block(f"step {i}"), Block.tool_use(f"t{i}", "shell", {"cmd": f"step {i}"})]))
        messages.append(Message.tool_results([Block.tool_result(f"t{i}", "ok"), Block.text_block(text)]))
    messages.append(Message.assistant("Done."))
    return messages


def _pass(provider: Any, tmp: Path, name: str) -> tuple[float, int]:
    """(wall seconds, reflections written)."""
    from mecha.core.learning.reflect import reflect_inbox
    from mecha.core.learning.reflection import Reflector
    from mecha.core.sessions.transcript import Taint, TaintCheckpoint
    from mecha.core.store.inbox import enqueue, session_entry
    from mecha.core.store.learning_store import LearningStore

    store = LearningStore.open(tmp / name)
    enqueue(store, session_entry("bench", _session(), [TaintCheckpoint(at=0, taint=Taint())]))
    start = time.perf_counter()
    outcome = asyncio.run(reflect_inbox(store, Reflector(provider), concurrency=1))
    return time.perf_counter() - start, outcome.reflections


def run(rounds: int) -> list[Figure]:
    from mecha.core.learning.reflection import BEHAVIOR_CONTRACT
    from mecha.core.providers import OpenAIProvider
    from mecha.core.providers.config import ModelConfig
    from mecha.sidecar.localmodel import MODEL_ID, LocalServer, ensure_local_model

    took: dict[str, list[float]] = {"contract": [], "old": []}
    usable = {"contract": 0, "old": 0}
    sides = {"contract": None, "old": OLD_BUDGET}
    counters: dict[str, _Budget] = {}
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp, \
            LocalServer(ensure_local_model(), log=Path(tmp) / "server.log") as server:
        config = ModelConfig(api="openai", base_url=server.base_url, model=MODEL_ID, timeout_s=900.0, source="bench")
        base = OpenAIProvider(config)
        counters = {side: _Budget(base, budget) for side, budget in sides.items()}
        for n in range(rounds):
            for side in ("old", "contract") if n % 2 == 0 else ("contract", "old"):
                wall, written = _pass(counters[side], Path(tmp), f"{side}-{n}")
                took[side].append(wall)
                usable[side] += written
    new, old = median(took["contract"]), median(took["old"])
    c, o = counters["contract"], counters["old"]
    return [Figure(
        key="reply_budget_pass",
        title=f"reflect pass over {len(STEERS)} steers on SmolLM2-135M (local, CPU), concurrency 1",
        subject=new * 1e3, baseline=old * 1e3, unit="ms",
        subject_label=f"max_tokens {BEHAVIOR_CONTRACT.max_tokens} (the contract's)",
        baseline_label=f"max_tokens {OLD_BUDGET} (before)",
        ratio=new / old, goal="reported", met=None,
        notes=[f"cut off at the budget: {c.cut_off} of {c.calls} calls against {o.cut_off} of {o.calls}; "
               f"usable lessons {usable['contract']} against {usable['old']}"],
        extra={"rounds": rounds, "runs_s": took, "cut_off": {"contract": c.cut_off, "old": o.cut_off},
               "calls": {"contract": c.calls, "old": o.calls}, "usable": usable},
    )]


if __name__ == "__main__":
    import json

    for f in run(1):
        print(json.dumps(f.__dict__, default=str))
