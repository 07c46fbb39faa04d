"""Provider faults: a model that stalls, rate-limits, errors, garbles, says
nothing or refuses. Every reflect and learn pass facing one must end
`failed` with an outcome that names the fault, release the writer lock,
lose nothing (reflections only ever grow; the transcript stays in the inbox;
the learn pool stays whole), and leave the work for a later pass with a
healthy model, which must then finish it.

The passes are the real pass body (`run_pass`, as the detached process runs
it) against the real HTTP fake model, configured the way a harness does it —
`initializationOptions.model` with tiny `timeoutS`, `maxRetries` and
`maxBackoffS` — so the whole matrix runs in seconds. Two cases also go
through a real sidecar process and its detached passes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mecha.core.domain.rules import Rule
from mecha.core.identity import now
from mecha.core.learning.learn import learnable_pool
from mecha.core.sessions.mining import INTERVENTION_BUDGET
from mecha.core.sessions.transcript import Block, Message, Taint, TaintCheckpoint
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.inbox import enqueue, inbox_dir, list_set_aside, session_entry
from mecha.core.store.learning_store import LearningStore
from mecha.sidecar.passrun import run_pass
from tests import builders
from tests.builders import write_learned_rules
from tests.e2e.conftest import (
    _no_pass_left_running,  # noqa: F401 - autouse: no pass outlives its test
    env,  # noqa: F401
    spawn,  # noqa: F401
    steer_session,
    store_dir,  # noqa: F401
    store_ids,
    store_lines,
)
from tests.model_server import (
    ModelServer,
    garbage,
    huge,
    lessons_responder,
    refusal,
    reply,
    stall,
    status,
    truncated_json,
)

TIMEOUT_S = 0.4
MAX_RETRIES = 1


@dataclass(frozen=True)
class Fault:
    name: str
    #: What the server does, enough times to exhaust the pass's retries.
    actions: tuple[Any, ...]
    #: Words the job's outcome must contain.
    named: tuple[str, ...]
    #: How many requests the pass may make before it gives up.
    requests: int


ATTEMPTS = MAX_RETRIES + 1
FAULTS = [
    Fault("stall past the timeout", (stall(TIMEOUT_S * 3, reply("too late")),) * ATTEMPTS, ("timed out after",), ATTEMPTS),
    Fault("429 storm", (status(429, retry_after=0.01),) * ATTEMPTS, ("HTTP 429", "giving up"), ATTEMPTS),
    # One request more than the retries: after 5xx to a constrained request,
    # the next structured mode is tried once (a 500 may be the server turning
    # down `json_schema`, as llama-cpp-python's does); a second 5xx ends it.
    Fault("500s", (status(500),) * ATTEMPTS, ("HTTP 500", "giving up"), ATTEMPTS + 1),
    Fault("503 then hang-up", (status(503), stall(0.05)), ("connection error",), ATTEMPTS),
    Fault("truncated JSON body", (truncated_json(),), ("body is not JSON",), 1),
    Fault("garbage body", (garbage(),), ("body is not JSON",), 1),
    # Nothing written before the budget ran out: asked once more with room
    # to think (a reasoning model), then given up on.
    Fault("empty content, finish length", (reply(None, "length"),) * 2, ("token budget", "finish: length"), 2),
    Fault("JSON cut off at the token limit", (reply('{"skip": false, "reflexion": "When the pers', "length"),
                                               reply('{"rules": [{"rule": "Ask bef', "length")), ("cut off", "finish: length"), 1),
    Fault("empty reply", (reply(""),), ("empty reply",), 1),
    Fault("refusal", (refusal("I can't help with that."),), ("refused",), 1),
]
FAULT_IDS = [f.name.replace(" ", "-") for f in FAULTS]


def options(server: ModelServer, api: str = "openai") -> dict[str, Any]:
    return {
        "api": api,
        "baseUrl": server.url,
        "model": "scripted-model",
        "timeoutS": TIMEOUT_S,
        "maxRetries": MAX_RETRIES,
        "maxBackoffS": 0.02,
    }


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as s:
        yield s


@pytest.fixture
def pass_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, server: ModelServer) -> Path:
    """The environment a detached pass gets from its sidecar: the store and
    the harness's model options, nothing of the developer's."""
    for name in ("MECHA_MODEL", "MECHA_MODEL_API", "MECHA_MODEL_BASE_URL", "MECHA_MODEL_API_KEY_ENV"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "learning"
    monkeypatch.setenv("MECHA_LEARNING_DIR", str(root))
    monkeypatch.setenv("MECHA_SIDECAR_CONFIG", str(tmp_path / "no-such.toml"))
    monkeypatch.setenv("MECHA_MODEL_OPTIONS", json.dumps(options(server)))
    return root


def _job(root: Path, kind: str, n: int, domain: str | None = None) -> str:
    job_id = f"{kind}-{n}"
    jobs_mod.write_job(root, jobs_mod.Job(id=job_id, kind=kind, domain=domain, state="running", started_at=now()))  # type: ignore[arg-type]
    return job_id


def _run(root: Path, kind: str, n: int, domain: str | None = None, minimum: int | None = None) -> jobs_mod.Job:
    job_id = _job(root, kind, n, domain)
    code = run_pass(kind, job_id, domain, minimum)
    job = jobs_mod.read_job(root, job_id)
    assert (code == 0) == (job.state == "done"), job
    assert job.pid is None and job.finished_at, job
    return job


def _lock_is_free(root: Path) -> None:
    lock = LearningStore(root).try_lock()
    assert lock is not None, "the pass left the writer lock held"
    lock.release()


def _bytes(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


CLEAN = [TaintCheckpoint(at=0, taint=Taint())]


def _seed(root: Path) -> LearningStore:
    store = LearningStore.open(root)
    store.append_reflexions(
        [
            builders.reflexion(
                f"seed-{n}", f"Say which step of the plan you are on before acting on step {n}.", session_id="earlier",
                context="ctx", intervention=f"person said {n}", created_at=now(),
            )
            for n in range(2)
        ]
    )
    write_learned_rules(store, "behavior", [Rule(text="Keep diffs small.", id="r-1")])
    store.commit("seed")
    return store


def _steered(text: str) -> list[Message]:
    return [
        Message.user("Tidy the docs."),
        Message.assistant([Block.tool_use("t1", "fs_read", {"path": "a.md"})]),
        Message.tool_results([Block.tool_result("t1", "contents"), Block.text_block(text)]),
        Message.assistant("Done."),
    ]


# ─── reflect ────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("fault", FAULTS, ids=FAULT_IDS)
def test_a_reflect_pass_facing_a_faulty_model_fails_keeps_everything_and_a_later_pass_finishes(
    fault: Fault, server: ModelServer, pass_env: Path
) -> None:
    root = pass_env
    store = _seed(root)
    enqueue(store, session_entry("faulted", _steered("Only touch the docs folder."), CLEAN))
    reflections_before = _bytes(root / "reflections.jsonl")
    [entry] = [p.name for p in inbox_dir(store).glob("*.json")]
    server.script(*fault.actions)

    job = _run(root, "reflect", 1)
    assert job.state == "failed", job
    assert job.outcome and all(word in job.outcome for word in fault.named), job.outcome
    assert len(server.completions()) == fault.requests, "retries must stay within maxRetries"
    _lock_is_free(root)
    assert _bytes(root / "reflections.jsonl") == reflections_before
    assert "faulted" not in store.mined_sessions()
    # Released, not consumed: the same entry, unclaimed, for the next pass.
    assert [p.name for p in inbox_dir(store).iterdir() if not p.name.startswith(".")] == [entry]

    server.clear()
    server.responder = lessons_responder
    later = _run(root, "reflect", 2)
    assert later.state == "done", later
    assert "1 reflection(s) written (1 learnable)" in (later.outcome or "")
    grown = _bytes(root / "reflections.jsonl")
    assert grown.startswith(reflections_before), "reflections only ever grow"
    [new] = [r for r in store.reflexions() if r.session_id == "faulted"]
    assert new.intervention == "Only touch the docs folder." and new.learnable()
    assert "faulted" in store.mined_sessions()
    assert not [p for p in inbox_dir(store).iterdir() if not p.name.startswith(".")]


def test_one_entry_the_model_will_not_answer_does_not_hold_up_the_others(server: ModelServer, pass_env: Path) -> None:
    # A refusal can be about what one transcript says; stopping the pass
    # there would leave every later session queued behind it for good.
    root = pass_env
    store = _seed(root)
    enqueue(store, session_entry("a-refused", _steered("Stop quoting the incident report."), CLEAN))
    enqueue(store, session_entry("b-fine", _steered("Use British spelling."), CLEAN))

    def answer(request: Any, dialect: Any) -> Any:
        user = json.dumps(request)
        return refusal() if "incident report" in user else lessons_responder(request, dialect)

    server.responder = answer
    job = _run(root, "reflect", 1)
    # It wrote what it could: done, with the refused one pending for a retry.
    assert job.state == "done", job
    assert "from 1 session(s)" in (job.outcome or "") and "1 intervention(s) pending" in (job.outcome or "")
    assert [r.session_id for r in store.reflexions() if r.session_id in ("a-refused", "b-fine")] == ["b-fine"]
    assert store.mined_sessions() >= {"b-fine"} and "a-refused" not in store.mined_sessions()
    [waiting] = [p.name for p in inbox_dir(store).glob("*.json")]
    assert waiting.endswith("-a-refused.json")
    _lock_is_free(root)


# ─── learn ──────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("fault", FAULTS, ids=FAULT_IDS)
def test_a_learn_pass_facing_a_faulty_model_fails_keeps_the_pool_and_a_later_pass_proposes(
    fault: Fault, server: ModelServer, pass_env: Path
) -> None:
    root = pass_env
    store = _seed(root)
    pool = [r.id for r in learnable_pool(store, "behavior")]
    reflections_before = _bytes(root / "reflections.jsonl")
    rules_before = _bytes(store.rules_path("behavior", "learned"))
    # The learner answers after the first action meant for a reflector, if any.
    actions = fault.actions[1:] if fault.name.startswith("JSON cut off") else fault.actions
    server.script(*actions)

    job = _run(root, "learn", 1, "behavior", 1)
    assert job.state == "failed", job
    assert job.outcome and all(word in job.outcome for word in fault.named), job.outcome
    assert len(server.completions()) == fault.requests
    _lock_is_free(root)
    assert [r.id for r in learnable_pool(store, "behavior")] == pool
    assert _bytes(root / "reflections.jsonl") == reflections_before
    assert store.proposals() == [] and store.runs() == []
    assert _bytes(store.rules_path("behavior", "learned")) == rules_before

    server.clear()
    server.responder = lessons_responder
    later = _run(root, "learn", 2, "behavior", 1)
    assert later.state == "done" and later.proposal_id, later
    proposal = store.proposal(later.proposal_id)
    assert proposal.status == "pending" and sorted(proposal.reflexion_ids) == sorted(pool)
    assert _bytes(store.rules_path("behavior", "learned")) == rules_before, "a pass proposes; it never applies"


# ─── hostile replies: deep, huge, endless ───────────────────────────────────
#
# A reply is a stranger's text too: whatever a model (or whatever answers at
# its URL) sends, the pass reads a bounded amount of it, parses it in time
# proportional to what it read, stores a bounded lesson, and treats anything
# it cannot use as an unusable answer — three of those and the intervention
# is set aside — never as a crash that fails every pass over the same inbox.

DEEP = '{"a": ' * 1000 + "1" + "}" * 1000


def _hostile_to(words: str, action: Any) -> Any:
    """A responder: `action` for the reflector prompt that holds `words`,
    a lesson for every other."""

    def answer(request: Any, dialect: Any) -> Any:
        return action if words in json.dumps(request) else lessons_responder(request, dialect)

    return answer


@pytest.mark.parametrize(
    "hostile",
    [
        reply(DEEP),
        reply('{"skip": false, "reflexion": "Nest deeper.", "confidence": ' + "[" * 1000 + "]" * 1000 + "}"),
        reply("{" * 40_000),
        huge('{"skip": false, "reflexion": "', "All work and no play. ", 30_000_000 // 22, '"}'),
    ],
    ids=["object-1000-deep", "array-1000-deep", "40k-open-braces", "30MB-reply"],
)
def test_a_hostile_reply_is_an_unusable_answer_that_is_set_aside_and_never_wedges_the_inbox(
    hostile: Any, server: ModelServer, pass_env: Path
) -> None:
    # Pins: a reply nested 1,000 deep failing every pass with a RecursionError
    # (0 of 5 sessions mined, nothing set aside); a 600 MB reply read whole.
    root = pass_env
    store = _seed(root)
    for n in range(4):
        enqueue(store, session_entry(f"fine-{n}", _steered(f"Use British spelling, part {n}."), CLEAN))
    enqueue(store, session_entry("hostile", _steered("Stop quoting the incident report."), CLEAN))
    server.responder = _hostile_to("incident report", hostile)

    first = _run(root, "reflect", 1)
    assert first.state == "done" and "1 unusable answer(s)" in (first.outcome or ""), first
    assert "1 intervention(s) pending" in (first.outcome or ""), first.outcome
    assert "from 4 session(s)" in (first.outcome or ""), first.outcome
    assert store.mined_sessions() >= {f"fine-{n}" for n in range(4)}
    assert server.sent < 8 << 20, f"the pass read on past its bound: {server.sent:,} bytes sent"
    for n in (2, 3):
        _run(root, "reflect", n)
    assert "hostile" in store.mined_sessions(), "three unusable answers set the intervention aside"
    [aside] = list_set_aside(store)
    assert "3 unusable answers" in aside.reason, aside.reason
    assert not [r for r in store.reflexions() if r.session_id == "hostile"]
    _lock_is_free(root)


def test_a_reply_larger_than_its_token_budget_allows_is_cut_off_by_name(server: ModelServer, pass_env: Path) -> None:
    # Pins: reading a reply of any size whole (1,833 MB RSS for 600 MB).
    root = pass_env
    store = _seed(root)
    enqueue(store, session_entry("flooded", _steered("Only touch the docs folder."), CLEAN))
    server.script(huge('{"skip": false, "reflexion": "', "x", 50_000_000, '"}'))
    job = _run(root, "reflect", 1)
    assert job.state == "failed", job
    assert "larger than" in (job.outcome or "") and "max_tokens" in (job.outcome or ""), job.outcome
    assert server.sent < 8 << 20, f"{server.sent:,} bytes sent"


def test_a_long_lesson_is_stored_no_longer_than_the_persons_words_may_be(server: ModelServer, pass_env: Path) -> None:
    # Pins: a 5 MB lesson stored whole, then sent to every learner prompt.
    root = pass_env
    store = _seed(root)
    enqueue(store, session_entry("wordy", _steered("Only touch the docs folder."), CLEAN))
    # Past what the person's words may be, within what the reply body bound
    # lets through (a server that ignores max_tokens).
    lesson = "Only edit files under docs/. " + "Really, only docs. " * 300
    server.script(reply(json.dumps({"skip": False, "reflexion": lesson, "error_type": "overreach", "confidence": 0.9})))
    job = _run(root, "reflect", 1)
    assert job.state == "done", job
    [kept] = [r for r in store.reflexions() if r.session_id == "wordy"]
    assert len(kept.reflexion_text) <= INTERVENTION_BUDGET < len(lesson)
    assert kept.reflexion_text.startswith("Only edit files under docs/.")


# ─── through the real sidecar and its detached passes ───────────────────────


def test_a_refused_reflection_and_a_rate_limited_learn_fail_visibly_over_the_wire(spawn, store_dir) -> None:  # noqa: F811
    with ModelServer() as server:
        sc = spawn()
        # The Anthropic dialect here, so a refusal's category is on the wire.
        sc.initialize(store_dir, options(server, "anthropic"))
        server.script(refusal(category="cyber"))
        ended = sc.request(
            "mecha/sessionEnded",
            {"session_id": "wire-refused", "messages": steer_session("Stop pasting secrets into logs."),
             "taint_timeline": [{"at": 0, "taint": {"private": False, "untrusted": False}}]},
        )
        failed = sc.job_finished(ended["job"]["id"])
        assert failed["state"] == "failed" and "refused (cyber)" in failed["outcome"], failed
        listed = {j["id"]: j for j in sc.request("mecha/jobs", {})["jobs"]}
        assert listed[failed["id"]]["state"] == "failed"
        assert store_lines(store_dir, "reflections.jsonl") == [] and store_ids(store_dir, "mined.jsonl") == []
        _lock_is_free(store_dir)

        server.responder = lessons_responder
        again = sc.request(
            "mecha/sessionEnded",
            {"session_id": "wire-next", "messages": steer_session("Keep commits small."),
             "taint_timeline": [{"at": 0, "taint": {"private": False, "untrusted": False}}]},
        )
        done = sc.job_finished(again["job"]["id"])
        assert done["state"] == "done" and "from 2 session(s)" in done["outcome"], done
        assert sorted(store_ids(store_dir, "mined.jsonl")) == ["wire-next", "wire-refused"]

        server.responder = None
        server.script(*(status(429, retry_after=0.01),) * ATTEMPTS)
        learn = sc.request("mecha/learn", {"domain": "behavior", "min": 1})
        refused = sc.job_finished(learn["job"]["id"])
        assert refused["state"] == "failed" and "HTTP 429" in refused["outcome"], refused
        assert sc.request("mecha/proposals", {})["proposals"] == []
        _lock_is_free(store_dir)

        server.responder = lessons_responder
        retry = sc.request("mecha/learn", {"domain": "behavior", "min": 1})
        proposed = sc.job_finished(retry["job"]["id"])
        assert proposed["state"] == "done" and proposed["proposal_id"], proposed
        assert sc.shutdown() == 0
