"""Figure 7: the editor endpoint, `didChange` on a 15-rule learned file →
`textDocument/publishDiagnostics` for that version.

Full-document sync, as the server asks for. Each change alternates between
the file as written and the file with one rule duplicated (so diagnostics
change too). Baseline: a `mecha/rulesPromptBlock` round trip to the same
editor server, interleaved — the floor of any exchange through its loop.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from .common import (
    Figure,
    RawClient,
    child_env,
    console_script,
    initialize_params,
    make_rules_store,
    median,
    percentile,
    rules_toml,
)


def _wait_diagnostics(client: RawClient, uri: str, version: int, limit_s: float = 30.0) -> dict[str, Any]:
    deadline = time.perf_counter() + limit_s
    while time.perf_counter() < deadline:
        for i, n in enumerate(client.notifications):
            p = n.get("params") or {}
            if n.get("method") == "textDocument/publishDiagnostics" and p.get("uri") == uri and p.get("version") == version:
                del client.notifications[: i + 1]
                return p
        frame = client.reader.read_frame()
        if frame is None:
            raise EOFError("the editor server closed its output")
        if frame.body is not None:
            msg = msgspec.json.decode(frame.body)
            if "method" in msg:
                client.notifications.append(msg)
            elif "id" in msg and "method" not in msg and msg.get("error"):
                raise RuntimeError(msg["error"])
    raise TimeoutError(f"no diagnostics for version {version}")


def run(n: int) -> list[Figure]:
    env = child_env()
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp:
        root = make_rules_store(Path(tmp) / "store")
        path = root / "rules" / "behavior.learned.toml"
        uri = path.resolve().as_uri()
        clean = path.read_text()
        lines = clean.split("\n")
        # The same file with its first rule's text repeated in the last rule.
        dup = rules_toml("behavior", 15).replace(
            "behavior task 14,", "behavior task 0,"
        )
        texts = (dup, clean)
        client = RawClient([console_script(), "lsp"], env)
        try:
            init = initialize_params(root)
            init.update({"rootUri": root.as_uri(), "capabilities": {}})
            client.request("initialize", init)
            client.notify("initialized", {})
            client.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "toml", "version": 1, "text": clean}},
            )
            first = _wait_diagnostics(client, uri, 1)
            version = 1
            subject: list[float] = []
            baseline: list[float] = []
            counts: set[int] = {len(first["diagnostics"])}

            def change() -> float:
                nonlocal version
                version += 1
                text = texts[version % 2]
                t = time.perf_counter()
                client.notify(
                    "textDocument/didChange",
                    {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
                )
                got = _wait_diagnostics(client, uri, version)
                took = time.perf_counter() - t
                counts.add(len(got["diagnostics"]))
                return took

            def block() -> float:
                id, body = client.request_body("mecha/rulesPromptBlock", {"domain": "coding"})
                t = time.perf_counter()
                reply = client.send_and_wait(id, body)
                took = time.perf_counter() - t
                if "error" in reply:
                    raise RuntimeError(reply["error"])
                return took

            for _ in range(10):  # warm up
                change()
                block()
            for _ in range(n):
                baseline.append(block())
                subject.append(change())
        finally:
            client.close()
    s_med, b_med = median(subject) * 1e3, median(baseline) * 1e3
    s_p99 = percentile(subject, 99) * 1e3
    return [
        Figure(
            key="editor_diagnostics",
            title="editor endpoint: didChange on a 15-rule file → publishDiagnostics, median",
            subject=s_med,
            baseline=b_med,
            unit="ms",
            subject_label="mecha-sidecar lsp",
            baseline_label="rulesPromptBlock round trip, same server",
            ratio=s_med / b_med,
            goal="≤ 50 ms",
            met=s_med <= 50.0,
            notes=[f"p99 {s_p99:.1f} ms; diagnostics per version: {sorted(counts)}"],
            extra={"changes": len(subject), "p99_ms": s_p99, "diagnostic_counts": sorted(counts), "lines": len(lines)},
        )
    ]
