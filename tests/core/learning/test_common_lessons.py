"""Lessons common to several projects: the global pass is shown the lessons
stranded in projects too small for a pass of their own, and files a global
rule only where two projects' lessons agree. A real store, real git
repositories for the projects, and a scripted model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mecha.core.domain.reflexion import Reflexion
from mecha.core.learning.common import one_project_refusals, stranded
from mecha.core.learning.consolidation import Learner
from mecha.core.learning.learn import domains_to_learn, learn_scopes, learnable_pool, scopes_ready
from mecha.core.learning.proposals import accept
from mecha.core.store.learning_store import LearningStore
from tests import builders
from tests.fakes import ScriptedProvider


def git_repo(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return str(path.resolve())


def lesson(id: str, project: str | None, text: str) -> Reflexion:
    return builders.reflexion(id, text, session_id=f"s-{id}", context="committing the change",
                              intervention="no co-author line in the commit message, please", project=project,
                              confidence=0.8)


def reply(*rules: tuple[str, list[str]]) -> str:
    return json.dumps({"rules": [{"rule": t, "based_on": cites, "replaces": [], "confidence": 0.8,
                                  "based_on_count": len(cites)} for t, cites in rules], "dropped": []})


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    return LearningStore.open(tmp_path / "learning")


@pytest.fixture
def three(tmp_path: Path) -> tuple[str, str, str]:
    return git_repo(tmp_path / "app"), git_repo(tmp_path / "tool"), git_repo(tmp_path / "site")


async def test_one_correction_in_each_of_three_projects_becomes_one_global_rule(
    store: LearningStore, three: tuple[str, str, str]
) -> None:
    # Pins: the same preference corrected once in each of three projects
    # never reached any pass — each project held one lesson, short of the
    # minimum — so the person never saw a rule.
    app, tool, site = three
    store.append_reflexions([
        lesson("a1", app, "Leave the co-author trailer out of commit messages."),
        lesson("t1", tool, "Commit messages carry no co-author trailer."),
        lesson("s1", site, "Keep the site's build output out of the docs folder."),
    ])
    assert scopes_ready(store, "behavior")[0] == [None]
    assert domains_to_learn(store) == ["behavior"], "the pass starts by itself"
    # The lessons stand by project root: app (R1), site (R2), tool (R3).
    model = ScriptedProvider(reply(
        ("Never add a co-author trailer to a commit message.", ["R1", "R3"]),
        ("Keep build output out of the docs folder.", ["R2"]),
    ))
    [(scope, outcome)] = await learn_scopes(store, "behavior", Learner(model))
    assert scope is None and outcome.status == "pending"
    prompt = model.requests[0].user
    assert 'learned in project "app"' in prompt and 'learned in project "site"' in prompt
    assert "two or more projects" in prompt
    p = store.proposal(outcome.proposal_id or "")
    assert p.project is None
    assert [r.text for r in p.rules] == ["Never add a co-author trailer to a commit message."]
    [refused] = [r for r in p.refusals if r.kind == "rule"]
    assert refused.rule == "Keep build output out of the docs folder."
    assert 'one project ("site") alone' in refused.reason

    accept(store, p.id)
    assert [r.text for r in store.learned_rules("behavior")] == ["Never add a co-author trailer to a commit message."]
    assert store.learned_rules("behavior", app) == [] and store.learned_rules("behavior", tool) == []
    assert [r.id for r in learnable_pool(store, "behavior", site)] == ["s1"], "the lesson no rule used waits in its project"


def test_a_lesson_a_pending_proposal_rests_on_is_shown_to_no_other_scope(
    store: LearningStore, three: tuple[str, str, str]
) -> None:
    app, tool, _ = three
    store.append_reflexions([lesson("a1", app, "x one"), lesson("t1", tool, "x two"), lesson("g1", None, "x three")])
    store.write_proposal(builders.proposal("p-global", [], reflexion_ids=["a1", "t1", "g1"]))
    assert learnable_pool(store, "behavior", app) == [] and learnable_pool(store, "behavior", tool) == []
    assert learnable_pool(store, "behavior") == []


def test_stranded_lessons_come_from_two_short_projects_or_none() -> None:
    a = [lesson("a1", "/p/a", "x")]
    b = [lesson("b1", "/p/b", "y"), lesson("b2", "/p/b", "z")]
    big = [lesson(f"c{i}", "/p/c", "w") for i in range(3)]
    assert [r.id for r in stranded({"/p/a": a, "/p/b": b, "/p/c": big})] == ["a1", "b1", "b2"]
    assert stranded({"/p/a": a, "/p/c": big}) == [], "one short project's lessons wait for it"


def test_a_global_rule_on_one_projects_lessons_is_refused_and_one_with_a_global_lesson_is_not() -> None:
    batch = [lesson("a1", "/p/a", "x"), lesson("a2", "/p/a", "y"), lesson("g1", None, "z"), lesson("b1", "/p/b", "w")]
    narrow = builders.rule("Narrow.", sources=["a1", "a2"])
    with_global = builders.rule("With a global lesson.", sources=["a1", "g1"])
    two_projects = builders.rule("Two projects.", sources=["a1", "b1"])
    assert one_project_refusals([narrow, with_global, two_projects], [], batch) == [narrow]
