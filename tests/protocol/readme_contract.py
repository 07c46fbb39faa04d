"""What `protocol/README.md` shows, read back as data, so tests can hold it
to the schema and to the method table.

The README is prose around fenced examples. A ```json or ```jsonc block
whose content is a JSON-RPC message is an example of the wire; it is taken
as it stands, with one allowance: a `messages` array written as a comment
(`[ /* the transcript shown under … */ ]`) stands for the transcript shown
in full under `mecha/extractInterventions`. Any other JSON block is an
illustration (a store record, a piece of the schema) and must say so by
eliding something with `…`: a block that is neither is an example the
tests cannot check, and is reported as such.

The method table of §8 and the method list of the `initialize` example are
read too, so a test can hold them to `protocol.methods.METHODS`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[2] / "protocol" / "README.md"

_FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```\n", re.S | re.M)
_ELIDED_TRANSCRIPT = re.compile(r"\[\s*/\*[^*]*\*/\s*\]")
_HEADING = re.compile(r"^(#{1,3}) (.+)$", re.M)


@dataclass
class Block:
    """One fenced block: its language, text, line and the heading it sits under."""

    lang: str
    text: str
    line: int
    heading: str

    def where(self) -> str:
        return f"protocol/README.md:{self.line} (under {self.heading!r})"


@dataclass
class Example:
    """A wire message shown in the README."""

    block: Block
    message: dict[str, Any]


@dataclass
class Readme:
    text: str
    blocks: list[Block]
    examples: list[Example] = field(default_factory=list)
    #: Blocks that are JSON but not a wire message, and elide nothing.
    unchecked: list[Block] = field(default_factory=list)


def read(path: Path = README) -> Readme:
    text = path.read_text(encoding="utf-8")
    headings = [(m.start(), m.group(2)) for m in _HEADING.finditer(text)]
    blocks: list[Block] = []
    for m in _FENCE.finditer(text):
        heading = next((h for pos, h in reversed(headings) if pos < m.start()), "")
        blocks.append(Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1, heading))
    doc = Readme(text, blocks)
    transcript: Any = None
    for block in blocks:
        if block.lang not in ("json", "jsonc"):
            continue
        body = block.text
        if _ELIDED_TRANSCRIPT.search(body):
            if transcript is None:
                raise AssertionError(f"{block.where()}: a transcript is elided before one is shown in full")
            body = _ELIDED_TRANSCRIPT.sub(json.dumps(transcript), body)
        try:
            value = json.loads(body)
        except json.JSONDecodeError as exc:
            if "…" in body:
                continue  # an illustration that elides something
            raise AssertionError(f"{block.where()}: not JSON ({exc})") from None
        if isinstance(value, dict) and value.get("jsonrpc") == "2.0":
            doc.examples.append(Example(block, value))
            params = value.get("params")
            if transcript is None and isinstance(params, dict) and isinstance(params.get("messages"), list):
                if value.get("method") == "mecha/extractInterventions":
                    transcript = params["messages"]
        elif "…" not in body:
            doc.unchecked.append(block)
    return doc


def method_table(doc: Readme) -> dict[str, tuple[str, str]]:
    """§8's table: method → (params cell, result cell)."""
    section = doc.text.split("## 8. Methods", 1)[1].split("\n### ", 1)[0]
    rows: dict[str, tuple[str, str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3:
            continue
        name = re.match(r"\[`([^`]+)`\]", cells[0]) or re.match(r"`([^`]+)`", cells[0])
        if name is None:
            continue
        rows[name.group(1)] = (cells[1], cells[2])
    return rows


def cell_fields(cell: str) -> list[tuple[str, bool]] | str:
    """The fields a table cell names, each with whether it is marked
    optional (`?`): `{a, b?}` → [("a", False), ("b", True)]. A cell that
    names a type instead (`Appraisal`) is returned as that name."""
    cell = cell.strip().strip("`")
    if not cell.startswith("{"):
        return cell
    names: list[tuple[str, bool]] = []
    for part in re.findall(r"\{([^}]*)\}", cell):
        for item in part.split(","):
            item = item.strip().strip("`")
            if not item or item == "…":
                continue
            names.append((item.rstrip("?"), item.endswith("?")))
    return names
