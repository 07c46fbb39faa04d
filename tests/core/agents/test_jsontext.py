"""A JSON file changed as text (`mecha.core.agents.jsontext.patch`): what
changed is rewritten, every other byte is kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mecha.core.agents.jsontext import patch


def _patched(text: str, new: Any, unit: str | int = 2) -> str:
    out = patch(text, json.loads(text), new, unit)
    assert json.loads(out) == new, out
    return out


def test_an_unchanged_value_keeps_its_spelling() -> None:
    text = '{"a": 1e3, "b": "\\u00e9", "c": [1,2 ,3]}'
    assert patch(text, json.loads(text), json.loads(text)) == text


@pytest.mark.parametrize(("text", "drop", "left"), [
    ('{"a": 1e3, "b": 2, "c": 3}', "b", '{"a": 1e3, "c": 3}'),
    ('{"a": 1e3, "b": 2, "c": 3}', "c", '{"a": 1e3, "b": 2}'),
    ('{"a": 1e3, "b": 2, "c": 3}', "a", '{"b": 2, "c": 3}'),
    ('{\n  "a": 1,\n  "b": 2\n}\n', "b", '{\n  "a": 1\n}\n'),
    ('{"only": true}', "only", "{}"),
])
def test_a_member_that_goes_takes_its_comma_and_space_with_it(text: str, drop: str, left: str) -> None:
    new = {k: v for k, v in json.loads(text).items() if k != drop}
    assert _patched(text, new) == left


def test_a_new_member_goes_at_the_end_in_the_files_indentation_and_comes_out_again() -> None:
    text = '{\n\t"a": [1, 2],\n\t"b": "\\u00e9"\n}\n'
    grown = _patched(text, {**json.loads(text), "hooks": {"E": [{"x": "é"}]}}, "\t")
    assert grown.startswith('{\n\t"a": [1, 2],\n\t"b": "\\u00e9",\n\t"hooks": {\n\t\t"E": [\n')
    assert '"x": "é"' in grown
    assert _patched(grown, json.loads(text)) == text


def test_array_elements_are_matched_kept_patched_inserted_and_removed() -> None:
    text = '[{"k": 1}, {"k": 2, "v": 1E2}, {"k": 3}]'
    assert _patched(text, [{"k": 1}, {"k": 2, "v": 100.0, "w": 0}, {"k": 3}]) == \
        '[{"k": 1}, {"k": 2, "v": 1E2, "w": 0}, {"k": 3}]'
    assert _patched(text, [{"k": 1}, {"k": 3}]) == '[{"k": 1}, {"k": 3}]'
    assert _patched(text, [{"k": 0}, {"k": 1}, {"k": 2, "v": 100.0}, {"k": 3}]) == \
        '[{"k": 0}, {"k": 1}, {"k": 2, "v": 1E2}, {"k": 3}]'


def test_a_duplicate_key_is_kept_and_a_change_lands_on_the_last_one() -> None:
    text = '{"m": "sonnet", "m": "opus", "n": 1}'
    assert _patched(text, {"m": "opus", "n": 2}) == '{"m": "sonnet", "m": "opus", "n": 2}'
    assert _patched(text, {"m": "haiku", "n": 1}) == '{"m": "sonnet", "m": "haiku", "n": 1}'
