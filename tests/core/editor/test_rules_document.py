"""What the editor shows about a rules document: findings at exact
positions, the disable/enable edit, the hover and the lenses.

Each test pins one way a person could be told the wrong thing about their
rules — a diagnostic on the wrong line, a quick fix that disturbs a comment or
another rule, a hover that shows ids instead of lessons.
"""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mecha.core.domain.reflexion import Reflexion
from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, RULES_CHAR_BUDGET, Rule, RulesFile, rule_key
from mecha.core.editor.diagnostics import check_document
from mecha.core.editor.document import apply_edit, rule_spans, span_at
from mecha.core.editor.edits import toggle_edit
from mecha.core.editor.hover import hover_for
from mecha.core.editor.lenses import lens_for
from mecha.core.editor.results import (
    ATTRIBUTED_REGRESSIONS,
    DUPLICATE_RULE,
    INVALID_VALUE,
    MISSING_TEXT,
    OVER_CAP,
    OVER_CHAR_BUDGET,
    RESTATES_USER_RULE,
    RETIRED_ENABLED,
    SEVERITIES,
    TOML_SYNTAX,
    UNKNOWN_KEY,
    UNROUTED_DOMAIN,
    Act,
    Finding,
    Range,
    Scope,
    TextEdit,
)
from mecha.core.editor.store_view import RulesDocument, rules_document_of
from mecha.core.errors import InvalidStore
from mecha.core.store.layout import project_id, rules_file_name
from mecha.core.store.learning_store import parse_rules_file
from mecha.core.store.ledger import RuleTally
from tests import builders

# ─── helpers ────────────────────────────────────────────────────────────────


def doc(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def check(
    text: str,
    *,
    domain: str = "behavior",
    kind: str = "learned",
    other: list[Rule] | None = None,
    tallies: dict[str, RuleTally] | None = None,
    in_project: bool = False,
) -> list[Finding]:
    return check_document(domain, kind, text, other_rules=other or [], tallies=tallies or {}, in_project=in_project)


def of(findings: list[Finding], code: str) -> list[Finding]:
    return [f for f in findings if f.code == code]


def where(f: Finding) -> tuple[int, int, int, int]:
    return (f.start_line, f.start_col, f.end_line, f.end_col)


def rules_toml(texts: list[str]) -> str:
    return "".join(f'[[rules]]\ntext = "{t}"\n\n' for t in texts)


def reflexion(rid: str, trigger: str, lesson: str) -> Reflexion:
    return builders.reflexion(rid, lesson, trigger=trigger, context="", intervention="stop that",
                              created_at="2026-08-01T00:00:00Z")


CLEAN = doc(
    """
    # Learned rules for the `behavior` domain.

    [[rules]]
    text = "Never edit reports/ without asking."
    enabled = true
    id = "r-1"

    [[rules]]
    text = "Answer the question before proposing changes."
    id = "r-2"
    """
)


def test_the_severities_are_the_contracts():
    # Pins: a code drifting to another severity than editors/README.md
    # promises (an error where a person was told to expect a warning).
    assert SEVERITIES == {
        "toml-syntax": "error",
        "invalid-value": "error",
        "unknown-key": "warning",
        "missing-text": "error",
        "duplicate-rule": "warning",
        "restates-user-rule": "warning",
        "over-cap": "warning",
        "over-char-budget": "warning",
        "retired-enabled": "information",
        "attributed-regressions": "warning",
        "unrouted-domain": "warning",
        "pending-proposal": "information",
    }


def test_a_clean_learned_file_has_no_findings():
    # Pins: noise on a healthy file, which teaches people to ignore the rest.
    assert check(CLEAN) == []
    assert check(CLEAN, kind="user") == []


# ─── Spans ──────────────────────────────────────────────────────────────────


def test_spans_give_each_table_its_lines_keys_and_decoded_rule():
    text = doc(
        """
        # header comment

        # about the first rule
        [[rules]]
        text = "one"   # inline
        id = "r-1"


        [[rules]]
          text = 'two'
          enabled = false
        # trailing: belongs to the next table
        [[rules]]
        text = "three"
        """
    )
    spans = rule_spans(text)
    assert [(s.index, s.start_line, s.header_line, s.end_line) for s in spans] == [
        (0, 2, 3, 5),
        (1, 8, 8, 10),
        (2, 11, 12, 13),
    ]
    assert spans[0].key_lines == {"text": 4, "id": 5}
    assert spans[0].text_range == Range(4, 7, 4, 12)
    assert spans[1].key_lines == {"text": 9, "enabled": 10}
    assert spans[1].text_range == Range(9, 9, 9, 14)
    assert spans[1].value_ranges["enabled"] == Range(10, 12, 10, 17)
    assert [s.rule for s in spans] == [Rule(text="one", id="r-1"), Rule(text="two", enabled=False), Rule(text="three")]
    assert span_at(spans, 1) is None, "a blank line between tables belongs to no rule"
    assert span_at(spans, 11) is spans[2], "a comment above a header is that rule's"
    assert span_at(spans, 0) is None, "the file's header comment belongs to no rule"


def test_a_key_inside_a_multiline_string_is_text_not_a_key():
    # Pins: the scanner reading `enabled = false` inside a multi-line text
    # as the rule's own key — a toggle would then "edit" the text.
    text = doc(
        '''
        [[rules]]
        text = """
        Write like this:
        enabled = false
        [[rules]]
        """
        id = "r-1"

        [[rules]]
        text = \'\'\'
        literal = 'x'
        \'\'\'
        '''
    )
    spans = rule_spans(text)
    assert len(spans) == 2
    assert spans[0].key_lines == {"text": 1, "id": 6}
    assert spans[0].text_range == Range(1, 7, 5, 3)
    assert spans[0].rule == Rule(text="Write like this:\nenabled = false\n[[rules]]\n", id="r-1")
    assert spans[1].key_lines == {"text": 9}
    assert spans[1].text_range == Range(9, 7, 11, 3)
    assert (spans[1].header_line, spans[1].end_line) == (8, 11)


def test_arrays_over_several_lines_with_comments_stay_one_value():
    text = doc(
        """
        [[rules]]
        text = "x"
        sources = [
          "r-a",  # the first [[rules]] = 1
          "r-b",
        ]
        created_at = 2026-08-01 10:00:00Z
        """
    )
    (span,) = rule_spans(text)
    assert span.key_lines == {"text": 1, "sources": 2, "created_at": 6}
    assert span.value_ranges["sources"] == Range(2, 10, 5, 1)
    assert span.value_ranges["created_at"] == Range(6, 13, 6, 33)
    assert span.end_line == 6


def test_a_table_that_cannot_be_decoded_has_no_rule_but_keeps_its_place():
    # Pins: one broken table hiding every other rule from hover while a
    # person types.
    text = doc(
        """
        [[rules]]
        text = "fine"

        [[rules]]
        text = "half typed
        """
    )
    spans = rule_spans(text)
    assert [s.rule for s in spans] == [Rule(text="fine"), None]
    assert (spans[1].header_line, spans[1].end_line) == (3, 4)


# ─── toml-syntax ────────────────────────────────────────────────────────────


def test_a_syntax_error_sits_at_tomllibs_line_and_column():
    text = doc(
        """
        [[rules]]
        text = "a"
        enabled = tru
        """
    )
    (f,) = check(text)
    assert f.code == TOML_SYNTAX and f.severity == "error"
    # tomllib: "Invalid value (at line 3, column 11)" — 1-based, so (2, 10).
    assert where(f) == (2, 10, 2, 11)
    assert "Invalid value" in f.message
    assert f.data == {"domain": "behavior"}


def test_a_syntax_error_at_the_end_of_the_document_sits_on_its_last_line():
    text = '[[rules]]\ntext = """never closed\n\n'
    (f,) = check(text)
    assert f.code == TOML_SYNTAX
    assert where(f) == (1, 0, 1, len('text = """never closed'))


def test_a_syntax_error_stops_the_other_checks():
    # Pins: guessed findings flickering on a half-typed buffer.
    text = rules_toml(["same", "same"]) + "oops ="
    assert [f.code for f in check(text)] == [TOML_SYNTAX]


# ─── invalid-value ──────────────────────────────────────────────────────────


def test_a_wrong_typed_value_is_flagged_on_that_value_of_that_rule():
    text = doc(
        """
        [[rules]]
        text = "a"

        [[rules]]
        text = "b"
        id = "r-2"
        enabled = "yes"
        confidence = "high"
        """
    )
    findings = check(text)
    assert [f.code for f in findings] == [INVALID_VALUE, INVALID_VALUE]
    enabled, confidence = findings
    assert where(enabled) == (6, 10, 6, 15)
    assert where(confidence) == (7, 13, 7, 19)
    assert enabled.data == {"domain": "behavior", "rule_index": 1, "rule_id": "r-2", "key": "enabled"}
    assert "bool" in enabled.message and "`enabled`" in enabled.message


def test_rules_that_are_not_an_array_of_tables_is_an_invalid_value_on_that_line():
    (f,) = check('# rules\nrules = 5\n')
    assert f.code == INVALID_VALUE
    assert where(f) == (1, 0, 1, 9)


def test_every_document_the_run_refuses_gets_an_error_finding():
    # Pins: a file that makes `parse_rules_file` raise (so every run fails at
    # startup) showing no error in the editor.
    broken = [
        '[[rules]]\ntext = 3\n',
        '[[rules]]\nenabled = false\n',
        '[[rules]]\ntext = "a"\nsources = ["a", 2]\n',
        '[[rules]]\ntext = "a"\ncreated_at = 2026-08-01\n',
        'rules = [5]\n',
        'rules = [{ text = "a", based_on_count = 1.5 }]\n',
        '[rules]\ntext = "a"\n',
        '[[rules]]\ntext = "a"\ntext.x = 1\n',
    ]
    for text in broken:
        with pytest.raises(InvalidStore):
            parse_rules_file(text, "x.toml")
        assert any(f.severity == "error" for f in check(text)), text


# ─── unknown-key ────────────────────────────────────────────────────────────


def test_an_unknown_key_is_flagged_on_its_own_line():
    text = doc(
        """
        version = 2

        [[rules]]
        text = "a"
        priority = "high"  # not a rule field

        [meta]
        owner = "me"
        """
    )
    findings = check(text)
    assert [(f.code, f.data.get("key")) for f in findings] == [
        (UNKNOWN_KEY, "version"),
        (UNKNOWN_KEY, "priority"),
        (UNKNOWN_KEY, "meta"),
    ]
    assert [where(f) for f in findings] == [(0, 0, 0, 11), (4, 0, 4, 17), (6, 0, 6, 6)]
    assert findings[1].data == {"domain": "behavior", "rule_index": 0, "key": "priority"}
    assert all(f.severity == "warning" for f in findings)


def test_every_rule_field_is_a_known_key():
    rule = Rule(
        text="a",
        enabled=False,
        confidence=0.5,
        based_on_count=2,
        id="r-1",
        sources=["x"],
        created_at="2026-01-01",
        retired_at="2026-02-01",
        retired_reason="measured harmful",
    )
    fields = msgspec.to_builtins(rule)
    text = "[[rules]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in fields.items())
    assert check(text) == []


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return str(v)


# ─── missing-text ───────────────────────────────────────────────────────────


def test_a_rule_without_text_is_flagged_on_the_whole_rule():
    text = doc(
        """
        [[rules]]
        text = "a"

        [[rules]]
        id = "r-2"
        enabled = false
        """
    )
    (f,) = check(text)
    assert f.code == MISSING_TEXT and f.severity == "error"
    assert where(f) == (3, 0, 5, 15)
    assert f.data == {"domain": "behavior", "rule_index": 1, "rule_id": "r-2"}


def test_an_empty_text_is_flagged_on_the_text_value():
    text = '[[rules]]\ntext = "   "\n'
    (f,) = check(text)
    assert f.code == MISSING_TEXT
    assert where(f) == (1, 7, 1, 12)
    assert check('[[rules]]\ntext = "say it"\n') == []


# ─── duplicate-rule ─────────────────────────────────────────────────────────


def test_the_same_text_twice_in_one_file_flags_the_later_one():
    text = rules_toml(["Keep replies short.", "Other.", "keep  replies short"])
    for kind in ("learned", "user"):
        (f,) = of(check(text, kind=kind), DUPLICATE_RULE)
        assert where(f) == (6, 0, 7, len('text = "keep  replies short"'))
        assert f.data == {"domain": "behavior", "rule_index": 2, "duplicate_of": 0}
        assert "rule 1 (line 1)" in f.message
    assert of(check(rules_toml(["Keep replies short.", "Other."])), DUPLICATE_RULE) == []


def test_a_rule_shared_with_the_sibling_file_is_not_a_duplicate():
    # Cross-file repetition is `restates-user-rule`, reported once, on the
    # learned side — not a duplicate on both.
    text = rules_toml(["Keep replies short."])
    assert of(check(text, kind="user", other=[Rule(text="Keep replies short.")]), DUPLICATE_RULE) == []
    assert of(check(text, kind="learned", other=[Rule(text="Keep replies short.")]), DUPLICATE_RULE) == []


# ─── restates-user-rule ─────────────────────────────────────────────────────


def test_a_learned_rule_restating_a_user_rule_is_flagged():
    text = rules_toml(["Never   EDIT reports/ ...", "Something new."])
    (f,) = check(text, other=[Rule(text="never edit reports/")])
    assert f.code == RESTATES_USER_RULE and f.severity == "warning"
    assert where(f) == (0, 0, 1, 34)
    assert f.data == {"domain": "behavior", "rule_index": 0}


def test_restating_is_not_flagged_on_a_user_file_or_a_silenced_learned_rule():
    assert check(rules_toml(["Be brief."]), kind="user", other=[Rule(text="be brief")]) == []
    text = '[[rules]]\ntext = "Be brief."\nenabled = false\n'
    assert check(text, other=[Rule(text="be brief")]) == []
    assert check(rules_toml(["Be brief, always."]), other=[Rule(text="be brief")]) == []


def test_normalization_casefolds_collapses_and_strips_trailing_punctuation():
    assert rule_key("  Never\tEDIT  reports/!? ") == "never edit reports/"
    assert rule_key("Straße.") == rule_key("STRASSE")
    assert rule_key("...") == ""
    assert rule_key("Use 100%") != rule_key("Use 100"), "only sentence punctuation goes"


# ─── over-cap ───────────────────────────────────────────────────────────────


def test_every_active_learned_rule_past_the_cap_is_flagged_in_file_order():
    cap = MAX_ACTIVE_RULES_PER_DOMAIN
    parts = []
    for k in range(cap + 2):
        parts.append(f'[[rules]]\ntext = "rule {k}"\nid = "r-{k}"\n')
        if k == 3:
            parts.append('[[rules]]\ntext = "silenced"\nenabled = false\n')
    text = "\n".join(parts)
    findings = of(check(text), OVER_CAP)
    assert [f.data["rule_id"] for f in findings] == [f"r-{cap}", f"r-{cap + 1}"]
    spans = rule_spans(text)
    first = spans[findings[0].data["rule_index"]]
    assert where(findings[0]) == (first.header_line, 0, first.end_line, len(f'id = "r-{cap}"'))
    assert findings[0].data["rule_index"] == cap + 1, "the silenced rule is counted in the index, not the cap"
    assert f"cap of {cap}" in findings[0].message


def test_the_cap_counts_only_learned_rules():
    text = rules_toml([f"rule {k}" for k in range(MAX_ACTIVE_RULES_PER_DOMAIN + 3)])
    assert of(check(text, kind="user"), OVER_CAP) == []
    assert of(check(rules_toml([f"rule {k}" for k in range(MAX_ACTIVE_RULES_PER_DOMAIN)])), OVER_CAP) == []


# ─── over-char-budget ───────────────────────────────────────────────────────


def test_a_section_over_the_char_budget_is_flagged_on_line_zero_with_both_numbers():
    long = "x" * 700
    text = "# mine\n" + rules_toml([long, long + "y"])
    (f,) = check(text, kind="user", other=[Rule(text="z" * 300)])
    chars = len("### behavior\n") + 3 * 2 + 700 + 701 + 300 + 2
    assert f.code == OVER_CHAR_BUDGET
    assert where(f) == (0, 0, 0, 6)
    assert str(chars) in f.message and str(RULES_CHAR_BUDGET) in f.message
    assert f.data == {"domain": "behavior", "chars": chars, "budget": RULES_CHAR_BUDGET}
    assert check(text, kind="user") == [], "the same file alone is under the budget"


def test_disabled_rules_cost_the_budget_nothing():
    text = f'[[rules]]\ntext = "{"x" * 2000}"\nenabled = false\n'
    assert check(text) == []


# ─── retired-enabled ────────────────────────────────────────────────────────


def test_a_retired_rule_still_enabled_is_information_on_its_enabled_line():
    text = doc(
        """
        [[rules]]
        text = "a"
        enabled = true
        retired_at = "2026-08-01"
        id = "r-1"

        [[rules]]
        text = "b"
        retired_at = "2026-08-02"
        """
    )
    explicit, defaulted = check(text)
    assert (explicit.code, explicit.severity) == (RETIRED_ENABLED, "information")
    assert where(explicit) == (2, 0, 2, 14)
    assert explicit.data == {"domain": "behavior", "rule_index": 0, "rule_id": "r-1"}
    assert defaulted.code == RETIRED_ENABLED
    assert where(defaulted) == (8, 0, 8, 25), "enabled by default: flagged on `retired_at`"
    assert check('[[rules]]\ntext = "a"\nenabled = false\nretired_at = "2026-08-01"\n') == []


# ─── attributed-regressions ─────────────────────────────────────────────────


def test_a_learned_rule_the_ledger_blames_is_flagged_with_the_count():
    tallies = {"r-2": RuleTally(observations=5, regressed=2, attributed_regressions=2), "r-1": RuleTally(observations=3)}
    (f,) = check(CLEAN, tallies=tallies)
    assert (f.code, f.severity) == (ATTRIBUTED_REGRESSIONS, "warning")
    assert where(f) == (7, 0, 9, 10)
    assert f.data == {"domain": "behavior", "rule_id": "r-2", "rule_index": 1, "count": 2}
    assert "2 regressions" in f.message


def test_attributed_regressions_skip_user_files_and_retired_rules():
    tallies = {"r-1": RuleTally(attributed_regressions=1)}
    assert check(CLEAN, kind="user", tallies=tallies) == []
    retired = '[[rules]]\ntext = "a"\nid = "r-1"\nenabled = false\nretired_at = "2026-08-01"\n'
    assert check(retired, tallies=tallies) == []


# ─── unrouted-domain ────────────────────────────────────────────────────────


def test_a_domain_nothing_loads_is_flagged_on_line_zero():
    (f,) = check(CLEAN, domain="recipes")
    assert (f.code, f.severity) == (UNROUTED_DOMAIN, "warning")
    assert where(f) == (0, 0, 0, len("# Learned rules for the `behavior` domain."))
    assert f.data == {"domain": "recipes"}
    for routed in ("behavior", "writing", "triage"):
        assert check(CLEAN, domain=routed) == []


def test_every_finding_names_its_domain_and_rule_findings_their_rule():
    text = doc(
        """
        [[rules]]
        text = "dup"
        id = "r-1"
        colour = "red"
        [[rules]]
        text = "dup"
        retired_at = "x"
        """
    )
    findings = check(text, domain="recipes", tallies={"r-1": RuleTally(attributed_regressions=1)})
    assert {f.code for f in findings} == {UNROUTED_DOMAIN, UNKNOWN_KEY, DUPLICATE_RULE, RETIRED_ENABLED, ATTRIBUTED_REGRESSIONS}
    for f in findings:
        assert f.data["domain"] == "recipes"
        if f.code != UNROUTED_DOMAIN:
            assert isinstance(f.data["rule_index"], int)
    assert findings == sorted(findings, key=lambda f: (f.start_line, f.start_col))


# ─── rules_document_of ──────────────────────────────────────────────────────


def _named(path: Path, root: Path) -> tuple[str, str, str | None] | None:
    doc = rules_document_of(path, root)
    return None if doc is None else (doc.domain, doc.kind, doc.project_id)


def test_only_domain_files_directly_under_rules_are_rules_documents(tmp_path: Path):
    root = tmp_path / "learning"
    rules = root / "rules"
    assert _named(rules / "behavior.user.toml", root) == ("behavior", "user", None)
    assert _named(rules / "triage.learned.toml", root) == ("triage", "learned", None)
    assert rules_document_of(rules / "notes.toml", root) is None
    assert rules_document_of(rules / "Bad Name.user.toml", root) is None
    assert rules_document_of(rules / ".user.toml", root) is None
    assert rules_document_of(rules / "old" / "behavior.user.toml", root) is None
    assert rules_document_of(root / "behavior.user.toml", root) is None
    assert rules_document_of(tmp_path / "rules" / "behavior.user.toml", root) is None
    assert _named(rules / ".." / "rules" / "writing.user.toml", root) == ("writing", "user", None)


def test_a_projects_rules_files_are_rules_documents_of_that_project(tmp_path: Path):
    # Pins: an editor that knows only the global names, so a project's
    # learned rules get no diagnostics, hover or lens at all.
    root = tmp_path / "learning"
    rules = root / "rules"
    pid = project_id("/home/pat/app")
    assert _named(rules / f"behavior@{pid}.learned.toml", root) == ("behavior", "learned", pid)
    assert _named(rules / f"behavior@{pid}.user.toml", root) == ("behavior", "user", pid)
    assert _named(rules / "behavior@app.learned.toml", root) is None, "not a project id: not a rules file"
    assert _named(rules / f"Bad@{pid}.learned.toml", root) is None
    assert _named(rules / "old" / f"behavior@{pid}.learned.toml", root) is None


# ─── toggle_edit ────────────────────────────────────────────────────────────

TOGGLE = doc(
    '''
    # Learned rules. A person's comments live here.

    # first: keep this comment
    [[rules]]
    text = "Never edit reports/."
    enabled = true  # on purpose
    id = "r-1"

    # second
    [[rules]]
        text = """
    Answer first.
    enabled = true
    """  # closes here
        id = "r-2"

    [[rules]]
    text = "Third."
    '''
)



def _rules(text: str) -> list[dict]:
    return tomllib.loads(text)["rules"]


def test_disabling_a_rule_with_an_enabled_line_replaces_only_the_value():
    edit = toggle_edit(TOGGLE, 0, False)
    assert edit == TextEdit(5, 10, 5, 14, "false")
    after = apply_edit(TOGGLE, edit)
    assert after == TOGGLE.replace("enabled = true  # on purpose", "enabled = false  # on purpose")


def test_disabling_a_rule_without_one_inserts_it_after_a_multiline_texts_closing_line():
    # Pins: `enabled = false` landing inside the text string (changing what
    # the rule says) or after `id`, or losing the `# closes here` comment.
    edit = toggle_edit(TOGGLE, 1, False)
    assert edit is not None
    span = rule_spans(TOGGLE)[1]
    assert span.header_line <= edit.start_line == edit.end_line <= span.end_line
    after = apply_edit(TOGGLE, edit)
    lines_before, lines_after = TOGGLE.split("\n"), after.split("\n")
    assert lines_after[13] == '"""  # closes here'
    assert lines_after[14] == "    enabled = false"
    assert lines_after[:14] + lines_after[15:] == lines_before, "every other byte is unchanged"
    assert _rules(after)[1] == {"text": "Answer first.\nenabled = true\n", "id": "r-2", "enabled": False}


def test_toggling_twice_returns_to_an_equivalent_document():
    for index in range(3):
        off = apply_edit(TOGGLE, toggle_edit(TOGGLE, index, False))
        back = apply_edit(off, toggle_edit(off, index, True))
        assert _rules(back) == [
            {**r, "enabled": True} if i == index else r for i, r in enumerate(_rules(TOGGLE))
        ]
        assert msgspec.convert(tomllib.loads(back), RulesFile) == msgspec.convert(tomllib.loads(TOGGLE), RulesFile)
        assert back.count("#") == TOGGLE.count("#"), "no comment lost"


def test_toggle_keeps_crlf_line_endings_and_works_without_a_final_newline():
    text = '[[rules]]\r\ntext = "a"\r\n\r\n[[rules]]\r\ntext = "b"'
    edit = toggle_edit(text, 0, False)
    assert apply_edit(text, edit) == '[[rules]]\r\ntext = "a"\r\nenabled = false\r\n\r\n[[rules]]\r\ntext = "b"'
    edit = toggle_edit(text, 1, False)
    assert apply_edit(text, edit) == '[[rules]]\r\ntext = "a"\r\n\r\n[[rules]]\r\ntext = "b"\r\nenabled = false'


def test_toggle_refuses_what_it_cannot_do_safely():
    assert toggle_edit(TOGGLE, 3, False) is None, "no such rule"
    assert toggle_edit(TOGGLE, -1, False) is None
    assert toggle_edit(TOGGLE + "\noops =\n", 0, False) is None, "a document that does not parse"
    assert toggle_edit('rules = [{ text = "a" }]\n', 0, False) is None, "no table to edit"
    assert toggle_edit('[[rules]]\ntext = "a"\nenabled.x = 1\n', 0, False) is None


def test_toggle_inserts_after_the_header_when_there_is_no_text():
    text = '[[rules]]  # empty so far\nid = "r-1"\n'
    edit = toggle_edit(text, 0, False)
    assert apply_edit(text, edit) == '[[rules]]  # empty so far\nenabled = false\nid = "r-1"\n'


# ─── hover ──────────────────────────────────────────────────────────────────

HOVERED = doc(
    """
    # learned

    [[rules]]
    text = "Stop when the person narrows the task."
    id = "r-1"
    confidence = 0.85
    based_on_count = 3
    created_at = "2026-08-01T06:00:00Z"
    sources = ["x-1", "x-2", "x-gone"]
    retired_at = "2026-08-09T00:00:00Z"
    retired_reason = "regressed twice"
    enabled = false
    """
)


def test_a_hover_shows_lineage_as_lessons_and_the_ledger():
    hover = hover_for(
        HOVERED,
        4,
        3,
        domain="behavior",
        kind="learned",
        reflections_by_id={
            "x-1": reflexion("x-1", "steer", "Drop the remaining steps\nwhen told to."),
            "x-2": reflexion("x-2", "denial", "Ask before deleting."),
        },
        tallies={
            "r-1": {
                "smollm2-135m": RuleTally(
                    observations=7, improved=2, regressed=3, attributed_regressions=2, last_validated="2026-08-08T00:00:00Z"
                ),
                "qwen-0.5b": RuleTally(observations=1, improved=1, last_validated="2026-08-01T00:00:00Z"),
            }
        },
    )
    assert hover is not None
    assert "`r-1`" in hover and "retired" in hover
    assert "created 2026-08-01T06:00:00Z" in hover
    assert "confidence 0.85" in hover and "based on 3 reflections" in hover
    # Each source is the person's words, its session and the lesson drawn.
    assert "- [steer] “stop that” (session s1) — lesson: Drop the remaining steps when told to." in hover
    assert "- [denial] “stop that” (session s1) — lesson: Ask before deleting." in hover
    assert "- x-gone (not on record)" in hover
    assert "- x-1" not in hover, "a known source is shown as what happened, not its id"
    # What the ledger measured, per model, in the words `why` uses too.
    assert (
        "**Measured**: rode in 1 probe on qwen-0.5b: 1 improved, 0 regressed; "
        "rode in 7 probes on smollm2-135m: 2 improved, 3 regressed, 2 attributed regressions"
        " · last validated 2026-08-08T00:00:00Z"
    ) in hover
    assert "**Retired** 2026-08-09T00:00:00Z: regressed twice" in hover


def test_a_hover_for_an_unmeasured_user_rule_and_outside_rules():
    text = '# mine\n\n[[rules]]\ntext = "Be brief."\n'
    hover = hover_for(text, 3, 0, domain="writing", kind="user", reflections_by_id={}, tallies={})
    assert hover is not None and hover.startswith("**Your rule 1 (no id)** · `writing` · active")
    assert "Measured" not in hover, "a rule without an id cannot be measured"
    assert hover_for(text, 0, 0, domain="writing", kind="user", reflections_by_id={}, tallies={}) is None
    assert hover_for(text, 1, 0, domain="writing", kind="user", reflections_by_id={}, tallies={}) is None
    unmeasured = hover_for(CLEAN, 4, 0, domain="behavior", kind="learned", reflections_by_id={}, tallies={})
    assert unmeasured is not None and "**Measured**: not measured yet\n" in unmeasured


def test_a_hover_names_the_rules_scope():
    # Pins: a project's rule hovered as if it applied everywhere.
    text = '[[rules]]\ntext = "Be brief."\n'
    global_hover = hover_for(text, 0, 0, domain="writing", kind="user", reflections_by_id={}, tallies={})
    assert global_hover is not None and global_hover.startswith("**Your rule 1 (no id)** · `writing` · active · global\n")
    project = hover_for(
        text, 0, 0, domain="writing", kind="learned", reflections_by_id={}, tallies={}, scope="project /home/pat/app"
    )
    assert project is not None and project.splitlines()[0].endswith("· active · project /home/pat/app")


# ─── lens ───────────────────────────────────────────────────────────────────


def test_the_lenses_count_active_rules_chars_and_pending_proposals():
    user = [Rule(text="Be brief.")]
    learned = [Rule(text="Ask first."), Rule(text="Off.", enabled=False), Rule(text="Old.", retired_at="x")]
    chars = len("### behavior\n- Be brief.\n- Ask first.")
    lenses = lens_for("behavior", user, learned, pending=2)
    assert [lens.title for lens in lenses] == [
        f"1/{MAX_ACTIVE_RULES_PER_DOMAIN} active rules",
        f"{chars}/{RULES_CHAR_BUDGET} chars",
        "2 pending proposals",
        "scope: global",
    ]
    assert lenses[0].act == Act.SHOW_RULES_BLOCK and lenses[0].arguments == ["behavior"]
    assert lenses[2].act == Act.LIST_PROPOSALS
    assert lenses[2].arguments == [{"status": "pending", "domain": "behavior"}]
    assert lenses[3].act == Act.SHOW_RULES_BLOCK and lenses[3].arguments == ["behavior"]
    assert [lens.title for lens in lens_for("behavior", [], [], pending=1)] == [
        f"0/{MAX_ACTIVE_RULES_PER_DOMAIN} active rules",
        f"0/{RULES_CHAR_BUDGET} chars",
        "1 pending proposal",
        "scope: global",
    ]
    assert len(lens_for("behavior", user, learned, pending=0)) == 3


def test_a_projects_lenses_name_the_project_and_count_its_section():
    # Pins: a project's file whose lenses say nothing of where its rules
    # apply, measure its section as the global one (its heading is longer),
    # or show the global rules block when clicked.
    scope = Scope("project /home/pat/app", "/home/pat/app", in_project=True)
    learned = [Rule(text="Ask first.")]
    lenses = lens_for("behavior", [], learned, 0, scope)
    chars = len("### behavior (this project)\n- Ask first.")
    assert [lens.title for lens in lenses] == [
        f"1/{MAX_ACTIVE_RULES_PER_DOMAIN} active rules",
        f"{chars}/{RULES_CHAR_BUDGET} chars",
        "scope: project /home/pat/app",
    ]
    assert all(lens.arguments == ["behavior", "/home/pat/app"] for lens in lenses)


# ─── properties over generated files ────────────────────────────────────────

_PIECES = [*"ab Z#=[]{}\"'\\.,\n\t\r", '"""', "'''", "é", "\U0001f600", "enabled = ", "[[rules]]"]
_TEXT = (
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=30)
    .map("".join)
    .map(lambda s: s if s.strip() else s + "x")
)

_RULE = st.builds(
    Rule,
    text=_TEXT,
    enabled=st.booleans(),
    confidence=st.none() | st.floats(min_value=0, max_value=1),
    based_on_count=st.none() | st.integers(min_value=0, max_value=99),
    id=st.none() | st.from_regex(r"r-[a-z0-9]{1,6}", fullmatch=True),
    sources=st.lists(st.from_regex(r"[a-z0-9-]{1,8}", fullmatch=True), max_size=3),
    retired_at=st.none() | st.just("2026-08-01T00:00:00Z"),
)

# How a table is written: which string style its text uses, whether it spells
# `enabled`, and whether comments sit above it, inside it and after it.
_STYLE = st.fixed_dictionaries(
    {
        "string": st.sampled_from(["basic", "multiline", "literal", "multiline-literal"]),
        "spell_enabled": st.booleans(),
        "comment_above": st.booleans(),
        "comment_inside": st.booleans(),
        "multiline_sources": st.booleans(),
    }
)


def _render(rules: list[Rule], styles: list[dict]) -> str:
    import tomlkit

    out = tomlkit.document()
    out.add(tomlkit.comment("generated"))
    out.add(tomlkit.nl())
    aot = tomlkit.aot()
    for rule, style in zip(rules, styles):
        table = tomlkit.table()
        if style["comment_above"]:
            table.add(tomlkit.comment("about [[rules]] below"))
        kind = style["string"]
        if "\r" in rule.text:
            kind = "basic"  # a raw CR in a multi-line string reads back as a line break
        try:
            value = tomlkit.string(
                rule.text, literal="literal" in kind, multiline=kind.startswith("multiline")
            )
        except tomlkit.exceptions.InvalidStringError:
            value = tomlkit.string(rule.text)
        table.add("text", value)
        if style["comment_inside"]:
            table.add(tomlkit.comment("enabled = false"))
        fields = msgspec.to_builtins(rule)
        fields.pop("text")
        if style["spell_enabled"]:
            table.add("enabled", rule.enabled)
            fields.pop("enabled", None)
        elif not rule.enabled:
            fields["enabled"] = False
        for key, v in fields.items():
            if key == "sources" and style["multiline_sources"]:
                array = tomlkit.array()
                array.extend(v)
                array.multiline(True)
                table.add(key, array)
            else:
                table.add(key, v)
        aot.append(table)
    out.append("rules", aot)
    return tomlkit.dumps(out)


@st.composite
def _rule_files(draw: st.DrawFn) -> tuple[str, list[Rule]]:
    rules = draw(st.lists(_RULE, min_size=1, max_size=5))
    styles = draw(st.lists(_STYLE, min_size=len(rules), max_size=len(rules)))
    return _render(rules, styles), rules


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_rule_files())
def test_every_span_decodes_to_what_tomllib_parses(generated: tuple[str, list[Rule]]):
    # Pins: the scanner disagreeing with the parser about where a table ends
    # (a `[[rules]]` or `enabled =` inside a string, a multi-line array).
    text, rules = generated
    parsed = msgspec.convert(tomllib.loads(text), RulesFile).rules
    assert parsed == rules
    spans = rule_spans(text)
    assert [s.rule for s in spans] == parsed
    lines = text.split("\n")
    for span in spans:
        assert lines[span.header_line].startswith("[[rules]]")
        assert span.text_range is not None
        assert span.key_lines["text"] == span.text_range.start_line
    findings = check_document("behavior", "learned", text, other_rules=[], tallies={})
    assert not [f for f in findings if f.code in (TOML_SYNTAX, INVALID_VALUE, UNKNOWN_KEY)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_rule_files(), st.data())
def test_toggle_edit_never_changes_another_rule(generated: tuple[str, list[Rule]], data: st.DataObject):
    text, rules = generated
    index = data.draw(st.integers(min_value=0, max_value=len(rules) - 1))
    enabled = data.draw(st.booleans())
    edit = toggle_edit(text, index, enabled)
    assert edit is not None
    span = rule_spans(text)[index]
    assert span.header_line <= edit.start_line <= edit.end_line <= span.end_line
    after = apply_edit(text, edit)
    got = msgspec.convert(tomllib.loads(after), RulesFile).rules
    assert got[index] == msgspec.structs.replace(rules[index], enabled=enabled)
    assert got[:index] + got[index + 1 :] == rules[:index] + rules[index + 1 :]
    # outside the edited line, the text is byte-identical
    before_lines, after_lines = text.split("\n"), after.split("\n")
    added = len(after_lines) - len(before_lines)
    assert before_lines[: edit.start_line] == after_lines[: edit.start_line]
    assert before_lines[edit.end_line + 1 :] == after_lines[edit.end_line + 1 + added :]


_TOMLISH = [*"ab =#[]{}\"'\\.,\n\r\t", '"""', "'''", "[[rules]]\n", "text = ", "enabled = ", "\n[rules.x]\n", "1979-05-27 07:32:00Z"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_TOMLISH), max_size=60).map("".join))
def test_nothing_a_person_can_type_makes_the_checks_raise(text: str):
    # Pins: the editor endpoint failing a request on a half-typed buffer —
    # every keystroke runs these.
    spans = rule_spans(text)
    lines = text.split("\n")
    for span in spans:
        assert 0 <= span.start_line <= span.header_line <= span.end_line < len(lines)
    findings = check_document("behavior", "learned", text, other_rules=[], tallies={})
    for f in findings:
        assert 0 <= f.start_line <= f.end_line < len(lines)
        assert f.severity == SEVERITIES[f.code]
    for line in range(len(lines)):
        hover_for(text, line, 0, domain="behavior", kind="learned", reflections_by_id={}, tallies={})
    for index in range(len(spans)):
        edit = toggle_edit(text, index, False)
        if edit is not None:
            assert tomllib.loads(apply_edit(text, edit))["rules"][index]["enabled"] is False


# ─── code actions: chosen from a finding's data ─────────────────────────────

from mecha.core.editor.actions import code_actions_for, fixes_for, kind_wanted  # noqa: E402 - grouped with the tests that use them
from mecha.core.editor.edits import remove_rule_edit  # noqa: E402
from mecha.core.editor.results import PENDING_PROPOSAL, QUICKFIX, SOURCE, PendingProposal  # noqa: E402
from mecha.core.editor.store_view import pending_of  # noqa: E402

WITH_COPY = doc(
    '''
    # Learned rules.

    # the original
    [[rules]]
    text = "Never edit reports/."
    id = "r-1"

    # a copy
    [[rules]]
    text = "never edit reports/"
    id = "r-2"

    # a note about nothing below

    [[rules]]
    text = "Sign with the first name."  # mine
    id = "r-3"
    '''
)


def _texts(text: str) -> list[str]:
    return [r["text"] for r in _rules(text)]


def test_removing_a_rule_takes_its_comment_and_gap_and_keeps_every_other_line():
    # Pins: a removal that leaves the copy's comment orphaned, eats the
    # neighbour's comment, or leaves a double blank line behind.
    edit = remove_rule_edit(WITH_COPY, 1)
    assert edit is not None
    after = apply_edit(WITH_COPY, edit)
    assert after == WITH_COPY.replace('# a copy\n[[rules]]\ntext = "never edit reports/"\nid = "r-2"\n\n', "")
    assert _texts(after) == ["Never edit reports/.", "Sign with the first name."]


def test_removing_the_last_rule_takes_the_gap_before_it_and_keeps_the_final_newline():
    edit = remove_rule_edit(WITH_COPY, 2)
    assert edit is not None
    after = apply_edit(WITH_COPY, edit)
    # the unattached note stays: it is nobody's comment
    assert after.endswith('id = "r-2"\n\n# a note about nothing below\n')
    assert _texts(after) == ["Never edit reports/.", "never edit reports/"]


def test_removing_the_only_rule_leaves_an_empty_file_that_still_parses():
    text = '[[rules]]\ntext = "Only."\n'
    edit = remove_rule_edit(text, 0)
    assert edit is not None and apply_edit(text, edit) == ""


def test_removing_a_rule_keeps_crlf_line_endings():
    # Pins: a removal that mixes `\n` into a CRLF file, or leaves a lone `\r`.
    text = WITH_COPY.replace("\n", "\r\n")
    for index in (1, 2):
        edit = remove_rule_edit(text, index)
        assert edit is not None
        after = apply_edit(text, edit)
        assert "\n" not in after.replace("\r\n", "") and "\r" not in after.replace("\r\n", ""), repr(after)
        assert after == apply_edit(WITH_COPY, remove_rule_edit(WITH_COPY, index)).replace("\n", "\r\n")


def test_no_removal_is_offered_on_a_document_that_does_not_parse_or_a_rule_that_is_not_there():
    assert remove_rule_edit(WITH_COPY + "[[rules\n", 0) is None
    assert remove_rule_edit(WITH_COPY, 3) is None
    assert remove_rule_edit(WITH_COPY, -1) is None


def _findings(text: str, kind: str = "learned", **kw) -> list[Finding]:
    return check_document("behavior", kind, text, other_rules=kw.pop("other", []), tallies=kw.pop("tallies", {}), **kw)


def test_each_diagnostic_brings_its_own_fix_attached_to_it():
    # Pins: a fix for the wrong rule (chosen by position rather than the
    # finding's data), or one not attached to its diagnostic.
    (dup,) = [f for f in _findings(WITH_COPY) if f.code == DUPLICATE_RULE]
    (fix,) = fixes_for(dup, WITH_COPY)
    assert (fix.title, fix.kind, fix.fixes, fix.preferred) == ("Remove duplicate rule r-2", QUICKFIX, dup, True)
    assert _texts(apply_edit(WITH_COPY, fix.edits[0])) == ["Never edit reports/.", "Sign with the first name."]

    user = [Rule(text="Sign with the first name")]
    (restate,) = [f for f in _findings(WITH_COPY, other=user) if f.code == RESTATES_USER_RULE]
    (fix,) = fixes_for(restate, WITH_COPY)
    assert fix.title == "Remove learned copy r-3 of your rule"
    assert _texts(apply_edit(WITH_COPY, fix.edits[0])) == ["Never edit reports/.", "never edit reports/"]

    retired = '[[rules]]\ntext = "Old."\nid = "r-9"\nenabled = true # still\nretired_at = "2026-01-01T00:00:00Z"\n'
    (f,) = [f for f in _findings(retired) if f.code == RETIRED_ENABLED]
    (fix,) = fixes_for(f, retired)
    assert apply_edit(retired, fix.edits[0]) == retired.replace("enabled = true # still", "enabled = false # still")

    many = "".join(f'[[rules]]\ntext = "Rule {i} says something."\nid = "r-{i}"\n\n' for i in range(MAX_ACTIVE_RULES_PER_DOMAIN + 1))
    over = [f for f in _findings(many) if f.code == OVER_CAP]
    assert over
    (fix,) = fixes_for(over[0], many)
    assert (fix.act, fix.arguments, fix.edits) == (Act.LEARN_NOW, ["behavior"], [])

    long = f'[[rules]]\ntext = "{"word " * (RULES_CHAR_BUDGET // 5 + 10)}"\n'
    (budget,) = [f for f in _findings(long, kind="user") if f.code == OVER_CHAR_BUDGET]
    (fix,) = fixes_for(budget, long)
    assert (fix.act, fix.arguments) == (Act.LEARN_NOW, ["behavior"])

    tallies = {"r-1": RuleTally(observations=3, regressed=2, attributed_regressions=2)}
    (blamed,) = [f for f in _findings(WITH_COPY, tallies=tallies) if f.code == ATTRIBUTED_REGRESSIONS]
    (fix,) = fixes_for(blamed, WITH_COPY)
    assert fix.act == Act.PROPOSE_RETIREMENT and fix.arguments[:2] == ["behavior", "r-1"]


def test_a_pending_proposal_is_reviewed_from_its_diagnostic_and_from_the_source_menu_never_twice():
    # Pins: the review only under Source Action… (which Ctrl+. does not
    # list), or listed twice to a client that sends no `only`.
    pending = [PendingProposal("p-1", 3, 4)]
    findings = _findings(WITH_COPY, pending=pending)
    (p,) = [f for f in findings if f.code == PENDING_PROPOSAL]
    assert (p.start_line, p.data) == (
        0, {"domain": "behavior", "proposal_id": "p-1", "active_before": 3, "active_after": 4, "changes": []}
    )
    review = ["Accept proposal p-1 (3 → 4 active behavior rules)", "Reject proposal p-1", "Show diff of proposal p-1"]

    unfiltered = code_actions_for(WITH_COPY, findings, 0, 0)
    assert [(a.title, a.kind) for a in unfiltered if "p-1" in a.title] == [(t, QUICKFIX) for t in review]
    assert all(a.fixes == p for a in unfiltered if "p-1" in a.title)
    assert [a.title for a in code_actions_for(WITH_COPY, findings, 0, 0, ["quickfix"]) if "p-1" in a.title] == review
    source = code_actions_for(WITH_COPY, findings, 0, 0, ["source"])
    assert [(a.title, a.kind, a.fixes) for a in source] == [(t, SOURCE, None) for t in review]
    # Elsewhere in the file: the source actions, and the rule's own fixes.
    elsewhere = code_actions_for(WITH_COPY, findings, 10, 10)
    assert [a.title for a in elsewhere if a.kind == SOURCE] == review
    assert "Remove duplicate rule r-2" in [a.title for a in elsewhere]
    # A user file has no pending-proposal finding.
    assert not [f for f in _findings(WITH_COPY, kind="user", pending=pending) if f.code == PENDING_PROPOSAL]


def test_a_pending_proposal_is_diagnosed_even_while_the_file_does_not_parse():
    findings = _findings("[[rules\n", pending=[PendingProposal("p-1", 0, 1)])
    assert sorted(f.code for f in findings) == [PENDING_PROPOSAL, TOML_SYNTAX]


def test_kind_filters_follow_lsp_hierarchy():
    assert kind_wanted("quickfix", None) and kind_wanted("source", None)
    assert kind_wanted("source.fixAll", ["source"]) and not kind_wanted("source", ["source.fixAll"])
    assert not kind_wanted("quickfix", ["source"]) and not kind_wanted("sourcery", ["source"])
    assert kind_wanted("refactor", [""])


def test_only_the_domains_pending_proposals_count_with_active_rules_before_and_after():
    from mecha.core.store.learning_store import Proposal, ProposalStatus

    def proposal(pid: str, domain: str, status: ProposalStatus) -> Proposal:
        return builders.proposal(pid, [Rule(text="a"), Rule(text="b"), Rule(text="c")], domain=domain, status=status,
                                 rules_before=[Rule(text="a"), Rule(text="b", enabled=False)],
                                 created_at="2026-01-01T00:00:00Z")

    found = pending_of(
        _doc(Path("/store"), "behavior", "learned"),
        [
            proposal("p-1", "behavior", ProposalStatus.PENDING),
            proposal("p-2", "behavior", ProposalStatus.ACCEPTED),
            proposal("p-3", "writing", ProposalStatus.PENDING),
        ],
    )
    assert found == [PendingProposal("p-1", 1, 3, ((1, "added", "c"),))], "each change numbered, for its own action"


# ─── what a document is checked against: its sibling, the store ─────────────

from mecha.core.editor.lenses import document_lenses  # noqa: E402 - grouped with the tests that use them
from mecha.core.editor.store_view import (  # noqa: E402
    document_scope,
    pending_in,
    sibling_path,
    sibling_rules,
    tallies_in,
)


def _nothing_open(path: Path) -> str | None:
    return None


def _doc(root: Path, domain: str, kind: str, project: str | None = None) -> RulesDocument:
    found = rules_document_of(root / "rules" / rules_file_name(domain, kind, project), root)
    assert found is not None
    return found


def test_a_rules_files_sibling_is_the_same_domains_other_kind_in_the_same_scope(tmp_path: Path):
    # Pins: a learned file checked against itself, against another domain's
    # rules or another scope's, so a restated rule or the shared budget
    # goes unseen.
    root = tmp_path / "learning"
    assert sibling_path(_doc(root, "behavior", "learned")) == root / "rules" / "behavior.user.toml"
    assert sibling_path(_doc(root, "behavior", "user")) == root / "rules" / "behavior.learned.toml"
    pid = project_id("/home/pat/app")
    assert sibling_path(_doc(root, "behavior", "learned", "/home/pat/app")) == root / "rules" / f"behavior@{pid}.user.toml"


def test_the_sibling_is_read_from_its_open_buffer_before_the_disk(tmp_path: Path):
    # Pins: a document checked against the sibling as last saved while the
    # person is editing it in the next tab, and the other way round a closed
    # sibling ignored because it is not open.
    root = tmp_path / "learning"
    (root / "rules").mkdir(parents=True)
    user = root / "rules" / "behavior.user.toml"
    user.write_text('[[rules]]\ntext = "On disk."\n')
    buffers = {user: '[[rules]]\ntext = "Typed."\n\n[[rules]]\ntext = "Unsaved."\n'}
    learned = _doc(root, "behavior", "learned")
    assert [r.text for r in sibling_rules(learned, buffers.get)] == ["Typed.", "Unsaved."]
    assert [r.text for r in sibling_rules(learned, _nothing_open)] == ["On disk."]
    assert sibling_rules(_doc(root, "behavior", "user"), _nothing_open) == [], "no learned file yet: no rules"


@pytest.mark.parametrize(
    ("buffer", "disk"),
    [
        ('[[rules]\ntext = "half-typed', None),
        ('[[rules]]\ntext = 5\n', None),
        ("rules = " + "[" * 5000, None),
        (None, b'[[rules]]\ntext = "\xff"\n'),
    ],
    ids=["not toml", "not rules", "nested past the parser", "not utf-8 on disk"],
)
def test_a_broken_sibling_counts_as_no_rules(tmp_path: Path, buffer: str | None, disk: bytes | None):
    # Pins: a half-typed sibling putting its own breakage on this document,
    # or failing this document's diagnostics altogether.
    root = tmp_path / "learning"
    (root / "rules").mkdir(parents=True)
    user = root / "rules" / "behavior.user.toml"
    user.write_bytes(disk if disk is not None else b'[[rules]]\ntext = "Fine on disk."\n')
    assert sibling_rules(_doc(root, "behavior", "learned"), {user: buffer}.get) == []


def test_without_a_store_nothing_is_pending_and_nothing_measured(tmp_path: Path):
    # Pins: an editor opened on a rules folder before any run made a store
    # failing every diagnostic instead of showing the file's own findings.
    assert pending_in(None, _doc(tmp_path / "learning", "behavior", "learned")) == []
    assert tallies_in(None) == {}


def test_pending_proposals_and_tallies_are_read_from_the_store(tmp_path: Path):
    # Pins: the editor showing another domain's proposal, a resolved one,
    # or a ledger other than the store's.
    from mecha.core.store.learning_store import LearningStore, ProposalStatus
    from mecha.core.store.ledger import ValidationRecord

    store = LearningStore.open(tmp_path / "learning")
    for pid, domain, status in (
        ("p-1", "behavior", ProposalStatus.PENDING),
        ("p-2", "behavior", ProposalStatus.REJECTED),
        ("p-3", "writing", ProposalStatus.PENDING),
    ):
        store.write_proposal(builders.proposal(pid, [Rule(text="a", id="r-1")], domain=domain, status=status, created_at="t"))
    assert pending_in(store, _doc(store.root, "behavior", "learned")) == [PendingProposal("p-1", 0, 1, ((1, "added", "a"),))]
    assert tallies_in(store) == {}
    store.append_validation(
        ValidationRecord(
            reflexion_id="x", trigger="steer", domain="behavior", rules_hash="0",
            rule_ids=["r-1"], outcome="regressed", model="m", created_at="t",
        )
    )
    tally = tallies_in(store)["r-1"]
    assert (tally.observations, tally.regressed) == (1, 1)


def test_a_documents_lenses_put_its_rules_on_its_own_side_of_the_pair():
    # Pins: a user file's rules counted as learned (the active count would
    # be the person's rules against the learned cap).
    mine = '[[rules]]\ntext = "Mine."\n\n[[rules]]\ntext = "Also mine."\n'
    sibling = [Rule(text="Theirs.")]
    as_user = document_lenses("behavior", "user", mine, sibling, 0)
    as_learned = document_lenses("behavior", "learned", mine, sibling, 0)
    assert as_user == lens_for("behavior", parse_rules_file(mine, "u"), sibling, 0)
    assert as_learned == lens_for("behavior", sibling, parse_rules_file(mine, "l"), 0)
    assert as_user[0].title == f"1/{MAX_ACTIVE_RULES_PER_DOMAIN} active rules"
    assert as_learned[0].title == f"2/{MAX_ACTIVE_RULES_PER_DOMAIN} active rules"
    assert [lens.title for lens in document_lenses("behavior", "learned", mine, sibling, 2)][2] == "2 pending proposals"


def test_a_document_that_does_not_parse_has_no_lenses():
    # Pins: counts over guessed rules flickering above a half-typed buffer,
    # or the lens request failing.
    for broken in ('[[rules]\ntext = "half', '[[rules]]\ntext = 5\n', "rules = " + "[" * 5000):
        assert document_lenses("behavior", "learned", broken, [], 3) == [], broken[:20]


# ─── scopes: a project's rules files ────────────────────────────────────────


def test_a_projects_file_may_name_its_project_and_a_global_one_may_not():
    # Pins: every project file the store writes flagged `unknown-key` on its
    # own `project` line, or a non-string project passing unremarked.
    text = '# The learned rules of the project at /home/pat/app.\nproject = "/home/pat/app"\n\n[[rules]]\ntext = "Ask first."\n'
    assert check(text, in_project=True) == []
    flagged = check(text)
    assert [(f.code, f.start_line) for f in flagged] == [(UNKNOWN_KEY, 1)]
    assert flagged[0].message == "unknown top-level key `project`: a rules file holds only `[[rules]]` tables"
    wrong = check('project = 3\n\n[[rules]]\ntext = "Ask first."\n', in_project=True)
    assert [(f.code, f.start_line, f.data.get("key")) for f in wrong] == [(INVALID_VALUE, 0, "project")]
    other = check('owner = "me"\n', in_project=True)
    assert [f.code for f in other] == [UNKNOWN_KEY]
    assert other[0].message.endswith("holds only `[[rules]]` tables and its `project`")


def test_a_projects_budget_is_measured_on_its_own_section():
    # Pins: a project's section measured without its `(this project)`
    # heading, so a file at the budget's edge is not flagged.
    heading = len("### behavior (this project)\n- ")
    text = f'[[rules]]\ntext = "{"x" * (RULES_CHAR_BUDGET - heading + 1)}"\n'
    assert [f.code for f in check(text) if f.code == OVER_CHAR_BUDGET] == []
    assert [f.code for f in check(text, in_project=True) if f.code == OVER_CHAR_BUDGET] == [OVER_CHAR_BUDGET]


def test_a_documents_scope_is_read_from_its_own_project_key_then_its_siblings(tmp_path: Path):
    # Pins: a project's file named by an id nobody can read, or the path
    # of a buffer the person has not saved read from disk instead.
    root = tmp_path / "learning"
    (root / "rules").mkdir(parents=True)
    learned = _doc(root, "behavior", "learned", "/home/pat/app")
    user = _doc(root, "behavior", "user", "/home/pat/app")
    assert document_scope(_doc(root, "behavior", "learned"), 'project = "/x"\n', _nothing_open) == Scope("global")
    assert document_scope(learned, 'project = "/home/pat/app"\n', _nothing_open) == Scope(
        "project /home/pat/app", "/home/pat/app", in_project=True
    )
    assert document_scope(learned, "", _nothing_open) == Scope(f"project {learned.project_id}", None, in_project=True)
    user.path.write_text('project = "/home/pat/app"\n')
    assert document_scope(learned, "", _nothing_open).project == "/home/pat/app", "the sibling on disk names it"
    assert document_scope(learned, "", {user.path: 'project = "/moved/app"\n'}.get).project == "/moved/app"


def test_a_documents_pending_proposals_are_its_scopes(tmp_path: Path):
    # Pins: a project's proposal offered for review on the global file (an
    # accept there writes another file than the one open), or the other way.
    from mecha.core.store.learning_store import Proposal

    def proposal(pid: str, project: str | None) -> Proposal:
        return builders.proposal(pid, [Rule(text="a")], created_at="t", project=project)

    proposals = [proposal("p-global", None), proposal("p-app", "/home/pat/app"), proposal("p-lib", "/home/pat/lib")]
    root = tmp_path / "learning"
    assert [p.id for p in pending_of(_doc(root, "behavior", "learned"), proposals)] == ["p-global"]
    assert [p.id for p in pending_of(_doc(root, "behavior", "learned", "/home/pat/app"), proposals)] == ["p-app"]
    assert [p.id for p in pending_of(_doc(root, "behavior", "user", "/home/pat/lib"), proposals)] == ["p-lib"]


def test_a_proposal_of_several_changes_offers_to_accept_it_without_each_one():
    # Pins: review all or nothing from an editor: one doubtful rule meant
    # rejecting the batch, or accepting it and retiring the rule.
    pending = [PendingProposal("p-1", 1, 2, ((1, "added", "Quote the exact error."), (2, "removed", "Ask first.")))]
    findings = _findings(WITH_COPY, pending=pending)
    actions = [a for a in code_actions_for(WITH_COPY, findings, 0, 0) if a.title.startswith("Leave out")]
    assert [(a.title, a.act, a.arguments) for a in actions] == [
        ("Leave out change 1 (added: “Quote the exact error.”), accept the rest of proposal p-1",
         Act.ACCEPT_PROPOSAL, ["p-1", {"without": [1]}]),
        ("Leave out change 2 (removed: “Ask first.”), accept the rest of proposal p-1",
         Act.ACCEPT_PROPOSAL, ["p-1", {"without": [2]}]),
    ]
    one = _findings(WITH_COPY, pending=[PendingProposal("p-2", 1, 2, ((1, "added", "x"),))])
    assert not [a for a in code_actions_for(WITH_COPY, one, 0, 0) if a.title.startswith("Leave out")], (
        "leaving out a proposal's only change is a rejection"
    )
