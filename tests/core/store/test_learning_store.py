"""The learning store on a real disk: real temp dirs, real git, real flock.

Each test pins one way the store could lose or leak what it holds, or show a
run a rules block other than the one on disk.
"""

from __future__ import annotations

import logging
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mecha.core.domain.reflexion import Origin, Reflexion
from mecha.core.domain.rules import (
    MAX_ACTIVE_RULES_PER_DOMAIN,
    RULES_BLOCK_HEADING,
    RUN_DOMAINS,
    Rule,
    domain_rules_section,
    wrap_rules_block,
)
from mecha.core.errors import Ambiguous, InvalidDomain, InvalidInput, InvalidStore, NotFound
from mecha.core.store.learning_store import (
    LearningStore,
    Proposal,
    ProposalStatus,
    RenderedBlock,
    parse_rules_file,
    render_learned_toml,
)
from mecha.core.store.ledger import LeapRun, ValidationRecord
from mecha.core.store.rules_block import rules_hash
from tests import builders
from tests.builders import write_learned_rules

# ─── helpers ────────────────────────────────────────────────────────────────


@pytest.fixture
def store(tmp_path: Path) -> LearningStore:
    return LearningStore.open(tmp_path / "learning")


def reflexion(rid: str, **overrides: Any) -> Reflexion:
    fields: dict[str, Any] = dict(
        lesson="When the person narrows the task, drop the remaining steps.",
        error_type="overreach", confidence=0.9, created_at="2026-08-04T00:00:00Z",
    )
    if "reflexion_text" in overrides:
        overrides["lesson"] = overrides.pop("reflexion_text")
    return builders.reflexion(rid, **(fields | overrides))


def proposal(pid: str, **overrides: Any) -> Proposal:
    fields: dict[str, Any] = dict(
        rules=[builders.rule("Never edit reports/", confidence=0.9, based_on_count=1)],
        reflexion_ids=["r1"], evidence="steer probe improved", created_at="2026-08-04T06:00:00Z",
    )
    return builders.proposal(pid, **(fields | overrides))


def write_user_rules(store: LearningStore, domain: str, toml: str) -> None:
    (store.root / "rules" / f"{domain}.user.toml").write_text(toml)


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


# ─── reflections and the mining ledgers ─────────────────────────────────────


def test_reflections_round_trip_and_mined_sessions_stick(store: LearningStore) -> None:
    # Pins: a reflection that does not survive the file, or a mined session
    # that a later reflect pass mines again.
    r = reflexion("r1")
    store.append_reflexion(r)
    assert store.reflexions() == [r]

    store.mark_mined("s1")
    assert "s1" in store.mined_sessions()
    # Reopening reads the same files: nothing lived only in memory.
    assert "s1" in LearningStore.open(store.root).mined_sessions()


def test_the_distilled_mined_and_outbox_ledgers_are_separate(store: LearningStore) -> None:
    # Pins: one ledger file shared by two purposes, so marking a session
    # mined makes it look distilled, or an outbox item id satisfies the
    # session check.
    store.mark_mined("s1")
    assert "s1" not in store.distilled_sessions()
    assert "s1" not in store.mined_outbox()
    store.mark_distilled("s2")
    assert "s2" not in store.mined_sessions()
    store.mark_outbox_mined("item-1")
    assert "item-1" not in store.mined_sessions()
    assert "item-1" not in store.distilled_sessions()
    assert store.distilled_sessions() == {"s2"}


def test_outbox_mining_is_recorded_and_idempotent(store: LearningStore) -> None:
    # Pins: a second mark of the same draft reading as a second item, or an
    # empty store answering with anything but an empty set.
    assert store.mined_outbox() == set()
    store.mark_outbox_mined("item-1")
    store.mark_outbox_mined("item-2")
    store.mark_outbox_mined("item-1")
    assert store.mined_outbox() == {"item-1", "item-2"}


def test_a_ledger_id_that_would_break_the_line_format_is_refused(store: LearningStore) -> None:
    # Pins: an id with a newline writing two ledger entries, one of them a
    # forged id nobody mined.
    for bad in ["a\nb", "", " padded "]:
        with pytest.raises(InvalidInput):
            store.mark_mined(bad)
    assert store.mined_sessions() == set()


def test_a_corrupt_reflection_line_costs_one_record(
    store: LearningStore, caplog: pytest.LogCaptureFixture
) -> None:
    # Pins: one bad line (a hand edit, a half-synced file) failing the whole
    # read, which would starve every learn pass.
    store.append_reflexion(reflexion("r1"))
    with open(store.root / "reflections.jsonl", "ab") as f:
        f.write(b"this is not json\n\n   \n")
    store.append_reflexion(reflexion("r3"))
    with caplog.at_level(logging.WARNING, logger="mecha.core.store.learning_store"):
        back = store.reflexions()
    assert [r.id for r in back] == ["r1", "r3"]
    warnings = [m for m in caplog.messages if "corrupt reflection" in m]
    assert len(warnings) == 1, "one warning for the bad line; blank lines are not corrupt"


def test_a_torn_last_line_does_not_corrupt_the_next_append(store: LearningStore) -> None:
    # Pins: a crash mid-append gluing the next record onto the wreck, so one
    # torn write costs two reflections instead of one.
    store.append_reflexion(reflexion("r1"))
    torn = msgspec.json.encode(reflexion("r2"))[:40]
    with open(store.root / "reflections.jsonl", "ab") as f:
        f.write(torn)  # no newline: the process died here
    store.append_reflexion(reflexion("r3"))

    assert [r.id for r in store.reflexions()] == ["r1", "r3"]
    lines = (store.root / "reflections.jsonl").read_bytes().split(b"\n")
    assert lines[1] == torn, "the torn bytes stay, alone on their line"


def test_a_reflection_recorded_before_origin_existed_loads_untrusted(store: LearningStore) -> None:
    # Pins: an archive line without `origin` grandfathered in as clean and so
    # learnable — unknown provenance is never clean.
    old = (
        b'{"id":"r0","domain":"behavior","session_id":"s","trigger":"steer","context":"",'
        b'"intervention":"x","reflexion_text":"y","error_type":null,"confidence":null,"created_at":"t"}\n'
    )
    (store.root / "reflections.jsonl").write_bytes(old)
    (r,) = store.reflexions()
    assert r.origin is Origin.UNTRUSTED and not r.learnable()


def test_processing_marks_reflections_and_survives_a_reload(store: LearningStore) -> None:
    # Pins: a marking that lives only in memory, or that marks reflections
    # the pass never named.
    store.append_reflexions([reflexion("r1"), reflexion("r2")])
    assert store.mark_reflexions_processed(["r1"], "run-1") == 1

    back = {r.id: r for r in LearningStore.open(store.root).reflexions()}
    assert back["r1"].is_processed and back["r1"].leap_run_id == "run-1"
    assert not back["r2"].is_processed, "unnamed reflections stay unprocessed"
    # Already processed is not processed again (its run id is history).
    assert store.mark_reflexions_processed(["r1"], "run-2") == 0
    assert {r.id: r for r in store.reflexions()}["r1"].leap_run_id == "run-1"


def test_processing_keeps_every_line_it_does_not_mark_byte_for_byte(store: LearningStore) -> None:
    # Pins: the rewrite dropping a line it cannot parse, or a field a newer
    # writer added — losing a byte of the store is the failure that matters.
    store.append_reflexion(reflexion("r1"))
    newer = msgspec.json.decode(msgspec.json.encode(reflexion("r2")))
    newer["from_the_future"] = {"kept": True}
    path = store.root / "reflections.jsonl"
    with open(path, "ab") as f:
        f.write(b"{corrupt but precious\n")
        f.write(msgspec.json.encode(newer) + b"\n")
    before = path.read_bytes().split(b"\n")

    assert store.mark_reflexions_processed(["r2"], "run-1") == 1
    after = path.read_bytes().split(b"\n")
    assert after[0] == before[0], "an unmarked line is not re-encoded"
    assert after[1] == b"{corrupt but precious"
    marked = msgspec.json.decode(after[2])
    assert marked["from_the_future"] == {"kept": True}
    assert marked["is_processed"] is True and marked["leap_run_id"] == "run-1"
    assert not list(store.root.glob("*.tmp")), "no temp file is left behind"


# ─── rules ──────────────────────────────────────────────────────────────────


def test_the_rules_block_keeps_user_rules_first_and_drops_disabled_ones(store: LearningStore) -> None:
    # Pins: learned rules outranking the person's own by position, or a rule
    # someone switched off still riding in every prompt.
    write_user_rules(store, "behavior", '[[rules]]\ntext = "Never push to main."\n')
    write_learned_rules(
        store,
        "behavior",
        [
            Rule(text="Ask before rewriting more than one file.", confidence=0.8, based_on_count=3),
            Rule(text="A disabled rule must not appear.", enabled=False),
        ],
    )
    block = store.rules_prompt_block()
    assert block is not None and block.startswith(RULES_BLOCK_HEADING)
    assert block.index("Never push to main") < block.index("Ask before rewriting")
    assert "must not appear" not in block


def test_an_empty_store_contributes_no_prompt_block(store: LearningStore) -> None:
    # Pins: a bare heading spending cached-prefix tokens on every run of a
    # person who has no rules yet.
    assert store.rules_prompt_block() is None
    rendered = store.render_block()
    assert rendered == RenderedBlock(block=None, rules_hash=None, rule_ids=[], domains=list(RUN_DOMAINS))


def test_a_rules_file_written_before_identity_existed_still_loads(store: LearningStore) -> None:
    # Pins: an upgrade that bricks every existing store at startup because
    # old rules lack ids and lineage.
    (store.root / "rules" / "behavior.learned.toml").write_text(
        '[[rules]]\ntext = "Old rule."\nconfidence = 0.8\n'
    )
    (rule,) = store.learned_rules("behavior")
    assert rule.id is None and rule.sources == []
    assert rule.active(), "an old rule is live until someone says otherwise"


def test_over_budget_counts_active_learned_rules_only(store: LearningStore) -> None:
    # Pins: retired rules (kept as evidence) or the person's own rules
    # counting against the cap, which would wedge the learner.
    rules = [Rule(text=f"rule {i}", id=f"r-{i}") for i in range(MAX_ACTIVE_RULES_PER_DOMAIN + 1)]
    write_user_rules(store, "behavior", "".join(f'[[rules]]\ntext = "user {i}"\n' for i in range(20)))
    write_learned_rules(store, "behavior", rules)
    assert store.over_budget_domains() == [("behavior", MAX_ACTIVE_RULES_PER_DOMAIN + 1)]

    # Retiring one brings the domain back under: the retired rule stays in
    # the file as evidence and costs the budget nothing.
    rules[0] = msgspec.structs.replace(rules[0], retired_at="2026-08-05T00:00:00Z")
    write_learned_rules(store, "behavior", rules)
    assert store.over_budget_domains() == []
    assert len(store.learned_rules("behavior")) == MAX_ACTIVE_RULES_PER_DOMAIN + 1


def test_over_budget_covers_domains_no_run_loads(store: LearningStore) -> None:
    # Pins: a warning that looks only at RUN_DOMAINS and misses a pass
    # domain drifting past the cap.
    write_learned_rules(store, "triage", [Rule(text=f"t {i}") for i in range(MAX_ACTIVE_RULES_PER_DOMAIN + 2)])
    assert store.over_budget_domains() == [("triage", MAX_ACTIVE_RULES_PER_DOMAIN + 2)]


def test_a_toml_syntax_error_names_the_file_and_line(store: LearningStore) -> None:
    # Pins: a broken rules file failing a run with a message nobody can act
    # on, or being skipped so the person's rules silently vanish.
    write_user_rules(store, "behavior", '[[rules]]\ntext = "fine"\nenabled = tru\n')
    with pytest.raises(InvalidStore) as caught:
        store.render_block()
    message = str(caught.value)
    assert "behavior.user.toml" in message
    assert ":3:" in message and "line 3" in message
    assert caught.value.line == 3 and caught.value.path is not None


def test_a_wrong_typed_field_names_the_file_and_the_line(store: LearningStore) -> None:
    # Pins: a type error reported without a place, since tomllib keeps no
    # positions once a document has parsed.
    (store.root / "rules" / "writing.learned.toml").write_text(
        textwrap.dedent(
            """\
            # two rules
            [[rules]]
            text = "ok"

            [[rules]]
            text = "also ok"
            confidence = "high"
            """
        )
    )
    with pytest.raises(InvalidStore) as caught:
        store.learned_rules("writing")
    assert "writing.learned.toml:7:" in str(caught.value)
    assert "confidence" in str(caught.value)
    assert caught.value.line == 7


def test_a_file_that_is_not_utf8_is_an_invalid_store_not_a_crash() -> None:
    # Pins: a UnicodeDecodeError escaping as an internal error instead of a
    # located InvalidStore.
    with pytest.raises(InvalidStore) as caught:
        parse_rules_file(b'[[rules]]\ntext = "caf\xe9"\n', "rules/behavior.user.toml")
    assert caught.value.line == 2


@pytest.mark.parametrize("bad", ["../x", "A", "", "a" * 65, "a/b", ".hidden"])
def test_domain_validation_rejects_unsafe_names_before_any_path_is_built(
    tmp_path: Path, bad: str
) -> None:
    # Pins: a domain name from a request escaping rules/ (`../x`) or naming a
    # file the layout does not know.
    store = LearningStore.open(tmp_path / "learning")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if ".git" not in p.parts)
    calls = [
        lambda: store.user_rules(bad),
        lambda: store.learned_rules(bad),
        lambda: write_learned_rules(store, bad, [Rule(text="x")]),
        lambda: store.render_block(bad),
        lambda: store.render_candidate(bad, []),
        lambda: store.write_proposal(proposal("p1", domain=bad)),
        lambda: store.append_reflexion(reflexion("r1", domain=bad)),
    ]
    for call in calls:
        with pytest.raises(InvalidDomain):
            call()
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if ".git" not in p.parts)
    assert after == before, "a refused domain wrote nothing anywhere"


def test_the_longest_valid_domain_is_accepted(store: LearningStore) -> None:
    # Pins: an off-by-one in the length limit turning a legal 64-character
    # domain into an error.
    name = "a" * 64
    write_learned_rules(store, name, [Rule(text="x")])
    assert store.learned_rules(name)[0].text == "x"


def test_domains_lists_every_domain_with_a_file_and_nothing_else(store: LearningStore) -> None:
    # Pins: a temp file, a stray note or an unsafe file name showing up as a
    # domain (and then being loaded).
    write_user_rules(store, "writing", "")
    write_learned_rules(store, "behavior", [Rule(text="x")])
    write_user_rules(store, "behavior", "")
    rules_dir = store.root / "rules"
    (rules_dir / "behavior.learned.toml.1234.tmp").write_text("")
    (rules_dir / "Bad Name.user.toml").write_text("")
    (rules_dir / "notes.txt").write_text("")
    assert store.domains() == ["behavior", "writing"]


def test_user_rules_are_never_written(store: LearningStore) -> None:
    # Pins: the person's own file touched by the accept path, which would
    # break the promise the learner prompt is built on.
    user = '# mine\n[[rules]]\ntext = "Never push to main."\n'
    write_user_rules(store, "behavior", user)
    write_learned_rules(store, "behavior", [Rule(text="Never push to main.")])
    assert (store.root / "rules" / "behavior.user.toml").read_text() == user


# ─── writing learned rules with tomlkit ─────────────────────────────────────

PERSON_WROTE = textwrap.dedent(
    """\
    # My learned rules. I keep notes in here.

    [[rules]]
    # This one saved me twice.
    text = "Ask before deleting files."   # keep!
    id = "r-1"
    confidence = 0.7
    reviewer = "me"

    # The next one is under probation.
    [[rules]]
    text = "Summarise long outputs."
    id = "r-2"

    [[rules]]
    text = "Old habit."
    id = "r-3"
    # end of file
    """
)


def test_writing_learned_rules_keeps_a_comment_a_person_wrote(store: LearningStore) -> None:
    # Pins: an accept that rewrites the whole file and throws away the
    # person's notes, which teaches them never to touch the file.
    path = store.root / "rules" / "behavior.learned.toml"
    path.write_text(PERSON_WROTE)
    rules = store.learned_rules("behavior")
    rules[0] = msgspec.structs.replace(rules[0], confidence=0.9)
    new = [rules[0], rules[1], Rule(text="A brand new lesson.", id="r-9", sources=["refl-1"])]
    write_learned_rules(store, "behavior", new)

    text = path.read_text()
    assert store.learned_rules("behavior") == new
    for kept in ["# My learned rules.", "# This one saved me twice.", "# keep!", "# The next one is under probation."]:
        assert kept in text
    assert 'reviewer = "me"' in text, "a key this code does not know is left alone"
    assert "Old habit." not in text
    assert "confidence = 0.9" in text and "confidence = 0.7" not in text
    assert text.index("# The next one") < text.index("Summarise long outputs.")


def test_the_test_builder_writes_the_file_an_accept_writes(tmp_path: Path) -> None:
    # Pins: tests setting up live rules through a writer the product never
    # uses, so what they read back is not what an accept leaves. The store
    # has no such writer; the builder renders and replaces the file as the
    # accept's transaction does.
    assert not hasattr(LearningStore, "write_learned_rules")
    accepted, built = (LearningStore.open(tmp_path / name) for name in ("accepted", "built"))
    for s in (accepted, built):
        (s.root / "rules").mkdir(parents=True, exist_ok=True)
        (s.root / "rules" / "behavior.learned.toml").write_text(PERSON_WROTE)
    r1, r2, _ = accepted.learned_rules("behavior")
    new = [r2, msgspec.structs.replace(r1, confidence=0.9), Rule(text="A brand new lesson.", id="r-9")]

    accepted.resolve_proposal(
        msgspec.structs.replace(proposal("p-1", rules=new), status=ProposalStatus.ACCEPTED),
        learned=[("behavior", None, new)], run_id="run-1", message="accept p-1",
    )
    write_learned_rules(built, "behavior", new)

    on_disk = (accepted.root / "rules" / "behavior.learned.toml").read_text()
    assert "# This one saved me twice." in on_disk and accepted.learned_rules("behavior") == new
    assert (built.root / "rules" / "behavior.learned.toml").read_text() == on_disk


def test_a_reordered_rule_takes_the_comment_above_it_along(store: LearningStore) -> None:
    # Pins: a comment written above one rule ending up above another after an
    # accept reorders the set.
    path = store.root / "rules" / "behavior.learned.toml"
    path.write_text(PERSON_WROTE)
    r1, r2, r3 = store.learned_rules("behavior")
    write_learned_rules(store, "behavior", [r3, r2, r1])
    text = path.read_text()
    assert store.learned_rules("behavior") == [r3, r2, r1]
    assert text.index("# The next one is under probation.") < text.index("Summarise long outputs.")
    assert text.index("Old habit.") < text.index("# The next one is under probation.")
    assert text.index("# This one saved me twice.") < text.index("Ask before deleting files.")


def test_a_rule_is_matched_by_id_so_a_reworded_rule_keeps_its_notes(store: LearningStore) -> None:
    # Pins: a rewording treated as drop-and-add, losing the comment on it.
    path = store.root / "rules" / "behavior.learned.toml"
    path.write_text(PERSON_WROTE)
    r1, r2, r3 = store.learned_rules("behavior")
    reworded = msgspec.structs.replace(r1, text="Ask before deleting or moving files.")
    write_learned_rules(store, "behavior", [reworded, r2, r3])
    text = path.read_text()
    assert "# This one saved me twice." in text and 'reviewer = "me"' in text
    assert store.learned_rules("behavior") == [reworded, r2, r3]


def test_a_layout_that_cannot_be_edited_in_place_is_rewritten_correctly(store: LearningStore) -> None:
    # Pins: the preserving path writing something that reads back as other
    # rules; the fallback must still be exact.
    path = store.root / "rules" / "behavior.learned.toml"
    path.write_text('rules = [{ text = "inline one" }, { text = "inline two" }]\n')
    new = [Rule(text="inline two"), Rule(text="third", retired_at="2026-08-05T00:00:00Z")]
    write_learned_rules(store, "behavior", new)
    assert store.learned_rules("behavior") == new


def test_rendering_learned_toml_round_trips_awkward_text() -> None:
    # Pins: quotes, newlines or a lone backslash in a rule's text producing
    # TOML that reads back differently.
    rules = [
        Rule(text='Say "no" when asked to force-push.\nThen explain.', id="r-1", sources=["a", "b"]),
        Rule(text="Paths like C:\\temp are Windows-only.", enabled=False, based_on_count=2),
    ]
    text = render_learned_toml(None, rules, "behavior")
    assert parse_rules_file(text, "x") == rules
    again = render_learned_toml(text, rules, "behavior")
    assert again == text, "writing the same rules over the file changes nothing"


def test_a_learned_rules_write_leaves_no_temp_file(store: LearningStore) -> None:
    # Pins: the temp sibling left behind, which `domains()` or git could
    # then pick up.
    write_learned_rules(store, "behavior", [Rule(text="x")])
    write_learned_rules(store, "behavior", [Rule(text="y")])
    assert sorted(p.name for p in (store.root / "rules").iterdir()) == ["behavior.learned.toml"]


# ─── the rendered block ─────────────────────────────────────────────────────


def test_a_candidate_rules_block_renders_exactly_as_a_run_would_see_it(store: LearningStore) -> None:
    # Pins: a gate measuring one rendering while runs see another, which
    # makes every measurement say nothing about the deployment.
    write_user_rules(store, "behavior", '[[rules]]\ntext = "User rule first."\n')
    write_learned_rules(store, "behavior", [Rule(text="Learned.", id="r-1")])
    live = store.render_block()
    assert live.block is not None

    user = store.user_rules("behavior")
    learned = store.learned_rules("behavior")
    section = domain_rules_section("behavior", user, learned)
    assert section is not None
    assert wrap_rules_block([section]) == live.block
    assert store.render_candidate("behavior", learned) == live


def test_a_candidate_replaces_only_its_domain_and_writes_nothing(store: LearningStore) -> None:
    # Pins: a counterfactual probe that leaks into the live file, or renders
    # the other domains differently from a real run.
    write_learned_rules(store, "behavior", [Rule(text="Live behavior rule.", id="r-b")])
    write_learned_rules(store, "writing", [Rule(text="Live writing rule.", id="r-w")])
    on_disk = (store.root / "rules" / "behavior.learned.toml").read_bytes()

    candidate = store.render_candidate("behavior", [Rule(text="Candidate rule.", id="r-c")])
    assert candidate.block is not None
    assert "Candidate rule." in candidate.block and "Live behavior rule." not in candidate.block
    assert "Live writing rule." in candidate.block
    assert candidate.rule_ids == ["r-c", "r-w"]
    assert candidate.rules_hash == rules_hash(candidate.block)
    assert (store.root / "rules" / "behavior.learned.toml").read_bytes() == on_disk


def test_the_block_carries_the_runs_own_domain_after_the_run_domains(store: LearningStore) -> None:
    # Pins: a triage run missing its own rules, or a domain listed in an
    # order that moves the cached prefix between runs.
    write_learned_rules(store, "triage", [Rule(text="Archive newsletters.", id="r-t")])
    write_learned_rules(store, "behavior", [Rule(text="Be brief.", id="r-b"), Rule(text="Off.", id="r-x", enabled=False)])
    plain = store.render_block()
    assert plain.domains == ["behavior", "writing"]
    assert plain.block is not None and "Archive newsletters." not in plain.block

    triage = store.render_block("triage")
    assert triage.domains == ["behavior", "writing", "triage"]
    assert triage.block is not None
    assert triage.block.index("### behavior") < triage.block.index("### triage")
    assert triage.rule_ids == ["r-b", "r-t"], "only active learned rules that ride in the block"
    assert triage.rules_hash == rules_hash(triage.block)
    assert store.render_block("behavior") == plain, "a run domain is not added twice"


# ─── proposals ──────────────────────────────────────────────────────────────


def test_proposals_round_trip_and_resolve_in_place(store: LearningStore) -> None:
    # Pins: resolving a proposal growing a second copy, or a prefix lookup
    # that guesses.
    p = proposal("20260804T060000-p1")
    store.write_proposal(p)
    assert store.proposals() == [p]

    found = store.proposal("20260804T060000")
    assert found.rules[0].text == "Never edit reports/"
    with pytest.raises(NotFound):
        store.proposal("nope")

    resolved = msgspec.structs.replace(
        found, status=ProposalStatus.ACCEPTED, resolved_at="2026-08-04T07:00:00Z"
    )
    store.write_proposal(resolved)
    (only,) = store.proposals()
    assert only.status is ProposalStatus.ACCEPTED and only.status == "accepted"
    assert sorted(p.name for p in (store.root / "proposals").iterdir()) == ["20260804T060000-p1.json"]


def test_an_ambiguous_proposal_prefix_is_an_error_that_lists_the_matches(store: LearningStore) -> None:
    # Pins: a prefix matching two proposals resolving to one of them — an
    # accept of the wrong rule change.
    for pid in ["20260804T060000-aa", "20260804T060000-ab"]:
        store.write_proposal(proposal(pid, reflexion_ids=[], rules=[], evidence="", created_at=""))
    with pytest.raises(Ambiguous) as caught:
        store.proposal("20260804T060000")
    assert "matches 2 proposals: 20260804T060000-aa, 20260804T060000-ab" in str(caught.value)
    assert caught.value.matches == ["20260804T060000-aa", "20260804T060000-ab"]
    assert store.proposal("20260804T060000-aa").id == "20260804T060000-aa"


def test_an_exact_proposal_id_resolves_even_when_it_prefixes_another(store: LearningStore) -> None:
    # Pins: an id that can never be named because a longer id starts with it.
    store.write_proposal(proposal("p-1"))
    store.write_proposal(proposal("p-10"))
    assert store.proposal("p-1").id == "p-1"
    with pytest.raises(Ambiguous):
        store.proposal("p-")


def test_proposals_list_oldest_first_and_skip_what_they_cannot_read(
    store: LearningStore, caplog: pytest.LogCaptureFixture
) -> None:
    # Pins: one damaged file hiding every proposal, or a pass's half-written
    # temp file read as a proposal.
    store.write_proposal(proposal("20260805T000000-b"))
    store.write_proposal(proposal("20260804T000000-a"))
    pdir = store.root / "proposals"
    (pdir / "20260806T000000-c.json").write_text("{ not json")
    (pdir / "20260807T000000-d.json.1a2b.tmp").write_bytes(
        msgspec.json.encode(proposal("20260807T000000-d"))
    )
    with caplog.at_level(logging.WARNING, logger="mecha.core.store.learning_store"):
        ids = [p.id for p in store.proposals()]
    assert ids == ["20260804T000000-a", "20260805T000000-b"]
    assert any("20260806T000000-c" in m for m in caplog.messages)


@pytest.mark.parametrize("bad", ["../escape", "a/b", ".hidden", "", "x" * 200])
def test_an_unsafe_proposal_id_is_refused_before_any_path_is_built(store: LearningStore, bad: str) -> None:
    # Pins: a proposal id from a request writing outside proposals/.
    with pytest.raises(InvalidInput):
        store.write_proposal(proposal(bad))
    assert not (store.root / "escape.json").exists()
    assert list((store.root / "proposals").iterdir()) == []


def test_a_proposal_file_has_the_seeds_shape(store: LearningStore) -> None:
    # Pins: a proposal the Rust harness (or a person with `cat`) cannot read:
    # snake_case fields, the status string, nulls for an open proposal.
    store.write_proposal(proposal("p1"))
    raw = msgspec.json.decode((store.root / "proposals" / "p1.json").read_bytes())
    assert raw["status"] == "pending"
    assert raw["resolved_at"] is None and raw["reason"] is None
    assert raw["rules"] == [{"text": "Never edit reports/", "confidence": 0.9, "based_on_count": 1}]


# ─── the writer lock ────────────────────────────────────────────────────────


def test_the_writer_lock_excludes_a_second_pass_until_dropped(store: LearningStore) -> None:
    # Pins: two reflect passes both reading `mined.jsonl` before either marks
    # it. flock is per open file description, so a second open contends even
    # inside one process.
    held = store.lock()
    assert store.try_lock() is None, "the lock did not exclude"
    held.release()
    again = store.try_lock()
    assert again is not None, "the lock did not release"
    again.release()


def test_the_lock_releases_at_the_end_of_a_with_block_and_when_collected(store: LearningStore) -> None:
    # Pins: a pass that returns early (or raises) keeping the store wedged.
    with store.lock() as held:
        assert held.held
        assert store.try_lock() is None
    assert not held.held
    assert store.try_lock() is not None  # collected at once: nobody holds it

    forgotten = store.lock()
    del forgotten
    assert store.try_lock() is not None


def test_a_blocking_lock_waits_for_the_holder(store: LearningStore) -> None:
    # Pins: `lock()` returning without the lock when it is contended.
    held = store.lock()
    acquired = threading.Event()

    def second_pass() -> None:
        with store.lock():
            acquired.set()

    t = threading.Thread(target=second_pass)
    t.start()
    assert not acquired.wait(0.3), "the second pass got in while the first held the lock"
    held.release()
    assert acquired.wait(10)
    t.join(10)


def test_the_lock_is_released_when_its_holder_is_sigkilled(store: LearningStore) -> None:
    # Pins: a crashed pass wedging the store for every later pass.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from mecha.core.store.learning_store import LearningStore\n"
            "lock = LearningStore(sys.argv[1]).lock()\n"
            "print('locked', flush=True)\n"
            "time.sleep(120)\n",
            str(store.root),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        assert store.try_lock() is None, "the other process's lock did not exclude"
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        deadline = time.monotonic() + 10
        got = store.try_lock()
        while got is None and time.monotonic() < deadline:
            time.sleep(0.05)
            got = store.try_lock()
        assert got is not None, "a killed holder left the store locked"
        got.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)


# ─── opening, permissions, git ──────────────────────────────────────────────


def _exercise_every_writer(store: LearningStore) -> None:
    store.append_reflexions([reflexion("r1"), reflexion("r2")])
    store.mark_reflexions_processed(["r1"], "run-1")
    store.mark_mined("s1")
    store.mark_outbox_mined("item-1")
    store.mark_distilled("s1")
    store.append_run(
        LeapRun(id="run-1", domain="behavior", reflexions_processed=1, rules_before=0, rules_after=1, created_at="t")
    )
    store.append_validation(
        ValidationRecord(
            reflexion_id="r1",
            trigger="steer",
            domain="behavior",
            rules_hash="0",
            rule_ids=[],
            outcome="improved",
            model="m",
            created_at="t",
        )
    )
    write_learned_rules(store, "behavior", [Rule(text="x")])
    write_learned_rules(store, "behavior", [Rule(text="y")])
    store.write_proposal(proposal("p1"))
    store.lock().release()


@pytest.mark.parametrize("umask", [0o000, 0o022], indirect=True)
def test_nothing_the_store_writes_is_readable_by_anyone_else(tmp_path: Path, umask: int) -> None:
    # Pins: reflections — a person's words to their agent — readable by other
    # users because the process umask was permissive.
    store = LearningStore.open(tmp_path / "learning")
    _exercise_every_writer(store)
    checked = 0
    for path in [store.root, *store.root.rglob("*")]:
        if ".git" in path.relative_to(store.root).parts:
            continue  # git's own files; the 0700 root keeps them private
        mode = stat.S_IMODE(path.stat().st_mode)
        expected = 0o700 if path.is_dir() else 0o600
        assert mode == expected, f"{path.relative_to(tmp_path)} is {oct(mode)}"
        checked += 1
    assert checked >= 14


def test_a_store_someone_left_world_readable_is_tightened(tmp_path: Path) -> None:
    # Pins: modes set only at creation, so a store first made by another tool
    # (or restored from a backup) stays readable by every user.
    root = tmp_path / "learning"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    (root / "reflections.jsonl").write_bytes(b"")
    os.chmod(root / "reflections.jsonl", 0o644)
    store = LearningStore.open(root)
    store.append_reflexion(reflexion("r1"))
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "reflections.jsonl").stat().st_mode) == 0o600


def test_read_paths_create_no_state(tmp_path: Path) -> None:
    # Pins: a run's prompt assembly creating ~/.mecha/learning (and a git
    # repo) on a machine that never asked for learning.
    missing = tmp_path / "nowhere"
    assert LearningStore.open_existing(missing) is None
    assert not missing.exists()
    existing = LearningStore.open(tmp_path / "learning")
    reopened = LearningStore.open_existing(existing.root)
    assert reopened is not None and reopened.rules_prompt_block() is None


def test_the_default_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Pins: MECHA_LEARNING_DIR ignored, so tests and second profiles write
    # into a person's real store.
    monkeypatch.setenv("MECHA_LEARNING_DIR", str(tmp_path / "elsewhere"))
    assert LearningStore.default_root() == tmp_path / "elsewhere"
    monkeypatch.delenv("MECHA_LEARNING_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert LearningStore.default_root() == tmp_path / "home" / ".mecha" / "learning"


def test_a_relative_root_is_made_absolute_once_from_the_current_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Pins: a relative root kept relative, so a process started elsewhere
    # (a pass runs inside the store) resolves it to another directory.
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    monkeypatch.delenv("MECHA_LEARNING_DIR", raising=False)
    real = tmp_path.resolve()
    assert LearningStore.resolve_root("store") == real / "here" / "store"
    assert LearningStore.resolve_root("../x/store") == real / "x" / "store"
    monkeypatch.setenv("MECHA_LEARNING_DIR", "env-store")
    assert LearningStore.resolve_root(None) == real / "here" / "env-store"
    assert LearningStore.default_root() == real / "here" / "env-store"
    assert LearningStore.resolve_root("") == real / "here" / "env-store"
    # An absolute root is kept as written: a link there is the person's choice.
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    assert LearningStore.resolve_root(tmp_path / "link") == tmp_path / "link"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert LearningStore.resolve_root("~/s") == tmp_path / "home" / "s"


def test_opening_creates_the_layout_and_ignores_process_state(store: LearningStore) -> None:
    # Pins: `git add -A` sweeping the lock file or a temp file into history.
    for sub in ["rules", "proposals", "jobs", "logs"]:
        assert (store.root / sub).is_dir()
    ignored = (store.root / ".gitignore").read_text().splitlines()
    assert ".lock" in ignored and "*.tmp" in ignored
    # Process state and waiting transcripts never enter the history.
    assert {"jobs/", "logs/", "inbox/"} <= set(ignored)


def test_an_old_gitignore_gains_the_missing_entries_and_keeps_its_own(tmp_path: Path) -> None:
    # Pins: a store made by an older harness (`.lock` only) committing temp
    # files, or a person's own ignore lines being overwritten.
    root = tmp_path / "learning"
    root.mkdir()
    (root / ".gitignore").write_text(".lock\nmy-notes/")  # no final newline
    LearningStore.open(root)
    assert (root / ".gitignore").read_text().splitlines() == [".lock", "my-notes/", "*.tmp", "jobs/", "logs/", "inbox/", "transcripts/", "cache/", "journal/", "journal.set-aside-*/", "hook-queue/"]


@pytest.fixture
def no_git_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A machine where nobody ever ran `git config`."""
    home = tmp_path / "empty-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    for var in ["GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"]:
        monkeypatch.delenv(var, raising=False)


def test_commit_records_a_real_git_commit_and_nothing_to_commit_is_quiet(
    tmp_path: Path, no_git_config: None, caplog: pytest.LogCaptureFixture
) -> None:
    # Pins: a commit that fails on a machine with no git identity (so the
    # audit trail silently never exists), or a warning on every idle pass.
    store = LearningStore.open(tmp_path / "learning")
    assert (store.root / ".git").is_dir()
    held = store.lock()
    store.append_reflexion(reflexion("r1"))
    with caplog.at_level(logging.WARNING, logger="mecha.core.store.learning_store"):
        assert store.commit("reflect: 1 reflection from session s1") is True
        assert store.commit("reflect: nothing new") is False
    held.release()
    assert caplog.messages == []

    log = git(store.root, "log", "--format=%an <%ae> %s").splitlines()
    assert log == ["mecha <mecha@localhost> reflect: 1 reflection from session s1"]
    tracked = git(store.root, "ls-files").split()
    assert "reflections.jsonl" in tracked and ".lock" not in tracked


def test_a_store_opened_where_git_is_not_on_path_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Pins: git being a hard dependency — a missing binary must cost the
    # audit trail, never the data or the pass.
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    with caplog.at_level(logging.WARNING, logger="mecha.core.store.learning_store"):
        store = LearningStore.open(tmp_path / "learning")
        store.append_reflexion(reflexion("r1"))
        write_learned_rules(store, "behavior", [Rule(text="Still works.")])
        assert store.commit("learn: accept") is False
    assert not (store.root / ".git").exists()
    assert [r.id for r in store.reflexions()] == ["r1"]
    assert store.rules_prompt_block() is not None
    assert caplog.messages, "the lost history is at least logged"


def test_a_store_without_its_own_repository_never_commits_into_an_enclosing_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_git_config: None
) -> None:
    # Pins: `git add -A` run in a store that is not a repository walking up
    # into whatever repository contains it and committing the person's
    # reflections there.
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "--quiet")
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(tmp_path))  # no git while opening
    store = LearningStore.open(outer / "learning")
    monkeypatch.setenv("PATH", path)
    store.append_reflexion(reflexion("r1"))
    assert store.commit("should not land anywhere") is False
    assert git(outer, "status", "--porcelain", "--untracked-files=all").strip() != ""
    assert subprocess.run(["git", "-C", str(outer), "rev-parse", "HEAD"], capture_output=True).returncode != 0


def test_the_store_module_does_not_import_tomlkit() -> None:
    # Pins: the cold path every agent run pays for growing a TOML-editing
    # library it only needs when a proposal is accepted.
    code = (
        "import sys\n"
        "import mecha.core.store.learning_store\n"
        "assert 'tomlkit' not in sys.modules, 'tomlkit imported at module top'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_temp_is_stale_only_when_its_writer_is_gone_and_it_is_old_enough() -> None:
    # Pins: sweeping a temp a live writer is still writing, or a file the
    # store did not make, or never sweeping a dead writer's.
    from mecha.core.store.files import STALE_TEMP_S, is_stale_temp

    old = STALE_TEMP_S + 1
    alive = {111}.__contains__
    assert is_stale_temp("a.json.222-0123abcd.tmp", old, alive)
    assert not is_stale_temp("a.json.111-0123abcd.tmp", old, alive), "its writer lives"
    assert not is_stale_temp("a.json.222-0123abcd.tmp", STALE_TEMP_S - 1, alive), "too young to judge"
    assert is_stale_temp("a.json.0123abcd.tmp", old, alive), "an older name, judged by age"
    assert not is_stale_temp("a.json.0123abcd.tmp", 1, alive)
    for foreign in ("notes.tmp", "a.json.tmp", "a.json.222-xyz.tmp", "a.json.222-0123abcd.tmp.bak"):
        assert not is_stale_temp(foreign, old, alive), foreign


# ─── what an editor watches ─────────────────────────────────────────────────


def test_the_store_identity_moves_with_every_part_an_editor_shows_and_not_with_a_write_in_progress(
    store: LearningStore,
):
    # Pins: an editor left showing an old proposal, job, tally or lesson
    # because its poll watched fewer files than it shows; and a half-written
    # temporary file announced as a change of its own.
    from mecha.core.store.jobs import Job, write_job
    from mecha.core.store.layout import PROPOSALS_DIR
    from mecha.core.store.learning_store import store_identity

    root = store.root
    seen = [store_identity(root)]
    assert store_identity(root) == seen[-1], "nothing changed, nothing moves"

    def moved() -> None:
        now = store_identity(root)
        assert now not in seen
        seen.append(now)

    write_user_rules(store, "behavior", '[[rules]]\ntext = "Ask first."\n')
    moved()
    store.write_proposal(proposal("p-1"))
    moved()
    write_job(root, Job(id="j-1", kind="learn", state="running", started_at="t"))
    moved()
    store.append_validation(
        ValidationRecord(
            reflexion_id="r1", trigger="steer", domain="behavior", rules_hash="0",
            rule_ids=[], outcome="improved", model="m", created_at="t",
        )
    )
    moved()
    store.append_reflexion(reflexion("r1"))
    moved()
    (root / PROPOSALS_DIR / "p-2.json.123-ab.tmp").write_text("{")
    assert store_identity(root) == seen[-1], "a write still in progress is not a change"
    (root / PROPOSALS_DIR / "p-2.json.123-ab.tmp").unlink()
    (root / "notes.txt").write_text("a file no editor shows")
    assert store_identity(root) == seen[-1]


def test_a_store_that_does_not_exist_yet_has_an_identity_that_moves_when_it_appears(tmp_path: Path):
    # Pins: an editor opened before the first run erroring on every poll, or
    # never noticing the store once a run creates it.
    from mecha.core.store.learning_store import store_identity

    root = tmp_path / "later"
    before = store_identity(root)
    assert before == store_identity(root)
    store = LearningStore.open(root)
    store.write_proposal(proposal("p-1"))
    assert store_identity(root) != before


def test_reflections_by_id_are_read_again_only_when_the_file_changed(store: LearningStore, monkeypatch):
    # Pins: every hover re-reading and decoding the whole reflections file;
    # and, the other way, a hover naming a lesson as "not in the store"
    # after it was appended.
    from mecha.core.store.learning_store import ReflectionsById

    reads: list[Path] = []
    real = LearningStore.reflexions

    def counted(self: LearningStore) -> list[Reflexion]:
        reads.append(self.root)
        return real(self)

    monkeypatch.setattr(LearningStore, "reflexions", counted)
    cache = ReflectionsById()
    assert cache.of(None) == {}
    assert cache.of(store) == {} and reads == [], "no file yet: nothing to read"

    store.append_reflexion(reflexion("r1"))
    assert list(cache.of(store)) == ["r1"]
    assert list(cache.of(store)) == ["r1"]
    assert len(reads) == 1

    store.append_reflexion(reflexion("r2", trigger="correction"))
    assert sorted(cache.of(store)) == ["r1", "r2"] and cache.of(store)["r2"].trigger == "correction"
    assert len(reads) == 2

    other = LearningStore.open(store.root.parent / "other")
    other.append_reflexion(reflexion("r9"))
    assert list(cache.of(other)) == ["r9"], "another store's reflections, never the first's"


#: Every public method and property `LearningStore` offered before it became
#: a facade over its parts; callers across the tree use them.
_FACADE = (
    "root rules_dir reflections_path inbox_path set_aside_path structured_modes_path local_model_log_path "
    "has_history loose_entries seed_rules_from default_root resolve_root open open_existing commit lock "
    "try_lock refuse_links append_reflexion append_reflexions reflexions learnable_unprocessed "
    "mark_reflexions_processed mined_sessions mark_mined mined_outbox mark_outbox_mined distilled_sessions "
    "mark_distilled attempt_states record_attempts rules_path user_rules learned_rules "
    "domains projects project_domains rules_fingerprint render_block rules_prompt_block render_candidate "
    "over_budget_domains over_budget_scopes proposal_path write_proposal proposals proposal append_run runs "
    "append_validation validations append_imports imports"
).split()


def test_the_store_keeps_every_method_it_had_and_each_part_is_its_own_small_module() -> None:
    # Pins: a method lost when the store was split, and the one large module
    # growing back.
    import mecha.core.store as package

    missing = [name for name in _FACADE if not hasattr(LearningStore, name)]
    assert missing == []
    folder = Path(package.__path__[0])
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in folder.glob("*.py")}
    assert {"rules_files.py", "rules_text.py", "records.py", "proposal_files.py", "history.py", "lock.py"} <= set(sizes)
    assert max(sizes.values()) <= 900, sizes
