"""Text that can hide from a person, found and shown.

A rule, a trust entry or a program name reaches a person through a
terminal, an editor or a Markdown viewer — and some characters change what
they see without being seen themselves: the bidirectional controls
(U+202A–U+202E, U+2066–U+2069, U+200E/U+200F, U+061C) reorder the text
around them, so `rm -rf /‮ txt.` reads as something else; the zero-width
characters (U+200B–U+200D, U+2060, U+FEFF, U+180E, U+00AD) split or join
words invisibly; the C0/C1 controls (an escape sequence above all) are
read by the terminal as commands. A reviewed rule holding them once showed
the person one instruction and gave the agent another.

One table here says which code points those are (`hidden_characters`), and
two things are done with it:

- `shown` spells each of them as a visible escape (`\\u202e`), for every
  place a person reviews text (`proposals show`, a rule's `why`, the
  exported rules section, the editor's hover) — the text keeps its meaning
  for the agent, and the person sees that something is there;
- `hidden_problem` names the first one, for a caller that refuses rather
  than shows (a command to paste, `shellwords`).

Tab and newline are ordinary layout, and left alone by `shown` when
`keep_layout` is asked for (a multi-line rule's review). Everything else
printable, accents and scripts of every language included, is left as it
is: the table is of what hides, not of what is unusual.
"""

from __future__ import annotations

import unicodedata

#: Bidirectional formatting characters: each reorders what follows it.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: Characters that take no room: they join or split words unseen.
ZERO_WIDTH = frozenset("\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff")


def is_hidden(ch: str, *, keep_layout: bool = False) -> bool:
    """Whether the one character `ch` can change what a person sees without
    being seen: a bidi control, a zero-width character, or a control
    character (C0, DEL, C1; with `keep_layout`, tab and newline are not)."""
    if ch in BIDI_CONTROLS or ch in ZERO_WIDTH:
        return True
    if keep_layout and ch in "\t\n":
        return False
    return unicodedata.category(ch) == "Cc"


def hidden_characters(text: str, *, keep_layout: bool = False) -> list[str]:
    """The distinct hidden characters in `text`, in order of first use."""
    seen: list[str] = []
    for ch in text:
        if ch not in seen and is_hidden(ch, keep_layout=keep_layout):
            seen.append(ch)
    return seen


def escape(ch: str) -> str:
    """How one hidden character is spelled for a person: `\\u202e`, `\\x1b`."""
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str, *, keep_layout: bool = False) -> str:
    """`text` with every hidden character spelled as its escape (`escape`),
    and a backslash before a literal escape-looking backslash left as it
    is: the review shows what is there, not a decoding of it."""
    if not any(is_hidden(ch, keep_layout=keep_layout) for ch in text):
        return text
    return "".join(escape(ch) if is_hidden(ch, keep_layout=keep_layout) else ch for ch in text)


def hidden_problem(text: str, *, keep_layout: bool = False) -> str | None:
    """What in `text` would hide from a person, named (`None`: nothing)."""
    found = hidden_characters(text, keep_layout=keep_layout)
    if not found:
        return None
    names = ", ".join(f"{escape(ch)} ({unicodedata.name(ch, 'a control character').lower()})" for ch in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return f"it holds characters a person cannot see: {names}{more}"
