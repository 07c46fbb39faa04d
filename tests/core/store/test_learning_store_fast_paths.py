"""The store's fast paths read less of each line than the plain ones; they
must answer exactly what the plain ones do, corrupt and odd lines included."""

from __future__ import annotations

import random

import msgspec
import pytest

from mecha.core.learning.learn import learnable_pool
from mecha.core.store.learning_store import LearningStore

DOMAINS = ("behavior", "writing", "triage")


def _line(rng: random.Random, i: int) -> bytes:
    record: dict[str, object] = {
        "id": f"r{i:05d}",
        "domain": rng.choice(DOMAINS),
        "session_id": f"s{i // 3}",
        "trigger": "steer",
        "context": "c",
        "intervention": "i",
        "reflexion_text": "t",
        "created_at": "2026-11-01T08:00:00.000000Z",
    }
    if rng.random() < 0.8:
        record["origin"] = rng.choice(("clean", "clean", "untrusted", "derived"))
    if rng.random() < 0.3:
        record["is_processed"] = rng.random() < 0.5
    damage = rng.random()
    if damage < 0.04:
        del record["created_at"]  # passes a filter on domain/origin, fails whole
    elif damage < 0.06:
        record["origin"] = "bogus"
    elif damage < 0.08:
        record["domain"] = 7
    elif damage < 0.10:
        return b'{"id": "torn", "domain": "behavior", "origin": "cle'
    elif damage < 0.11:
        return b"  \t "
    elif damage < 0.12:
        return b"[1, 2]"
    return msgspec.json.encode(record)


@pytest.mark.parametrize("seed", range(8))
def test_the_learnable_pool_is_the_plain_filter_over_every_reflection(tmp_path, seed):
    rng = random.Random(seed)
    store = LearningStore.open(tmp_path)
    (tmp_path / "reflections.jsonl").write_bytes(b"\n".join(_line(rng, i) for i in range(300)) + b"\n")
    for domain in (*DOMAINS, "coding"):
        plain = [r for r in store.reflexions() if r.domain == domain and not r.is_processed and r.learnable()]
        assert learnable_pool(store, domain) == plain


@pytest.mark.parametrize("seed", range(8))
def test_marking_touches_exactly_the_valid_unprocessed_lines_it_names(tmp_path, seed):
    rng = random.Random(seed)
    store = LearningStore.open(tmp_path)
    lines = [_line(rng, i) for i in range(300)]
    path = tmp_path / "reflections.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    valid = {r.id: r for r in store.reflexions()}
    named = {f"r{i:05d}" for i in rng.sample(range(300), 60)} | {"torn"}
    expected = {rid for rid in named if rid in valid and not valid[rid].is_processed}

    assert store.mark_reflexions_processed(named, "run-1") == len(expected)

    after = {r.id: r for r in store.reflexions()}
    assert set(after) == set(valid)
    for rid, r in after.items():
        if rid in expected:
            assert r.is_processed and r.leap_run_id == "run-1"
        else:
            assert r == valid[rid]
    kept = [line for line in lines if line.strip()]
    rewritten = path.read_bytes().split(b"\n")[:-1]
    assert len(rewritten) == len(kept)
    for old, new in zip(kept, rewritten):
        if old != new:
            assert msgspec.json.decode(new)["id"] in expected
