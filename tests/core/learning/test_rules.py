"""Rules: the budget, lineage across rewrites, the rendered block, the hash,
and which domains ride where."""

from __future__ import annotations

import tomllib

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mecha.core.domain.rules import (
    LEARN_MIN_REFLECTIONS,
    MAX_ACTIVE_RULES_PER_DOMAIN,
    PASS_DOMAINS,
    RULES_BLOCK_HEADING,
    RULES_BLOCK_PREAMBLE,
    RULES_CHAR_BUDGET,
    RUN_DOMAINS,
    TRIAGE_DOMAIN,
    Rule,
    RulesFile,
    budget_refuses,
    domain_rules_section,
    finalize_rules,
    routed_domains,
    run_domains_including,
    strip_rules_block,
    validate_domain,
    wrap_rules_block,
)
from mecha.core.errors import InvalidDomain
from mecha.core.store.rules_block import rules_hash


def test_the_constants_hold_their_contract_values():
    # Pins: a number the harness, the gate and the doctor all read drifting in
    # one place.
    assert MAX_ACTIVE_RULES_PER_DOMAIN == 15
    assert RULES_CHAR_BUDGET == 1600
    assert LEARN_MIN_REFLECTIONS == 3
    assert RUN_DOMAINS == ("behavior", "writing")
    assert TRIAGE_DOMAIN == "triage"
    assert PASS_DOMAINS == ("triage",)
    assert RULES_BLOCK_HEADING == "## Learned rules"


# ─── The budget ─────────────────────────────────────────────────────────────


def test_the_rule_budget_refuses_growth_over_the_cap_and_allows_shrinking_toward_it():
    # Pins: the cap either letting a set grow past it, or wedging an over-cap
    # legacy set that a consolidation is trying to shrink.
    cap = MAX_ACTIVE_RULES_PER_DOMAIN
    assert not budget_refuses(3, cap), "filling up to the cap is fine"
    assert budget_refuses(cap, cap + 1), "growing past the cap is refused"
    assert budget_refuses(cap + 5, cap + 6), "an over-cap set may not grow further"
    assert not budget_refuses(cap + 6, cap + 2), "shrinking toward the cap lands"
    assert not budget_refuses(cap + 2, cap + 2), "a same-size rewrite lands"
    assert budget_refuses(0, cap + 1), "a first set over the cap is refused"


# ─── Lineage ────────────────────────────────────────────────────────────────


def test_finalize_mints_identity_for_new_rules_and_carries_it_for_survivors():
    # Pins: a restated rule losing its id (splitting its ledger history), or a
    # new rule arriving with no id or provenance.
    survivor = Rule(
        text="Keep asking before mass edits.",
        id="r-old",
        sources=["refl-a"],
        created_at="2026-08-01T00:00:00Z",
    )
    out = finalize_rules(
        [Rule(text=survivor.text), Rule(text="New lesson.")],
        [survivor],
        ["refl-b", "refl-c"],
        "2026-08-05T00:00:00Z",
    )
    assert [r.text for r in out] == ["Keep asking before mass edits.", "New lesson."]
    assert out[0].id == "r-old"
    assert out[0].created_at == "2026-08-01T00:00:00Z"
    assert out[0].sources == ["refl-a"]
    new = out[1]
    assert new.id is not None and new.id.startswith("r-")
    assert new.created_at == "2026-08-05T00:00:00Z"
    assert new.sources == ["refl-b", "refl-c"]
    assert out[0].id != new.id


def test_finalize_does_not_mutate_what_it_was_given():
    # Pins: the caller's previous set (the proposal's `rules_before`) being
    # rewritten in place by the function that reads it.
    learned = Rule(text="Fresh.")
    previous = [Rule(text="Old.", id="r-1", sources=["a"])]
    finalize_rules([learned], previous, ["b"], "t")
    assert learned.id is None and learned.sources == []
    assert previous[0].sources == ["a"]


def test_a_retired_rule_survives_consolidation_and_never_renders():
    # Pins: a rewrite silently erasing the measurement trail retirement keeps,
    # or a retired rule reaching a prompt again.
    retired = Rule(
        text="Always summarize every file first.",
        enabled=False,
        id="r-bad",
        retired_at="2026-08-05T00:00:00Z",
        retired_reason="3 attributed regressions",
    )
    assert not retired.active()
    # Retirement outranks a hand edit that switched `enabled` back on.
    assert not msgspec.structs.replace(retired, enabled=True).active()

    out = finalize_rules([Rule(text="Fresh rule.")], [retired], ["refl-x"], "2026-08-06T00:00:00Z")
    assert any(r.id == "r-bad" and r.retired_at for r in out), "retired rule dropped"

    section = domain_rules_section("behavior", [], out)
    assert section is not None
    assert "summarize every file" not in section
    assert "Fresh rule." in section


def test_a_retired_rule_the_learner_restates_stays_retired():
    # Pins: a learner re-deriving a harmful rule word for word and thereby
    # resurrecting it into the live set.
    retired = Rule(text="Always summarize first.", id="r-bad", retired_at="t0", retired_reason="harmful")
    out = finalize_rules([Rule(text="Always summarize first.")], [retired], ["refl-y"], "t1")
    assert len(out) == 1
    assert out[0].id == "r-bad" and out[0].retired_at == "t0"
    assert not out[0].active()
    # And it says so: a retired rule left `enabled = true` is flagged
    # `retired-enabled` on the file the accept writes.
    assert out[0].enabled is False


def test_a_rules_file_written_before_identity_existed_still_decodes_as_live_rules():
    # Pins: the lineage fields becoming required, which would make every
    # pre-existing rules file unreadable at startup.
    data = tomllib.loads('[[rules]]\ntext = "Old rule."\nconfidence = 0.8\n')
    rules = msgspec.convert(data, RulesFile).rules
    assert len(rules) == 1
    assert rules[0].id is None and rules[0].sources == []
    assert rules[0].active(), "an old rule is live until someone says otherwise"


# ─── The block ──────────────────────────────────────────────────────────────


def test_the_rules_block_layout_is_exact():
    # Pins: any drift in the block's shape — a validator strips
    # it by heading and a gate must render a candidate exactly as a run does.
    behavior = domain_rules_section(
        "behavior",
        [Rule(text="Never push to main.")],
        [
            Rule(text="Ask before rewriting more than one file.", confidence=0.8, based_on_count=3),
            Rule(text="A disabled rule must not appear.", enabled=False),
            Rule(text="A retired rule must not appear.", retired_at="t"),
        ],
    )
    writing = domain_rules_section("writing", [], [Rule(text="Sign off with the first name only.")])
    block = wrap_rules_block([behavior, writing])
    assert block == (
        "## Learned rules\n"
        "\n"
        f"{RULES_BLOCK_PREAMBLE}\n"
        "\n"
        "### behavior\n"
        "- Never push to main.\n"
        "- Ask before rewriting more than one file.\n"
        "\n"
        "### writing\n"
        "- Sign off with the first name only."
    )
    # One paragraph, in this project's own words.
    assert RULES_BLOCK_PREAMBLE.strip() and "\n" not in RULES_BLOCK_PREAMBLE


def test_user_rules_come_first_even_when_learned_ones_are_listed_first():
    # Pins: the person's own rules being outranked by position in the prompt.
    section = domain_rules_section("behavior", [Rule(text="User rule.")], [Rule(text="Learned rule.")])
    assert section == "### behavior\n- User rule.\n- Learned rule."


def test_nothing_active_renders_no_section_and_no_sections_render_no_block():
    # Pins: prompt tokens spent on a heading with nothing under it.
    assert domain_rules_section("behavior", [Rule(text="x", enabled=False)], [Rule(text="y", retired_at="t")]) is None
    assert wrap_rules_block([]) is None


def test_stripping_the_rules_block_removes_it_and_leaves_others_alone():
    # Pins: a validator replaying a session with its old rules still in the
    # baseline arm, or mangling a prompt that had no block.
    with_block = f"base prompt\n\n{RULES_BLOCK_HEADING}\n\n- a rule"
    assert strip_rules_block(with_block) == "base prompt"
    assert strip_rules_block("no block here") == "no block here"
    rendered = wrap_rules_block([domain_rules_section("behavior", [], [Rule(text="r")])])
    assert strip_rules_block("You are mecha.\n\n" + rendered) == "You are mecha."


# ─── The hash ───────────────────────────────────────────────────────────────


def test_the_rules_hash_is_stable_forever():
    # Pins: the ledger key changing, which would silently split every tally
    # accumulated so far (FNV-1a 64 of "abc" is a published vector).
    assert rules_hash("abc") == "e71fa2190541574b"
    assert rules_hash("abc") != rules_hash("abd")
    assert rules_hash("") == "cbf29ce484222325"


def _fnv1a_64(data: bytes) -> int:
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) % 2**64
    return h


@given(st.text())
def test_the_rules_hash_is_fnv1a_64_over_utf8_for_any_text(text):
    # Pins: a hash that matches the known vector but diverges on non-ASCII or
    # long input (wrong byte encoding, missing 64-bit wrap, short hex).
    assert rules_hash(text) == format(_fnv1a_64(text.encode("utf-8")), "016x")


# ─── Domains ────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "domain, expected",
    [
        ("behavior", ["behavior", "writing"]),
        ("writing", ["behavior", "writing"]),
        ("triage", ["behavior", "writing", "triage"]),
        ("research-notes", ["behavior", "writing", "research-notes"]),
    ],
)
def test_a_run_carries_the_run_domains_then_its_own_domain_once(domain, expected):
    # Pins: a run domain listed twice, the run domains reordered, or a
    # request's own domain left out of its rules block.
    assert run_domains_including(domain) == expected


def test_routed_domains_are_what_runs_and_named_passes_load():
    # Pins: the triage rules being reported as unrouted (read by nothing) when
    # the mail pass loads them.
    routed = routed_domains()
    assert routed[: len(RUN_DOMAINS)] == list(RUN_DOMAINS)
    assert TRIAGE_DOMAIN in routed
    assert all(d in routed for d in PASS_DOMAINS)
    assert len(routed) == len(set(routed))


@pytest.mark.parametrize("bad", ["../x", "A", "", "a" * 65, "a/b", "-x", "x\n", "behaviör", None, 7])
def test_an_unsafe_domain_name_is_refused(bad):
    # Pins: a domain becoming a path like rules/../x.learned.toml.
    with pytest.raises(InvalidDomain):
        validate_domain(bad)


@pytest.mark.parametrize("good", ["a" * 64, "behavior", "writing", "triage", "my_domain-2", "0"])
def test_a_safe_domain_name_is_accepted_as_is(good):
    # Pins: the length limit being off by one, or valid names being rewritten.
    assert validate_domain(good) == good
