"""The store under faults a person's machine has: a commit message longer
than an argument may be, a filesystem with no room left. Against the real
sidecar process over the wire, and a real full filesystem."""

from __future__ import annotations

import subprocess
from pathlib import Path

import msgspec

from mecha.core.learning.proposals import MAX_REASON_CHARS
from mecha.protocol import errors as codes
from tests.wire.client import Sidecar, SpawnSidecar
from tests.wire.conftest import spawn_sidecar  # noqa: F401 - the fixture
from tests.wire.helpers import open_store, proposal, rule

PENDING = "20261201T000000-big00001"


def git_log(root: Path) -> list[str]:
    done = subprocess.run(
        ["git", "--git-dir", str(root / ".git"), "log", "--format=%B%x00"],
        capture_output=True, text=True, check=False,
    )
    return [m.strip() for m in done.stdout.split("\x00") if m.strip()]  # newest first; none before the first commit


def test_a_commit_message_longer_than_an_argument_may_be_is_still_committed(
    spawn_sidecar: SpawnSidecar,  # noqa: F811
) -> None:
    # Pins: a 128 KiB reject reason skipping the commit with "Argument list
    # too long": git got the message as one argument, and the kernel caps
    # an argument at 128 KiB. Here the long text is a proposal's evidence,
    # which the learner writes and an accept's message quotes.
    sc: Sidecar = spawn_sidecar()
    store = open_store(sc.learning_dir)
    evidence = "consolidated from reflections: " + "the person asked to keep the diff small. " * 5000
    assert len(evidence.encode()) > 200 * 1024
    store.write_proposal(
        msgspec.structs.replace(proposal(PENDING, rules=[rule("Keep diffs small", "r-1")]), evidence=evidence)
    )
    assert sc.call("mecha/acceptProposal", {"id": PENDING})["proposal"]["status"] == "accepted"
    log = git_log(sc.learning_dir)
    assert log and log[0].startswith(f"accept proposal {PENDING}"), log[:1]
    assert evidence.strip() in log[0]
    assert "Argument list too long" not in sc.stderr, sc.stderr[-2000:]


def test_a_reject_reason_over_the_bound_is_invalid_params_naming_it_and_changes_nothing(
    spawn_sidecar: SpawnSidecar,  # noqa: F811
) -> None:
    # Pins: a reason of any length taken, so one over 128 KiB left the
    # reject uncommitted; the bound is the protocol's, and says so.
    sc: Sidecar = spawn_sidecar()
    store = open_store(sc.learning_dir)
    store.write_proposal(proposal(PENDING))
    store.commit("a proposal")
    before = (sc.learning_dir / "proposals" / f"{PENDING}.json").read_bytes()
    for method, params in (
        ("mecha/rejectProposal", {"id": PENDING, "reason": "x" * (MAX_REASON_CHARS + 1)}),
        ("mecha/rejectProposal", {"id": PENDING, "reason": "too broad " * 20_000}),
        ("mecha/proposeRetirement", {"domain": "behavior", "rule_id": "r-new", "reason": "y" * (MAX_REASON_CHARS + 1)}),
    ):
        err = sc.error(method, params)
        assert err["code"] == codes.INVALID_PARAMS, err
        assert err["message"].startswith("reason:") and str(MAX_REASON_CHARS) in err["message"], err
    assert (sc.learning_dir / "proposals" / f"{PENDING}.json").read_bytes() == before
    # At the bound it is taken whole, and committed.
    reason = "r" * MAX_REASON_CHARS
    assert sc.call("mecha/rejectProposal", {"id": PENDING, "reason": reason})["proposal"]["reason"] == reason
    assert reason in git_log(sc.learning_dir)[0]
