"""Fixtures for the editor endpoint: the real `mecha-sidecar lsp` as a
subprocess, driven by pytest-lsp's client under two editors' captured
client capabilities (VS Code 1.65.2 and Neovim 0.11.0).

`client` is parametrized over both profiles, so every test that takes it
runs twice. Each test gets a private learning store (`store`) and a scripted
model server (`model`, answering reflector and learner prompts); both are
named in `initializationOptions`, so the server sees nothing of the machine
it runs on. The environment has no `MECHA_*` variable but a short store poll
(`MECHA_LSP_POLL_S`), so changes on disk show within a fraction of a second.

Every wait is bounded by `WAIT_S`: a server that stays silent fails the
test with what was seen, it never hangs the suite.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Union

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.checks import LspSpecificationWarning
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from mecha.core.domain.reflexion import Reflexion
from mecha.core.domain.rules import Rule
from mecha.core.store.layout import rules_file_name
from mecha.core.store.learning_store import LearningStore, Proposal
from mecha.core.store.ledger import REGRESSED, ValidationRecord
from mecha.protocol.commands import EXPERIMENTAL_KEY
from tests import builders
from tests.builders import write_learned_rules
from tests.model_server import ModelServer, lessons_responder
from tests.processes import wait_for_passes

#: The two editors every test runs under.
PROFILES = ["visual-studio-code", "neovim"]

#: The longest any single wait may take.
WAIT_S = 10.0

REPO = Path(__file__).resolve().parents[2]

#: `--stdio` is what `vscode-languageclient` appends; the server accepts it.
SERVER_COMMAND = [sys.executable, "-m", "mecha.sidecar", "lsp", "--stdio"]

WHEN = "2026-01-15T09:30:00Z"

# A HOME of the suite's own, so no server ever reads a person's ~/.mecha.
_HOME = Path(tempfile.mkdtemp(prefix="mecha-lsp-home-"))
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)


def server_env(**extra: str) -> dict[str, str]:
    """The environment of every process these tests start: no model source,
    no store of the machine's, a short poll of the store."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MECHA_") and k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")
    }
    env["HOME"] = str(_HOME)
    env["MECHA_SIDECAR_CONFIG"] = str(_HOME / "no-such-sidecar.toml")
    env["MECHA_LSP_POLL_S"] = "0.1"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def plain(value: Any) -> Any:
    """Plain JSON-like data. The client keeps custom payloads raw (see
    `_keep_custom_payloads_raw`); this also undoes pygls's namedtuples
    should one slip through."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


# ─── the client ─────────────────────────────────────────────────────────────


class MechaClient(LanguageClient):
    """pytest-lsp's client, recording everything a test waits on: every
    published diagnostics set in order, every server→client request and
    notification in one ordered log (`events`), and the documents it has
    open with their versions.

    Waiting is by position in those logs: take `mark()`/`event_mark()`
    *before* triggering, then wait for what arrived after it, so nothing
    sent between the trigger and the wait is missed."""

    profile: str
    store: Store
    initialize_result: lsp.InitializeResult

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.published: list[lsp.PublishDiagnosticsParams] = []
        #: `(method, params)` for every request and notification the server sent.
        self.events: list[tuple[str, Any]] = []
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}

    # ── capabilities of the profile ──

    @property
    def supports_lens_refresh(self) -> bool:
        ws = self.capabilities.workspace if self.capabilities else None
        return bool(ws and ws.code_lens and ws.code_lens.refresh_support)

    @property
    def supports_progress(self) -> bool:
        window = self.capabilities.window if self.capabilities else None
        return bool(window and window.work_done_progress)

    # ── waiting, always bounded ──

    async def until(self, check: Callable[[], Any], what: str | Callable[[], str], timeout: float = WAIT_S) -> Any:
        """Poll `check` until it returns something truthy; fail after
        `timeout`, saying `what` was awaited (called then, if a callable)."""

        async def poll() -> Any:
            while True:
                value = check()
                if value:
                    return value
                await asyncio.sleep(0.02)

        try:
            return await asyncio.wait_for(poll(), timeout)
        except TimeoutError:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {said}") from None

    def mark(self) -> int:
        """A point in the publish log; `wait_diagnostics(..., since=mark)` waits
        for a publish after it. Take it *before* triggering."""
        return len(self.published)

    def event_mark(self) -> int:
        return len(self.events)

    async def wait_diagnostics(
        self,
        uri: str,
        *,
        since: int,
        where: Callable[[Sequence[lsp.Diagnostic]], bool] = lambda d: True,
        version: int | None = None,
        what: str = "diagnostics",
    ) -> list[lsp.Diagnostic]:
        """The first set published for `uri` after `since` that satisfies
        `where` (and is for `version`, when given)."""

        def found() -> tuple[list[lsp.Diagnostic]] | None:
            for p in self.published[since:]:
                if p.uri == uri and (version is None or p.version == version) and where(p.diagnostics):
                    return (list(p.diagnostics),)  # truthy even when the set is empty
            return None

        got = await self.until(found, lambda: f"{what} on {uri} (published so far: {self._summary(uri)})")
        return got[0]

    def _summary(self, uri: str) -> list[list[str]]:
        return [[str(d.code) for d in p.diagnostics] for p in self.published if p.uri == uri]

    async def event(self, method: str, *, since: int, where: Callable[[Any], bool] = lambda p: True) -> Any:
        """The params of the first `method` the server sent after `since`."""

        def found() -> Any:
            for m, params in self.events[since:]:
                if m == method and where(params):
                    return (params,)
            return None

        def seen() -> str:
            return f"{method} from the server (seen: {[m for m, _ in self.events[since:]]})"

        return (await self.until(found, seen))[0]

    def events_of(self, method: str, since: int = 0) -> list[Any]:
        return [p for m, p in self.events[since:] if m == method]

    # ── documents ──

    async def open(self, path: Path, text: str | None = None) -> tuple[str, list[lsp.Diagnostic]]:
        """didOpen (the file's text on disk unless `text`), and the
        diagnostics published for it."""
        uri = from_fs_path(str(path))
        assert uri is not None
        if text is None:
            text = path.read_text(encoding="utf-8")
        self.versions[uri] = 1
        self.texts[uri] = text
        since = self.mark()
        self.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=uri, language_id="toml", version=1, text=text)
            )
        )
        return uri, await self.wait_diagnostics(uri, since=since, what="diagnostics after didOpen")

    async def change(self, uri: str, text: str) -> list[lsp.Diagnostic]:
        """A full-text didChange, and the diagnostics published for that version."""
        version = self.versions[uri] + 1
        self.versions[uri] = version
        self.texts[uri] = text
        since = self.mark()
        self.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        # A store poll may republish the previous version meanwhile: wait for this one.
        return await self.wait_diagnostics(
            uri, since=since, version=version, what=f"diagnostics after didChange to version {version}"
        )

    async def save(self, uri: str, path: Path) -> list[lsp.Diagnostic]:
        """Write the buffer to disk as an editor does, then didSave."""
        path.write_text(self.texts[uri], encoding="utf-8")
        since = self.mark()
        self.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
        return await self.wait_diagnostics(uri, since=since, what="diagnostics after didSave")

    # ── requests ──

    async def request(self, method: str, params: Any = None) -> Any:
        """A request answered within `WAIT_S`; custom results as plain data."""
        result = await asyncio.wait_for(self.protocol.send_request_async(method, params), WAIT_S)
        return plain(result)

    async def raw_request(self, method: str, params: Any) -> Any:
        """A request whose params go out exactly as given, not through
        lsprotocol's types (which refuse to build an invalid one)."""
        msg_id = str(uuid.uuid4())
        future: Future[Any] = Future()
        self.protocol._request_futures[msg_id] = future
        self.protocol._result_types[msg_id] = None
        self.protocol._send_data(JsonRPCRequestMessage(id=msg_id, method=method, params=params, jsonrpc="2.0"))
        return plain(await asyncio.wait_for(asyncio.wrap_future(future), WAIT_S))

    async def command(self, name: str, *args: Any) -> Any:
        return await self.request(
            lsp.WORKSPACE_EXECUTE_COMMAND, lsp.ExecuteCommandParams(command=name, arguments=list(args))
        )

    async def block(self, domain: str | None = None) -> str | None:
        """The rules block a run exercising `domain` carries, through this endpoint."""
        params = {} if domain is None else {"domain": domain}
        return (await self.request("mecha/rulesPromptBlock", params))["block"]

    async def code_actions(
        self,
        uri: str,
        line: int,
        end_line: int | None = None,
        *,
        only: Sequence[str] | None = None,
        trigger: lsp.CodeActionTriggerKind = lsp.CodeActionTriggerKind.Invoked,
    ) -> list[lsp.CodeAction]:
        """Ask as an editor does: the range, the diagnostics last published
        on it, the trigger, and `only` exactly as given (`None` sends no
        filter, which is what Ctrl+., the lightbulb and Neovim's
        `vim.lsp.buf.code_action()` send; see `EDITOR_ASKS`)."""
        last = end_line if end_line is not None else line
        rng = lsp.Range(start=lsp.Position(line=line, character=0), end=lsp.Position(line=last, character=0))
        on_lines = [d for d in self.diagnostics_of(uri) if d.range.start.line <= last and d.range.end.line >= line]
        got = await asyncio.wait_for(
            self.text_document_code_action_async(
                lsp.CodeActionParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    range=rng,
                    context=lsp.CodeActionContext(
                        diagnostics=on_lines,
                        only=[lsp.CodeActionKind(k) for k in only] if only is not None else None,
                        trigger_kind=trigger,
                    ),
                )
            ),
            WAIT_S,
        )
        assert got is not None
        for action in got:
            assert isinstance(action, lsp.CodeAction), f"a bare Command where a CodeAction was due: {action}"
        return list(got)  # type: ignore[arg-type]

    def diagnostics_of(self, uri: str) -> list[lsp.Diagnostic]:
        """The last diagnostics published for `uri` (none yet: empty)."""
        for p in reversed(self.published):
            if p.uri == uri:
                return list(p.diagnostics)
        return []

    async def hover(self, uri: str, line: int, character: int = 0) -> lsp.Hover | None:
        return await asyncio.wait_for(
            self.text_document_hover_async(
                lsp.HoverParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    position=lsp.Position(line=line, character=character),
                )
            ),
            WAIT_S,
        )

    async def lenses(self, uri: str) -> list[lsp.CodeLens]:
        got = await asyncio.wait_for(
            self.text_document_code_lens_async(lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))),
            WAIT_S,
        )
        return list(got or [])


def _record(method: str, default: Callable[..., Any] | None = None) -> Callable[..., Any]:
    def handler(client: MechaClient, params: Any) -> Any:
        client.events.append((method, plain(params) if method.startswith("mecha/") else params))
        if default is not None:
            return default(client, params)
        return None

    return handler


def _publish(client: MechaClient, params: lsp.PublishDiagnosticsParams) -> None:
    client.diagnostics[params.uri] = params.diagnostics
    client.published.append(params)


def _fix_code_action_union(converter: Any) -> None:
    """lsprotocol structures any code-action item with a `command` key as a
    `Command`, so a `CodeAction` that runs a command comes out mangled.
    A `Command`'s `command` is the command's name (a string); a
    `CodeAction`'s is a `Command` object."""

    def structure(obj: Any, _: Any) -> Any:
        if isinstance(obj, dict) and isinstance(obj.get("command"), str):
            return converter.structure(obj, lsp.Command)
        return converter.structure(obj, lsp.CodeAction)

    converter.register_structure_hook(Union[lsp.Command, lsp.CodeAction], structure)  # noqa: UP007 - cattrs keys on typing.Union


def _keep_custom_payloads_raw(converter: Any) -> None:
    """pygls turns the params and results of methods it has no type for
    (every `mecha/*`) into namedtuples, renaming keys that are not Python
    identifiers (`{"r-1": …}` becomes `{"_0": …}`). An editor gets the JSON
    as sent; so does this client."""
    for cls in (JsonRPCResponseMessage, JsonRPCNotification, JsonRPCRequestMessage):
        converter.register_structure_hook(cls, lambda obj, cls: cls(**obj))


def make_client() -> MechaClient:
    client = MechaClient(converter_factory=default_converter)
    _fix_code_action_union(client.protocol._converter)
    _keep_custom_payloads_raw(client.protocol._converter)
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _publish
    for method in (lsp.WINDOW_WORK_DONE_PROGRESS_CREATE, lsp.PROGRESS):
        features[method] = _record(method, DEFAULT_CLIENT_FEATURES[method])
    features[lsp.WORKSPACE_CODE_LENS_REFRESH] = _record(lsp.WORKSPACE_CODE_LENS_REFRESH)
    features["mecha/proposalsChanged"] = _record("mecha/proposalsChanged")
    features["mecha/jobFinished"] = _record("mecha/jobFinished")
    register_lsp_features(client, features)
    return client


# ─── the store ──────────────────────────────────────────────────────────────


def has_code(code: str) -> Callable[[Sequence[lsp.Diagnostic]], bool]:
    """For `wait_diagnostics(where=…)`: a set holding `code`."""
    return lambda diags: any(d.code == code for d in diags)


class Store:
    """A private learning store and the ways a test fills it: rules files
    as a person writes them, proposals as a pass writes them, reflections
    and validation records as the loop appends them."""

    def __init__(self, root: Path):
        self.root = root
        self.store = LearningStore.open(root)

    def path(self, domain: str, kind: str, project: str | None = None) -> Path:
        return self.root / "rules" / rules_file_name(domain, kind, project)

    def uri(self, domain: str, kind: str) -> str:
        uri = from_fs_path(str(self.path(domain, kind)))
        assert uri is not None
        return uri

    def write(self, domain: str, kind: str, text: str) -> Path:
        path = self.path(domain, kind)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def learned(self, domain: str, rules: Sequence[Rule], project: str | None = None) -> Path:
        """Learned rules as an accept writes them (globally, or for the
        project whose root is `project`)."""
        write_learned_rules(self.store, domain, rules, project)
        return self.path(domain, "learned", project)

    def proposal(
        self,
        pid: str,
        rules: Sequence[Rule],
        *,
        domain: str = "behavior",
        rules_before: Sequence[Rule] | None = None,
        reflexion_ids: Sequence[str] = (),
        project: str | None = None,
    ) -> Proposal:
        """A pending proposal, written as a pass writes one; `rules_before`
        defaults to the live learned rules of its scope (so it can be
        accepted)."""
        before = list(self.store.learned_rules(domain, project) if rules_before is None else rules_before)
        p = builders.proposal(pid, rules, domain=domain, rules_before=before, reflexion_ids=reflexion_ids,
                              created_at=WHEN, project=project)
        self.store.write_proposal(p)
        return p

    def status(self, pid: str) -> str:
        return self.store.proposal(pid).status.value

    def reflexion(self, rid: str, lesson: str, *, trigger: str = "steer", domain: str = "behavior") -> Reflexion:
        r = builders.reflexion(rid, lesson, domain=domain, session_id=f"s-{rid}", trigger=trigger,
                               intervention=f"about {rid}: {lesson}", confidence=0.8, created_at=WHEN)
        self.store.append_reflexion(r)
        return r

    def regressions(self, rule_id: str, count: int, *, domain: str = "behavior", at: str = WHEN) -> None:
        """`count` probes whose bisection pinned a regression on `rule_id`."""
        for i in range(count):
            self.store.append_validation(
                ValidationRecord(
                    reflexion_id=f"probe-{rule_id}-{i}",
                    trigger="steer",
                    domain=domain,
                    rules_hash="0" * 16,
                    rule_ids=[rule_id],
                    outcome=REGRESSED,
                    attributed_rule_id=rule_id,
                    model="scripted-model",
                    created_at=at,
                )
            )

    def observe(self, rule_id: str, outcome: str, *, domain: str = "behavior", at: str = WHEN) -> None:
        """One probe whose block carried `rule_id`, with no attribution."""
        self.store.append_validation(
            ValidationRecord(
                reflexion_id=f"probe-{rule_id}-{outcome}-{at}",
                trigger="steer",
                domain=domain,
                rules_hash="0" * 16,
                rule_ids=[rule_id],
                outcome=outcome,
                model="scripted-model",
                created_at=at,
            )
        )

    async def cli(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """`mecha-sidecar --learning-dir <root> …` as a separate process, run
        off the event loop so the client keeps reading the server meanwhile."""
        return await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "mecha.sidecar", "--learning-dir", str(self.root), *args],
            env=server_env(**env),
            capture_output=True,
            text=True,
            timeout=WAIT_S * 3,
            cwd=self.root,
        )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "learning")
    yield s
    wait_for_passes(s.root)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    """A scripted model that answers reflector and learner prompts."""
    with ModelServer(responder=lessons_responder) as server:
        yield server


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "capabilities(edit): edit the profile's ClientCapabilities in place before initialize"
    )


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=server_env(), client_factory=make_client),
    params=PROFILES,
)
async def client(
    request: pytest.FixtureRequest,
    lsp_client: MechaClient,
    store: Store,
    model: ModelServer,
    recwarn: pytest.WarningsRecorder,
):
    """`mecha-sidecar lsp`, initialized as the profile's editor would, over
    `store` with `model` as its model. pytest-lsp checks what the server
    sends against the profile's capabilities (a progress token created for a
    client without `window.workDoneProgress`, `$/progress` on an unknown
    token, …) and warns; here any such warning fails the test."""
    lsp_client.profile = request.param
    lsp_client.store = store
    capabilities = client_capabilities(request.param)
    # Both profiles stand for our own clients, which ask for the `mecha/*`
    # notifications and show command results themselves; a test of any
    # other client takes the extensions away with `without_extensions`.
    capabilities.experimental = {EXPERIMENTAL_KEY: {"notifications": True, "showsResults": True}}
    marker = request.node.get_closest_marker("capabilities")
    if marker is not None:
        marker.args[0](capabilities)
    root_uri = from_fs_path(str(store.root))
    lsp_client.initialize_result = await asyncio.wait_for(
        lsp_client.initialize_session(
            lsp.InitializeParams(
                capabilities=capabilities,
                root_uri=root_uri,
                workspace_folders=[lsp.WorkspaceFolder(uri=root_uri or "", name="learning")],
                initialization_options={
                    "learningDir": str(store.root),
                    "model": {"api": "openai", "baseUrl": model.url, "model": "scripted-model"},
                },
            )
        ),
        WAIT_S,
    )
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), WAIT_S)
    broken = [str(w.message) for w in recwarn if issubclass(w.category, LspSpecificationWarning)]
    assert not broken, f"the server broke the {request.param} profile's capabilities: {broken}"


