/**
 * Wiring: VS Code's API on one side, the plain modules on the other. The
 * language client comes from a factory so the wiring itself is tested with a
 * fake `vscode` module and a fake client.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import * as vscode from "vscode";

import { ProposalCommands, type PickItem, type Rpc, type Ui } from "./commands";
import {
  DOCUMENT_SELECTOR,
  RUN_DOMAINS,
  defaultLearningDir,
  initializationOptions,
  mergeDomains,
  proposalUri,
  readSettings,
  resolveLearningDir,
  rulesFile,
  serverCommand,
  type ServerCommand,
} from "./config";
import { executeCommandMiddleware, type Next } from "./middleware";
import { ProposalDocumentProvider } from "./proposalDocument";
import {
  CLIENT_COMMANDS,
  METHODS,
  PROPOSAL_SCHEME,
  type JobFinishedParams,
  type ProposalsChangedParams,
} from "./protocol";
import { formatStatus, type StatusState } from "./status";

/** What the extension needs from a language client. */
export interface MechaClient {
  start(): Promise<void>;
  stop(): Promise<void>;
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  onNotification(method: string, handler: (params: any) => void): vscode.Disposable;
  /** Called with `false` when the server stops (or crashes), `true` when it runs. */
  onRunningChange(listener: (running: boolean) => void): vscode.Disposable;
}

export interface ClientOptions {
  server: ServerCommand;
  initializationOptions: { learningDir?: string };
  documentSelector: typeof DOCUMENT_SELECTOR;
  executeCommand: (command: string, args: unknown[], next: Next) => Promise<unknown>;
}

export type ClientFactory = (options: ClientOptions) => MechaClient;

const RULES_FILES_GLOB = "**/rules/*.{user,learned}.toml";
const SERVER_SETTINGS = ["mecha.serverPath", "mecha.learningDir", "mecha.serverArgs"];

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class MechaExtension implements vscode.Disposable {
  private client: MechaClient | undefined;
  private starting: Promise<MechaClient> | undefined;
  private clientDisposables: vscode.Disposable[] = [];
  private readonly disposables: vscode.Disposable[] = [];
  readonly status: vscode.StatusBarItem;
  readonly provider: ProposalDocumentProvider<vscode.Uri>;
  readonly commands: ProposalCommands;
  private statusState: StatusState = { kind: "stopped" };

  constructor(private readonly createClient: ClientFactory) {
    this.status = vscode.window.createStatusBarItem("mecha.proposals", vscode.StatusBarAlignment.Left, 50);
    this.status.name = "mecha proposals";
    this.status.command = CLIENT_COMMANDS.listProposals;
    this.disposables.push(this.status);

    const rpc: Rpc = {
      executeCommand: async <T>(command: string, args: unknown[]) =>
        (await this.ensureStarted()).sendRequest<T>(METHODS.executeCommand, { command, arguments: args }),
      request: async <T>(method: string, params: unknown) => (await this.ensureStarted()).sendRequest<T>(method, params),
    };
    const changed = new vscode.EventEmitter<vscode.Uri>();
    this.disposables.push(changed);
    this.provider = new ProposalDocumentProvider<vscode.Uri>(rpc.request, changed);
    this.commands = new ProposalCommands(rpc, this.ui());
  }

  /** Registers everything; starts the server now if a rules file is in sight. */
  activate(context: vscode.ExtensionContext): void {
    context.subscriptions.push(this);
    const guard =
      <A extends unknown[]>(fn: (...args: A) => Promise<unknown>) =>
      async (...args: A): Promise<unknown> => {
        try {
          return await fn(...args);
        } catch (err) {
          void vscode.window.showErrorMessage(`mecha: ${errorMessage(err)}`);
          return undefined;
        }
      };
    const c = this.commands;
    const register = (id: string, fn: (...args: any[]) => Promise<unknown>) =>
      this.disposables.push(vscode.commands.registerCommand(id, guard(fn)));
    register(CLIENT_COMMANDS.learnNow, (domain?: string) => c.learnNow(domain));
    register(CLIENT_COMMANDS.listProposals, () => c.listProposals());
    register(CLIENT_COMMANDS.acceptProposal, (id?: string) => c.acceptProposal(id));
    register(CLIENT_COMMANDS.rejectProposal, (id?: string, reason?: string) => c.rejectProposal(id, reason));
    register(CLIENT_COMMANDS.showProposalDiff, (id?: string) => c.showProposalDiff(id));
    register(CLIENT_COMMANDS.restartServer, () => this.restart());

    this.disposables.push(
      vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, {
        onDidChange: this.provider.onDidChange as vscode.Event<vscode.Uri>,
        provideTextDocumentContent: (uri) => this.provider.provideTextDocumentContent(uri),
      }),
      vscode.workspace.onDidOpenTextDocument((doc) => {
        if (!this.client && !this.starting && isRulesDocument(doc)) {
          void this.startQuietly();
        }
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (this.client && SERVER_SETTINGS.some((s) => e.affectsConfiguration(s))) {
          void vscode.window
            .showInformationMessage("mecha: restart the language server to use the new settings?", "Restart")
            .then((choice) => (choice === "Restart" ? guard(() => this.restart())() : undefined));
        }
      }),
    );
    void this.startIfRulesInSight();
  }

  private async startIfRulesInSight(): Promise<void> {
    if (vscode.workspace.textDocuments.some(isRulesDocument)) {
      await this.startQuietly();
      return;
    }
    const found = await vscode.workspace.findFiles(RULES_FILES_GLOB, "**/node_modules/**", 1);
    if (found.length > 0) {
      await this.startQuietly();
    }
  }

  private async startQuietly(): Promise<void> {
    try {
      await this.ensureStarted();
    } catch {
      // ensureStarted already said why, in the status bar and a message.
    }
  }

  /** The running client, starting it first if need be. */
  ensureStarted(): Promise<MechaClient> {
    if (this.client) {
      return Promise.resolve(this.client);
    }
    if (!this.starting) {
      this.starting = this.start().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  private async start(): Promise<MechaClient> {
    const settings = readSettings((key, fallback) => vscode.workspace.getConfiguration("mecha").get(key, fallback));
    let client: MechaClient;
    try {
      const learningDir = resolveLearningDir(settings.learningDir, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
      const ui = this.ui();
      client = this.createClient({
        server: serverCommand(settings),
        initializationOptions: initializationOptions(learningDir),
        documentSelector: DOCUMENT_SELECTOR,
        executeCommand: executeCommandMiddleware({
          ui,
          openText: (content, language) => this.openText(content, language),
        }),
      });
    } catch (err) {
      this.setStatus({ kind: "stopped", error: errorMessage(err) });
      void vscode.window.showErrorMessage(`mecha: ${errorMessage(err)}`);
      throw err;
    }
    this.setStatus({ kind: "starting" });
    this.clientDisposables = [
      client.onNotification(METHODS.proposalsChanged, (params: ProposalsChangedParams) => {
        this.setStatus({ kind: "ready", pending: params?.pending ?? 0, byDomain: params?.by_domain ?? {} });
        this.refreshOpenProposalDocuments();
      }),
      client.onNotification(METHODS.jobFinished, (params: JobFinishedParams) => this.jobFinished(params)),
      client.onRunningChange((running) => {
        if (!running && this.client === client) {
          this.setStatus({ kind: "stopped" });
        }
      }),
    ];
    try {
      await client.start();
    } catch (err) {
      this.disposeClientListeners();
      const why = errorMessage(err);
      this.setStatus({ kind: "stopped", error: why });
      const cmd = [settings.serverPath, ...serverCommand(settings).args, "--stdio"].join(" ");
      void vscode.window
        .showErrorMessage(`mecha: could not start \`${cmd}\`: ${why}`, "Open Settings")
        .then((choice) =>
          choice === "Open Settings" ? vscode.commands.executeCommand("workbench.action.openSettings", "mecha.") : undefined,
        );
      throw err;
    }
    // The status stays "starting" until the server's first
    // `mecha/proposalsChanged` (it sends one on its first look at the store,
    // and again after every command): the counts are the server's, never
    // counted here.
    this.client = client;
    return client;
  }

  private jobFinished(params: JobFinishedParams): void {
    this.refreshOpenProposalDocuments();
    const job = params?.job;
    if (job?.proposal_id) {
      const id = job.proposal_id;
      void vscode.window
        .showInformationMessage(
          `mecha: the ${job.kind} pass${job.domain ? ` for ${job.domain}` : ""} proposed ${id}.`,
          "Show Diff",
          "Review…",
        )
        .then((choice) => {
          if (choice === "Show Diff") {
            return vscode.commands.executeCommand(CLIENT_COMMANDS.showProposalDiff, id);
          }
          if (choice === "Review…") {
            return vscode.commands.executeCommand(CLIENT_COMMANDS.listProposals);
          }
          return undefined;
        });
    }
  }

  private refreshOpenProposalDocuments(): void {
    this.provider.refresh(
      vscode.workspace.textDocuments.filter((d) => d.uri.scheme === PROPOSAL_SCHEME).map((d) => d.uri),
    );
  }

  setStatus(state: StatusState): void {
    this.statusState = state;
    const view = formatStatus(state);
    this.status.text = view.text;
    this.status.tooltip = view.tooltip;
    this.status.show();
  }

  get currentStatus(): StatusState {
    return this.statusState;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.ensureStarted();
  }

  async stop(): Promise<void> {
    if (this.starting) {
      await this.starting.catch(() => undefined);
    }
    const client = this.client;
    this.client = undefined;
    this.disposeClientListeners();
    if (client) {
      await client.stop();
    }
    this.setStatus({ kind: "stopped" });
  }

  private disposeClientListeners(): void {
    for (const d of this.clientDisposables) {
      d.dispose();
    }
    this.clientDisposables = [];
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
    this.disposables.length = 0;
  }

  private async openText(content: string, language: string): Promise<void> {
    const doc = await vscode.workspace.openTextDocument({ content, language });
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  private ui(): Ui {
    return {
      pick: async <T extends PickItem>(items: T[], options: { title: string; placeHolder?: string }) =>
        vscode.window.showQuickPick(items, { ...options, matchOnDescription: true, matchOnDetail: true }),
      input: async (options) =>
        vscode.window.showInputBox({
          title: options.title,
          prompt: options.prompt,
          placeHolder: options.placeHolder,
          value: options.value,
          validateInput: options.validate,
        }),
      info: (message) => void vscode.window.showInformationMessage(message),
      error: (message) => void vscode.window.showErrorMessage(message),
      openProposal: async (id) => {
        let doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(proposalUri(id)));
        if (doc.languageId !== "diff") {
          doc = await vscode.languages.setTextDocumentLanguage(doc, "diff");
        }
        await vscode.window.showTextDocument(doc, { preview: true });
      },
      knownDomains: async () => {
        const active = vscode.window.activeTextEditor?.document;
        const fromEditor = active && active.uri.scheme === "file" ? rulesFile(active.uri.fsPath)?.domain : undefined;
        const files = await vscode.workspace.findFiles(RULES_FILES_GLOB, "**/node_modules/**", 200);
        const fromWorkspace = files.map((u) => rulesFile(u.fsPath)?.domain);
        const fromStore = await storeDomains(this.learningDirForListing());
        return mergeDomains([fromEditor], fromStore, fromWorkspace, RUN_DOMAINS);
      },
    };
  }

  private learningDirForListing(): string {
    const settings = readSettings((key, fallback) => vscode.workspace.getConfiguration("mecha").get(key, fallback));
    try {
      return (
        resolveLearningDir(settings.learningDir, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath) ||
        defaultLearningDir()
      );
    } catch {
      return defaultLearningDir();
    }
  }
}

function isRulesDocument(doc: vscode.TextDocument): boolean {
  return doc.uri.scheme === "file" && rulesFile(doc.uri.fsPath) !== undefined;
}

/** Domains with a rules file in `<dir>/rules/`, sorted; none when it cannot be read. */
async function storeDomains(dir: string): Promise<string[]> {
  try {
    const names = await fs.readdir(path.join(dir, "rules"));
    return names
      .map((n) => rulesFile(path.join(dir, "rules", n))?.domain)
      .filter((d): d is string => d !== undefined)
      .sort();
  } catch {
    return [];
  }
}

/** The extension's entry point, with the language client factory injected. */
export function activateWith(context: vscode.ExtensionContext, createClient: ClientFactory): MechaExtension {
  const ext = new MechaExtension(createClient);
  ext.activate(context);
  return ext;
}
