"""A change of trust asks again what now reads clean, and nothing else: an
untrusted intervention is recorded without a model call, and `trust add`
of the tool that held it back queues it to be asked — once."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from mecha.core.agents.held import withheld
from mecha.core.agents.importing import import_sessions
from mecha.core.agents.retrust import reclassify
from mecha.core.domain.reflexion import Origin
from mecha.core.environment.trust import add_trust, load_trust
from mecha.core.learning.reflect import WITHHELD_LESSON, reflect_inbox
from mecha.core.learning.reflection import Reflector
from mecha.core.providers import provider_from_config
from mecha.core.sessions.mining import DEFAULT_VOICES
from mecha.core.store.learning_store import LearningStore
from tests.core.ccfixture import Claude, text, use
from tests.model_server import Action, Dialect, ModelServer, lessons_responder, reply, request_prompts


def _sessions(root: Path) -> None:
    tracker = Claude(session="aaaa0001-1111-4222-8333-444455556666")
    tracker.user("Pick the next issue.").assistant(text("Building first."), use("s1", "Bash", command="make -j4")).result("s1", "ok")
    tracker.assistant(text("Built.")).user("Run the unit tests before anything else.")
    tracker.assistant(text("Listing."), use("s2", "Bash", command="bd ready --json")).result("s2", "[]")
    tracker.assistant(text("Nothing is ready.")).user("Then file one for the flaky test, and keep titles short.")
    tracker.assistant(text("Filed."))
    web = Claude(session="aaaa0002-1111-4222-8333-444455556666")
    web.user("Read the thread.").assistant(text("Fetching."), use("w1", "Bash", command="curl -s https://example.org/thread")).result("w1", "Thread.")
    web.assistant(text("It says things.")).user("Summarise it in two lines.")
    web.assistant(text("Done."))
    folder = root / "-home-pat-proj"
    folder.mkdir(parents=True)
    (folder / "tracker.jsonl").write_bytes(tracker.bytes())
    (folder / "web.jsonl").write_bytes(web.bytes())
    old = 1_700_000_000
    for f in folder.iterdir():
        os.utime(f, (old, old))  # not a session still being written


def _reflect(store: LearningStore, server: ModelServer) -> None:
    outcome = asyncio.run(reflect_inbox(store, Reflector(provider_from_config(server.config("openai")), "scripted-model")))
    assert outcome.failed == 0, outcome


def test_untrusted_words_are_recorded_unasked_and_asked_once_their_tool_is_trusted(tmp_path: Path) -> None:
    # Pins: every untrusted intervention sent to the model although nothing
    # it answered could be learned; and a tool trusted later leaving what it
    # had held back unlearnable for good.
    root = tmp_path / "projects"
    _sessions(root)
    store = LearningStore.open(tmp_path / "learning")
    report = import_sessions(store, "claude", root, voices=DEFAULT_VOICES)
    assert len(report.queued) == 2
    with ModelServer(responder=lessons_responder) as server:
        _reflect(store, server)
        asked = [r.raw.decode() for r in server.completions()]
        assert len(asked) == 1 and "Run the unit tests before anything else." in asked[0]
        recorded = [r for r in store.reflexions() if r.origin is Origin.UNTRUSTED]
        assert sorted(r.intervention for r in recorded) == ["Summarise it in two lines.", "Then file one for the flaky test, and keep titles short."]
        assert all(r.reflexion_text.startswith(WITHHELD_LESSON[:-1]) and not r.learnable() and r.found is not None for r in recorded)
        reasons = sorted(r.reflexion_text.split("held back by ", 1)[1] for r in recorded)
        assert reasons == ["line 3: Bash (curl): reaches the network: what it prints is someone else's text)",
                           "line 7: Bash (bd): not in the table of programs known to stay on this machine)"], reasons

        count, listed = withheld(store)
        assert count == 2 and sorted(w.why.split(": ")[1] for w in listed) == ["Bash (bd)", "Bash (curl)"], listed

        add_trust(["Bash(bd)"], Path(os.environ["MECHA_SIDECAR_CONFIG"]))
        again = reclassify(store, load_trust())
        assert (again.sessions, again.asked_again, again.still_untrusted) == (2, 1, 1), again
        [queued] = again.queued
        assert queued.startswith("claude:aaaa0001-1111-4222-8333-444455556666@retrust-")
        assert reclassify(store, load_trust()).queued == [], "asked once: the entry waiting is not queued twice"

        server.clear()
        _reflect(store, server)
        [sent] = [r.raw.decode() for r in server.completions()]
        assert "Then file one for the flaky test, and keep titles short." in sent
        assert "Summarise it in two lines." not in sent, "a session that still reads untrusted stays so"
    clean = [r for r in store.reflexions() if r.origin is Origin.CLEAN]
    assert sorted(r.intervention for r in clean) == ["Run the unit tests before anything else.", "Then file one for the flaky test, and keep titles short."]
    assert all(r.learnable() for r in clean)
    assert reclassify(store, load_trust()).queued == [], "mined: nothing left to ask"
    count, [left] = withheld(store)
    assert count == 1 and left.words == "Summarise it in two lines." and "curl" in left.why and left.line == 5



def _steers(root: Path) -> None:
    """One session whose two steers are held back by two different programs
    of the person's, and whose go-ahead is answered with nothing to learn."""
    cc = Claude(session="bbbb0001-1111-4222-8333-444455556666")
    cc.user("Start.").assistant(text("Listing."), use("s1", "Bash", command="bd ready --json")).result("s1", "[]")
    cc.assistant(text("Nothing ready; shall I file one?")).user("Keep issue titles under sixty characters.")
    cc.assistant(text("Checking."), use("s2", "Bash", command="mytool status")).result("s2", "fine")
    cc.assistant(text("Fine.")).user("Name branches after the issue id, always.")
    cc.assistant(text("Done."))
    folder = root / "-home-pat-proj"
    folder.mkdir(parents=True)
    (folder / "s.jsonl").write_bytes(cc.bytes())
    old = 1_700_000_000
    os.utime(folder / "s.jsonl", (old, old))


def _skip_titles(request: Any, dialect: Dialect) -> Action:
    """Nothing to learn from the steer about titles (so it leaves no
    reflection, only an answered attempt); a lesson from anything else."""
    if "Keep issue titles under sixty" in request_prompts(request, dialect)[1]:
        return reply(json.dumps({"skip": True}))
    return lessons_responder(request, dialect)


def test_successive_changes_of_trust_ask_each_intervention_once_and_count_it_once(tmp_path: Path) -> None:
    # Pins: every `trust add` queued the same steer again under a new
    # `@retrust-` id and asked the model again, and the counts reported by
    # successive adds did not add up.
    root = tmp_path / "projects"
    _steers(root)
    store = LearningStore.open(tmp_path / "learning")
    import_sessions(store, "claude", root, voices=DEFAULT_VOICES)
    config = Path(os.environ["MECHA_SIDECAR_CONFIG"])
    with ModelServer(responder=_skip_titles) as server:
        _reflect(store, server)
        assert server.completions() == [], "both steers read untrusted: nothing sent"
        assert withheld(store)[0] == 2

        add_trust(["Bash(bd)"], config)
        # Pins: the inbox kept the old reason after the trust changed ("recorded
        # before Bash(bd) was trusted … `trust add 'Bash(bd)'` reads its session
        # again"), telling the person to run what they had just run, and never
        # named what held the correction back now.
        listed = {w.words: w for w in withheld(store, load_trust(config))[1]}
        titles, branches = listed["Keep issue titles under sixty characters."], listed["Name branches after the issue id, always."]
        assert branches.now is None and "mytool" in branches.why and "Bash (bd)" not in branches.why, branches
        assert titles.now is not None and "not asked again yet" in titles.now, "changed by hand: it says what asks it"
        first = reclassify(store, load_trust())
        assert (first.asked_again, first.already_asked, first.still_untrusted) == (1, 0, 1), first
        [held] = withheld(store, load_trust(config))[1]
        assert held.words == "Name branches after the issue id, always." and "mytool" in held.why and held.now is None
        waiting = reclassify(store, load_trust())
        assert waiting.queued == [] and (waiting.asked_again, waiting.already_asked, waiting.still_untrusted) == (0, 1, 1), waiting
        _reflect(store, server)
        assert len(server.completions()) == 1
        assert withheld(store)[0] == 1

        server.clear()
        add_trust(["Bash(mytool)"], config)
        second = reclassify(store, load_trust())
        assert (second.asked_again, second.already_asked, second.still_untrusted) == (1, 1, 0), second
        _reflect(store, server)
        [sent] = [r.raw.decode() for r in server.completions()]
        assert "Name branches after the issue id" in sent and "Keep issue titles under sixty" not in sent
        assert withheld(store)[0] == 0
        third = reclassify(store, load_trust())
        assert third.queued == [] and (third.asked_again, third.already_asked, third.still_untrusted) == (0, 2, 0), third
    # Pins: `lessons` listed each reclassified intervention twice ("53
    # lesson(s): 7 learnable, 46 untrusted" while the inbox held 42).
    from mecha.core.agents.retrust import settled
    from mecha.core.learning.lessons import list_lessons

    listed, counts = list_lessons(store.reflexions(), asked_again=settled(store))
    assert counts.untrusted == withheld(store)[0] == 0, counts
    # The titles steer was asked again and had nothing to teach: no lesson. The other is one, once.
    assert [x.intervention for x in listed] == ["Name branches after the issue id, always."] and counts.learnable == 1


def test_a_pass_counts_what_it_recorded_unasked_and_the_lessons_say_nothing_was_shown(tmp_path: Path) -> None:
    # Pins: a pass's line adding up to fewer than its reflections (the
    # withheld ones went unmentioned), and the lessons listing a withheld
    # intervention as "only the person's words were shown to the reflector"
    # when the reflector was shown nothing at all.
    from mecha.core.learning.lessons import why_not_learnable

    root = tmp_path / "projects"
    _sessions(root)
    store = LearningStore.open(tmp_path / "learning")
    import_sessions(store, "claude", root, voices=DEFAULT_VOICES)
    with ModelServer(responder=lessons_responder) as server:
        outcome = asyncio.run(reflect_inbox(store, Reflector(provider_from_config(server.config("openai")), "scripted-model")))
    assert outcome.withheld == 2 and outcome.reflections == 3
    assert "2 untrusted intervention(s) recorded without a model call" in outcome.summary()
    for r in store.reflexions():
        why = why_not_learnable(r)
        if r.origin is Origin.UNTRUSTED:
            assert why is not None and "was not asked" in why and "words were shown" not in why, why
        else:
            assert why is None
