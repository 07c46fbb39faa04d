"""`mecha-sidecar lsp`: the editor endpoint, on pygls.

pygls supplies the LSP machinery (document sync, capabilities, feature
registration, progress); this module owns the wire. Frames are read by the
same reader as the harness endpoint, so a bad header, a lying
Content-Length, invalid JSON or a non-object body are answered and survived
exactly as they are there, and the lifecycle rules are the contract's rather
than pygls's — decided by the same gate as there (`mecha.protocol.lifecycle`):
-32002 before `initialize`, -32600 after `shutdown`, exit code 1 for an
`exit` without `shutdown`. Every `mecha/*` request and every `mecha.*`
command goes through the same handler table as the harness endpoint and the
CLI, with raw params decoded by msgspec; only LSP's own methods reach pygls,
and invalid params there are answered -32602 instead of dropped.

What the editor sees — diagnostics, hovers, lenses, quick fixes — is computed
by `mecha.core.editor`; this module only converts it to LSP shapes. A poll
of the store's files (rules, proposals, jobs, the ledger) republishes
diagnostics, refreshes lenses and reports pass progress when anything changes
on disk, whoever changed it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import msgspec
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from mecha.core.domain.rules import active_count
from mecha.core.editor import review, store_view
from mecha.core.editor.actions import code_actions_for
from mecha.core.editor.diagnostics import check_document
from mecha.core.editor.document import document_lines
from mecha.core.editor.hover import hover_for
from mecha.core.editor.lenses import document_lenses
from mecha.core.editor.results import Act, Finding, Scope
from mecha.core.identity import now
from mecha.core.learning.proposals import PendingSummary, pending_summary, proposal_scope, should_announce
from mecha.core.store import jobs as jobs_mod
from mecha.core.store.learning_store import LearningStore, ReflectionsById, store_identity
from mecha.core.store.proposal_files import Proposal
from mecha.core.visible import shown as shown_text
from mecha.protocol import commands as wire_commands
from mecha.protocol import errors as codes
from mecha.protocol import lifecycle as lc
from mecha.protocol import methods as m
from mecha.protocol.errors import RpcError, rpc_error_from
from mecha.protocol.framing import FrameReader, FrameWriter
from mecha.protocol.jsonrpc import (
    NESTED_TOO_DEEPLY,
    decode_envelope,
    encode_error,
    encode_notification,
    encode_result,
    request_id_of,
)

from .context import Context
from .handlers import call, make_dispatch
from .lsp_display import Display, display_for
from .lsp_shapes import from_utf16, to_code_action, to_command, to_diagnostic
from .rpc import Cancel, Cancelled
from .serve import server_version

log = logging.getLogger("mecha.sidecar.lsp")

POLL_S = float(os.environ.get("MECHA_LSP_POLL_S", "0.5"))



# ─── commands: one table, the same handlers as the methods ──────────────────


def _run_command(command: wire_commands.Command) -> Callable[[Context, list[Any]], Any]:
    """A command runs the method its table row names, with the params its
    arguments spell (`protocol.commands.command_params`)."""
    shape = _RESULT_SHAPES.get(command.act)

    def run(ctx: Context, args: list[Any]) -> Any:
        result = call(ctx, command.method, wire_commands.command_params(command, args))
        return shape(result) if shape is not None else result

    return run


def _diff_shown(shown: Any) -> m.ShowProposalDiffResult:
    """`mecha/proposal`'s answer as `mecha.showProposalDiff` returns it: the
    diff, and the URI a client shows it under."""
    pid = shown["proposal"]["id"]
    return m.ShowProposalDiffResult(uri=m.proposal_diff_uri(pid), id=pid, diff=shown["diff"])


def _reviewed(message: Callable[[Proposal], str]) -> Callable[[Any], m.ReviewedProposalResult]:
    """An accept's, a rejection's or a retirement's answer with the line a
    client shows for it (`core.editor.review`)."""

    def shape(result: Any) -> m.ReviewedProposalResult:
        p = msgspec.convert(result["proposal"], Proposal)
        exports = msgspec.convert(result.get("exports", []), list[m.ExportResult])
        after = (result.get("next_pass") or {}).get("message")
        said = message(p) if not after else f"{message(p)}; {after}"
        return m.ReviewedProposalResult(proposal=p, message=said, exports=exports)

    return shape


def _listed(result: Any) -> m.ProposalListResult:
    """`mecha/proposals`' answer with each proposal's summary, so a client
    lists them without counting rules itself."""
    proposals = msgspec.convert(result["proposals"], list[Proposal])
    summaries = [
        m.ProposalSummary(
            id=p.id,
            title=review.proposal_title(p),
            active_before=active_count(p.rules_before),
            active_after=active_count(p.rules),
            scope=proposal_scope(p),
            writes=review.proposal_writes(p),
            scope_label=review.proposal_scope_label(p),
        )
        for p in proposals
    ]
    return m.ProposalListResult(proposals=proposals, summaries=summaries)


#: The commands whose result is not their method's as it is.
_RESULT_SHAPES: dict[Act, Callable[[Any], Any]] = {
    Act.SHOW_PROPOSAL_DIFF: _diff_shown,
    Act.ACCEPT_PROPOSAL: _reviewed(review.accepted_message),
    Act.REJECT_PROPOSAL: _reviewed(review.rejected_message),
    Act.PROPOSE_RETIREMENT: _reviewed(review.retirement_message),
    Act.LIST_PROPOSALS: _listed,
}

#: Every command of the contract's table (protocol/commands.py), by its id.
COMMANDS: dict[str, Callable[[Context, list[Any]], Any]] = {
    cid: _run_command(c) for cid, c in wire_commands.COMMANDS.items()
}


# ─── the server ─────────────────────────────────────────────────────────────


class MechaLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("mecha-sidecar", server_version(), text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self.ctx: Context | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.known_jobs: dict[str, jobs_mod.JobState] = {}
        self.progress_tokens: dict[str, str] = {}
        #: The last progress report sent for each job, so a report goes out
        #: only when the pass has moved.
        self.progress_reported: dict[str, tuple[int, int]] = {}
        self.pending_seen: PendingSummary | None = None
        self.store_key: Any = None
        self.reflections = ReflectionsById()

    def extensions(self) -> wire_commands.ClientExtensions:
        """What the client said it handles beyond LSP (none until it has
        initialized, and none for any client but ours)."""
        return wire_commands.client_extensions(self.client_capabilities.experimental)

    def opens_documents(self) -> bool:
        caps = self.client_capabilities.window
        return bool(caps and caps.show_document and caps.show_document.support)

    def show(self, display: Display) -> None:
        """Send what `lsp_display` decided: open the file, or show the
        message — also when the client would not open the file. What hides
        in it (a rule's bidi control, say) is spelled out (`visible.shown`)."""
        message = None if display.message is None else shown_text(display.message, keep_layout=True)
        if display.document is None:
            if message is not None:
                self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Info, message=message))
            return
        uri = from_fs_path(str(display.document))
        assert uri is not None

        async def run() -> None:
            try:
                shown = await self.window_show_document_async(lsp.ShowDocumentParams(uri=uri, take_focus=True))
                opened = bool(shown and shown.success)
            except Exception as exc:  # the client failed the request: say it another way
                log.info("showDocument failed: %s", exc)
                opened = False
            if not opened and message is not None:
                self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Info, message=message))

        _keep(asyncio.ensure_future(run()))

    # The store's state that documents are checked against.
    def root(self) -> Path:
        assert self.ctx is not None
        return self.ctx.root

    def doc_kind(self, uri: str) -> store_view.RulesDocument | None:
        """The rules document `uri` is (its domain, kind and scope), or
        `None` for any other file."""
        path = to_fs_path(uri)
        if not path or self.ctx is None:
            return None
        return store_view.rules_document_of(Path(path), self.root())

    def store(self) -> LearningStore | None:
        return self.ctx.existing_store() if self.ctx else None

    def open_document(self, uri: str | None) -> TextDocument | None:
        """The open document at `uri`, however the client quoted it: pygls
        keys its documents by the unquoted URI, and a client may send a
        project's rules file (`behavior@app-….toml`) with `@` as `%40`."""
        return self.workspace.text_documents.get(unquote(uri)) if uri else None

    def open_text(self, path: Path) -> str | None:
        """The open buffer's text for `path`, or `None` when it is not open."""
        doc = self.open_document(from_fs_path(str(path)))
        return doc.source if doc is not None else None

    def sibling_rules(self, doc: store_view.RulesDocument) -> list[Any]:
        return store_view.sibling_rules(doc, self.open_text)

    def findings_for(self, uri: str) -> tuple[str, list[str], list[Finding]] | None:
        """The open document's text, its lines and the findings on
        it; `None` for a document that is not a rules file."""
        doc = self.doc_kind(uri)
        if doc is None:
            return None
        text = self.workspace.get_text_document(uri).source
        findings = check_document(
            doc.domain,
            doc.kind,
            text,
            other_rules=self.sibling_rules(doc),
            tallies=store_view.tallies_in(self.store()),
            pending=store_view.pending_in(self.store(), doc),
            in_project=doc.project_id is not None,
        )
        return text, document_lines(text) or [""], findings

    def diagnostics_for(self, uri: str) -> list[lsp.Diagnostic]:
        found = self.findings_for(uri)
        if found is None:
            return []
        _, lines, findings = found
        return [to_diagnostic(f, lines) for f in findings]

    def publish(self, uri: str) -> None:
        """Publish the open document's diagnostics, under the URI as its
        client spelled it."""
        doc = self.open_document(uri)
        if doc is None:
            return
        try:
            diagnostics = self.diagnostics_for(uri)
        except Exception as exc:  # never stop serving over one document
            log.exception("diagnostics failed for %s", uri)
            diagnostics = []
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Error, message=f"mecha: {exc}"))
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=doc.uri, diagnostics=diagnostics, version=doc.version)
        )

    def publish_all(self) -> None:
        for uri in list(self.workspace.text_documents):
            if self.doc_kind(uri) is not None:
                self.publish(uri)

    def publish_sibling(self, uri: str) -> None:
        """The domain's other rules file, if open, is checked against this
        buffer (restating, the budget): recheck it when this one changes."""
        doc = self.doc_kind(uri)
        if doc is None:
            return
        sibling = from_fs_path(str(store_view.sibling_path(doc)))
        if sibling and unquote(sibling) != unquote(uri) and self.open_document(sibling) is not None:
            self.publish(sibling)

    def scope_of(self, doc: store_view.RulesDocument, text: str) -> Scope:
        return store_view.document_scope(doc, text, self.open_text)

    def hover(self, params: lsp.HoverParams) -> lsp.Hover | None:
        """The rule under the cursor (`hover_for`), with its scope."""
        doc = self.doc_kind(params.text_document.uri)
        if doc is None:
            return None
        source = self.workspace.get_text_document(params.text_document.uri).source
        lines = document_lines(source)
        line = params.position.line
        col = from_utf16(lines[line], params.position.character) if line < len(lines) else 0
        scope = self.scope_of(doc, source)
        records = store_view.record_lines_in(self.store(), doc, scope, now())
        text = hover_for(
            source, line, col, domain=doc.domain, kind=doc.kind,
            reflections_by_id=self.reflections.of(self.store()), tallies=store_view.tallies_by_model_in(self.store()),
            scope=scope.label, records=records,
        )
        if text is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text))

    def code_lenses(self, uri: str) -> list[lsp.CodeLens] | None:
        """The lenses at the top of a rules document (`document_lenses`),
        counted in its scope."""
        doc = self.doc_kind(uri)
        if doc is None:
            return None
        text = self.workspace.get_text_document(uri).source
        pending = len(store_view.pending_in(self.store(), doc))
        lenses = document_lenses(doc.domain, doc.kind, text, self.sibling_rules(doc), pending, self.scope_of(doc, text))
        top = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))
        return [lsp.CodeLens(range=top, command=to_command(lens.title, lens.act, lens.arguments)) for lens in lenses]

    # ── watching the store ──
    def store_identity(self) -> Any:
        return store_identity(self.root())

    def on_store_changed(self, *, announce: bool = False) -> None:
        """Republish, and tell the client when the pending proposals changed.
        `announce` tells it whatever they are: after a command that resolved
        one, the client must hear the new count even when no poll saw the
        proposal appear (it was written and resolved between two polls, and
        the client learnt of it from its diagnostics and its own request)."""
        self.publish_all()
        self.report_jobs()
        now = pending_summary(self.store())
        if should_announce(self.pending_seen, now, after_command=announce):
            self.pending_seen = now
            if self.extensions().notifications:
                self.protocol.notify(
                    wire_commands.PROPOSALS_CHANGED,
                    m.to_builtins(m.ProposalsChangedParams(pending=now.count, by_domain=now.by_domain)),
                )
        self.refresh_lenses()

    def refresh_lenses(self) -> None:
        caps = self.client_capabilities.workspace
        if caps and caps.code_lens and caps.code_lens.refresh_support:
            self.protocol.send_request(lsp.WORKSPACE_CODE_LENS_REFRESH, None)

    def report_jobs(self) -> None:
        """Work-done progress for every pass (`jobs.progress_moves` says
        which to begin and end)."""
        caps = self.client_capabilities.window
        if not (caps and caps.work_done_progress):
            return
        jobs = jobs_mod.list_jobs(self.root(), limit=20)
        begin, end = jobs_mod.progress_moves(self.known_jobs, jobs)
        self.known_jobs.update((job.id, job.state) for job in jobs)
        for job in begin:
            self.begin_progress(job)
        for job in end:
            self.end_progress(job)
        for job in jobs:
            if job.state == "running":
                self.report_progress(job)

    def report_progress(self, job: jobs_mod.Job) -> None:
        """`$/progress` report: answered of all, time waited, what is left —
        the pass's own count from its job record, in the words every
        watcher uses (`jobs.progress_text`), sent when it has moved."""
        token = self.progress_tokens.get(job.id)
        p = job.progress
        if token is None or p is None or token not in self.work_done_progress.tokens:
            return
        if self.progress_reported.get(job.id) == (p.done, p.total):
            return
        self.progress_reported[job.id] = (p.done, p.total)
        percentage = min(100, p.done * 100 // p.total) if p.total > 0 else None
        self.work_done_progress.report(
            token, lsp.WorkDoneProgressReport(message=jobs_mod.progress_text(job), percentage=percentage, cancellable=False)
        )

    def begin_progress(self, job: jobs_mod.Job) -> None:
        token = f"mecha-job-{job.id}"
        self.progress_tokens[job.id] = token
        title = f"mecha {job.kind}" + (f" {job.domain}" if job.domain else "")

        async def run() -> None:
            try:
                await self.work_done_progress.create_async(token)
            except Exception as exc:  # the client refused: no progress, nothing else lost
                log.info("progress not created: %s", exc)
                self.progress_tokens.pop(job.id, None)
                return
            self.work_done_progress.begin(
                token, lsp.WorkDoneProgressBegin(title=title, message=f"job {job.id}", cancellable=False, percentage=0)
            )
            current = jobs_mod.read_job(self.root(), job.id)
            if self.known_jobs.get(job.id) != "running":
                self.end_progress(current)
            else:
                self.report_progress(current)

        _keep(asyncio.ensure_future(run()))

    def end_progress(self, job: jobs_mod.Job) -> None:
        token = self.progress_tokens.get(job.id)
        if token is None or token not in self.work_done_progress.tokens:
            return
        self.progress_tokens.pop(job.id, None)
        self.progress_reported.pop(job.id, None)
        self.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=jobs_mod.end_text(job)))


_tasks: set[asyncio.Future[Any]] = set()


def _keep(task: asyncio.Future[Any]) -> None:
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


def _document_sync(ls: MechaLanguageServer) -> None:
    """A document's diagnostics follow it: published as it opens, changes
    and is saved, cleared as it closes (its sibling file's too)."""

    @ls.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: MechaLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)
        ls.publish_sibling(params.text_document.uri)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: MechaLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)
        ls.publish_sibling(params.text_document.uri)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: MechaLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: MechaLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))
        ls.publish_sibling(params.text_document.uri)  # now checked against the file on disk

    @ls.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: MechaLanguageServer, params: lsp.DidChangeConfigurationParams) -> None:
        """Clients send their settings after `initialized` (eglot and
        lsp-mode do). This server's settings are the
        `initializationOptions`, read once: a change takes a restart,
        which is what every client's "restart server" does."""


def build_server() -> MechaLanguageServer:
    ls = MechaLanguageServer()
    _document_sync(ls)

    @ls.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: MechaLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
        return ls.hover(params)

    @ls.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.Source]),
    )
    def code_action(ls: MechaLanguageServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
        uri = params.text_document.uri
        found = ls.findings_for(uri)
        if found is None:
            return None
        text, lines, findings = found
        only = [getattr(k, "value", k) for k in params.context.only] if params.context.only is not None else None
        actions = code_actions_for(text, findings, params.range.start.line, params.range.end.line, only)
        return [to_code_action(a, uri, lines) for a in actions]

    @ls.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: MechaLanguageServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens] | None:
        return ls.code_lenses(params.text_document.uri)

    for name in COMMANDS:
        # Registered so `executeCommandProvider` lists them; execution is
        # routed before pygls (see `_LspLoop`), through the shared handlers.
        ls.command(name)(_pygls_command(ls, name))

    return ls


def _pygls_command(ls: MechaLanguageServer, name: str) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        assert ls.ctx is not None
        try:
            return m.to_builtins(COMMANDS[name](ls.ctx, [a for a in args if not isinstance(a, LanguageServer)]))
        except Exception as exc:
            err = rpc_error_from(exc)
            raise JsonRpcException(code=err.code, message=err.message, data=err.data) from None

    return run


# ─── the wire ───────────────────────────────────────────────────────────────


def _structure_error(exc: BaseException) -> str:
    """What cattrs disliked, as `<problem> @ $.params.<path>` lines."""
    cause = exc.__cause__
    if cause is not None:
        try:
            from cattrs import transform_error

            lines = transform_error(cause, path="$.params")
            return "; ".join(_wire_path(line) for line in lines).replace("$.params.params", "$.params")
        except Exception:
            return str(cause)
    return str(exc) or "the params do not match the method's type"


def _wire_path(line: str) -> str:
    """cattrs names lsprotocol's attributes (`text_document`); the client
    sent, and must be told, the wire's names (`textDocument`)."""
    problem, at, path = line.rpartition(" @ ")
    if not at:
        return line

    def camel(m: re.Match[str]) -> str:
        first, *rest = m.group().removesuffix("_").split("_")
        return first + "".join(p.title() for p in rest)

    return problem + at + re.sub(r"(?<=\.)[a-z][a-z0-9]*(?:_[a-z0-9]*)+", camel, path)


class _QuietStructureErrors(logging.Filter):
    """pygls logs a traceback for every message it cannot structure; here
    that is a client error already answered -32602, not a server fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable to deserialize message")


class _PyglsWriter:
    """The writer pygls is given: its frames go through the endpoint's one
    `FrameWriter`, whose lock our own replies share."""

    def __init__(self, frames: FrameWriter):
        self.frames = frames

    def write(self, data: bytes) -> None:
        self.frames.write_framed(data)

    def close(self) -> None:
        pass


def _is_notification_method(method: str) -> bool:
    """Whether LSP defines `method` as a notification a client sends, so
    that one sent with an id is a client's mistake to answer. (The
    contract's own notification, `mecha/jobFinished`, is the server's to
    send: a client requesting it asks for a method nobody serves.)"""
    types = lsp.METHOD_TO_TYPES.get(method)
    return types is not None and types[1] is None and types[0].__name__.endswith("Notification")


def _is_request_method(method: str) -> bool:
    """Whether LSP or the contract defines `method` as a request, so that
    one sent without an id is dropped: there is nobody to answer, and
    pygls would run it for nothing."""
    if method in m.METHODS:
        return m.is_request_method(method)
    if method == lsp.WORKSPACE_EXECUTE_COMMAND:
        return True
    types = lsp.METHOD_TO_TYPES.get(method)
    return types is not None and types[0].__name__.endswith("Request")


def _execute_command_problem(params: Any) -> str | None:
    """What is wrong with `workspace/executeCommand` params, naming the
    field by its JSON path as every -32602 does, or `None`. Checked before
    pygls sees them: it would log a traceback for a non-string command."""
    if not isinstance(params, dict):
        return f"expected an object, got {type(params).__name__} - at `$`"
    name = params.get("command")
    if not isinstance(name, str):
        got = "nothing" if name is None else type(name).__name__
        return f"`command` must be a string, got {got} - at `$.command`"
    return None


class _LspLoop:
    def __init__(self, ls: MechaLanguageServer, writer: FrameWriter):
        self.ls = ls
        self.writer = writer
        self.lifecycle = lc.Lifecycle(is_notification_method=_is_notification_method, is_request_method=_is_request_method)
        self.dispatch: Callable[[str, Any, Cancel], Any] | None = None
        self.cancels: dict[Any, Cancel] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.done: asyncio.Future[int] | None = None

    def reply_error(self, id: Any, err: RpcError) -> None:
        self.writer.write(encode_error(id, err))

    def structure(self, body: bytes) -> Any:
        """The message pygls makes of `body`, or `None` once the client has
        been answered why it could not (pygls itself would drop it)."""
        try:
            data = json.loads(body)
        except RecursionError:
            # msgspec took it, but the stdlib parser pygls needs runs out of
            # stack a few levels sooner here: answer, or the client waits.
            self.reply_error(request_id_of(body), RpcError(codes.PARSE_ERROR, NESTED_TOO_DEEPLY))
            return None
        try:
            return self.ls.protocol.structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                self.reply_error(data["id"], RpcError(codes.INVALID_PARAMS, f"invalid params: {_structure_error(exc)}"))
            return None

    def to_pygls(self, body: bytes) -> None:
        message = self.structure(body)
        if message is not None:
            self.ls.protocol.handle_message(message)

    def on_frame(self, frame: Any) -> None:
        if frame.error is not None:
            self.reply_error(None, RpcError(codes.PARSE_ERROR, f"bad frame: {frame.error}"))
            return
        body = frame.body
        try:
            msg = decode_envelope(body)
        except RpcError as err:
            self.reply_error(request_id_of(body), err)
            return
        if msg.is_response:
            self.to_pygls(body)  # to a request pygls sent (a lens refresh, progress)
            return
        admission = self.lifecycle.admit(msg.method_name, msg.is_request)
        verdict = admission.verdict
        if verdict == lc.EXIT:
            self.finish(self.lifecycle.exit_code)
        elif verdict == lc.CANCEL:
            if self.cancel(msg.params):
                self.to_pygls(body)  # pygls cancels what it runs itself
        elif verdict == lc.REFUSE:
            self.reply_error(msg.id, admission.error())
        elif verdict == lc.INITIALIZE:
            self.initialize(msg.id, msg.params or None, body)
        elif verdict == lc.SHUTDOWN:
            self.lifecycle.shutdown_received()
            self.to_pygls(body)
        elif verdict == lc.PROTOCOL or (verdict == lc.SERVE and msg.is_notification):
            self.to_pygls(body)
        elif verdict == lc.SERVE:
            self.serve_request(msg.id, msg.method_name, msg.params or None, body)
        # lc.DROP: nobody to answer

    def cancel(self, params: Any) -> bool:
        """Cancel the request the params name, if this loop runs it; whether
        they name one a request could have (pygls chokes on any other)."""
        try:
            target = lc.cancel_target(msgspec.json.decode(params or b"{}"))
        except (msgspec.DecodeError, RecursionError):
            return False
        if target is None:
            return False
        if target in self.cancels:
            self.cancels[target].set()
        return True

    def initialize(self, id: Any, params: Any, body: bytes) -> None:
        """Set up the context and let pygls answer with the capabilities its
        features declare. Params either reader refuses leave the server as
        it was, so the client can send a good `initialize` next."""
        assert self.loop is not None
        loop = self.loop
        try:
            ctx = Context.from_initialize(
                params, self.notify, on_job_event=lambda: loop.call_soon_threadsafe(self.poll_now)
            )
        except RpcError as err:
            self.reply_error(id, err)
            return
        message = self.structure(body)
        if message is None:
            return
        self.ls.ctx = ctx
        self.ls.loop = loop
        self.dispatch = make_dispatch(ctx)
        self.lifecycle.initialize_succeeded()
        self.ls.protocol.handle_message(message)

    def notify(self, method: str, payload: Any) -> None:
        """A `mecha/*` notification (a pass this server started has ended),
        sent only to a client that asked for them."""
        if self.ls.extensions().notifications:
            self.writer.write(encode_notification(method, m.to_builtins(payload)))

    def serve_request(self, id: Any, method: str, params: Any, body: bytes) -> None:
        """A live request: `mecha/*` and the `mecha.*` commands through the
        shared handlers, in a worker thread; LSP's own through pygls."""
        if method.startswith("mecha/"):
            dispatch = self.dispatch
            assert dispatch is not None
            self.run_in_thread(id, lambda cancel: dispatch(method, params, cancel))
        elif method == lsp.WORKSPACE_EXECUTE_COMMAND:
            self.execute_command(id, params)
        else:
            self.to_pygls(body)

    def execute_command(self, id: Any, raw: Any) -> None:
        try:
            params = msgspec.json.decode(raw or b"{}")
        except msgspec.DecodeError as exc:
            self.reply_error(id, RpcError(codes.INVALID_PARAMS, f"invalid params: {exc}"))
            return
        problem = _execute_command_problem(params)
        if problem is not None:
            self.reply_error(id, RpcError(codes.INVALID_PARAMS, f"invalid params: {problem}"))
            return
        name = params["command"]
        if name not in COMMANDS:
            self.reply_error(id, RpcError(codes.METHOD_NOT_FOUND, f"unknown command {name!r}"))
            return
        args = params.get("arguments") or []
        if not isinstance(args, list):
            self.reply_error(id, RpcError(codes.INVALID_PARAMS, "invalid params: `arguments` must be an array"))
            return
        ctx = self.ls.ctx
        assert ctx is not None
        self.run_in_thread(id, lambda cancel: self.run_command(ctx, name, args), after=self.after_command)

    def run_command(self, ctx: Context, name: str, args: list[Any]) -> Any:
        """Run a command in a worker thread; what a client that drops
        command results must be shown of it is prepared here (the diff file
        is written) and sent from the loop."""
        result = COMMANDS[name](ctx, args)
        ls = self.ls
        ext = ls.extensions()
        display = display_for(
            wire_commands.COMMANDS[name].act, result, ctx.root,
            shows_results=ext.shows_results, opens_documents=ls.opens_documents(),
        )
        if display is not None:
            assert self.loop is not None
            self.loop.call_soon_threadsafe(ls.show, display)
        return result

    def after_command(self) -> None:
        # An accept/reject/learn changes the store: show it at once rather
        # than at the next poll. The key first: a change landing while this
        # runs must still differ from it at the next poll, or it is lost.
        self.ls.store_key = self.ls.store_identity()
        self._announce(after_command=True)

    def _announce(self, *, after_command: bool = False) -> None:
        """Tell the client the store changed. If telling fails part-way, the
        key is forgotten so the next poll tries again: a change must never be
        swallowed because the key was saved before it was announced."""
        try:
            self.ls.on_store_changed(announce=after_command)
        except Exception:
            self.ls.store_key = None
            raise

    def run_in_thread(self, id: Any, work: Callable[[Cancel], Any], after: Callable[[], None] | None = None) -> None:
        cancel = self.cancels.setdefault(id, Cancel())
        assert self.loop is not None

        def job() -> bytes:
            try:
                if cancel.cancelled:
                    raise Cancelled()
                result = work(cancel)
                return encode_result(id, m.to_builtins(result))
            except Cancelled:
                return encode_error(id, RpcError(codes.REQUEST_CANCELLED, f"request {id!r} was cancelled"))
            except Exception as exc:
                err = rpc_error_from(exc)
                if err.code == codes.INTERNAL_ERROR:
                    log.exception("request %r failed", id)
                return encode_error(id, err)

        def done(fut: asyncio.Future[bytes]) -> None:
            self.cancels.pop(id, None)
            # What the request changed goes out before its answer. Emacs's
            # jsonrpc leaves whatever arrived in the same read behind the
            # answer to a request it waits on unread until more output
            # comes: diagnostics published right after an accept's answer
            # sat there, and eglot kept showing the accepted proposal.
            try:
                if after is not None:
                    after()
            finally:
                self.writer.write(fut.result())

        fut = self.loop.run_in_executor(None, job)
        fut.add_done_callback(done)

    def poll_now(self) -> None:
        if self.ls.ctx is None:
            return
        key = self.ls.store_identity()
        if key != self.ls.store_key:
            self.ls.store_key = key
            self._announce()

    async def poll(self) -> None:
        while True:
            await asyncio.sleep(POLL_S)
            if self.lifecycle.live:
                try:
                    self.poll_now()
                except Exception:
                    log.exception("store poll failed")

    def finish(self, code: int) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(code)

    async def run(self) -> int:
        self.loop = asyncio.get_running_loop()
        self.done = self.loop.create_future()
        loop = self.loop

        def read() -> None:
            reader = FrameReader(0)
            while True:
                frame = reader.read_frame()
                if frame is None:
                    loop.call_soon_threadsafe(self.finish, self.lifecycle.exit_code)
                    return
                loop.call_soon_threadsafe(self.safe_on_frame, frame)

        threading.Thread(target=read, name="mecha-lsp-reader", daemon=True).start()
        poller = asyncio.ensure_future(self.poll())
        try:
            return await self.done
        finally:
            poller.cancel()
            for task in list(_tasks):
                task.cancel()

    def safe_on_frame(self, frame: Any) -> None:
        try:
            self.on_frame(frame)
        except Exception:  # the loop must outlive any one message
            log.exception("failed to handle a message")


def serve_lsp() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietStructureErrors())
    proto_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    ls = build_server()
    writer = FrameWriter(proto_out, quiet_when_gone=True)
    ls.protocol.set_writer(_PyglsWriter(writer))
    code = asyncio.run(_LspLoop(ls, writer).run())
    ls.shutdown()  # type: ignore[no-untyped-call]  # pygls leaves it unannotated
    return code


__all__ = ["serve_lsp", "build_server", "COMMANDS"]
