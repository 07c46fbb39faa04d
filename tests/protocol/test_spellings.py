"""One spelling per fact on the wire.

A reflection's id is `reflexion_id` everywhere a result names one (a
proposal's `reflexion_ids`, a ledger row, a rule's source, a planned probe);
the two results that once spelled it `reflection_id` still write that field
too, equal to the other, so a client written against them keeps working.
The VS Code client names the generated wire types by their generated names.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from mecha.core.learning.sources import RuleSource
from mecha.core.store.ledger import PlannedProbe

ROOT = Path(__file__).resolve().parents[2]


def test_a_rule_source_writes_the_new_spelling_and_the_deprecated_one() -> None:
    wire = msgspec.json.decode(msgspec.json.encode(RuleSource(reflexion_id="r-1", on_record=False)))
    assert wire == {"reflexion_id": "r-1", "on_record": False, "reflection_id": "r-1"}
    back = msgspec.convert(wire, RuleSource)
    assert (back.reflexion_id, back.reflection_id) == ("r-1", "r-1")


def test_a_planned_probe_writes_the_new_spelling_and_the_deprecated_one() -> None:
    probe = PlannedProbe(reflexion_id="r-2", trigger="steer", session_id="s-1", text="no", rules_hash="h")
    wire = msgspec.json.decode(msgspec.json.encode(probe))
    assert wire["reflexion_id"] == wire["reflection_id"] == "r-2"


def test_the_deprecated_spelling_never_disagrees_with_the_new_one() -> None:
    """A payload that sets the old field to something else is rewritten to
    the one id the new field names: there is one fact, not two."""
    s = msgspec.convert({"reflexion_id": "r-new", "reflection_id": "r-old"}, RuleSource)
    assert s.reflection_id == "r-new"


def test_the_vscode_client_reexports_wire_types_under_their_generated_names() -> None:
    text = (ROOT / "editors" / "vscode" / "src" / "protocol.ts").read_text(encoding="utf-8")
    reexports = re.findall(r"export type \{([^}]*)\} from \"\./wire\"", text)
    assert reexports, "protocol.ts re-exports no wire types; the test reads the wrong file"
    renamed = [name.strip() for block in reexports for name in block.split(",") if " as " in name]
    assert renamed == [], f"wire types re-exported under another name: {renamed}; use the generated names"
