"""The line as tree-sitter-bash parses it, and a word as bash reads it.

The reader never matches a command line with patterns: it parses it, then
asks of each word what text it stands for after quote removal (`literal`),
or that the text is known only when the line runs (`None`: a variable, a
substitution the reader cannot stand in for). Which node kinds hold
statements to walk and which hold nothing that runs are listed here, so a
node kind nobody listed is untrusted by the walker (`walk.py`).
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
