"""The one walk over the wire's JSON Schema that both generators of wire
types (TypeScript for the VS Code extension, serde for the Rust crate) use."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from mecha.protocol import schemawalk as walk
from mecha.protocol.schema import schema_json

REPO = Path(__file__).resolve().parents[2]
GENERATORS = {
    "typescript": REPO / "editors" / "vscode" / "scripts" / "generate_wire.py",
    "rust": REPO / "protocol" / "rust" / "generate.py",
}


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"gen_{path.parent.name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("node", "expected"), [
    ({"$ref": "#/$defs/Rule"}, walk.Ref("Rule")),
    ({"enum": ["a", "b"]}, walk.Enum(("a", "b"))),
    ({"const": "x"}, walk.Enum(("x",))),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, walk.Union(({"type": "string"}, {"type": "null"}))),
    ({"type": ["string", "null"]}, walk.Union(({"type": "string"}, {"type": "null"}))),
    ({"type": "integer"}, walk.Scalar("integer")),
    ({"type": "array", "items": {"type": "string"}}, walk.Array({"type": "string"})),
    ({"type": "array"}, walk.Array({})),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, walk.Map({"type": "integer"})),
    ({"type": "object"}, walk.Map(None)),
    ({"type": "object", "properties": {"a": {}}, "required": ["a"]}, walk.Record({"a": {}}, frozenset({"a"}))),
    ({"oneOf": [{"type": "string"}]}, walk.Other({"oneOf": [{"type": "string"}]})),
])
def test_a_schema_node_is_read_as_one_shape(node, expected):
    assert walk.shape(node) == expected


def test_reachable_follows_references_through_components_and_stops_at_cycles():
    defs = {"A": {"properties": {"b": {"$ref": "#/$defs/B"}}}, "B": {"items": {"$ref": "#/$defs/A"}},
            "C": {"type": "string"}}
    assert walk.reachable(defs, {"A"}) == ["A", "B"]
    assert walk.refs({"anyOf": [{"$ref": "#/$defs/C"}, [{"$ref": "#/$defs/A"}]]}) == {"A", "C"}


@pytest.mark.parametrize("language", sorted(GENERATORS))
def test_each_generator_walks_the_schema_with_the_shared_walk_and_no_walk_of_its_own(language):
    # Pins: the TypeScript and Rust generators each walking the schema their
    # own way — their own $ref prefix, reachability and order of questions —
    # and so disagreeing on what a node is.
    gen = _load(GENERATORS[language])
    assert Path(gen.walk.__file__).resolve() == Path(walk.__file__).resolve()
    source = GENERATORS[language].read_text(encoding="utf-8")
    for own in ("$defs/", "def _refs", "def _reachable", '"anyOf" in', '"$ref" in'):
        assert own not in source, f"{language} generator reads the schema itself: {own!r}"


def test_both_generators_read_a_type_list_as_the_same_union():
    # Pins: `"type": ["string", "null"]` was `string | null` to one generator
    # and an unknown value to the other.
    ts, rust = _load(GENERATORS["typescript"]), _load(GENERATORS["rust"])
    node = {"type": ["string", "null"]}
    assert ts.ts_type(node) == "string | null"
    assert rust.rust_type(node) == "Option<String>"


def test_every_component_the_generators_emit_has_a_shape_they_say_field_by_field_or_name():
    # The schema's components are all read by the walk: each record's fields
    # and each alias have a shape, and none is a reference to nothing.
    schema = json.loads(schema_json())
    defs = schema["$defs"]
    for name in walk.reachable(defs, walk.refs(schema["methods"]) | walk.refs(schema["lifecycle"])):
        assert name in defs
        for ref in walk.refs(defs[name]):
            assert ref in defs, f"{name} names {ref}, which the schema does not define"
