"""Every diagnostic code of the contract (editors/README.md), at the rule's
own range, published on didOpen, didChange and didSave, and again when the
store changes on disk with no edit at all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types as lsp

from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, RULES_CHAR_BUDGET
from tests.builders import rule

from .conftest import MechaClient, Store, has_code

ERROR = lsp.DiagnosticSeverity.Error
WARNING = lsp.DiagnosticSeverity.Warning
INFORMATION = lsp.DiagnosticSeverity.Information

#: The contract's table: code → severity.
SEVERITY = {
    "toml-syntax": ERROR,
    "invalid-value": ERROR,
    "unknown-key": WARNING,
    "missing-text": ERROR,
    "duplicate-rule": WARNING,
    "restates-user-rule": WARNING,
    "over-cap": WARNING,
    "over-char-budget": WARNING,
    "retired-enabled": INFORMATION,
    "attributed-regressions": WARNING,
    "unrouted-domain": WARNING,
    # Published by the server on a learned file with pending proposals (the
    # anchor of the accept/reject/diff actions); not in the README's table.
    "pending-proposal": INFORMATION,
}

Span = tuple[int, int, int, int]


def span(d: lsp.Diagnostic) -> Span:
    r = d.range
    return (r.start.line, r.start.character, r.end.line, r.end.character)


def codes(diags: list[lsp.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diags)


def lacks(code: str) -> Callable[[Any], bool]:
    return lambda diags: not any(d.code == code for d in diags)


def rules_toml(*tables: str) -> str:
    return "\n".join(f"[[rules]]\n{t}" for t in tables)


@dataclass
class Case:
    domain: str
    kind: str
    text: str
    #: (code, range, data subset) for every diagnostic expected, and no others.
    expected: list[tuple[str, Span, dict[str, Any]]]
    setup: Callable[[Store], None] = lambda store: None
    extra: dict[str, Any] = field(default_factory=dict)


def _over_cap_text(n: int) -> str:
    return "".join(f'[[rules]]\ntext = "rule number {i}"\nid = "r-{i}"\n\n' for i in range(n))


def _user_rule(store: Store, text: str) -> None:
    store.write("behavior", "user", f'[[rules]]\ntext = "{text}"\n')


def _pending(store: Store, pid: str) -> None:
    before = [rule("Ask first", "r-1")]
    store.proposal(pid, [*before, rule("Keep replies short", "r-2")], rules_before=before)


def _long_rule() -> str:
    words = " ".join(f"word{i}" for i in range(RULES_CHAR_BUDGET // 6 + 20))
    return f'# one long rule\n[[rules]]\ntext = "{words}"\n'


CASES: dict[str, Case] = {
    "toml-syntax": Case(
        "behavior",
        "user",
        '# my rules\n[[rules]]\ntext = "Ask first"\nenabled = tru\n',
        # tomllib: "Invalid value (at line 4, column 11)" → 0-based (3, 10), one character
        [("toml-syntax", (3, 10, 3, 11), {"domain": "behavior"})],
    ),
    "toml-syntax-utf16": Case(
        "behavior",
        "user",
        '[[rules]]\ntext = "Smile 😀" oops\n',
        # tomllib counts code points (column 18); LSP counts UTF-16 units: the emoji is two
        [("toml-syntax", (1, 18, 1, 19), {"domain": "behavior"})],
    ),
    "invalid-value": Case(
        "behavior",
        "user",
        rules_toml('text = "Ask first"\nenabled = "yes"\n'),
        [("invalid-value", (2, 10, 2, 15), {"domain": "behavior", "rule_index": 0, "key": "enabled"})],
    ),
    "unknown-key": Case(
        "behavior",
        "user",
        'title = "mine"\n\n' + rules_toml('text = "Ask first"\ncolour = "blue"\n'),
        [
            ("unknown-key", (0, 0, 0, 14), {"domain": "behavior", "key": "title"}),
            ("unknown-key", (4, 0, 4, 15), {"domain": "behavior", "rule_index": 0, "key": "colour"}),
        ],
    ),
    "missing-text": Case(
        "behavior",
        "user",
        rules_toml("enabled = true\n", 'text = ""\n'),
        [
            # no `text`: the whole rule, header through its last key
            ("missing-text", (0, 0, 1, 14), {"domain": "behavior", "rule_index": 0}),
            # an empty one: on the value
            ("missing-text", (4, 7, 4, 9), {"domain": "behavior", "rule_index": 1}),
        ],
    ),
    "duplicate-rule": Case(
        "behavior",
        "learned",
        rules_toml('text = "Never edit reports/."\nid = "r-1"\n', 'text = "never edit  reports/"\nid = "r-2"\n'),
        [("duplicate-rule", (4, 0, 6, 10), {"domain": "behavior", "rule_index": 1, "rule_id": "r-2"})],
    ),
    "restates-user-rule": Case(
        "behavior",
        "learned",
        rules_toml('text = "Keep replies short"\nid = "r-0"\n', 'text = "answer in english."\nid = "r-1"\n'),
        [("restates-user-rule", (4, 0, 6, 10), {"domain": "behavior", "rule_index": 1, "rule_id": "r-1"})],
        setup=lambda store: _user_rule(store, "Answer in English"),
    ),
    "over-cap": Case(
        "behavior",
        "learned",
        _over_cap_text(MAX_ACTIVE_RULES_PER_DOMAIN + 2),
        # on each rule past the cap, and only those
        [
            ("over-cap", (60, 0, 62, 11), {"domain": "behavior", "rule_id": "r-15", "active": 16, "cap": 15}),
            ("over-cap", (64, 0, 66, 11), {"domain": "behavior", "rule_id": "r-16", "active": 17, "cap": 15}),
        ],
    ),
    "over-char-budget": Case(
        "behavior",
        "user",
        _long_rule(),
        [("over-char-budget", (0, 0, 0, 15), {"domain": "behavior", "budget": RULES_CHAR_BUDGET})],
    ),
    "retired-enabled": Case(
        "behavior",
        "learned",
        rules_toml(
            'text = "Ask first"\nid = "r-1"\nenabled = true\n'
            'retired_at = "2026-01-10T00:00:00Z"\nretired_reason = "hurt more than helped"\n'
        ),
        [("retired-enabled", (3, 0, 3, 14), {"domain": "behavior", "rule_id": "r-1"})],
    ),
    "attributed-regressions": Case(
        "behavior",
        "learned",
        rules_toml('text = "Ask first"\nid = "r-1"\n', 'text = "Skip the tests"\nid = "r-2"\n'),
        [("attributed-regressions", (4, 0, 6, 10), {"domain": "behavior", "rule_id": "r-2", "count": 2})],
        setup=lambda store: store.regressions("r-2", 2),
    ),
    "unrouted-domain": Case(
        "zeta",
        "user",
        '# zeta rules\n[[rules]]\ntext = "Ask first"\n',
        [("unrouted-domain", (0, 0, 0, 12), {"domain": "zeta"})],
    ),
    "pending-proposal": Case(
        "behavior",
        "learned",
        '# learned\n[[rules]]\ntext = "Ask first"\nid = "r-1"\n',
        [("pending-proposal", (0, 0, 0, 9), {"domain": "behavior", "proposal_id": "p-1"})],
        setup=lambda store: _pending(store, "p-1"),
    ),
}


def assert_expected(diags: list[lsp.Diagnostic], case: Case) -> None:
    assert codes(diags) == sorted(code for code, _, _ in case.expected), [(d.code, span(d), d.message) for d in diags]
    for code, where, data in case.expected:
        matches = [d for d in diags if d.code == code and span(d) == where]
        assert matches, f"no {code} at {where}: got {[(d.code, span(d)) for d in diags]}"
        d = matches[0]
        assert d.source == "mecha"
        assert d.severity == SEVERITY[code], (code, d.severity)
        assert d.message
        assert isinstance(d.data, dict)
        for key, value in data.items():
            assert d.data.get(key) == value, (code, key, d.data)


def reset(store: Store) -> None:
    """Back to an empty store: no rules files, proposals or ledger rows."""
    for sub in ("rules", "proposals"):
        for path in (store.root / sub).glob("*"):
            path.unlink()
    (store.root / "validations.jsonl").unlink(missing_ok=True)


async def test_every_code_on_open_at_the_rules_own_range(client: MechaClient, store: Store) -> None:
    """One server per profile for all the codes: each case in a reset store,
    its document opened, checked and closed; every failing case reported."""
    failures: dict[str, str] = {}
    for name, case in CASES.items():
        reset(store)
        case.setup(store)
        path = store.write(case.domain, case.kind, case.text)
        uri, diags = await client.open(path)
        try:
            assert_expected(diags, case)
        except AssertionError as e:
            failures[name] = str(e)
        since = client.mark()
        closed = lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        client.text_document_did_close(closed)
        await client.wait_diagnostics(uri, since=since, where=lambda d: not d, what="the clear on didClose")
    assert not failures, "\n".join(f"{name}: {why}" for name, why in failures.items())
    assert {name.removesuffix("-utf16") for name in CASES} == set(SEVERITY)


async def test_a_clean_routed_file_has_no_diagnostics(client: MechaClient, store: Store) -> None:
    store.write("behavior", "user", '# mine\n[[rules]]\ntext = "Answer in English"\n')
    path = store.learned("behavior", [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2")])
    _, diags = await client.open(path)
    assert diags == []
    _, diags = await client.open(store.path("behavior", "user"))
    assert diags == []


async def test_a_toml_file_outside_the_rules_folder_gets_nothing(client: MechaClient, store: Store) -> None:
    other = store.root / "notes.toml"
    other.write_text("this = is not [ toml\n")
    nested = store.root / "rules" / "old" / "behavior.user.toml"
    nested.parent.mkdir(parents=True)
    nested.write_text("this = is not [ toml\n")
    # Opened or not, such a file is never a rules document: nothing
    # published for it, or an empty set.
    for path in (other, nested):
        uri = path.as_uri()
        since = client.mark()
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=uri, language_id="toml", version=1, text=path.read_text())
            )
        )
        # a rules file opened after it is answered, so anything for `path` has arrived by then
        await client.open(store.write("behavior", "user", '[[rules]]\ntext = "x"\n'))
        assert all(not p.diagnostics for p in client.published[since:] if p.uri == uri)


async def test_did_change_introduces_and_fixes_problems(client: MechaClient, store: Store) -> None:
    clean = '# mine\n[[rules]]\ntext = "Ask first"\n'
    uri, diags = await client.open(store.write("behavior", "user", clean))
    assert diags == []

    broken = '# mine\n[[rules]]\ntext = "Ask first\n'
    diags = await client.change(uri, broken)
    assert [(d.code, span(d)) for d in diags] == [("toml-syntax", (2, 17, 2, 17))]

    dup = clean + '\n[[rules]]\ntext = "ask first."\n'
    diags = await client.change(uri, dup)
    assert [(d.code, span(d)) for d in diags] == [("duplicate-rule", (4, 0, 5, 19))]

    typo = clean.replace('text = "Ask first"', 'text = "Ask first"\nenabeld = false')
    diags = await client.change(uri, typo)
    assert [(d.code, span(d)) for d in diags] == [("unknown-key", (3, 0, 3, 15))]

    diags = await client.change(uri, clean)
    assert diags == []
    # each publish is for the version it checked
    assert client.published[-1].version == client.versions[uri]


async def test_did_save_publishes_for_the_saved_text(client: MechaClient, store: Store) -> None:
    path = store.write("behavior", "user", '[[rules]]\ntext = "Ask first"\n')
    uri, diags = await client.open(path)
    assert diags == []
    # Saving with nothing changed on disk still answers with the diagnostics.
    since = client.mark()
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert await client.wait_diagnostics(uri, since=since, what="diagnostics after didSave") == []

    await client.change(uri, '[[rules]]\ntext = "Ask first"\nenabled = 1\n')
    diags = await client.save(uri, path)
    assert [(d.code, span(d)) for d in diags] == [("invalid-value", (2, 10, 2, 11))]


async def test_a_sibling_saved_to_disk_rechecks_the_open_learned_file(client: MechaClient, store: Store) -> None:
    user = store.write("behavior", "user", '[[rules]]\ntext = "Answer in French"\n')
    learned = store.learned("behavior", [rule("Answer in English", "r-1")])
    luri, diags = await client.open(learned)
    assert diags == []
    uuri, _ = await client.open(user)

    # The person edits and saves their own file: the learned rule now restates it.
    await client.change(uuri, '[[rules]]\ntext = "Answer in English"\n')
    since = client.mark()
    await client.save(uuri, user)
    diags = await client.wait_diagnostics(luri, since=since, where=has_code("restates-user-rule"))
    lines = learned.read_text().splitlines()
    header, last = lines.index("[[rules]]"), len(lines) - 1
    assert [(d.code, span(d)) for d in diags] == [("restates-user-rule", (header, 0, last, len(lines[last])))]


async def test_an_unsaved_sibling_edit_rechecks_the_other_open_file(client: MechaClient, store: Store) -> None:
    """An open file is checked against its open sibling's buffer, so an edit
    there (unsaved) rechecks it; closing the sibling unsaved goes back to disk."""
    user = store.write("behavior", "user", '[[rules]]\ntext = "Answer in French"\n')
    learned = store.learned("behavior", [rule("Answer in English", "r-1")])
    luri, diags = await client.open(learned)
    assert diags == []
    uuri, _ = await client.open(user)

    since = client.mark()
    await client.change(uuri, '[[rules]]\ntext = "Answer in English"\n')
    diags = await client.wait_diagnostics(luri, since=since, where=has_code("restates-user-rule"))
    assert [d.code for d in diags] == ["restates-user-rule"]

    since = client.mark()
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uuri)))
    assert await client.wait_diagnostics(luri, since=since, where=lambda d: not d) == []


async def test_a_proposal_written_to_disk_publishes_without_an_edit(client: MechaClient, store: Store) -> None:
    learned = store.learned("behavior", [rule("Ask first", "r-1")])
    uri, diags = await client.open(learned)
    assert diags == []

    since = client.mark()
    store.proposal("p-disk", [rule("Ask first", "r-1"), rule("Keep replies short", "r-2")])
    diags = await client.wait_diagnostics(uri, since=since, where=has_code("pending-proposal"))
    assert [(d.code, d.data["proposal_id"]) for d in diags] == [("pending-proposal", "p-disk")]
    assert client.published[-1].version == 1, "no edit was made: the same version, rechecked"


async def test_a_ledger_append_publishes_attributed_regressions(client: MechaClient, store: Store) -> None:
    learned = store.learned("behavior", [rule("Ask first", "r-1"), rule("Skip the tests", "r-2")])
    uri, diags = await client.open(learned)
    assert diags == []
    since = client.mark()
    store.regressions("r-1", 1)
    diags = await client.wait_diagnostics(uri, since=since, where=has_code("attributed-regressions"))
    assert [(d.code, d.data["rule_id"], d.data["count"]) for d in diags] == [("attributed-regressions", "r-1", 1)]


async def test_an_accept_from_the_cli_republishes_open_documents(client: MechaClient, store: Store) -> None:
    # behavior: the learned file is open with a pending proposal on it.
    learned = store.learned("behavior", [rule("Ask first", "r-1")])
    store.proposal("p-cli", [rule("Ask first", "r-1"), rule("Keep replies short", "r-2")])
    # writing: the person's own long rule leaves just enough room, and the
    # proposal's new learned rule pushes the domain over the budget.
    long_text = "x" * (RULES_CHAR_BUDGET - 60)
    user = store.write("writing", "user", f'# mine\n[[rules]]\ntext = "{long_text}"\n')
    store.proposal(
        "p-budget",
        [rule("Always explain every single step you take, in full detail", "w-1")],
        domain="writing",
        rules_before=[],
    )

    luri, ldiags = await client.open(learned)
    assert codes(ldiags) == ["pending-proposal"]
    uuri, udiags = await client.open(user)
    assert udiags == []

    # No edit in the editor: the store changes under it, and it is rechecked.
    since = client.mark()
    done = await store.cli("proposals", "accept", "p-cli")
    assert done.returncode == 0, done.stderr
    assert await client.wait_diagnostics(luri, since=since, where=lacks("pending-proposal")) == []
    assert store.status("p-cli") == "accepted"

    since = client.mark()
    done = await store.cli("proposals", "accept", "p-budget")
    assert done.returncode == 0, done.stderr
    udiags = await client.wait_diagnostics(uuri, since=since, where=has_code("over-char-budget"))
    assert [(d.code, span(d)) for d in udiags] == [("over-char-budget", (0, 0, 0, 6))]
    assert udiags[0].data["chars"] > RULES_CHAR_BUDGET
