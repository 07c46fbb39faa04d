"""The holdout: which sessions `validate` may probe, and the transcripts the
store keeps so that it can.

A probe replays the conversation before a corrected turn, so it needs the
conversation. An imported session has its file on the person's disk, which
`validate` reads again. A session the harness hands over (`mecha/sessionEnded`,
and `reflect --sessions`, which hands each file over the same way) left
nothing to read again: the inbox keeps only what the survey found, and on
the real sessions `validate` planned no probe at all.

Two ways were open: the hand-over could name a file for `validate` to read
again, or the store could keep the transcript. The store keeps it, because
only the store can promise the file is still there, unchanged, when a probe
comes: a harness's own transcript files are rotated, compacted or deleted
on the harness's schedule, and a path to one says nothing of what it will
hold in a month. The cost is bounded by the holdout itself: only a session
in the holdout half (`in_holdout`, the same deterministic split `validate`
probes) is kept, and only when it has a lesson that could be learned from
it. It is kept in the mecha transcript format (`sessions.files`), so the
one session reader `validate` uses reads it back, with its taint timeline
and whether it was interactive, as it was handed over.

Kept under `transcripts/`, owner-only and git-ignored like the inbox: a
transcript may quote a stranger's text and the person's own words, and the
store's history must never carry either.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from mecha.core.sessions.files import SessionFile
from mecha.core.sessions.transcript import Message, TaintCheckpoint
from mecha.core.store.files import ensure_ignored_dir, refuse_links, write_atomic
from mecha.core.store.layout import is_holdout, transcripts_dir

#: One session in this many is held out for `validate` (`layout.is_holdout`).
HOLDOUT_IN = 2


def in_holdout(session_id: str) -> bool:
    """Whether `validate` may probe the session `session_id`."""
    return is_holdout(session_id, HOLDOUT_IN)


def transcript_path(root: Path, session_id: str) -> Path:
    """Where the kept transcript of `session_id` lives (an id the store
    has already checked is a record id: no separator, no `..`)."""
    return Path(transcripts_dir(root)) / f"{session_id}.json"


def keep_transcript(
    root: Path,
    session_id: str,
    messages: Sequence[Message],
    taint_timeline: Sequence[TaintCheckpoint] | None,
    *,
    interactive: bool,
) -> Path:
    """Write the transcript of a handed-over session where `validate` reads
    it again, whole and owner-only, and return its path. Written again
    unchanged when the same session is handed over twice."""
    path = transcript_path(root, session_id)
    ensure_ignored_dir(path.parent, root=root)
    refuse_links(root, path)
    kept = SessionFile(
        session_id=session_id,
        messages=list(messages),
        taint_timeline=None if taint_timeline is None else list(taint_timeline),
        interactive=interactive,
    )
    write_atomic(path, msgspec.json.encode(kept))
    return path
