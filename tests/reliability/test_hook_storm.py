"""The session-end hook queues and returns; one hook pass reads.

The agent kills a session-end hook past its timeout (10 s here, 3 s on
Codex). Fifty sessions ending at once once took each hook 17 s on two
cores, every one reading its own transcript while the others did. Now a
hook writes down which session ended and returns; the hook pass reads
them all, and concurrent hooks share it. Real processes run as the agent
runs them (`sh -c COMMAND`, the hook's JSON on stdin), against a real
store and real Claude Code session files.

How long a hook takes is a benchmark's figure (figure 11, `hook_storm`),
never a test's: here, what a hook does and does not do.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from mecha.core.agents.hookqueue import pass_lock, pending
from mecha.core.environment.agents import END_TIMEOUT_S
from mecha.core.store.layout import HOOK_QUEUE_DIR
from tests.core.ccfixture import Claude, text
from tests.processes import wait_for_hook_pass, wait_for_passes

HOOKS = 50
#: Corrections per session: 150 in all, as in the attack.
CORRECTIONS = 3


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    env["HOME"] = str(home)
    return env


def _session(n: int, cwd: Path) -> tuple[str, bytes]:
    sid = f"5e55{n:04d}-0000-4000-8000-000000000000"
    c = Claude(session=sid, cwd=str(cwd))
    c.user(f"Write the report number {n}.")
    for k in range(CORRECTIONS):
        c.assistant(text(f"Draft {k} of report {n}."))
        c.user(f"No: report {n} needs change {k}, keep it short.")
    c.assistant(text("Done."))
    return sid, c.bytes()


def _command(store: Path) -> str:
    return shlex.join([sys.executable, "-P", "-m", "mecha.sidecar", "hook", "claude", "session-end",
                       "--learning-dir", str(store)])


def _storm(tmp_path: Path, store: Path) -> tuple[list[str], list[subprocess.Popen[bytes]]]:
    home, project = tmp_path / "home", tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    sessions = home / ".claude" / "projects" / "proj"
    sessions.mkdir(parents=True)
    sids, procs = [], []
    payloads = []
    for n in range(HOOKS):
        sid, data = _session(n, project)
        (sessions / f"{sid}.jsonl").write_bytes(data)
        sids.append(sid)
        payloads.append(json.dumps({"session_id": sid, "transcript_path": str(sessions / f"{sid}.jsonl"),
                                    "cwd": str(project), "hook_event_name": "SessionEnd"}).encode())
    for payload in payloads:
        proc = subprocess.Popen(["sh", "-c", _command(store)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=project, env=_env(home))
        assert proc.stdin is not None
        proc.stdin.write(payload)
        proc.stdin.close()
        procs.append(proc)
    return sids, procs


def _finished(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        assert proc.wait(END_TIMEOUT_S) == 0  # the agent's own bound: past it, the hook is killed
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read() == b"" and proc.stderr.read() == b""


def _queued_interventions(store: Path) -> list[str]:
    out = []
    for entry in sorted((store / "inbox").glob("*.json")):
        out += [p["intervention"]["text"] for p in json.loads(entry.read_text())["plans"]]
    return out


def test_fifty_hooks_at_once_only_queue_while_a_pass_runs_and_that_pass_reads_them_all(tmp_path: Path) -> None:
    # Pins: each of 50 hooks at once reading its own session (16.8–17.4 s
    # each on 2 cores, past the agent's 10 s): a hook that finds a pass
    # running leaves its session to it and reads nothing.
    store = tmp_path / "store"
    (store / HOOK_QUEUE_DIR).mkdir(parents=True)
    with pass_lock(str(store)) as held:  # a hook pass is busy
        assert held
        sids, procs = _storm(tmp_path, store)
        _finished(procs)
        assert len(pending(str(store))) == HOOKS, "every hook queued its session"
        assert not (store / "imported.jsonl").exists() and not (store / "inbox").exists(), "a hook read a session"
        assert not (store / "jobs").exists(), "a hook started a pass while one was running"
    # The pass that held the lock reads what was queued meanwhile.
    done = subprocess.run([sys.executable, "-P", "-m", "mecha.sidecar", "hook", "claude", "pass", "--learning-dir", str(store)],
                          env=_env(tmp_path / "home"), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert pending(str(store)) == []
    said = _queued_interventions(store)
    assert len(said) == HOOKS * CORRECTIONS == len(set(said)), "each correction queued exactly once"
    jobs = [json.loads(p.read_text()) for p in (store / "jobs").glob("*.json")]
    assert [j["kind"] for j in jobs] == ["reflect"], "one reflect pass for all fifty sessions"
    log = (store / "logs" / "hooks.log").read_text().splitlines()
    assert len(log) == HOOKS and all(f"queued {CORRECTIONS} new intervention(s)" in line for line in log)
    assert all(jobs[0]["id"] in line for line in log)
    wait_for_passes(store, timeout=60)


def test_fifty_hooks_at_once_share_the_hook_pass_and_every_correction_is_queued_once(tmp_path: Path) -> None:
    # Pins: a hook storm outliving the agent's timeout; concurrent hooks
    # each starting their own read and their own reflect pass.
    store = tmp_path / "store"
    sids, procs = _storm(tmp_path, store)
    _finished(procs)
    wait_for_hook_pass(store, timeout=120)
    said = _queued_interventions(store)
    assert len(said) == HOOKS * CORRECTIONS == len(set(said)), "each correction queued exactly once"
    log = (store / "logs" / "hooks.log").read_text().splitlines()
    assert sorted(line.split("session=")[1].split()[0] for line in log) == sorted(sids)
    reflects = [json.loads(p.read_text()) for p in (store / "jobs").glob("*.json")]
    assert 1 <= len(reflects) < HOOKS // 5, f"{len(reflects)} reflect passes for {HOOKS} hooks"
    assert sorted(os.listdir(store / HOOK_QUEUE_DIR)) == [".pass.lock"], "a queued file or a temp was left"
    wait_for_passes(store, timeout=60)


#: Runs `sh -c COMMAND` with this process's stdin, then prints the peak
#: resident size of what it ran.
MEASURED = """
import json, resource, subprocess, sys
done = subprocess.run(["sh", "-c", sys.argv[1]], stdin=sys.stdin, capture_output=True)
if done.returncode or done.stdout or done.stderr:
    sys.exit(f"the hook exited {done.returncode}: {done.stdout!r} {done.stderr!r}")
print(json.dumps({"peak_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def test_the_hook_on_a_one_gigabyte_one_line_transcript_returns_and_the_pass_skips_the_line_by_name(tmp_path: Path) -> None:
    # Pins: the session-end hook on a 1 GB one-line transcript running
    # 15.4 s (past its 10 s) and peaking at 2,168 MB.
    store, home, project = tmp_path / "store", tmp_path / "home", tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    c = Claude(cwd=str(project))
    c.user("Tidy the release notes.").assistant(text("Tidied.")).user("No, keep the old format.").assistant(text("Kept."))
    head = c.bytes() + b'{"type": "user", "message": {"role": "user", "content": "'
    transcript = tmp_path / "huge.jsonl"
    with transcript.open("wb") as f:  # sparse: no room on disk, every byte still read
        f.write(head)
        f.seek(len(head) + 10**9)
        f.write(b'"}}\n')
    try:
        payload = json.dumps({"session_id": c.session, "transcript_path": str(transcript), "cwd": str(project),
                              "hook_event_name": "SessionEnd"}).encode()
        # Run from a small process of its own: a child's peak counts what
        # its parent held when it forked, and this test process may hold a
        # lot by now.
        done = subprocess.run([sys.executable, "-c", MEASURED, _command(store)], input=payload, cwd=project,
                              env=_env(home), capture_output=True, timeout=END_TIMEOUT_S)
        assert done.returncode == 0, done.stderr
        peak_mb = json.loads(done.stdout)["peak_kib"] / 1024
        assert peak_mb < 100, f"the hook peaked at {peak_mb:.0f} MB"
        wait_for_hook_pass(store, timeout=120)
    finally:
        transcript.unlink()
    [line] = (store / "logs" / "hooks.log").read_text().splitlines()
    assert "queued 1 new intervention(s)" in line and f"{transcript}:5: skipped a line" in line, line
    assert "longer than 32 MiB" in line
    wait_for_passes(store, timeout=60)


def test_the_hook_pass_trusts_nothing_in_its_queue_and_ends(tmp_path: Path) -> None:
    # A queue is a folder of the store anyone with access can write: a
    # folder, a FIFO, a link or garbage under an entry's name is named in
    # the hook log and passed by; the pass reads the real session and ends
    # (a folder it cannot take out of the queue once kept it going for ever).
    store, home = tmp_path / "store", tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    queue = store / HOOK_QUEUE_DIR
    queue.mkdir(parents=True)
    (queue / "1-folder.json").mkdir()
    (queue / "1-folder.json" / "inside").write_text("x")
    os.mkfifo(queue / "2-fifo.json")
    (queue / "3-link.json").symlink_to("/etc/hostname")
    (queue / "4-garbage.json").write_bytes(b"\xff{not json")
    (queue / "5-shape.json").write_text(json.dumps({"agent": "claude", "session_id": ["x"]}))
    sid, data = _session(0, project)
    transcript = tmp_path / "real.jsonl"
    transcript.write_bytes(data)
    payload = json.dumps({"session_id": sid, "transcript_path": str(transcript), "cwd": str(project),
                          "hook_event_name": "SessionEnd"}).encode()
    ran = subprocess.run(["sh", "-c", _command(store)], input=payload, cwd=project, env=_env(home),
                         capture_output=True, timeout=END_TIMEOUT_S)
    assert ran.returncode == 0 and ran.stdout == b"" and ran.stderr == b""
    wait_for_hook_pass(store, timeout=120)
    log = (store / "logs" / "hooks.log").read_text()
    assert f"session={sid}" in log and f"queued {CORRECTIONS} new intervention(s)" in log
    for name, why in [("1-folder.json", "not a regular file"), ("2-fifo.json", "not a regular file"),
                      ("3-link.json", "cannot be read"), ("4-garbage.json", "not JSON"),
                      ("5-shape.json", "not a queued session")]:
        assert f"{queue / name}: {why}" in log, (name, log)
    assert f"{queue / '1-folder.json'} could not be taken out of the queue" in log
    assert len(_queued_interventions(store)) == CORRECTIONS
    wait_for_passes(store, timeout=60)
