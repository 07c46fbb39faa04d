/**
 * The real server, spoken to the way VS Code speaks to it: VS Code's own
 * JSON-RPC library (`vscode-jsonrpc`) over the stdio of a spawned
 * `mecha-sidecar lsp --stdio`, against a throwaway learning store.
 *
 * The executable is `$MECHA_SIDECAR` when set, else `mecha-sidecar` on PATH.
 * Every wait is bounded.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import type {
  CodeAction,
  CodeLens,
  Command,
  Diagnostic,
  InitializeParams,
  InitializeResult,
  PublishDiagnosticsParams,
} from "vscode-languageserver-protocol";

import {
  SERVER_COMMANDS,
  type Proposal,
  type ProposalListResult,
  type ProposalWithDiffResult,
  type ReviewedProposalResult,
  type ShowProposalDiffResult,
} from "../src/protocol";
import { VSCODE_CAPABILITIES, VSCODE_CLIENT_INFO } from "./vscodeCapabilities";

const WAIT_MS = 20_000;
const SERVER = process.env.MECHA_SIDECAR?.trim() || "mecha-sidecar";

const KEPT = {
  text: "Ask before deleting files.",
  enabled: true,
  id: "r-20250101-aaaaaaaa",
  sources: ["20250101T000000-aaaaaaaa"],
  created_at: "2025-01-01T00:00:00.000000Z",
};
const ADDED = {
  text: "Run the tests before saying a change is done.",
  enabled: true,
  id: "r-20250102-bbbbbbbb",
  sources: ["20250102T000000-bbbbbbbb"],
  created_at: "2025-01-02T03:04:05.000000Z",
};
const PROPOSAL: Proposal = {
  id: "20250102T030405-0a1b2c3d",
  domain: "behavior",
  status: "pending",
  reflexion_ids: [],
  rules_before: [KEPT],
  rules: [KEPT, ADDED],
  evidence: "paired gate: 12 episodes, 9 improved, 0 regressed",
  created_at: "2025-01-02T03:04:05.000000Z",
  resolved_at: null,
  reason: null,
  drops: [],
  refusals: [],
  left_out: [],
  project: null,
  promoted_from: [],
  accepted_as_global: false,
  rewrite_of: [],
};

const USER_TOML = `# My own rules.
[[rules]]
text = "Answer in British English."
`;

const LEARNED_TOML = `# Learned rules for the \`behavior\` domain.
# Changed only when a person accepts a proposal.

[[rules]]
text = ${JSON.stringify(KEPT.text)}
enabled = true
id = ${JSON.stringify(KEPT.id)}
sources = [${JSON.stringify(KEPT.sources[0])}]
created_at = ${JSON.stringify(KEPT.created_at)}
`;

/** A learning store with one domain and one pending proposal made against its learned rules. */
function makeStore(): string {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "mecha-vscode-test-")));
  fs.mkdirSync(path.join(root, "rules"));
  fs.mkdirSync(path.join(root, "proposals"));
  fs.writeFileSync(path.join(root, "rules", "behavior.user.toml"), USER_TOML);
  fs.writeFileSync(path.join(root, "rules", "behavior.learned.toml"), LEARNED_TOML);
  fs.writeFileSync(path.join(root, "proposals", `${PROPOSAL.id}.json`), JSON.stringify(PROPOSAL, null, 2) + "\n");
  return root;
}

/** Notifications as they arrive, and bounded waits on them. */
class Inbox {
  readonly seen: { method: string; params: any }[] = [];
  private waiters: (() => void)[] = [];

  push(method: string, params: unknown): void {
    this.seen.push({ method, params });
    this.waiters.forEach((w) => w());
  }

  /** The first notification from index `from` on that satisfies `match`. */
  async next<T>(what: string, from: number, match: (method: string, params: any) => boolean, stderr: () => string): Promise<T> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const found = this.seen.slice(from).find((n) => match(n.method, n.params));
      if (found) {
        return found.params as T;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        const got = this.seen.slice(from).map((n) => n.method).join(", ") || "nothing";
        assert.fail(`no ${what} within ${WAIT_MS} ms; got: ${got}\nserver stderr:\n${stderr()}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      this.waiters = [];
    }
  }
}

function bounded<T>(what: string, promise: Promise<T>, stderr: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${WAIT_MS} ms\nserver stderr:\n${stderr()}`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function exitOf(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) {
    return Promise.resolve(child.exitCode);
  }
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

function commandOf(item: Command | CodeAction): Command | undefined {
  if (typeof (item as Command).command === "string") {
    return item as Command;
  }
  return (item as CodeAction).command;
}

test("mecha-sidecar lsp: diagnostics, the accept code action and its command, over VS Code's JSON-RPC", { timeout: 120_000 }, async () => {
  const store = makeStore();
  // The store must come from initializationOptions.learningDir: the
  // environment names an empty decoy, so a server that ignored the option
  // would find no proposal (and would touch nothing of the person's own).
  const decoy = fs.mkdtempSync(path.join(os.tmpdir(), "mecha-vscode-decoy-"));
  const learnedPath = path.join(store, "rules", "behavior.learned.toml");
  const learnedUri = pathToFileURL(learnedPath).href;

  const child = spawn(SERVER, ["lsp", "--stdio"], {
    cwd: store,
    env: { ...process.env, MECHA_LEARNING_DIR: decoy },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderrText = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (stderrText += chunk));
  const stderr = () => stderrText.slice(-4000);
  const spawned = new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", (err) =>
      reject(new Error(`could not start ${SERVER} (set MECHA_SIDECAR to the mecha-sidecar executable): ${err.message}`)),
    );
  });

  let connection: MessageConnection | undefined;
  try {
    await spawned;
    connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    const inbox = new Inbox();
    const serverRequests: string[] = [];
    connection.onNotification((method: string, params: unknown) => inbox.push(method, params));
    connection.onRequest((method: string, params: any) => {
      serverRequests.push(method);
      switch (method) {
        case "workspace/configuration":
          return (params?.items ?? []).map(() => null);
        case "workspace/applyEdit":
          return { applied: true };
        default:
          // window/workDoneProgress/create, client/registerCapability,
          // workspace/codeLens/refresh, workspace/diagnostic/refresh, …
          return null;
      }
    });
    connection.listen();
    const rpc = <R>(method: string, params?: unknown): Promise<R> =>
      bounded(
        method,
        connection!.sendRequest<R>(method, params).catch((err: { code?: number; message?: string }) => {
          throw new Error(
            `${method} ${JSON.stringify(params)?.slice(0, 300)} answered error ${err.code}: ${err.message}\nserver stderr:\n${stderr()}`,
          );
        }),
        stderr,
      );

    // ── initialize, as VS Code does ──
    const init: InitializeParams = {
      processId: process.pid,
      clientInfo: VSCODE_CLIENT_INFO,
      locale: "en",
      rootPath: store,
      rootUri: pathToFileURL(store).href,
      workspaceFolders: [{ uri: pathToFileURL(store).href, name: path.basename(store) }],
      capabilities: VSCODE_CAPABILITIES,
      initializationOptions: { learningDir: store },
      trace: "off",
    };
    const result = await rpc<InitializeResult>("initialize", init);
    const caps = result.capabilities;
    assert.ok(caps.codeActionProvider, "codeActionProvider");
    assert.ok(caps.codeLensProvider, "codeLensProvider");
    assert.ok(caps.textDocumentSync !== undefined, "textDocumentSync");
    const commands = caps.executeCommandProvider?.commands ?? [];
    for (const id of Object.values(SERVER_COMMANDS)) {
      assert.ok(commands.includes(id), `executeCommandProvider lists ${id} (has ${commands.join(", ")})`);
    }
    const initialized = inbox.seen.length;
    await connection.sendNotification("initialized", {});

    // ── the status bar's counts: the server's first look at the store ──
    const first = await inbox.next<{ pending: number; by_domain: Record<string, number> }>(
      "mecha/proposalsChanged on the server's first look at the store",
      initialized,
      (m) => m === "mecha/proposalsChanged",
      stderr,
    );
    assert.deepEqual(first, { pending: 1, by_domain: { behavior: 1 } });

    // ── what the pick list and the proposal document ask ──
    const pending = await rpc<ProposalListResult>("workspace/executeCommand", {
      command: SERVER_COMMANDS.listProposals,
      arguments: [{ status: "pending" }],
    });
    assert.deepEqual(pending.proposals.map((p) => p.id), [PROPOSAL.id]);
    assert.deepEqual(pending.summaries, [
      {
        id: PROPOSAL.id,
        title: "behavior · 1 → 2 active rules",
        active_before: 1,
        active_after: 2,
        scope: "global",
        writes: "behavior.learned.toml",
        scope_label: "global",
      },
    ]);
    const shown = await rpc<ProposalWithDiffResult>("mecha/proposal", { id: PROPOSAL.id });
    assert.equal(shown.proposal.id, PROPOSAL.id);
    assert.ok(shown.diff.includes(ADDED.text), `the diff shows the added rule:\n${shown.diff}`);
    const diffCommand = await rpc<ShowProposalDiffResult>("workspace/executeCommand", {
      command: SERVER_COMMANDS.showProposalDiff,
      arguments: [PROPOSAL.id],
    });
    assert.equal(diffCommand.uri, `mecha-proposal:/${PROPOSAL.id}.diff`);
    assert.equal(diffCommand.id, PROPOSAL.id);

    // ── open the learned file; diagnostics arrive ──
    const opened = inbox.seen.length;
    await connection.sendNotification("textDocument/didOpen", {
      textDocument: { uri: learnedUri, languageId: "toml", version: 1, text: LEARNED_TOML },
    });
    const published = await inbox.next<PublishDiagnosticsParams>(
      `textDocument/publishDiagnostics for ${learnedUri}`,
      opened,
      (m, p) => m === "textDocument/publishDiagnostics" && p?.uri === learnedUri,
      stderr,
    );
    assert.ok(Array.isArray(published.diagnostics));
    for (const d of published.diagnostics) {
      assert.equal(d.source, "mecha", JSON.stringify(d));
      assert.ok(d.code, `a mecha diagnostic has a code: ${JSON.stringify(d)}`);
    }

    // ── the code lens counts the pending proposal ──
    const lenses = (await rpc<CodeLens[] | null>("textDocument/codeLens", { textDocument: { uri: learnedUri } })) ?? [];
    const titles = lenses.map((l) => l.command?.title ?? "");
    assert.ok(titles.some((t) => /active rules/.test(t)), `a lens counts active rules: ${JSON.stringify(titles)}`);
    assert.ok(titles.some((t) => /1 pending proposal/.test(t)), `a lens counts the pending proposal: ${JSON.stringify(titles)}`);

    // ── code actions over the whole document, asked as Ctrl+. asks (no `only`),
    // offer the review as quick fixes on the pending-proposal diagnostic ──
    const lineCount = LEARNED_TOML.split("\n").length;
    const actions =
      (await rpc<(Command | CodeAction)[] | null>("textDocument/codeAction", {
        textDocument: { uri: learnedUri },
        range: { start: { line: 0, character: 0 }, end: { line: lineCount - 1, character: 0 } },
        context: { diagnostics: published.diagnostics as Diagnostic[], triggerKind: 1 },
      })) ?? [];
    const accept = actions.find((a) => {
      const cmd = commandOf(a);
      return cmd?.command === SERVER_COMMANDS.acceptProposal && cmd.arguments?.[0] === PROPOSAL.id;
    });
    assert.ok(accept, `an accept action for ${PROPOSAL.id} among: ${JSON.stringify(actions.map((a) => a.title))}`);
    assert.match(accept.title, new RegExp(`^Accept proposal ${PROPOSAL.id}`));
    assert.equal((accept as CodeAction).kind, "quickfix");
    assert.deepEqual(
      ((accept as CodeAction).diagnostics ?? []).map((d) => d.code),
      ["pending-proposal"],
      "the accept is attached to the pending-proposal diagnostic, so the lightbulb lists it",
    );
    for (const verb of ["Reject proposal", "Show diff of proposal"]) {
      assert.ok(
        actions.some((a) => a.title.startsWith(`${verb} ${PROPOSAL.id}`)),
        `a "${verb} ${PROPOSAL.id}" action among: ${JSON.stringify(actions.map((a) => a.title))}`,
      );
    }

    // ── run it the way vscode-languageclient does: workspace/executeCommand ──
    const beforeAccept = inbox.seen.length;
    const cmd = commandOf(accept)!;
    const accepted = await rpc<ReviewedProposalResult>("workspace/executeCommand", {
      command: cmd.command,
      arguments: cmd.arguments,
    });
    assert.equal(accepted.proposal.id, PROPOSAL.id);
    assert.equal(accepted.proposal.status, "accepted");
    assert.equal(accepted.message, `accepted proposal ${PROPOSAL.id}; behavior now has 2 active learned rules`);

    const onDisk = fs.readFileSync(learnedPath, "utf8");
    for (const r of PROPOSAL.rules) {
      assert.ok(onDisk.includes(JSON.stringify(r.text)), `the learned file holds ${JSON.stringify(r.text)}:\n${onDisk}`);
      assert.ok(onDisk.includes(r.id!), `the learned file keeps rule id ${r.id}:\n${onDisk}`);
    }
    const record = JSON.parse(fs.readFileSync(path.join(store, "proposals", `${PROPOSAL.id}.json`), "utf8"));
    assert.equal(record.status, "accepted");

    // ── the store changed: the status bar's notification ──
    const changed = await inbox.next<{ pending: number; by_domain: Record<string, number> }>(
      "mecha/proposalsChanged after the accept",
      beforeAccept,
      (m) => m === "mecha/proposalsChanged",
      stderr,
    );
    assert.equal(changed.pending, 0);
    assert.deepEqual(changed.by_domain ?? {}, {});

    // ── shutdown, exit, exit code 0 ──
    const exited = exitOf(child);
    assert.equal(await rpc<null>("shutdown"), null);
    await connection.sendNotification("exit");
    const code = await bounded("exit", exited, stderr);
    assert.equal(code, 0, `exit code after shutdown + exit\nserver stderr:\n${stderr()}`);
  } finally {
    connection?.dispose();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill();
    }
    fs.rmSync(store, { recursive: true, force: true });
    fs.rmSync(decoy, { recursive: true, force: true });
  }
});
