"""Figure 10: a reflect pass over 40 interventions against a model server
that takes 200 ms per call, at concurrency 1 and 4.

The server is the scripted one over real HTTP (`tests/model_server.py`),
threaded, so it answers concurrent calls together as a server with parallel
slots does. The pass is the real one — `reflect_inbox` with the real
OpenAI-compatible provider, the attempts ledger, git commits — over one
session with 40 steers, in a fresh store each round. The floor is what the
latency alone costs: `40 × 200 ms / concurrency`. The goal is ≤ 1.2× it:
the pass's own work (survey, ledger, commit) must not eat the time that
concurrency wins.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path

from .common import Figure, median

INTERVENTIONS = 40
LATENCY_S = 0.2
LEVELS = (1, 4)


def _session() -> list:
    from mecha.core.sessions.transcript import Block, Message

    messages = [Message.user("work through the checklist")]
    for i in range(INTERVENTIONS):
        messages.append(Message.assistant([Block.text_block(f"step {i}"), Block.tool_use(f"t{i}", "shell", {"cmd": f"step {i}"})]))
        messages.append(Message.tool_results([Block.tool_result(f"t{i}", "ok"), Block.text_block(f"for step {i}, use the dry run first")]))
    messages.append(Message.assistant("Done."))
    return messages


def _one(server, concurrency: int, tmp: Path, n: int) -> float:
    from mecha.core.learning.reflect import reflect_inbox
    from mecha.core.learning.reflection import Reflector
    from mecha.core.providers import OpenAIProvider
    from mecha.core.sessions.transcript import Taint, TaintCheckpoint
    from mecha.core.store.inbox import enqueue, session_entry
    from mecha.core.store.learning_store import LearningStore

    store = LearningStore.open(tmp / f"store-{concurrency}-{n}")
    enqueue(store, session_entry("bench", _session(), [TaintCheckpoint(at=0, taint=Taint())]))
    reflector = Reflector(OpenAIProvider(server.config("openai", timeout_s=30.0, structured="off")))
    start = time.perf_counter()
    outcome = asyncio.run(reflect_inbox(store, reflector, concurrency=concurrency))
    took = time.perf_counter() - start
    assert outcome.reflections == INTERVENTIONS, outcome
    return took


def run(rounds: int) -> list[Figure]:
    from tests.model_server import ModelServer, lessons_responder

    took: dict[int, list[float]] = {c: [] for c in LEVELS}
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp, \
            ModelServer(responder=lessons_responder, latency_s=LATENCY_S) as server:
        for n in range(rounds):
            for c in LEVELS:
                took[c].append(_one(server, c, Path(tmp), n))
    figures = []
    for c in LEVELS:
        wall = median(took[c])
        floor = INTERVENTIONS * LATENCY_S / c
        figures.append(Figure(
            key=f"reflect_c{c}",
            title=f"reflect pass over {INTERVENTIONS} interventions, 200 ms a model call, concurrency {c}",
            subject=wall * 1e3,
            baseline=floor * 1e3,
            unit="ms",
            subject_label="reflect_inbox",
            baseline_label=f"floor {INTERVENTIONS} × 200 ms / {c}",
            ratio=wall / floor,
            goal="≤ 1.2× the floor",
            met=wall <= 1.2 * floor,
            extra={"rounds": rounds, "runs_s": took[c]},
        ))
    return figures


if __name__ == "__main__":
    for f in run(1):
        print(json.dumps(f.__dict__, default=str))
