"""The progress flow: `mecha.learnNow` starts a real detached learn pass
against the scripted model; the server reports it as work-done progress
(when the client supports that), tells the client when it finished and that
a proposal appeared, and republishes diagnostics with it."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from lsprotocol import types as lsp

from tests.builders import rule

from .conftest import MechaClient, Store, has_code

LESSONS = [
    "Ask before deleting anything outside the working directory.",
    "Keep status updates to one line while a task runs.",
    "Stop and wait when the person narrows the task mid-run.",
]


def seed(store: Store) -> None:
    """Three learnable reflections for `behavior`: what a learn pass needs."""
    for i, lesson in enumerate(LESSONS):
        store.reflexion(f"refl-{i}", lesson, trigger=("steer", "denial", "followup")[i])


async def learn_now(client: MechaClient, store: Store) -> tuple[str, dict, dict]:
    """Open the learned file, run `mecha.learnNow`, and wait for the pass to
    finish and its proposal to show: `(uri, job, the finished job)`."""
    seed(store)
    learned = store.learned("behavior", [rule("Answer in English", "r-0")])
    uri, diags = await client.open(learned)
    assert diags == []
    events, since = client.event_mark(), client.mark()

    result = await client.command("mecha.learnNow", "behavior")
    job = result["job"]
    assert job is not None, result
    assert job["kind"] == "learn" and job["domain"] == "behavior" and job["state"] == "running"

    ended = await client.event("mecha/jobFinished", since=events, where=lambda p: p["job"]["id"] == job["id"])
    finished = ended["job"]
    assert finished["state"] == "done", finished
    proposal_id = finished["proposal_id"]
    assert proposal_id and proposal_id in finished["outcome"]

    changed = await client.event("mecha/proposalsChanged", since=events, where=lambda p: p["pending"] == 1)
    assert changed == {"pending": 1, "by_domain": {"behavior": 1}}

    diags = await client.wait_diagnostics(uri, since=since, where=has_code("pending-proposal"))
    assert [(d.code, d.data["proposal_id"]) for d in diags] == [("pending-proposal", proposal_id)]

    # What the pass proposed is the scripted learner's rule set; nothing is applied.
    p = store.store.proposal(proposal_id)
    assert p.status.value == "pending"
    assert {r.text for r in p.rules} >= set(LESSONS)
    assert [r.text for r in store.store.learned_rules("behavior")] == ["Answer in English"]
    return uri, job, finished


async def test_learn_now_reports_work_done_progress(client: MechaClient, store: Store) -> None:
    # Both captured editors declare `window.workDoneProgress`.
    assert client.supports_progress, client.profile
    events = client.event_mark()
    _, job, finished = await learn_now(client, store)
    token = f"mecha-job-{job['id']}"

    # The server asked to create the token, then began, then ended it.
    create = await client.event(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE, since=events)
    assert create.token == token

    def reports() -> list:
        return client.progress_reports.get(token, [])

    await client.until(lambda: any(isinstance(r, lsp.WorkDoneProgressEnd) for r in reports()), f"the end of {token}")
    kinds = [type(r) for r in reports()]
    assert kinds[0] is lsp.WorkDoneProgressBegin and kinds[-1] is lsp.WorkDoneProgressEnd, kinds
    assert kinds.count(lsp.WorkDoneProgressBegin) == 1 and kinds.count(lsp.WorkDoneProgressEnd) == 1
    begin, end = reports()[0], reports()[-1]
    assert "learn" in begin.title and "behavior" in begin.title
    # The end carries the pass's outcome.
    assert end.message is not None and end.message.startswith("done") and finished["proposal_id"] in end.message

    methods = [m for m, _ in client.events[events:] if m in (lsp.WINDOW_WORK_DONE_PROGRESS_CREATE, lsp.PROGRESS)]
    assert methods[0] == lsp.WINDOW_WORK_DONE_PROGRESS_CREATE, "no $/progress before the token was created"
    assert list(client.progress_reports) == [token], "one token, for the one pass"


def _no_progress(capabilities: lsp.ClientCapabilities) -> None:
    assert capabilities.window is not None
    capabilities.window.work_done_progress = False


@pytest.mark.capabilities.with_args(_no_progress)
async def test_no_progress_for_a_client_without_work_done_progress(client: MechaClient, store: Store) -> None:
    assert not client.supports_progress
    events = client.event_mark()
    await learn_now(client, store)
    # Everything else arrived (checked in `learn_now`); progress never did.
    await asyncio.sleep(0.3)
    assert client.events_of(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE, events) == []
    assert client.events_of(lsp.PROGRESS, events) == []
    assert client.progress_reports == {}


async def test_learn_now_with_too_little_to_learn_starts_nothing(client: MechaClient, store: Store) -> None:
    store.reflexion("refl-only", LESSONS[0])
    events = client.event_mark()
    result = await client.command("mecha.learnNow", "behavior")
    assert result["job"] is None
    assert "1 learnable" in result["reason"] and "at least 3" in result["reason"]
    await asyncio.sleep(0.3)
    assert client.events_of(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE, events) == []
    assert client.events_of("mecha/jobFinished", events) == []


async def test_a_pass_started_elsewhere_gets_progress_too(client: MechaClient, store: Store, model) -> None:
    """A learn pass started from a terminal is one the server learns of from
    the store: it reports it the same way, and the proposal shows."""
    seed(store)
    learned = store.learned("behavior", [rule("Answer in English", "r-0")])
    uri, _ = await client.open(learned)

    # A slower model keeps the pass running across several store polls.
    quick = model.responder

    def slow(request, dialect):
        time.sleep(0.5)
        return quick(request, dialect)

    model.responder = slow
    events, since = client.event_mark(), client.mark()
    options = json.dumps({"api": "openai", "baseUrl": model.url, "model": "scripted-model"})
    done = await store.cli("--json", "learn", "behavior", MECHA_MODEL_OPTIONS=options)
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)["job"]
    assert job["state"] == "done", job
    token = f"mecha-job-{job['id']}"

    await client.event("mecha/proposalsChanged", since=events, where=lambda p: p["pending"] == 1)
    await client.wait_diagnostics(uri, since=since, where=has_code("pending-proposal"))
    assert client.supports_progress
    create = await client.event(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE, since=events)
    assert create.token == token
    await client.until(
        lambda: any(isinstance(r, lsp.WorkDoneProgressEnd) for r in client.progress_reports.get(token, [])),
        f"the end of {token}",
    )
    kinds = [type(r) for r in client.progress_reports[token]]
    assert kinds[0] is lsp.WorkDoneProgressBegin and kinds[-1] is lsp.WorkDoneProgressEnd
    # It was not this server's pass: no `mecha/jobFinished` for it.
    assert client.events_of("mecha/jobFinished", events) == []


def _steered(n: int) -> dict:
    """A clean mecha transcript with one steer in it."""
    return {
        "session_id": f"steered-{n}",
        "messages": [
            {"role": "user", "content": f"Tidy the release notes, part {n}."},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Reading them."},
                {"type": "tool_use", "id": "t1", "name": "fs_read", "input": {"path": "docs/RELEASE.md"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "# Release", "is_error": False},
                {"type": "text", "text": f"Only touch docs/, part {n}."},
            ]},
            {"role": "assistant", "content": "Understood."},
        ],
        "taint_timeline": [{"at": 0, "taint": {"private": False, "untrusted": False}}],
    }


async def test_a_reflect_pass_reports_answered_of_all_as_it_goes(client: MechaClient, store: Store, model, tmp_path) -> None:
    # Pins: a pass of many model calls showing one spinner and nothing else until it ended.
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for n in range(3):
        (sessions / f"s{n}.json").write_text(json.dumps(_steered(n)))
    quick = model.responder

    def slow(request, dialect):
        time.sleep(1.0)  # longer than a store poll: each answer is seen on its own
        return quick(request, dialect)

    model.responder = slow
    events = client.event_mark()
    options = json.dumps({"api": "openai", "baseUrl": model.url, "model": "scripted-model", "concurrency": 1})
    done = await store.cli("--json", "reflect", "--sessions", str(sessions), MECHA_MODEL_OPTIONS=options)
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)["job"]
    assert job["state"] == "done", job
    token = f"mecha-job-{job['id']}"
    await client.until(
        lambda: any(isinstance(r, lsp.WorkDoneProgressEnd) for r in client.progress_reports.get(token, [])),
        f"the end of {token}",
    )
    reports = [r for r in client.progress_reports[token] if isinstance(r, lsp.WorkDoneProgressReport)]
    said = [r.message for r in reports]
    assert any(m and m.startswith("1 of 3 intervention(s) answered") and "left" in m for m in said), said
    assert any(m and m.startswith("2 of 3 intervention(s) answered") for m in said), said
    percentages = [r.percentage for r in reports]
    assert percentages == sorted(percentages) and percentages[-1] >= 66, percentages
    # The first count is already the whole: the total never grows under the person's eyes.
    assert {m.split(" intervention")[0].split(" of ")[1] for m in said if m} == {"3"}, said
    assert client.events_of(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE, events)
