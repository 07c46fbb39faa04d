"""Figure 5: `mecha/extractInterventions` over a generated 10k-message
transcript — tool calls and their results, steers riding beside results,
denials and follow-ups, in realistic proportions and sizes.

Measured server side as the harness sees it: the round trip of the request
over stdio (send the body, decode, mine, encode, reply), throughput in MB of
request body per second. Baseline: the same body sent to a stdio peer that
only frames and answers it. The in-process rate (typed decode straight from
bytes, then mining) is reported for context.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from .common import Figure, RawClient, child_env, console_script, echo_server_argv, initialize_params, median

MESSAGES = 10_000
TOOLS = ("read_file", "edit_file", "run_shell", "search", "list_dir")


def _words(rng: random.Random, n: int) -> str:
    vocab = (
        "the function returns a value when config path is missing and we retry after parsing "
        "output from test suite file module error line build import cache request"
    ).split()
    return " ".join(rng.choice(vocab) for _ in range(n))


def transcript(n: int = MESSAGES, seed: int = 6) -> list[dict[str, Any]]:
    """`n` messages: a task, then assistant turns with tool calls, user turns
    with their results (about 1 in 15 carrying a person's steer, 1 in 25 a
    denial), and now and then a follow-up from the person."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the config loader and keep the tests green."}]
    call = 0
    while len(out) < n:
        if rng.random() < 0.04 and out[-1]["role"] == "assistant":
            out.append({"role": "user", "content": "Actually, " + _words(rng, rng.randint(8, 30)) + "."})
            continue
        uses = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            call += 1
            tool = rng.choice(TOOLS)
            uses.append(
                {
                    "type": "tool_use",
                    "id": f"call_{call:06d}",
                    "name": tool,
                    "input": {"path": f"src/module_{rng.randint(0, 99)}.py", "query": _words(rng, rng.randint(2, 8))},
                }
            )
        text = {"type": "text", "text": _words(rng, rng.randint(10, 60))}
        out.append({"role": "assistant", "content": [text, *uses]})
        results = []
        for use in uses:
            if rng.random() < 0.04:
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": use["id"],
                        "content": "Denied by the user: " + _words(rng, rng.randint(4, 16)),
                        "is_error": True,
                    }
                )
            else:
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": use["id"],
                        "content": _words(rng, rng.randint(40, 300)),
                        "is_error": rng.random() < 0.05,
                    }
                )
        if rng.random() < 0.07:
            results.append({"type": "text", "text": "Stop — " + _words(rng, rng.randint(5, 20))})
        out.append({"role": "user", "content": results})
    return out[:n]


def _in_process(body: bytes, reps: int, root: Path) -> tuple[float, int]:
    """The server's own handling, without the pipes: envelope, typed params
    straight from the raw bytes, mining, the encoded reply."""
    from mecha.protocol.jsonrpc import decode_envelope
    from mecha.sidecar.context import Context, InitializationOptions
    from mecha.sidecar.handlers import make_dispatch
    from mecha.sidecar.rpc import Cancel, _encode_result

    dispatch = make_dispatch(Context.from_options(InitializationOptions(learning_dir=str(root))))
    times = []
    found = 0
    for _ in range(reps):
        t = time.perf_counter()
        msg = decode_envelope(body)
        result = dispatch(msg.method, msg.params, Cancel())
        _encode_result(msg.id, result)
        times.append(time.perf_counter() - t)
        found = len(result.interventions)
    return median(times), found


def run(rounds: int) -> list[Figure]:
    env = child_env()
    messages = transcript()
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp:
        root = Path(tmp) / "store"
        root.mkdir()
        sidecar = RawClient([console_script()], env)
        sink = RawClient(echo_server_argv(16), env)
        try:
            sidecar.request("initialize", initialize_params(root))
            sidecar.notify("initialized", {})
            subject: list[float] = []
            baseline: list[float] = []
            size = 0
            found = 0
            for i in range(rounds + 1):  # the first round warms up
                for client, times in ((sink, baseline), (sidecar, subject)):
                    id, body = client.request_body("mecha/extractInterventions", {"messages": messages})
                    size = len(body)
                    t = time.perf_counter()
                    reply = client.send_and_wait(id, body)
                    took = time.perf_counter() - t
                    if "error" in reply:
                        raise RuntimeError(reply["error"])
                    if client is sidecar:
                        found = len(reply["result"]["interventions"])
                    if i:
                        times.append(took)
        finally:
            sidecar.close()
            sink.close()
    body = msgspec.json.encode(
        {"jsonrpc": "2.0", "id": 1, "method": "mecha/extractInterventions", "params": {"messages": messages}}
    )
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp:
        in_process_s, found_in_process = _in_process(body, max(3, rounds), Path(tmp))
    mb = size / 1e6
    s_rate, b_rate = mb / median(subject), mb / median(baseline)
    return [
        Figure(
            key="extract_mbps",
            title=f"extractInterventions over a {MESSAGES // 1000}k-message transcript ({mb:.1f} MB of JSON, {found} interventions)",
            subject=s_rate,
            baseline=b_rate,
            unit="MB/s",
            subject_label="round trip over stdio",
            baseline_label="stdio sink, same body",
            ratio=s_rate / b_rate,
            goal="≥ 20 MB/s",
            met=s_rate >= 20.0,
            notes=[f"in process (the same dispatch, without the pipes): {mb / in_process_s:.0f} MB/s"],
            extra={
                "rounds": rounds,
                "request_bytes": size,
                "interventions": found,
                "round_trip_s": median(subject),
                "in_process_mbps": mb / in_process_s,
                "in_process_interventions": found_in_process,
            },
        )
    ]
