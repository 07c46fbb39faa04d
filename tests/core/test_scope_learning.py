"""Learning in scopes: a learn pass pools one domain in one scope, files its
proposal for that scope, and an accept writes that scope's rules file. A
real store (real git, real files), real git repositories for the projects,
and a scripted model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mecha.core.errors import ModelFailure
from mecha.core.learning.consolidation import Learner
from mecha.core.learning.learn import learn_domain, learn_refusal, learn_scopes, learnable_pool, scopes_ready
from mecha.core.learning.proposals import accept_proposal
from mecha.core.learning.reflection import Origin, Reflexion
from mecha.core.store.learning_store import LearningStore
from tests.fakes import ScriptedProvider


def git_repo(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return str(path.resolve())


def reflexion(id: str, project: str | None, *, domain: str = "behavior", origin: Origin = Origin.CLEAN) -> Reflexion:
    return Reflexion(
        id=id, domain=domain, session_id=f"s-{id}", trigger="steer", context="ctx",
        intervention=f"intervention {id}", reflexion_text=f"lesson {id}",
        created_at="2026-11-01T00:00:00.000000Z", origin=origin, project=project,
    )


def rules_reply(*texts: str) -> str:
    rules = [{"rule": t, "based_on": ["R1"], "replaces": [], "confidence": 0.9, "based_on_count": 2} for t in texts]
    return json.dumps({"rules": rules, "dropped": []})


def git_log(store: LearningStore) -> list[str]:
    out = subprocess.run(["git", "log", "--format=%s"], cwd=store.root, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    return LearningStore.open(tmp_path / "learning")


@pytest.fixture
def two(tmp_path: Path) -> tuple[str, str]:
    return git_repo(tmp_path / "app"), git_repo(tmp_path / "tool")


def test_the_pool_of_a_scope_holds_only_that_scopes_reflections(store: LearningStore, two: tuple[str, str]) -> None:
    # Pins: one repository's corrections argued into another's rules, or
    # old unscoped reflections lost to every project's pool.
    app, tool = two
    store.append_reflexions([
        reflexion("g1", None), reflexion("a1", app), reflexion("a2", app), reflexion("t1", tool),
        reflexion("au", app, origin=Origin.UNTRUSTED),
    ])
    assert [r.id for r in learnable_pool(store, "behavior")] == ["g1"]
    assert [r.id for r in learnable_pool(store, "behavior", app)] == ["a1", "a2"]
    assert [r.id for r in learnable_pool(store, "behavior", tool)] == ["t1"]


def test_each_scope_counts_its_own_minimum_and_says_which_scope_is_short(store: LearningStore, two: tuple[str, str]) -> None:
    app, tool = two
    store.append_reflexions([reflexion(f"a{i}", app) for i in range(3)] + [reflexion("t1", tool), reflexion("g1", None)])
    ready, why = scopes_ready(store, "behavior")
    assert ready == [app] and why is None
    refusal = learn_refusal(store, "behavior", None, tool)
    assert refusal is not None and f"in project {tool}" in refusal and "has 1 learnable" in refusal
    ready, why = scopes_ready(store, "behavior", None, tool)
    assert ready == [] and why == refusal
    # Nothing anywhere: the global refusal, worded as before scopes.
    empty, why = scopes_ready(store, "writing")
    assert empty == [] and why == "writing has 0 learnable unprocessed reflection(s); a learn pass needs at least 3"


async def test_a_pass_files_one_proposal_per_ready_scope_and_accept_writes_each_scopes_file(
    store: LearningStore, two: tuple[str, str]
) -> None:
    # Pins: a project's lesson accepted into the global file (told to every
    # repository), or two scopes' lessons merged into one proposal.
    app, tool = two
    store.append_reflexions(
        [reflexion(f"g{i}", None) for i in range(3)]
        + [reflexion(f"a{i}", app) for i in range(3)]
        + [reflexion(f"t{i}", tool) for i in range(2)]
    )
    provider = ScriptedProvider(rules_reply("Ask before deleting anything."), rules_reply("Indent with two spaces."))
    results = await learn_scopes(store, "behavior", Learner(provider))
    assert [scope for scope, _ in results] == [None, app], "the tool project has too few and is not asked about"
    (_, g), (_, a) = results
    assert g.status == a.status == "pending"
    pg, pa = store.proposal(g.proposal_id or ""), store.proposal(a.proposal_id or "")
    assert (pg.project, pg.reflexion_ids) == (None, ["g0", "g1", "g2"])
    assert (pa.project, pa.reflexion_ids) == (app, ["a0", "a1", "a2"])
    assert f"active behavior in project {app} rules" in a.outcome
    assert "intervention g0" not in provider.requests[1].user, "a project's pass sees its own reflections only"

    # The global proposal does not block the project's scope, and vice versa.
    assert learn_refusal(store, "behavior", 1, tool) is None
    accept_proposal(store, pa.id)
    assert [r.text for r in store.learned_rules("behavior", app)] == ["Indent with two spaces."]
    assert store.learned_rules("behavior") == [], "the global file is untouched by a project's accept"
    assert [r.id for r in learnable_pool(store, "behavior", app)] == []
    accept_proposal(store, pg.id)
    assert [r.text for r in store.learned_rules("behavior")] == ["Ask before deleting anything."]
    assert store.render_block(None, tool).rule_ids == [store.learned_rules("behavior")[0].id]
    log = git_log(store)
    assert log[1].startswith(f"accept proposal {pa.id}: behavior learned rules (project {app}) 0 -> 1 active")
    assert any(line.startswith(f"learn behavior in project {app}: propose 0 -> 1") for line in log)


async def test_a_pass_for_one_project_learns_that_scope_alone(store: LearningStore, two: tuple[str, str]) -> None:
    app, _ = two
    store.append_reflexions([reflexion(f"g{i}", None) for i in range(3)] + [reflexion(f"a{i}", app) for i in range(3)])
    provider = ScriptedProvider(rules_reply("Indent with two spaces."))
    [(scope, outcome)] = await learn_scopes(store, "behavior", Learner(provider), project=app)
    assert scope == app and outcome.status == "pending"
    assert len(provider.requests) == 1
    assert [p.project for p in store.proposals()] == [app]


async def test_an_unchanged_pass_is_remembered_per_scope(store: LearningStore, two: tuple[str, str]) -> None:
    # Pins: one scope's "nothing to change" forgotten as soon as another
    # scope is learned, so the model is asked the same question again.
    app, tool = two
    store.append_reflexions([reflexion(f"a{i}", app) for i in range(3)] + [reflexion(f"t{i}", tool) for i in range(3)])
    kept = await learn_domain(store, "behavior", Learner(ScriptedProvider(rules_reply())), project=app)
    assert kept.status == "unchanged"
    filed = await learn_domain(store, "behavior", Learner(ScriptedProvider(rules_reply("Tabs, never spaces."))), project=tool)
    assert filed.status == "pending"
    refusal = learn_refusal(store, "behavior", None, app)
    assert refusal is not None and "kept its 0 rule(s)" in refusal
    assert [r.project for r in store.runs()] == [app, tool]


async def test_a_scope_the_model_fails_is_reported_and_the_others_still_learn(store: LearningStore, two: tuple[str, str]) -> None:
    app, _ = two
    store.append_reflexions([reflexion(f"g{i}", None) for i in range(3)] + [reflexion(f"a{i}", app) for i in range(3)])
    provider = ScriptedProvider("I would rather not.", rules_reply("Indent with two spaces."))
    results = await learn_scopes(store, "behavior", Learner(provider))
    assert [(s, o.status) for s, o in results] == [(None, "failed"), (app, "pending")]
    assert results[0][1].outcome.startswith("failed — UnusableReply")
    assert [r.id for r in learnable_pool(store, "behavior")] == ["g0", "g1", "g2"], "still in the pool"
    # Every scope failing is the pass failing.
    with pytest.raises(ModelFailure):
        await learn_scopes(store, "behavior", Learner(ScriptedProvider("I would rather not.")), project=None)
