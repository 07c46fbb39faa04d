"""Figures 1, 2 and 8: the harness's cold path, and what it costs in memory.

The cold path is exactly what a harness does before its run's first model
call: spawn `mecha-sidecar`, `initialize`, `mecha/rulesPromptBlock` on a store
of 3 domains × 15 rules, `shutdown`, `exit`, and wait for the process to end.

It is measured as a user has it: in a regular install that this module makes
itself — a fresh venv in a temp dir and `pip install <checkout>`, not `-e`
(an editable install's import finder slows even `python -c pass` severalfold,
so a ratio against that interpreter flatters everything) — against a bare
`python -c pass` of that same venv. Twice: with the block cache the previous
run left (the first stage answers: the usual case), and without it (the full
server answers, then writes the cache: the first run after a rules change).
A run counts only if it did what it is reported as: a cache hit must leave
the cache file as it was, a miss must write a new one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mecha.core.store import blockcache
from mecha.core.store.layout import is_racy, rules_fingerprint
from mecha.core.store.learning_store import LearningStore
from mecha.sidecar.client import SidecarClient

from .common import (
    RULES_DOMAINS,
    Figure,
    child_env,
    initialize_params,
    interleaved,
    median,
    rules_toml,
    vm_hwm_kib,
)

CHECKOUT = Path(__file__).resolve().parent.parent.parent
#: What the wheel is not built from: the checkout's own venv, build output,
#: the editors and the tests.
_NOT_SHIPPED = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis",
                "editors", "tests", "node_modules")

#: Bounds every wait on a sidecar in these figures.
CLIENT_TIMEOUT = 60.0

PYGLS_IMPORT = "import pygls.lsp.server"
#: What any msgspec JSON-RPC endpoint that reads TOML rules must import: the
#: floor under the full server, measured alongside it.
FLOOR_IMPORT = "import msgspec, msgspec.json, tomllib, fcntl, threading, queue, logging"
#: The floor under the first stage: what pip's console-script launcher
#: imports (`re`) and what reading JSON frames from a pipe needs.
STAGE_FLOOR_IMPORT = "import re, _json, select"


class RegularInstall:
    """A venv in `home` with the checkout `pip install`ed into it."""

    def __init__(self, home: Path):
        src = home / "src"
        shutil.copytree(CHECKOUT, src, ignore=shutil.ignore_patterns(*_NOT_SHIPPED))
        self.venv = home / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
        done = subprocess.run(
            [str(self.python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(src)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"pip install of the checkout failed:\n{done.stderr[-3000:]}")

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def script(self) -> Path:
        return self.venv / "bin" / "mecha-sidecar"


def make_store(root: Path) -> Path:
    """A store as a person has one (git, `.gitignore`), with 15 active learned
    rules in each of 3 domains, old enough for its fingerprint to be kept."""
    LearningStore.open(root)
    for d in RULES_DOMAINS:
        (root / "rules" / f"{d}.learned.toml").write_text(rules_toml(d, 15))
    while is_racy(rules_fingerprint(root), time.time_ns()):
        time.sleep(0.05)
    return root


def _cache_inode(root: Path) -> int | None:
    try:
        return os.stat(blockcache.cache_path(root)).st_ino
    except FileNotFoundError:
        return None


def _harness_cold_path(argv: list[str], root: Path, env: dict[str, str], *, hit: bool) -> float:
    before = _cache_inode(root)
    if not hit and before is not None:
        os.unlink(blockcache.cache_path(root))
    t = time.perf_counter()
    client = SidecarClient(argv, env=env, timeout=CLIENT_TIMEOUT)
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
    after = _cache_inode(root)
    if hit and (before is None or after != before):
        raise RuntimeError("a run measured as a cache hit did not find the cache (it wrote a new one)")
    if not hit and after is None:
        raise RuntimeError("a run measured as a cache miss did not write the block cache")
    return elapsed


def _bare(argv: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    proc.communicate()
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}")
    return elapsed


def _harness_peak_rss(argv: list[str], root: Path, env: dict[str, str], *, hit: bool) -> int:
    """VmHWM of the sidecar once the whole exchange is served, read just
    before `exit`."""
    if not hit:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(blockcache.cache_path(root))
    client = SidecarClient(argv, env=env, timeout=CLIENT_TIMEOUT)
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


def _bare_peak_rss(python: str, code: str, env: dict[str, str]) -> int:
    """VmHWM of an interpreter that ran `code` and then waits on stdin."""
    proc = subprocess.Popen(
        [python, "-c", code + "\nimport sys; sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.read()"],
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


def _first_stage_modules(install: RegularInstall, root: Path, env: dict[str, str]) -> tuple[int, int]:
    """How many modules a cache-hit run and a bare interpreter have loaded."""
    record = (
        "import os, sys\nend = os._exit\n"
        "def counted(code):\n    sys.stderr.write('modules=%d\\n' % len(sys.modules)); sys.stderr.flush(); end(code)\n"
        "os._exit = counted\nfrom mecha.sidecar.cli import main\nraise SystemExit(main([]))\n"
    )
    import msgspec

    from mecha.protocol.framing import encode_frame

    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params(root)},
        {"jsonrpc": "2.0", "id": 2, "method": "mecha/rulesPromptBlock", "params": {"domain": "coding"}},
        {"jsonrpc": "2.0", "id": 3, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    stdin = b"".join(encode_frame(msgspec.json.encode(m)) for m in messages)
    hit = subprocess.run([str(install.python), "-c", record], input=stdin, capture_output=True, env=env)
    bare = subprocess.run([str(install.python), "-c", "import sys; print(len(sys.modules))"], capture_output=True, env=env)
    served = int(hit.stderr.decode().rsplit("modules=", 1)[1].split()[0])
    return served, int(bare.stdout)


def run(rounds: int) -> list[Figure]:
    env = child_env()
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp, contextlib.chdir(tmp):
        print("  building a regular install (venv + pip install of the checkout) …", file=sys.stderr, flush=True)
        install = RegularInstall(Path(tmp))
        python = str(install.python)
        root = make_store(Path(tmp) / "store")
        script = [str(install.script)]
        module = [python, "-m", "mecha.sidecar"]
        # One of each first: bytecode, page cache, the first-run effects,
        # and the miss that writes the cache every hit then reads.
        _bare([python, "-c", PYGLS_IMPORT], env)
        _harness_cold_path(script, root, env, hit=False)
        _harness_cold_path(script, root, env, hit=True)
        _harness_cold_path(module, root, env, hit=True)
        modules_served, modules_bare = _first_stage_modules(install, root, env)
        times = interleaved(
            rounds,
            {
                "pass": lambda: _bare([python, "-c", "pass"], env),
                "hit": lambda: _harness_cold_path(script, root, env, hit=True),
                "miss": lambda: _harness_cold_path(script, root, env, hit=False),
                "pygls": lambda: _bare([python, "-c", PYGLS_IMPORT], env),
                "module": lambda: _harness_cold_path(module, root, env, hit=True),
                "stage_floor": lambda: _bare([python, "-c", STAGE_FLOOR_IMPORT], env),
                "floor": lambda: _bare([python, "-c", FLOOR_IMPORT], env),
            },
        )
        mem_rounds = max(3, rounds // 4)
        mem = interleaved(
            mem_rounds,
            {
                "bare": lambda: _bare_peak_rss(python, "pass", env),
                "hit": lambda: _harness_peak_rss(script, root, env, hit=True),
                "miss": lambda: _harness_peak_rss(script, root, env, hit=False),
                "pygls": lambda: _bare_peak_rss(python, PYGLS_IMPORT, env),
            },
        )
    t = {k: median(v) for k, v in times.items()}
    t_pass = t["pass"]
    extra = {
        "rounds": rounds,
        "install": "pip install <checkout> into a fresh venv (not editable)",
        "miss_s": t["miss"],
        "miss_ratio_vs_pass": t["miss"] / t_pass,
        "module_s": t["module"],
        "module_ratio_vs_pass": t["module"] / t_pass,
        "hit_min_s": min(times["hit"]),
        "pass_min_s": min(times["pass"]),
        "stage_floor_s": t["stage_floor"],
        "stage_floor_ratio_vs_pass": t["stage_floor"] / t_pass,
        "floor_s": t["floor"],
        "floor_ratio_vs_pass": t["floor"] / t_pass,
        "pygls_s": t["pygls"],
        "modules_first_stage": modules_served,
        "modules_bare_python": modules_bare,
    }
    r_hit = t["hit"] / t_pass
    r_miss = t["miss"] / t_pass
    r_pygls = t["hit"] / t["pygls"]
    m = {k: median(v) for k, v in mem.items()}
    return [
        Figure(
            key="cold_vs_python",
            title="cold path: spawn → initialize → rulesPromptBlock (3×15 rules) → shutdown → exit, "
            "regular install, block cache present (the first stage answers)",
            subject=t["hit"] * 1e3,
            baseline=t_pass * 1e3,
            unit="ms",
            subject_label="mecha-sidecar",
            baseline_label="python -c pass, same venv",
            ratio=r_hit,
            goal="≤ 2×",
            met=r_hit <= 2.0,
            notes=[
                f"python -m mecha.sidecar: {t['module'] * 1e3:.0f} ms ({t['module'] / t_pass:.2f}×)",
                f"floor, python -c \"{STAGE_FLOOR_IMPORT}\": {t['stage_floor'] * 1e3:.0f} ms "
                f"({t['stage_floor'] / t_pass:.2f}×)",
                f"{modules_served} modules loaded (bare python: {modules_bare}), msgspec not among them",
            ],
            extra=extra,
        ),
        Figure(
            key="cold_miss_vs_python",
            title="the same cold path without the block cache (the full server answers, then writes it): "
            "the first run after a rules change",
            subject=t["miss"] * 1e3,
            baseline=t_pass * 1e3,
            unit="ms",
            subject_label="mecha-sidecar",
            baseline_label="python -c pass, same venv",
            ratio=r_miss,
            goal="reported",
            met=None,
            notes=[f"floor, python -c \"{FLOOR_IMPORT}\": {t['floor'] * 1e3:.0f} ms ({t['floor'] / t_pass:.2f}×)"],
            extra={"rounds": rounds},
        ),
        Figure(
            key="cold_vs_pygls",
            title="the cold path (cache present) against importing pygls",
            subject=t["hit"] * 1e3,
            baseline=t["pygls"] * 1e3,
            unit="ms",
            subject_label="mecha-sidecar",
            baseline_label='python -c "import pygls.lsp.server"',
            ratio=r_pygls,
            goal="≤ 1/6 (0.167×)",
            met=r_pygls <= 1 / 6,
            notes=[f"without the cache: {t['miss'] / t['pygls']:.3f}× pygls"],
            extra={"rounds": rounds, "miss_ratio_vs_pygls": t["miss"] / t["pygls"]},
        ),
        Figure(
            key="cold_peak_rss",
            title="peak RSS of the harness endpoint through the cold path",
            subject=m["hit"] / 1024,
            baseline=m["bare"] / 1024,
            unit="MiB",
            subject_label="mecha-sidecar, cache present (VmHWM before exit)",
            baseline_label="bare python",
            ratio=m["hit"] / m["bare"],
            goal="reported",
            met=None,
            notes=[
                f"without the cache: {m['miss'] / 1024:.1f} MiB",
                f"python + pygls.lsp.server: {m['pygls'] / 1024:.1f} MiB",
            ],
            extra={"rounds": mem_rounds, "miss_mib": m["miss"] / 1024, "pygls_mib": m["pygls"] / 1024},
        ),
    ]
