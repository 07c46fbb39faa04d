"""A full disk, for real: the store on a small tmpfs filled to a few KiB free.

An accept is one change as far as the rules block can see: at every level
of free room tried, it either lands whole (rules, status, the marks of the
lessons its rules cite and the history commit) or fails with the named
`StoreFull` and leaves the rules and every mark as they were — or, once
decided, says it is kept and is finished by the next writer. Whichever way
it goes, a lesson the rules do not cite is never marked: it goes back to
the pool, and the answer's `next_pass` counts it among those that wait. A
reject then never leaves a rejected proposal's rules in the block, and no
method answers an internal error while the disk is full.

How it runs: the test mounts a 4 MiB tmpfs (`mount -t tmpfs -o size=…`,
owned by the test's user), as root when it is root, else through
passwordless `sudo -n` (a CI runner's). Where neither is allowed the test
fails, saying so, rather than skipping: a full disk is not something an
unprivileged stand-in (`RLIMIT_FSIZE`, a fake `os.write`) shows
faithfully, since git and the kernel decide where the room runs out. Run it
as root, in a container with CAP_SYS_ADMIN, or with passwordless sudo.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mecha.core.store.learning_store import LearningStore
from mecha.protocol import errors as codes
from tests.wire.client import Sidecar, SpawnSidecar
from tests.wire.conftest import spawn_sidecar  # noqa: F401 - the fixture
from tests.wire.helpers import assistant_text, open_store, proposal, reflexion, rule, steered

PID = "20261201T000000-full0001"
#: The proposal's batch: twelve lessons, of which its one rule cites three.
LESSONS = [f"r{i}" for i in range(12)]
CITED = ["r0", "r4", "r9"]
NEW = [rule("Ask before deleting files", "r-new", sources=CITED)]
LEVELS_KIB = (4, 8, 16, 32)
CLEAN_TIMELINE = [{"at": 0, "taint": {"private": False, "untrusted": False}}]


class SmallDisk:
    """A tmpfs of its own, filled to `fill(kib)` free by one filler file."""

    def __init__(self, mount: Path):
        self.mount = mount
        self.filler = mount / "filler"

    def fill(self, free_kib: int) -> int:
        """Leave about `free_kib` KiB free; the free KiB measured."""
        with open(self.filler, "ab") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        size = self.filler.stat().st_size
        os.truncate(self.filler, max(0, size - size % 4096 - free_kib * 1024))
        st = os.statvfs(self.mount)
        return st.f_bavail * st.f_frsize // 1024

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)


def _as_root(argv: list[str]) -> list[str]:
    """`argv` as root: itself when this process is, else through `sudo -n`
    (a CI runner's passwordless sudo), which fails at once where there is
    none rather than asking for a password."""
    return argv if os.geteuid() == 0 else ["sudo", "-n", *argv]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    mount = tmp_path / "fs"
    mount.mkdir()
    options = f"size=4m,mode=0700,uid={os.getuid()},gid={os.getgid()}"
    try:
        done = subprocess.run(
            _as_root(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)]), capture_output=True, text=True
        )
        said = done.stderr.strip() or f"exit status {done.returncode}"
    except FileNotFoundError as exc:  # no mount, or no sudo
        done, said = None, str(exc)
    if done is None or done.returncode != 0:
        pytest.fail(
            "this test needs a real full filesystem and mounts a small tmpfs for it, which needs root, "
            f"CAP_SYS_ADMIN or passwordless sudo; mounting said: {said}"
        )
    try:
        yield SmallDisk(mount)
    finally:
        subprocess.run(_as_root(["umount", "-l", str(mount)]), check=False, capture_output=True)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False).stdout


def a_store_with_a_proposal(root: Path) -> LearningStore:
    store = open_store(root)
    store.append_reflexions([reflexion(i) for i in LESSONS])
    store.write_proposal(proposal(PID, rules=NEW, reflexion_ids=LESSONS))
    store.commit("a proposal")
    return store


def ask(sc: Sidecar, method: str, params: dict) -> dict:
    """The whole reply, a result or an error."""
    reply: dict = sc.response(sc.request(method, params))
    return reply


def assert_named_full(err: dict) -> None:
    assert err["code"] == codes.INVALID_STORE, err
    assert err["data"]["name"] == "StoreFull", err
    assert "is full" in err["message"] and err["data"]["path"], err


def assert_one_change(store: LearningStore, where: str) -> None:
    """What the block shows agrees with what the proposal says, and so do
    the lessons' marks: accepted, exactly the lessons its rules cite are
    processed, all by the one accept; pending or rejected (a reject that
    names no change wrong), none is. No lesson is ever marked rejected: no
    change was called wrong."""
    status = store.proposal(PID).status.value
    learned = store.learned_rules("behavior")
    lessons = {r.id: r for r in store.reflexions()}
    assert sorted(lessons) == sorted(LESSONS), f"{where}: lessons {sorted(lessons)}"
    processed = sorted(i for i, r in lessons.items() if r.is_processed)
    assert not [i for i, r in lessons.items() if r.rejected], f"{where}: a lesson rejected though no change was called wrong"
    if status == "accepted":
        assert learned == NEW, f"{where}: accepted, yet the block holds {learned}"
        assert processed == sorted(CITED), f"{where}: accepted, yet {processed} are processed"
        assert len({lessons[i].leap_run_id for i in CITED}) == 1, f"{where}: the cited lessons were marked by two accepts"
        return
    assert status in ("pending", "rejected"), f"{where}: {status}"
    assert learned == [], f"{where}: {status}, yet its rules are live"
    assert processed == [], f"{where}: {status}, yet {processed} are marked processed"


def assert_answered_accept(result: dict, where: str) -> None:
    """An accept's answer names the lessons it used — the cited ones — and
    the ones left waiting for the next pass: the batch's other nine. No
    model is configured here, so it says how to set one and starts none."""
    assert result["proposal"]["status"] == "accepted", where
    assert sorted(result["used_lessons"]) == sorted(CITED), f"{where}: {result['used_lessons']}"
    after = result.get("next_pass")
    assert after is not None, f"{where}: nine lessons wait, yet the answer says nothing of a next pass"
    assert after["lessons"] == len(LESSONS) - len(CITED), f"{where}: {after}"
    assert after.get("job_id") is None, f"{where}: a pass started with no model configured: {after}"


@pytest.mark.parametrize("free_kib", LEVELS_KIB)
def test_an_accept_on_a_full_disk_is_whole_or_a_named_error_and_finishes_once_there_is_room(
    small_disk: SmallDisk, spawn_sidecar: SpawnSidecar, free_kib: int  # noqa: F811
) -> None:
    # Pins: at 4 KiB free the rules written and then a traceback, the
    # proposal still pending (a reject then left its rules in the block);
    # at 8-32 KiB an accept that "succeeded" with no commit.
    root = small_disk.mount / "learning"
    store = a_store_with_a_proposal(root)
    sc: Sidecar = spawn_sidecar(learning_dir=root, options={"learningDir": str(root)})
    measured = small_disk.fill(free_kib)
    assert measured <= free_kib + 4, measured
    reply = ask(sc, "mecha/acceptProposal", {"id": PID})
    where = f"{free_kib} KiB free"
    if "error" in reply:
        assert_named_full(reply["error"])
        assert_one_change(store, where)
        rejected = ask(sc, "mecha/rejectProposal", {"id": PID, "reason": "no room"})
        if "error" in rejected:
            assert rejected["error"]["code"] in (codes.INVALID_STORE, codes.NOT_PENDING), rejected
            if rejected["error"]["code"] == codes.INVALID_STORE:
                assert_named_full(rejected["error"])
        assert_one_change(store, where + ", after a reject")
    else:
        assert_answered_accept(reply["result"], where)
        assert git(root, "log", "-1", "--format=%s").startswith(f"accept proposal {PID}"), where
        assert_one_change(store, where)
    ended = ask(
        sc,
        "mecha/sessionEnded",
        {"session_id": "s-full", "messages": [*steered(), assistant_text("ok")], "taint_timeline": CLEAN_TIMELINE},
    )
    if "error" in ended:
        assert_named_full(ended["error"])

    small_disk.free()
    with LearningStore(root).lock():
        pass  # the next writer finishes what was kept
    assert_one_change(store, where + ", once there was room")
    status = store.proposal(PID).status.value
    if status == "pending":
        assert_answered_accept(sc.call("mecha/acceptProposal", {"id": PID}), where + ", accepted again")
    retried = ask(sc, "mecha/acceptProposal", {"id": PID})
    assert retried["error"]["code"] == codes.NOT_PENDING, f"{where}: a second accept was not refused: {retried}"
    assert_one_change(store, where + ", finished")
    # Finished once: one accept in the history, or none after a reject.
    accepts = [s for s in git(root, "log", "--format=%s").splitlines() if s.startswith(f"accept proposal {PID}")]
    assert len(accepts) == (store.proposal(PID).status.value == "accepted"), f"{where}: {accepts}"
    assert git(root, "status", "--porcelain") == "", git(root, "status", "--porcelain") + sc.stderr[-3000:]
    assert not (root / "journal" / "intent.json").exists()
    assert sc.call("mecha/sessionEnded", {"session_id": "s-room", "messages": [*steered()], "taint_timeline": CLEAN_TIMELINE})


def test_a_full_store_is_named_on_the_wire_under_the_invalid_store_code() -> None:
    # Pins: a full disk answered as a bare InvalidStore (or -32603), which a
    # client cannot tell from a store it may never write.
    from mecha.core.errors import InvalidStore, StoreFull
    from mecha.core.store.files import store_full

    full = codes.rpc_error_from(store_full("/s/reflections.jsonl", kept="nothing was changed"))
    assert (full.code, full.data) == (codes.INVALID_STORE, {"name": "StoreFull", "path": "/s/reflections.jsonl"})
    assert "is full" in full.message and "nothing was changed" in full.message
    plain = codes.rpc_error_from(InvalidStore("x", path="/s/a"))
    assert plain.data == {"name": "InvalidStore", "path": "/s/a"}
    assert isinstance(store_full("/s"), StoreFull)


CLAUDE_PROJECTS = Path(__file__).resolve().parents[1] / "fixtures" / "claude-code" / "projects"


@pytest.mark.parametrize("free_kib", LEVELS_KIB)
def test_an_import_on_a_full_disk_is_a_named_error_and_queues_each_session_once_there_is_room(
    small_disk: SmallDisk, tmp_path: Path, free_kib: int
) -> None:
    # Pins: an import on a full disk dying with a traceback, or naming a
    # staging file it never wrote as "kept".
    import shutil
    import sys

    from mecha.core.store.inbox import queued_session_ids
    from tests.e2e.conftest import clean_env

    home = tmp_path / "home"
    shutil.copytree(CLAUDE_PROJECTS, home / ".claude" / "projects")
    root = small_disk.mount / "learning"
    open_store(root)
    env = clean_env(tmp_path)

    def import_claude() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(root), "import", "claude", "--no-wait"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        )

    small_disk.fill(free_kib)
    full = import_claude()
    assert "Traceback" not in full.stderr, full.stderr[-3000:]
    if full.returncode != 0:
        assert "StoreFull" in full.stderr and "is full" in full.stderr, full.stderr[-2000:]
    small_disk.free()
    again = import_claude()
    assert again.returncode == 0, again.stderr[-2000:]
    store = LearningStore(root)
    waiting = queued_session_ids(store) | store.mined_sessions()
    assert any(s.startswith("claude:") for s in waiting), (full.stderr[-1000:], again.stdout)
    entries = [p for p in (root / "inbox").glob("*.json")]
    assert len(entries) <= 1, [p.name for p in entries]


def test_a_pass_that_fills_the_disk_records_its_named_failure_not_a_crash(small_disk: SmallDisk, tmp_path: Path) -> None:
    # Pins: a reflect pass on a disk that had filled could not write its
    # last record, so its job read "killed or crashed" and the StoreFull that
    # stopped it was nowhere.
    import sys

    import msgspec

    from mecha.core.identity import now
    from mecha.core.sessions.transcript import Message, Taint, TaintCheckpoint
    from mecha.core.store import jobs as jobs_mod
    from mecha.core.store.inbox import enqueue, session_entry
    from tests.e2e.conftest import clean_env
    from tests.model_server import ModelServer, lessons_responder

    root = small_disk.mount / "learning"
    store = open_store(root)
    messages = msgspec.convert(steered(), list[Message])
    enqueue(store, session_entry("full-pass", messages, [TaintCheckpoint(at=0, taint=Taint())]))
    job = jobs_mod.Job(id="reflect-full", kind="reflect", domain=None, state="running", started_at=now())
    jobs_mod.write_job(root, job)
    with ModelServer(responder=lessons_responder) as server:
        env = clean_env(tmp_path)
        env.update(MECHA_MODEL_API="openai", MECHA_MODEL_BASE_URL=server.url, MECHA_MODEL="scripted-model")
        small_disk.fill(4)
        done = subprocess.run(
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(root), "pass", "reflect", "--job", job.id],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    ended = jobs_mod.read_job(root, job.id)
    assert ended.state == "failed", (ended, done.stderr[-3000:])
    assert "StoreFull" in (ended.outcome or "") and "killed or crashed" not in (ended.outcome or ""), (ended, done.stderr[-3000:])
    small_disk.free()


def _fill_to_the_last_byte(disk: SmallDisk) -> None:
    """No room at all: what `fill` left free taken by a second filler."""
    disk.fill(0)
    try:
        with open(disk.filler, "ab") as f:
            while True:
                f.write(b"\0" * 512)
                f.flush()
    except OSError:
        pass


def _session_log_lines(root: Path, sid: str) -> list[str]:
    log = root / "logs" / "hooks.log"
    return [line for line in log.read_text().splitlines() if f" session-end session={sid}" in line]


@pytest.mark.parametrize("retried_by", ["session-start", "session-end", "import", "learn"])
def test_a_session_end_the_hook_could_not_queue_is_read_once_by_the_next_hook_import_or_learn(
    small_disk: SmallDisk, tmp_path: Path, retried_by: str
) -> None:
    # Pins: a session that ended while the store's disk was full lost to the
    # hooks — one hooks.log line, doctor naming it, and nothing reading it
    # until someone typed an import.
    import json
    import sys

    from mecha.core.agents.hooks import log_hook_run
    from mecha.core.doctor import run_checks
    from mecha.core.store.inbox import queued_session_ids
    from tests.core.ccfixture import Claude, text
    from tests.e2e.conftest import clean_env, wait_until
    from tests.processes import wait_for_hook_pass

    root = small_disk.mount / "learning"
    open_store(root)
    env = clean_env(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    sid = "f0110000-0000-4000-8000-000000000001"
    cc = Claude(session=sid, cwd=str(project))
    cc.user("Write the release notes.").assistant(text("Wrote four pages.")).user("No, keep them to one paragraph.")
    cc.assistant(text("Done."))
    transcript = tmp_path / "sessions" / f"{sid}.jsonl"
    transcript.parent.mkdir()
    transcript.write_bytes(cc.bytes())
    # An earlier hook's line: the log has room left in its last page, as a
    # log that has been written to does.
    log_hook_run(root, "claude", "session-start", "an earlier session")

    def run(*argv: str, payload: dict | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-P", "-m", "mecha.sidecar", *argv], input=json.dumps(payload or {}),
                              capture_output=True, text=True, env=env, cwd=project, timeout=120)

    def hook(which: str, session: str, path: Path) -> None:
        done = run("hook", "claude", which, "--learning-dir", str(root),
                   payload={"session_id": session, "transcript_path": str(path), "cwd": str(project),
                            "hook_event_name": "SessionEnd" if which == "session-end" else "SessionStart"})
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]

    def hooks_check() -> object:
        (check,) = [c for c in run_checks(root, env={}) if c.name == "hooks"]
        return check

    _fill_to_the_last_byte(small_disk)
    hook("session-end", sid, transcript)
    assert not (root / "hook-queue").exists() or not [p for p in (root / "hook-queue").iterdir() if p.suffix == ".json"]
    [failed] = _session_log_lines(root, sid)
    assert "could not queue" in failed, failed
    assert not hooks_check().ok  # type: ignore[attr-defined]

    small_disk.free()
    if retried_by == "session-start":
        hook("session-start", "f0110000-0000-4000-8000-000000000002", transcript)
    elif retried_by == "session-end":
        other = tmp_path / "sessions" / "other.jsonl"
        other.write_bytes(Claude(session="f0110000-0000-4000-8000-000000000003", cwd=str(project))
                          .user("Hello.").assistant(text("Hi.")).bytes())
        hook("session-end", "f0110000-0000-4000-8000-000000000003", other)
    elif retried_by == "import":
        (tmp_path / "no-sessions").mkdir()
        done = run("--learning-dir", str(root), "import", "claude", str(tmp_path / "no-sessions"), "--no-wait")
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
    else:
        done = run("--learning-dir", str(root), "learn", "behavior")
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
    wait_until(lambda: len(_session_log_lines(root, sid)) >= 2, "the lost session end to be read", timeout=60)
    wait_for_hook_pass(root)
    store = LearningStore(root)
    assert any(s.endswith(sid) for s in queued_session_ids(store) | store.mined_sessions()), _session_log_lines(root, sid)
    assert hooks_check().ok, hooks_check()  # type: ignore[attr-defined]

    # Read once: later hooks do not queue it again.
    hook("session-start", "f0110000-0000-4000-8000-000000000004", transcript)
    wait_for_hook_pass(root)
    lines = _session_log_lines(root, sid)
    assert len(lines) == 2 and "queued 1 new intervention" in lines[1], lines
