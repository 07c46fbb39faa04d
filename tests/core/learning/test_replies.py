"""The reply contract (one Struct → prompt paragraph, schema, parser) and the
one function that decides whether a "lesson" is a lesson at all."""

from __future__ import annotations

import json

import pytest

from mecha.core.learning.consolidation import LEARNER_CONTRACT
from mecha.core.learning.reflection import BEHAVIOR_CONTRACT, WRITING_CONTRACT
from mecha.core.learning.replies import MAX_RESCANS, confidence_or_none, find_json, no_lesson_reason
from mecha.core.nesting import MAX_REPLY_DEPTH, json_nesting


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


@pytest.mark.parametrize(
    "number", ["0.1253978546453870E+2038", "1e400", "-1e999", "NaN", "Infinity", "1" + "0" * 400, "-" + "9" * 400, "9" * 5000]
)
def test_a_confidence_past_what_a_float_holds_reads_as_no_confidence(number):
    # Pins: SmolLM2-135M on a real llama.cpp server wrote a confidence of
    # 0.125E+2038; the decoder refused the number, and with it the lesson.
    # The long fuzz then found the same for an integer of 401 digits (and
    # one of 5,000, past what Python reads at all).
    text = f'{{"reflexion": "Ask before deleting any file.", "error_type": "other", "confidence": {number}, "skip": false}}'
    reply = BEHAVIOR_CONTRACT.decode(text)
    assert reply is not None and reply.reflexion == "Ask before deleting any file." and reply.confidence is None



# ─── Finding the JSON in a reply ────────────────────────────────────────────


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('Sure! Here it is:\n```json\n{"skip": true}\n```', '{"skip": true}'),
        ('prose {"a": "}"} and more', '{"a": "}"}'),
        ('{not json} then {"b": 2}', '{"b": 2}'),
        ('{ {"a": 1}', '{"a": 1}'),
        # A quote in prose, before or between objects, means nothing...
        ('He said "hi. {"a": 1}', '{"a": 1}'),
        ('"{" {"q": 1}', '{"q": 1}'),
        # ...and a brace that an unclosed string swallowed still starts an object.
        ('He wrote "{ok" then {"a": 1}', '{"a": 1}'),
        ('{ "x {"a": 1}', '{"a": 1}'),
        ('{"a": {"b": [1, 2, {"c": "\\"}"}]}}', '{"a": {"b": [1, 2, {"c": "\\"}"}]}}'),
        ("no braces here", None),
        ('{"a": [1, 2}', None),
    ],
)
def test_the_finder_takes_the_first_object_that_decodes(text, found):
    assert find_json(text).raw == found


@pytest.mark.parametrize(
    "text",
    [
        "{" * 40_000,
        '{"a": ' * 40_000,
        '{"a": "' * 40_000,
        '"{' * 40_000,
        '{"' * 40_000,
        "[" * 40_000 + "{" * 40_000,
        '{"k": [' * 20_000 + "]}" * 20_000,
        ('{"a": {"b": ' + "x" * 50) * 2_000,
        # Every brace inside one string is a start to rescan from; taking
        # them off the front of a list cost 8 s for 190,000 (found by the
        # long fuzz's time limit: `examined` does not see that cost).
        '{"skip": false, "reflexion": "' + "{" * 190_000 + '"}',
    ],
    ids=["braces", "open-keys", "open-strings", "quoted-braces", "brace-quote", "brackets-then-braces", "deep-valid",
         "unclosed-objects", "braces-in-a-string"],
)
def test_finding_json_costs_a_bounded_multiple_of_the_text_whatever_the_text(text):
    # Pins: 40,000 `{` taking 38 s — every start scanned to the end, a quadratic.
    found = find_json(text)
    assert found.examined <= (MAX_RESCANS + 2) * (MAX_REPLY_DEPTH + 2) * len(text)
    assert found.examined <= 200 * len(text), found.examined


def test_an_object_nested_past_the_limit_is_passed_over_as_too_deep_never_a_recursion_error():
    # Pins: a reply nested 1,000 deep raising RecursionError out of every pass.
    deep = '{"skip": false, "reflexion": "x", "confidence": ' + "[" * 1000 + "]" * 1000 + "}"
    found = find_json(deep)
    assert found.raw is None and found.too_deep
    reply, why = BEHAVIOR_CONTRACT.read(deep)
    assert reply is None and why and f"deeper than {MAX_REPLY_DEPTH} levels" in why
    shallow = '{"skip": false, "reflexion": "x", "confidence": ' + "[" * 20 + "]" * 20 + "}"
    assert find_json(shallow).raw == shallow


def test_nesting_is_measured_outside_strings_and_stops_past_its_limit():
    assert json_nesting('{"a": [1, {"b": "[[[[{{{{"}]}', 10) == 3
    assert json_nesting(b'{"a": "\\"[[["}', 10) == 1
    assert json_nesting("[" * 1_000_000, 32) == 33
    assert json_nesting('"unclosed [[[[', 10) == 0
