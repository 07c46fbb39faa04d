"""The `mecha/*` methods over the wire, against the real sidecar process,
with the seeds' behaviour cases: what a harness sends, what it gets back,
and what the store holds afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mecha.core.domain.reflexion import Origin
from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, RULES_BLOCK_HEADING, RULES_BLOCK_PREAMBLE
from mecha.core.gate.candidate import MIN_HOLDOUT_PAIRS, MIN_SELECTION_PAIRS, is_holdout
from mecha.core.store.learning_store import ProposalStatus
from mecha.core.store.rules_block import rules_hash
from tests import builders
from tests.builders import write_learned_rules

from .client import SIDECAR_ARGV, Sidecar, SpawnSidecar, WireError, clean_env
from .helpers import (
    assistant_text,
    assistant_tool,
    open_store,
    proposal,
    reflexion,
    result,
    results,
    rule,
    steered,
    text,
    user,
    write_user_rules,
)

# ─── mecha/liveAffect (seed: appraisal.rs §6.2) ─────────────────────────────


def live(s: Sidecar, messages: list[dict], run_started_at: int = 0, **stats: Any) -> str:
    got = s.call(
        "mecha/liveAffect",
        {"session_id": "s1", "stats": stats, "messages": messages, "run_started_at": run_started_at},
    )
    assert set(got) == {"affect"}
    return got["affect"]


def test_live_a_clean_turn_is_neutral_and_a_ceiling_is_anger(sidecar: Sidecar) -> None:
    assert live(sidecar, []) == "neutral"
    assert live(sidecar, [], stop_cause="completed") == "neutral"
    # A run the harness cut short with nothing else against it: nobody here
    # caused it.
    assert live(sidecar, [], stop_cause="max_turns") == "anger"
    assert live(sidecar, [user("do it"), assistant_text("partly done")], stop_cause="max_turns", turns=40) == "anger"


def test_live_an_earlier_runs_steer_does_not_bleed_into_a_later_run(sidecar: Sidecar) -> None:
    messages = [*steered(), user("what's next"), assistant_text("all done")]
    found = sidecar.call("mecha/extractInterventions", {"messages": messages})["interventions"]
    assert [(i["trigger"], i["at"]) for i in found] == [("steer", 2)], "the fixture carries the steer"
    # The seed's case: run 2 starts after the steer and is clean.
    assert live(sidecar, messages, run_started_at=3) == "neutral"
    # And run_started_at really scopes it: the steer's -1.0 masks a ceiling's
    # -0.5 only when the steer belongs to the run.
    assert live(sidecar, steered(), run_started_at=0, stop_cause="max_turns") == "neutral"
    assert live(sidecar, steered(), run_started_at=3, stop_cause="max_turns") == "anger"


def test_live_a_compacted_run_is_neutral_rather_than_a_louder_partial_reading(sidecar: Sidecar) -> None:
    assert live(sidecar, steered(), stop_cause="max_turns") == "neutral"
    assert live(sidecar, steered(), stop_cause="max_turns", compactions=1) == "neutral"
    # Without the steer, the ceiling would read anger; compacted, it may not.
    assert live(sidecar, [], stop_cause="max_turns", compactions=0) == "anger"
    assert live(sidecar, [], stop_cause="max_turns", compactions=2) == "neutral"


def test_live_agrees_with_the_session_appraisal_on_the_same_outcome(sidecar: Sidecar) -> None:
    appraised = sidecar.call("mecha/appraiseSession", {"session_id": "s1", "messages": [], "stats": {"stop_cause": "loop"}})
    assert live(sidecar, [], stop_cause="loop") == appraised["label"]


def test_live_refuses_a_negative_run_start(sidecar: Sidecar) -> None:
    err = sidecar.error("mecha/liveAffect", {"session_id": "s1", "messages": [], "run_started_at": -1})
    assert err["code"] == -32602 and "run_started_at" in err["message"]


# ─── mecha/appraiseSession ──────────────────────────────────────────────────

CLEAN_TIMELINE = [{"at": 0, "taint": {"private": False, "untrusted": False}}]


def appraise(s: Sidecar, **params: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"session_id": "s1", "messages": steered()}
    base.update(params)
    got = s.call("mecha/appraiseSession", base)
    assert isinstance(got.pop("created_at"), str)
    return got


def test_appraisal_has_the_exact_serde_shape(sidecar: Sidecar) -> None:
    got = appraise(sidecar, goal="task:abc", taint_timeline=CLEAN_TIMELINE)
    assert got == {
        "id": "s1",
        "session_id": "s1",
        "goals": ["task:abc"],
        "errors": [
            {
                "goal": "task:abc",
                "channel": "intervention",
                "sign": -1.0,
                "agency": "owner",
                "visible": False,
                "cite": {"kind": "turn", "id": 2},
            }
        ],
        "label": "neutral",
        "origin": "clean",
        "taint": {"private": False, "untrusted": False},
    }


def test_appraisal_probes_are_applied_then_relabelled(sidecar: Sidecar) -> None:
    mattered = appraise(sidecar, taint_timeline=CLEAN_TIMELINE, probes=[{"at": 2, "verdict": "mattered"}])
    assert mattered["errors"] == [
        {
            "channel": "intervention",
            "sign": -1.0,
            "agency": "self",
            "visible": False,
            "controllable": True,
            "cite": {"kind": "turn", "id": 2},
        }
    ]
    assert mattered["label"] == "regret"

    redundant = appraise(sidecar, taint_timeline=CLEAN_TIMELINE, probes=[{"at": 2, "verdict": "redundant"}])
    assert [(e["agency"], e["controllable"]) for e in redundant["errors"]] == [("owner", False)]
    assert redundant["label"] == "disappointment"

    inconclusive = appraise(sidecar, taint_timeline=CLEAN_TIMELINE, probes=[{"at": 2, "verdict": "inconclusive"}])
    assert inconclusive == appraise(sidecar, taint_timeline=CLEAN_TIMELINE)


def test_two_steers_that_both_mattered_on_one_goal_are_frustration(sidecar: Sidecar) -> None:
    messages = [*steered(), assistant_tool("t2", "shell"), results(result("t2", "ok"), text("no, not that either"))]
    got = appraise(
        sidecar,
        messages=messages,
        goal="task:01J8ZK",
        taint_timeline=CLEAN_TIMELINE,
        probes=[{"at": 2, "verdict": "mattered"}, {"at": 4, "verdict": "mattered"}],
    )
    assert got["label"] == "frustration"
    assert got["origin"] == "clean"


def test_appraisal_origin_comes_from_the_timeline_never_from_stats_taint(sidecar: Sidecar) -> None:
    dirty_stats = {"taint": {"private": False, "untrusted": True}}
    clean = appraise(sidecar, stats=dirty_stats, taint_timeline=CLEAN_TIMELINE)
    assert clean["origin"] == "clean"
    assert clean["taint"] == {"private": False, "untrusted": True}, "the record keeps the run's taint"
    # No timeline: unknown, never clean — even with clean stats.
    assert appraise(sidecar)["origin"] == "untrusted"
    assert appraise(sidecar, taint_timeline=[])["origin"] == "untrusted"
    # A checkpoint after the last message covers nothing.
    assert appraise(sidecar, taint_timeline=[{"at": 5, "taint": {}}])["origin"] == "untrusted"
    # The checkpoint covering the last message decides, not the first one.
    went_untrusted = [{"at": 0, "taint": {}}, {"at": 2, "taint": {"untrusted": True}}]
    assert appraise(sidecar, taint_timeline=went_untrusted)["origin"] == "untrusted"
    private_only = [{"at": 1, "taint": {"private": True}}]
    assert appraise(sidecar, taint_timeline=private_only)["origin"] == "clean"


def test_an_unknown_goal_kind_is_no_goal(sidecar: Sidecar) -> None:
    got = appraise(sidecar, goal="zzz:1", taint_timeline=CLEAN_TIMELINE)
    assert got["goals"] == []
    assert all("goal" not in e for e in got["errors"])
    assert appraise(sidecar, goal="setpoint:attention-debt")["goals"] == ["setpoint:attention-debt"]


def test_appraisal_reads_drafts_and_counters(sidecar: Sidecar) -> None:
    def draft(id: str, status: str, edited: bool) -> dict[str, Any]:
        before = {"body_markdown": "Dear Dirk,"}
        return {
            "id": id,
            "status": status,
            "tool": "mail_send",
            "kind": "message",
            "args": {"body_markdown": "Dear Dr Vermeulen,"} if edited else before,
            "args_before": before,
            "summary": "a reply",
            "session_id": "s1",
            "created_at": "2026-08-27T00:00:00Z",
        }

    got = appraise(sidecar, messages=[], drafts=[draft("o1", "sent", False)], taint_timeline=CLEAN_TIMELINE)
    assert [(e["channel"], e["sign"] > 0, e["visible"], e["cite"]["kind"]) for e in got["errors"]] == [
        ("edit", True, True, "draft")
    ]
    assert got["label"] == "neutral", "a run that went well has no word yet"
    got = appraise(sidecar, messages=[], stats={"stop_cause": "max_turns"}, drafts=[draft("o2", "sent", True)])
    assert {e["agency"] for e in got["errors"]} == {"world", "owner"}
    assert got["label"] != "embarrassment", "no assembler produces exposure"


# ─── mecha/judge and mecha/judgeDrawn (seed: candidate.rs) ──────────────────


def stats(calls: int, errors: int, ended_failed: bool, **more: Any) -> dict[str, Any]:
    return {"tool_calls": calls, "tool_errors": errors, "ended_on_failed_call": ended_failed, "stop_cause": "completed", **more}


def corpus(n: int, holdout_in: int, f: Callable[[int], tuple[dict, dict]]) -> list[dict[str, Any]]:
    """`n` selection pairs and ceil(n/2) holdout pairs, placed by asking the
    hash rather than assuming it."""
    pairs: list[dict[str, Any]] = []
    want_hold = (n + 1) // 2
    sel = hold = i = 0
    while sel < n or hold < want_hold:
        episode = f"ep-{i}"
        i += 1
        held = is_holdout(episode, holdout_in)
        if (held and hold >= want_hold) or (not held and sel >= n):
            continue
        hold, sel = (hold + 1, sel) if held else (hold, sel + 1)
        baseline, candidate = f(len(pairs))
        pairs.append({"episode": episode, "baseline": baseline, "candidate": candidate})
    return pairs


def judge(s: Sidecar, class_: str, metric: str, pairs: list[dict], holdout_in: int = 3) -> dict[str, Any]:
    return s.call(
        "mecha/judge",
        {"class": class_, "prediction": {"metric": metric, "rationale": "because"}, "pairs": pairs, "holdout_in": holdout_in},
    )


def test_judge_accepts_a_change_that_wins_on_both_slices(sidecar: Sidecar) -> None:
    pairs = corpus(12, 3, lambda _: (stats(10, 4, True), stats(10, 1, False)))
    j = judge(sidecar, "config", "ended_on_failed_call", pairs)
    assert j["disposition"] == "Accept"
    assert set(j) == {"disposition", "selection", "holdout", "work_baseline", "work_candidate"}
    assert j["selection"] == {"wins": 12, "losses": 0, "ties": 0}
    assert j["holdout"] == {"wins": 6, "losses": 0, "ties": 0}
    assert j["work_baseline"] == j["work_candidate"] == 180


def test_judge_an_architecture_or_security_change_is_never_accepted(sidecar: Sidecar) -> None:
    pairs = corpus(12, 3, lambda _: (stats(10, 4, True), stats(10, 0, False)))
    for class_ in ("architecture", "security"):
        j = judge(sidecar, class_, "ended_on_failed_call", pairs)
        assert set(j["disposition"]) == {"Propose"}, j
        assert "person's decision" in j["disposition"]["Propose"] and class_ in j["disposition"]["Propose"]
    assert judge(sidecar, "prose", "ended_on_failed_call", pairs)["disposition"] == "Accept"


def test_judge_rejects_a_gain_bought_by_attempting_less(sidecar: Sidecar) -> None:
    pairs = corpus(12, 3, lambda _: (stats(20, 6, True), stats(1, 0, False)))
    j = judge(sidecar, "config", "ended_on_failed_call", pairs)
    assert set(j["disposition"]) == {"Reject"}
    assert "attempting less" in j["disposition"]["Reject"]
    assert j["work_candidate"] < j["work_baseline"]


def test_judge_names_an_unpredicted_regression_by_its_serde_spelling(sidecar: Sidecar) -> None:
    pairs = corpus(12, 3, lambda _: (stats(10, 1, False, turns=10), stats(10, 9, False, turns=5)))
    j = judge(sidecar, "config", "turns", pairs)
    why = j["disposition"]["Reject"]
    assert "tool_error_rate" in why and "nobody was watching" in why


def test_judge_thin_evidence_proposes(sidecar: Sidecar) -> None:
    pairs = corpus(3, 3, lambda _: (stats(10, 4, True), stats(10, 1, False)))
    j = judge(sidecar, "config", "ended_on_failed_call", pairs)
    assert "floor" in j["disposition"]["Propose"]


def test_judge_arm_maps_are_paired_and_a_one_arm_episode_is_dropped(sidecar: Sidecar) -> None:
    pairs = corpus(12, 3, lambda _: (stats(10, 4, True), stats(10, 1, False)))
    baseline = {p["episode"]: p["baseline"] for p in pairs}
    candidate = {p["episode"]: p["candidate"] for p in pairs}
    # A hard episode the candidate crashed on: in the baseline arm only, and
    # one the candidate never reached the other way round.
    baseline["hard"] = stats(5, 3, True)
    candidate["only-candidate"] = stats(50, 50, True)
    params = {
        "class": "config",
        "prediction": {"metric": "ended_on_failed_call", "rationale": "r"},
        "baseline": baseline,
        "candidate": candidate,
        "holdout_in": 3,
    }
    by_maps = sidecar.call("mecha/judge", params)
    assert by_maps == judge(sidecar, "config", "ended_on_failed_call", pairs)
    counted = sum(by_maps[s][k] for s in ("selection", "holdout") for k in ("wins", "losses", "ties"))
    assert counted == len(pairs), "only episodes in both arms are scored"

    err = sidecar.error("mecha/judge", {**params, "pairs": pairs})
    assert err["code"] == -32602 and "pairs" in err["message"]
    del params["candidate"]
    err = sidecar.error("mecha/judge", params)
    assert err["code"] == -32602 and "pairs" in err["message"]


def test_judge_drawn_applies_the_same_guardrails(sidecar: Sidecar) -> None:
    def pair(episode: str, before: int, after: int, **more: Any) -> dict[str, Any]:
        return {"episode": episode, "baseline": {"tool_calls": 10, "tool_errors": before}, "candidate": {"tool_calls": 10, "tool_errors": after, **more}}

    selection = [pair(f"s{i}", 5, 2) for i in range(MIN_SELECTION_PAIRS)]
    holdout = [pair(f"h{i}", 5, 4) for i in range(MIN_HOLDOUT_PAIRS)]
    prediction = {"metric": "tool_error_rate", "rationale": ""}

    def drawn(sel: list, hold: list, class_: str = "config") -> dict[str, Any]:
        return sidecar.call("mecha/judgeDrawn", {"class": class_, "prediction": prediction, "selection": sel, "holdout": hold})

    j = drawn(selection, holdout)
    assert j["disposition"] == "Accept"
    assert j["selection"]["wins"] == MIN_SELECTION_PAIRS
    assert "Propose" in drawn(selection, holdout[:1])["disposition"]
    worse = [pair(f"h{i}", 5, 4, turns=3) for i in range(MIN_HOLDOUT_PAIRS)]
    assert "turns" in drawn(selection, worse)["disposition"]["Propose"]
    assert "Propose" in drawn(selection, holdout, "architecture")["disposition"]


# ─── mecha/recordValidation + mecha/ruleTallies ─────────────────────────────


def validation(outcome: str, at: str, *, domain: str = "behavior", rule_ids: list[str] | None = None, attributed: str | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "reflexion_id": "refl-1",
        "trigger": "steer",
        "domain": domain,
        "rules_hash": rules_hash("block"),
        "rule_ids": ["r-a", "r-b"] if rule_ids is None else rule_ids,
        "outcome": outcome,
        "model": "qwen",
        "created_at": at,
    }
    if attributed is not None:
        rec["attributed_rule_id"] = attributed
    return rec


def test_the_ledger_folds_into_tallies(sidecar: Sidecar) -> None:
    assert sidecar.call("mecha/ruleTallies", {}) == {"tallies": {}, "by_model": {}, "measured": {}}
    assert sidecar.call("mecha/recordValidation", validation("improved", "2026-08-05T01:00:00Z")) == {}
    assert sidecar.call("mecha/recordValidation", validation("regressed", "2026-08-05T02:00:00Z", attributed="r-b")) == {}
    tallies = sidecar.call("mecha/ruleTallies", {})["tallies"]
    a, b = tallies["r-a"], tallies["r-b"]
    assert (a["observations"], a["improved"], a["regressed"], a["attributed_regressions"]) == (2, 1, 1, 0)
    assert b["attributed_regressions"] == 1, "the bisection's verdict lands on r-b alone"
    assert b["last_validated"] == a["last_validated"] == "2026-08-05T02:00:00Z"
    assert set(a) == {"observations", "improved", "regressed", "attributed_regressions", "last_validated"}
    folded = sidecar.call("mecha/ruleTallies", {})
    assert folded["by_model"]["r-a"]["qwen"] == a, "one model: its tally is the whole tally"
    assert folded["measured"]["r-b"] == "rode in 2 probes on qwen: 1 improved, 1 regressed, 1 attributed regression"

    lines = (sidecar.learning_dir / "validations.jsonl").read_text().splitlines()
    assert len(lines) == 2 and '"attributed_rule_id"' not in lines[0], "an absent attribution is omitted"

    sidecar.call("mecha/recordValidation", validation("improved", "2026-08-06T00:00:00Z", domain="writing", rule_ids=["r-w"]))
    assert set(sidecar.call("mecha/ruleTallies", {})["tallies"]) == {"r-a", "r-b", "r-w"}
    assert set(sidecar.call("mecha/ruleTallies", {"domain": "behavior"})["tallies"]) == {"r-a", "r-b"}
    assert set(sidecar.call("mecha/ruleTallies", {"domain": "writing"})["tallies"]) == {"r-w"}
    assert sidecar.call("mecha/ruleTallies", {"domain": "triage"})["tallies"] == {}


def test_validate_plans_first_and_refuses_what_it_cannot_measure(sidecar: Sidecar) -> None:
    from mecha.core.identity import now
    from mecha.core.store.learning_store import LearningStore

    plan = sidecar.call("mecha/validate", {"domain": "behavior", "dry_run": True})
    assert plan == {
        "plan": {"domain": "behavior", "budget": 5, "probes": [], "calls_per_probe": 4, "calls": 0,
                 "proposal_id": None, "skipped": {}, "skipped_kinds": {}, "cost": plan["plan"]["cost"]},
        "job": None,
        "reason": "a dry run: nothing was called (no reflections in behavior to probe yet)",
    }
    nothing = sidecar.call("mecha/validate", {"domain": "behavior"})
    assert nothing["job"] is None and nothing["reason"] == "no reflections in behavior to probe yet"
    assert not sidecar.learning_dir.exists(), "a plan creates no store"

    for budget in (0, 101):
        err = sidecar.error("mecha/validate", {"domain": "behavior", "budget": budget})
        assert err["code"] == -32602 and err["message"].startswith("budget:")
    assert sidecar.error("mecha/validate", {"domain": "../x"})["data"]["name"] == "InvalidDomain"
    assert sidecar.error("mecha/validate", {"domain": "behavior", "proposal_id": "20991231"})["data"]["name"] == "NotFound"

    store = LearningStore.open(sidecar.learning_dir)
    done = builders.proposal("20260101T000000-0000dddd", status=ProposalStatus.REJECTED, created_at=now())
    store.write_proposal(done)
    assert sidecar.error("mecha/validate", {"domain": "behavior", "proposal_id": done.id})["data"]["name"] == "NotPending"
    pending = msgspec.structs.replace(done, id="20260101T000000-0000eeee", status=ProposalStatus.PENDING)
    store.write_proposal(pending)
    err = sidecar.error("mecha/validate", {"domain": "writing", "proposal_id": pending.id})
    assert err["code"] == -32602 and "not 'writing'" in err["message"]


# ─── mecha/doctor ───────────────────────────────────────────────────────────


def checks(s: Sidecar) -> dict[str, dict[str, Any]]:
    got = s.call("mecha/doctor", {})["checks"]
    assert all(set(c) == {"name", "ok", "detail"} for c in got)
    names = [c["name"] for c in got]
    assert len(names) == len(set(names))
    return {c["name"]: c for c in got}


def test_doctor_without_a_store_or_a_model(sidecar: Sidecar) -> None:
    got = checks(sidecar)
    # A fresh install is not a fault: the store is made by the first thing that writes.
    assert got["store"]["ok"] is True and str(sidecar.learning_dir) in got["store"]["detail"]
    assert "the first import, hook or pass creates it" in got["store"]["detail"]
    assert got["model"]["ok"] is False and "NoModel" in got["model"]["detail"]
    assert not sidecar.learning_dir.exists(), "the doctor creates nothing"


def test_doctor_reports_over_budget_and_unrouted_domains(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    got = checks(sidecar)
    for name in ("store", "permissions", "git", "rules files", "budget", "routing", "learner", "proposals", "jobs"):
        assert got[name]["ok"] is True, got[name]
    assert got["model"]["ok"] is False

    write_learned_rules(store, "behavior", [rule(f"rule number {i}", f"r-{i}") for i in range(MAX_ACTIVE_RULES_PER_DOMAIN + 1)])
    write_user_rules(sidecar.learning_dir, "zeta", "only a run naming zeta reads this")
    os.chmod(store.rules_path("zeta", "user"), 0o600)
    store.write_proposal(proposal("20260101T000000-pend0001"))
    store.append_reflexions([reflexion(f"u{i}", origin=Origin.UNTRUSTED) for i in range(3)])
    got = checks(sidecar)
    assert got["budget"]["ok"] is False and "behavior: 16" in got["budget"]["detail"]
    assert got["routing"]["ok"] is False and "zeta" in got["routing"]["detail"]
    assert "behavior" not in got["routing"]["detail"]
    assert got["learner"]["ok"] is False and "behavior: 3 unprocessed, 0 learnable" in got["learner"]["detail"]
    assert "20260101T000000-pend0001" in got["proposals"]["detail"]
    assert got["permissions"]["ok"] is True, got["permissions"]


# ─── mecha/rulesPromptBlock ─────────────────────────────────────────────────


def block(s: Sidecar, domain: str | None = None) -> dict[str, Any]:
    return s.call("mecha/rulesPromptBlock", {} if domain is None else {"domain": domain})


def test_an_empty_store_has_no_block(sidecar: Sidecar) -> None:
    assert block(sidecar) == {"block": None, "rules_hash": None, "rule_ids": [], "domains": ["behavior", "writing"], "over_budget": []}
    assert not sidecar.learning_dir.exists(), "a read path creates no store"
    open_store(sidecar.learning_dir)
    assert block(sidecar)["block"] is None


def test_the_block_layout_user_rules_first_and_only_active_learned_ids(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    write_user_rules(sidecar.learning_dir, "behavior", "Answer in English")
    write_learned_rules(
        store,
        "behavior",
        [
            rule("Ask before deleting files", "r-1"),
            rule("Disabled by hand", "r-2", enabled=False),
            rule("Measured harmful", "r-3", retired_at="2026-08-01T00:00:00Z", retired_reason="regressed"),
        ],
    )
    write_learned_rules(store, "writing", [rule("Sign off with the first name only", "r-w")])
    got = block(sidecar)
    expected = (
        f"{RULES_BLOCK_HEADING}\n\n{RULES_BLOCK_PREAMBLE}\n\n"
        "### behavior\n- Answer in English\n- Ask before deleting files\n\n"
        "### writing\n- Sign off with the first name only"
    )
    assert got["block"] == expected
    assert got["block"].startswith("## Learned rules\n\n")
    assert got["rule_ids"] == ["r-1", "r-w"]
    assert got["rules_hash"] == rules_hash(got["block"])
    assert got["domains"] == ["behavior", "writing"]
    assert got["over_budget"] == []


def test_the_domain_param_adds_a_domain_after_the_run_domains(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    write_learned_rules(store, "triage", [rule("Archive newsletters", "r-t")])
    write_learned_rules(store, "behavior", [rule("Ask first", "r-b")])
    plain = block(sidecar)
    assert "triage" not in plain["block"] and plain["rule_ids"] == ["r-b"]
    got = block(sidecar, "triage")
    assert got["domains"] == ["behavior", "writing", "triage"]
    assert got["block"].endswith("### behavior\n- Ask first\n\n### triage\n- Archive newsletters")
    assert got["rule_ids"] == ["r-b", "r-t"]
    assert got["rules_hash"] == rules_hash(got["block"]) != plain["rules_hash"]
    assert block(sidecar, "writing")["domains"] == ["behavior", "writing"], "a run domain is not added twice"
    assert block(sidecar)["rule_ids"] == ["r-b"], "a cached answer for one domain is not served for another"


def test_over_budget_lists_a_domain_with_too_many_active_learned_rules(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    many = [rule(f"rule number {i}", f"r-{i}") for i in range(MAX_ACTIVE_RULES_PER_DOMAIN + 1)]
    write_learned_rules(store, "zeta", many)
    write_learned_rules(store, "behavior", many[:MAX_ACTIVE_RULES_PER_DOMAIN])
    got = block(sidecar)
    assert got["over_budget"] == [{"domain": "zeta", "active": 16}], "every domain on disk, not just the loaded ones"
    assert len(got["rule_ids"]) == MAX_ACTIVE_RULES_PER_DOMAIN


def test_a_learned_file_replaced_by_rename_is_seen_on_the_next_call(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    write_learned_rules(store, "behavior", [rule("Version one", "r-1")])
    first = block(sidecar)
    assert "- Version one" in first["block"]
    assert block(sidecar) == first
    path = store.rules_path("behavior", "learned")
    stat = path.stat()
    # Same size, and the mtime put back: only the file's identity changed.
    replacement = path.read_text().replace("Version one", "Version two")
    tmp = path.with_name("incoming.tmp")
    tmp.write_text(replacement)
    os.utime(tmp, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(tmp, path)
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    second = block(sidecar)
    assert "- Version two" in second["block"] and "Version one" not in second["block"]
    assert second["rules_hash"] == rules_hash(second["block"]) != first["rules_hash"]


def test_a_new_user_file_is_seen_on_the_next_call(sidecar: Sidecar) -> None:
    open_store(sidecar.learning_dir)
    assert block(sidecar)["block"] is None
    write_user_rules(sidecar.learning_dir, "writing", "Use British spelling")
    assert block(sidecar)["block"].endswith("### writing\n- Use British spelling")


# ─── mecha/extractInterventions and mecha/locateFollowup ───────────────────


def test_extract_finds_steers_denials_and_followups_with_their_tools(sidecar: Sidecar) -> None:
    messages = [
        user("tidy the repo"),
        assistant_tool("t1", "shell", {"cmd": "rm -rf build"}),
        results(result("t1", "Denied by the user: keep the build dir", is_error=True)),
        {"role": "assistant", "content": [text("ok, listing instead"), {"type": "tool_use", "id": "t2", "name": "ls", "input": {}}, {"type": "tool_use", "id": "t3", "name": "ls", "input": {"a": 1}}, {"type": "tool_use", "id": "t4", "name": "grep", "input": {}}]},
        results(result("t2", "a"), result("t3", "b"), result("t4", "c"), text("only the src dir")),
        assistant_tool("t5", "read"),
        results(result("t5", "Blocked by policy: no"), ),
        assistant_text("Done."),
        user("why did you touch tests/?"),
        assistant_text("Sorry."),
        {"role": "user", "content": "/model gpt"},
    ]
    got = sidecar.call("mecha/extractInterventions", {"messages": messages})["interventions"]
    assert [(i["trigger"], i["at"], i["text"]) for i in got] == [
        ("denial", 2, "keep the build dir"),
        ("steer", 4, "only the src dir"),
        ("followup", 8, "why did you touch tests/?"),
    ]
    assert got[0]["tools_before"] == ["shell"] and got[0]["tools_after"] == ["ls", "grep"]
    assert got[0]["aftermath"] == "ok, listing instead"
    assert got[1]["tools_before"] == ["ls", "grep"] and got[1]["tools_after"] == ["read"]
    assert got[2]["context"] == "Done." and got[2]["aftermath"] == "Sorry."
    assert set(got[0]) == {"trigger", "context", "text", "aftermath", "at", "tools_before", "tools_after"}


def test_configured_harness_voices_are_not_a_person(spawn_sidecar: SpawnSidecar) -> None:
    s = spawn_sidecar(options={"harnessVoices": ["[compacted]"], "finalAnswerNudge": "Answer now."})
    messages = [
        user("task"),
        assistant_text("working"),
        user("[compacted] summary of earlier turns"),
        assistant_text("still working"),
        user("Answer now."),
        assistant_text("the answer"),
        user("that is wrong"),
    ]
    got = s.call("mecha/extractInterventions", {"messages": messages})["interventions"]
    assert [i["text"] for i in got] == ["that is wrong"]
    plain = spawn_sidecar().call("mecha/extractInterventions", {"messages": messages})["interventions"]
    assert len(plain) == 3, "without the options those turns read as a person"


def test_locate_followup_finds_the_user_turn_and_never_a_tool_result(sidecar: Sidecar) -> None:
    messages = [*steered(), assistant_text("skipped"), user("  and now the docs  "), assistant_text("ok")]
    assert sidecar.call("mecha/locateFollowup", {"messages": messages, "text": "and now the docs"}) == {"index": 4}
    assert sidecar.call("mecha/locateFollowup", {"messages": messages, "text": "change of plan: skip the rest"}) == {"index": None}
    assert sidecar.call("mecha/locateFollowup", {"messages": messages, "text": "absent"}) == {"index": None}


# ─── proposals ──────────────────────────────────────────────────────────────


def test_render_candidate_is_the_block_if_accepted_and_writes_nothing(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    write_user_rules(sidecar.learning_dir, "behavior", "Answer in English")
    write_learned_rules(store, "behavior", [rule("Old rule", "r-old")])
    learned = store.rules_path("behavior", "learned")
    before_bytes, before_stat = learned.read_bytes(), learned.stat()
    store.write_proposal(proposal("20260101T000000-cand0001", rules_before=[rule("Old rule", "r-old")], rules=[rule("New rule", "r-new")]))
    live = block(sidecar)

    got = sidecar.call("mecha/renderCandidate", {"proposal_id": "20260101T000000-cand"})
    assert set(got) == {"block", "rules_hash", "rule_ids"}
    assert got["block"] == live["block"].replace("- Old rule", "- New rule")
    assert got["rule_ids"] == ["r-new"]
    assert got["rules_hash"] == rules_hash(got["block"])
    assert learned.read_bytes() == before_bytes and learned.stat().st_ino == before_stat.st_ino
    assert block(sidecar) == live
    assert sidecar.call("mecha/proposal", {"id": "20260101T000000-cand0001"})["proposal"]["status"] == "pending"


def test_render_candidate_for_another_domain_carries_it_after_the_run_domains(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    write_learned_rules(store, "behavior", [rule("Ask first", "r-b")])
    store.write_proposal(proposal("20260101T000000-tri00001", domain="triage", rules=[rule("Archive promos", "r-t")]))
    got = sidecar.call("mecha/renderCandidate", {"proposal_id": "20260101T000000-tri00001"})
    assert got["block"].endswith("### behavior\n- Ask first\n\n### triage\n- Archive promos")
    assert got["rule_ids"] == ["r-b", "r-t"]
    assert not store.rules_path("triage", "learned").exists()


def test_proposals_filter_by_status_and_domain(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    store.write_proposal(proposal("20260101T000001-aaaaaaaa"))
    store.write_proposal(proposal("20260101T000002-bbbbbbbb", domain="writing"))
    store.write_proposal(proposal("20260101T000003-cccccccc", status=ProposalStatus.REJECTED))
    store.write_proposal(proposal("20260101T000004-dddddddd", status=ProposalStatus.REJECTED_BY_GATE, domain="writing"))

    def ids(**params: Any) -> list[str]:
        return [p["id"][-8:] for p in sidecar.call("mecha/proposals", params)["proposals"]]

    assert ids() == ["aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd"], "oldest first"
    assert ids(status="pending") == ["aaaaaaaa", "bbbbbbbb"]
    assert ids(domain="writing") == ["bbbbbbbb", "dddddddd"]
    assert ids(status="pending", domain="writing") == ["bbbbbbbb"]
    assert ids(status="rejected_by_gate") == ["dddddddd"]
    assert ids(domain="triage") == []
    err = sidecar.error("mecha/proposals", {"status": "maybe"})
    assert err["code"] == -32602 and "$.status" in err["message"]
    p = sidecar.call("mecha/proposals", {"status": "pending", "domain": "behavior"})["proposals"][0]
    assert set(p) >= {"id", "domain", "status", "reflexion_ids", "rules_before", "rules", "evidence", "created_at"}


def test_a_proposal_comes_with_a_unified_diff_of_the_whole_block(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    store.write_proposal(proposal("20260101T000000-first001", rules=[rule("Ask before deleting files", "r-1")]))
    got = sidecar.call("mecha/proposal", {"id": "20260101T000000-first"})
    assert got["proposal"]["id"] == "20260101T000000-first001"
    after = sidecar.call("mecha/renderCandidate", {"proposal_id": "20260101T000000-first001"})["block"]
    lines = got["diff"].splitlines()
    assert lines[0].startswith("--- ") and lines[1].startswith("+++ ") and lines[2].startswith("@@")
    # From nothing, every line of the rendered block is an addition: the diff
    # carries the whole block, heading and preamble included.
    added = [line[1:] for line in lines[3:]]
    assert all(line.startswith("+") for line in lines[3:])
    assert "\n".join(added) == after

    # Against a live block, the diff turns the before block into the after one.
    sidecar.call("mecha/acceptProposal", {"id": "20260101T000000-first001"})
    before = block(sidecar)["block"]
    store.write_proposal(
        proposal(
            "20260101T000000-second01",
            rules_before=store.learned_rules("behavior"),
            rules=[rule("Ask before deleting or moving files", "r-1")],
        )
    )
    got = sidecar.call("mecha/proposal", {"id": "20260101T000000-second01"})
    after = sidecar.call("mecha/renderCandidate", {"proposal_id": "20260101T000000-second01"})["block"]
    assert "-- Ask before deleting files" in got["diff"].splitlines()
    assert "+- Ask before deleting or moving files" in got["diff"].splitlines()
    assert _apply(before, got["diff"]) == after


def _apply(original: str, diff: str) -> str:
    """Apply a unified diff to `original` (enough of `patch` for one file)."""
    src = original.splitlines()
    out: list[str] = []
    pos = 0
    for line in diff.splitlines()[2:]:
        if line.startswith("@@"):
            start = int(line.split()[1].split(",")[0][1:]) - 1
            out.extend(src[pos:start])
            pos = start
        elif line.startswith(" "):
            assert src[pos] == line[1:]
            out.append(line[1:])
            pos += 1
        elif line.startswith("-"):
            assert src[pos] == line[1:]
            pos += 1
        elif line.startswith("+"):
            out.append(line[1:])
    out.extend(src[pos:])
    return "\n".join(out)


def test_accepting_writes_the_learned_file_and_the_next_block_carries_it(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    store.append_reflexions([reflexion("refl-a"), reflexion("refl-b"), reflexion("refl-c")])
    store.write_proposal(proposal("20260101T000000-acc00001", reflexion_ids=["refl-a", "refl-c"],
                                  rules=[rule("Ask before deleting files", "r-1", sources=["refl-a"])]))
    done = sidecar.call("mecha/acceptProposal", {"id": "20260101T000000-acc0"})
    got = done["proposal"]
    assert got["status"] == "accepted" and got["resolved_at"]
    assert [r.id for r in store.learned_rules("behavior")] == ["r-1"]
    assert block(sidecar)["rule_ids"] == ["r-1"]
    assert done["used_lessons"] == ["refl-a"]
    processed = {r.id: r.is_processed for r in store.reflexions()}
    # Only the lesson a written rule cites is used; the batch's uncited one goes back to the pool.
    assert processed == {"refl-a": True, "refl-b": False, "refl-c": False}


def test_rejecting_keeps_the_reason_and_returns_its_reflections_to_the_pool(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    store.append_reflexions([reflexion("refl-a"), reflexion("refl-b"), reflexion("refl-c")])
    store.write_proposal(proposal("20260101T000000-rej00001", reflexion_ids=["refl-a", "refl-b"],
                                  rules=[rule("Ask before deleting files", "r-1", sources=["refl-a"]),
                                         rule("Keep diffs small", "r-2", sources=["refl-b"])]))
    got = sidecar.call("mecha/rejectProposal", {"id": "20260101T000000-rej00001", "reason": "too broad", "wrong": [2]})["proposal"]
    assert (got["status"], got["reason"]) == ("rejected", "too broad")
    assert got["resolved_at"]
    assert [(x["number"], x["rejected"]) for x in got["left_out"]] == [(2, ["refl-b"])]
    marks = {r.id: (r.is_processed, r.rejected) for r in store.reflexions()}
    assert marks == {"refl-a": (False, None), "refl-b": (True, "too broad"), "refl-c": (False, None)}
    assert not store.rules_path("behavior", "learned").exists(), "a rejection writes no rules"
    assert store.proposal("20260101T000000-rej00001").status == "rejected"


def test_accepting_without_a_rule_over_the_wire_writes_the_rest_and_rejects_only_the_lessons_called_wrong(
    sidecar: Sidecar,
) -> None:
    store = open_store(sidecar.learning_dir)
    store.append_reflexions([reflexion("refl-a"), reflexion("refl-b"), reflexion("refl-c")])
    store.write_proposal(proposal("20260101T000000-wo000001", reflexion_ids=["refl-a", "refl-b", "refl-c"],
                                  rules=[rule("Ask before deleting files", "r-1", sources=["refl-a"]),
                                         rule("Keep diffs small", "r-2", sources=["refl-b"]),
                                         rule("Run the tests first", "r-3", sources=["refl-c"])]))
    shown = sidecar.call("mecha/proposal", {"id": "20260101T000000-wo000001"})
    assert [(c["number"], c["text"]) for c in shown["changes"]] == [
        (1, "Ask before deleting files"), (2, "Keep diffs small"), (3, "Run the tests first")]
    got = sidecar.call("mecha/acceptProposal",
                       {"id": "20260101T000000-wo000001", "without": [1], "wrong": [3], "reason": "not for me"})
    assert got["proposal"]["status"] == "accepted" and [r["id"] for r in got["proposal"]["rules"]] == ["r-2"]
    assert [r.id for r in store.learned_rules("behavior")] == ["r-2"] and block(sidecar)["rule_ids"] == ["r-2"]
    marks = {r.id: (r.is_processed, r.rejected) for r in store.reflexions()}
    # Left out: its lesson waits in the pool. Called wrong: its lesson is rejected with the reason.
    assert marks == {"refl-a": (False, None), "refl-b": (True, None), "refl-c": (True, "not for me")}
    store.write_proposal(proposal("20260101T000000-wo000002", rules=[rule("Ask first", "r-9")],
                                  rules_before=store.learned_rules("behavior")))
    with pytest.raises(WireError) as bad:
        sidecar.call("mecha/acceptProposal", {"id": "20260101T000000-wo000002", "without": [3]})
    assert bad.value.error["code"] == -32602 and "without: 3" in bad.value.error["message"]


def test_retiring_a_rule_is_a_proposal_and_after_accept_it_stays_but_never_renders(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    write_learned_rules(store, "behavior", [rule("Keep me", "r-keep"), rule("Retire me", "r-old")])
    assert block(sidecar)["rule_ids"] == ["r-keep", "r-old"]

    p = sidecar.call("mecha/proposeRetirement", {"domain": "behavior", "rule_id": "r-old", "reason": "regressed twice"})["proposal"]
    assert p["status"] == "pending" and p["domain"] == "behavior"
    assert [r["id"] for r in p["rules_before"]] == ["r-keep", "r-old"]
    retired = [r for r in p["rules"] if r["id"] == "r-old"][0]
    assert retired["retired_at"] and retired["retired_reason"] == "regressed twice"
    assert block(sidecar)["rule_ids"] == ["r-keep", "r-old"], "proposing changes nothing live"
    diff = sidecar.call("mecha/proposal", {"id": p["id"]})["diff"]
    assert "-- Retire me" in diff.splitlines()

    sidecar.call("mecha/acceptProposal", {"id": p["id"]})
    text_after = store.rules_path("behavior", "learned").read_text()
    assert "Retire me" in text_after and "retired_at" in text_after, "a retired rule stays as evidence"
    live_rules = {r.id: r for r in store.learned_rules("behavior")}
    assert live_rules["r-old"].retired_at is not None and live_rules["r-keep"].retired_at is None
    got = block(sidecar)
    assert got["rule_ids"] == ["r-keep"] and "Retire me" not in got["block"]

    err = sidecar.error("mecha/proposeRetirement", {"domain": "behavior", "rule_id": "r-old", "reason": "again"})
    assert err["code"] == -32602 and "already retired" in err["message"]
    err = sidecar.error("mecha/proposeRetirement", {"domain": "behavior", "rule_id": "r-keep", "reason": "  "})
    assert err["code"] == -32602 and "reason" in err["message"]


# ─── mecha/draftResolved ────────────────────────────────────────────────────


def draft_item(id: str, edited: bool, *, status: str = "sent", untrusted: bool = False) -> dict[str, Any]:
    staged = {"subject": "Re: the report", "body_markdown": "Dear Dirk,\n\nHere it is."}
    sent = {"subject": "Re: the report", "body_markdown": "Dear Dr Vermeulen,\n\nHere it is."}
    return {
        "id": id,
        "status": status,
        "tool": "mail_send",
        "kind": "message",
        "args": sent if edited else dict(staged),
        "args_before": staged,
        "summary": "a reply",
        "session_id": "s-draft",
        "taint": {"private": True, "untrusted": untrusted},
        "created_at": "2026-08-27T00:00:00Z",
    }


def test_a_sent_and_edited_draft_is_an_edit_intervention_with_a_reflect_job(sidecar: Sidecar) -> None:
    got = sidecar.call("mecha/draftResolved", {"item": draft_item("o-1", edited=True)})
    assert got["already_mined"] is False
    i = got["intervention"]
    assert i["trigger"] == "edit"
    assert "Dear Dirk" in i["context"] and "Dear Dr Vermeulen" not in i["context"], "context: the staged text"
    assert "Dear Dr Vermeulen" in i["text"] and "Dear Dirk" not in i["text"], "text: what was sent"
    job = got["job"]
    assert job is not None and (job["kind"], job["state"]) == ("reflect", "running")
    # The pass runs detached and, with no model, fails — and says so.
    finished = sidecar.notification("mecha/jobFinished", lambda p: p["job"]["id"] == job["id"], timeout=30)["job"]
    assert finished["state"] == "failed" and finished["outcome"].startswith("NoModel"), finished
    assert [j["id"] for j in sidecar.call("mecha/jobs", {})["jobs"]] == [job["id"]]


def test_a_draft_sent_unchanged_teaches_nothing_and_starts_no_job(sidecar: Sidecar) -> None:
    for item in (
        draft_item("o-2", edited=False),
        draft_item("o-3", edited=True, status="rejected"),
        {**draft_item("o-4", edited=True), "kind": "publish"},
    ):
        assert sidecar.call("mecha/draftResolved", {"item": item}) == {"intervention": None, "already_mined": False, "job": None, "already_queued": False}
    assert sidecar.call("mecha/jobs", {})["jobs"] == []
    sidecar.assert_no_output(0.3)


def test_a_mined_draft_is_reported_already_mined_and_not_queued_again(sidecar: Sidecar) -> None:
    store = open_store(sidecar.learning_dir)
    store.mark_outbox_mined("o-5")
    got = sidecar.call("mecha/draftResolved", {"item": draft_item("o-5", edited=True)})
    assert got["already_mined"] is True and got["job"] is None
    assert got["intervention"]["trigger"] == "edit"
    assert sidecar.call("mecha/jobs", {})["jobs"] == []
    inbox = sidecar.learning_dir / "inbox"
    assert not inbox.exists() or not list(inbox.iterdir())


# ─── mecha/sessionEnded and mecha/jobs ──────────────────────────────────────


def test_a_finished_session_is_surveyed_and_handed_to_a_reflect_pass(sidecar: Sidecar) -> None:
    messages = [*steered(), assistant_text("skipped the rest")]
    got = sidecar.call("mecha/sessionEnded", {"session_id": "s-end", "messages": messages, "taint_timeline": CLEAN_TIMELINE})
    assert (got["interventions"], got["learnable"], got["already_mined"]) == (1, 1, False)
    job = got["job"]
    assert job is not None and job["kind"] == "reflect"
    finished = sidecar.notification("mecha/jobFinished", lambda p: p["job"]["id"] == job["id"], timeout=30)["job"]
    assert finished["state"] == "failed" and finished["outcome"].startswith("NoModel")

    # Untrusted coverage and a non-interactive session are surveyed but not learnable.
    untrusted = sidecar.call("mecha/sessionEnded", {"session_id": "s-unt", "messages": messages})
    assert (untrusted["interventions"], untrusted["learnable"]) == (1, 0)
    derived = sidecar.call(
        "mecha/sessionEnded",
        {"session_id": "s-sub", "messages": messages, "taint_timeline": CLEAN_TIMELINE, "interactive": False},
    )
    assert (derived["interventions"], derived["learnable"]) == (1, 0)
    for started in (untrusted["job"], derived["job"]):
        sidecar.notification("mecha/jobFinished", lambda p, id=started["id"]: p["job"]["id"] == id, timeout=30)

    # A run with nothing to queue still picks up what failed passes left
    # waiting (here: the sessions above, which had no model to go to)...
    quiet = sidecar.call("mecha/sessionEnded", {"session_id": "s-quiet", "messages": [user("hi"), assistant_text("hello")]})
    assert (quiet["interventions"], quiet["learnable"], quiet["already_mined"]) == (0, 0, False)
    assert quiet["job"] is not None and quiet["job"]["kind"] == "reflect"
    sidecar.notification("mecha/jobFinished", lambda p: p["job"]["id"] == quiet["job"]["id"], timeout=30)
    # ...and with an empty inbox starts nothing.
    for entry in (open_store(sidecar.learning_dir).root / "inbox").glob("*.json"):
        entry.unlink()
    nothing = sidecar.call("mecha/sessionEnded", {"session_id": "s-quiet", "messages": [user("hi"), assistant_text("hello")]})
    assert nothing == {"interventions": 0, "learnable": 0, "already_mined": False, "job": None, "already_queued": False}

    open_store(sidecar.learning_dir).mark_mined("s-end")
    again = sidecar.call("mecha/sessionEnded", {"session_id": "s-end", "messages": messages, "taint_timeline": CLEAN_TIMELINE})
    assert (again["already_mined"], again["job"]) == (True, None)


def test_jobs_lists_a_pass_started_by_a_sidecar_that_has_exited(spawn_sidecar: SpawnSidecar) -> None:
    first = spawn_sidecar()
    store = open_store(first.learning_dir)
    store.append_reflexions([reflexion(f"refl-{i}") for i in range(3)])
    job = first.call("mecha/learn", {"domain": "behavior", "min": 3})["job"]
    assert first.shutdown_and_exit() == 0

    second = spawn_sidecar()
    deadline = time.monotonic() + 30
    while True:
        listed = {j["id"]: j for j in second.call("mecha/jobs", {})["jobs"]}
        assert job["id"] in listed
        if listed[job["id"]]["state"] != "running" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    final = listed[job["id"]]
    assert final["state"] == "failed" and final["outcome"].startswith("NoModel"), final
    assert final["finished_at"] >= final["started_at"]


def test_a_broken_file_in_a_domain_the_run_does_not_load_does_not_cost_it_its_block(sidecar: Sidecar) -> None:
    # A run's prompt must not fail on a file nothing in that run reads; a
    # run that does load it is refused, naming the file.
    store = open_store(sidecar.learning_dir)
    write_learned_rules(store, "behavior", [rule("Ask first", "r-b")])
    many = [rule(f"rule number {i}", f"r-{i}") for i in range(MAX_ACTIVE_RULES_PER_DOMAIN + 1)]
    write_learned_rules(store, "zeta", many)
    (sidecar.learning_dir / "rules" / "triage.learned.toml").write_text('[[rules]\ntext = "x"\n')
    got = block(sidecar)
    assert got["rule_ids"] == ["r-b"]
    assert got["over_budget"] == [{"domain": "zeta", "active": 16}], "the other domains are still checked"
    err = sidecar.error("mecha/rulesPromptBlock", {"domain": "triage"})
    assert err["code"] == -31004 and "triage.learned.toml:1" in err["message"]
    doctor = checks(sidecar)["rules files"]
    assert doctor["ok"] is False and "triage.learned.toml" in doctor["detail"]


# ─── session and draft ids ──────────────────────────────────────────────────

#: Ids that could never be read back from the ledger as themselves.
BAD_IDS = ["", " s-1", "s-1 ", "\ts-1", "s\n1", "s\r1", "s\x001", "s\x1e1", "s\x851", "s\u20281", "x" * 257]


def test_a_session_id_that_could_never_be_recorded_is_refused_naming_the_field(sidecar: Sidecar) -> None:
    # Pins: sessionEnded taking "", " s" or "a\nb": the pass appended
    # reflections, could not mark the session mined, and every later pass
    # called the model for it again.
    for bad in BAD_IDS:
        err = sidecar.error("mecha/sessionEnded", {"session_id": bad, "messages": steered(), "taint_timeline": CLEAN_TIMELINE})
        assert err["code"] == -32602 and err["message"].startswith("session_id: "), (bad, err)
        assert err["data"]["name"] == "InvalidInput"
    assert not (sidecar.learning_dir / "inbox").exists(), "a refused session was queued"
    ok = sidecar.call("mecha/sessionEnded", {"session_id": "run 42 · ok", "messages": steered(), "taint_timeline": CLEAN_TIMELINE})
    assert ok["job"] is not None


def test_a_draft_whose_id_or_session_id_could_never_be_recorded_is_refused(sidecar: Sidecar) -> None:
    # Pins: the same wedge through mecha/draftResolved's outbox ledger.
    for bad in BAD_IDS:
        for field, item in (("item.id", {**draft_item(bad, edited=True)}), ("item.session_id", {**draft_item("o-9", edited=True), "session_id": bad})):
            err = sidecar.error("mecha/draftResolved", {"item": item})
            assert err["code"] == -32602 and err["message"].startswith(f"{field}: "), (field, bad, err)
    assert not (sidecar.learning_dir / "inbox").exists()
    assert sidecar.call("mecha/draftResolved", {"item": {**draft_item("o-10", edited=True), "session_id": None}})["job"]


def test_the_command_line_skips_a_transcript_whose_session_id_could_never_be_recorded(tmp_path: Path) -> None:
    # Pins: `reflect --sessions DIR` queueing a file whose own session_id
    # has a newline in it.
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    good = {"session_id": "a-good-one", "messages": steered(), "taint_timeline": CLEAN_TIMELINE}
    (sessions / "a.json").write_text(json.dumps(good))
    (sessions / "b.json").write_text(json.dumps({**good, "session_id": "two\nlines"}))
    root = tmp_path / "learning"
    done = subprocess.run(
        [*SIDECAR_ARGV, "--learning-dir", str(root), "--json", "reflect", "--sessions", str(sessions), "--no-wait"],
        env=clean_env(tmp_path), capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "b.json: session_id: " in done.stderr and "U+000A" in done.stderr, done.stderr
    assert json.loads(done.stdout)["queued"] == ["a-good-one"]
    entries = [p.name for p in (root / "inbox").iterdir() if p.suffix == ".json"]
    assert len(entries) == 1 and "a-good-one" in entries[0], entries


# ─── scopes: the run's project over the wire ────────────────────────────────


def _git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path.resolve()


def test_the_project_param_adds_that_projects_rules_after_the_global_ones(sidecar: Sidecar, tmp_path: Path) -> None:
    # Pins: a run in one repository told another's conventions, or a run
    # that names no project getting any project's rules.
    app, other = _git_repo(tmp_path / "app"), _git_repo(tmp_path / "other")
    store = open_store(sidecar.learning_dir)
    write_learned_rules(store, "behavior", [rule("Ask before deleting files", "r-g")])
    write_learned_rules(store, "behavior", [rule("Indent with two spaces", "r-app")], str(app))
    write_learned_rules(store, "behavior", [rule("Tabs only", "r-other")], str(other))

    (app / "src").mkdir()
    got = sidecar.call("mecha/rulesPromptBlock", {"project": str(app / "src")})
    assert got["project"] == str(app), "resolved to the git root"
    assert got["rule_ids"] == ["r-g", "r-app"]
    assert got["block"].index("### behavior\n") < got["block"].index("### behavior (this project)\n")
    assert sidecar.call("mecha/rulesPromptBlock", {"project": str(other)})["rule_ids"] == ["r-g", "r-other"]
    plain = sidecar.call("mecha/rulesPromptBlock", {})
    assert plain["rule_ids"] == ["r-g"] and "project" not in plain, "absent: the global rules alone, the old shape"
    # A second ask after an accept-like rewrite is read afresh, per project.
    write_learned_rules(store, "behavior", [rule("Indent with four spaces", "r-app2")], str(app))
    assert sidecar.call("mecha/rulesPromptBlock", {"project": str(app)})["rule_ids"] == ["r-g", "r-app2"]


def test_an_over_budget_project_is_reported_with_its_project(sidecar: Sidecar, tmp_path: Path) -> None:
    app = _git_repo(tmp_path / "app")
    store = open_store(sidecar.learning_dir)
    many = [rule(f"rule {i}", f"r-{i}") for i in range(MAX_ACTIVE_RULES_PER_DOMAIN + 1)]
    write_learned_rules(store, "behavior", many, str(app))
    got = sidecar.call("mecha/rulesPromptBlock", {"project": str(app)})
    assert got["over_budget"] == [{"domain": "behavior", "active": MAX_ACTIVE_RULES_PER_DOMAIN + 1, "project": str(app)}]
    assert sidecar.call("mecha/rulesPromptBlock", {})["over_budget"] == []


def test_a_project_that_is_not_an_absolute_path_is_invalid_params(sidecar: Sidecar) -> None:
    for bad in ("relative/dir", "", 7):
        for method, params in (
            ("mecha/rulesPromptBlock", {"project": bad}),
            ("mecha/sessionEnded", {"session_id": "s-bad", "messages": steered(), "project": bad}),
        ):
            err = sidecar.error(method, params)
            assert err["code"] in (-32602,) and "project" in err["message"], (method, bad, err)
    assert not (sidecar.learning_dir / "inbox").exists(), "nothing queued for a refused hand-over"


def test_session_ended_queues_the_session_under_its_projects_root(sidecar: Sidecar, tmp_path: Path) -> None:
    # Pins: the harness's `project` dropped on the way to the inbox, so
    # the lesson is learned for every repository.
    app = _git_repo(tmp_path / "app")
    (app / "pkg").mkdir()
    got = sidecar.call(
        "mecha/sessionEnded",
        {"session_id": "s-proj", "messages": steered(), "taint_timeline": CLEAN_TIMELINE, "project": str(app / "pkg")},
    )
    assert got["interventions"] == 1
    sidecar.notification("mecha/jobFinished", lambda p: p["job"]["id"] == got["job"]["id"], timeout=30)
    [entry] = (sidecar.learning_dir / "inbox").glob("*s-proj*.json")
    assert json.loads(entry.read_text())["project"] == str(app)


def test_a_run_that_hands_over_the_rules_its_prompt_carried_counts_on_each_rules_record(sidecar: Sidecar) -> None:
    # Pins: a rule learned and used only through the harness read "in 0
    # sessions" on its record however many runs it rode in.
    store = open_store(sidecar.learning_dir)
    write_learned_rules(store, "behavior", [builders.rule("Never push to main.", id="r-20261101-aaaaaaaa"),
                                            builders.rule("Indent with two spaces.", id="r-20261101-bbbbbbbb")])
    block = sidecar.call("mecha/rulesPromptBlock", {"domain": "behavior"})
    assert block["rule_ids"] == ["r-20261101-aaaaaaaa", "r-20261101-bbbbbbbb"]
    quiet = [user("hi"), assistant_text("hello")]
    sidecar.call("mecha/sessionEnded", {"session_id": "run-1", "messages": quiet, "rule_ids": block["rule_ids"]})
    sidecar.call("mecha/sessionEnded", {"session_id": "run-2", "messages": quiet, "rule_ids": ["r-20261101-bbbbbbbb"]})
    sidecar.call("mecha/sessionEnded", {"session_id": "run-3", "messages": quiet})
    records = {r["rule"]["id"]: r["record"] for r in sidecar.call("mecha/rules", {"domain": "behavior"})["rules"]}
    assert records["r-20261101-aaaaaaaa"]["sessions"] == 1
    assert records["r-20261101-bbbbbbbb"]["sessions"] == 2
    assert "in 2 sessions" in records["r-20261101-bbbbbbbb"]["line"]
    err = sidecar.error("mecha/sessionEnded", {"session_id": "run-4", "messages": quiet, "rule_ids": "r-1"})
    assert err["code"] == -32602 and "rule_ids" in err["message"]
