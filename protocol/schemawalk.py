"""One reading of the wire's JSON Schema, for every generator of wire types.

Two generators turn the checked-in schema (`protocol/schema/`) into another
language's types: the VS Code extension's TypeScript
(`editors/vscode/scripts/generate_wire.py`) and the Rust crate's serde
structs (`protocol/rust/generate.py`). Each once walked the schema its own
way — its own `$ref` prefix, its own search for the components a root
reaches, its own order of asking whether a node is a reference, an enum, a
union or an array — and the two disagreed on what a node was (a `type`
list was a union to one and unknown to the other). Here is the one walk:

- `refs` / `reachable`: the components a part of the schema names, and
  every component those reach in turn, sorted — what a generator emits;
- `shape`: what one schema node is, decided once and in one order, as a
  small value (`Ref`, `Enum`, `Union`, `Scalar`, `Array`, `Map`, `Record`,
  `Other`) a generator turns into its language's type by matching on it.

What each language makes of a shape (a union with `null` is an `Option` in
Rust, a `| null` in TypeScript) stays in its generator; what the shape *is*
is decided here.

Standard library only, and importing nothing of the project: the generators
load this file by its path, so they run from a checkout without the package
installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: How the schema spells a reference to one of its components.
PREFIX = "#/$defs/"


@dataclass(frozen=True)
class Ref:
    """A reference to the component `name`."""

    name: str


@dataclass(frozen=True)
class Enum:
    """One of fixed values (`enum`, or `const`: a single one)."""

    values: tuple[Any, ...]


@dataclass(frozen=True)
class Union:
    """Any of `options` (`anyOf`, or a list of `type`s), in schema order."""

    options: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Scalar:
    """`string`, `integer`, `number`, `boolean` or `null`."""

    kind: str


@dataclass(frozen=True)
class Array:
    """A list of `items` (`{}` when the schema does not say)."""

    items: dict[str, Any]


@dataclass(frozen=True)
class Map:
    """An object with no named properties: string keys to `values`
    (`None`: values of any kind)."""

    values: dict[str, Any] | None


@dataclass(frozen=True)
class Record:
    """An object with named `properties`, those in `required` always present."""

    properties: dict[str, dict[str, Any]]
    required: frozenset[str]


@dataclass(frozen=True)
class Other:
    """Anything else (`oneOf`, a node with no type): no type a generator can say field by field."""

    node: dict[str, Any]


Shape = Ref | Enum | Union | Scalar | Array | Map | Record | Other

SCALARS = frozenset({"string", "integer", "number", "boolean", "null"})


def ref_name(node: Any) -> str | None:
    """The component a `{"$ref": …}` node names, or None."""
    ref = node.get("$ref") if isinstance(node, dict) else None
    if isinstance(ref, str) and ref.startswith(PREFIX):
        return ref[len(PREFIX):]
    return None


def shape(node: dict[str, Any]) -> Shape:
    """What the schema node `node` is. Asked in this order: a reference, fixed
    values, a union, a scalar, a list, then an object."""
    name = ref_name(node)
    if name is not None:
        return Ref(name)
    if "enum" in node:
        return Enum(tuple(node["enum"]))
    if "const" in node:
        return Enum((node["const"],))
    if "anyOf" in node:
        return Union(tuple(node["anyOf"]))
    kind = node.get("type")
    if isinstance(kind, list):
        return Union(tuple({**node, "type": k} for k in kind))
    if kind in SCALARS:
        return Scalar(kind)
    if kind == "array":
        return Array(node.get("items", {}))
    if kind == "object" and "properties" in node:
        return Record(node["properties"], frozenset(node.get("required", [])))
    if kind == "object":
        extra = node.get("additionalProperties")
        return Map(extra if isinstance(extra, dict) else None)
    return Other(node)


def refs(node: Any) -> set[str]:
    """Every component named anywhere inside `node`."""
    if isinstance(node, dict):
        name = ref_name(node)
        out = {name} if name is not None else set()
        for value in node.values():
            out |= refs(value)
        return out
    if isinstance(node, list):
        return set().union(*(refs(v) for v in node)) if node else set()
    return set()


def reachable(defs: dict[str, Any], roots: set[str]) -> list[str]:
    """`roots` and every component they reach through `defs`, sorted."""
    seen: set[str] = set()
    todo = sorted(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(refs(defs[name]) - seen)
    return sorted(seen)
