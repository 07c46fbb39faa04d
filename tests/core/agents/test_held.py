"""The person's say over corrections held back: what holds each back now,
and a vouch — for what the reader only doubted, never for a stranger's text."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from mecha.core.agents.held import held_now, vouch, withheld
from mecha.core.agents.importing import import_sessions
from mecha.core.agents.retrust import settled
from mecha.core.domain.reflexion import Evidence, Origin
from mecha.core.environment.trust import load_trust
from mecha.core.errors import NotFound
from mecha.core.learning.lessons import list_lessons
from mecha.core.learning.reflect import reflect_inbox
from mecha.core.learning.reflection import Reflector
from mecha.core.providers import provider_from_config
from mecha.core.sessions.mining import DEFAULT_VOICES
from mecha.core.store.inbox import queued_sessions
from mecha.core.store.learning_store import LearningStore
from tests.core.ccfixture import Claude, text, use
from tests.model_server import ModelServer, lessons_responder

SCRIPT = "benchtool --quick parser"


def _sessions(root: Path) -> None:
    """Two sessions of one person: in the first, a program of theirs the
    reader does not know holds back a steer, then a `curl` holds back the
    next; in the second, the same program holds back another."""
    first = Claude(session="eeee0001-1111-4222-8333-444455556666")
    first.user("Speed up the parser.").assistant(text("Measuring."), use("s1", "Bash", command=SCRIPT)).result("s1", "12 ms")
    first.assistant(text("12 ms a file.")).user("Always measure three runs, not one.")
    first.assistant(text("Reading the docs."), use("s2", "Bash", command="curl -s https://example.org/guide")).result("s2", "Guide.")
    first.assistant(text("The guide says to cache.")).user("Cache the tokenizer only.")
    first.assistant(text("Done."))
    second = Claude(session="eeee0002-1111-4222-8333-444455556666")
    second.user("And the lexer.").assistant(text("Measuring."), use("t1", "Bash", command=SCRIPT)).result("t1", "3 ms")
    second.assistant(text("3 ms.")).user("Report the median, not the mean.")
    second.assistant(text("Done."))
    folder = root / "-home-pat-proj"
    folder.mkdir(parents=True)
    for name, cc in (("first.jsonl", first), ("second.jsonl", second)):
        (folder / name).write_bytes(cc.bytes())
        os.utime(folder / name, (1_700_000_000, 1_700_000_000))


def _reflect(store: LearningStore, server: ModelServer) -> None:
    outcome = asyncio.run(reflect_inbox(store, Reflector(provider_from_config(server.config("openai")), "scripted-model")))
    assert outcome.failed == 0, outcome


@pytest.fixture
def held_store(tmp_path: Path) -> LearningStore:
    root = tmp_path / "projects"
    _sessions(root)
    store = LearningStore.open(tmp_path / "learning")
    import_sessions(store, "claude", root, voices=DEFAULT_VOICES)
    with ModelServer(responder=lessons_responder) as server:
        _reflect(store, server)
        assert server.completions() == [], "all three read untrusted: nothing was sent"
    return store


def test_each_held_correction_names_the_call_whole_and_whether_a_stranger_was_there(held_store: LearningStore) -> None:
    # Pins: what held a correction back was filed under "no trust entry can
    # answer (a stranger's text stays untrusted)" when it was only the
    # reader's doubt, and the person had no say over it.
    count, rows = held_now(held_store)
    assert count == 3
    by_words = {r.words: r for r in rows}
    measure, cache, median = (by_words[w] for w in ("Always measure three runs, not one.", "Cache the tokenizer only.",
                                                     "Report the median, not the mean."))
    assert measure.call == SCRIPT and measure.tool == "Bash" and measure.vouchable and measure.stranger == []
    assert median.vouchable and median.call == SCRIPT
    assert not cache.vouchable and any("curl" in s for s in cache.stranger), cache


def test_a_vouch_queues_the_correction_once_records_who_and_when_and_trusts_no_program(held_store: LearningStore) -> None:
    # Pins: a correction held back by a program of the person's own could
    # never be learned, whatever the person said.
    _, rows = held_now(held_store)
    measure = next(r for r in rows if r.words == "Always measure three runs, not one.")
    done = vouch(held_store, [measure.id.rsplit("-", 1)[1]], by="pat")  # its last part names it
    assert done.queued == [measure.id] and done.refused == [] and len(done.entries) == 1
    [entry] = queued_sessions(held_store, "@vouch-")
    [plan] = entry.plans
    assert (plan.origin, plan.evidence) == (Origin.CLEAN, Evidence.FULL)
    assert "12 ms" in plan.intervention.context, "the context up to the person's words is shown"
    assert "guide" not in plan.intervention.aftermath.lower(), "what came after the curl stays withheld"
    [record] = held_store.vouches()
    assert (record.reflection, record.by, record.call) == (measure.id, "pat", SCRIPT) and record.vouched_at
    log = subprocess.run(["git", "-C", str(held_store.root), "log", "-1", "--format=%B"], capture_output=True, text=True).stdout
    assert "Vouched for 1 correction(s)" in log and "by pat" in log and "Always measure three runs" in log
    # Queued once: a second vouch while it waits queues nothing.
    with pytest.raises(NotFound):
        vouch(held_store, [measure.id], by="pat")  # no longer held: it waits to be asked
    assert len(queued_sessions(held_store, "@vouch-")) == 1
    # No program is trusted: the other session's correction is still held back by the script.
    assert load_trust().entries == ()
    count, rows = held_now(held_store)
    assert count == 2 and {r.words for r in rows} == {"Cache the tokenizer only.", "Report the median, not the mean."}

    with ModelServer(responder=lessons_responder) as server:
        _reflect(held_store, server)
        [sent] = [r.raw.decode() for r in server.completions()]
        assert "Always measure three runs" in sent and "example.org" not in sent
    lessons, counts = list_lessons(held_store.reflexions(), asked_again=settled(held_store))
    assert counts.learnable == 1 and counts.untrusted == withheld(held_store)[0] == 2, counts
    assert len(lessons) == 3, "each correction once: the vouched one as its lesson, not also as withheld"


def test_a_vouch_for_what_a_stranger_put_in_context_is_refused_by_name(held_store: LearningStore) -> None:
    _, rows = held_now(held_store)
    cache = next(r for r in rows if r.words == "Cache the tokenizer only.")
    done = vouch(held_store, [cache.id], by="pat")
    assert done.queued == [] and done.entries == []
    [refused] = done.refused
    assert "stranger's text" in refused and "curl" in refused and "line " in refused, refused
    assert held_store.vouches() == [] and queued_sessions(held_store, "@vouch-") == []
    with pytest.raises(NotFound, match="lessons --held"):
        vouch(held_store, ["no-such-id"], by="pat")
