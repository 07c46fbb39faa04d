"""A rule's record from the person's own sessions: the reflector names the
live rules a correction repeats at no extra call, the repeat is kept on the
rule, the sessions it reached are counted from the session-start hook's
records, and a rule corrected again twice gets a rewrite proposal — all in
process, with a real store and a scripted model."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from mecha.core.agents.started import rule_line_hash, start_line
from mecha.core.domain.record import SessionStart
from mecha.core.errors import InvalidInput
from mecha.core.learning.consolidation import Learner
from mecha.core.learning.learn import learn_domain, learn_refusal
from mecha.core.learning.record import (
    HARNESS_AGENT,
    REWRITE_AFTER_REPEATS,
    StoreView,
    harness_start,
    live_records,
    new_repeats,
    retirements_due,
    rewrites_due,
)
from mecha.core.learning.record import rule_line_hash as rendered_line_hash
from mecha.core.learning.reflect import reflect_inbox
from mecha.core.learning.reflection import Reflector, reflector_user_prompt
from mecha.core.sessions.transcript import Message, Taint, TaintCheckpoint
from mecha.core.store.inbox import enqueue, session_entry
from mecha.core.store.learning_store import LearningStore, ProposalStatus
from tests import builders
from tests.fakes import ScriptedProvider

CLEAN = [TaintCheckpoint(at=0, taint=Taint())]
RULE = builders.rule("Never push to main; open a pull request instead.", id="r-20261101-aaaaaaaa",
                     created_at="2026-11-01T10:00:00.000000Z", sources=["x-1", "x-2"])
OTHER = builders.rule("Indent with two spaces, never tabs.", id="r-20261101-bbbbbbbb",
                      created_at="2026-11-01T10:00:00.000000Z")
ACCEPTED = "2026-11-02T09:00:00.000000Z"


def correction(words: str) -> list[Message]:
    return [
        Message.user("Ship the release notes."),
        Message.assistant("Pushed the notes straight to main."),
        Message.user(words),
        Message.assistant("Sorry; I opened a pull request instead."),
    ]


def answer(lesson: str, repeats: list[str]) -> str:
    return json.dumps({"skip": False, "reflexion": lesson, "error_type": "overreach", "confidence": 0.8,
                       "repeats": repeats})


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    s = LearningStore.open(tmp_path / "learning")
    builders.write_learned_rules(s, "behavior", [OTHER, RULE])
    s.write_proposal(builders.proposal(
        "p-accepted", [OTHER, RULE], status=ProposalStatus.ACCEPTED, resolved_at=ACCEPTED, rules_before=[OTHER],
    ))
    return s


async def test_the_reflector_is_shown_the_live_rules_and_its_repeat_is_kept_on_the_rule(store: LearningStore):
    # Pins: a correction of a live rule recorded as a lesson like any other,
    # with nothing on the rule to say it was not followed.
    enqueue(store, session_entry("s-later", correction("You pushed to main again; open a pull request."), CLEAN))
    model = ScriptedProvider(answer("Open a pull request; never push to main.", ["l2 ", "L9", "L2"]))
    outcome = await reflect_inbox(store, Reflector(model))
    assert "<live-rules>\nL1: Indent with two spaces, never tabs.\nL2: Never push to main" in model.requests[0].user
    assert "Name a rule in repeats only when this correction is about what that rule directs" in model.requests[0].system
    assert outcome.repeats == 1 and "1 correction(s) of a live rule" in outcome.summary()
    [repeat] = store.repeats()
    [lesson] = store.reflexions()
    assert (repeat.rule_id, repeat.session_id, repeat.reflexion_id) == (RULE.id, "s-later", lesson.id)
    assert repeat.text == "You pushed to main again; open a pull request." and repeat.at == 2


async def test_a_skip_that_names_a_repeat_still_records_it_and_a_second_pass_adds_none(store: LearningStore):
    # Pins: "nothing new to learn" losing the fact that the rule was not
    # followed; a session reflected again counting its repeat twice.
    enqueue(store, session_entry("s-later", correction("Again you pushed to main."), CLEAN))
    await reflect_inbox(store, Reflector(ScriptedProvider(json.dumps({"skip": True, "repeats": ["L2"]}))))
    [repeat] = store.repeats()
    assert repeat.rule_id == RULE.id and repeat.reflexion_id is None and store.reflexions() == []
    # The same correction asked about again (a grown session, a retry) is the same repeat.
    again = msgspec.structs.replace(repeat, created_at="2026-12-01T00:00:00.000000Z")
    assert new_repeats(store.repeats(), [again]) == []
    assert new_repeats(store.repeats(), [msgspec.structs.replace(again, at=7)]) != []


async def test_with_no_live_rule_nothing_is_shown_and_a_named_handle_counts_for_nothing(tmp_path: Path):
    # Pins: a small model answering "L1" with no rules shown, and a repeat
    # recorded against whichever rule happens to be first.
    store = LearningStore.open(tmp_path / "learning")
    enqueue(store, session_entry("s1", correction("You pushed to main again."), CLEAN))
    model = ScriptedProvider(answer("Open a pull request.", ["L1"]))
    await reflect_inbox(store, Reflector(model))
    assert "<live-rules>" not in model.requests[0].user and "repeats only when" not in model.requests[0].system
    assert store.repeats() == []


def test_the_live_rules_come_after_the_moment_and_before_the_question():
    from mecha.core.domain.reflexion import Evidence
    from mecha.core.sessions.mining import Intervention, Trigger

    i = Intervention(trigger=Trigger.FOLLOWUP, context="pushing", text="again?", aftermath="sorry", at=3)
    prompt = reflector_user_prompt(i, Evidence.FULL, [RULE])
    assert prompt.index("</what-the-assistant-did-next>") < prompt.index("<live-rules>") < prompt.index("What is the reusable lesson?")


def test_the_hooks_line_hash_and_the_records_agree_on_a_rendered_rule(tmp_path: Path):
    # Pins: the hook and the record hashing a rule's line two ways, so no
    # rule ever counts as having reached an agent.
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").write_text(
        "# mine\n\n<!-- mecha:rules:begin -->\n## Learned rules\n\n### behavior\n"
        f"- {RULE.text}\n  - {OTHER.text}  \n<!-- mecha:rules:end -->\n"
    )
    project = tmp_path / "src" / "app"
    (project / ".git").mkdir(parents=True)
    (project / "sub").mkdir()
    (project / "CLAUDE.local.md").write_text("- a person's own bullet\n")
    line = start_line("claude", json.dumps({"session_id": "s9", "cwd": str(project / "sub")}).encode(), str(home), None,
                      "2026-11-05T10:00:00.000000Z")
    assert line is not None
    start = json.loads(line)
    assert start["cwd"] == str(project / "sub") and start["session_id"] == "claude:s9"  # as the importer spells it
    assert rendered_line_hash(RULE) in start["rules"] and rendered_line_hash(OTHER) in start["rules"]
    assert rule_line_hash("- a person's own bullet") in start["rules"] and len(start["rules"]) == 3
    assert start_line("claude", b'{"cwd": "/x"}', str(home), None, "t") is None  # names no session


def started(store: LearningStore, *starts: SessionStart) -> None:
    from mecha.core.store.layout import started_path

    with open(started_path(store.root), "ab") as f:
        for s in starts:
            import msgspec

            f.write(msgspec.json.encode(s) + b"\n")


def test_exposure_counts_the_sessions_the_rule_reached_while_live(store: LearningStore, tmp_path: Path):
    # Pins: a session before the accept, or one whose agent never read the
    # rule, counted as a session the rule was in.
    reached = [rendered_line_hash(RULE)]
    started(
        store,
        SessionStart(session_id="before", agent="claude", cwd=str(tmp_path), at="2026-11-01T12:00:00.000000Z", rules=reached),
        SessionStart(session_id="a", agent="claude", cwd=str(tmp_path), at="2026-11-03T12:00:00.000000Z", rules=reached),
        SessionStart(session_id="a", agent="claude", cwd=str(tmp_path), at="2026-11-03T13:00:00.000000Z", rules=reached),
        SessionStart(session_id="unread", agent="codex", cwd=str(tmp_path), at="2026-11-04T12:00:00.000000Z", rules=[]),
        SessionStart(session_id="b", agent="codex", cwd=str(tmp_path), at="2026-11-05T12:00:00.000000Z", rules=reached),
    )
    rec = StoreView(store, "2026-11-14T09:00:00.000000Z").record(RULE, "behavior", None)
    assert (rec.live_since, rec.days_live, rec.sessions, rec.session_ids) == (ACCEPTED, 12, 2, ["b", "a"])
    assert rec.sessions_before == 1 and rec.learned_from == 2
    assert rec.line == "live 12 days · in 2 sessions · not corrected again · learned from 2 corrections in 1 session before"


async def test_two_repeats_make_the_rule_due_a_rewrite_whose_proposal_names_it(store: LearningStore):
    # Pins: a rule corrected again and again with nothing proposed, because
    # two lessons are under the learn pass's minimum of three.
    for n, words in enumerate(["You pushed to main again.", "Again straight to main; open a pull request."]):
        enqueue(store, session_entry(f"s-{n}", correction(words), CLEAN))
        await reflect_inbox(store, Reflector(ScriptedProvider(answer(f"Open a pull request ({n}).", ["L2"]))))
    pool = [r.id for r in store.learnable_unprocessed("behavior")]
    assert len(pool) == REWRITE_AFTER_REPEATS and rewrites_due(store, "behavior", None, pool) == {RULE.id: pool}
    assert learn_refusal(store, "behavior") is None
    learner = ScriptedProvider(json.dumps({"rules": [
        {"rule": OTHER.text, "based_on": [], "replaces": []},
        {"rule": "Open a pull request for every change; pushing to main is never yours to do.",
         "based_on": ["R1", "R2"], "replaces": ["L2"]},
    ], "dropped": []}))
    outcome = await learn_domain(store, "behavior", Learner(learner))
    assert "## Rules not followed" in learner.requests[0].user
    assert "- L2: corrected again in R1, R2. Rewrite it so the assistant follows it" in learner.requests[0].user
    proposal = store.proposal(outcome.proposal_id or "")
    assert proposal.rewrite_of == [RULE.id] and sorted(proposal.reflexion_ids) == sorted(pool)
    [scoped] = [s for s in live_records(store, now="2026-11-14T09:00:00.000000Z") if s.rule.id == RULE.id]
    assert scoped.record.rewrite_proposal == proposal.id
    assert "corrected again 2× (last: " in scoped.record.line and "'Again straight to main; open a pull request.'" in scoped.record.line
    assert rewrites_due(store, "behavior", None, pool) == {}  # answered: pending, not filed twice


def test_a_rule_no_session_was_in_scope_of_for_sixty_days_is_offered_for_retirement(store: LearningStore, tmp_path: Path):
    # Pins: offering every old rule in a store whose hook never recorded a
    # start; never offering a rule whose project was left long ago.
    now = "2027-03-01T09:00:00.000000Z"
    records = live_records(store, now=now)
    assert retirements_due(records, None, now) == []
    started(store, SessionStart(session_id="old", agent="claude", cwd=str(tmp_path), at="2026-11-03T12:00:00.000000Z"))
    records = live_records(store, now=now)
    assert sorted(s.rule.id for s in retirements_due(records, "2026-11-03T12:00:00.000000Z", now)) == sorted([RULE.id, OTHER.id])
    assert retirements_due(records, "2026-11-03T12:00:00.000000Z", "2026-12-01T09:00:00.000000Z") == []


def test_a_retirement_offer_is_filed_once_as_a_pending_proposal_and_never_applied(store: LearningStore, tmp_path: Path):
    # Pins: an offer filed again after every session until the person gives
    # in, or a rule retired with nobody asked.
    from mecha.core.learning.proposals import offer_retirements, reject_proposal

    started(store, SessionStart(session_id="claude:old", agent="claude", cwd=str(tmp_path), at="2026-11-03T12:00:00.000000Z"))
    now = "2027-03-01T09:00:00.000000Z"
    offers = offer_retirements(store, now)
    assert sorted(p.evidence.split(":")[0] for p in offers) == sorted([f"retire {RULE.id}", f"retire {OTHER.id}"])
    assert all(p.status is ProposalStatus.PENDING and "no session has run in any project for 60 days" in p.evidence
               for p in offers)
    assert [r.id for r in store.learned_rules("behavior") if r.active()] == [OTHER.id, RULE.id]  # nothing applied
    assert offer_retirements(store, now) == []  # pending: not filed twice
    for p in offers:
        reject_proposal(store, p.id, "keep it")
    assert offer_retirements(store, now) == []  # rejected: the person said keep it


def claude_session(sid: str, day: str, words: str) -> bytes:
    from tests.core.ccfixture import Claude, text

    c = Claude(session=sid, cwd="/home/pat/elsewhere")
    stamp = {"timestamp": f"{day}T10:00:00.000Z"}
    c.user("Ship the release notes.", **stamp)
    c.assistant(text("Pushed the notes straight to main."), **stamp)
    c.user(words, **stamp)
    c.assistant(text("Sorry; I opened a pull request instead."), **stamp)
    return c.bytes()


async def test_an_imported_correction_counts_as_corrected_again_only_when_made_after_the_accept(
    store: LearningStore, tmp_path: Path,
):
    # Pins: old sessions imported after a rule was accepted counting as
    # repeats of it, dated the day the pass read them.
    from mecha.core.agents.importing import import_sessions
    from mecha.core.sessions.mining import DEFAULT_VOICES

    folder = tmp_path / "projects" / "-home-pat-elsewhere"
    folder.mkdir(parents=True)
    (folder / "before.jsonl").write_bytes(claude_session("before", "2026-11-01", "You pushed to main; open a pull request."))
    (folder / "after.jsonl").write_bytes(claude_session("after", "2026-11-05", "Main again? Open a pull request."))
    report = import_sessions(store, "claude", tmp_path / "projects", voices=DEFAULT_VOICES, ended=True)
    assert report.queued
    reply = answer("Open a pull request; never push to main.", ["L2"])
    await reflect_inbox(store, Reflector(ScriptedProvider(reply, reply)))
    assert sorted((r.session_id, r.said_at) for r in store.repeats()) == [
        ("claude:after", "2026-11-05T10:00:00.000000Z"), ("claude:before", "2026-11-01T10:00:00.000000Z"),
    ]
    rec = StoreView(store, "2026-11-14T09:00:00.000000Z").record(RULE, "behavior", None)
    assert [r.session_id for r in rec.corrected_again] == ["claude:after"]
    assert "corrected again 1× (last: 8 days ago, 'Main again? Open a pull request.')" in rec.line
    assert rec.sessions_before == 1  # the correction from before the accept counts there
    pool = [r.id for r in store.learnable_unprocessed("behavior")]
    assert rewrites_due(store, "behavior", None, pool) == {}


def test_a_harness_run_that_names_the_rules_its_prompt_carried_is_counted_as_reached(store: LearningStore):
    # Pins: a harness's runs were never counted, so a rule learned and used
    # only through the harness read "in 0 sessions" however often it rode.
    start = harness_start(store, "run-7", None, [RULE.id or "", "r-unknown"], "2026-11-06T12:00:00.000000Z")
    assert (start.agent, start.cwd, start.rules) == (HARNESS_AGENT, None, [rendered_line_hash(RULE)])
    store.append_session_start(start)
    store.append_session_start(harness_start(store, "run-8", None, [OTHER.id or ""], "2026-11-07T12:00:00.000000Z"))
    rec = StoreView(store, "2026-11-14T09:00:00.000000Z").record(RULE, "behavior", None)
    assert (rec.sessions, rec.session_ids) == (1, ["run-7"])


def test_a_hand_over_naming_more_rules_than_a_prompt_can_carry_is_refused_by_name(store: LearningStore):
    with pytest.raises(InvalidInput, match="rule_ids"):
        harness_start(store, "run-9", None, ["r"] * 1001, "2026-11-06T12:00:00.000000Z")
