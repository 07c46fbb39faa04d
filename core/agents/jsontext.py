"""A JSON file changed as text: the bytes around a change stay the bytes
they were.

`hooks install|uninstall` change a few entries of a person's settings file
(Claude Code's `settings.json`, Codex's `hooks.json`). Parsed and written
back whole, the rest of the file came back re-spelled: `1e3` as `1000.0`,
an inline array spread over lines, `\\u00e9` as `é`, a duplicate key
collapsed into one. So the change is worked out on the parsed values —
`hooks.with_ours` / `hooks.without_ours`, which stay pure and simple — and
made on the text (`patch`): the two values are walked side by side over the
spans of the original text (`scan`), and only what differs is rewritten:

- a value equal to what it was keeps its text, byte for byte;
- an object keeps its members' text in place; a member that went is cut
  out with the comma and the space that joined it; a changed one is
  patched where it stands; a new one goes at the end;
- an array's elements are matched up (`difflib`, on their values): the
  same ones keep their text, a changed one is patched, the ones that went
  are cut out, new ones are put where they belong;
- anything else new is written as JSON in the file's own indentation
  (`render_value`), non-ASCII as it is.

Removing what an install added therefore gives back the bytes the file had
(for an empty object `{}`, up to the space inside it). Duplicate keys are
kept as written; a change to one touches the last (the one a JSON reader
uses).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Node:
    """A value's span in the text: `start`/`end` offsets (end exclusive),
    its kind (`object`, `array`, `scalar`), and for a container its
    children: (key or `None`, the key's start or the element's start, the
    child node)."""

    kind: str
    start: int
    end: int
    children: list[tuple[str | None, int, Node]] = field(default_factory=list)


_WS = " \t\r\n"


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        self.pos = pos

    def value(self) -> Node:
        self.ws()
        start = self.pos
        ch = self.text[start]
        if ch == "{":
            return self.container(start, "}", "object")
        if ch == "[":
            return self.container(start, "]", "array")
        if ch == '"':
            self.string()
        else:
            pos = start
            while pos < len(self.text) and self.text[pos] not in _WS + ",]}":
                pos += 1
            self.pos = pos
        return Node("scalar", start, self.pos)

    def string(self) -> str:
        start = self.pos
        pos = start + 1
        text = self.text
        while text[pos] != '"':
            pos += 2 if text[pos] == "\\" else 1
        self.pos = pos + 1
        value: str = json.loads(text[start : self.pos])
        return value

    def container(self, start: int, close: str, kind: str) -> Node:
        node = Node(kind, start, start)
        self.pos = start + 1
        self.ws()
        if self.text[self.pos] == close:
            self.pos += 1
            node.end = self.pos
            return node
        while True:
            self.ws()
            at = self.pos
            key = None
            if kind == "object":
                key = self.string()
                self.ws()
                self.pos += 1  # the colon
            child = self.value()
            node.children.append((key, at, child))
            self.ws()
            if self.text[self.pos] == ",":
                self.pos += 1
                continue
            self.pos += 1  # the closing bracket
            node.end = self.pos
            return node


def scan(text: str) -> Node:
    """The spans of the one JSON value `text` holds (valid JSON: the caller
    has parsed it already)."""
    scanner = _Scanner(text)
    return scanner.value()


# ─── writing new values ─────────────────────────────────────────────────────


def _line_indent(text: str, pos: int) -> str:
    """The whitespace a line starts with, for the line holding `pos`."""
    line_start = text.rfind("\n", 0, pos) + 1
    end = line_start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[line_start:end]


def render_value(value: Any, unit: str | int, indent: str, multiline: bool) -> str:
    """`value` as JSON: over lines, each under `indent` (the line it starts
    on), in steps of `unit`; or on one line when its container is."""
    if not multiline:
        return json.dumps(value, ensure_ascii=False)
    out = json.dumps(value, indent=unit, ensure_ascii=False)
    return out.replace("\n", "\n" + indent)


class _Patcher:
    def __init__(self, text: str, unit: str | int) -> None:
        self.text = text
        self.unit = unit if isinstance(unit, str) else " " * unit
        self.edits: list[tuple[int, int, str]] = []

    def replace(self, start: int, end: int, new: str) -> None:
        self.edits.append((start, end, new))

    def result(self) -> str:
        out = self.text
        for start, end, new in sorted(self.edits, key=lambda e: (e[0], e[1]), reverse=True):
            out = out[:start] + new + out[end:]
        return out

    # ── values ──

    def value(self, node: Node, old: Any, new: Any) -> None:
        if type(old) is type(new) and old == new:
            return
        if isinstance(old, dict) and isinstance(new, dict) and node.kind == "object":
            self.obj(node, old, new)
        elif isinstance(old, list) and isinstance(new, list) and node.kind == "array":
            self.arr(node, old, new)
        else:
            indent = _line_indent(self.text, node.start)
            self.replace(node.start, node.end, render_value(new, self.unit, indent, self._file_multiline(node)))

    def _child_indent(self, node: Node) -> str:
        if node.children and "\n" in self.text[node.start : node.children[0][1]]:
            return _line_indent(self.text, node.children[0][1])
        return _line_indent(self.text, node.start) + self.unit

    def _file_multiline(self, node: Node) -> bool:
        """Whether new text in or for `node` goes over lines: as its own
        text does, or, for an empty container or a scalar, as the file's
        top value does."""
        if node.children:
            return "\n" in self.text[node.start : node.end]
        return "\n" in self.text.strip()

    def obj(self, node: Node, old: dict[str, Any], new: dict[str, Any]) -> None:
        last_of: dict[str, int] = {}
        for i, (key, _, _) in enumerate(node.children):
            assert key is not None
            last_of[key] = i
        gone = [i for i, (key, _, _) in enumerate(node.children) if key not in new]
        for i, (key, _, child) in enumerate(node.children):
            assert key is not None
            if key in new and last_of[key] == i:
                self.value(child, old[key], new[key])
        added = [(k, v) for k, v in new.items() if k not in old]
        self._splice(node, gone, [(len(node.children), f"{json.dumps(k, ensure_ascii=False)}: ", v) for k, v in added])

    def arr(self, node: Node, old: list[Any], new: list[Any]) -> None:
        keys_old = [json.dumps(v, sort_keys=True) for v in old]
        keys_new = [json.dumps(v, sort_keys=True) for v in new]
        gone: list[int] = []
        put: list[tuple[int, str, Any]] = []
        matcher = difflib.SequenceMatcher(a=keys_old, b=keys_new, autojunk=False)
        for op, a0, a1, b0, b1 in matcher.get_opcodes():
            if op == "equal":
                continue
            pairs = min(a1 - a0, b1 - b0) if op == "replace" else 0
            for k in range(pairs):
                self.value(node.children[a0 + k][2], old[a0 + k], new[b0 + k])
            gone += range(a0 + pairs, a1)
            put += [(a1, "", v) for v in new[b0 + pairs : b1]]
        self._splice(node, gone, put)

    def _splice(self, node: Node, gone: list[int], put: list[tuple[int, str, Any]]) -> None:
        """Cut the children at `gone` out of `node` and put each new
        `(before child index, key text, value)` in, keeping the separators
        the container has."""
        children = node.children
        dropped = set(gone)
        kept = [i for i in range(len(children)) if i not in dropped]
        multiline = self._file_multiline(node)
        indent = self._child_indent(node)
        sep = ",\n" + indent if multiline else ", "
        rendered = [(at, key + render_value(v, self.unit, indent, multiline)) for at, key, v in put]
        if not kept:
            if not children and not rendered:
                return
            # Nothing of it stays: what is inside is all new (or nothing).
            body = sep.join(text for _, text in rendered)
            if body and multiline:
                body = "\n" + indent + body + "\n" + _line_indent(self.text, node.start)
            self.replace(node.start + 1, node.end - 1, body)
            return
        # A child with a kept one after it goes with its comma and the space
        # up to the next; one after the last kept goes with the comma and the
        # space before it.
        for i in gone:
            if any(k > i for k in kept):
                self.replace(children[i][1], self._start_of_next(i, children), "")
            else:
                self.replace(children[i - 1][2].end, children[i][2].end, "")
        for at, text in rendered:
            later = [k for k in kept if k >= at]
            if later:
                pos = children[later[0]][1]
                self.replace(pos, pos, text + sep)
            else:
                pos = children[kept[-1]][2].end
                self.replace(pos, pos, sep + text)

    def _start_of_next(self, i: int, children: list[tuple[str | None, int, Node]]) -> int:
        """Where the text after child `i` (its comma, the space after) ends:
        the next child's start."""
        return children[i + 1][1]


def patch(text: str, old: Any, new: Any, unit: str | int = 2) -> str:
    """`text` (JSON whose value is `old`) changed to hold `new`, every byte
    outside what changed kept (see the module docstring). `unit` is the
    file's indentation step, for what is written new."""
    root = scan(text)
    patcher = _Patcher(text, unit)
    patcher.value(root, old, new)
    return patcher.result()
