"""What the editor's features answer, without LSP types: the diagnostic
codes and their severities (the contract in editors/README.md), the
intentions a lens or an action asks for (`Act`), and the result shapes —
`Finding`, `TextEdit`, `RuleSpan`, `Lens`, `CodeAction` — every feature
module returns and the server converts at the edge.

Positions are 0-based lines and 0-based *character* columns (Python `str`
indices); the server converts columns to UTF-16 (see `document`).
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec

from mecha.core.domain.rules import Rule
from mecha.core.store.layout import GLOBAL_SCOPE

# ─── Codes and severities (the contract in editors/README.md) ───────────────

ERROR = "error"
WARNING = "warning"
INFORMATION = "information"
HINT = "hint"

TOML_SYNTAX = "toml-syntax"
INVALID_VALUE = "invalid-value"
UNKNOWN_KEY = "unknown-key"
MISSING_TEXT = "missing-text"
DUPLICATE_RULE = "duplicate-rule"
RESTATES_USER_RULE = "restates-user-rule"
OVER_CAP = "over-cap"
OVER_CHAR_BUDGET = "over-char-budget"
RETIRED_ENABLED = "retired-enabled"
ATTRIBUTED_REGRESSIONS = "attributed-regressions"
UNROUTED_DOMAIN = "unrouted-domain"
PENDING_PROPOSAL = "pending-proposal"

#: Each code's severity, spelled once. The editors' README is the contract;
#: a finding takes its severity from here and nowhere else.
SEVERITIES: dict[str, str] = {
    TOML_SYNTAX: ERROR,
    INVALID_VALUE: ERROR,
    UNKNOWN_KEY: WARNING,
    MISSING_TEXT: ERROR,
    DUPLICATE_RULE: WARNING,
    RESTATES_USER_RULE: WARNING,
    OVER_CAP: WARNING,
    OVER_CHAR_BUDGET: WARNING,
    RETIRED_ENABLED: INFORMATION,
    ATTRIBUTED_REGRESSIONS: WARNING,
    UNROUTED_DOMAIN: WARNING,
    PENDING_PROPOSAL: INFORMATION,
}


class Act(enum.Enum):
    """What a lens or a code action asks the server to do when chosen.

    Core decides which intention fixes which finding; the command id an
    editor runs it by is wire, spelled in `mecha.protocol.commands` (which
    maps every member to one id), so no wire string lives here."""

    #: Lenses: show the rules block a run would get; list the proposals.
    SHOW_RULES_BLOCK = enum.auto()
    LIST_PROPOSALS = enum.auto()
    #: Code actions: review a pending proposal, or ask for a new one.
    ACCEPT_PROPOSAL = enum.auto()
    REJECT_PROPOSAL = enum.auto()
    SHOW_PROPOSAL_DIFF = enum.auto()
    PROPOSE_RETIREMENT = enum.auto()
    LEARN_NOW = enum.auto()


#: Code action kinds (LSP's spelling). A `quickfix` is what Ctrl+. and the
#: lightbulb list; a `source` action only the Source Action menu does.
QUICKFIX = "quickfix"
SOURCE = "source"

# ─── Results ────────────────────────────────────────────────────────────────


class Range(msgspec.Struct, frozen=True):
    """A span of text: 0-based lines, 0-based character columns, end
    exclusive."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int


class Finding(msgspec.Struct):
    """One diagnostic, without LSP types. `data` carries what the code
    action needs: always `domain`; `rule_index` (and `rule_id` when the rule
    has one) when the finding is about a rule."""

    code: str
    severity: str
    message: str
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    data: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def range(self) -> Range:
        return Range(self.start_line, self.start_col, self.end_line, self.end_col)


class TextEdit(msgspec.Struct, frozen=True):
    """Replace `[start, end)` with `new_text` (an insertion when start ==
    end)."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int
    new_text: str


class RuleSpan(msgspec.Struct):
    """Where one `[[rules]]` table sits in a document, and what it decodes to.

    `start_line` is the first line of the comment block directly above the
    header (the header itself when there is none); `end_line` (inclusive) is
    the last line of the table's last value. `key_lines` gives the line of
    each key the table sets (a dotted `a.b = …` or a `[rules.a]` sub-table
    counts as `a`); `key_ranges` runs from a key to the end of its value,
    `value_ranges` covers just the value, quotes included (plain keys only).
    `rule` is the table decoded as a run decodes it, or `None` when it cannot
    be (a wrong-typed value, no `text`, a syntax error inside it).
    """

    index: int
    start_line: int
    end_line: int
    header_line: int
    key_lines: dict[str, int] = msgspec.field(default_factory=dict)
    key_ranges: dict[str, Range] = msgspec.field(default_factory=dict)
    value_ranges: dict[str, Range] = msgspec.field(default_factory=dict)
    rule: Rule | None = None

    @property
    def text_range(self) -> Range | None:
        """The `text` value's range, quotes included; several lines for a
        multi-line string."""
        return self.value_ranges.get("text")


class Scope(msgspec.Struct, frozen=True):
    """Where a document's rules apply, as the editor shows it. `label` names
    it to a person (`global`, or `project <root>`); `project` is the
    project's root when the document is a project's and its files name it;
    `in_project` whether it is a project's at all."""

    label: str = GLOBAL_SCOPE
    project: str | None = None
    in_project: bool = False


#: The global scope, as a document of `rules/<domain>.<kind>.toml` has it.
GLOBAL = Scope()


class Lens(msgspec.Struct, frozen=True):
    """One code lens at the top of a rules file: its title and what
    clicking it does (`act`, with `arguments`)."""

    title: str
    act: Act
    arguments: list[Any] = msgspec.field(default_factory=list)


class PendingProposal(msgspec.Struct, frozen=True):
    """What the editor needs to know of one pending proposal for the
    document's domain: its id and how many active rules it takes the
    domain from and to (the accept action's title says so)."""

    id: str
    active_before: int
    active_after: int
    #: Each change it makes, `(number, change, text)`, numbered as
    #: `proposals show` lists them: one "accept without it" action each.
    changes: tuple[tuple[int, str, str], ...] = ()


class CodeAction(msgspec.Struct, frozen=True):
    """One code action, without LSP types: a title, a kind (`QUICKFIX` or
    `SOURCE`), and what choosing it does — `edits` on this document, an
    `act` with `arguments`, or both (edits first). `fixes` is the
    finding it resolves, when it resolves one: the editor lists the action
    under that diagnostic's lightbulb. `preferred` marks the fix a person
    most likely wants (VS Code's "auto fix" applies it)."""

    title: str
    kind: str
    edits: list[TextEdit] = msgspec.field(default_factory=list)
    act: Act | None = None
    arguments: list[Any] = msgspec.field(default_factory=list)
    fixes: Finding | None = None
    preferred: bool = False

