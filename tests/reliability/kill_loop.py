"""The kill loop: accepts with export on, each killed with `kill -9` at a
random moment (50–300 ms in), the process group whole — the CLI and the git
it runs — as a power loss or a killed terminal would. Bounded in count and
in time. Then one more accept, unkilled, and the store is checked: its
history takes commits again (no lock left standing), nothing changed is
outside it, doctor says so, the learned rules are the last accepted
proposal's, and nothing a killed export wrote is left beside CLAUDE.md.

    python -m tests.reliability.kill_loop [--kills 100] [--seconds 180]

Prints the figures; exits 1 if the store did not recover.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from mecha.core.domain.rules import Rule
from mecha.core.store.learning_store import LearningStore
from tests import builders


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(root / ".git"), "--work-tree", str(root), *args],
                          capture_output=True, text=True, check=True).stdout


def _pending(store: LearningStore, n: int) -> str:
    """A pending proposal adding one rule to the live learned rules."""
    live = store.learned_rules("behavior")
    pid = f"p{n:04d}-{os.urandom(3).hex()}"
    store.write_proposal(builders.proposal(pid, [*live, Rule(text=f"Rule number {n}: keep it short.", id=f"L{n}")],
                                           rules_before=live))
    return pid


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=180)
    ap.add_argument("--seed", type=int, default=38)
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kill-loop-"))
    home, env, store, argv = _setup(tmp)
    loop = _loop(store, argv, env, tmp, random.Random(opts.seed), opts.kills, opts.seconds)
    return _recover(store, argv, env, tmp, home, loop)


class _Loop(NamedTuple):
    """What the loop did: accepts started, killed, finished first, how often
    a git lock stood after one, one accept's time here, and when it began."""

    n: int
    kills: int
    finished: int
    locks_seen: int
    span: float
    started: float


def _setup(tmp: Path) -> tuple[Path, dict[str, str], LearningStore, list[str]]:
    """A home exporting to Claude Code, a store with one live rule, and
    the accept's command line (the proposal's id to follow)."""
    home = tmp / "home"
    (home / ".claude").mkdir(parents=True)
    config = tmp / "sidecar.toml"
    config.write_text("[export]\nclaude = true\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    env.update(HOME=str(home), MECHA_SIDECAR_CONFIG=str(config))
    store = LearningStore.open(tmp / "learning")
    builders.write_learned_rules(store, "behavior", [Rule(text="Run the tests first.", id="L0")])
    with store.lock():
        store.commit("seed")
    argv = [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store.root), "proposals", "accept"]
    return home, env, store, argv


def _loop(store: LearningStore, argv: list[str], env: dict[str, str], tmp: Path, rng: random.Random,
          most: int, seconds: float) -> _Loop:
    """Accepts, each killed with its process group at a random point of
    one accept's time, until `most` kills or `seconds`."""
    # How long one accept takes here, unkilled: the kills land anywhere in
    # it (the 50–300 ms of a fast machine is all start-up on a slow one).
    with store.lock():
        first = _pending(store, 0)
    t0 = time.monotonic()
    subprocess.run([*argv, first], env=env, cwd=tmp, capture_output=True, timeout=120, check=True)
    span = time.monotonic() - t0
    kills = finished = n = locks_seen = 0
    started = time.monotonic()
    while kills < most and time.monotonic() - started < seconds:
        n += 1
        with store.lock():
            pid = _pending(store, n)
        proc = subprocess.Popen([*argv, pid], env=env, cwd=tmp, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, span))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        else:
            finished += 1
        proc.wait()
        if any((store.root / ".git").glob("*.lock")) or any((store.root / ".git" / "refs").rglob("*.lock")):
            locks_seen += 1
        # Proposals left pending by a kill go stale at the next accept; reject
        # nothing: the next one is built on the live rules, whatever they are.
    return _Loop(n, kills, finished, locks_seen, span, started)


def _recover(store: LearningStore, argv: list[str], env: dict[str, str], tmp: Path, home: Path, loop: _Loop) -> int:
    """One more accept, unkilled, then whether everything came back: history,
    locks, doctor, the live rules and the exported file. Printed; 0 when so."""
    n = loop.n
    commits_before = int(_git(store.root, "rev-list", "--count", "HEAD"))
    with store.lock():
        last = _pending(store, n + 1)
    time.sleep(6)  # older than an interrupted commit's lock may be
    done = subprocess.run([*argv, last], env=env, cwd=tmp, capture_output=True, text=True, timeout=120)
    commits_after = int(_git(store.root, "rev-list", "--count", "HEAD"))
    status = _git(store.root, "status", "--porcelain")
    locks = [str(p.relative_to(store.root)) for p in (store.root / ".git").rglob("*.lock")]
    doctor = json.loads(subprocess.run([sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store.root), "--json",
                                        "doctor"], env=env, cwd=tmp, capture_output=True, text=True, timeout=120).stdout)
    git_check = next(c for c in doctor["checks"] if c["name"] == "git")
    accepted = store.proposal(last)
    live = store.learned_rules("behavior")
    claude_md = (home / ".claude" / "CLAUDE.md").read_text() if (home / ".claude" / "CLAUDE.md").exists() else ""
    # What a killed export may leave beside the person's file, which the
    # recovery accept's export clears.
    temps = sorted(p.name for p in (home / ".claude").iterdir() if p.name != "CLAUDE.md")
    ok = (done.returncode == 0 and not status and not locks and git_check["ok"] and live == accepted.rules
          and f"Rule number {n + 1}" in claude_md and not temps)
    print(f"kill loop: {n} accepts started in {time.monotonic() - loop.started:.0f}s, {loop.kills} killed with kill -9 "
          f"(process group) 50 ms to {loop.span * 1000:.0f} ms in (one accept's time here), {loop.finished} finished first; a git lock stood after {loop.locks_seen} of them")
    print(f"recovery accept: exit {done.returncode}; commits in history {commits_before} before it, {commits_after} after; "
          f"uncommitted files {len(status.splitlines())}; locks left {locks or 'none'}")
    print(f"doctor git: {'ok' if git_check['ok'] else 'NOT ok'} — {git_check['detail']}")
    print(f"learned rules = the last accepted proposal's: {live == accepted.rules}; CLAUDE.md has it: {f'Rule number {n + 1}' in claude_md}; "
          f"left beside it: {temps or 'nothing'}")
    print("RECOVERED" if ok else "NOT RECOVERED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
