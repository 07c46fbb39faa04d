"""The line as tree-sitter-bash parses it, and a word as bash reads it.

The reader never matches a command line with patterns: it parses it, then
asks of each word what text it stands for after quote removal (`literal`),
or that the text is known only when the line runs (`None`: a variable, a
substitution the reader cannot stand in for). Which node kinds hold
statements to walk and which hold nothing that runs are listed here, so a
node kind nobody listed is untrusted by the walker (`walk.py`). Two more
things bash makes of the text: the words a brace expansion generates
(`brace_words`: `src/{a,b}.py` is two file names, no more hidden than if
typed out — an earlier rule refused every brace, and held back `mkdir -p
x/{y,z}` as a stranger might have), and what a here-document feeds its
command (`heredoc_text`: quoted, as written; unquoted, expanded).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import tree_sitter
import tree_sitter_bash

_PARSER: tree_sitter.Parser | None = None


def parse(command: str) -> tree_sitter.Node:
    """The root of `command`'s syntax tree (the parser is built once)."""
    global _PARSER
    if _PARSER is None:
        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER.parse(command.encode("utf-8", "surrogatepass")).root_node


#: Nodes that hold statements or words and run nothing themselves: walked.
WALKED = frozenset(
    {
        "program", "list", "pipeline", "subshell", "compound_statement", "redirected_statement", "negated_command",
        "if_statement", "elif_clause", "else_clause", "while_statement", "for_statement", "c_style_for_statement",
        "do_group", "case_statement", "case_item", "test_command", "binary_expression", "unary_expression",
        "ternary_expression", "parenthesized_expression", "postfix_expression", "command_substitution",
        "process_substitution", "arithmetic_expansion", "expansion", "string", "concatenation", "array",
        "heredoc_redirect", "heredoc_body", "herestring_redirect", "subscript", "brace_expression",
    }
)
#: Nodes with nothing inside that could run.
INERT = frozenset(
    {
        "comment", "word", "raw_string", "ansi_c_string", "translated_string", "number", "string_content",
        "variable_name", "special_variable_name", "simple_expansion", "heredoc_start", "heredoc_end",
        "heredoc_content", "file_descriptor", "test_operator", "regex", "extglob_pattern",
    }
)


def text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _unescape_word(word: str) -> str:
    return re.sub(r"\\(.)", r"\1", word.replace("\\\n", ""), flags=re.DOTALL)


#: What the walker knows of an expansion inside a word (a substitution it
#: can stand in for, a variable the line set): its text, or `None`.
Known = Callable[[tree_sitter.Node], "str | None"]


def _unknown(node: tree_sitter.Node) -> str | None:
    return None


def literal(node: tree_sitter.Node, known: Known = _unknown) -> str | None:
    """The text a word node stands for after quote removal, or `None` when
    it holds an expansion whose value is not known from the line. `known`
    answers for the expansions the caller can stand in for."""
    kind = node.type
    word = text(node)
    if kind == "word":
        return _unescape_word(word)
    if kind == "number":
        return word
    if kind == "raw_string":
        return word[1:-1]
    if kind == "string":
        return _quoted(node, known)
    if kind == "concatenation":
        parts = [literal(child, known) for child in node.named_children]
        return None if any(p is None for p in parts) else "".join(p for p in parts if p is not None)
    return known(node)


def _unquote(raw: bytes) -> str:
    """Text inside double quotes: `\\$`, `` \\` ``, `\\"`, `\\\\` stand for the
    character; a backslash before a newline joins the lines."""
    return re.sub(r"\\([$`\"\\])", r"\1", raw.decode("utf-8", "replace").replace("\\\n", ""))


def _quoted(node: tree_sitter.Node, known: Known) -> str | None:
    """A double-quoted string's text, read from the source around its
    expansions (tree-sitter-bash leaves the newlines between lines out of
    its parts)."""
    raw = node.text or b""
    start, pos, out = node.start_byte, 1, []
    for child in node.named_children:
        if child.type == "string_content":
            continue
        part = known(child)
        if part is None:
            return None
        out += [_unquote(raw[pos : child.start_byte - start]), part]
        pos = child.end_byte - start
    out.append(_unquote(raw[pos : len(raw) - 1]))
    return "".join(out)


#: An unquoted `{a,b}` or `{1..3}`: bash makes several words of it.
_BRACES = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")


def brace_expands(node: tree_sitter.Node) -> bool:
    """Whether bash would brace-expand this word into words the line does
    not show (`{-exec,}` is `-exec` to `find`; `{-e,}` hides a sed script).
    Quoted and escaped braces do not expand; `{}` alone does not."""
    if node.type == "brace_expression":
        return True
    if node.type == "word":
        return _BRACES.search(re.sub(r"\\.", "_", text(node), flags=re.DOTALL)) is not None
    if node.type == "concatenation":
        if any(child.type == "brace_expression" for child in node.named_children):
            return True
        skeleton = "".join(re.sub(r"\\.", "_", text(c), flags=re.DOTALL) if c.type == "word" else "_" for c in node.named_children)
        return _BRACES.search(skeleton) is not None
    return False


#: How many words one brace expansion may make before the reader stops
#: making them (`brace_words`): more is not a file list a person typed.
MAX_BRACE_WORDS = 64
_SEQUENCE = re.compile(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?|([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?")


def brace_words(node: tree_sitter.Node) -> list[str] | None:
    """The words bash makes of an unquoted word with a brace expansion
    (`src/{a,b}.py` → `src/a.py src/b.py`, `{1..3}`), after quote removal,
    empty ones dropped as bash drops them; `None` when the word holds
    anything but plain text and braces (a quote, a variable, a substitution:
    their order against the braces is not followed) or makes more than
    `MAX_BRACE_WORDS` words."""
    parts = node.named_children if node.type == "concatenation" else [node]
    if not all(p.type in ("word", "brace_expression") for p in parts):
        return None
    # An escaped character never takes part: stand it aside, put it back after.
    escaped: list[str] = []

    def aside(match: re.Match[str]) -> str:
        escaped.append(match.group(0))
        return f"\x00{len(escaped) - 1}\x01"

    masked = re.sub(r"\\.", aside, "".join(text(p) for p in parts), flags=re.DOTALL)
    try:
        words = _expand(masked)
    except _TooMany:
        return None
    back = [re.sub(r"\x00(\d+)\x01", lambda m: escaped[int(m.group(1))], w) for w in words]
    return [_unescape_word(w) for w in back if w]


class _TooMany(Exception):
    """A brace expansion makes more than `MAX_BRACE_WORDS` words."""


def _expand(word: str) -> list[str]:
    """Bash's brace expansion of `word` (escapes already set aside), left
    to right; `_TooMany` past `MAX_BRACE_WORDS`."""
    start = 0
    while True:
        opening = word.find("{", start)
        if opening < 0:
            return [word]
        closing, alternatives = _group(word, opening)
        if closing is None or alternatives is None:
            start = opening + 1
            continue
        head, tail = word[:opening], _expand(word[closing + 1 :])
        out: list[str] = []
        for alternative in alternatives:
            out += [head + i + t for i in _expand(alternative) for t in tail]
            if len(out) > MAX_BRACE_WORDS:
                raise _TooMany
        return out


def _group(word: str, opening: int) -> tuple[int | None, list[str] | None]:
    """The `}` closing the `{` at `opening` and what it stands for: the
    comma-separated alternatives at its own depth, or a sequence's values;
    `None` alternatives when it is neither (`{x}` stays as written)."""
    depth, commas = 0, list[int]()
    for i in range(opening, len(word)):
        if word[i] == "{":
            depth += 1
        elif word[i] == "}":
            depth -= 1
            if depth == 0:
                inner = word[opening + 1 : i]
                if commas:
                    cuts = [opening, *commas, i]
                    return i, [word[a + 1 : b] for a, b in zip(cuts, cuts[1:], strict=False)]
                return i, _sequence(inner)
        elif word[i] == "," and depth == 1:
            commas.append(i)
    return None, None


def _sequence(inner: str) -> list[str] | None:
    """`1..3`, `a..e`, `10..0..2`: the values, when few enough."""
    match = _SEQUENCE.fullmatch(inner)
    if match is None:
        return None
    numeric = match.group(1) is not None
    first, last = (int(match.group(1)), int(match.group(2))) if numeric else (ord(match.group(4)), ord(match.group(5)))
    step = abs(int(match.group(3) or match.group(6) or 1)) or 1
    if abs(last - first) // step + 1 > MAX_BRACE_WORDS:
        raise _TooMany
    values = range(first, last + (1 if last >= first else -1), step if last >= first else -step)
    return [str(v) if numeric else chr(v) for v in values]


def heredoc_text(redirect: tree_sitter.Node, known: Known = _unknown) -> str | None:
    """What a here-document (`<<EOF … EOF`) feeds its command: the body as
    written when its delimiter is quoted (`<<'EOF'`: nothing in it
    expands); else with its expansions' values — `None` when one is not
    known from the line — and `\\$`, `` \\` ``, `\\\\` and a backslash-newline
    unescaped. `<<-` strips the tabs that open each line."""
    start = next((c for c in redirect.named_children if c.type == "heredoc_start"), None)
    body = next((c for c in redirect.named_children if c.type == "heredoc_body"), None)
    if start is None:
        return None
    if body is None:
        return ""
    quoted = any(q in text(start) for q in "'\"\\")
    raw = body.text or b""
    if quoted:
        out = raw.decode("utf-8", "replace")
    else:
        base, pos, pieces = body.start_byte, 0, []
        for child in body.named_children:
            if child.type == "heredoc_content":
                continue
            part = known(child)
            if part is None:
                return None
            pieces += [_heredoc_unescape(raw[pos : child.start_byte - base]), part]
            pos = child.end_byte - base
        pieces.append(_heredoc_unescape(raw[pos:]))
        out = "".join(pieces)
    if any(c.type == "<<-" for c in redirect.children):
        out = re.sub(r"(?m)^\t+", "", out)
    return out


def _heredoc_unescape(raw: bytes) -> str:
    return re.sub(r"\\([$`\\])", r"\1", raw.decode("utf-8", "replace").replace("\\\n", ""))
