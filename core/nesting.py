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
    depth = deepest = 0
    for m in _TOKENS.finditer(text):
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
