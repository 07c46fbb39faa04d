/** VS Code's entry point: `activate` and `deactivate`. */
import type * as vscode from "vscode";

import { activateWith, type MechaExtension } from "./activation";
import { createLanguageClient } from "./client";

let extension: MechaExtension | undefined;

export function activate(context: vscode.ExtensionContext): void {
  extension = activateWith(context, createLanguageClient);
}

export async function deactivate(): Promise<void> {
  const ext = extension;
  extension = undefined;
  await ext?.stop();
}
