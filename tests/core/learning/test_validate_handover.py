"""`validate` on sessions a harness handed over: the store keeps the holdout
half's transcripts, the reflections name them, and `validate --dry-run`
plans probes for the rules learned from those sessions — never measuring a
rule on a correction among its own sources.

The sessions are shaped like the real ones the issue counted: a task, the
assistant's answer, the person's correction, a fix. Handed over through the
same handler the harness's `mecha/sessionEnded` and `reflect --sessions`
call; reflected and learned through the real passes, the model scripted.
"""

from __future__ import annotations

import json
from pathlib import Path

from mecha.core.learning.consolidation import Learner
from mecha.core.learning.holdout import in_holdout
from mecha.core.learning.learn import learn_domain
from mecha.core.learning.proposals import accept
from mecha.core.learning.reflect import reflect_inbox
from mecha.core.learning.reflection import Reflector
from mecha.core.learning.validate import SKIP_HOLDOUT, SKIP_OWN_SOURCE, plan_validation
from mecha.core.providers.base import CompletionRequest
from mecha.core.sessions.transcript import Message, Taint, TaintCheckpoint
from mecha.core.store.inbox import queued_session_ids
from mecha.core.store.layout import transcripts_dir
from mecha.protocol import methods as m
from mecha.sidecar.context import Context
from mecha.sidecar.handlers.sessions import session_ended
from mecha.sidecar.rpc import Cancel
from tests.fakes import ScriptedProvider
from tests.model_server import _intervention_text, _learner_rules

#: (task, the assistant's answer, the person's correction, the lesson drawn).
MOMENTS = [
    ("Fix the rounding bug in invoices/totals.py.", "Fixed it, and I also reformatted the whole invoices/ package.",
     "Only touch totals.py; revert the reformatting of the other files.",
     "Change only the files the task names; leave the rest of the package as it is."),
    ("Add a test for the new discount rule.", "Added the test and pushed the branch to origin.",
     "Never push without asking me first.", "Ask before pushing any branch to a remote."),
    ("Why does the CI job fail?", "It probably fails because of a flaky network call.",
     "Quote the actual error from the log, don't guess.", "Quote the exact error from the log before explaining a failure."),
    ("Bump the requests dependency.", "Updated requirements.txt and regenerated the lockfile with pip-compile.",
     "We use uv here, not pip-compile; regenerate uv.lock instead.", "Use uv, not pip-compile, to update dependencies in this repository."),
    ("Rename calc_total to compute_total.", "Renamed it everywhere, including the public API.",
     "Keep the old name as a deprecated alias for the public API.", "When renaming a public function, keep the old name as a deprecated alias."),
    ("Make the report faster.", "Rewrote the report module in Rust for speed.",
     "Profile first and fix the slow query; no rewrites.", "Profile before optimising, and fix the measured hot spot rather than rewriting."),
    ("Tidy the release notes in docs/RELEASE.md.", "Tidied RELEASE.md and rewrote docs/INSTALL.md too.",
     "Leave INSTALL.md alone; only the release notes.", "Edit only the document the person names."),
    ("Run the tests.", "All good, the change works.",
     "You didn't run the suite; run pytest and show the result.", "Run the test suite and show its result before saying a change works."),
]

SESSION_IDS = [f"b7e2c0d4-91a6-4f3e-8c5b-2d7a9e1f{n:04x}" for n in range(len(MOMENTS))]


def transcript(task: str, answer: str, correction: str) -> list[Message]:
    return [Message.user(task), Message.assistant(answer), Message.user(correction), Message.assistant("Done, as you said.")]


def reflector_reply(request: CompletionRequest) -> str:
    said = " ".join(_intervention_text(request.user).split())
    lesson = next(lesson for _, _, correction, lesson in MOMENTS if correction in said)
    return json.dumps({"skip": False, "reflexion": lesson, "error_type": "overreach", "confidence": 0.8})


def learner_reply(request: CompletionRequest) -> str:
    return json.dumps({"rules": _learner_rules(request.user), "dropped": []})


async def test_validate_plans_probes_on_harness_sessions_from_the_transcripts_the_store_kept(tmp_path: Path, capsys) -> None:
    ctx = Context(root=tmp_path / "learning")
    clean = [TaintCheckpoint(at=0, taint=Taint())]
    for sid, (task, answer, correction, _) in zip(SESSION_IDS, MOMENTS, strict=True):
        ended = session_ended(ctx, m.SessionEndedParams(sid, transcript(task, answer, correction), clean), Cancel(), start_pass=False)
        assert ended.interventions == 1 and ended.learnable == 1
    store = ctx.store()
    held = [sid for sid in SESSION_IDS if in_holdout(sid)]
    assert 0 < len(held) < len(SESSION_IDS), "the ids fall on both sides of the split"
    kept = sorted(p.stem for p in Path(transcripts_dir(store.root)).glob("*.json"))
    assert kept == sorted(held), "only the holdout half's transcripts are kept"
    assert set(queued_session_ids(store)) == set(SESSION_IDS)

    await reflect_inbox(store, Reflector(ScriptedProvider(*[reflector_reply] * len(MOMENTS))))
    by_session = {r.session_id: r for r in store.reflexions()}
    assert all(by_session[s].found and by_session[s].found.file for s in held)
    assert all(by_session[s].found is None or by_session[s].found.file is None for s in SESSION_IDS if s not in held)

    outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(learner_reply)))
    assert outcome.proposal_id is not None and outcome.refusals == [], outcome.outcome
    accept(store, outcome.proposal_id)
    rules = store.learned_rules("behavior")
    assert len(rules) == len(MOMENTS)

    plan = plan_validation(store, "behavior", budget=20)
    with capsys.disabled():
        print(f"\nvalidate --dry-run on {len(SESSION_IDS)} handed-over sessions ({len(held)} in the holdout): "
              f"{len(plan.probes)} probe(s) planned, skipped {plan.skipped}")
    assert len(plan.probes) == len(held), plan.skipped
    assert plan.skipped == {SKIP_HOLDOUT: len(SESSION_IDS) - len(held)}
    for probe in plan.probes:
        own = [r.id for r in rules if probe.reflexion_id in r.sources]
        assert own and not set(own) & set(probe.rule_ids), "never measured on its own source"
        assert len(probe.rule_ids) == len(rules) - len(own)
    assert SKIP_OWN_SOURCE not in plan.skipped
