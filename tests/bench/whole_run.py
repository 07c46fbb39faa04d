"""Figure 17: a whole run, as a harness written in Rust has it.

`protocol/rust`'s `mecha-run` is the harness's side of one agent run without
the model: spawn the sidecar, `initialize`, the rules block, then the run's
first model call (a pause), the live affect and the interventions, each
asked a second time, `shutdown` and `exit`. It is timed from inside the
client, answer by answer, in a regular install (`cold.RegularInstall`)
against a store of 3 domains × 15 rules whose block cache is present.

Two pacings, interleaved with the interpreter alone (`python -c pass`):

- **paced** like a real run: the first model call takes 300 ms, the least a
  model takes. The first stage answers `initialize` and the block, and,
  once the input is quiet, starts the full server, which loads what the
  run asks next; the liveAffect and interventions after the pause should
  then be answered at the floor — the same request asked again in the same
  run, from a server that is warm.
- **back to back**, as a test or a benchmark sends them: the first stage
  hands over at the liveAffect, which then waits for the full server.

A run's CPU (user + system, the client and the sidecar it waited for) is
read from `wait4`, against the interpreter's.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.realparts.rust import CRATE, find_cargo, target_dir

from .cold import RegularInstall, _harness_cold_path, make_store
from .common import Figure, child_env, interleaved, median

#: The first model call, at its shortest.
PACE_MS = 300
#: "At the floor": within this of the warm answer.
FLOOR_SLACK_MS = 2.0


def _binary() -> Path:
    cargo = find_cargo()
    if cargo is None:
        raise SystemExit("figure 17 needs cargo: install the real part with `python -m tests.realparts rust`")
    env = {**os.environ, "CARGO_TARGET_DIR": str(target_dir())}
    subprocess.run([cargo, "build", "--release", "--offline", "--bin", "mecha-run"], cwd=CRATE, check=True, env=env,
                   capture_output=True)
    return target_dir() / "release" / "mecha-run"


def _spawned(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """Wall time, CPU time (the process and every child it waited for) and
    stdout of one process."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, out


class _Runs:
    def __init__(self) -> None:
        self.answers: dict[str, list[dict[str, Any]]] = {"paced": [], "back": []}
        self.cpu: dict[str, list[float]] = {"paced": [], "back": [], "pass": []}

    def run(self, name: str, argv: list[str], env: dict[str, str]) -> float:
        wall, cpu, out = _spawned(argv, env)
        self.cpu[name].append(cpu)
        if name == "pass":
            return wall
        answer = json.loads(out)
        if answer["why_off"] is not None or answer["rule_ids"] != 30 or answer["interventions"] != 1:
            raise RuntimeError(f"the run did not go as a run does: {answer}")
        self.answers[name].append(answer)
        return float(answer["total_ms"]) / 1e3


def _m(runs: list[dict[str, Any]], key: str) -> float:
    return median(r[key] for r in runs)


def run(rounds: int) -> list[Figure]:
    env = child_env()
    binary = str(_binary())
    runs = _Runs()
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp, contextlib.chdir(tmp):
        print("  building a regular install (venv + pip install of the checkout) …", file=sys.stderr, flush=True)
        install = RegularInstall(Path(tmp))
        root = make_store(Path(tmp) / "store")
        script = str(install.script)
        # The block cache the runs find, as the previous run left it.
        _harness_cold_path([script], root, env, hit=False)

        def harness(pace: int) -> list[str]:
            return [binary, "--pace-ms", str(pace), "--learning-dir", str(root), script]

        for pace in (PACE_MS, 0):  # one of each first: bytecode, page cache
            _spawned(harness(pace), env)
        walls = interleaved(
            rounds,
            {
                "pass": lambda: runs.run("pass", [str(install.python), "-c", "pass"], env),
                "paced": lambda: runs.run("paced", harness(PACE_MS), env),
                "back": lambda: runs.run("back", harness(0), env),
            },
        )
    paced, back = runs.answers["paced"], runs.answers["back"]
    cpu = {k: median(v) * 1e3 for k, v in runs.cpu.items()}
    pass_ms = median(walls["pass"]) * 1e3
    extra_common = {"rounds": rounds, "pace_ms": PACE_MS, "client": "protocol/rust mecha-run (release build)"}
    figures: list[Figure] = []
    for key, what in (("live_affect", "mecha/liveAffect"), ("interventions", "mecha/extractInterventions")):
        subject, floor = _m(paced, f"{key}_ms"), _m(paced, f"{key}_again_ms")
        unpaced = _m(back, f"{key}_ms")
        figures.append(
            Figure(
                key=f"run_paced_{key}",
                title=f"a run paced like a real one (first model call {PACE_MS} ms after the rules block): "
                f"its first {what}, from the Rust client",
                subject=subject,
                baseline=floor,
                unit="ms",
                subject_label="first answer",
                baseline_label="the same request again, same run (warm)",
                ratio=subject / floor,
                goal=f"≤ the warm answer + {FLOOR_SLACK_MS:g} ms",
                met=subject <= floor + FLOOR_SLACK_MS,
                notes=[f"sent back to back instead: {unpaced:.1f} ms"
                       + (" (the full server starts at this request)" if key == "live_affect" else "")],
                extra={**extra_common, "back_to_back_ms": unpaced, "back_to_back_floor_ms": _m(back, f"{key}_again_ms")},
            )
        )
    init_ms, block_ms = _m(paced + back, "initialize_ms"), _m(paced + back, "rules_block_ms")
    for name, label in (("paced", f"paced ({PACE_MS} ms model call, not counted)"), ("back", "back to back")):
        rows = runs.answers[name]
        total = _m(rows, "total_ms")
        figures.append(
            Figure(
                key=f"run_{name}_cpu",
                title=f"a whole run from the Rust client, {label}: spawn, initialize, rules block (3×15 rules, "
                "cache present), liveAffect, interventions (each twice), shutdown, exit — CPU, client and sidecar",
                subject=cpu[name],
                baseline=cpu["pass"],
                unit="ms",
                subject_label="CPU of the run",
                baseline_label="CPU of python -c pass, same venv",
                ratio=cpu[name] / cpu["pass"],
                goal="reported",
                met=None,
                notes=[
                    f"wall, pauses excluded: {total:.0f} ms; initialize (spawn included) {init_ms:.1f} ms, "
                    f"rules block {block_ms:.2f} ms, shutdown {_m(rows, 'shutdown_ms'):.1f} ms; "
                    f"python -c pass: {pass_ms:.0f} ms",
                ],
                extra={**extra_common, "wall_ms": total, "pass_wall_ms": pass_ms, "initialize_ms": init_ms,
                       "rules_block_ms": block_ms},
            )
        )
    return figures
