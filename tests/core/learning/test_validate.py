"""The counterfactual probe: its outcome table, which moments it picks, and
a pass against a real scripted server over HTTP."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mecha.core.domain.reflexion import FoundAt, Origin, Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.errors import InvalidInput, NotPending
from mecha.core.gate.candidate import is_holdout
from mecha.core.identity import now
from mecha.core.learning.validate import (
    CALLS_PER_PROBE,
    HOLDOUT_IN,
    JUDGE_CONTRACT,
    SKIP_HOLDOUT,
    SKIP_MOVED,
    SKIP_NO_TRANSCRIPT,
    SKIP_NOT_CLEAN,
    SKIP_ORIGIN,
    SKIP_SAME_BLOCK,
    SKIP_TRIGGER,
    plan_validation,
    prepare,
    probe_outcome,
    render_conversation,
    run_validation,
)
from mecha.core.providers import OpenAIProvider
from mecha.core.store.learning_store import LearningStore, ProposalStatus
from mecha.core.store.ledger import OUTCOMES
from tests import builders
from tests.builders import write_learned_rules
from tests.model_server import ModelServer, refusal, reply, stall


def holdout_ids(inside: bool = True) -> itertools.chain[str]:
    return (f"sess-{i}" for i in itertools.count() if is_holdout(f"sess-{i}", HOLDOUT_IN) == inside)  # type: ignore[return-value]


CORRECTION = "No, only change docs/RELEASE.md and leave the other files alone."


def write_session(folder: Path, session_id: str, *, untrusted: bool = False, correction: str = CORRECTION) -> Path:
    path = folder / f"{session_id}.json"
    path.write_text(json.dumps({
        "session_id": session_id,
        "interactive": True,
        "taint_timeline": [{"at": 0, "taint": {"untrusted": untrusted}}],
        "messages": [
            {"role": "user", "content": "Tidy up the release notes in docs/RELEASE.md."},
            {"role": "assistant", "content": "I tidied RELEASE.md and also rewrote docs/INSTALL.md."},
            {"role": "user", "content": correction},
            {"role": "assistant", "content": "Understood, I reverted INSTALL.md."},
        ],
    }))
    return path


def reflection(rid: str, session_id: str, file: Path | None, **over: Any) -> Reflexion:
    fields: dict[str, Any] = dict(
        session_id=session_id, trigger="followup", context="", intervention=CORRECTION,
        created_at=now(), found=FoundAt(at=2, file=str(file) if file else None, line=3),
    )
    return builders.reflexion(rid, "Change only the file the person names.", **(fields | over))


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    s = LearningStore.open(tmp_path / "learning")
    write_learned_rules(s, "behavior", [Rule(text="Change only the file the person names in the task.")])
    return s


# ─── the outcome table ──────────────────────────────────────────────────────


@pytest.mark.parametrize(("baseline", "treatment", "outcome"), [
    (False, True, "improved"),
    (True, False, "regressed"),
    (True, True, "unchanged_pass"),
    (False, False, "unchanged_fail"),
    (None, True, "inconclusive"),
    (True, None, "inconclusive"),
    (None, None, "inconclusive"),
    (False, None, "inconclusive"),
])
def test_the_pair_of_verdicts_gives_the_seeds_outcome(baseline: bool | None, treatment: bool | None, outcome: str) -> None:
    assert probe_outcome(baseline, treatment) == outcome
    assert outcome in OUTCOMES


def test_the_judge_contract_needs_the_verdict_and_reads_it_through_prose() -> None:
    assert JUDGE_CONTRACT.decode('Sure! {"still_needed": false, "reason": "it kept to RELEASE.md"}').still_needed is False
    assert JUDGE_CONTRACT.decode('{"reason": "no verdict given"}') is None
    assert JUDGE_CONTRACT.decode("The person would not have needed to say anything.") is None
    assert JUDGE_CONTRACT.schema()["required"] == ["still_needed", "reason"]


# ─── probe selection ────────────────────────────────────────────────────────


def test_a_probe_is_cut_before_the_turn_that_drew_the_correction(store: LearningStore, tmp_path: Path) -> None:
    sid = next(holdout_ids())
    store.append_reflexion(reflection("r1", sid, write_session(tmp_path, sid)))
    probes, plan = prepare(store, "behavior")
    [probe] = probes
    assert [m.text() for m in probe.prefix] == ["Tidy up the release notes in docs/RELEASE.md."]
    assert probe.corrected.text().startswith("I tidied RELEASE.md")
    assert plan.calls == CALLS_PER_PROBE and plan.probes[0].reflexion_id == "r1"
    live = store.render_block("behavior")
    assert probe.arms.treatment.rules_hash == live.rules_hash and plan.probes[0].rules_hash == live.rules_hash
    assert probe.arms.baseline.block is None, "the baseline carries none of the domain's learned rules"
    assert plan.probes[0].rule_ids == live.rule_ids


def test_clean_recoverable_followups_and_steers_are_probed_an_imported_file_whichever_half_it_is_in(
    store: LearningStore, tmp_path: Path
) -> None:
    # Pins: the person's real sessions planning no probe because half of
    # them fall outside the holdout, though their files can be read again
    # and no rule is measured on its own sources anyway; a handed-over
    # session outside it has no transcript kept, and says so.
    inside = holdout_ids()
    outsides = holdout_ids(inside=False)
    outside, handed_out = next(outsides), next(outsides)
    a, b, c, d, e, f = (next(inside) for _ in range(6))
    store.append_reflexions([
        reflection("keep", a, write_session(tmp_path, a)),
        reflection("out", outside, write_session(tmp_path, outside)),
        reflection("denial", b, write_session(tmp_path, b), trigger="denial"),
        reflection("untrusted", c, write_session(tmp_path, c), origin=Origin.UNTRUSTED),
        reflection("harness", d, None),
        reflection("harness-out", handed_out, None, trigger="steer"),
        reflection("moved", e, write_session(tmp_path, e, correction="Something else entirely now.")),
        reflection("tainted", f, write_session(tmp_path, f, untrusted=True)),
    ])
    plan = plan_validation(store, "behavior", budget=10)
    assert [p.reflexion_id for p in plan.probes] == ["keep", "out"]
    assert plan.skipped == {
        SKIP_HOLDOUT: 1, SKIP_TRIGGER: 1, SKIP_ORIGIN: 1, SKIP_NO_TRANSCRIPT: 1, SKIP_MOVED: 1, SKIP_NOT_CLEAN: 1,
    }
    # Every skip said by kind as well.
    assert plan.skipped_kinds[SKIP_HOLDOUT] == {"steer": 1} and plan.skipped_kinds[SKIP_TRIGGER] == {"denial": 1}
    assert sum(sum(k.values()) for k in plan.skipped_kinds.values()) == sum(plan.skipped.values())


def test_unmeasured_reflections_come_first_and_the_budget_bounds_the_plan(store: LearningStore, tmp_path: Path) -> None:
    ids = holdout_ids()
    sessions = [next(ids) for _ in range(3)]
    store.append_reflexions([reflection(f"r{i}", s, write_session(tmp_path, s)) for i, s in enumerate(sessions)])
    block = store.render_block("behavior")
    from mecha.core.store.ledger import ValidationRecord

    store.append_validation(ValidationRecord(
        reflexion_id="r0", trigger="followup", domain="behavior", rules_hash=block.rules_hash or "",
        rule_ids=block.rule_ids, outcome="improved", model="m", created_at=now(),
    ))
    plan = plan_validation(store, "behavior", budget=2)
    assert [p.reflexion_id for p in plan.probes] == ["r1", "r2"]
    assert plan.skipped == {"beyond the budget": 1}
    again = plan_validation(store, "behavior", budget=3)
    assert [(p.reflexion_id, p.measured_before) for p in again.probes] == [("r1", False), ("r2", False), ("r0", True)]
    with pytest.raises(InvalidInput, match="budget"):
        plan_validation(store, "behavior", budget=0)


def test_with_no_learned_rules_both_arms_would_be_the_same_and_nothing_is_probed(tmp_path: Path) -> None:
    store = LearningStore.open(tmp_path / "empty")
    sid = next(holdout_ids())
    store.append_reflexion(reflection("r1", sid, write_session(tmp_path, sid)))
    plan = plan_validation(store, "behavior")
    assert plan.probes == [] and plan.skipped == {SKIP_SAME_BLOCK: 1} and plan.calls == 0


def test_a_proposal_is_measured_against_the_live_block(store: LearningStore, tmp_path: Path) -> None:
    sid = next(holdout_ids())
    store.append_reflexion(reflection("r1", sid, write_session(tmp_path, sid)))
    live = store.learned_rules("behavior")
    added = Rule(text="Ask before touching a second file.", id="rule-new")
    p = builders.proposal("20260101T000000-p1", [*live, added], rules_before=live, created_at=now())
    store.write_proposal(p)
    [probe], plan = prepare(store, "behavior", proposal_id=p.id)
    assert probe.arms.baseline.rules_hash == store.render_block("behavior").rules_hash
    assert probe.arms.treatment.rules_hash == store.render_candidate("behavior", p.rules).rules_hash
    assert probe.arms.measured_ids() == ["rule-new"] and probe.arms.sole_difference() == "rule-new"
    assert plan.proposal_id == p.id
    with pytest.raises(InvalidInput, match="domain"):
        plan_validation(store, "writing", proposal_id=p.id)
    store.write_proposal(msgspec.structs.replace(p, status=ProposalStatus.REJECTED))
    with pytest.raises(NotPending):
        plan_validation(store, "behavior", proposal_id=p.id)


def test_a_probe_never_measures_a_rule_on_a_correction_among_its_own_sources(tmp_path: Path) -> None:
    # Pins: a rule learned from a correction "sparing" the person that very
    # correction, counted as its own success.
    from mecha.core.learning.validate import SKIP_OWN_SOURCE

    store = LearningStore.open(tmp_path / "own")
    ids = holdout_ids()
    a, b = next(ids), next(ids)
    own = Rule(text="Change only the file the person names in the task.", id="rule-own", sources=["r-a"])
    other = Rule(text="Say which files a change touched.", id="rule-other", sources=["r-elsewhere"])
    write_learned_rules(store, "behavior", [own, other])
    store.append_reflexions([reflection("r-a", a, write_session(tmp_path, a)), reflection("r-b", b, write_session(tmp_path, b))])
    probes, plan = prepare(store, "behavior", budget=5)
    by_id = {p.reflection.id: p for p in probes}
    assert by_id["r-a"].arms.measured_ids() == ["rule-other"], "its own rule is left out of the treatment"
    assert by_id["r-a"].arms.treatment.block is not None and own.text not in by_id["r-a"].arms.treatment.block
    assert by_id["r-a"].planned.rule_ids == ["rule-other"]
    assert by_id["r-b"].arms.measured_ids() == ["rule-own", "rule-other"]
    # With every measured rule learned from it, the correction measures nothing.
    write_learned_rules(store, "behavior", [own])
    plan = plan_validation(store, "behavior", budget=5)
    assert [p.reflexion_id for p in plan.probes] == ["r-b"] and plan.skipped == {SKIP_OWN_SOURCE: 1}


def test_a_proposals_rule_is_not_measured_on_its_own_sources(store: LearningStore, tmp_path: Path) -> None:
    from mecha.core.learning.validate import SKIP_OWN_SOURCE

    sid = next(holdout_ids())
    store.append_reflexion(reflection("r1", sid, write_session(tmp_path, sid)))
    live = store.learned_rules("behavior")
    added = Rule(text="Ask before touching a second file.", id="rule-new", sources=["r1"])
    p = builders.proposal("20260101T000000-p2", [*live, added], rules_before=live, reflexion_ids=["r1"], created_at=now())
    store.write_proposal(p)
    plan = plan_validation(store, "behavior", proposal_id=p.id)
    assert plan.probes == [] and plan.skipped == {SKIP_OWN_SOURCE: 1}


def test_a_verdict_measured_on_the_candidate_without_its_own_source_rules_is_the_proposals(
    store: LearningStore, tmp_path: Path
) -> None:
    # Pins: `validate --proposal ID` measuring a proposal and `proposals
    # show ID` still saying "not measured yet", because the probe left out
    # the rule resting on the probed correction and its hash never matched
    # the whole candidate's.
    from mecha.core.learning.validate import proposal_verdict
    from mecha.core.store.ledger import ValidationRecord

    sid = next(holdout_ids())
    store.append_reflexions([reflection("r1", sid, write_session(tmp_path, sid))])
    live = store.learned_rules("behavior")
    own = Rule(text="Ask before touching a second file.", id="rule-own", sources=["r1"])
    other = Rule(text="Keep each change to the files the person named.", id="rule-other", sources=["r-elsewhere"])
    p = builders.proposal("20260101T000000-p3", [*live, own, other], rules_before=live, reflexion_ids=["r1"], created_at=now())
    store.write_proposal(p)
    [probe] = plan_validation(store, "behavior", proposal_id=p.id).probes
    assert probe.rule_ids == ["rule-other"]
    probes, _ = prepare(store, "behavior", proposal_id=p.id)
    assert probes[0].arms.left_out == ("rule-own",)
    store.append_validation(ValidationRecord(
        reflexion_id="r1", trigger="followup", domain="behavior", rules_hash=probe.rules_hash, rule_ids=probe.rule_ids,
        outcome="improved", model="m", created_at=now(), proposal_id=p.id, left_out=["rule-own"],
    ))
    verdict = proposal_verdict(store, p)
    assert (verdict.probes, verdict.reduced, verdict.stale) == (1, 1, 0)
    assert verdict.measured.startswith("measured in 1 probe on m against the live rules: 1 improved")
    assert "1 of them without the rule learned from the very correction probed" in verdict.measured


def test_the_conversation_is_rendered_with_its_tools_and_bounded_to_its_tail() -> None:
    from mecha.core.sessions.transcript import Block, Message

    messages = [
        Message.user("x" * 5000),
        Message.assistant([Block.text_block("Reading."), Block.tool_use("t1", "fs_read", {"path": "a.md"})]),
        Message.tool_results([Block.tool_result("t1", "contents")]),
    ]
    text = render_conversation(messages, 300)
    assert len(text) < 400 and text.startswith("(earlier conversation left out)")
    assert '[calls tool fs_read: {"path":"a.md"}]' in text and "[tool result: contents]" in text


# ─── a pass against a real server ───────────────────────────────────────────


def judged(still_needed: bool) -> object:
    return reply(json.dumps({"still_needed": still_needed, "reason": "scripted"}))


async def test_each_whole_probe_is_recorded_and_a_garbage_judge_is_inconclusive_and_named(
    store: LearningStore, tmp_path: Path, model_server: ModelServer
) -> None:
    ids = holdout_ids()
    sessions = [next(ids) for _ in range(2)]
    store.append_reflexions([reflection(f"r{i}", s, write_session(tmp_path, s)) for i, s in enumerate(sessions)])
    probes, _ = prepare(store, "behavior")
    model_server.script(
        reply("I change RELEASE.md only."), judged(False), reply("I rewrite every doc."), judged(True),
        reply("I change RELEASE.md only."), reply("the judge rambles with no verdict"), reply("turn"), judged(True),
    )
    provider = OpenAIProvider(model_server.config("openai"))
    seen: list[tuple[int, int]] = []
    outcome = await run_validation(store, probes, provider, None, "scripted-model", counts=lambda d, t: seen.append((d, t)))
    assert outcome.stopped is None
    rows = store.validations()
    assert [(r.reflexion_id, r.outcome) for r in rows] == [("r0", "improved"), ("r1", "inconclusive")]
    assert rows[1].reason is not None and "judge of the treatment arm" in rows[1].reason
    assert rows[0].reason is None and rows[0].model == "scripted-model"
    assert seen == [(0, 8), (4, 8), (8, 8)]
    assert all(r.body.get("temperature") == 0 for r in model_server.completions())
    judge_bodies = [r.body for r in model_server.completions() if "response_format" in r.body]
    assert len(judge_bodies) == 4
    assert "inconclusive: the judge of the treatment arm: the reply held no JSON" in outcome.summary(2)


async def test_a_refused_turn_is_inconclusive_and_skips_its_judge(
    store: LearningStore, tmp_path: Path, model_server: ModelServer
) -> None:
    sid = next(holdout_ids())
    store.append_reflexion(reflection("r1", sid, write_session(tmp_path, sid)))
    probes, _ = prepare(store, "behavior")
    model_server.script(refusal(), reply("turn"), judged(True))
    outcome = await run_validation(store, probes, OpenAIProvider(model_server.config("openai")), None, "m")
    [row] = store.validations()
    assert row.outcome == "inconclusive" and "treatment arm's turn: the model refused" in (row.reason or "")
    assert len(model_server.completions()) == 3 and outcome.stopped is None


async def test_a_turn_cut_off_at_its_token_limit_is_still_judged(
    store: LearningStore, tmp_path: Path, model_server: ModelServer
) -> None:
    sid = next(holdout_ids())
    store.append_reflexion(reflection("r1", sid, write_session(tmp_path, sid)))
    probes, _ = prepare(store, "behavior")
    model_server.script(reply("I change RELEASE.md only and", stop="length"), judged(False), reply(""), judged(True))
    await run_validation(store, probes, OpenAIProvider(model_server.config("openai")), None, "m")
    [row] = store.validations()
    assert row.outcome == "inconclusive" and row.reason == "the baseline arm's turn: the model sent an empty reply"
    judged_turns = [r.body for r in model_server.completions() if "response_format" in r.body]
    assert len(judged_turns) == 1 and "I change RELEASE.md only and" in judged_turns[0]["messages"][1]["content"]


async def test_a_call_that_fails_outright_stops_the_pass_and_keeps_only_whole_probes(
    store: LearningStore, tmp_path: Path, model_server: ModelServer
) -> None:
    ids = holdout_ids()
    sessions = [next(ids) for _ in range(2)]
    store.append_reflexions([reflection(f"r{i}", s, write_session(tmp_path, s)) for i, s in enumerate(sessions)])
    probes, _ = prepare(store, "behavior")
    model_server.script(
        reply("a"), judged(True), reply("b"), judged(True),
        reply("c"), judged(False), stall(2.0), stall(2.0), stall(2.0),
    )
    cfg = model_server.config("openai", timeout_s=0.5, max_retries=0)
    outcome = await run_validation(store, probes, OpenAIProvider(cfg), None, "m")
    assert [r.reflexion_id for r in store.validations()] == ["r0"]
    assert outcome.stopped is not None and "nothing of the probe in progress" in outcome.summary(2)



def test_a_session_is_reread_with_the_trust_the_person_gave(store: LearningStore, tmp_path: Path, monkeypatch) -> None:
    # Pins: validate rereading a session with the default trust, so every
    # lesson learned under the person's own trust was "no longer clean".
    from tests.core.ccfixture import Claude, text, use

    sid = next(s for s in (f"a1b2c3d4-0000-4000-8000-{n:012d}" for n in range(100)) if is_holdout(s, HOLDOUT_IN))
    session = (
        Claude(session=sid)
        .user("List the open issues and fix the first one.")
        .assistant(text("Checking the tracker."), use("t1", "Bash", command="bd list"))
        .result("t1", "#12 totals round half-up")
        .assistant(text("Fixed #12 and closed every other issue too."))
        .user("Only close the issue you fixed.")
    )
    path = tmp_path / f"{sid}.jsonl"
    path.write_bytes(session.bytes())
    store.append_reflexion(reflection("r-bd", sid, path, intervention="Only close the issue you fixed.",
                                      found=FoundAt(at=4, file=str(path), line=6)))
    config = tmp_path / "sidecar.toml"
    monkeypatch.setenv("MECHA_SIDECAR_CONFIG", str(config))
    plan = plan_validation(store, "behavior")
    assert plan.probes == [] and plan.skipped == {SKIP_NOT_CLEAN: 1}, "`bd` is nobody's program by default"
    config.write_text('[trust]\nallow = ["Bash(bd)"]\n')
    plan = plan_validation(store, "behavior")
    assert [p.reflexion_id for p in plan.probes] == ["r-bd"], plan.skipped


def test_an_imported_session_is_read_again_with_the_trust_it_was_imported_with(
    store: LearningStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pins: a correction learned as clean under `trust add 'Bash(bd)'`
    # never probed once the entry was taken out of the config file, because
    # validate read the file again under the trust of the day.
    from mecha.core.learning.validate import SKIP_NOT_CLEAN
    from mecha.core.store.records import ImportRecord
    from tests.core.ccfixture import Claude, text, use

    monkeypatch.setenv("MECHA_SIDECAR_CONFIG", str(tmp_path / "no-config.toml"))  # no standing trust now
    c = Claude(session="c0ffee00-0000-4000-8000-000000000001", cwd=str(tmp_path))
    c.user("Close the stale issues in the tracker.")
    c.assistant(use("t1", "Bash", command="bd list --status open"))
    c.result("t1", "issue-1 open\nissue-2 open")
    c.assistant(text("I closed both issues."))
    c.user(CORRECTION)
    c.assistant(text("Understood."))
    path = tmp_path / "claude.jsonl"
    path.write_bytes(c.bytes())
    store.append_reflexions([reflection("r-bd", "claude:c0ffee00-0000-4000-8000-000000000001", path, found=FoundAt(at=0, file=str(path), line=5))])
    assert plan_validation(store, "behavior", budget=5).skipped == {SKIP_NOT_CLEAN: 1}

    with store.lock():
        store.append_imports([ImportRecord(source="claude", path=str(path), size=1, mtime_ns=1,
                                           session_id="claude:c0ffee00-0000-4000-8000-000000000001",
                                           trust=["Bash(bd)"])])
    plan = plan_validation(store, "behavior", budget=5)
    assert [p.reflexion_id for p in plan.probes] == ["r-bd"] and plan.skipped == {}
