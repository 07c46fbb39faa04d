"""Figure 6: a store with 100k reflections.

Two operations a pass performs, each timed in a fresh child process (so its
peak RSS is its own) against a baseline child doing the unavoidable I/O of
the same operation:

- list a domain's learnable unprocessed reflections
  (`mecha.core.learning.learn.learnable_pool`), against reading the file and splitting
  it into lines;
- mark 1k of them processed (`LearningStore.mark_reflexions_processed`),
  against reading the file and rewriting it whole, atomically (temp sibling,
  fsync, rename) — which the marking must do too.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

import msgspec

from .common import Figure, child_env, interleaved, median, python

REFLECTIONS = 100_000
MARK = 1_000
DOMAINS = ("behavior", "writing", "triage", "coding")

_CHILD = r"""
import json, sys, time
root, op, arg = sys.argv[1], sys.argv[2], sys.argv[3]
from pathlib import Path
t = time.perf_counter()
if op == "pool":
    from mecha.core.learning.learn import learnable_pool
    from mecha.core.store.learning_store import LearningStore
    t = time.perf_counter()
    n = len(learnable_pool(LearningStore(root), arg))
elif op == "read":
    t = time.perf_counter()
    n = len(Path(root, "reflections.jsonl").read_bytes().split(b"\n"))
elif op == "mark":
    from mecha.core.store.learning_store import LearningStore
    ids = Path(arg).read_text().split()
    t = time.perf_counter()
    n = LearningStore(root).mark_reflexions_processed(ids, "run-bench")
elif op == "rewrite":
    from mecha.core.store.files import write_atomic
    t = time.perf_counter()
    path = Path(root, "reflections.jsonl")
    write_atomic(path, path.read_bytes())
    n = 0
took = time.perf_counter() - t
# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec from the parent.
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"s": took, "n": n, "maxrss_kib": hwm}))
"""


def reflections_file(path: Path, n: int = REFLECTIONS, seed: int = 100) -> list[str]:
    """`n` reflections over a few domains, a third clean, a tenth already
    processed; returns the ids of unprocessed `behavior` ones to mark."""
    rng = random.Random(seed)
    enc = msgspec.json.Encoder()
    lines = []
    candidates = []
    for i in range(n):
        domain = DOMAINS[rng.randrange(len(DOMAINS))]
        processed = rng.random() < 0.1
        rid = f"20261101T{i // 3600 % 24:02d}{i // 60 % 60:02d}{i % 60:02d}-{i:08x}"
        record = {
            "id": rid,
            "domain": domain,
            "session_id": f"session-{i // 7}",
            "trigger": rng.choice(("steer", "denial", "followup", "edit")),
            "context": "edit_file {\"path\": \"src/module.py\"} " + "x" * rng.randint(40, 300),
            "intervention": "Only touch the file I named, and ask before renaming anything public.",
            "reflexion_text": "When the person names one file, change only that file; ask before widening scope.",
            "error_type": "overreach",
            "confidence": 0.7,
            "is_processed": processed,
            "leap_run_id": "run-old" if processed else None,
            "created_at": "2026-11-01T08:00:00.000000Z",
            "origin": rng.choice(("clean", "untrusted", "derived")),
            "evidence": "full",
        }
        lines.append(enc.encode(record))
        if domain == "behavior" and not processed:
            candidates.append(rid)
    path.write_bytes(b"\n".join(lines) + b"\n")
    # Spread over the file, as a batch of a pass's picks would be.
    step = max(1, len(candidates) // MARK)
    return candidates[::step][:MARK]


def _child(root: Path, op: str, arg: str, env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run([python(), "-c", _CHILD, str(root), op, arg], capture_output=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{op}: {out.stderr.decode()[-2000:]}")
    return json.loads(out.stdout)


def run(rounds: int) -> list[Figure]:
    env = child_env()
    results: dict[str, list[dict[str, float]]] = {"read": [], "pool": [], "rewrite": [], "mark": []}
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp:
        master = Path(tmp) / "reflections.jsonl"
        ids = reflections_file(master)
        ids_file = Path(tmp) / "ids.txt"
        ids_file.write_text("\n".join(ids))
        size_mb = master.stat().st_size / 1e6
        root = Path(tmp) / "store"
        root.mkdir()

        def fresh() -> None:
            shutil.copyfile(master, root / "reflections.jsonl")

        def step(op: str, arg: str) -> float:
            if op in ("mark", "rewrite"):
                fresh()
            got = _child(root, op, arg, env)
            if op == "mark" and got["n"] != len(ids):
                raise RuntimeError(f"marked {got['n']} of {len(ids)}")
            results[op].append(got)
            return got["s"]

        fresh()
        step("pool", "behavior")  # warm the page cache
        interleaved(
            rounds,
            {
                "read": lambda: step("read", "-"),
                "pool": lambda: step("pool", "behavior"),
                "rewrite": lambda: step("rewrite", "-"),
                "mark": lambda: step("mark", str(ids_file)),
            },
        )
    results["pool"] = results["pool"][1:]

    def med(op: str, key: str) -> float:
        return median(r[key] for r in results[op])

    pool_n = int(results["pool"][0]["n"])
    return [
        Figure(
            key="pool_100k",
            title=f"100k reflections ({size_mb:.0f} MB): list a domain's learnable unprocessed ({pool_n} found)",
            subject=med("pool", "s") * 1e3,
            baseline=med("read", "s") * 1e3,
            unit="ms",
            subject_label="learnable_pool",
            baseline_label="read + split lines",
            ratio=med("pool", "s") / med("read", "s"),
            goal="≤ 1 s",
            met=med("pool", "s") <= 1.0,
            notes=[f"peak RSS {med('pool', 'maxrss_kib') / 1024:.0f} MiB (baseline child {med('read', 'maxrss_kib') / 1024:.0f} MiB)"],
            extra={
                "rounds": rounds,
                "file_mb": size_mb,
                "found": pool_n,
                "peak_rss_mib": med("pool", "maxrss_kib") / 1024,
                "baseline_peak_rss_mib": med("read", "maxrss_kib") / 1024,
            },
        ),
        Figure(
            key="mark_1k",
            title="100k reflections: mark 1k processed",
            subject=med("mark", "s") * 1e3,
            baseline=med("rewrite", "s") * 1e3,
            unit="ms",
            subject_label="mark_reflexions_processed",
            baseline_label="read + atomic rewrite",
            ratio=med("mark", "s") / med("rewrite", "s"),
            goal="≤ 1 s",
            met=med("mark", "s") <= 1.0,
            notes=[f"peak RSS {med('mark', 'maxrss_kib') / 1024:.0f} MiB (baseline child {med('rewrite', 'maxrss_kib') / 1024:.0f} MiB)"],
            extra={
                "rounds": rounds,
                "marked": len(ids),
                "peak_rss_mib": med("mark", "maxrss_kib") / 1024,
                "baseline_peak_rss_mib": med("rewrite", "maxrss_kib") / 1024,
            },
        ),
    ]
