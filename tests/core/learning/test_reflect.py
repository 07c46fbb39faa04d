"""A reflect pass never reads an unusable answer as "no lesson", never lets
one entry block the others, and never asks a model for ever: in-process,
with a real store (real git, real flock) and a scripted model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mecha.core.domain.reflexion import Reflexion
from mecha.core.errors import ModelFailure, UnusableReply
from mecha.core.learning.consolidation import Learner
from mecha.core.learning.learn import LEARN_BATCH_MAX_REFLECTIONS, learn_batch, learn_domain, learn_refusal
from mecha.core.learning.reflect import ReflectOutcome, pass_failure, reflect_inbox
from mecha.core.learning.reflection import Reflector
from mecha.core.providers.base import CompletionRequest, CompletionResponse
from mecha.core.sessions.mining import INTERVENTION_BUDGET
from mecha.core.sessions.transcript import Block, Message, Taint, TaintCheckpoint
from mecha.core.store.inbox import (
    drop_set_aside,
    enqueue,
    inbox_dir,
    list_set_aside,
    retry_set_aside,
    session_entry,
    set_aside_dir,
)
from mecha.core.store.learning_store import MAX_UNUSABLE_ANSWERS, LearningStore
from tests import builders
from tests.fakes import ScriptedProvider

CLEAN = [TaintCheckpoint(at=0, taint=Taint())]


def three_interventions(followup: str = "you forgot the changelog, always update it") -> list[Message]:
    return [
        Message.user("tidy the docs"),
        Message.assistant([Block.text_block("reading"), Block.tool_use("t1", "fs_read", {"path": "a.md"})]),
        Message.tool_results([Block.tool_result("t1", "contents"), Block.text_block("only the docs folder")]),
        Message.assistant([Block.text_block("removing the old file"), Block.tool_use("t2", "shell", {"cmd": "rm x"})]),
        Message.tool_results([Block.tool_result("t2", "Denied by the user: never delete files", is_error=True)]),
        Message.assistant("Done: docs tidied."),
        Message.user(followup),
        Message.assistant("Updated the changelog."),
    ]


def lesson(text: str) -> str:
    return json.dumps({"skip": False, "reflexion": text, "error_type": "overreach", "confidence": 0.8})


class ByIntervention:
    """Answers each reflector prompt by the person's words in it, so the
    order concurrent calls arrive in does not matter. A value may be a list:
    one answer per call, in turn."""

    def __init__(self, answers: dict[str, object]):
        self.answers = {k: (list(v) if isinstance(v, list) else v) for k, v in answers.items()}
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        for words, answer in self.answers.items():
            if words in request.user:
                if isinstance(answer, list):
                    answer = answer.pop(0)
                if isinstance(answer, Exception):
                    raise answer
                return CompletionResponse(text=str(answer))
        raise AssertionError(f"no answer scripted for {request.user[:200]!r}")

    def asked(self, words: str) -> int:
        return sum(1 for r in self.requests if words in r.user)


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    return LearningStore.open(tmp_path / "learning")


def inbox(store: LearningStore) -> list[str]:
    return sorted(p.name for p in inbox_dir(store).glob("*.json"))


async def test_an_unusable_answer_leaves_its_intervention_pending_and_the_session_unmined(store: LearningStore):
    # Pins: the first real-model run, where two of three interventions got no
    # usable JSON, the session was marked mined anyway, and those two lessons
    # were lost for good.
    enqueue(store, session_entry("s1", three_interventions(), CLEAN))
    model = ByIntervention({
        "only the docs folder": lesson("Keep edits inside the folder the person names."),
        "never delete files": "<pre><rem>Your previous question was answered.</rem></pre>",
        "changelog": '{"skip": true}',
    })
    # The pass wrote what it could: it ends done, counting what is pending and saying how it is retried.
    first = await reflect_inbox(store, Reflector(model))
    assert (first.reflections, first.usable, first.unusable, first.pending) == (1, 2, 1, 1)
    assert "1 intervention(s) pending: the next reflect pass asks them again" in first.summary()
    assert "s1" not in store.mined_sessions()
    assert len(inbox(store)) == 1, "the session waits in the inbox"
    [kept] = store.reflexions()
    assert kept.reflexion_text == "Keep edits inside the folder the person names."

    # The next pass asks only what is still open, and then the session is done.
    model.answers["never delete files"] = lesson("Never delete a file without asking.")
    outcome = await reflect_inbox(store, Reflector(model))
    assert (model.asked("only the docs folder"), model.asked("never delete files"), model.asked("changelog")) == (1, 2, 1)
    assert "s1" in store.mined_sessions() and inbox(store) == []
    assert sorted(r.reflexion_text for r in store.reflexions()) == [
        "Keep edits inside the folder the person names.", "Never delete a file without asking.",
    ]
    assert outcome.reflections == 1 and outcome.sessions == 1


async def test_an_intervention_the_model_cannot_answer_is_set_aside_after_three_tries(store: LearningStore):
    # Pins: a model that keeps refusing one intervention being asked again by
    # every later pass, for ever, with the session never mined.
    enqueue(store, session_entry("s1", three_interventions(), CLEAN))
    model = ByIntervention({
        "only the docs folder": '{"skip": true}',
        "never delete files": "I would rather not.",
        "changelog": '{"skip": true}',
    })
    # The first pass has usable answers beside the unusable one: done, one pending. The later
    # passes ask only the open one and get nothing usable: they fail, naming why.
    first = await reflect_inbox(store, Reflector(model))
    assert first.pending == 1 and "s1" not in store.mined_sessions()
    for _ in range(MAX_UNUSABLE_ANSWERS - 2):
        with pytest.raises(UnusableReply, match="no usable answer from the model"):
            await reflect_inbox(store, Reflector(model))
        assert "s1" not in store.mined_sessions()
    with pytest.raises(UnusableReply) as caught:
        await reflect_inbox(store, Reflector(model))
    assert "1 set aside" in str(caught.value)
    assert model.asked("never delete files") == MAX_UNUSABLE_ANSWERS
    assert "s1" in store.mined_sessions() and inbox(store) == []
    [aside] = list_set_aside(store)
    assert aside.label == "session s1" and aside.interventions == ["s1#4:denial"]
    # No pass asks it again...
    await reflect_inbox(store, Reflector(model))
    assert model.asked("never delete files") == MAX_UNUSABLE_ANSWERS

    # ...until a person retries it; then only it is asked.
    retry_set_aside(store, aside.id[:12])
    assert list_set_aside(store) == [] and len(inbox(store)) == 1
    model.answers["never delete files"] = lesson("Never delete a file without asking.")
    await reflect_inbox(store, Reflector(model))
    assert model.asked("never delete files") == MAX_UNUSABLE_ANSWERS + 1
    assert model.asked("only the docs folder") == 1, "an answered intervention is never asked again"
    assert [r.reflexion_text for r in store.reflexions()] == ["Never delete a file without asking."]
    assert inbox(store) == []


async def test_a_dropped_set_aside_entry_is_gone_and_its_session_stays_mined(store: LearningStore):
    enqueue(store, session_entry("s1", three_interventions(), CLEAN))
    model = ByIntervention({"only the docs folder": '{"skip": true}', "changelog": '{"skip": true}',
                            "never delete files": ModelFailure("context too long", status=400)})
    await reflect_inbox(store, Reflector(model))
    [aside] = list_set_aside(store)
    drop_set_aside(store, aside.id)
    assert list_set_aside(store) == [] and not any(set_aside_dir(store).iterdir())
    assert "s1" in store.mined_sessions()


async def test_a_request_the_server_will_never_take_is_set_aside_and_the_entries_behind_it_go_on(store: LearningStore):
    # Pins: one session whose prompt the server refuses with a 400 (a person
    # pasted a log longer than the model's context) failing every later pass
    # on that oldest entry, so nothing handed over after it was ever mined.
    enqueue(store, session_entry("big", three_interventions("PASTED-LOG always update it"), CLEAN))
    enqueue(store, session_entry("next", three_interventions("the changelog again, always"), CLEAN))
    model = ByIntervention({
        "PASTED-LOG": ModelFailure("HTTP 400: context length exceeded", status=400),
        "only the docs folder": '{"skip": true}',
        "never delete files": '{"skip": true}',
        "the changelog again": lesson("Update the changelog with every change."),
    })
    outcome = await reflect_inbox(store, Reflector(model))
    assert {"big", "next"} <= store.mined_sessions()
    assert outcome.set_aside == 1 and outcome.reflections == 1
    [aside] = list_set_aside(store)
    assert aside.label == "session big" and "HTTP 400" in aside.reason


async def test_a_server_that_is_down_stops_the_pass_and_loses_nothing(store: LearningStore):
    # Pins: a dead server setting interventions aside (it is not their fault),
    # or every queued call waiting out its own timeout.
    enqueue(store, session_entry("s1", three_interventions(), CLEAN))
    down = ModelFailure("connection refused")
    model = ByIntervention({w: down for w in ("only the docs folder", "never delete files", "changelog")})
    with pytest.raises(ModelFailure, match="connection refused"):
        await reflect_inbox(store, Reflector(model), concurrency=1)
    assert len(model.requests) == 1, "no call starts after the server was found gone"
    assert list_set_aside(store) == [] and len(inbox(store)) == 1
    assert store.attempt_states() == {}


async def test_reflector_calls_run_concurrently_up_to_the_limit(store: LearningStore):
    # Pins: a pass over many interventions taking one model latency each
    # against a server that could answer them together.
    enqueue(store, session_entry("a", three_interventions(), CLEAN))
    enqueue(store, session_entry("b", three_interventions("no, the changelog: always update it"), CLEAN))
    in_flight = peak = 0

    class Slow(ScriptedProvider):
        async def complete(self, request: CompletionRequest) -> CompletionResponse:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.05)
            in_flight -= 1
            return CompletionResponse(text='{"skip": true}')

    await reflect_inbox(store, Reflector(Slow()), concurrency=4)
    assert peak == 4
    assert {"a", "b"} <= store.mined_sessions()


async def test_the_persons_words_are_bounded_in_what_a_reflection_stores_and_a_prompt_carries(store: LearningStore):
    # Pins: a 60 MB paste becoming a 60 MB reflection, entering history and
    # going whole into a learner prompt.
    huge = "log line\n" * 400_000 + "so: never run the migration twice"
    enqueue(store, session_entry("s1", three_interventions(huge), CLEAN))
    model = ByIntervention({"only the docs folder": '{"skip": true}', "never delete files": '{"skip": true}',
                            "never run the migration twice": lesson("Run a migration once.")})
    await reflect_inbox(store, Reflector(model))
    [r] = store.reflexions()
    assert len(r.intervention) <= INTERVENTION_BUDGET
    assert "characters cut" in r.intervention and r.intervention.endswith("never run the migration twice")
    assert max(len(q.user) for q in model.requests) < INTERVENTION_BUDGET + 3_000


# ─── learn ──────────────────────────────────────────────────────────────────


def reflexion(i: int, *, text: str | None = None, intervention: str = builders.ASK_FIRST) -> Reflexion:
    return builders.reflexion(f"r{i:03d}", text or f"lesson {i}", session_id="s", context="ctx",
                              intervention=intervention, created_at=f"2026-11-01T00:00:{i % 60:02d}.000000Z")


def rules_reply(*texts: str, cites: tuple[str, ...] = ("R1",)) -> str:
    """A learner reply proposing `texts`, each citing `cites`."""
    rules = [{"rule": t, "based_on": list(cites), "replaces": [], "confidence": 0.9, "based_on_count": 2} for t in texts]
    return json.dumps({"rules": rules, "dropped": []})


async def test_a_learn_pass_that_changes_nothing_files_nothing_and_says_so(store: LearningStore):
    # Pins: "0 -> 0 active behavior rules", a proposal that changes nothing,
    # waiting for a person's review.
    store.append_reflexions([reflexion(i) for i in range(3)])
    outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(rules_reply())))
    assert outcome.outcome == (
        "nothing to change: the model drew no rule from the 3 lesson(s), and there are no behavior rules yet; "
        "`mecha-sidecar learn behavior --retry` asks again"
    )
    assert outcome.proposal_id is None and store.proposals() == []
    # A further learn is refused, with its reason, until a new reflection arrives.
    refusal = learn_refusal(store, "behavior")
    assert refusal is not None and "no learnable reflection has arrived since" in refusal
    again = await learn_domain(store, "behavior", Learner(ScriptedProvider()))
    assert again.outcome.startswith("nothing to do:")
    store.append_reflexions([reflexion(3, text="Ask first.")])
    assert learn_refusal(store, "behavior") is None
    third = await learn_domain(store, "behavior", Learner(ScriptedProvider(rules_reply("Ask before acting."))))
    assert third.proposal_id is not None


async def test_a_learn_batch_is_bounded_oldest_first_and_the_rest_wait(store: LearningStore):
    # Pins: one domain's backlog (or one huge reflection) making a prompt no
    # model takes, so every learn pass for the domain failed for good.
    store.append_reflexions([reflexion(i) for i in range(LEARN_BATCH_MAX_REFLECTIONS + 10)])
    provider = ScriptedProvider(rules_reply("Keep it short."))
    outcome = await learn_domain(store, "behavior", Learner(provider))
    proposal = store.proposal(outcome.proposal_id)
    assert proposal.reflexion_ids == [f"r{i:03d}" for i in range(LEARN_BATCH_MAX_REFLECTIONS)]
    assert "r045" not in provider.requests[0].user
    assert outcome.outcome.endswith(
        "; 10 more lesson(s) wait for the next pass, which can run once this proposal is answered (`mecha-sidecar learn behavior`)"
    ), "the pass says how many wait"

    huge = [reflexion(0, intervention="pasted " * 200_000)]
    assert [r.id for r in learn_batch(huge)] == ["r000"], "a single large reflection is still consolidated"
    from mecha.core.learning.consolidation import learner_user_prompt

    assert len(learner_user_prompt("behavior", [], [], huge)) < 10_000


async def test_a_pass_learns_every_batch_until_one_files_and_the_surest_lessons_go_first(store: LearningStore):
    # Pins: a pass sending 20 of 23 lessons and the other 3, the strongest
    # (0.85) among them, waiting silently for a second `learn`.
    import msgspec

    weak = [msgspec.structs.replace(reflexion(i), confidence=0.5) for i in range(LEARN_BATCH_MAX_REFLECTIONS)]
    strong = [msgspec.structs.replace(reflexion(i, text="Ask first."), confidence=0.85)
              for i in range(LEARN_BATCH_MAX_REFLECTIONS, LEARN_BATCH_MAX_REFLECTIONS + 3)]
    store.append_reflexions(weak + strong)
    first = learn_batch(weak + strong)
    assert [r.id for r in first][:3] == ["r000", "r001", "r002"] and {r.id for r in strong} <= {r.id for r in first}, (
        "the surest lessons are in the first call, listed oldest first"
    )
    provider = ScriptedProvider(json.dumps({"rules": []}), rules_reply("Keep it short."))
    outcome = await learn_domain(store, "behavior", Learner(provider))
    assert len(provider.requests) == 2, "the second batch is learned in the same pass"
    assert outcome.outcome.startswith("batch 1 of 2 (40 lessons): nothing to change"), outcome.outcome
    assert "batch 2 of 2 (3 lessons): proposal" in outcome.outcome and "wait" not in outcome.outcome
    assert len(store.proposal(outcome.proposal_id).reflexion_ids) == 3


async def test_an_inbox_entry_whose_id_can_never_be_recorded_is_set_aside_and_the_rest_go_on(store: LearningStore):
    # Pins: an entry queued with a session id holding a newline (before ids
    # were checked where they enter) failing every later pass, which asked
    # the model for it again each time.
    bad = session_entry("s1\nforged", three_interventions(), CLEAN)
    path = inbox_dir(store)
    enqueue(store, session_entry("ok", three_interventions(), CLEAN))
    import msgspec

    (path / "00000000T000000Z-bad.json").write_bytes(msgspec.json.encode(bad))
    model = ByIntervention({w: '{"skip": true}' for w in ("only the docs folder", "never delete files", "changelog")})
    outcome = await reflect_inbox(store, Reflector(model))
    assert "ok" in store.mined_sessions() and outcome.set_aside == 1
    [aside] = list_set_aside(store)
    assert "can never be recorded mined" in aside.reason
    assert len(model.requests) == 3, "the bad entry cost no model call"


@pytest.mark.parametrize(
    ("usable", "unusable", "stopped", "ends"),
    [
        (20, 6, None, "done"),  # the first real import: 20 written, 6 pending — done, not failed
        (0, 0, None, "done"),  # nothing to ask
        (3, 0, None, "done"),
        (0, 4, None, "UnusableReply"),  # asked, and not one answer usable: the model is what is wrong
        (5, 1, ModelFailure("HTTP 503 from the server"), "ModelFailure"),  # a fault stopped the pass
    ],
)
def test_a_pass_fails_only_when_it_could_not_do_its_work(usable, unusable, stopped, ends):
    # Pins: `failed — UnusableReply: 20 reflection(s) written …, 6 unusable answer(s)` for a pass
    # that wrote what it could and left six answers pending for a retry.
    outcome = ReflectOutcome(reflections=usable, usable=usable, unusable=unusable, pending=unusable)
    failure = pass_failure(outcome, stopped)
    assert (type(failure).__name__ if failure is not None else "done") == ends
    if ends == "done" and unusable:
        assert f"{unusable} intervention(s) pending: the next reflect pass asks them again" in outcome.summary()


def test_an_unchanged_pass_is_worded_for_how_many_rules_it_kept() -> None:
    # Pins: "the model kept the 0 behavior in project /home/… rule(s) as they are".
    from mecha.core.learning.learn import _kept

    assert _kept(0, "behavior", None, 4) == "the model drew no rule from the 4 lesson(s), and there are no behavior rules yet"
    assert _kept(1, "behavior", None, 4) == "the model kept the one behavior rule as it is"
    assert _kept(3, "behavior", None, 4) == "the model kept the 3 behavior rules as they are"
