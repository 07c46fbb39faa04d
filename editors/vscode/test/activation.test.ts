/**
 * The wiring, with the `vscode` module replaced by the fake in ./fakes and a
 * fake language client: what activation registers, how the status bar
 * follows the server, and that the commands reach the server.
 */
import { vscode } from "./useFakeVscode";

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { beforeEach, describe, test } from "node:test";

import { activateWith, type ClientOptions, type MechaClient, type MechaExtension } from "../src/activation";
import { CLIENT_COMMANDS, SERVER_COMMANDS, type Proposal } from "../src/protocol";
import { AFTER, BEFORE, acceptedMessage, listing, proposal } from "./fixtures";

const { recorded } = vscode;

const P1 = proposal("20250102T030405-11111111", "behavior", BEFORE, AFTER);
const P2 = proposal("20250103T030405-22222222", "behavior", AFTER, BEFORE);
const P3 = proposal("20250104T030405-33333333", "writing", [], [AFTER[1]]);

class FakeClient implements MechaClient {
  started = false;
  stopped = false;
  readonly sent: { method: string; params: any }[] = [];
  private readonly handlers = new Map<string, (params: any) => void>();
  private runningListeners: ((running: boolean) => void)[] = [];

  constructor(
    readonly options: ClientOptions,
    private readonly server: FakeServer,
    private readonly failStart?: Error,
  ) {}

  async start(): Promise<void> {
    if (this.failStart) {
      throw this.failStart;
    }
    this.started = true;
    this.runningListeners.forEach((l) => l(true));
    // As `mecha-sidecar lsp` does on its first look at the store.
    this.notify("mecha/proposalsChanged", this.server.counts());
  }
  async stop(): Promise<void> {
    this.stopped = true;
    this.runningListeners.forEach((l) => l(false));
  }
  async sendRequest<R>(method: string, params: any): Promise<R> {
    this.sent.push({ method, params });
    const answer = this.server.answer(method, params) as R;
    if (method === "workspace/executeCommand") {
      // As the server does after every command: the counts, whatever they are.
      setImmediate(() => this.notify("mecha/proposalsChanged", this.server.counts()));
    }
    return answer;
  }
  onNotification(method: string, handler: (params: any) => void) {
    this.handlers.set(method, handler);
    return new vscode.Disposable(() => this.handlers.delete(method));
  }
  onRunningChange(listener: (running: boolean) => void) {
    this.runningListeners.push(listener);
    return new vscode.Disposable(() => (this.runningListeners = this.runningListeners.filter((l) => l !== listener)));
  }
  /** The server sends a notification. */
  notify(method: string, params: unknown): void {
    const handler = this.handlers.get(method);
    assert.ok(handler, `no handler for ${method}`);
    handler(params);
  }
  /** What the extension asked `workspace/executeCommand` to run. */
  get executed(): { command: string; arguments: unknown[] }[] {
    return this.sent.filter((s) => s.method === "workspace/executeCommand").map((s) => s.params);
  }
}

interface FakeServer {
  answer(method: string, params: any): unknown;
  /** `mecha/proposalsChanged`'s params, as the server counts them. */
  counts(): { pending: number; by_domain: Record<string, number> };
}

/** A server with these proposals, answering like `mecha-sidecar lsp`. */
function serverWith(proposals: Proposal[]): FakeServer {
  let state = proposals.map((p) => ({ ...p }));
  const pending = () => state.filter((p) => p.status === "pending");
  const counts = () => {
    const byDomain: Record<string, number> = {};
    for (const p of pending()) {
      byDomain[p.domain] = (byDomain[p.domain] ?? 0) + 1;
    }
    return { pending: pending().length, by_domain: byDomain };
  };
  const answer = (method: string, params: any): unknown => {
    if (method === "mecha/proposals") {
      return { proposals: params?.status === "pending" ? pending() : state };
    }
    if (method === "mecha/proposal") {
      const p = state.find((x) => x.id === params.id);
      if (!p) {
        throw new Error(`no proposal matching \`${params.id}\``);
      }
      return { proposal: p, diff: `--- ${p.id} before\n+++ ${p.id} after\n@@\n+- ${p.rules.at(-1)?.text}\n` };
    }
    if (method === "workspace/executeCommand") {
      const [first, second] = params.arguments ?? [];
      switch (params.command) {
        case SERVER_COMMANDS.listProposals:
          return listing(first?.status === "pending" ? pending() : state);
        case SERVER_COMMANDS.acceptProposal:
        case SERVER_COMMANDS.rejectProposal: {
          const accept = params.command === SERVER_COMMANDS.acceptProposal;
          const status = accept ? "accepted" : "rejected";
          state = state.map((p) => (p.id === first ? { ...p, status, reason: second ?? null } : p));
          const p = state.find((x) => x.id === first)!;
          return { proposal: p, message: accept ? acceptedMessage(p) : `rejected proposal ${p.id}`, exports: [] };
        }
        case SERVER_COMMANDS.learnNow:
          return { job: { id: "20250105T000000-learn-abcdef-7", kind: "learn", domain: first, state: "running", started_at: "t" } };
      }
    }
    throw new Error(`unexpected ${method} ${JSON.stringify(params)}`);
  };
  return { answer, counts };
}

interface Harness {
  ext: MechaExtension;
  clients: FakeClient[];
  context: { subscriptions: { dispose(): unknown }[] };
}

function activate(server = serverWith([P1, P2, P3]), failStart?: Error): Harness {
  const clients: FakeClient[] = [];
  const context = { subscriptions: [] as { dispose(): unknown }[] };
  const ext = activateWith(context as any, (options) => {
    const client = new FakeClient(options, server, failStart);
    clients.push(client);
    return client;
  });
  return { ext, clients, context };
}

function openRulesFile(name = "behavior.learned.toml"): void {
  vscode.__openDocument(vscode.Uri.file(`/store/rules/${name}`), "toml", "[[rules]]\ntext = \"x\"\n");
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Lets queued promise chains run until `done()` holds (at most 50 turns). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 50 && !done(); i++) {
    await tick();
  }
}

beforeEach(() => vscode.__reset());

describe("activation", () => {
  test("registers the palette commands, the proposal scheme and the status bar item", () => {
    const { context } = activate();
    assert.deepEqual([...recorded.commands.keys()].sort(), Object.values(CLIENT_COMMANDS).sort());
    for (const id of Object.values(SERVER_COMMANDS)) {
      assert.ok(!recorded.commands.has(id), `${id} is left to vscode-languageclient`);
    }
    assert.ok(recorded.contentProviders.has("mecha-proposal"));
    assert.equal(recorded.statusBarItems.length, 1);
    const item = recorded.statusBarItems[0];
    assert.equal(item.command, "mecha.client.listProposals");
    assert.equal(item.alignment, vscode.StatusBarAlignment.Left);
    assert.equal(context.subscriptions.length, 1);
    context.subscriptions[0].dispose();
    assert.equal(recorded.commands.size, 0, "disposing the extension unregisters its commands");
  });

  test("every palette command is contributed in package.json, with a title under category mecha", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
    const contributed = manifest.contributes.commands;
    assert.deepEqual(contributed.map((c: any) => c.command).sort(), Object.values(CLIENT_COMMANDS).sort());
    for (const c of contributed) {
      assert.equal(c.category, "mecha");
      assert.ok(c.title);
      assert.ok(manifest.activationEvents.includes(`onCommand:${c.command}`), c.command);
    }
    assert.equal(manifest.main, "./out/extension.js");
    assert.match(manifest.engines.vscode, /^\^1\.(9[1-9]|[1-9]\d\d)/);
  });

  test("the server is not started until a rules file is in sight", async () => {
    const { clients } = activate();
    await tick();
    assert.equal(clients.length, 0);
    vscode.__openDocument(vscode.Uri.file("/proj/Cargo.toml"), "toml");
    await tick();
    assert.equal(clients.length, 0);
    openRulesFile("writing.user.toml");
    await tick();
    assert.equal(clients.length, 1);
    assert.ok(clients[0].started);
  });

  test("a rules file already open starts the server with the settings; the status shows the pending count", async () => {
    recorded.settings = {
      "mecha.serverPath": "/opt/mecha/bin/mecha-sidecar",
      "mecha.serverArgs": ["--json"],
      "mecha.learningDir": "${workspaceFolder}/store",
    };
    vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file("/proj"), name: "proj" }];
    openRulesFile();
    const { ext, clients } = activate();
    await ext.ensureStarted();
    assert.equal(clients.length, 1);
    const { options } = clients[0];
    assert.deepEqual(options.server, { command: "/opt/mecha/bin/mecha-sidecar", args: ["--json", "lsp"] });
    assert.deepEqual(options.initializationOptions, { learningDir: "/proj/store" });
    assert.deepEqual(options.documentSelector.map((s) => s.pattern), ["**/rules/*.user.toml", "**/rules/*.learned.toml"]);
    assert.deepEqual(clients[0].sent, [], "the counts are the server's notification, not a listing counted here");
    const item = recorded.statusBarItems[0];
    assert.ok(item.visible);
    assert.equal(item.text, "$(git-pull-request) mecha: 3 proposals");
    assert.match(item.tooltip ?? "", /behavior: 2, writing: 1/);
  });

  test("rules files in the workspace start the server at activation", async () => {
    recorded.workspaceFiles = [vscode.Uri.file("/proj/.mecha/rules/behavior.user.toml")];
    const { clients } = activate();
    await until(() => clients.length > 0);
    assert.equal(clients.length, 1);
  });

  test("the status bar follows mecha/proposalsChanged and mecha/jobFinished", async () => {
    openRulesFile();
    const { ext, clients } = activate(serverWith([P1]));
    await ext.ensureStarted();
    const item = recorded.statusBarItems[0];
    assert.equal(item.text, "$(git-pull-request) mecha: 1 proposal");

    clients[0].notify("mecha/proposalsChanged", { pending: 0, by_domain: {} });
    assert.equal(item.text, "$(check) mecha");
    clients[0].notify("mecha/proposalsChanged", { pending: 4, by_domain: { behavior: 4 } });
    assert.equal(item.text, "$(git-pull-request) mecha: 4 proposals");

    const before = clients[0].sent.length;
    recorded.messageAnswers.push(undefined);
    clients[0].notify("mecha/jobFinished", {
      job: { id: "j", kind: "learn", domain: "behavior", state: "done", started_at: "t", proposal_id: P1.id },
    });
    await tick();
    assert.deepEqual(clients[0].sent.slice(before), [], "nothing asked: the server tells");
    assert.equal(item.text, "$(git-pull-request) mecha: 4 proposals");
    assert.match(recorded.messages.at(-1)?.text ?? "", /learn pass for behavior proposed 20250102T030405-11111111/);
  });

  test("the list command: pick a proposal, accept it — the right executeCommand calls, then a refresh", async () => {
    openRulesFile();
    const { ext, clients } = activate();
    await ext.ensureStarted();
    recorded.pickAnswers.push(
      (items) => items.find((i: any) => i.label === P2.id),
      (items) => items.find((i: any) => i.label.includes("Accept")),
    );
    await vscode.commands.executeCommand(CLIENT_COMMANDS.listProposals);
    assert.deepEqual(clients[0].executed, [
      { command: "mecha.listProposals", arguments: [{ status: "pending" }] },
      { command: "mecha.acceptProposal", arguments: [P2.id] },
    ]);
    assert.deepEqual(
      recorded.quickPicks[0].items.map((i) => [i.label, i.description]),
      [
        [P1.id, "behavior · 1 → 2 active rules"],
        [P2.id, "behavior · 2 → 1 active rules"],
        [P3.id, "writing · 0 → 1 active rules"],
      ],
    );
    await tick();
    assert.equal(recorded.statusBarItems[0].text, "$(git-pull-request) mecha: 2 proposals");
    assert.ok(recorded.messages.some((m) => m.level === "info" && m.text === `mecha: accepted proposal ${P2.id}; behavior now has 1 active learned rules.`));
  });

  test("clicking the status bar item runs the list command, which starts the server if need be", async () => {
    const { clients } = activate(serverWith([]));
    const item = recorded.statusBarItems[0];
    await vscode.commands.executeCommand(item.command!);
    assert.equal(clients.length, 1);
    assert.deepEqual(clients[0].executed, [{ command: "mecha.listProposals", arguments: [{ status: "pending" }] }]);
    assert.deepEqual(recorded.messages.map((m) => m.text), ["mecha: no pending proposals."]);
  });

  test("show diff opens mecha-proposal:/<id>.diff as a read-only diff document with the server's diff", async () => {
    openRulesFile();
    const { ext, clients } = activate();
    await ext.ensureStarted();
    await vscode.commands.executeCommand(CLIENT_COMMANDS.showProposalDiff, P1.id);
    assert.equal(recorded.shown.length, 1);
    const doc = recorded.shown[0];
    assert.equal(doc.uri.toString(), `mecha-proposal:/${P1.id}.diff`);
    assert.equal(doc.languageId, "diff");
    assert.equal(doc.text, `--- ${P1.id} before\n+++ ${P1.id} after\n@@\n+- Run the tests before saying a change is done.\n`);
    assert.deepEqual(clients[0].sent.at(-1), { method: "mecha/proposal", params: { id: P1.id } });
  });

  test("the registered content provider answers a mecha-proposal: URI directly", async () => {
    openRulesFile();
    const { ext } = activate();
    await ext.ensureStarted();
    const provider = recorded.contentProviders.get("mecha-proposal")!;
    const text = await provider.provideTextDocumentContent(vscode.Uri.parse(`mecha-proposal:/${P3.id}.diff`));
    assert.match(text, /^--- 20250104T030405-33333333 before\n/);
  });

  test("reject from the palette asks for a reason and sends it", async () => {
    openRulesFile();
    const { ext, clients } = activate();
    await ext.ensureStarted();
    recorded.inputAnswers.push(() => "not how I work");
    await vscode.commands.executeCommand(CLIENT_COMMANDS.rejectProposal, P3.id);
    assert.deepEqual(clients[0].executed, [{ command: "mecha.rejectProposal", arguments: [P3.id, "not how I work"] }]);
  });

  test("learn now with a domain argument runs mecha.learnNow", async () => {
    openRulesFile();
    const { ext, clients } = activate();
    await ext.ensureStarted();
    await vscode.commands.executeCommand(CLIENT_COMMANDS.learnNow, "writing");
    assert.deepEqual(clients[0].executed, [{ command: "mecha.learnNow", arguments: ["writing"] }]);
  });

  test("server errors from a command become an error message, not an exception", async () => {
    openRulesFile();
    const { ext } = activate();
    await ext.ensureStarted();
    await vscode.commands.executeCommand(CLIENT_COMMANDS.showProposalDiff, "nope");
    assert.deepEqual(recorded.messages.filter((m) => m.level === "error").map((m) => m.text), [
      "mecha: no proposal matching `nope`",
    ]);
  });

  test("the middleware handed to the client opens the diff for the server's own showProposalDiff", async () => {
    openRulesFile();
    const { ext, clients } = activate();
    await ext.ensureStarted();
    const next = async (command: string, args: unknown[]) => ({ uri: `mecha-proposal:/${args[0]}.diff`, id: args[0], diff: "x" });
    await clients[0].options.executeCommand("mecha.showProposalDiff", [P1.id], next);
    assert.equal(recorded.shown[0]?.uri.toString(), `mecha-proposal:/${P1.id}.diff`);
  });

  test("a server that cannot start leaves a warning in the status bar and offers the settings", async () => {
    openRulesFile();
    recorded.messageAnswers.push(undefined);
    const { ext } = activate(serverWith([]), new Error("spawn mecha-sidecar ENOENT"));
    await assert.rejects(ext.ensureStarted(), /ENOENT/);
    const item = recorded.statusBarItems[0];
    assert.equal(item.text, "$(warning) mecha");
    assert.match(item.tooltip ?? "", /ENOENT/);
    const error = recorded.messages.find((m) => m.level === "error");
    assert.match(error?.text ?? "", /could not start `mecha-sidecar lsp --stdio`: spawn mecha-sidecar ENOENT/);
    assert.deepEqual(error?.items, ["Open Settings"]);
  });

  test("restart stops the old client and starts a new one; stop shows the server as stopped", async () => {
    openRulesFile();
    const { ext, clients } = activate();
    await ext.ensureStarted();
    await vscode.commands.executeCommand(CLIENT_COMMANDS.restartServer);
    assert.equal(clients.length, 2);
    assert.ok(clients[0].stopped);
    assert.ok(clients[1].started);
    await ext.stop();
    assert.ok(clients[1].stopped);
    assert.equal(recorded.statusBarItems[0].text, "$(warning) mecha");
  });

  test("changing a server setting offers a restart", async () => {
    openRulesFile();
    const { ext, clients } = activate();
    await ext.ensureStarted();
    recorded.messageAnswers.push("Restart");
    vscode.__changeSettings(["mecha.serverPath"]);
    await until(() => clients.length === 2 && clients[1].started);
    assert.equal(clients.length, 2);
    assert.ok(clients[0].stopped);
    vscode.__changeSettings(["editor.fontSize"]);
    await tick();
    assert.equal(clients.length, 2);
  });
});
