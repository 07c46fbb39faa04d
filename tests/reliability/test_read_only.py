"""A store that cannot be written — a read-only mount, a directory the
owner took write permission from — is a store condition with a name: every
method that writes answers `InvalidStore` naming the path it could not
write, never an internal error, and nothing is left half-done: no session
is marked mined, no inbox entry or temp file is left behind, and once the
store is writable again the same requests succeed.

The read-only window is real: as root (whom permissions do not stop) the
store is bind-mounted read-only over itself; otherwise write permission is
taken away from every directory and file in it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mecha.protocol import errors as codes
from tests.protocol.wire_examples import DRAFT, TIMELINE
from tests.reliability.fuzz import PENDING_ID, build_template, snapshot
from tests.wire.client import Sidecar, SpawnSidecar
from tests.wire.conftest import spawn_sidecar  # noqa: F401 - the fixture
from tests.wire.helpers import steered


@contextmanager
def read_only(root: Path) -> Iterator[None]:
    """`root` and everything in it unwritable until the block ends."""
    if os.geteuid() == 0:
        # Permission bits do not stop root; a read-only mount does.
        subprocess.run(["mount", "--bind", str(root), str(root)], check=True, capture_output=True)
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(root)], check=True, capture_output=True)
            yield
        finally:
            subprocess.run(["umount", str(root)], check=True, capture_output=True)
        return
    modes = {}
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        modes[path] = path.stat().st_mode
        path.chmod(modes[path] & ~0o222)
    try:
        yield
    finally:
        for path, mode in modes.items():
            path.chmod(mode)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("template") / "store"
    build_template(root)
    return root


@pytest.fixture
def store(tmp_path: Path, template: Path) -> Path:
    root = tmp_path / "learning"
    shutil.copytree(template, root, symlinks=True)
    # The inbox exists, as it does once a first session was handed over.
    (root / "inbox").mkdir(mode=0o700)
    (root / "inbox" / ".gitignore").write_text("*\n")
    return root


#: Every method that writes, with params that would make it write.
WRITERS: list[tuple[str, dict[str, Any]]] = [
    ("mecha/acceptProposal", {"id": PENDING_ID}),
    ("mecha/rejectProposal", {"id": PENDING_ID, "reason": "not now"}),
    ("mecha/sessionEnded", {"session_id": "ro-1", "messages": steered(), "taint_timeline": TIMELINE}),
    ("mecha/draftResolved", {"item": DRAFT}),
    ("mecha/learn", {"domain": "writing", "min": 1}),
    ("mecha/proposeRetirement", {"domain": "behavior", "rule_id": "r-1", "reason": "it regressed"}),
    (
        "mecha/recordValidation",
        {
            "reflexion_id": "refl-1", "trigger": "steer", "domain": "behavior", "rules_hash": "0000000000000000",
            "rule_ids": ["r-1"], "outcome": "improved", "model": "m", "created_at": "2026-01-01T00:00:00.000000Z",
        },
    ),
]


def _not_writable(root: Path, method: str, error: dict[str, Any]) -> None:
    assert error["code"] == codes.INVALID_STORE, (method, error)
    assert error["data"]["name"] == "InvalidStore", (method, error)
    named = Path(error["data"]["path"])
    assert named == root or root in named.parents, (method, error)
    assert str(named) in error["message"] and "not writable" in error["message"], (method, error)


def test_a_read_only_store_refuses_every_write_by_name_and_loses_nothing(
    spawn_sidecar: SpawnSidecar, store: Path  # noqa: F811
) -> None:
    # Pins: accept, reject and sessionEnded on a read-only store answering
    # -32603 "internal error: PermissionError", a traceback on stderr, and a
    # session left half-handed-over.
    sc: Sidecar = spawn_sidecar(learning_dir=store)
    assert sc.call("mecha/rulesPromptBlock", {})["block"]
    before = snapshot(store)
    with read_only(store):
        for method, params in WRITERS:
            _not_writable(store, method, sc.error(method, params))
        # Reading still works.
        assert sc.call("mecha/rulesPromptBlock", {})["block"]
        assert sc.call("mecha/proposals", {})["proposals"]
    assert snapshot(store) == before, "a refused write changed the store"
    assert not [p for p in store.rglob("*.tmp")]
    assert "Traceback" not in sc.stderr and "PermissionError" not in sc.stderr, sc.stderr[-2000:]
    assert "ro-1" not in (store / "mined.jsonl").read_text()
    assert sorted(p.name for p in (store / "inbox").iterdir()) == [".gitignore"]

    # Writable again: the same requests go through, the session once.
    ended = sc.call("mecha/sessionEnded", dict(WRITERS[2][1]))
    assert ended["job"] is not None and not ended["already_mined"]
    [entry] = [p for p in (store / "inbox").iterdir() if p.name != ".gitignore"]
    assert "ro-1" in entry.name
    assert sc.call("mecha/acceptProposal", {"id": PENDING_ID})["proposal"]["status"] == "accepted"


#: `sessionEnded` requests sent while `jobs/` flips; each writes a job record there.
FLIPPED_HANDOVERS = 60


def test_a_directory_flipping_read_only_mid_write_is_invalid_store_and_leaves_no_temp_behind(
    spawn_sidecar: SpawnSidecar, store: Path  # noqa: F811
) -> None:
    # Pins: with `jobs/` flipping read-only, 68 of 300 `sessionEnded` answered
    # -32603 and 87 temp files were left: the atomic writer's cleanup
    # `unlink` (refused too, by then) raised and hid the InvalidStore.
    # Runs anywhere: as root the directory is remounted read-only and back,
    # otherwise its write permission is flipped (`tests.reliability.flipper`).
    import time

    from tests.processes import wait_for_passes

    sc: Sidecar = spawn_sidecar(learning_dir=store)
    _handovers_while_flipping(sc, store, FLIPPED_HANDOVERS)

    # Writable again. What could not be removed while the directory was
    # read-only goes with the next write there: this process's own temps at
    # once, a dead pass's once they are old enough to be surely abandoned.
    wait_for_passes(store, timeout=60)
    an_hour_ago = time.time() - 3600
    for left in store.rglob("*.tmp"):
        os.utime(left, (an_hour_ago, an_hour_ago))
    sc.call("mecha/sessionEnded", {"session_id": "after-flip", "messages": steered(), "taint_timeline": TIMELINE})
    wait_for_passes(store, timeout=60)
    assert sorted(p.name for p in store.rglob("*.tmp")) == []


def _handovers_while_flipping(sc: Sidecar, store: Path, count: int) -> None:
    """`count` handovers, each writing a job record into `jobs/` while a
    flipper turns it read-only and back; every refusal a named
    `InvalidStore`."""
    import signal
    import sys

    jobs = store / "jobs"
    flipper = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("flipper.py")), str(jobs)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    try:
        assert flipper.stdout is not None and flipper.stdout.readline() == b"ready\n", flipper.stderr
        answers = [
            sc.response(sc.request("mecha/sessionEnded", {"session_id": f"flip-{n}", "messages": steered(), "taint_timeline": TIMELINE}))
            for n in range(count)
        ]
    finally:
        flipper.send_signal(signal.SIGTERM)
        code = flipper.wait(10)
        if os.path.ismount(jobs):  # the flipper died mid-flip: never leave a mount behind
            subprocess.run(["umount", str(jobs)], check=False)
        assert code == 0, flipper.stderr.read() if flipper.stderr else ""
    errors = [a["error"] for a in answers if "error" in a]
    assert all(e["code"] == codes.INVALID_STORE for e in errors), [e for e in errors if e["code"] != codes.INVALID_STORE][:3]
    for error in errors:
        assert "not writable" in error["message"] and str(store) in error["data"]["path"], error
    assert "Traceback" not in sc.stderr, sc.stderr[-2000:]


#: As many as the attack that left 26 temps behind.
RACED_WRITES = 300


def test_no_temp_file_outlives_a_write_the_read_only_flip_refused(
    spawn_sidecar: SpawnSidecar, store: Path  # noqa: F811
) -> None:
    # Pins: 300 writes racing `jobs/` turning read-only leaving 26 temp
    # files there, each made before the flip and unremovable after it;
    # swept only by a later write, and only once old enough.
    from tests.processes import wait_for_passes

    sc: Sidecar = spawn_sidecar(learning_dir=store)
    _handovers_while_flipping(sc, store, RACED_WRITES)
    wait_for_passes(store, timeout=120)
    assert sorted(p.name for p in store.rglob("*.tmp")) == [], "temps outlived the writes that made them"
