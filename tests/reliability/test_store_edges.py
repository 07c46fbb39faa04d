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
