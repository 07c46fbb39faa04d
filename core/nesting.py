"""How deep a piece of JSON nests, found before any decoder recurses into it.

A decoder walks nested arrays and objects by recursion, so JSON nested past
the interpreter's recursion limit (about 1000 levels) makes msgspec and the
standard library raise `RecursionError` — not the decode error a caller
handles — and where the limit falls depends on how deep the caller's own
stack already is. Text a stranger controls (a model's reply, a server's
body) is measured here first, in one pass without recursion, and refused by
name past a fixed depth that no answer this project asks for comes near.

The measure counts `[` and `{` outside string literals (escapes honoured);
it does not check that the text is JSON at all — the decoder does that
afterwards, on text now known to be shallow enough to decode safely.
"""

from __future__ import annotations

import re
from typing import Any

#: How deep a model's reply may nest, its API envelope included. The deepest
#: answer any pass asks for is three levels (the learner's `{"rules": [{…}]}`)
#: and the deepest envelope adds three more (an Anthropic forced tool call:
#: `{"content": [{"input": …}]}`); a reply nested a thousand deep is no
#: answer, and decoding one raised `RecursionError`, which failed every pass
#: over the inbox that held it. Read by the providers (the body) and by
#: `learning.replies` (the JSON found in a reply's text).
MAX_REPLY_DEPTH = 32

# A string literal — closed, or running to the end of the text, so an
# unclosed quote is consumed once rather than retried from every quote after
# it — or one bracket. Everything else is skipped by the regex engine.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)|[\[\]{}]', re.S)


def json_nesting(data: str | bytes, limit: int) -> int:
    """The deepest nesting of arrays and objects in `data`, counting only
    brackets outside string literals; as soon as it passes `limit`, `limit + 1`
    (the rest is not read). Linear in the length of `data`."""
    # Latin-1 maps each byte to one character: the structure, all ASCII, is
    # where it was, and no byte sequence fails to decode.
    text = data.decode("latin-1") if isinstance(data, bytes) else data
    return _deepest(_TOKENS, text, limit)


def _deepest(tokens: re.Pattern[str], text: str, limit: int) -> int:
    """The deepest bracket nesting among the `tokens` of `text` (strings
    and comments match as tokens of their own, so their brackets never
    count); `limit + 1` as soon as it passes `limit`."""
    depth = deepest = 0
    for m in tokens.finditer(text):
        token = m.group()
        if token in ("[", "{"):
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return limit + 1
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)
    return deepest


#: How deep an agent's settings file (`.claude/settings.json`, Codex's
#: `hooks.json`) may nest: the hooks in it are five levels down, and a file
#: nested a hundred thousand deep ended `hooks status`, `install` and
#: `uninstall` in a `RecursionError` that named no file.
MAX_SETTINGS_DEPTH = 64

#: How deep a hand-edited TOML file may nest its arrays and inline tables:
#: a rules file is two levels (`[[rules]]` holding a `cites = [...]`) and
#: the config file three; a file nested a hundred thousand deep is no one's
#: settings, and parsing one raised `RecursionError` in `block`, `doctor`
#: and every run's `rulesPromptBlock`, none of which named the file. Read
#: by the rules files, the config file and the editor's view of both.
MAX_TOML_DEPTH = 32
#: How large a hand-edited TOML file (a rules file, the config file) may be.
#: A domain's whole rules block is held to `RULES_CHAR_BUDGET` (1600
#: characters), and a store's largest real rules file is a few KiB; one
#: 64 MiB rule made every run's first `rulesPromptBlock` take ~23 s.
MAX_TOML_BYTES = 1024 * 1024

# TOML's string literals (multi-line first, each closed or running to the
# end), a comment to its line's end, or one bracket.
_TOML_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?(?:"""|\Z)|\'\'\'.*?(?:\'\'\'|\Z)|"[^"\\\n]*(?:\\.[^"\\\n]*)*(?:"|$)|\'[^\'\n]*(?:\'|$)|#[^\n]*|[\[\]{}]',
    re.S | re.M,
)


def toml_nesting(text: str, limit: int) -> int:
    """The deepest nesting of brackets (`[`, `{`; table headers included) in
    the TOML `text`, outside strings and comments; `limit + 1` as soon as it
    passes `limit`. Linear, without recursion."""
    return _deepest(_TOML_TOKENS, text, limit)


def toml_problem(size: int, text: str | None = None) -> str | None:
    """Why a hand-edited TOML file of `size` bytes (and, when given, text
    `text`) is refused before a parser sees it, or `None`: larger than
    `MAX_TOML_BYTES`, or nested deeper than `MAX_TOML_DEPTH`."""
    if size > MAX_TOML_BYTES:
        return f"it is {size / 1024 / 1024:.1f} MiB, more than the {MAX_TOML_BYTES // 1024 // 1024} MiB a hand-edited file may be; nothing in it was read"
    if text is not None and toml_nesting(text, MAX_TOML_DEPTH) > MAX_TOML_DEPTH:
        return f"its arrays or inline tables nest more than {MAX_TOML_DEPTH} deep; nothing in it was read"
    return None


def toml_loads(text: str) -> dict[str, Any]:
    """`tomllib.loads`, refusing first what `toml_problem` refuses — as a
    `tomllib.TOMLDecodeError`, so every reader names the file the way it
    names any other broken TOML. Measured in characters here (a character
    is at least a byte); `toml_problem` on the file's size refuses a huge
    file before it is read at all."""
    import tomllib

    problem = toml_problem(len(text), text)
    if problem is not None:
        raise tomllib.TOMLDecodeError(problem)
    return tomllib.loads(text)
