"""The `mecha/*` methods on the editor endpoint go through the harness
endpoint's handlers: the same results, the same errors (code, message and
data) for the same store. And LSP's own methods answer bad params with
-32602 naming the field, where pygls alone would drop the request."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.builders import rule
from tests.wire.client import Sidecar

from .conftest import MechaClient, Store, server_env

COMMANDS = [
    "mecha.acceptProposal",
    "mecha.rejectProposal",
    "mecha.showProposalDiff",
    "mecha.listProposals",
    "mecha.learnNow",
    "mecha.proposeRetirement",
    "mecha.showRulesBlock",
]


@pytest.fixture
def harness(store: Store) -> Iterator[Sidecar]:
    """The harness endpoint (`mecha-sidecar` on stdio) over the same store."""
    sidecar = Sidecar(env=server_env(), cwd=store.root, learning_dir=store.root)
    try:
        sidecar.initialize()
        yield sidecar
    finally:
        sidecar.close()


async def harness_reply(harness: Sidecar, method: str, params: Any) -> dict[str, Any]:
    return await asyncio.to_thread(lambda: harness.response(harness.request(method, params)))


async def lsp_error(client: MechaClient, method: str, params: Any) -> dict[str, Any]:
    with pytest.raises(JsonRpcException) as caught:
        await client.raw_request(method, params)
    e = caught.value
    return {"code": e.code, "message": e.message, **({"data": e.data} if e.data is not None else {})}


def fill(store: Store) -> None:
    store.write("behavior", "user", '[[rules]]\ntext = "Answer in English"\n')
    store.learned("behavior", [rule("Ask before deleting files", "r-1"), rule("Keep replies short", "r-2")])
    store.regressions("r-2", 1)
    store.observe("r-1", "improved")
    store.proposal("p-1", [rule("Ask before deleting files", "r-1")])


async def test_initialize_advertises_the_contracts_features(client: MechaClient) -> None:
    caps = client.initialize_result.capabilities
    assert caps.execute_command_provider is not None
    assert set(COMMANDS) <= set(caps.execute_command_provider.commands)
    assert caps.hover_provider
    assert caps.code_lens_provider is not None
    assert isinstance(caps.code_action_provider, lsp.CodeActionOptions)
    assert set(caps.code_action_provider.code_action_kinds or []) >= {
        lsp.CodeActionKind.QuickFix,
        lsp.CodeActionKind.Source,
    }
    sync = caps.text_document_sync
    assert sync == lsp.TextDocumentSyncKind.Full or (
        isinstance(sync, lsp.TextDocumentSyncOptions) and sync.change == lsp.TextDocumentSyncKind.Full
    )


REPRESENTATIVE: list[tuple[str, dict[str, Any]]] = [
    ("mecha/rulesPromptBlock", {}),
    ("mecha/rulesPromptBlock", {"domain": "triage"}),
    ("mecha/proposals", {"status": "pending"}),
    ("mecha/proposal", {"id": "p-1"}),
    ("mecha/ruleTallies", {"domain": "behavior"}),
]

FAILING: list[tuple[str, dict[str, Any], int]] = [
    ("mecha/proposal", {"id": "no-such-proposal"}, -31001),
    ("mecha/acceptProposal", {"id": "no-such-proposal"}, -31001),
    ("mecha/proposeRetirement", {"domain": "behavior", "rule_id": "r-9", "reason": "x"}, -31001),
    ("mecha/rulesPromptBlock", {"domain": "../etc"}, -31006),
    ("mecha/learn", {"domain": "Not A Domain"}, -31006),
    ("mecha/acceptProposal", {"id": "p-0"}, -31003),
    ("mecha/proposal", {"id": 5}, -32602),
    ("mecha/learn", {}, -32602),
    ("mecha/frobnicate", {}, -32601),
]


async def test_mecha_methods_answer_as_the_harness_endpoint_does(
    client: MechaClient, store: Store, harness: Sidecar
) -> None:
    fill(store)
    for method, params in REPRESENTATIVE:
        got = await client.raw_request(method, params)
        want = await harness_reply(harness, method, params)
        assert "result" in want, (method, want)
        assert got == want["result"], method
        assert got, f"{method}: a representative call returns something"


async def test_errors_surface_identically(client: MechaClient, store: Store, harness: Sidecar) -> None:
    fill(store)
    # A proposal made against rules that have moved since: Stale.
    store.proposal("p-0", [rule("Something else", "r-9")], rules_before=[])
    for method, params, code in FAILING:
        got = await lsp_error(client, method, params)
        want = (await harness_reply(harness, method, params))["error"]
        assert got["code"] == code, (method, params, got)
        assert got == want, (method, params)


async def test_commands_run_the_same_handlers_and_fail_the_same_way(
    client: MechaClient, store: Store, harness: Sidecar
) -> None:
    fill(store)
    listed = await client.command("mecha.listProposals", {"status": "pending"})
    method = (await harness_reply(harness, "mecha/proposals", {"status": "pending"}))["result"]
    # The method's listing as it is, and the server's summary of each.
    assert listed["proposals"] == method["proposals"]
    assert [s["id"] for s in listed["summaries"]] == [p["id"] for p in method["proposals"]]
    block = await client.command("mecha.showRulesBlock")
    assert block == (await harness_reply(harness, "mecha/rulesPromptBlock", {}))["result"]

    async def command_error(name: str, *args: Any) -> dict[str, Any]:
        return await lsp_error(client, lsp.WORKSPACE_EXECUTE_COMMAND, {"command": name, "arguments": list(args)})

    not_found = await command_error("mecha.acceptProposal", "no-such-proposal")
    assert not_found == (await harness_reply(harness, "mecha/acceptProposal", {"id": "no-such-proposal"}))["error"]
    assert not_found["code"] == -31001 and not_found["data"] == {"name": "NotFound"}
    bad_domain = await command_error("mecha.learnNow", "../etc")
    assert bad_domain == (await harness_reply(harness, "mecha/learn", {"domain": "../etc"}))["error"]
    assert bad_domain["code"] == -31006 and bad_domain["data"] == {"name": "InvalidDomain"}

    # Arguments of the wrong shape name the argument.
    wrong = await command_error("mecha.acceptProposal", 5)
    assert wrong["code"] == -32602 and "argument 0 (id)" in wrong["message"]
    missing = await command_error("mecha.proposeRetirement", "behavior", "r-2")
    assert missing["code"] == -32602 and "argument 2 (reason)" in missing["message"]
    not_list = await lsp_error(
        client, lsp.WORKSPACE_EXECUTE_COMMAND, {"command": "mecha.learnNow", "arguments": "behavior"}
    )
    assert not_list["code"] == -32602 and "arguments" in not_list["message"]
    unknown = await command_error("mecha.frobnicate")
    assert unknown["code"] == -32601 and "mecha.frobnicate" in unknown["message"]


BAD_LSP_PARAMS: list[tuple[str, dict[str, Any], str]] = [
    (
        lsp.TEXT_DOCUMENT_HOVER,
        {"textDocument": {"uri": "file:///x.toml"}, "position": {"line": "two", "character": 0}},
        "position.line",
    ),
    (lsp.TEXT_DOCUMENT_HOVER, {"textDocument": {"uri": "file:///x.toml"}}, "position"),
    (
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        {
            "textDocument": {"uri": "file:///x.toml"},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0}},
            "context": {"diagnostics": []},
        },
        "range.end.character",
    ),
    # The wire's names, not lsprotocol's attributes (`text_document`).
    (lsp.TEXT_DOCUMENT_CODE_LENS, {"textDocument": {}}, "$.params.textDocument.uri"),
]


async def test_bad_params_to_an_lsp_method_get_invalid_params_naming_the_field(
    client: MechaClient, store: Store
) -> None:
    for method, params, field in BAD_LSP_PARAMS:
        got = await lsp_error(client, method, params)
        assert got["code"] == -32602, (method, got)
        assert field in got["message"], (method, got)
    # And the server keeps serving.
    uri, _ = await client.open(store.write("behavior", "user", '[[rules]]\ntext = "Answer in English"\n'))
    assert await client.hover(uri, 1) is not None
