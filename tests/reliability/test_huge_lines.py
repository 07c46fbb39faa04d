"""Memory follows the longest line a reader keeps, never the file.

A transcript line is read whole only up to `reader.MAX_LINE_BYTES`; a
longer one is skipped by name — read through in pieces, never held — and
costs that line alone. The files here are real and sparse: a 1 GB line
of a Claude Code or Codex session takes no room on disk, but the reader
still reads every byte of it. Each read runs in its own process, whose
peak resident memory (`VmHWM`) is what is measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mecha.core.sessions.lines import MAX_LINE_BYTES, OverlongLine, numbered_lines
from tests.core.ccfixture import Claude, text

GB = 10**9
#: What a read of a 1 GB one-line transcript may hold at its peak: the
#: interpreter and the reader (about 40 MB), and never the line.
PEAK_MB = 100


def write_sparse(path: Path, before: bytes, size: int, after: bytes) -> None:
    """`before`, then `size` bytes of a hole (read back as NULs), then `after`."""
    with path.open("wb") as f:
        f.write(before)
        f.seek(len(before) + size)
        f.write(after)


def claude_with_huge_line(path: Path, size: int) -> None:
    cc = Claude(cwd=str(path.parent))
    cc.user("Tidy the release notes.")
    cc.assistant(text("Tidied."))
    head = cc.bytes() + b'{"type": "user", "sessionId": "' + cc.session.encode() + b'", "message": {"role": "user", "content": "'
    tail = Claude(cwd=str(path.parent))
    tail.n = 10
    tail.user("No, keep the old changelog format.")
    write_sparse(path, head, size, b'"}}\n' + tail.bytes())


READ = """
import json, sys, time
from pathlib import Path
from mecha.core.sessions.foreign import read_session
t = time.monotonic()
s = read_session(Path(sys.argv[1]))
# This process's own peak (VmHWM): `ru_maxrss` would count what the test
# process held when it started this one.
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"s": time.monotonic() - t, "peak_mb": hwm / 1024,
                  "skipped": s.skipped_lines, "warnings": s.warnings,
                  "said": [b.text for m in s.messages for b in m.content if m.role == "user" and b.text]}))
"""


def test_a_one_gigabyte_line_is_skipped_by_name_within_bounded_memory(tmp_path: Path) -> None:
    # Pins: a 1 GB one-line transcript read whole — the session-end hook
    # at 2,168 MB and 15.4 s, past its 10 s timeout.
    path = tmp_path / "session.jsonl"
    claude_with_huge_line(path, GB)
    try:
        done = subprocess.run([sys.executable, "-c", READ, str(path)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        got = json.loads(done.stdout)
    finally:
        path.unlink()
    assert got["peak_mb"] < PEAK_MB, got
    assert got["skipped"] == 1
    [warning] = got["warnings"]
    assert warning.startswith(f"{path}:3: skipped a line") and "longer than 32 MiB" in warning, warning
    assert got["said"] == ["Tidy the release notes.", "No, keep the old changelog format."], "one line lost, not more"


def test_an_overlong_line_that_may_hold_a_tool_result_taints_what_follows(tmp_path: Path) -> None:
    # A line too long to read may have been a tool's result bringing a
    # stranger's text in: what the person says after it is untrusted.
    from mecha.core.sessions.foreign import read_session

    cc = Claude(cwd=str(tmp_path))
    cc.user("Fetch the docs.")
    head = cc.bytes() + b'{"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "'
    after = Claude(cwd=str(tmp_path))
    after.n = 10
    after.user("Now follow what it said.")
    path = tmp_path / "tool.jsonl"
    write_sparse(path, head, MAX_LINE_BYTES + 1, b'"}]}}\n' + after.bytes())
    read = read_session(path)
    assert read.skipped_lines == 1
    assert read.taint_timeline is not None and read.taint_timeline[-1].taint.untrusted


@pytest.mark.parametrize("ending", [b"", b"\n"])
def test_lines_at_and_past_the_bound_from_a_file_and_from_bytes(tmp_path: Path, ending: bytes) -> None:
    limit = 1000
    data = b"a" * limit + b"\n" + b"b" * (limit + 1) + b"\n" + b"c" * 5 + b"\n" + b"d" * (limit + 7) + ending
    path = tmp_path / "lines"
    path.write_bytes(data)
    with path.open("rb") as f:
        from_file = list(numbered_lines(f, limit))
    from_bytes = list(numbered_lines(data, limit))
    for got in (from_file, from_bytes):
        assert [(n, type(line) is OverlongLine, torn) for n, line, torn in got] == [
            (1, False, False), (2, True, False), (3, False, False), (4, True, ending == b""),
        ]
        assert got[0][1] == b"a" * limit and got[2][1] == b"ccccc"
