"""Figure 9: importing a generated Claude Code projects folder of ≥ 200 MB.

Generated, never copied: 24 projects of session files written the way Claude
Code writes them — one line per assistant content block sharing a message
id, tool results with `toolUseResult` records that repeat the file content,
thinking blocks, queued messages, denials, interrupt markers, bookkeeping
lines — plus one session much larger than the rest, so the memory figure can
tell "bounded by the largest file" from "grows with the folder".

Each measurement runs in a fresh child process (its peak RSS is its own):

- **read**: every file through `read_claude_code` (bytes → wire transcript,
  taint timeline), throughput in MB of session file per second; baseline: the
  same files read and split into lines.
- **import**: `import_sessions` into an empty store (read, plan, stage, queue);
  then **re-import** with nothing changed, against the first import's time.
- **peak RSS** of the import child against the largest single file.
- **one huge session**: peak RSS of importing a folder holding a single
  230 MB session file (goal ≤ 400 MB), against a child that imports the
  same modules and reads the same file line by line doing nothing else —
  the floor of any reader that does not hold the file whole.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from .common import Figure, child_env, interleaved, median, python

PROJECTS = 24
SESSIONS_PER_PROJECT = 9
TARGET_MB = 210
LARGEST_MB = 24
#: The one-file figure: a session as large as the largest seen in the wild.
HUGE_MB = 230
HUGE_GOAL_MIB = 400

_CHILD = r"""
import json, sys, time
op, root, store = sys.argv[1], sys.argv[2], sys.argv[3]
from pathlib import Path
files = sorted(Path(root).rglob("*.jsonl"))
if op == "read":
    from mecha.core.sessions.claude_code import read_claude_code
    t = time.perf_counter()
    n = 0
    for f in files:
        n += len(read_claude_code(f.read_bytes(), path=f).messages)
elif op == "split":
    t = time.perf_counter()
    n = sum(len(f.read_bytes().split(b"\n")) for f in files)
elif op == "lines":
    from mecha.core.agents.importing import import_sessions
    t = time.perf_counter()
    n = 0
    for f in files:
        with f.open("rb") as fh:
            n += sum(1 for _ in fh)
else:
    from mecha.core.sessions.foreign import HARNESS_VOICE_PROFILES
    from mecha.core.agents.importing import import_sessions
    from mecha.core.sessions.mining import Voices
    from mecha.core.store.learning_store import LearningStore
    s = LearningStore.open(store)
    t = time.perf_counter()
    report = import_sessions(s, "claude", Path(root), voices=Voices(harness_prefixes=HARNESS_VOICE_PROFILES["claude"]))
    n = len(report.queued)
took = time.perf_counter() - t
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"s": took, "n": n, "maxrss_kib": hwm}))
"""


def _words(rng: random.Random, n: int) -> str:
    vocab = (
        "the config loader returns a default when the path is missing so we parse the file again and "
        "retry the request after the cache expires then build the module and run the test suite"
    ).split()
    return " ".join(rng.choice(vocab) for _ in range(n))


def _session(rng: random.Random, session: str, cwd: str, target_bytes: int) -> str:
    """One session's lines, about `target_bytes` long."""
    out: list[str] = []
    _write_session(rng, session, cwd, target_bytes, out.append)
    return "\n".join(out) + "\n"


def _write_session(rng: random.Random, session: str, cwd: str, target_bytes: int, write: Callable[[str], object]) -> None:
    """Hand each line of one session (without its newline) to `write`."""
    size = 0
    n = 0

    def emit(line: dict) -> None:
        nonlocal size, n
        n += 1
        line.setdefault("uuid", f"{session[:8]}-{n:08d}")
        text = json.dumps(line, ensure_ascii=False)
        write(text)
        size += len(text) + 1

    base = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session, "version": "2.0.30", "gitBranch": "main"}
    emit({"type": "summary", "summary": _words(rng, 6), "leafUuid": "x"})
    emit({**base, "type": "user", "message": {"role": "user", "content": "Refactor the loader: " + _words(rng, 30)}})
    call = 0
    while size < target_bytes:
        call += 1
        mid = f"msg_{session[:6]}_{call}"
        tid = f"toolu_{session[:6]}_{call}"
        tool = rng.choice(("Read", "Read", "Edit", "Bash", "Grep"))
        blocks = [
            {"type": "thinking", "thinking": _words(rng, rng.randint(20, 80)), "signature": "s" * 40},
            {"type": "text", "text": _words(rng, rng.randint(10, 50))},
            {"type": "tool_use", "id": tid, "name": tool, "input": {"file_path": f"{cwd}/src/m{rng.randint(0, 80)}.py", "command": "pytest -x"}},
        ]
        for block in blocks:
            emit({**base, "type": "assistant", "message": {"id": mid, "type": "message", "role": "assistant", "model": "claude-x", "content": [block], "usage": {"input_tokens": 4, "output_tokens": 90}}, "requestId": "req_" + mid})
        body = "\n".join(f"{i:6d}→{_words(rng, 9)}" for i in range(rng.randint(20, 160)))
        roll = rng.random()
        if roll < 0.03:
            emit({**base, "type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "is_error": True, "content": "The user doesn't want to proceed with this tool use. The tool use was rejected."}]}})
            emit({**base, "type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user for tool use]"}]}})
            emit({**base, "type": "user", "message": {"role": "user", "content": "No, " + _words(rng, 14)}})
            continue
        emit({**base, "type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": body}]},
              "toolUseResult": {"type": "text", "file": {"filePath": f"{cwd}/src/x.py", "content": body, "numLines": 80}}})
        if roll < 0.06:
            emit({**base, "type": "attachment", "attachment": {"type": "queued_command", "commandMode": "prompt", "origin": {"kind": "human"}, "prompt": "Also " + _words(rng, 10)}})
        elif roll < 0.09:
            emit({**base, "type": "user", "message": {"role": "user", "content": "Actually, " + _words(rng, 20)}})
        elif roll < 0.10:
            emit({"type": "file-history-snapshot", "messageId": mid, "snapshot": {"trackedFileBackups": {}}, "isSnapshotUpdate": True})


def huge_session(root: Path, seed: int = 23) -> float:
    """A folder holding one session file of about `HUGE_MB`, written line by
    line; returns its size in MB."""
    rng = random.Random(seed)
    cwd = "/home/pat/src/monorepo"
    folder = root / cwd.replace("/", "-")
    folder.mkdir(parents=True)
    session = "0000beef-0000-4000-8000-000000000230"
    path = folder / f"{session}.jsonl"
    with path.open("w") as f:
        _write_session(rng, session, cwd, int(HUGE_MB * 1e6), lambda line: f.write(line + "\n"))
    return path.stat().st_size / 1e6


def projects_folder(root: Path, seed: int = 9) -> tuple[float, float]:
    """Write the folder; returns (total MB, largest file MB)."""
    rng = random.Random(seed)
    count = PROJECTS * SESSIONS_PER_PROJECT
    ordinary = int((TARGET_MB - LARGEST_MB) * 1e6 / (count - 1))
    total = largest = 0
    k = 0
    for p in range(PROJECTS):
        cwd = f"/home/pat/src/project-{p:02d}"
        folder = root / cwd.replace("/", "-")
        folder.mkdir(parents=True)
        for s in range(SESSIONS_PER_PROJECT):
            k += 1
            session = f"{k:08x}-0000-4000-8000-{p:04d}{s:08d}"
            target = int(LARGEST_MB * 1e6) if k == 1 else ordinary
            data = _session(rng, session, cwd, target)
            path = folder / f"{session}.jsonl"
            path.write_text(data)
            size = path.stat().st_size
            total += size
            largest = max(largest, size)
    return total / 1e6, largest / 1e6


def _child(op: str, root: Path, store: Path, env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run([python(), "-c", _CHILD, op, str(root), str(store)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(rounds: int) -> list[Figure]:
    env = child_env()
    got: dict[str, list[dict[str, float]]] = {"read": [], "split": [], "import": [], "reimport": []}
    with tempfile.TemporaryDirectory(prefix="mecha-bench-") as tmp:
        root = Path(tmp) / "projects"
        total_mb, largest_mb = projects_folder(root)
        _child("split", root, Path(tmp) / "none", env)  # warm the page cache

        def imports() -> float:
            store = Path(tmp) / "store"
            shutil.rmtree(store, ignore_errors=True)
            first = _child("import", root, store, env)
            again = _child("import", root, store, env)
            got["import"].append(first)
            got["reimport"].append(again)
            return first["s"]

        def step(op: str) -> float:
            r = _child(op, root, Path(tmp) / "none", env)
            got[op].append(r)
            return r["s"]

        interleaved(rounds, {"split": lambda: step("split"), "read": lambda: step("read"), "import": imports})
        shutil.rmtree(root)

        huge_root = Path(tmp) / "huge"
        huge_mb = huge_session(huge_root)
        got["huge"], got["huge_floor"] = [], []

        def huge(op: str, key: str) -> float:
            store = Path(tmp) / "huge-store"
            shutil.rmtree(store, ignore_errors=True)
            r = _child(op, huge_root, store, env)
            got[key].append(r)
            return r["maxrss_kib"]

        interleaved(rounds, {"lines": lambda: huge("lines", "huge_floor"), "import": lambda: huge("import", "huge")})

    def med(op: str, key: str = "s") -> float:
        return median(r[key] for r in got[op])

    read_mbps, split_mbps = total_mb / med("read"), total_mb / med("split")
    first, again = med("import"), med("reimport")
    rss = med("import", "maxrss_kib") / 1024
    reimport_rss = med("reimport", "maxrss_kib") / 1024
    queued = int(got["import"][0]["n"])
    bound = 4 * largest_mb * 1e6 / 2**20 + reimport_rss
    huge_rss = med("huge", "maxrss_kib") / 1024
    huge_floor = med("huge_floor", "maxrss_kib") / 1024
    return [
        Figure(
            key="claude_read_mbps",
            title=f"read a generated Claude Code projects folder ({total_mb:.0f} MB, {PROJECTS * SESSIONS_PER_PROJECT} sessions)",
            subject=read_mbps,
            baseline=split_mbps,
            unit="MB/s",
            subject_label="read_claude_code",
            baseline_label="read + split lines",
            ratio=read_mbps / split_mbps,
            goal="≥ 50 MB/s",
            met=read_mbps >= 50,
            extra={"rounds": rounds, "folder_mb": total_mb, "largest_mb": largest_mb},
        ),
        Figure(
            key="claude_reimport",
            title=f"re-import with nothing changed, against the first import ({queued} sessions queued)",
            subject=again * 1e3,
            baseline=first * 1e3,
            unit="ms",
            subject_label="re-import",
            baseline_label="first import",
            ratio=again / first,
            goal="≤ 5% of the first",
            met=again <= 0.05 * first,
            extra={"rounds": rounds, "first_s": first, "again_s": again},
        ),
        Figure(
            key="claude_import_rss",
            title=f"peak RSS of the first import, against the largest session file ({largest_mb:.0f} MB)",
            subject=rss,
            baseline=largest_mb * 1e6 / 2**20,
            unit="MiB",
            subject_label="import child",
            baseline_label="largest file",
            ratio=rss / (largest_mb * 1e6 / 2**20),
            goal="≤ 4 × largest file + the interpreter",
            met=rss <= bound,
            notes=[f"the re-import child (reads no file) peaks at {reimport_rss:.0f} MiB; folder {total_mb:.0f} MB"],
            extra={"rounds": rounds, "peak_rss_mib": rss, "reimport_rss_mib": reimport_rss, "largest_mb": largest_mb, "folder_mb": total_mb},
        ),
        Figure(
            key="claude_huge_rss",
            title=f"peak RSS of importing one {huge_mb:.0f} MB session file (queued: {int(got['huge'][0]['n'])})",
            subject=huge_rss,
            baseline=huge_floor,
            unit="MiB",
            subject_label="import child",
            baseline_label="same modules, the file read line by line",
            ratio=huge_rss / huge_floor,
            goal=f"≤ {HUGE_GOAL_MIB} MB",
            met=huge_rss * 2**20 <= HUGE_GOAL_MIB * 1e6,
            extra={"rounds": rounds, "peak_rss_mib": huge_rss, "floor_rss_mib": huge_floor, "file_mb": huge_mb},
        ),
    ]
