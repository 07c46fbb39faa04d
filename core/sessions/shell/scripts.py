"""Code on the line that a text tool runs: a sed script, an awk program.

sed and awk are the person's text tools, and their scripts are on the line
for the reader to see; but sed's `e` command (and `s///e`) runs a shell
command, `w`/`r` read and write files the line does not name, and awk's
`system`, `getline` and pipes run programs. A script is local only when it
is made of the commands known to do none of that.
"""

from __future__ import annotations

import re

# sed: a script made only of addresses and the commands that print, delete,
# substitute, transliterate or add text (no `e`, `w`, `r`, `W`, `R`, `F`,
# and no `s///e` or `s///w`).
_SED_ADDR = r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/I?)"
_SED_DELIMITED = r"(?P<{0}>[^\\\n\w\s;{{}}])(?:(?!(?P={0}))[^\\\n]|\\.)*(?P={0})(?:(?!(?P={0}))[^\\\n]|\\.)*(?P={0})"
_SED_STEP = re.compile(
    r"\s*(?:[;\n}]"
    rf"|(?:{_SED_ADDR}(?:\s*,\s*(?:{_SED_ADDR}|[+~]\d+))?)?\s*!?\s*"
    r"(?:\{"
    r"|(?:[pPdDqQ=nNgGhHxlz](?:[ \t]*\d+)?"
    rf"|s{_SED_DELIMITED.format('s')}[gpiImM0-9]*"
    rf"|y{_SED_DELIMITED.format('y')}"
    r"|[aic]\\?[^\n]*)(?=\s*(?:[;\n}]|$))))",
)


def sed_script_ok(script: str) -> bool:
    """Whether a sed script is made only of the commands that print, delete,
    substitute, transliterate or add text."""
    pos = 0
    while script[pos:].strip():
        match = _SED_STEP.match(script, pos)
        if match is None or match.end() == pos:
            return False
        pos = match.end()
    return True


#: awk programs that can run a command, read one's output or open a socket.
_AWK_RUNS = re.compile(r"system|getline|\||/inet|@|ENVIRON\s*\[")


def awk_program_ok(program: str) -> bool:
    """Whether an awk program runs nothing and reads nothing but its input."""
    return _AWK_RUNS.search(program) is None
