"""The hover on a rule: who it is, where it came from (the reflections'
lessons and triggers, not bare ids), what the ledger measured, and its
retirement."""

from __future__ import annotations

from lsprotocol import types as lsp

from .conftest import MechaClient, Store

LEARNED = """\
# Learned rules for behavior.

# asked for twice
[[rules]]
text = "Ask before deleting files"
id = "r-ask"
confidence = 0.85
based_on_count = 2
sources = ["refl-1", "refl-2", "refl-gone"]
created_at = "2026-01-02T03:04:05Z"

[[rules]]
text = "Run the whole test suite after every edit"
id = "r-tests"
created_at = "2025-12-01T00:00:00Z"
retired_at = "2026-01-12T08:00:00Z"
retired_reason = "regressed two probes in a row"
"""


def value(h: lsp.Hover | None) -> str:
    assert h is not None, "no hover"
    assert isinstance(h.contents, lsp.MarkupContent)
    assert h.contents.kind == lsp.MarkupKind.Markdown
    return h.contents.value


async def test_hover_shows_identity_lineage_ledger_and_retirement(client: MechaClient, store: Store) -> None:
    store.reflexion("refl-1", "Ask the person before removing anything from disk.", trigger="denial")
    store.reflexion("refl-2", "Confirm   deletions first,\nalways.", trigger="steer")
    store.observe("r-ask", "improved", at="2026-01-05T10:00:00Z")
    store.observe("r-ask", "regressed", at="2026-01-07T10:00:00Z")
    store.regressions("r-ask", 1, at="2026-01-06T10:00:00Z")
    path = store.write("behavior", "learned", LEARNED)
    uri, _ = await client.open(path)

    text = value(await client.hover(uri, 4, 12))  # on the `text` line
    assert "`r-ask`" in text and "Learned rule" in text and "`behavior`" in text and "active" in text
    assert "created 2026-01-02T03:04:05Z" in text
    assert "confidence 0.85" in text
    assert "based on 2 reflections" in text
    # Sources as what happened — the trigger, the person's words, the
    # session — and the lesson drawn, not as bare reflection ids.
    assert "- [denial] “about refl-1: Ask the person before removing anything from disk.” (session s-refl-1)" in text
    assert "— lesson: Ask the person before removing anything from disk." in text
    assert "- [steer] “about refl-2: Confirm deletions first, always.” (session s-refl-2) — lesson: Confirm deletions first, always." in text
    assert "- refl-1" not in text and "- refl-2" not in text
    assert "- refl-gone (not on record)" in text
    # The ledger: 3 observations (two plain, one bisection), 1 improved,
    # 2 regressed, 1 attributed, last validated the newest row.
    assert (
        "**Measured**: rode in 3 probes on scripted-model: 1 improved, 2 regressed, 1 attributed regression"
        " · last validated 2026-01-07T10:00:00Z"
    ) in text
    assert "Retired" not in text

    # Anywhere in the rule answers for it: its header, its comment above.
    assert value(await client.hover(uri, 3)) == text
    assert value(await client.hover(uri, 2)) == text

    retired = value(await client.hover(uri, 13))
    assert "`r-tests`" in retired and "retired" in retired
    assert "**Retired** 2026-01-12T08:00:00Z: regressed two probes in a row" in retired
    assert "**Measured**: not measured yet" in retired

    # Between rules, and on the file's own header comment, there is nothing to say.
    assert await client.hover(uri, 10) is None
    assert await client.hover(uri, 0) is None


async def test_hover_follows_the_buffer_and_the_store(client: MechaClient, store: Store) -> None:
    path = store.write("behavior", "user", '[[rules]]\ntext = "Answer in English"\n')
    uri, _ = await client.open(path)
    text = value(await client.hover(uri, 1))
    assert "Your rule" in text and "1 (no id)" in text

    # An unsaved edit is what the hover reads.
    await client.change(uri, '[[rules]]\ntext = "Answer in English"\nid = "u-1"\nenabled = false\n')
    text = value(await client.hover(uri, 1))
    assert "`u-1`" in text and "disabled" in text
    assert "**Measured**: not measured yet" in text

    # A ledger row appended on disk shows at the next hover.
    store.observe("u-1", "improved", at="2026-02-01T00:00:00Z")
    text = value(await client.hover(uri, 1))
    assert "rode in 1 probe on scripted-model: 1 improved, 0 regressed · last validated 2026-02-01T00:00:00Z" in text

    # A table that does not decode gets no hover (its diagnostics say why).
    await client.change(uri, '[[rules]]\nenabled = "no"\n')
    assert await client.hover(uri, 1) is None


async def test_hover_on_a_learned_rule_says_its_record_in_the_persons_sessions(client: MechaClient, store: Store) -> None:
    # Pins: a rule the person keeps correcting shown in the editor as if
    # nothing had happened since it was learned.
    from mecha.core.domain.record import Repeat

    with store.store.lock():
        store.store.append_repeats([Repeat(
            rule_id="r-ask", domain="behavior", session_id="claude:s-7", text="You deleted the folder again!",
            at=4, created_at="2026-01-09T10:00:00.000000Z",
        )])
    uri, _ = await client.open(store.write("behavior", "learned", LEARNED))
    text = value(await client.hover(uri, 4, 12))
    assert "**In your sessions** live " in text
    assert "corrected again 1× (last: " in text and "'You deleted the folder again!'" in text
    assert "**In your sessions**" not in value(await client.hover(uri, 13))  # a retired rule has no record
