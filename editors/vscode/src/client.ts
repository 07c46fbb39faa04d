/** The real language client: vscode-languageclient over the server's stdio. */
import type * as vscode from "vscode";
import {
  LanguageClient,
  State,
  TransportKind,
  type FeatureState,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from "vscode-languageclient/node";

import type { ClientOptions, MechaClient } from "./activation";
import { CLIENT_EXTENSIONS } from "./protocol";

/** Says, at `initialize`, that this client is mecha's own (`CLIENT_EXTENSIONS`). */
const mechaExtensions: StaticFeature = {
  fillClientCapabilities(capabilities) {
    const prior = (capabilities.experimental ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...prior, ...CLIENT_EXTENSIONS };
  },
  initialize() {},
  getState: (): FeatureState => ({ kind: "static" }),
  clear() {},
};

export const CLIENT_ID = "mecha";

export function createLanguageClient(options: ClientOptions): MechaClient {
  const serverOptions: ServerOptions = {
    command: options.server.command,
    args: options.server.args,
    // The client appends `--stdio`; `mecha-sidecar lsp` accepts and ignores it.
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: options.documentSelector,
    initializationOptions: options.initializationOptions,
    middleware: { executeCommand: options.executeCommand },
  };
  // The id makes `mecha.trace.server` the trace setting.
  const client = new LanguageClient(CLIENT_ID, "mecha", serverOptions, clientOptions);
  client.registerFeature(mechaExtensions);
  return {
    start: () => client.start(),
    stop: () => (client.isRunning() ? client.stop() : Promise.resolve()),
    sendRequest: <R>(method: string, params: unknown) => client.sendRequest<R>(method, params),
    onNotification: (method, handler) => client.onNotification(method, handler),
    onRunningChange: (listener): vscode.Disposable =>
      client.onDidChangeState((e) => listener(e.newState === State.Running)),
  };
}
