"""Figure 11: the agents' hooks, as Claude Code runs them.

Measured as a user has it: a regular install (`cold.RegularInstall`: a fresh
venv and `pip install <checkout>`, not `-e`), the hooks put into a temp
HOME's `~/.claude/settings.json` by that install's own `hooks install
claude`, and each installed command run the way the agent runs it — `sh -c
COMMAND` with the hook's JSON on stdin, the project as the working directory
— timed from spawn to exit. The baseline is `sh -c '<venv python> -c pass'`,
the same shell around a bare interpreter of that venv.

- **session end**: a generated Claude Code session of 25 MB (read once
  before timing, as the previous session end would have), grown by one turn
  — an answer and the person's correction — before each run. The hook
  queues the session and returns; the hook pass it starts reads it. A run
  counts only if it did what it is reported as: once the hook pass is done
  (waited for, untimed), the hook log's line for it says it queued exactly
  that one new intervention. The reflect pass it starts (no model
  configured here, so it ends at once) is waited for between runs,
  untimed, so one run's passes do not load the next.
- **a storm**: `STORM` session-end hooks started at once, each for a
  session of its own (three corrections each), each hook's wall time from
  spawn to exit — against `STORM` bare interpreters started at once. A
  storm counts only if every correction of every session was queued once.
  `python -m tests.bench.hooks` runs the storm alone and prints it: the
  slowest and median hook against the slowest and median bare interpreter
  of the same run, and each one's CPU time.
- **session start**: with a proposal pending, so the run reads the proposals
  and prints its line (checked on every run); also through the
  `mecha-sidecar` console script, whose launcher imports `re` first (the
  installed command is `python -P -c HOOK_CODE`: `hooks.hook_program`).
"""

from __future__ import annotations

import contextlib
import json
import random
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mecha.core.agents.hooks import hook_command, hook_program
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus
from tests.processes import wait_for_hook_pass

from .claude_import import _session, _words
from .cold import RegularInstall
from .common import Figure, child_env, interleaved, median

SESSION_MB = 25
#: Hooks at once in the storm, as in the attack that once took each 17 s.
STORM = 50
#: The agent's session-end timeout is 10 s; a hook returns within this.
STORM_GOAL_MS = 1000.0
SID = "b3f1c2d4-0000-4000-8000-00000000ab25"
END_GOAL_MS = 300.0


def _settled(store: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [json.loads(p.read_text()).get("state") for p in (store / "jobs").glob("*.json")]
        if all(s != "running" for s in states):
            return
        time.sleep(0.05)
    raise RuntimeError("a reflect pass started by the hook did not finish")


#: CPU seconds (user + system) of each timed run's own processes — the shell
#: and the hook, not the detached pass it starts — by what was run.
CPU: dict[str, list[float]] = {}


def _time(argv: list[str], stdin: bytes, cwd: Path, env: dict[str, str], what: str = "") -> tuple[float, bytes]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(argv, input=stdin, cwd=cwd, env=env, capture_output=True)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr[-500:]!r}")
    if what:
        CPU.setdefault(what, []).append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return elapsed, done.stdout


def run(rounds: int) -> list[Figure]:
    env = child_env()
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp, contextlib.chdir(tmp):
        print("  building a regular install (venv + pip install of the checkout) …", file=sys.stderr, flush=True)
        install = RegularInstall(Path(tmp))
        home, project, store = Path(tmp) / "home", Path(tmp) / "proj", Path(tmp) / "store"
        (project / ".git").mkdir(parents=True)
        home.mkdir()
        env = {**env, "HOME": str(home)}
        LearningStore.open(store).write_proposal(
            Proposal(id="p-bench", domain="behavior", status=ProposalStatus.PENDING, reflexion_ids=[], rules_before=[],
                     rules=[], evidence="", created_at="2026-11-01T10:00:00Z")
        )
        done = subprocess.run([str(install.script), "hooks", "install", "claude", "--learning-dir", str(store)],
                              cwd=project, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"hooks install failed: {done.stderr}")
        settings = json.loads((home / ".claude" / "settings.json").read_text())
        end = settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
        start = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]

        rng = random.Random(11)
        transcript = home / ".claude" / "projects" / str(project).replace("/", "-") / f"{SID}.jsonl"
        transcript.parent.mkdir(parents=True)
        transcript.write_text(_session(rng, SID, str(project), SESSION_MB * 1_000_000))
        size_mb = transcript.stat().st_size / 1e6
        payload = json.dumps({"session_id": SID, "transcript_path": str(transcript), "cwd": str(project),
                              "hook_event_name": "SessionEnd", "reason": "other"}).encode()
        start_payload = json.dumps({"session_id": SID, "transcript_path": str(transcript), "cwd": str(project),
                                    "hook_event_name": "SessionStart", "source": "startup"}).encode()
        log = store / "logs" / "hooks.log"
        base = {"isSidechain": False, "userType": "external", "cwd": str(project), "sessionId": SID, "version": "2.0.30"}
        turn = 0

        def grow() -> None:
            nonlocal turn
            turn += 1
            lines = [
                {**base, "type": "assistant", "uuid": f"grow-a{turn}", "message": {
                    "id": f"msg_grow_{turn}", "type": "message", "role": "assistant", "model": "claude-x",
                    "content": [{"type": "text", "text": "Done: " + _words(rng, 20)}]}},
                {**base, "type": "user", "uuid": f"grow-u{turn}", "message": {
                    "role": "user", "content": f"Actually, round {turn}: " + _words(rng, 12)}},
            ]
            with transcript.open("a") as f:
                f.write("".join(json.dumps(line) + "\n" for line in lines))

        _time(["sh", "-c", end], payload, project, env)  # the first read of the whole session, untimed
        wait_for_hook_pass(store)
        _settled(store)

        def session_end() -> float:
            grow()
            elapsed, out = _time(["sh", "-c", end], payload, project, env, "end")
            wait_for_hook_pass(store)
            last = log.read_text().splitlines()[-1]
            if out or "queued 1 new intervention(s)" not in last:
                raise RuntimeError(f"a session-end run did not queue exactly the one new turn: {last!r}, stdout {out!r}")
            _settled(store)
            return elapsed

        def session_start() -> float:
            elapsed, out = _time(["sh", "-c", start], start_payload, project, env, "start")
            if "mecha: 1 rule proposal awaits" not in json.loads(out)["systemMessage"]:
                raise RuntimeError(f"the session-start run printed {out!r}")
            return elapsed

        bare = ["sh", "-c", shlex.join([str(install.python), "-c", "pass"])]
        # The same hook through the `mecha-sidecar` console script, whose
        # launcher imports `re` first, for comparison.
        argv = shlex.split(start)
        if argv[1:4] != hook_program(str(install.python))[1:]:
            raise RuntimeError(f"unexpected hook command {start!r}")
        start_script = shlex.join([str(install.script), *argv[4:]])

        def session_start_script() -> float:
            elapsed, out = _time(["sh", "-c", start_script], start_payload, project, env, "start_script")
            if not out.startswith(b'{"systemMessage": '):
                raise RuntimeError(f"the session-start run printed {out!r}")
            return elapsed

        session_start()
        times = interleaved(
            rounds,
            {
                "pass": lambda: _time(bare, b"", project, env, "pass")[0],
                "end": session_end,
                "start": session_start,
                "start_script": session_start_script,
            },
        )
        storm, bare_storm, storm_read_s = _storm(install, Path(tmp), env, end)
    t = {k: median(v) for k, v in times.items()}
    cpu = {k: median(v) for k, v in CPU.items()}
    CPU.clear()
    return [
        Figure(
            key="hook_session_end",
            title=f"Claude Code session-end hook, regular install: a {size_mb:.0f} MB session grown by one turn "
            "(queued and returned; the hook pass it starts reads the new turn)",
            subject=t["end"] * 1e3,
            baseline=t["pass"] * 1e3,
            unit="ms",
            subject_label="sh -c '<hook>'",
            baseline_label="sh -c 'python -c pass', same venv",
            ratio=t["end"] / t["pass"],
            goal=f"< {END_GOAL_MS:.0f} ms",
            met=t["end"] * 1e3 < END_GOAL_MS,
            notes=[f"slowest of {rounds}: {max(times['end']) * 1e3:.0f} ms",
                   f"CPU time (user + system): {cpu['end'] * 1e3:.0f} ms, python -c pass {cpu['pass'] * 1e3:.0f} ms"],
            extra={"rounds": rounds, "session_mb": size_mb, "end_max_s": max(times["end"]), "end_cpu_s": cpu["end"],
                   "pass_cpu_s": cpu["pass"]},
        ),
        Figure(
            key="hook_session_start",
            title="Claude Code session-start hook, regular install, one proposal pending (its line printed)",
            subject=t["start"] * 1e3,
            baseline=t["pass"] * 1e3,
            unit="ms",
            subject_label="sh -c '<hook>'",
            baseline_label="sh -c 'python -c pass', same venv",
            ratio=t["start"] / t["pass"],
            goal="≤ 2×",
            met=t["start"] / t["pass"] <= 2.0,
            notes=[f"CPU time (user + system): {cpu['start'] * 1e3:.0f} ms, python -c pass {cpu['pass'] * 1e3:.0f} ms",
                   f"the same hook through the mecha-sidecar console script: {t['start_script'] * 1e3:.0f} ms "
                   f"({t['start_script'] / t['pass']:.2f}×)"],
            extra={"rounds": rounds, "start_cpu_s": cpu["start"], "pass_cpu_s": cpu["pass"],
                   "start_script_s": t["start_script"], "start_script_cpu_s": cpu["start_script"]},
        ),
        Figure(
            key="hook_storm",
            title=f"{STORM} Claude Code session-end hooks at once, regular install, each for a session of its own "
            "(queued; one hook pass reads them all)",
            subject=max(storm) * 1e3,
            baseline=max(bare_storm) * 1e3,
            unit="ms",
            subject_label="slowest hook",
            baseline_label=f"slowest of {STORM} 'python -c pass' at once",
            ratio=max(storm) / max(bare_storm),
            goal=f"each < {STORM_GOAL_MS:.0f} ms",
            met=max(storm) * 1e3 < STORM_GOAL_MS,
            notes=[f"median hook {median(storm) * 1e3:.0f} ms, fastest {min(storm) * 1e3:.0f} ms; median "
                   f"'python -c pass' {median(bare_storm) * 1e3:.0f} ms",
                   f"CPU time (user + system) a hook: {cpu['storm'] * 1e3:.0f} ms, python -c pass "
                   f"{cpu['bare_storm'] * 1e3:.0f} ms",
                   f"the hook pass had read all {STORM} sessions {storm_read_s:.1f} s after the first hook started"],
            extra={"hooks": STORM, "each_s": storm, "bare_each_s": bare_storm, "read_all_s": storm_read_s},
        ),
    ]


def _at_once(argvs: list[list[str]], stdins: list[bytes], cwd: Path, env: dict[str, str]) -> list[float]:
    """Each command started at the same moment (threads released by one
    barrier), its wall time from spawn to exit."""
    import threading

    barrier = threading.Barrier(len(argvs))
    out: list[float] = [0.0] * len(argvs)
    failed: list[str] = []

    def one(i: int) -> None:
        barrier.wait()
        t = time.perf_counter()
        done = subprocess.run(argvs[i], input=stdins[i], cwd=cwd, env=env, capture_output=True)
        out[i] = time.perf_counter() - t
        if done.returncode != 0 or done.stdout:
            failed.append(f"{argvs[i]}: exit {done.returncode}, stdout {done.stdout[:200]!r}")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(argvs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if failed:
        raise RuntimeError(failed[0])
    return out


def _storm(install: RegularInstall, tmp: Path, env: dict[str, str], end: str) -> tuple[list[float], list[float], float]:
    """`STORM` session-end hooks at once, each for its own session, into a
    store of their own; then as many bare interpreters at once."""
    store = tmp / "storm-store"
    project = tmp / "proj"
    folder = tmp / "storm-sessions"
    folder.mkdir()
    argv = shlex.split(end)
    argv[argv.index("--learning-dir") + 1] = str(store)
    payloads = []
    for n in range(STORM):
        sid = f"5707{n:04d}-0000-4000-8000-000000000000"
        base = {"isSidechain": False, "userType": "external", "cwd": str(project), "sessionId": sid, "version": "2.0.30"}
        lines = [{**base, "type": "user", "uuid": f"s{n}-u0", "message": {"role": "user", "content": f"Write report {n}."}}]
        for k in range(3):
            lines.append({**base, "type": "assistant", "uuid": f"s{n}-a{k}", "message": {
                "id": f"msg_{n}_{k}", "type": "message", "role": "assistant", "model": "claude-x",
                "content": [{"type": "text", "text": f"Draft {k} of report {n}."}]}})
            lines.append({**base, "type": "user", "uuid": f"s{n}-u{k + 1}", "message": {
                "role": "user", "content": f"No: report {n} needs change {k}."}})
        path = folder / f"{sid}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        payloads.append(json.dumps({"session_id": sid, "transcript_path": str(path), "cwd": str(project),
                                    "hook_event_name": "SessionEnd"}).encode())
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    each = _at_once([["sh", "-c", shlex.join(argv)]] * STORM, payloads, project, env)
    CPU["storm"] = [_cpu_since(before) / STORM]
    wait_for_hook_pass(store, timeout=600)
    read_all = time.monotonic() - started
    queued = sum(len(json.loads(p.read_text())["plans"]) for p in (store / "inbox").glob("*.json"))
    if queued != STORM * 3:
        raise RuntimeError(f"the storm queued {queued} of {STORM * 3} corrections")
    _settled(store, timeout=600)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    bare = _at_once([["sh", "-c", shlex.join([str(install.python), "-c", "pass"])]] * STORM, [b""] * STORM, project, env)
    CPU["bare_storm"] = [_cpu_since(before) / STORM]
    return each, bare, read_all


def _cpu_since(before: resource.struct_rusage) -> float:
    """CPU seconds (user + system) of the children waited for since `before`:
    the shells and the hooks, not the detached passes they start."""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def storm_only() -> None:
    """`python -m tests.bench.hooks`: the storm alone, as figure 11 runs it
    (a regular install, `STORM` session-end hooks at once against as many
    bare interpreters at once, in the same run), printed."""
    import os

    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp, contextlib.chdir(tmp):
        load = os.getloadavg()[0]
        print("building a regular install (venv + pip install of the checkout) …", file=sys.stderr, flush=True)
        install = RegularInstall(Path(tmp))
        home, store = Path(tmp) / "home", Path(tmp) / "store"
        (Path(tmp) / "proj" / ".git").mkdir(parents=True)
        home.mkdir()
        env = {**child_env(), "HOME": str(home)}
        end = hook_command(hook_program(str(install.python)), "claude", "session-end", str(store))
        storm, bare, read_all = _storm(install, Path(tmp), env, end)
    ms = 1e3
    print(f"{STORM} session-end hooks at once, regular install, load average {load:.1f} at the start")
    print(f"  slowest hook {max(storm) * ms:.0f} ms, median {median(storm) * ms:.0f} ms, "
          f"fastest {min(storm) * ms:.0f} ms; CPU (user + system) {CPU['storm'][0] * ms:.1f} ms a hook")
    print(f"  slowest of {STORM} 'python -c pass' at once {max(bare) * ms:.0f} ms, median {median(bare) * ms:.0f} ms; "
          f"CPU {CPU['bare_storm'][0] * ms:.1f} ms each")
    print(f"  slowest hook / slowest bare: {max(storm) / max(bare):.2f}×; median / median: "
          f"{median(storm) / median(bare):.2f}×; all {STORM} sessions read {read_all:.1f} s after the first hook started")


if __name__ == "__main__":
    storm_only()
