"""Text that can hide from a person (bidi controls, zero-width and control
characters) reaches the editor spelled as escapes (`core.visible.shown`),
as it reaches `proposals show`: in a diagnostic's message, a hover and a
code lens's title — wherever a person reviews what a rule file holds."""

from __future__ import annotations

from lsprotocol import types as lsp

from mecha.core.visible import is_hidden
from tests.builders import rule

from .conftest import MechaClient, Store

#: A right-to-left override, a zero-width space, an escape (a terminal's
#: command), each in a different place a person reads.
RLO, ZWSP, ESC = "\u202e", "\u200b", "\x1b"


def _unhidden(text: str, where: str) -> None:
    assert not any(is_hidden(ch, keep_layout=True) for ch in text), f"{where} shows a hidden character: {text!r}"


async def test_hidden_characters_reach_diagnostics_hovers_and_lenses_escaped(client: MechaClient, store: Store) -> None:
    # Pins: the editor's diagnostics and lenses showing a bidi override, a
    # zero-width space or an escape as they are — the rule a person
    # reviews in the editor reading as something other than what the agent
    # is told, while `proposals show` spelled them out.
    app = store.root.parent / f"app{ZWSP}{RLO}txt.exe"
    (app / ".git").mkdir(parents=True)
    path = store.learned("behavior", [rule(f"Never run rm -rf /{RLO} txt.", "r-1")], str(app))
    text = path.read_text(encoding="utf-8")
    key = f"note{ESC}[2J{ZWSP}"
    text = text.replace('id = "r-1"', f'id = "r-1"\n"{key.replace(ESC, chr(92) + "u001b")}" = 1', 1)
    path.write_text(text, encoding="utf-8")

    uri, diags = await client.open(path)
    unknown = [d for d in diags if d.code == "unknown-key"]
    assert unknown, [(d.code, d.message) for d in diags]
    for d in diags:
        _unhidden(d.message, f"the {d.code} diagnostic")
    assert "\\x1b" in unknown[0].message and "\\u200b" in unknown[0].message, unknown[0].message

    line = text.splitlines().index("[[rules]]") + 1
    hover = await client.hover(uri, line)
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    _unhidden(hover.contents.value, "the hover")
    assert "\\u202e" in hover.contents.value, hover.contents.value

    lenses = await client.lenses(uri)
    shown = [lens.command.title for lens in lenses if lens.command is not None]
    for title in shown:
        _unhidden(title, "a lens")
    assert any("\\u200b\\u202e" in title for title in shown), shown
    # What the lens does still names the project as it is.
    assert all(list(lens.command.arguments or [])[-1] == str(app) for lens in lenses if lens.command is not None)
