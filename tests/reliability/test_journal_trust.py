"""The journal trusts nothing it reads.

An intent in `journal/` is a list of renames and deletions the next writer
carries out before anything else. Planted by hand (or by a stranger's tool
with write access to the store), it once made that writer delete a file
outside the store, move a symbolic link in as the rules file, or stop every
writer with a raw `ValueError`. Here each planted intent is met by a real
writer of a real store: nothing of it is done, the journal is set aside
whole and named in a warning, and the accept that follows goes through.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from mecha.core.learning.proposals import accept_proposal
from mecha.core.store.layout import INTENT_FILE, JOURNAL_ASIDE, JOURNAL_DIR
from mecha.core.store.learning_store import LearningStore, ProposalStatus
from tests.wire.helpers import proposal, reflexion, rule

PID = "20261201T000000-trust0001"
NEW = [rule("Ask before deleting files", "r-new")]
PRECIOUS = b"the person's own file\n"


def a_store(tmp_path: Path) -> LearningStore:
    store = LearningStore.open(tmp_path / "learning")
    store.append_reflexions([reflexion("r1")])
    store.write_proposal(proposal(PID, rules=NEW, reflexion_ids=["r1"]))
    store.commit("a proposal")
    return store


def plant(store: LearningStore, steps: list[dict[str, object]], staged: dict[str, bytes] | None = None) -> None:
    journal = store.root / JOURNAL_DIR
    journal.mkdir(mode=0o700, exist_ok=True)
    for name, data in (staged or {}).items():
        (journal / name).write_bytes(data)
    (store.root / INTENT_FILE).write_text(json.dumps({"what": "planted change", "steps": steps, "message": "planted"}))


def _outside(tmp_path: Path) -> Path:
    victim = tmp_path / "elsewhere" / "notes.txt"
    victim.parent.mkdir()
    victim.write_bytes(PRECIOUS)
    return victim


def _marks_absolute(store: LearningStore, tmp_path: Path) -> Path:
    victim = _outside(tmp_path)
    plant(store, [{"staged": str(victim), "target": "reflections.jsonl", "marks": ["r1"], "run_id": "x", "source": [0, 0]}])
    return victim


def _target_absolute(store: LearningStore, tmp_path: Path) -> Path:
    victim = _outside(tmp_path)
    plant(store, [{"staged": "0.notes.txt", "target": str(victim)}], {"0.notes.txt": b"overwritten\n"})
    return victim


def _target_climbs(store: LearningStore, tmp_path: Path) -> Path:
    victim = _outside(tmp_path)
    plant(store, [{"staged": "0.notes.txt", "target": "../elsewhere/notes.txt"}], {"0.notes.txt": b"overwritten\n"})
    return victim


def _staged_climbs(store: LearningStore, tmp_path: Path) -> Path:
    victim = _outside(tmp_path)
    plant(store, [{"staged": "../../elsewhere/notes.txt", "target": "rules/behavior.learned.toml"}])
    return victim


def _staged_link(store: LearningStore, tmp_path: Path) -> Path:
    victim = _outside(tmp_path)
    journal = store.root / JOURNAL_DIR
    journal.mkdir(mode=0o700)
    (journal / "0.behavior.learned.toml").symlink_to(victim)
    plant(store, [{"staged": "0.behavior.learned.toml", "target": "rules/behavior.learned.toml"}])
    return victim


def _staged_hard_link(store: LearningStore, tmp_path: Path) -> Path:
    victim = _outside(tmp_path)
    journal = store.root / JOURNAL_DIR
    journal.mkdir(mode=0o700)
    os.link(victim, journal / "0.behavior.learned.toml")
    plant(store, [{"staged": "0.behavior.learned.toml", "target": "rules/behavior.learned.toml"}])
    return victim


def _into_git(store: LearningStore, tmp_path: Path) -> Path:
    victim = _outside(tmp_path)
    plant(store, [{"staged": "0.post-commit", "target": ".git/hooks/post-commit"}],
          {"0.post-commit": b"#!/bin/sh\necho owned > " + str(victim).encode() + b"\n"})
    return victim


def _not_json(store: LearningStore, tmp_path: Path) -> Path:
    victim = _outside(tmp_path)
    (store.root / JOURNAL_DIR).mkdir(mode=0o700)
    (store.root / INTENT_FILE).write_bytes(b"{\"what\": ")
    return victim


PLANTED: dict[str, tuple[Callable[[LearningStore, Path], Path], str]] = {
    "a marks step with an absolute staged path": (_marks_absolute, "is not a name the store stages"),
    "an absolute target": (_target_absolute, "is not a path inside the store"),
    "a target climbing out": (_target_climbs, "is not a path inside the store"),
    "a staged path climbing out": (_staged_climbs, "is not a name the store stages"),
    "a staged symbolic link": (_staged_link, "is a symbolic link"),
    "a staged hard link": (_staged_hard_link, "a file with several names"),
    "a target in git's folder": (_into_git, "is in .git/"),
    "an intent that is not JSON": (_not_json, "is not a change this version can finish"),
}


@pytest.mark.parametrize("case", list(PLANTED))
def test_a_planted_intent_is_named_set_aside_and_the_store_goes_on(tmp_path: Path, case: str, caplog) -> None:
    # Pins: the next writer deleting a file outside the store (a marks
    # step's absolute `staged`), moving a staged symbolic link in as the
    # rules file, and an intent aimed outside wedging every writer (an
    # absolute one as a raw ValueError).
    store = a_store(tmp_path)
    make, said = PLANTED[case]
    victim = make(store, tmp_path)
    with caplog.at_level(logging.WARNING):
        accepted = accept_proposal(store, PID)
    assert accepted.status is ProposalStatus.ACCEPTED
    assert store.learned_rules("behavior") == NEW
    assert victim.read_bytes() == PRECIOUS, "a file outside the store was changed"
    assert not (store.root / ".git" / "hooks" / "post-commit").exists()
    [aside] = [p for p in store.root.iterdir() if p.name.startswith(JOURNAL_ASIDE)]
    assert (aside / "intent.json").exists(), "the intent was kept for a person to look at"
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert said in warned and str(aside) in warned and "nothing of it was done" in warned, warned
    assert not (store.root / JOURNAL_DIR).exists()
    status = os.popen(f"git -C {store.root} status --porcelain").read()
    assert JOURNAL_ASIDE not in status, "the set-aside journal went into history"


def test_a_true_intent_is_still_finished(tmp_path: Path) -> None:
    # The checks pass everything `Transaction` writes: a decided accept cut
    # short is finished by the next writer, as before.
    import msgspec

    from mecha.core.store import transaction

    store = a_store(tmp_path)
    p = msgspec.structs.replace(store.proposal(PID), status=ProposalStatus.ACCEPTED, resolved_at="2026-12-01T00:00:01Z")
    change = transaction.Transaction(store.root, f"accept of proposal {PID}")
    change.stage(*store.rules_files.render_learned("behavior", NEW))
    change.stage_marks(store.records, ["r1"], "run-1")
    change.stage(*store.proposal_files.render(p))
    change.decide(f"accept proposal {PID}")
    LearningStore.open(store.root)
    assert store.proposal(PID).status is ProposalStatus.ACCEPTED and store.learned_rules("behavior") == NEW
    assert not [p for p in store.root.iterdir() if p.name.startswith(JOURNAL_ASIDE)]
