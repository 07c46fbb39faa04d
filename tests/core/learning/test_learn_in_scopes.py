"""Learning in scopes: a learn pass pools one domain in one scope, files its
proposal for that scope, and an accept writes that scope's rules file. A
real store (real git, real files), real git repositories for the projects,
and a scripted model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mecha.core.domain.reflexion import Origin, Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.errors import InvalidInput, ModelFailure, Stale
from mecha.core.learning.consolidation import Learner
from mecha.core.learning.learn import learn_domain, learn_refusal, learn_scopes, learnable_pool, scopes_ready
from mecha.core.learning.proposals import accept, accept_proposal, propose_retirement, reject_proposal
from mecha.core.learning.scope import promotion_candidates
from mecha.core.store.learning_store import LearningStore
from tests import builders
from tests.builders import write_learned_rules
from tests.fakes import ScriptedProvider


def git_repo(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return str(path.resolve())


def reflexion(id: str, project: str | None, *, domain: str = "behavior", origin: Origin = Origin.CLEAN) -> Reflexion:
    return builders.reflexion(id, f"lesson {id}", domain=domain, session_id=f"s-{id}", context="ctx",
                              intervention=f"intervention {id}: {builders.ASK_FIRST}", origin=origin, project=project)


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
    assert [r.id for r in learnable_pool(store, "behavior", app)] == ["a1", "a2"]
    assert [r.id for r in learnable_pool(store, "behavior", tool)] == ["t1"]
    # The global pool is shown the lessons stranded in projects too small
    # for a pass of their own, when two projects or more hold them
    # (`common`)...
    assert [r.id for r in learnable_pool(store, "behavior")] == ["g1", "a1", "a2", "t1"]
    # ...and not once a project has enough for its own pass: one project's
    # lessons alone wait for that project.
    store.append_reflexions([reflexion("a3", app)])
    assert [r.id for r in learnable_pool(store, "behavior")] == ["g1"]


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
    assert empty == [] and why is not None
    assert why.startswith("writing has 0 learnable unprocessed reflection(s); a learn pass needs at least 3 (`--min N`")


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
    assert f"active behavior rules in project {app}" in a.outcome
    assert "intervention g0" not in provider.requests[1].user, "a project's pass sees its own reflections only"

    # The global proposal does not block the project's scope, and vice versa.
    assert learn_refusal(store, "behavior", 1, tool) is None
    accept_proposal(store, pa.id)
    assert [r.text for r in store.learned_rules("behavior", app)] == ["Indent with two spaces."]
    assert store.learned_rules("behavior") == [], "the global file is untouched by a project's accept"
    assert [r.id for r in learnable_pool(store, "behavior", app)] == ["a1", "a2"], "the lessons no rule cites wait"
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


# ─── accept --global ────────────────────────────────────────────────────────


async def _project_proposal(store: LearningStore, project: str, *texts: str, prefix: str = "a") -> str:
    store.append_reflexions([reflexion(f"{prefix}-{Path(project).name}-{i}", project) for i in range(3)])
    outcome = await learn_domain(store, "behavior", Learner(ScriptedProvider(rules_reply(*texts))), project=project)
    assert outcome.proposal_id is not None, outcome.outcome
    return outcome.proposal_id


async def test_accept_as_global_sends_the_new_rules_to_the_global_file(store: LearningStore, two: tuple[str, str]) -> None:
    # Pins: `--global` dropping the lesson, leaving it in the project too (told
    # twice), or losing what else the proposal changed in the project.
    app, tool = two
    write_learned_rules(store, "behavior", [Rule(text="Keep the old rule.", id="r-old")], app)
    pid = await _project_proposal(store, app, "Keep the old rule.", "Ask before deleting anything.")
    done = accept(store, pid, as_global=True)
    assert done.proposal.accepted_as_global and done.proposal.status.value == "accepted"
    assert done.proposal.project == app, "the record still says where it was learned"
    assert [r.text for r in store.learned_rules("behavior")] == ["Ask before deleting anything."]
    assert [r.text for r in store.learned_rules("behavior", app)] == ["Keep the old rule."]
    assert [r.id for r in store.reflexions() if r.is_processed] == [store.reflexions()[0].id], "the cited lesson only"
    assert store.render_block(None, tool).rule_ids == [store.learned_rules("behavior")[0].id]
    assert git_log(store)[0].startswith(f"accept proposal {pid}: behavior learned rules (global, as a person chose)")


async def test_accept_as_global_refuses_what_it_cannot_mean(store: LearningStore, two: tuple[str, str]) -> None:
    app, _ = two
    store.append_reflexions([reflexion(f"g{i}", None) for i in range(3)])
    global_one = await learn_domain(store, "behavior", Learner(ScriptedProvider(rules_reply("Ask before deleting anything."))))
    assert global_one.proposal_id is not None, global_one.outcome
    plain = accept(store, global_one.proposal_id or "", as_global=True)
    assert not plain.proposal.accepted_as_global, "a global proposal is global already"
    assert [r.text for r in store.learned_rules("behavior")] == ["Ask before deleting anything."]
    write_learned_rules(store, "behavior", [Rule(text="Tabs.", id="r-t")], app)
    retire = propose_retirement(store, "behavior", "r-t", "wrong for this repository", project=app)
    with pytest.raises(InvalidInput, match="adds no rule"):
        accept(store, retire.id, as_global=True)
    # Refused means nothing written and still pending.
    assert store.proposal(retire.id).status.value == "pending"
    assert [r.text for r in store.learned_rules("behavior", app)] == ["Tabs."]


async def test_accept_as_global_is_refused_as_stale_when_the_project_moved(store: LearningStore, two: tuple[str, str]) -> None:
    app, _ = two
    pid = await _project_proposal(store, app, "Ask before deleting anything.")
    write_learned_rules(store, "behavior", [Rule(text="A hand edit.", id="r-h")], app)
    with pytest.raises(Stale, match=f"project {app}"):
        accept(store, pid, as_global=True)
    assert store.learned_rules("behavior") == []


# ─── promotions ─────────────────────────────────────────────────────────────


async def test_a_lesson_learned_in_two_projects_is_proposed_for_promotion_never_applied(
    store: LearningStore, two: tuple[str, str]
) -> None:
    # Pins: a lesson silently made global, or never offered for promotion.
    app, tool = two
    first = accept(store, await _project_proposal(store, app, "Run the tests before deleting anything."))
    assert first.promotions == [], "one project is not two"
    second = accept(store, await _project_proposal(store, tool, "run the tests before deleting anything"))
    [promo] = second.promotions
    assert promo.status.value == "pending" and promo.project is None
    assert promo.promoted_from == sorted([app, tool])
    assert [r.text for r in promo.rules] == ["Run the tests before deleting anything."]
    assert promo.rules[0].sources == ["a-app-0", "a-tool-0"], "the lesson's sources in every project"
    assert store.learned_rules("behavior") == [], "filed, never applied"
    assert git_log(store)[0].startswith(f"propose promoting a behavior lesson to the global rules ({promo.id})")

    # A third accept in either project files no second promotion of it.
    third = accept(store, await _project_proposal(store, app, "Run the tests before deleting anything.", "Keep diffs small.", prefix="b"))
    assert third.promotions == []

    done = accept(store, promo.id)
    assert done.promotions == []
    [g] = store.learned_rules("behavior")
    assert g.text == "Run the tests before deleting anything."
    assert [r.text for r in store.learned_rules("behavior", app)] == ["Keep diffs small."]
    assert store.learned_rules("behavior", tool) == []
    for project in (app, tool):
        assert store.render_block(None, project).rule_ids.count(g.id) == 1, "told once, from the global rules"


async def test_a_rejected_promotion_is_not_proposed_again(store: LearningStore, two: tuple[str, str]) -> None:
    app, tool = two
    accept(store, await _project_proposal(store, app, "Run the tests before deleting anything."))
    [promo] = accept(store, await _project_proposal(store, tool, "Run the tests before deleting anything.")).promotions
    reject_proposal(store, promo.id, "each repository decides this for itself")
    again = accept(store, await _project_proposal(store, tool, "Run the tests before deleting anything.", "Keep diffs small.", prefix="b"))
    assert again.promotions == []
    assert [p.id for p in store.proposals() if p.promoted_from] == [promo.id]


async def test_a_promotion_lands_on_the_global_rules_as_they_are_when_accepted(store: LearningStore, two: tuple[str, str]) -> None:
    # Another accept moved the global rules after the promotion was filed:
    # the promotion adds one lesson, so it still means exactly that.
    app, tool = two
    store.append_reflexions([reflexion(f"g{i}", None) for i in range(3)])
    glob = await learn_domain(store, "behavior", Learner(ScriptedProvider(rules_reply("Ask before deleting anything."))))
    accept(store, await _project_proposal(store, app, "Run the tests before deleting anything."))
    [promo] = accept(store, await _project_proposal(store, tool, "Run the tests before deleting anything.")).promotions
    accept(store, glob.proposal_id or "")
    # A pending promotion is the global scope's pending proposal.
    assert f"proposal {promo.id} for behavior is still pending" in (learn_refusal(store, "behavior", 1) or "")
    done = accept(store, promo.id)
    assert [r.text for r in store.learned_rules("behavior")] == [
        "Ask before deleting anything.", "Run the tests before deleting anything."]
    assert [r.text for r in done.proposal.rules_before] == ["Ask before deleting anything."]


def test_promotion_candidates_skip_a_lesson_the_global_rules_hold_even_retired() -> None:
    a, b = "/src/a", "/src/b"
    same = {a: [Rule(text="Ask first.", id="1")], b: [Rule(text="ask first", id="2")]}
    [(rule, where)] = promotion_candidates([], same)
    assert rule.id == "1" and where == [a, b]
    assert promotion_candidates([Rule(text="Ask first", retired_at="x")], same) == []
    assert promotion_candidates([], same, already={"ask first"}) == []
    assert promotion_candidates([], {a: same[a], b: [Rule(text="Ask first.", enabled=False)]}) == []


# ─── naming the scope ───────────────────────────────────────────────────────


async def test_the_proposal_method_and_its_text_name_each_proposals_and_rules_scope(
    store: LearningStore, two: tuple[str, str]
) -> None:
    # Pins: a person accepting a proposal without being told which
    # repository (or all of them) its rules will reach.
    from mecha.sidecar import humane
    from mecha.sidecar.context import Context, InitializationOptions
    from mecha.sidecar.handlers import call

    app, tool = two
    ctx = Context.from_options(InitializationOptions(learning_dir=str(store.root)))
    pid = await _project_proposal(store, app, "Run the tests before deleting anything.")
    shown = call(ctx, "mecha/proposal", {"id": pid})
    assert shown["scope"] == app and shown["proposal"]["project"] == app
    assert [c["scope"] for c in shown["changes"]] == [app]
    assert f"in project {app} (live when proposed)" in shown["diff"]
    text = humane.proposal_with_diff(shown)
    assert f"scope: project {app}" in text and f"added (project {app}): Run the tests" in text

    accepted = call(ctx, "mecha/acceptProposal", {"id": pid, "as_global": True})
    assert accepted["proposal"]["accepted_as_global"] is True
    again = call(ctx, "mecha/proposal", {"id": pid})
    assert [c["scope"] for c in again["changes"]] == ["global"]
    assert humane.proposal_line(again["proposal"]).endswith(f"project {app}, accepted as global")

    accept(store, await _project_proposal(store, app, "Keep diffs small.", prefix="b"))
    filed = call(ctx, "mecha/acceptProposal", {"id": await _project_proposal(store, tool, "keep diffs small")})
    [promo] = filed["promotions"]
    assert "filed promotion" in humane.accepted(filed) and promo["id"] in humane.accepted(filed)
    shown = call(ctx, "mecha/proposal", {"id": promo["id"]})
    assert shown["scope"] == "global" and shown["proposal"]["promoted_from"] == sorted([app, tool])
    text = humane.proposal_with_diff(shown)
    assert "scope: global (promotion: live in 2 projects)" in text and f"  from project {tool}" in text
    listed = humane.proposals(call(ctx, "mecha/proposals", {}))
    assert listed.count("global (promotion") == 1 and listed.count(f"project {tool}") == 1


# ─── a store from before scopes ─────────────────────────────────────────────


def _old_reflection(n: int) -> str:
    return json.dumps({
        "id": f"rx-old-{n}", "domain": "behavior", "session_id": f"s-old-{n}", "trigger": "steer",
        "context": "c", "intervention": f"stop {n}", "reflexion_text": "Stop when asked.", "error_type": None,
        "confidence": 0.9, "is_processed": False, "leap_run_id": None,
        "created_at": "2026-01-01T00:00:00.000000Z", "origin": "clean", "evidence": "full",
    })


async def test_a_store_laid_out_before_scopes_learns_and_accepts_as_global(tmp_path: Path) -> None:
    # Pins: an upgrade that files a person's old lessons under some project,
    # loses the memory of an unchanged pass, or refuses an old pending
    # proposal as belonging nowhere.
    root = tmp_path / "learning"
    (root / "rules").mkdir(parents=True)
    (root / "proposals").mkdir()
    (root / "rules" / "behavior.learned.toml").write_text('[[rules]]\nid = "r-old"\ntext = "Ask before deleting."\n')
    (root / "reflections.jsonl").write_text("".join(_old_reflection(n) + "\n" for n in range(3)))
    (root / "runs.jsonl").write_text(json.dumps({
        "id": "run-old", "domain": "writing", "reflexions_processed": 0, "rules_before": 0, "rules_after": 0,
        "created_at": "2026-01-01T00:00:00.000000Z", "unchanged": True, "reflexion_ids": ["rx-w"],
    }) + "\n")
    old_proposal = {
        "id": "p-old", "domain": "writing", "status": "pending", "reflexion_ids": [], "rules_before": [],
        "rules": [{"text": "Write in plain words."}], "evidence": "", "created_at": "2026-01-01T00:00:00.000000Z",
        "resolved_at": None, "reason": None,
    }
    (root / "proposals" / "p-old.json").write_text(json.dumps(old_proposal))
    store = LearningStore.open(root)
    app = git_repo(tmp_path / "app")

    assert [r.project for r in store.runs()] == [None]
    assert scopes_ready(store, "behavior") == ([None], None)
    [(scope, outcome)] = await learn_scopes(store, "behavior", Learner(ScriptedProvider(rules_reply(
        "Ask before deleting.", "Stop when the person asks you to stop."))))
    assert scope is None and outcome.status == "pending"
    accept(store, outcome.proposal_id or "")
    accept(store, "p-old")
    assert [r.text for r in store.learned_rules("behavior")] == ["Ask before deleting.", "Stop when the person asks you to stop."]
    assert [r.text for r in store.learned_rules("writing")] == ["Write in plain words."]
    assert store.projects() == {}
    assert store.render_block(None, app).rule_ids == store.render_block().rule_ids
    block = store.render_block().block or ""
    assert "Stop when the person asks you to stop." in block and "Write in plain words." in block
    assert "(this project)" not in (store.render_block(None, app).block or "")


async def test_a_project_pass_proposes_no_lesson_the_global_rules_hold(store: LearningStore, two: tuple[str, str]) -> None:
    # Pins: a promoted lesson learned back into a project, so its runs are
    # told it twice and no promotion can ever remove the copy.
    app, _ = two
    write_learned_rules(store, "behavior", [Rule(text="Run the tests before deleting anything.", id="r-g")])
    pid = await _project_proposal(store, app, "run the tests before deleting anything", "Indent with two spaces.")
    p = store.proposal(pid)
    assert [r.text for r in p.rules] == ["Indent with two spaces."]
    [refusal] = p.refusals
    assert refusal.rule == "run the tests before deleting anything" and "global rules hold this lesson" in refusal.reason
