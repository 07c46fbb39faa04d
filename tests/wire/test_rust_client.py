"""The Rust client in protocol/rust passes its own tests against a real
sidecar.

`cargo test` runs the crate's tests (tests/real_sidecar.rs): a normal run,
an option the server ignored, and every way a sidecar can fail a run —
missing, refusing to start, killed mid-request, stopped — each of which the
run survives with learning off and a reason. The build is offline, from
Debian's packaged serde crates (`python -m tests.realparts rust`), into a
target folder in the real-parts cache, so a rerun compiles nothing. A
compiler and a spawned sidecar make this a real-part test, so it lives here
rather than beside the crate's unit checks in `tests/protocol`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.realparts import manifest
from tests.realparts.rust import target_dir

CRATE = Path(__file__).resolve().parents[2] / "protocol" / "rust"


def test_cargo_test_passes_against_the_real_sidecar(tmp_path: Path) -> None:
    part = manifest("rust")
    # The person's own environment (rustup finds its toolchain through HOME),
    # minus any MECHA_* setting that would point the sidecar elsewhere.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    # This checkout's own build folder (the manifest names the one of the
    # checkout that installed the part).
    env.update(CARGO_TARGET_DIR=str(target_dir()), MECHA_TEST_PYTHON=sys.executable, MECHA_TEST_TMP=str(tmp_path))
    done = subprocess.run(
        [part["cargo"], "test", "--release", "--offline", "--", "--test-threads=2"],
        cwd=CRATE, capture_output=True, text=True, timeout=900, env=env,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    passed = sum(int(n) for n in re.findall(r"test result: ok\. (\d+) passed", done.stdout))
    assert passed >= 10, done.stdout  # the client's unit tests and the real-sidecar tests
    assert "0 failed" in done.stdout
