"""Goal references: the wire string, and leniency that costs only the entry
it is about."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mecha.core.gate.goal import (
    GoalKind,
    GoalRef,
    de_lenient,
    de_lenient_vec,
    goal_dec_hook,
    goal_enc_hook,
    parse_goal,
    parse_goals,
)


def test_a_goal_reference_is_kind_colon_id_on_the_wire():
    # Pins the wire spelling the harness writes; anything else is a different string.
    assert GoalRef.task("01J8ZK").to_wire() == "task:01J8ZK"
    assert GoalRef.setpoint("attention-debt").to_wire() == "setpoint:attention-debt"
    assert str(GoalRef.task("x")) == "task:x"


def test_every_known_kind_round_trips_through_its_wire_string():
    # A kind added to the enum but not parseable would be written and then lost.
    for kind in GoalKind:
        ref = GoalRef(kind, "some-id")
        assert parse_goal(ref.to_wire()) == ref


def test_everything_after_the_first_colon_belongs_to_the_id():
    # Splitting on the last colon would mangle ids that contain one.
    assert parse_goal("task:a:b:c") == GoalRef.task("a:b:c")


def test_an_unknown_kind_is_no_goal_rather_than_an_error():
    # A single goal of an unknown kind means no goal.
    assert parse_goal("banana:b") is None


@pytest.mark.parametrize("text", ["", "task", "task:", ":x", "Task:x", " task:x"])
def test_a_string_that_names_nothing_readable_is_no_goal(text):
    # Guessing a goal from a malformed reference would attribute errors to it.
    assert parse_goal(text) is None


def test_an_unrecognised_entry_in_a_list_costs_only_itself():
    # One unknown kind must not cost the references around it.
    assert parse_goals(["task:a", "banana:b", "setpoint:c"]) == [
        GoalRef.task("a"),
        GoalRef.setpoint("c"),
    ]


def test_de_lenient_reads_null_as_no_goal_and_refuses_a_non_string():
    # Lenient about kinds, strict about shape: a number is a malformed record.
    assert de_lenient(None) is None
    assert de_lenient("task:a") == GoalRef.task("a")
    assert de_lenient("banana:a") is None
    with pytest.raises(msgspec.ValidationError, match="string"):
        de_lenient(3)


def test_de_lenient_vec_drops_unknown_kinds_and_names_a_malformed_entry():
    # A bad entry's position must be in the message so a person can find it.
    assert de_lenient_vec(["banana:x", "task:y"]) == [GoalRef.task("y")]
    with pytest.raises(msgspec.ValidationError, match=r"\[1\]"):
        de_lenient_vec(["task:a", {"kind": "task"}])
    with pytest.raises(msgspec.ValidationError, match="array"):
        de_lenient_vec("task:a")


def test_a_goal_reference_is_immutable_and_hashable():
    # It is a dictionary key in the frustration check; mutation would corrupt that.
    ref = GoalRef.task("a")
    with pytest.raises(AttributeError):
        ref.id = "b"  # type: ignore[misc]
    assert {ref: 1}[GoalRef.task("a")] == 1
    assert GoalRef.task("a") != GoalRef.setpoint("a")


def test_a_goal_reference_needs_an_id():
    # An empty id would encode as "task:", which parses back as no goal.
    with pytest.raises(ValueError):
        GoalRef.task("")


def test_the_msgspec_hooks_encode_a_string_and_decode_it_strictly():
    # A record carrying a GoalRef must put a bare string on the wire.
    class Holder(msgspec.Struct):
        goal: GoalRef | None = None

    raw = msgspec.json.encode(Holder(GoalRef.task("a")), enc_hook=goal_enc_hook)
    assert raw == b'{"goal":"task:a"}'
    decoded = msgspec.json.decode(raw, type=Holder, dec_hook=goal_dec_hook)
    assert decoded == Holder(GoalRef.task("a"))
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"goal":"banana:a"}', type=Holder, dec_hook=goal_dec_hook)


_known = st.builds(GoalRef, st.sampled_from(list(GoalKind)), st.text(min_size=1, max_size=12))
_unknown_kind = st.text(min_size=0, max_size=8).filter(
    lambda k: ":" not in k and k not in {g.value for g in GoalKind}
)


@given(
    st.lists(
        st.one_of(
            _known.map(lambda g: (g.to_wire(), g)),
            st.tuples(_unknown_kind, st.text(max_size=12)).map(lambda t: (f"{t[0]}:{t[1]}", None)),
        ),
        max_size=10,
    )
)
def test_parsing_a_list_drops_exactly_the_unknown_kinds(entries):
    # Property: known references survive in order; every unknown one, and only those, goes.
    wires = [w for w, _ in entries]
    expected = [g for _, g in entries if g is not None]
    assert parse_goals(wires) == expected
