"""Naming a record by its id or a prefix of it, as people do at a terminal
and in an editor (proposals, set-aside inbox entries)."""

from __future__ import annotations

import pytest

from mecha.core.errors import Ambiguous, NotFound
from mecha.core.identity import by_id_or_prefix, one_by_id_or_prefix

IDS = ["p-20261101-aa", "p-20261101-aab", "p-20261102-cc"]


def _named(ident: str) -> list[str]:
    return by_id_or_prefix(IDS, ident, lambda r: r)


def test_a_unique_prefix_names_its_record_and_a_shared_one_names_all_it_fits() -> None:
    # Pins: a prefix resolving to the first match (accepting the wrong
    # proposal) instead of letting the caller report the ambiguity.
    assert _named("p-20261102") == ["p-20261102-cc"]
    assert _named("p-20261101") == ["p-20261101-aa", "p-20261101-aab"]


def test_an_exact_id_wins_even_when_it_is_a_prefix_of_another() -> None:
    # Pins: a full id that can never be named because a longer id starts with it.
    assert _named("p-20261101-aa") == ["p-20261101-aa"]


def test_nothing_and_the_empty_string_name_no_record() -> None:
    # Pins: an empty prefix matching every record.
    assert _named("") == []
    assert _named("q-") == []


def test_one_record_is_named_or_the_failure_says_none_or_lists_them() -> None:
    # Pins: each kind of record wording its own none-or-several failure
    # (two copies that drift), or a several-match answered with the first.
    def one(ident: str) -> str:
        return one_by_id_or_prefix(IDS, ident, lambda r: r, plural="proposals", missing=f"no proposal {ident}")

    assert one("p-20261102") == "p-20261102-cc"
    assert one("p-20261101-aa") == "p-20261101-aa"
    with pytest.raises(NotFound, match="^no proposal q-$"):
        one("q-")
    with pytest.raises(Ambiguous) as caught:
        one("p-20261101")
    assert caught.value.matches == ["p-20261101-aa", "p-20261101-aab"]
    assert str(caught.value) == "`p-20261101` matches 2 proposals: p-20261101-aa, p-20261101-aab"
