"""`mecha-sidecar model serve`: the bundled local model started by a person,
in the foreground, configured with the settings it prints — the real
llama.cpp server (xllamacpp) and SmolLM2-135M from the realparts cache."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.conftest import clean_env
from tests.realparts import manifest

START_S = 180.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _settings(printed: str) -> dict[str, str]:
    line = next(line for line in printed.splitlines() if line.strip().startswith("export "))
    return dict(pair.split("=", 1) for pair in line.split()[1:])


def test_a_person_starts_the_bundled_model_configures_it_as_printed_and_stops_it(tmp_path: Path):
    # Pins: a server only the demo could start, settings printed that do
    # not reach it, and a Ctrl-C that leaves the server behind.
    model = manifest("llama")["model"]
    port = _free_port()
    env = clean_env(tmp_path, MECHA_LOCAL_MODEL=model)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mecha.sidecar", "model", "serve", "--port", str(port), "--threads", "2"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        printed = ""
        deadline = time.monotonic() + START_S
        assert proc.stdout is not None
        while "Press Ctrl-C" not in printed:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, f"model serve exited: {printed}{proc.stderr.read() if proc.stderr else ''}"
            printed += line
            assert time.monotonic() < deadline, printed
        assert f"serving at http://127.0.0.1:{port}" in printed
        settings = _settings(printed)
        assert settings["MECHA_MODEL_BASE_URL"] == f"http://127.0.0.1:{port}"
        assert f'base_url = "http://127.0.0.1:{port}"' in printed
        assert re.search(r'api = "claude-code"', printed)

        doctor = subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(tmp_path / "store"), "doctor"],
            env={**env, **settings}, capture_output=True, text=True, timeout=300,
        )
        model_row = next(line for line in doctor.stdout.splitlines() if line.split()[1:2] == ["model"])
        assert model_row.startswith("ok ") and f"127.0.0.1:{port}" in model_row, doctor.stdout

        busy = subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "model", "serve", "--port", str(port)],
            env=env, capture_output=True, text=True, timeout=60,
        )
        assert busy.returncode == 1 and f"127.0.0.1:{port} is in use" in busy.stderr and "--port" in busy.stderr

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # Nothing of it is left listening (a connection in TIME_WAIT may be).
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
