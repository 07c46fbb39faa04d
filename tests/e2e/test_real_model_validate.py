"""`validate` against the real local model (SmolLM2-135M-Instruct on the
local server, installed by `python -m tests.realparts llama`), through the
real CLI, with a request recording proxy in front of the server.

The model is tiny, so this asserts the probe's mechanics, not its wisdom: a
dry run calls nothing; each probe is at most four calls, all at temperature
0, two of them judge calls carrying the judge's reply contract; the pass
ends `done` with one ledger row per probe, keyed to the block measured and
the model's name, whose outcome agrees with what the judge replies decode to
(a reply that meets no contract is an inconclusive row that says so); and
`tallies` and `proposals show` report what was measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mecha.core.domain.reflexion import FoundAt, Origin, Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.gate.candidate import is_holdout
from mecha.core.identity import now
from mecha.core.learning.validate import HOLDOUT_IN, JUDGE_CONTRACT, probe_outcome
from mecha.core.sessions.foreign import read_session
from mecha.core.sessions.mining import locate_followup
from mecha.core.store.learning_store import LearningStore, Proposal, ProposalStatus
from mecha.sidecar.localmodel import MODEL_ID, LocalServer
from tests.builders import write_learned_rules
from tests.core.ccfixture import Claude, text
from tests.e2e.conftest import store_lines
from tests.e2e.test_real_model import local_model
from tests.recording_proxy import RecordingProxy

#: A CPU-only 135M model on a shared 2-core machine: a call takes seconds to
#: a minute.
PASS_TIMEOUT_S = 1500.0
TASK = "Tidy the release notes in docs/RELEASE.md."
CORRECTION = "No, only change docs/RELEASE.md and leave the other files alone."
RULE = Rule(text="Change only the file the person names in the task.", id="r-20261202-0000aaaa")


def seeded_store(root: Path, sessions: Path) -> str:
    """A live rule, and one clean follow-up reflection of a held-out Claude
    Code session on disk, found where an import would have found it."""
    session_id = next(s for s in (f"a1b2c3d4-0000-4000-8000-{i:012d}" for i in range(10_000)) if is_holdout(s, HOLDOUT_IN))
    c = Claude(session=session_id, cwd="app")
    c.user(TASK).assistant(text("Done: I tidied RELEASE.md and rewrote docs/INSTALL.md as well."))
    c.user(CORRECTION).assistant(text("Understood, I put INSTALL.md back."))
    sessions.mkdir(parents=True)
    path = sessions / f"{session_id}.jsonl"
    path.write_bytes(c.bytes())
    read = read_session(path)
    at = locate_followup(read.messages, CORRECTION)
    assert at is not None
    store = LearningStore.open(root)
    write_learned_rules(store, "behavior", [RULE])
    store.append_reflexion(Reflexion(
        id="20261202T100000-0000aaaa", domain="behavior", session_id=session_id, trigger="followup", context="",
        intervention=CORRECTION, reflexion_text=RULE.text, created_at=now(), origin=Origin.CLEAN,
        found=FoundAt(at=at, file=str(path), line=read.lines[at] if read.lines else None),
    ))
    store.commit("seed")
    return session_id


def cli(env: dict[str, str], store_dir: Path, url: str, *argv: str) -> subprocess.CompletedProcess[str]:
    run_env = dict(env, MECHA_MODEL_API="openai", MECHA_MODEL_BASE_URL=url, MECHA_MODEL=MODEL_ID, MECHA_MODEL_TIMEOUT_S="600")
    done = subprocess.run(
        [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(store_dir), *argv],
        env=run_env, capture_output=True, text=True, timeout=PASS_TIMEOUT_S,
    )
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    return done


def judge_verdicts(exchanges: list[Any]) -> list[bool | None]:
    """What each answered judge call said, in order: spared (`True`), still
    needed (`False`), or no verdict (`None`, a reply meeting no contract)."""
    out: list[bool | None] = []
    for e in exchanges:
        fmt = e.request.get("response_format") or {}
        if e.status != 200 or not fmt:
            continue
        reply = JUDGE_CONTRACT.decode(e.response["choices"][0]["message"]["content"] or "")
        out.append(None if reply is None else not reply.still_needed)
    return out


def test_validate_runs_its_probes_on_the_real_local_model(env: dict[str, str], store_dir: Path, tmp_path: Path) -> None:
    model_file = local_model()
    seeded_store(store_dir, tmp_path / "claude")
    store = LearningStore.open(store_dir)
    live = store.render_block("behavior")

    with LocalServer(model_file, log=tmp_path / "llama.log") as llama, RecordingProxy(llama.base_url) as proxy:
        dry = cli(env, store_dir, proxy.url, "validate", "behavior", "--dry-run", "--json")
        plan = json.loads(dry.stdout)["plan"]
        assert plan["calls"] == 4 and [p["trigger"] for p in plan["probes"]] == ["followup"]
        assert proxy.completions() == [], "a dry run calls nothing"

        ran = cli(env, store_dir, proxy.url, "validate", "behavior", "--budget", "1")
        assert "(validate behavior): done — 1 of 1 probe(s) recorded on " + MODEL_ID in ran.stdout, ran.stdout
        exchanges = proxy.completions()
        [row] = store_lines(store_dir, "validations.jsonl")
        assert (row["model"], row["rules_hash"], row["rule_ids"]) == (MODEL_ID, live.rules_hash, [RULE.id])
        answered = [e for e in exchanges if e.status == 200]
        assert 2 <= len(answered) <= 4 and all(e.request.get("temperature") == 0 for e in exchanges)
        judged = [e for e in exchanges if e.request.get("response_format")]
        assert all(_names_the_judge_contract(e.request) for e in judged)
        verdicts = judge_verdicts(exchanges)
        if len(verdicts) == 2:
            assert row["outcome"] == probe_outcome(verdicts[1], verdicts[0]), (row, verdicts)
        else:
            assert row["outcome"] == "inconclusive" and "turn" in row["reason"], row
        if row["outcome"] == "inconclusive":
            assert row["reason"], "an inconclusive row says why"

        tallies = cli(env, store_dir, proxy.url, "tallies").stdout
        assert f"{RULE.id}: rode in 1 probe on {MODEL_ID}:" in tallies, tallies

        # A pending proposal that adds a rule, measured before anyone accepts it.
        added = Rule(text="Ask before touching any file the task does not name.", id="r-20261202-0000bbbb")
        p = Proposal(id="20261202T110000-0000cccc", domain="behavior", status=ProposalStatus.PENDING,
                     reflexion_ids=[], rules_before=[RULE], rules=[RULE, added], evidence="", created_at=now())
        store.write_proposal(p)
        cli(env, store_dir, proxy.url, "validate", "behavior", "--proposal", p.id, "--budget", "1")
        rows = store_lines(store_dir, "validations.jsonl")
        assert rows[-1]["proposal_id"] == p.id and rows[-1]["rule_ids"] == [added.id]
        shown = cli(env, store_dir, proxy.url, "proposals", "show", p.id).stdout
        assert f"verdict: measured in 1 probe on {MODEL_ID} against the live rules: " in shown, shown


def _names_the_judge_contract(body: dict[str, Any]) -> bool:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return bool(fmt["json_schema"]["name"] == JUDGE_CONTRACT.name)
    return bool(fmt.get("type") == "json_object" and fmt.get("schema") == JUDGE_CONTRACT.schema())
