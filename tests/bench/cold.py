"""Figures 1, 2 and 8: the harness's cold path, and what it costs in memory.

The cold path is exactly what a harness does before its run's first model
call: spawn `mecha-sidecar`, `initialize`, `mecha/rulesPromptBlock` on a store
of 3 domains × 15 rules, `shutdown`, `exit`, and wait for the process to end.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from mecha.sidecar.client import SidecarClient

from .common import (
    Figure,
    child_env,
    console_script,
    initialize_params,
    interleaved,
    make_rules_store,
    median,
    python,
    vm_hwm_kib,
)

PYGLS_IMPORT = "import pygls.lsp.server"
#: What any msgspec JSON-RPC endpoint that reads TOML rules must import: the
#: floor under the cold path, measured alongside it.
FLOOR_IMPORT = "import msgspec, msgspec.json, tomllib, fcntl, threading, queue, logging"


def _harness_cold_path(argv: list[str], root: Path, env: dict[str, str]) -> float:
    t = time.perf_counter()
    client = SidecarClient(argv, env=env, timeout=60)
    try:
        client.request("initialize", initialize_params(root))
        client.notify("initialized", {})
        result = client.request("mecha/rulesPromptBlock", {"domain": "coding"})
        code = client.close()
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
    elapsed = time.perf_counter() - t
    if code != 0 or not result or len(result["rule_ids"]) != 45:
        raise RuntimeError(f"cold path went wrong: exit {code}, result {result!r:.200}")
    return elapsed


def _bare(argv: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    proc.communicate()
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}")
    return elapsed


def _harness_peak_rss(argv: list[str], root: Path, env: dict[str, str]) -> int:
    """VmHWM of the sidecar once the whole exchange is served, read just
    before `exit`."""
    client = SidecarClient(argv, env=env, timeout=60)
    try:
        client.request("initialize", initialize_params(root))
        client.notify("initialized", {})
        client.request("mecha/rulesPromptBlock", {"domain": "coding"})
        client.request("shutdown")
        peak = vm_hwm_kib(client.proc.pid)
        client.notify("exit")
        client.proc.wait(timeout=30)
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
        client.close()
    return peak


def _bare_peak_rss(code: str, env: dict[str, str]) -> int:
    """VmHWM of an interpreter that ran `code` and then waits on stdin."""
    proc = subprocess.Popen(
        [python(), "-c", code + "\nimport sys; sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    peak = vm_hwm_kib(proc.pid)
    proc.communicate()
    return peak


def run(rounds: int) -> list[Figure]:
    env = child_env()
    script = [console_script()]
    module = [python(), "-m", "mecha.sidecar"]
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp:
        root = make_rules_store(Path(tmp) / "store")
        # One of each first: bytecode, page cache, the first-run effects.
        _bare([python(), "-c", PYGLS_IMPORT], env)
        _harness_cold_path(script, root, env)
        _harness_cold_path(module, root, env)
        times = interleaved(
            rounds,
            {
                "pass": lambda: _bare([python(), "-c", "pass"], env),
                "script": lambda: _harness_cold_path(script, root, env),
                "pygls": lambda: _bare([python(), "-c", PYGLS_IMPORT], env),
                "module": lambda: _harness_cold_path(module, root, env),
                "floor": lambda: _bare([python(), "-c", FLOOR_IMPORT], env),
            },
        )
        mem_rounds = max(3, rounds // 4)
        mem = interleaved(
            mem_rounds,
            {
                "bare": lambda: _bare_peak_rss("pass", env),
                "script": lambda: _harness_peak_rss(script, root, env),
                "pygls": lambda: _bare_peak_rss(PYGLS_IMPORT, env),
            },
        )
    t_pass, t_script, t_pygls, t_module, t_floor = (
        median(times[k]) for k in ("pass", "script", "pygls", "module", "floor")
    )
    extra = {
        "rounds": rounds,
        "module_s": t_module,
        "module_ratio_vs_pass": t_module / t_pass,
        "script_min_s": min(times["script"]),
        "pass_min_s": min(times["pass"]),
        "floor_s": t_floor,
        "floor_ratio_vs_pass": t_floor / t_pass,
        "floor_ratio_vs_pygls": t_floor / t_pygls,
        "pygls_s": t_pygls,
    }
    r1 = t_script / t_pass
    r2 = t_script / t_pygls
    m_bare, m_script, m_pygls = (median(mem[k]) for k in ("bare", "script", "pygls"))
    return [
        Figure(
            key="cold_vs_python",
            title="cold path: spawn → initialize → rulesPromptBlock (3×15 rules) → shutdown → exit",
            subject=t_script * 1e3,
            baseline=t_pass * 1e3,
            unit="ms",
            subject_label="mecha-sidecar",
            baseline_label="python -c pass",
            ratio=r1,
            goal="≤ 5×",
            met=r1 <= 5.0,
            notes=[
                f"python -m mecha.sidecar: {t_module * 1e3:.0f} ms ({t_module / t_pass:.2f}×)",
                f"floor, python -c \"{FLOOR_IMPORT}\": {t_floor * 1e3:.0f} ms ({t_floor / t_pass:.2f}×)",
            ],
            extra=extra,
        ),
        Figure(
            key="cold_vs_pygls",
            title="the same cold path against importing pygls",
            subject=t_script * 1e3,
            baseline=t_pygls * 1e3,
            unit="ms",
            subject_label="mecha-sidecar",
            baseline_label='python -c "import pygls.lsp.server"',
            ratio=r2,
            goal="≤ 1/6 (0.167×)",
            met=r2 <= 1 / 6,
            notes=[f"floor (as in 1): {t_floor / t_pygls:.3f}× pygls"],
            extra={"rounds": rounds, "floor_ratio_vs_pygls": t_floor / t_pygls},
        ),
        Figure(
            key="cold_peak_rss",
            title="peak RSS of the harness endpoint through the cold path",
            subject=m_script / 1024,
            baseline=m_bare / 1024,
            unit="MiB",
            subject_label="mecha-sidecar (VmHWM before exit)",
            baseline_label="bare python",
            ratio=m_script / m_bare,
            goal="reported",
            met=None,
            notes=[f"python + pygls.lsp.server: {m_pygls / 1024:.1f} MiB"],
            extra={"rounds": mem_rounds, "pygls_mib": m_pygls / 1024},
        ),
    ]
