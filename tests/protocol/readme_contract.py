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

`refresh` mends the examples from a fresh recording
(`python -m tests.protocol.wire_examples --fix-readme`): an exchange the
schema refuses is replaced by the recorded one of the same method, and a
method with no example gets the recorded one under its heading. Prose is
left alone; the report says what changed, for a person to read over.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
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


def pairs(doc: Readme) -> list[tuple[Example | None, Example]]:
    """Each reply or notification with the request it answers: the nearest
    request before it with the same id (examples come from more than one
    recording, so an id may recur further on)."""
    open_requests: dict[str, Example] = {}
    out: list[tuple[Example | None, Example]] = []
    for ex in doc.examples:
        msg = ex.message
        if "method" in msg and "id" in msg:
            open_requests[json.dumps(msg["id"])] = ex
        elif "method" in msg:
            out.append((None, ex))
        else:
            out.append((open_requests.pop(json.dumps(msg.get("id")), None), ex))
    return out


#: `(payload, method, "params" | "result")` → what the schema says is wrong.
Problems = Callable[[Any, str, str], list[str]]


def _recorded_sections(markdown: str) -> dict[str, list[str]]:
    """The recorder's Markdown: title → its fenced blocks, as written."""
    out: dict[str, list[str]] = {}
    for part in re.split(r"^### ", markdown, flags=re.M)[1:]:
        title, body = part.split("\n", 1)
        out.setdefault(title.strip(), [m.group(0) for m in _FENCE.finditer(body)])
    return out


def _fenced(block: Block) -> str:
    return f"```{block.lang}\n{block.text}```\n"


def refresh(text: str, recorded: str, problems: Problems, methods: list[str]) -> tuple[str, list[str]]:
    """`text` (protocol/README.md) with every example the schema refuses
    replaced by the recorded exchange of its method, and a recorded example
    added under the heading of each method in `methods` that has none."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".md", encoding="utf-8", delete=False) as f:
        f.write(text)
    doc = read(Path(f.name))
    Path(f.name).unlink()
    sections = _recorded_sections(recorded)
    report: list[str] = []
    answered: set[str] = set()
    for request, ex in pairs(doc):
        if "method" in ex.message:
            method = ex.message["method"]
            answered.add(method)
            bad = problems(ex.message.get("params"), method, "params")
            blocks = [ex.block]
        elif request is not None and "result" in ex.message:
            method = request.message["method"]
            answered.add(method)
            bad = problems(request.message.get("params", {}), method, "params") + problems(
                ex.message["result"], method, "result"
            )
            blocks = [request.block, ex.block]
        else:
            continue
        if not bad:
            continue
        title = ex.block.heading if ex.block.heading in sections else method
        fresh = [b for b in sections.get(title, []) if b.startswith(("```json", "```jsonc"))]
        if len(fresh) < len(blocks):
            report.append(f"{ex.block.where()}: {method} fails the schema and no recording of it was found: {bad[0]}")
            continue
        for old, new in zip(blocks, fresh):
            text = text.replace(_fenced(old), new, 1)
        report.append(f"{ex.block.where()}: {method} replaced by the recorded {title!r} ({bad[0]})")
    for method in methods:
        if method in answered:
            continue
        fresh = sections.get(method)
        heading = re.search(rf"^### [^\n]*{re.escape(method)}(?![A-Za-z])[^\n]*$", text, re.M)
        if not fresh or heading is None:
            report.append(f"{method}: no example, and {'no recording' if not fresh else 'no ### heading'} to add one from")
            continue
        following = re.search(r"^##", text[heading.end():], re.M)
        at = heading.end() + (following.start() if following else len(text) - heading.end())
        text = text[:at].rstrip("\n") + "\n\n" + "\n".join(fresh) + "\n" + text[at:]
        report.append(f"{method}: added the recorded exchange under {heading.group(0)!r}")
    return text, report
