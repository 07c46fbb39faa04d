"""Figure 3: a warm `mecha/rulesPromptBlock` round trip over stdio.

One sidecar, initialized and warmed up; requests alternate with the same
request to an echo peer that answers a same-sized result over the same
framing and pipes (the floor under any stdio round trip from this client).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import msgspec

from .common import (
    Figure,
    RawClient,
    child_env,
    console_script,
    echo_server_argv,
    initialize_params,
    make_rules_store,
    median,
    percentile,
)


def round_trips(client: RawClient, method: str, params: object, n: int, *, gap_s: float = 0.0) -> list[float]:
    out = []
    for _ in range(n):
        id, body = client.request_body(method, params)
        t = time.perf_counter()
        reply = client.send_and_wait(id, body)
        out.append(time.perf_counter() - t)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        if gap_s:
            time.sleep(gap_s)
    return out


def run(n: int) -> list[Figure]:
    env = child_env()
    params = {"domain": "coding"}
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp:
        root = make_rules_store(Path(tmp) / "store")
        sidecar = RawClient([console_script()], env)
        try:
            sidecar.request("initialize", initialize_params(root))
            sidecar.notify("initialized", {})
            first = sidecar.request("mecha/rulesPromptBlock", params)
            result_chars = len(msgspec.json.encode(first))
            echo = RawClient(echo_server_argv(result_chars), env)
            try:
                round_trips(sidecar, "mecha/rulesPromptBlock", params, 200)
                round_trips(echo, "mecha/rulesPromptBlock", params, 200)
                subject: list[float] = []
                baseline: list[float] = []
                chunk = 50
                for _ in range(max(1, n // chunk)):
                    baseline += round_trips(echo, "mecha/rulesPromptBlock", params, chunk)
                    subject += round_trips(sidecar, "mecha/rulesPromptBlock", params, chunk)
            finally:
                echo.close()
        finally:
            sidecar.close()
    s_med, s_p99 = median(subject) * 1e3, percentile(subject, 99) * 1e3
    b_med, b_p99 = median(baseline) * 1e3, percentile(baseline, 99) * 1e3
    extra = {"requests": len(subject), "result_bytes": result_chars}
    return [
        Figure(
            key="warm_median",
            title="warm rulesPromptBlock round trip over stdio, median",
            subject=s_med,
            baseline=b_med,
            unit="ms",
            subject_label="mecha-sidecar",
            baseline_label="stdio echo, same framing",
            ratio=s_med / b_med,
            goal="≤ 1 ms",
            met=s_med <= 1.0,
            extra=extra,
        ),
        Figure(
            key="warm_p99",
            title="warm rulesPromptBlock round trip over stdio, p99",
            subject=s_p99,
            baseline=b_p99,
            unit="ms",
            subject_label="mecha-sidecar",
            baseline_label="stdio echo, same framing",
            ratio=s_p99 / b_p99,
            goal="≤ 2 ms",
            met=s_p99 <= 2.0,
            extra=extra,
        ),
    ]
