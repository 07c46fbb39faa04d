"""The reply contract (one Struct → prompt paragraph, schema, parser) and the
one function that decides whether a "lesson" is a lesson at all."""

from __future__ import annotations

import json

import pytest

from mecha.core.learning.consolidation import LEARNER_CONTRACT
from mecha.core.learning.reflection import BEHAVIOR_CONTRACT, WRITING_CONTRACT
from mecha.core.learning.replies import confidence_or_none, no_lesson_reason


@pytest.mark.parametrize("contract", [BEHAVIOR_CONTRACT, WRITING_CONTRACT, LEARNER_CONTRACT])
def test_a_contract_schema_is_self_contained_and_strict(contract):
    # Pins: a schema with `$ref`s some grammar compilers cannot follow, or one
    # OpenAI's `strict: true` refuses (an optional field, an open object, a
    # `default`).
    text = json.dumps(contract.schema())
    assert "$ref" not in text and "$defs" not in text and '"default"' not in text

    def objects(node):
        if isinstance(node, dict):
            if node.get("type") == "object":
                yield node
            for v in node.values():
                yield from objects(v)
        elif isinstance(node, list):
            for v in node:
                yield from objects(v)

    for obj in objects(contract.schema()):
        assert obj["required"] == list(obj["properties"]) and obj["additionalProperties"] is False


@pytest.mark.parametrize("contract", [BEHAVIOR_CONTRACT, WRITING_CONTRACT, LEARNER_CONTRACT])
def test_the_prompt_paragraph_names_every_field_the_parser_reads(contract):
    # Pins: the prompt's reply shape drifting from the Struct the parser decodes.
    described = contract.describe()
    for field in contract.struct.__struct_fields__:
        assert f'"{field}"' in described
    assert "<" not in described, "no fill-in-the-blank slot a small model can copy back"


@pytest.mark.parametrize(
    "text, verdict",
    [
        ("Ask before deleting files.", None),
        ("Wrap key names in <kbd> tags.", None),
        ("", "empty"),
        ("   ", "empty"),
        ("...", "no words"),
        ("no lesson", "says there is no lesson"),
        ("None.", "says there is no lesson"),
        ("<pre><rem>Your previous question was answered by this HTML element.</rem></pre>", "markup"),
        ("<the directive, one to three sentences>", "placeholder"),
        ("Do this next time. <the lesson here>", "placeholder"),
        ("the lesson, written as an instruction for next time, in one to three sentences", "echoed back"),
        ("The lesson, written as an instruction for next time.", "echoed back"),
    ],
)
def test_no_lesson_reason_tells_a_lesson_from_noise(text, verdict):
    # Pins: markup or the template's own words learned as a rule (the first
    # real-model run's only "lesson" was `<pre><rem>…</rem></pre>`), or a real
    # lesson that mentions a tag refused.
    why = no_lesson_reason(text, BEHAVIOR_CONTRACT.placeholders())
    if verdict is None:
        assert why is None
    else:
        assert why is not None and verdict in why


@pytest.mark.parametrize("value, kept", [(0.0, 0.0), (0.7, 0.7), (1.0, 1.0), (1.207, None), (50, None), (-0.1, None), (None, None)])
def test_a_confidence_outside_0_to_1_is_dropped_not_the_reply(value, kept):
    # Pins: a lesson lost because a small model wrote its confidence as 50
    # (llama.cpp's grammar does not hold a number to minimum/maximum).
    assert confidence_or_none(value) == kept
