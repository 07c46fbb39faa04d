"""The editor endpoint as any LSP client meets it: one that has never heard
of our extensions (eglot, lsp-mode, Helix, Zed) says nothing under
`capabilities.experimental`, drops what a command returns, and warns on
every notification it does not know.

Such a client gets LSP alone: no `mecha/*` notification, a review's outcome
as `window/showMessage`, and a proposal's diff as a real file it is asked to
open (`window/showDocument`), or as a message when it cannot open one. Our
own clients (the profiles' default here, see `conftest.client`) get none of
those, or they would show everything twice.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from mecha.protocol.commands import ClientExtensions, client_extensions
from tests.builders import rule

from .conftest import SERVER_COMMAND, MechaClient, Store, server_env


def _any_client(capabilities: lsp.ClientCapabilities) -> None:
    capabilities.experimental = None


def _any_client_without_show_document(capabilities: lsp.ClientCapabilities) -> None:
    capabilities.experimental = None
    assert capabilities.window is not None
    capabilities.window.show_document = None


ANY_CLIENT = pytest.mark.capabilities.with_args(_any_client)
NO_SHOW_DOCUMENT = pytest.mark.capabilities.with_args(_any_client_without_show_document)


async def settle() -> None:
    """Long enough for several store polls (0.1 s each here)."""
    await asyncio.sleep(0.5)


def test_only_a_client_that_names_an_extension_gets_it() -> None:
    # Pins: the notifications went to every client; lsp-mode raised a
    # warning window on each one.
    assert client_extensions(None) == ClientExtensions()
    assert client_extensions({"other": {"notifications": True}}) == ClientExtensions()
    assert client_extensions({"mecha": {"notifications": True}}) == ClientExtensions(notifications=True)
    assert client_extensions({"mecha": {"notifications": True, "showsResults": True}}) == ClientExtensions(True, True)
    # A shape this server does not read gives nothing, not a failed initialize.
    assert client_extensions({"mecha": {"notifications": "yes"}}) == ClientExtensions()
    assert client_extensions({"mecha": True}) == ClientExtensions()


@ANY_CLIENT
async def test_any_client_hears_no_mecha_notification(client: MechaClient, store: Store) -> None:
    learned = store.learned("behavior", [rule("Ask before deleting files", "r-1")])
    uri, _ = await client.open(learned)
    events = client.event_mark()
    store.proposal("p-new", [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2")])
    await client.wait_diagnostics(uri, since=0, where=lambda d: any(x.code == "pending-proposal" for x in d))
    await client.command("mecha.acceptProposal", "p-new")
    await settle()
    assert [m for m, _ in client.events if m.startswith("mecha/")] == [], client.events[events:]


@ANY_CLIENT
async def test_accept_reject_and_retire_confirm_through_show_message(client: MechaClient, store: Store) -> None:
    store.learned("behavior", [rule("Ask before deleting files", "r-1")])
    store.proposal("p-acc", [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2")])
    store.proposal("p-rej", [rule("Ask before deleting files", "r-1"), rule("Say hello first", "r-3")])

    accepted = await client.command("mecha.acceptProposal", "p-acc")
    shown = await client.until(lambda: list(client.messages), "a showMessage after the accept")
    assert [m.message for m in shown] == [f"mecha: {accepted['message']}"]
    assert shown[0].type == lsp.MessageType.Info
    assert "accepted proposal p-acc" in shown[0].message and "2 active learned rules" in shown[0].message

    await client.command("mecha.rejectProposal", "p-rej", "not what I meant")
    await client.until(lambda: len(client.messages) == 2, "a showMessage after the rejection")
    assert client.messages[1].message == "mecha: rejected proposal p-rej"

    retired = await client.command("mecha.proposeRetirement", "behavior", "r-1", "it regressed twice")
    await client.until(lambda: len(client.messages) == 3, "a showMessage after the retirement")
    assert client.messages[2].message == f"mecha: {retired['message']}"
    assert retired["proposal"]["id"] in client.messages[2].message


@ANY_CLIENT
async def test_what_the_lenses_run_is_shown_as_a_message(client: MechaClient, store: Store) -> None:
    # Pins: lsp-mode shows the code lenses, and clicking one showed nothing
    # (the rules block, the proposals list and a learn pass's start are
    # command results, which it drops).
    learned = store.learned("behavior", [rule("Ask before deleting files", "r-1")])
    store.proposal("p-lens", [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2")])
    uri, _ = await client.open(learned)
    lenses = {lens.command.command: lens.command for lens in await client.lenses(uri) if lens.command}

    block = lenses["mecha.showRulesBlock"]
    await client.command(block.command, *(block.arguments or []))
    (shown,) = await client.until(lambda: list(client.messages), "the rules block as a message")
    assert shown.message.startswith("mecha: the rules block a run gets:\n")
    assert "- Ask before deleting files" in shown.message

    listing = lenses["mecha.listProposals"]
    await client.command(listing.command, *(listing.arguments or []))
    await client.until(lambda: len(client.messages) == 2, "the proposals as a message")
    head, *rows = client.messages[1].message.split("\n")
    assert head.startswith("mecha: 1 proposal(s); review each from the code actions")
    assert rows == ["p-lens  behavior · 1 → 2 active rules"]

    await client.command("mecha.learnNow", "behavior")
    await client.until(lambda: len(client.messages) == 3, "a learn-now message")
    assert client.messages[2].message.startswith("mecha: no learn pass started: ")


async def test_our_clients_show_results_themselves_and_get_no_message_or_document(
    client: MechaClient, store: Store
) -> None:
    store.learned("behavior", [rule("Ask before deleting files", "r-1")])
    store.proposal("p-ours", [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2")])
    await client.command("mecha.showProposalDiff", "p-ours")
    await client.command("mecha.acceptProposal", "p-ours")
    await settle()
    assert client.messages == [] and client.shown_documents == []
    assert not (store.root / "cache" / "diffs").exists()


@ANY_CLIENT
async def test_show_diff_opens_the_diff_as_a_file_in_the_stores_cache(client: MechaClient, store: Store) -> None:
    store.learned("behavior", [rule("Ask before deleting files", "r-1")])
    store.proposal("p-diff", [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2")])
    result = await client.command("mecha.showProposalDiff", "p-diff")
    (shown,) = await client.until(lambda: list(client.shown_documents), "a showDocument of the diff")
    path = Path(to_fs_path(shown.uri) or "")
    assert path == store.root / "cache" / "diffs" / "p-diff.diff"
    assert shown.take_focus is True
    assert path.read_text(encoding="utf-8") == result["diff"]
    assert "+- Keep replies short" in result["diff"]
    assert path.stat().st_mode & 0o777 == 0o600
    # The client opened it: no message besides.
    await settle()
    assert client.messages == []
    # The cache is git-ignored: the store's history never holds a diff.
    status = subprocess.run(["git", "-C", str(store.root), "status", "--porcelain"], capture_output=True, text=True)
    assert "cache" not in status.stdout


@NO_SHOW_DOCUMENT
async def test_a_client_that_cannot_open_documents_is_shown_the_diff_as_a_message(
    client: MechaClient, store: Store
) -> None:
    store.learned("behavior", [rule("Ask before deleting files", "r-1")])
    store.proposal("p-msg", [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2")])
    result = await client.command("mecha.showProposalDiff", "p-msg")
    (message,) = await client.until(lambda: list(client.messages), "the diff as a message")
    path = store.root / "cache" / "diffs" / "p-msg.diff"
    first, _, rest = message.message.partition("\n")
    assert first == f"mecha: proposal p-msg (the diff is also in {path}):"
    assert rest == result["diff"].rstrip()
    assert path.read_text(encoding="utf-8") == result["diff"]
    assert client.shown_documents == []


def test_a_configuration_change_is_taken_without_a_word_on_stderr(tmp_path: Path) -> None:
    # Pins: "Ignoring notification for unknown method
    # 'workspace/didChangeConfiguration'" on stderr from every eglot and
    # lsp-mode session, which send it right after `initialized`.
    frames = b"".join(
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        for body in (
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},'
            b'"initializationOptions":{"learningDir":"' + str(tmp_path / "store").encode() + b'"}}}',
            b'{"jsonrpc":"2.0","method":"initialized","params":{}}',
            b'{"jsonrpc":"2.0","method":"workspace/didChangeConfiguration","params":{"settings":{"mecha":{}}}}',
            b'{"jsonrpc":"2.0","id":2,"method":"shutdown"}',
            b'{"jsonrpc":"2.0","method":"exit"}',
        )
    )
    done = subprocess.run(
        [*SERVER_COMMAND], input=frames, capture_output=True, timeout=60, env=server_env(), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b'"id":2' in done.stdout.replace(b" ", b"")
    assert done.stderr.decode().strip() == "", done.stderr.decode()
