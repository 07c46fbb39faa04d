"""Figure 15: requests sent per usable reply in a fresh reflect pass, against
each kind of server the tests speak to.

A fresh store (no structured mode remembered) and a pass over 4
interventions at concurrency 4, the real `reflect_inbox` with the real
provider and the store's mode memory, against the scripted server over real
HTTP (`tests/model_server.py`) with 200 ms a call, so the calls overlap as a
pass's calls do. Each kind of server answers as its real counterpart does:
one that takes `json_schema` (llama.cpp's server, vLLM, OpenAI), one that
answers it with llama-cpp-python's HTTP 500 naming `response_format`, one
that takes no `response_format` at all (HTTP 400), and the Anthropic Messages
API (a forced tool). The figure is requests sent over reflections written.
Before the mode was found once per server, the llama-cpp-python kind cost 4
here and 5 on the real server (each of the 4 calls probed `json_schema` and
retried its 500 three times).
Goal ≤ 1.25; the server that takes neither mode must be asked three ways
before one is known, so its floor is (2 + 4) / 4 = 1.5.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from .common import Figure, median

INTERVENTIONS = 4
CONCURRENCY = 4
LATENCY_S = 0.2

#: key → (title, dialect, modes the server rejects, reject status, goal).
SERVERS: dict[str, tuple[str, str, frozenset[str], int, float]] = {
    "probe_json_schema": ("a server that takes json_schema", "openai", frozenset(), 500, 1.25),
    "probe_llama_cpp_python": ("a server that answers json_schema with HTTP 500 (llama-cpp-python's)", "openai",
                               frozenset({"json_schema"}), 500, 1.25),
    "probe_no_format": ("a server that takes no response_format (HTTP 400)", "openai",
                        frozenset({"json_schema", "json_object"}), 400, 1.5),
    "probe_anthropic": ("the Anthropic Messages API (forced tool)", "anthropic", frozenset(), 400, 1.25),
}


#: What the same pass cost before each call stopped probing on its own,
#: measured with this module against the code of that time.
BEFORE = {
    "probe_llama_cpp_python": "before: 4 (each call probed json_schema and retried its 500 three times; "
                              "5 on the real llama-cpp-python server)",
    "probe_no_format": "before: 3 (each call probed both modes)",
}


def _session() -> list:
    from mecha.core.sessions.transcript import Block, Message

    messages = [Message.user("tidy the release notes")]
    for i in range(INTERVENTIONS):
        messages.append(Message.assistant([Block.text_block(f"step {i}"), Block.tool_use(f"t{i}", "shell", {"cmd": f"step {i}"})]))
        messages.append(Message.tool_results([Block.tool_result(f"t{i}", "ok"), Block.text_block(f"for step {i}, keep the headings as they are")]))
    messages.append(Message.assistant("Done."))
    return messages


def _one(key: str, tmp: Path, n: int) -> tuple[int, int]:
    """(requests sent, reflections written) in one fresh pass."""
    from mecha.core.learning.reflect import reflect_inbox
    from mecha.core.learning.reflection import Reflector
    from mecha.core.providers import provider_from_config
    from mecha.core.providers.structured import ModeMemory
    from mecha.core.sessions.transcript import Taint, TaintCheckpoint
    from mecha.core.store.inbox import enqueue, session_entry
    from mecha.core.store.learning_store import LearningStore
    from tests.model_server import ModelServer, lessons_responder

    _, dialect, rejects, status, _ = SERVERS[key]
    store = LearningStore.open(tmp / f"store-{key}-{n}")
    enqueue(store, session_entry("bench", _session(), [TaintCheckpoint(at=0, taint=Taint())]))
    with ModelServer(responder=lessons_responder, rejects=rejects, reject_status=status, latency_s=LATENCY_S) as server:
        memory = ModeMemory(store.structured_modes_path, root=store.root)
        provider = provider_from_config(server.config(dialect, timeout_s=30.0), memory=memory)
        outcome = asyncio.run(reflect_inbox(store, Reflector(provider), concurrency=CONCURRENCY))
        return len(server.completions()), outcome.reflections


def run(rounds: int) -> list[Figure]:
    sent: dict[str, list[float]] = {k: [] for k in SERVERS}
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp:
        for n in range(rounds):
            for key in SERVERS:
                requests, replies = _one(key, Path(tmp), n)
                assert replies == INTERVENTIONS, (key, replies)
                sent[key].append(requests / replies)
    figures = []
    for key, (title, _, _, _, goal) in SERVERS.items():
        ratio = median(sent[key])
        figures.append(Figure(
            key=key,
            title=f"requests per usable reply, fresh pass of {INTERVENTIONS} at concurrency {CONCURRENCY}: {title}",
            subject=ratio,
            baseline=1.0,
            unit="requests",
            subject_label="sent per reply",
            baseline_label="one per reply",
            ratio=ratio,
            goal=f"≤ {goal:g}",
            met=ratio <= goal,
            notes=[BEFORE[key]] if key in BEFORE else [],
            extra={"rounds": rounds, "runs": sent[key]},
        ))
    return figures


if __name__ == "__main__":
    for f in run(1):
        print(json.dumps(f.__dict__, default=str))
