"""The server in a real Emacs, under the two clients Emacs users reach for,
neither of which knows anything of mecha: Debian 12's `emacs-nox` 28.2 with
`elpa-eglot` 1.9 and `elpa-lsp-mode` 8.0, installed by `python -m
tests.realparts emacs`.

`emacs --batch -l emacs_driver.el` configures the client as its manual says
(eglot: an `eglot-server-programs` entry for `conf-toml-mode` running
`mecha-sidecar lsp` with `:initializationOptions`; lsp-mode: a registered
client), opens the learned rules file, waits for the diagnostics the client
shows, then picks "Show diff of proposal …" and "Accept proposal …" from the
client's code-action menu the way a person picks from it (only
`completing-read` is answered by the script). It records every notification
and request the server sent as the client received them, and every warning
Emacs displayed; this side judges those and the store on disk.

Neither client can open a document a server names (no
`window/showDocument`), so the diff reaches them as a message, with the
path of the file the server wrote it to. Nothing here is faked between Emacs
and the store. A missing Emacs fails the test with the command that
installs it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mecha.core.domain.rules import Rule
from mecha.core.identity import mint_proposal_id, now
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus
from tests.realparts import manifest

DRIVER = Path(__file__).with_name("emacs_driver.el")

#: The two clients Emacs users reach for, as Debian packages them.
CLIENTS = ["eglot", "lsp-mode"]

#: What the Lisp side may spend on all its waits together, and on one.
BUDGET_MS = 90_000
STEP_MS = 30_000
KILL_AFTER_S = BUDGET_MS / 1000 + 30

LEARNED_RULES = """\
# Learned rules for behavior; edited only by accepting a proposal.
[[rules]]
id = "r-run-tests"
text = "Run the tests before saying a change works."
enabled = true
created_at = "2025-01-01T00:00:00.000000Z"
"""

NEW_RULE = "Quote the exact error message when reporting a failure."


def sidecar_command() -> Path:
    path = Path(sys.executable).parent / "mecha-sidecar"
    if not path.is_file():
        pytest.fail(f"`mecha-sidecar` is not installed next to {sys.executable}: `pip install -e .`", pytrace=False)
    return path


def build_store(root: Path) -> tuple[LearningStore, Proposal]:
    """A store with one learned rule and a pending proposal adding one."""
    store = LearningStore.open(root)
    (root / "rules" / "behavior.learned.toml").write_text(LEARNED_RULES, encoding="utf-8")
    store.commit("seed the Emacs test's store")
    before = store.learned_rules("behavior")
    proposal = Proposal(
        id=mint_proposal_id(),
        domain="behavior",
        status=ProposalStatus.PENDING,
        reflexion_ids=[],
        rules_before=before,
        rules=[*before, Rule(text=NEW_RULE, id="r-quote-errors", created_at=now())],
        evidence="seeded by the Emacs test",
        created_at=now(),
    )
    store.write_proposal(proposal)
    return store, proposal


def run_emacs(tmp_path: Path, driver: Path, params: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    """Run the driver in `emacs --batch` with a HOME of its own; its exit
    code, what it recorded, and its output."""
    emacs = manifest("emacs")["emacs"]
    home = Path(params["home"])
    home.mkdir(exist_ok=True)
    params_file = tmp_path / "params.json"
    params_file.write_text(json.dumps(params), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MECHA_")}
    env.update(HOME=str(home), MECHA_EMACS_TEST=str(params_file), MECHA_SIDECAR_CONFIG=str(home / "none.toml"))
    proc = subprocess.Popen(
        [emacs, "--batch", "-l", str(driver)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=KILL_AFTER_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"Emacs did not exit within {KILL_AFTER_S:.0f}s:\n{output.decode(errors='replace')}", pytrace=False)
    text = output.decode(errors="replace")
    results = Path(params["results"])
    if not results.exists():
        pytest.fail(f"Emacs exited {proc.returncode} without writing results:\n{text}", pytrace=False)
    seen = json.loads(results.read_text(encoding="utf-8"))
    # Emacs's JSON writes an empty list as `null`.
    return proc.returncode, {k: [] if v is None else v for k, v in seen.items()}, text


def sent(seen: list[list[Any]], method: str) -> list[dict[str, Any]]:
    return [params for m, params in seen if m == method]


@pytest.mark.parametrize("client", CLIENTS)
def test_emacs_shows_diagnostics_the_diff_and_an_accept_and_hears_nothing_it_does_not_know(
    client: str, tmp_path: Path
) -> None:
    """Pins each thing a person in Emacs met: the diff that showed nothing
    (a `mecha-proposal:` URI only our extensions open), the accept that said
    nothing, `mecha/*` notifications the client never asked for (lsp-mode
    warned on each), and a warning on stderr for the client's
    `workspace/didChangeConfiguration`."""
    root = tmp_path / "learning"
    store, proposal = build_store(root)
    params = {
        "client": client,
        "cmd": [str(sidecar_command()), "lsp"],
        "learning_dir": str(root),
        "learned": str(root / "rules" / "behavior.learned.toml"),
        "home": str(tmp_path / "home"),
        "results": str(tmp_path / "results.json"),
        "budget_ms": BUDGET_MS,
        "step_ms": STEP_MS,
    }
    started = time.monotonic()
    code, seen, output = run_emacs(tmp_path, DRIVER, params)
    report = f"Emacs exited {code} after {time.monotonic() - started:.1f}s; it saw:\n{json.dumps(seen, indent=1)}\n{output}"
    assert seen["errors"] == [], report
    assert code == 0, report
    assert seen["major_mode"] == "conf-toml-mode", report

    # Diagnostics, as flymake shows them: the pending proposal on line 1.
    diagnostics = seen["diagnostics"]
    assert any(line == 1 and "pending-proposal" in text for line, text in diagnostics), report

    # Show diff: the menu offered the review, the diff reached the client as a
    # message naming the file it was written to, and that file is the diff.
    titles = seen["actions"]
    for prefix in ("Accept proposal", "Reject proposal", "Show diff of proposal"):
        assert any(t.startswith(f"{prefix} {proposal.id}") for t in titles), report
    (diff_message,) = sent(seen["after_diff"], "window/showMessage")
    diff_file = root / "cache" / "diffs" / f"{proposal.id}.diff"
    assert diff_message["message"].startswith(f"mecha: proposal {proposal.id} (the diff is also in {diff_file}):"), report
    assert f"+- {NEW_RULE}" in diff_message["message"], report
    assert f"+- {NEW_RULE}" in diff_file.read_text(encoding="utf-8"), report
    assert seen["diff_requests"] == [], report  # neither client can open a document: none was asked

    # Accept: the store changed, and the client said so.
    accepted = [r.text for r in store.learned_rules("behavior")]
    assert accepted == [r.text for r in proposal.rules], report
    assert store.proposal(proposal.id).status == ProposalStatus.ACCEPTED, report
    (said,) = sent(seen["after_accept"], "window/showMessage")
    assert said["message"] == f"mecha: accepted proposal {proposal.id}; behavior now has 2 active learned rules", report
    assert f"accepted proposal {proposal.id}" in seen["messages"], report

    # Nothing eglot does not know, and nothing for it to warn about.
    everything = seen["notifications"] + seen["requests"]
    assert [m for m, _ in everything if m.startswith("mecha/")] == [], report
    assert seen["warnings"] == [], report
    assert "Ignoring notification" not in output and "Traceback" not in output, report
