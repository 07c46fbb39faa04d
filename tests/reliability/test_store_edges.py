"""Edges of the store a person's other tools can reach: a folder's own
`.gitignore` emptied by a sync tool, and the like."""

from __future__ import annotations

import subprocess
from pathlib import Path

from mecha.core.learning.holdout import keep_transcript
from mecha.core.sessions.transcript import Message
from mecha.core.store.learning_store import LearningStore


def _tracked(root: Path) -> list[str]:
    return subprocess.run(["git", "--git-dir", str(root / ".git"), "ls-files"], capture_output=True, text=True,
                          check=True).stdout.split()


def test_kept_transcripts_stay_out_of_history_when_their_folders_gitignore_is_emptied(tmp_path: Path) -> None:
    # Pins: a sync tool emptying `transcripts/.gitignore`, and the next pass
    # committing the kept transcripts (the store's own `.gitignore` did not
    # list the folder).
    store = LearningStore.open(tmp_path / "learning")
    kept = keep_transcript(store.root, "s-holdout", [Message(role="user", content="Quote of a stranger's page.")],
                           None, interactive=True)
    (kept.parent / ".gitignore").write_text("")
    with store.lock():
        store.commit("a pass after the sync tool")
    assert not [f for f in _tracked(store.root) if f.startswith("transcripts/")], _tracked(store.root)


def test_a_store_whose_unnamed_temp_files_are_refused_is_still_written(tmp_path: Path, monkeypatch) -> None:
    # Pins: `O_TMPFILE` refused with EACCES (a security module, a filesystem
    # refusing only that) failing every write of a writable store as "store
    # not writable".
    import errno
    import os

    from mecha.core.store import files

    real_open = os.open

    def refusing(path, flags, *args, **kw):
        if flags & getattr(os, "O_TMPFILE", 0) == getattr(os, "O_TMPFILE", -1):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", refusing)
    target = tmp_path / "f.json"
    files.write_atomic(target, b"whole\n")
    assert target.read_bytes() == b"whole\n" and [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_a_temp_file_that_cannot_be_named_falls_back_to_a_named_one(tmp_path: Path, monkeypatch) -> None:
    # Pins: naming the unnamed temp failing (`linkat` through /proc refused)
    # and every write ending in a raw traceback.
    import errno
    import os

    from mecha.core.store import files

    real_link = os.link

    def refusing(src, dst, *args, **kw):
        if kw.get("src_dir_fd") is not None:
            raise OSError(errno.ENOENT, "No such file or directory", str(src))
        return real_link(src, dst, *args, **kw)

    monkeypatch.setattr(os, "link", refusing)
    target = tmp_path / "f.json"
    files.write_atomic(target, b"whole\n")
    assert target.read_bytes() == b"whole\n" and [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_the_same_exchange_in_two_projects_is_queued_for_each(tmp_path: Path) -> None:
    # Pins: the fingerprint holding no project, so the second project's
    # correction was taken for the first's and learned in one project only,
    # while --dry-run said both would be queued.
    from mecha.core.agents.importing import import_sessions
    from mecha.core.sessions.mining import DEFAULT_VOICES
    from mecha.core.store.inbox import queued_sessions
    from tests.core.ccfixture import Claude, text

    root = tmp_path / "projects"
    for n, name in enumerate(["alpha", "beta"]):
        repo = tmp_path / "src" / name
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        cc = Claude(session=f"eeee000{n}-1111-4222-8333-444455556666", cwd=str(repo))
        cc.user("Tidy the changelog.").assistant(text("Rewrote every entry.")).user("No, keep each entry to one line.")
        cc.assistant(text("Done."))
        folder = root / f"-src-{name}"
        folder.mkdir(parents=True)
        (folder / "s.jsonl").write_bytes(cc.bytes())
    store = LearningStore.open(tmp_path / "learning")
    dry = import_sessions(store, "claude", root, voices=DEFAULT_VOICES, dry_run=True)
    import_sessions(store, "claude", root, voices=DEFAULT_VOICES)
    queued = queued_sessions(store, "")
    assert sorted(Path(q.project).name for q in queued if q.project) == ["alpha", "beta"], queued
    assert sum(len(s.fresh) for s in dry.sessions) == sum(len(q.plans) for q in queued) == 2


def test_doctor_names_a_session_end_the_hook_could_not_queue_until_it_is_read(tmp_path: Path) -> None:
    # Pins: a session that ended while the store's disk was full, lost to
    # the hooks with one hooks.log line and doctor silent.
    from mecha.core.agents.hookqueue import not_queued_words
    from mecha.core.agents.hooks import log_hook_run
    from mecha.core.doctor import run_checks

    store = LearningStore.open(tmp_path / "learning")
    full = OSError(28, "No space left on device")
    for sid in ("eeee0001-1111-4222-8333-444455556666", "eeee0002-1111-4222-8333-444455556666"):
        told = {"session_id": sid, "transcript_path": f"/home/pat/.claude/projects/p/{sid}.jsonl",
                "cwd": "/home/pat/proj", "event": "SessionEnd"}
        log_hook_run(store.root, "claude", "session-end", not_queued_words(told, full), session_id=sid,
                     cwd="/home/pat/proj")
    (hooks,) = [c for c in run_checks(store.root, env={}) if c.name == "hooks"]
    assert not hooks.ok and "2 session end(s)" in hooks.detail and "mecha-sidecar import claude" in hooks.detail, hooks
    # The next end of the same session queued it: one is left.
    log_hook_run(store.root, "claude", "session-end", "queued", session_id="eeee0001-1111-4222-8333-444455556666")
    (hooks,) = [c for c in run_checks(store.root, env={}) if c.name == "hooks"]
    assert not hooks.ok and "1 session end(s)" in hooks.detail, hooks
