"""The editor's findings and actions (`core.editor`) as LSP's types: each
`Finding` a `Diagnostic`, each `CodeAction` LSP's, with positions in the
UTF-16 code units LSP counts (a column of the domain is a character).

Apart from the server (`lsp`) so that it reads as what it serves, and these
conversions — the one place a domain shape meets an LSP one — as a table.

Every text a person reads here — a diagnostic's message, a lens's or an
action's title — is `visible.shown`: a bidi control, a zero-width or a
control character in a rule, a key or a project's folder name is spelled
as its escape, as `proposals show` and the hover spell it, so the rule a
person reviews in the editor reads as what the agent is told.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp

from mecha.core.editor.results import Act, CodeAction, Finding
from mecha.core.visible import shown
from mecha.protocol import commands as wire_commands

#: The `source` every diagnostic carries.
SOURCE = "mecha"

_SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "information": lsp.DiagnosticSeverity.Information,
    "hint": lsp.DiagnosticSeverity.Hint,
}


def utf16(line_text: str, col: int) -> int:
    return len(line_text[:col].encode("utf-16-le")) // 2


def from_utf16(line_text: str, units: int) -> int:
    count = 0
    for i, ch in enumerate(line_text):
        if count >= units:
            return i
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(line_text)


def lsp_range(lines: list[str], sl: int, sc: int, el: int, ec: int) -> lsp.Range:
    def pos(line: int, col: int) -> lsp.Position:
        text = lines[line] if 0 <= line < len(lines) else ""
        return lsp.Position(line=max(line, 0), character=utf16(text, min(col, len(text))))

    return lsp.Range(start=pos(sl, sc), end=pos(el, ec))


def to_diagnostic(f: Finding, lines: list[str]) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=lsp_range(lines, f.start_line, f.start_col, f.end_line, f.end_col),
        message=shown(f.message, keep_layout=True),
        severity=_SEVERITY.get(f.severity, lsp.DiagnosticSeverity.Warning),
        code=f.code,
        source=SOURCE,
        data=dict(f.data),
    )


def to_command(title: str, act: Act, arguments: list[Any]) -> lsp.Command:
    return lsp.Command(title=shown(title), command=wire_commands.COMMAND_IDS[act], arguments=list(arguments))


def to_code_action(a: CodeAction, uri: str, lines: list[str]) -> lsp.CodeAction:
    edit = None
    if a.edits:
        edits = [
            lsp.TextEdit(range=lsp_range(lines, e.start_line, e.start_col, e.end_line, e.end_col), new_text=e.new_text)
            for e in a.edits
        ]
        edit = lsp.WorkspaceEdit(changes={uri: edits})
    command = to_command(a.title, a.act, a.arguments) if a.act is not None else None
    return lsp.CodeAction(
        title=shown(a.title),
        kind=lsp.CodeActionKind(a.kind),
        edit=edit,
        command=command,
        diagnostics=[to_diagnostic(a.fixes, lines)] if a.fixes is not None else None,
        is_preferred=a.preferred or None,
    )
