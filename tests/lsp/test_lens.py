"""The code lens at the top of a rules file, and the refresh the server asks
for when proposals come and go — only from a client that supports it."""

from __future__ import annotations

import asyncio

from lsprotocol import types as lsp

from mecha.core.domain.rules import MAX_ACTIVE_RULES_PER_DOMAIN, RULES_CHAR_BUDGET, domain_rules_section
from tests.builders import rule

from .conftest import MechaClient, Store

USER = [rule("Answer in English")]
LEARNED = [
    rule("Ask before deleting files", "r-1"),
    rule("Keep replies short", "r-2"),
    rule("Use metric units", "r-3"),
    rule("Quote the error message verbatim", "r-4", enabled=False),
    rule("Run every test after each edit", "r-5", retired_at="2026-01-10T00:00:00Z", retired_reason="regressed"),
]


def titles(lenses: list[lsp.CodeLens]) -> list[str]:
    return [lens.command.title for lens in lenses if lens.command is not None]


async def settled(client: MechaClient) -> None:
    """The server's first look at the store (it tells the client the pending
    count once at start) has happened."""
    await client.event("mecha/proposalsChanged", since=0)


async def test_lens_shows_active_rules_chars_and_pending_proposals(client: MechaClient, store: Store) -> None:
    user = store.write("behavior", "user", '[[rules]]\ntext = "Answer in English"\n')
    learned = store.learned("behavior", LEARNED)
    chars = len(domain_rules_section("behavior", USER, LEARNED) or "")
    uri, _ = await client.open(learned)

    lenses = await client.lenses(uri)
    assert titles(lenses) == [
        f"3/{MAX_ACTIVE_RULES_PER_DOMAIN} active rules", f"{chars}/{RULES_CHAR_BUDGET} chars", "scope: global"
    ]
    assert (MAX_ACTIVE_RULES_PER_DOMAIN, RULES_CHAR_BUDGET) == (15, 1600)
    for lens in lenses:
        assert lens.range.start.line == 0 and lens.range.end.line == 0
        assert lens.command is not None and lens.command.command == "mecha.showRulesBlock"
        assert list(lens.command.arguments or []) == ["behavior"]
    # The lens's command is the rules block, as `mecha/rulesPromptBlock` has it.
    shown = await client.command("mecha.showRulesBlock", *lenses[0].command.arguments)  # type: ignore[union-attr]
    assert shown == await client.request("mecha/rulesPromptBlock", {"domain": "behavior"})
    assert "### behavior\n- Answer in English\n- Ask before deleting files" in shown["block"]

    # The same counts on the person's own file: they are the domain's.
    uuri, _ = await client.open(user)
    assert titles(await client.lenses(uuri)) == titles(lenses)

    # Pending proposals appear as a third lens, whose command lists them.
    await settled(client)
    events = client.event_mark()
    store.proposal("p-1", [*LEARNED, rule("Sign with the first name", "r-6")])
    await client.event("mecha/proposalsChanged", since=events, where=lambda p: p["pending"] == 1)
    lenses = await client.lenses(uri)
    assert titles(lenses)[2] == "1 pending proposal"
    pending = lenses[2].command
    assert pending is not None and pending.command == "mecha.listProposals"
    listed = await client.command(pending.command, *(pending.arguments or []))
    assert [p["id"] for p in listed["proposals"]] == ["p-1"]

    events = client.event_mark()
    store.proposal("p-2", [*LEARNED, rule("Sign with the full name", "r-7")])
    await client.event("mecha/proposalsChanged", since=events, where=lambda p: p["pending"] == 2)
    assert titles(await client.lenses(uri))[2] == "2 pending proposals"
    assert titles(await client.lenses(uuri))[2] == "2 pending proposals"


async def test_lens_follows_the_unsaved_buffer(client: MechaClient, store: Store) -> None:
    learned = store.learned("behavior", LEARNED[:3])
    uri, _ = await client.open(learned)
    assert titles(await client.lenses(uri))[0] == "3/15 active rules"
    await client.change(uri, learned.read_text().replace("enabled = true", "enabled = false", 1))
    got = titles(await client.lenses(uri))
    chars = len(domain_rules_section("behavior", [], LEARNED[1:3]) or "")
    assert got == ["2/15 active rules", f"{chars}/1600 chars", "scope: global"]


async def test_a_proposal_appearing_asks_for_a_lens_refresh_if_the_client_supports_it(
    client: MechaClient, store: Store
) -> None:
    learned = store.learned("behavior", LEARNED[:1])
    uri, _ = await client.open(learned)
    await settled(client)

    events = client.event_mark()
    store.proposal("p-new", [*LEARNED[:1], rule("Keep replies short", "r-2")])
    changed = await client.event("mecha/proposalsChanged", since=events, where=lambda p: p["pending"] == 1)
    assert changed == {"pending": 1, "by_domain": {"behavior": 1}}
    await check_refresh(client, since=events)

    # Resolved from elsewhere (the CLI): the same again, back to none pending.
    events = client.event_mark()
    done = await store.cli("proposals", "reject", "p-new")
    assert done.returncode == 0, done.stderr
    changed = await client.event("mecha/proposalsChanged", since=events, where=lambda p: p["pending"] == 0)
    assert changed == {"pending": 0, "by_domain": {}}
    await check_refresh(client, since=events)
    chars = len(domain_rules_section("behavior", [], LEARNED[:1]) or "")
    assert titles(await client.lenses(uri)) == ["1/15 active rules", f"{chars}/1600 chars", "scope: global"]


async def check_refresh(client: MechaClient, *, since: int) -> None:
    if client.supports_lens_refresh:
        assert client.profile == "visual-studio-code"
        await client.event(lsp.WORKSPACE_CODE_LENS_REFRESH, since=since)
    else:
        # Neovim 0.11 declares no `workspace.codeLens.refreshSupport`: the
        # server must not ask. Give a wrongly sent request time to arrive.
        assert client.profile == "neovim"
        await asyncio.sleep(0.5)
        assert client.events_of(lsp.WORKSPACE_CODE_LENS_REFRESH, since) == []
