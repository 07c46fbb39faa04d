"""Figure 4: warm round-trip p99 while a learn pass runs against a model that
stalls, against the idle p99 of the same sidecar.

Each round has an idle phase (no pass running) and a busy phase: `mecha/learn`
starts a real background pass — a detached `mecha-sidecar pass learn`
process that starts up, reads the store and calls the fake model server,
which holds the request for a few seconds and hangs up. The busy phase lasts
from the `learn` reply to the sidecar's `mecha/jobFinished` notification.
Requests are paced a couple of milliseconds apart in both phases, as a
harness would send them, not back to back.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import msgspec

from tests.model_server import ModelServer, stall

from .common import Figure, RawClient, child_env, console_script, initialize_params, make_rules_store, percentile

STALL_S = 3.0
GAP_S = 0.002


def _reflections(n: int) -> bytes:
    lines = []
    for i in range(n):
        lines.append(
            msgspec.json.encode(
                {
                    "id": f"20261101T0800{i:02d}-bench{i:03d}",
                    "domain": "behavior",
                    "session_id": f"bench-session-{i}",
                    "trigger": "steer",
                    "context": "edit_file {\"path\": \"src/app.py\"}",
                    "intervention": "Only touch the file I named.",
                    "reflexion_text": "When the person names one file, change only that file.",
                    "created_at": "2026-11-01T08:00:00.000000Z",
                    "origin": "clean",
                    "evidence": "full",
                }
            )
        )
    return b"\n".join(lines) + b"\n"


def _phase(client: RawClient, *, until: float | None = None, job_id: str | None = None, limit_s: float = 20.0) -> list[float]:
    """Paced round trips until `until` (idle) or until the job finishes."""
    out = []
    start = time.perf_counter()
    params = {"domain": "coding"}
    while True:
        now = time.perf_counter()
        if until is not None and now >= until:
            break
        if now - start > limit_s:
            raise RuntimeError("the learn pass did not finish in time")
        if job_id is not None and any(
            n.get("method") == "mecha/jobFinished" and n["params"]["job"]["id"] == job_id for n in client.notifications
        ):
            break
        id, body = client.request_body("mecha/rulesPromptBlock", params)
        t = time.perf_counter()
        reply = client.send_and_wait(id, body)
        out.append(time.perf_counter() - t)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        time.sleep(GAP_S)
    return out


def run(rounds: int) -> list[Figure]:
    env = child_env()
    idle: list[float] = []
    busy: list[float] = []
    model_requests = 0
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp, ModelServer(
        responder=lambda request, dialect: stall(STALL_S)
    ) as model:
        root = make_rules_store(Path(tmp) / "store")
        (root / "reflections.jsonl").write_bytes(_reflections(5))
        options = {"model": {"api": "openai", "baseUrl": model.url, "model": "scripted-model", "timeoutS": 30, "maxRetries": 0}}
        client = RawClient([console_script()], env)
        try:
            client.request("initialize", initialize_params(root, **options))
            client.notify("initialized", {})
            _phase(client, until=time.perf_counter() + 0.5)  # warm up
            for _ in range(rounds):
                started = time.perf_counter()
                learned = client.request("mecha/learn", {"domain": "behavior"})
                if learned.get("job") is None:
                    raise RuntimeError(f"learn did not start: {learned}")
                busy_samples = _phase(client, job_id=learned["job"]["id"])
                busy += busy_samples
                took = time.perf_counter() - started
                idle += _phase(client, until=time.perf_counter() + took)
            model_requests = len(model.completions())
        finally:
            client.close()
    i99, b99 = percentile(idle, 99) * 1e3, percentile(busy, 99) * 1e3
    ratio = b99 / i99
    return [
        Figure(
            key="busy_p99",
            title=f"warm round-trip p99 while a learn pass runs against a stalling model ({STALL_S:g} s stall)",
            subject=b99,
            baseline=i99,
            unit="ms",
            subject_label="p99 during the pass",
            baseline_label="p99 idle",
            ratio=ratio,
            goal="≤ 1.5×",
            met=ratio <= 1.5,
            notes=[f"{len(busy)} busy / {len(idle)} idle requests over {rounds} passes; model saw {model_requests} calls"],
            extra={"rounds": rounds, "busy_requests": len(busy), "idle_requests": len(idle), "model_calls": model_requests},
        )
    ]
