"""The Rust crate in protocol/rust, read without building it: its wire types
are what the schema generates and follow the contract's reading of absent
and unknown fields, and the README shows the run its doc example compiles.

The crate's own `cargo test` against a real sidecar is a real part (a
compiler and a spawned process): `tests/wire/test_rust_client.py`.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from mecha.protocol.schema import schema_json

REPO = Path(__file__).resolve().parents[2]
CRATE = REPO / "protocol" / "rust"
GENERATOR = CRATE / "generate.py"
REGENERATE = "mecha-sidecar schema > protocol/schema/mecha-sidecar.schema.json && python protocol/rust/generate.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_rust_wire", GENERATOR)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_checked_in_rust_types_are_what_the_schema_generates() -> None:
    # Pins: serde types hand-written from the README, free to drift from the server.
    checked = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, f"{checked.stderr} — run: {REGENERATE}"
    gen = _generator()
    assert (CRATE / "src" / "wire.rs").read_text(encoding="utf-8") == gen.generate(json.loads(schema_json())), f"stale: {REGENERATE}"


def test_the_rust_types_follow_the_contracts_reading_of_absent_and_unknown() -> None:
    gen = _generator()
    doc = json.loads(schema_json())
    text = gen.generate(doc)
    assert "deny_unknown_fields" not in text, "a client must ignore fields it does not know"
    # A result field the server may leave out reads absent; one it always writes is plain.
    sources = re.search(r"pub struct InitializeResult \{(.*?)\n\}", text, re.S)
    assert sources is not None and 'rename = "ignoredOptions"' in sources.group(1)
    block = re.search(r"pub struct RulesPromptBlockResult \{(.*?)\n\}", text, re.S)
    assert block is not None
    assert "pub rule_ids: Vec<String>," in block.group(1)
    assert '#[serde(default, skip_serializing_if = "Option::is_none")]\n    pub project: Option<String>,' in block.group(1)
    # Every component a harness's methods reach is emitted.
    for name in gen.reached(doc):
        assert re.search(rf"pub (struct|type) {gen.rust_name(name)}\b", text), name


def test_the_readme_shows_the_run_the_crate_compiles() -> None:
    # Pins: the README's twenty lines drifting from what builds (the crate's
    # doc example is compiled by `cargo test`; hidden `# ` lines aside, the
    # README shows the same text).
    lib = (CRATE / "src" / "lib.rs").read_text(encoding="utf-8")
    found = re.search(r"//! ```no_run\n(.*?)//! ```\n", lib, re.S)
    assert found is not None
    lines = [line[4:] if line.startswith("//! ") else line[3:] for line in found.group(1).splitlines()]
    example = "\n".join(line for line in lines if not line.startswith("# ")) + "\n"
    readme = (REPO / "protocol" / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"```rust\n(.*?)```\n", readme, re.S)
    assert shown is not None, "protocol/README.md shows no Rust run"
    assert shown.group(1) == example, "protocol/README.md's Rust run differs from protocol/rust/src/lib.rs's doc example"
    assert len(example.splitlines()) <= 32
