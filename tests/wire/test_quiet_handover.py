"""After the rules block, quiet input means the run's model is thinking: the
first stage starts the full server then, and the full server loads what the
run's next requests need, so they are answered warm.

Before, the hand-over waited for the run's first `liveAffect`, which then
waited on the full server's imports (132 ms on a busy machine) however long
the model had taken. Timing is the benchmark's (figure 17); these pin the
behaviour with the process's own record of what it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from mecha.sidecar.first_stage import IDLE_HANDOVER_S

from .client import clean_env
from .test_first_stage import PROBE, cached, init, msg

_HEADER = b"Content-Length: "


def _read_replies(proc: subprocess.Popen[bytes], count: int) -> list[dict[str, object]]:
    assert proc.stdout is not None
    replies = []
    for _ in range(count):
        header = proc.stdout.readline()
        assert header.startswith(_HEADER), header
        proc.stdout.readline()
        replies.append(json.loads(proc.stdout.read(int(header[len(_HEADER):]))))
    return replies


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "learning"
    (root / "rules").mkdir(parents=True)
    (root / "rules" / "behavior.user.toml").write_text('[[rules]]\ntext = "Ask before pushing"\n')
    return root


def _paced(tmp_path: Path, root: Path, pause: float | None) -> tuple[set[str], list[dict[str, object]], int]:
    """The cold path with `pause` seconds between the block's answer and
    `shutdown`; `None`: everything in one write, before any answer."""
    record = tmp_path / "modules.txt"
    record.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", PROBE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=clean_env(tmp_path, {"FIRST_STAGE_PROBE_OUT": str(record)}), cwd=tmp_path,
    )
    try:
        assert proc.stdin is not None
        start = init(root) + msg("initialized", {}) + msg("mecha/rulesPromptBlock", {}, 2)
        end = msg("shutdown", id=3) + msg("exit")
        if pause is None:
            proc.stdin.write(start + end)
            proc.stdin.close()
            replies = _read_replies(proc, 3)
        else:
            proc.stdin.write(start)
            proc.stdin.flush()
            replies = _read_replies(proc, 2)
            time.sleep(pause)  # the run's first model call
            proc.stdin.write(end)
            proc.stdin.close()
            replies += _read_replies(proc, 1)
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
    return set(record.read_text().split()), replies, code


def test_quiet_after_the_block_starts_the_full_server_and_loads_the_runs_next_requests(tmp_path: Path) -> None:
    root = _store(tmp_path)
    cached(tmp_path, root)
    modules, replies, code = _paced(tmp_path, root, pause=IDLE_HANDOVER_S * 6)
    assert [r["id"] for r in replies] == [1, 2, 3] and replies[2]["result"] is None and code == 0
    assert "mecha.sidecar.serve" in modules, "the full server was not started in the quiet"
    assert {"mecha.core.gate.assembler", "mecha.core.sessions.mining"} <= modules, "the run's next requests were not loaded"


def test_requests_sent_back_to_back_stay_with_the_first_stage(tmp_path: Path) -> None:
    # Pins: a hand-over for quiet that costs a run wanting only its block the full server's start.
    root = _store(tmp_path)
    cached(tmp_path, root)
    modules, replies, code = _paced(tmp_path, root, pause=None)
    assert [r["id"] for r in replies] == [1, 2, 3] and code == 0
    assert "msgspec" not in modules and "mecha.sidecar.serve" not in modules
