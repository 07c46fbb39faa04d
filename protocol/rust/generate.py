"""Write `src/wire.rs`, the Rust crate's wire types, from the checked-in JSON
Schema (`protocol/schema/mecha-sidecar.schema.json`, which `mecha-sidecar
schema` prints).

    python protocol/rust/generate.py          # write it
    python protocol/rust/generate.py --check  # exit 1 if stale

Standard library only: it reads the schema file, not the Python package,
and walks it with `protocol/schemawalk.py` (loaded by its path), as the
TypeScript generator beside the VS Code extension does. Emitted: a
serde struct for every `$defs` component that the lifecycle and the methods
a harness calls during a run reach (`HARNESS_METHODS`), and the method names
as constants.

How the schema maps onto serde, so a Rust reader reads what the server
writes and nothing stricter:

- a property the schema requires is a plain field (`Option<T>` when it may
  be `null`); one it does not require is `Option<T>` with
  `#[serde(default, skip_serializing_if = "Option::is_none")]`, so a params
  struct leaves it out when unset and a result struct reads it absent;
- unknown fields are ignored (serde's default; no `deny_unknown_fields`),
  as the contract asks of every client;
- a string enum is a `String` (its values listed in the doc comment): a
  value added later is still read, never a decode error that costs the run;
- a shape serde cannot say field by field (an adjacently tagged `Cite`, a
  union of two object types) is a `serde_json::Value`.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
SCHEMA = HERE.parents[1] / "protocol" / "schema" / "mecha-sidecar.schema.json"
OUT = HERE / "src" / "wire.rs"


def _load_walk() -> ModuleType:
    path = HERE.parent / "schemawalk.py"
    spec = importlib.util.spec_from_file_location("schemawalk", path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("schemawalk", module)
    spec.loader.exec_module(module)
    return module


walk = _load_walk()

#: The methods a harness calls during a run, and the notification it hears.
HARNESS_METHODS = (
    "mecha/rulesPromptBlock",
    "mecha/liveAffect",
    "mecha/extractInterventions",
    "mecha/locateFollowup",
    "mecha/appraiseSession",
    "mecha/sessionEnded",
    "mecha/draftResolved",
    "mecha/jobFinished",
)

_KEYWORDS = {"type", "ref", "move", "match", "loop", "fn", "mod", "use", "impl", "struct", "enum", "trait", "self",
             "crate", "super", "where", "while", "for", "in", "let", "mut", "const", "static", "as", "box", "dyn",
             "async", "await", "final", "override", "priv", "pub", "return", "true", "false", "unsafe", "yield", "macro"}


def rust_name(component: str) -> str:
    """`Taint-Output` → `TaintOutput`."""
    return "".join(part[:1].upper() + part[1:] for part in component.split("-"))


def field_name(key: str) -> str:
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower().replace("-", "_").replace("$", "")
    return f"r#{snake}" if snake in _KEYWORDS else snake


def rust_type(node: dict[str, Any]) -> str:
    match walk.shape(node):
        case walk.Ref(name):
            return rust_name(name)
        case walk.Enum(values):
            return "String" if all(isinstance(v, str) for v in values) else "serde_json::Value"
        case walk.Union(options):
            some = [o for o in options if o != {"type": "null"}]
            if len(some) == 1:
                inner = rust_type(some[0])
                return inner if len(some) == len(options) else f"Option<{inner}>"
            return "serde_json::Value"
        case walk.Scalar("string"):
            return "String"
        case walk.Scalar("integer"):
            return "i64"
        case walk.Scalar("number"):
            return "f64"
        case walk.Scalar("boolean"):
            return "bool"
        case walk.Array(items):
            return f"Vec<{rust_type(items)}>"
        case walk.Map(values):
            inner = rust_type(values) if values is not None else "serde_json::Value"
            return f"std::collections::BTreeMap<String, {inner}>"
    return "serde_json::Value"


def reached(schema: dict[str, Any]) -> list[str]:
    """Every component the lifecycle and `HARNESS_METHODS` reach, sorted."""
    roots: set[str] = set()
    for entry in schema["lifecycle"].values():
        roots |= walk.refs(entry)
    for name in HARNESS_METHODS:
        roots |= walk.refs(schema["methods"][name])
    names: list[str] = walk.reachable(schema["$defs"], roots)
    return names


def _doc(text: str, indent: str = "") -> list[str]:
    return [f"{indent}/// {line}".rstrip() for line in text.strip().splitlines()] if text.strip() else []


def _component(name: str, node: dict[str, Any]) -> list[str]:
    ident = rust_name(name)
    lines = _doc(node.get("description", ""))
    record = walk.shape(node)
    if not isinstance(record, walk.Record):
        values = node.get("enum")
        if values is not None:
            lines += _doc("One of: " + ", ".join(json.dumps(v) for v in values) + ".")
        lines.append(f"pub type {ident} = {rust_type(node) if 'enum' not in node else 'String'};")
        return lines
    required = record.required
    lines += ["#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]", f"pub struct {ident} {{"]
    for key, prop in record.properties.items():
        field = field_name(key)
        ty = rust_type(prop)
        attrs: list[str] = []
        if field.removeprefix("r#") != key:
            attrs.append(f'rename = "{key}"')
        if key not in required:
            if not ty.startswith("Option<"):
                ty = f"Option<{ty}>"
            attrs += ["default", 'skip_serializing_if = "Option::is_none"']
        elif ty.startswith("Option<"):
            attrs.append("default")
        lines += _doc(prop.get("description", ""), "    ")
        if attrs:
            lines.append(f"    #[serde({', '.join(attrs)})]")
        lines.append(f"    pub {field}: {ty},")
    lines.append("}")
    return lines


def generate(schema: dict[str, Any]) -> str:
    out = [
        "// Generated by protocol/rust/generate.py from protocol/schema/mecha-sidecar.schema.json.",
        "// Do not edit: change the Structs, regenerate the schema, then run the generator.",
        "#![allow(missing_docs, clippy::all)]",
        "",
        "use serde::{Deserialize, Serialize};",
        "",
        "/// The methods a harness calls during a run, and the notification it hears.",
        "pub mod methods {",
    ]
    for name in (*HARNESS_METHODS, *schema["lifecycle"]):
        const = re.sub(r"[^A-Za-z0-9]+", "_", field_name(name.split("/", 1)[-1])).strip("_").upper()
        out.append(f"    pub const {const}: &str = {json.dumps(name)};")
    out += ["}", ""]
    for name in reached(schema):
        out += _component(name, schema["$defs"][name])
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    text = generate(json.loads(SCHEMA.read_text(encoding="utf-8")))
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            sys.stderr.write(f"{OUT.name} is stale: run python protocol/rust/generate.py\n")
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
