/**
 * The client capabilities VS Code sends through vscode-languageclient 11 (the
 * parts a rules-file server can see a difference in), written out so the
 * real-server test initialises the way the editor does.
 */
import type { ClientCapabilities } from "vscode-languageserver-protocol";

import { CLIENT_EXTENSIONS } from "../src/protocol";

export const VSCODE_CLIENT_INFO = { name: "Visual Studio Code", version: "1.91.0" };

export const VSCODE_CAPABILITIES: ClientCapabilities = {
  workspace: {
    applyEdit: true,
    workspaceEdit: {
      documentChanges: true,
      resourceOperations: ["create", "rename", "delete"],
      failureHandling: "textOnlyTransactional",
      normalizesLineEndings: true,
      changeAnnotationSupport: { groupsOnLabel: true },
    },
    configuration: true,
    didChangeWatchedFiles: { dynamicRegistration: true, relativePatternSupport: true },
    symbol: { dynamicRegistration: true },
    codeLens: { refreshSupport: true },
    executeCommand: { dynamicRegistration: true },
    didChangeConfiguration: { dynamicRegistration: true },
    workspaceFolders: true,
    semanticTokens: { refreshSupport: true },
    inlayHint: { refreshSupport: true },
    inlineValue: { refreshSupport: true },
    diagnostics: { refreshSupport: true },
    fileOperations: {
      dynamicRegistration: true,
      didCreate: true,
      didRename: true,
      didDelete: true,
      willCreate: true,
      willRename: true,
      willDelete: true,
    },
  },
  textDocument: {
    publishDiagnostics: {
      relatedInformation: true,
      versionSupport: false,
      tagSupport: { valueSet: [1, 2] },
      codeDescriptionSupport: true,
      dataSupport: true,
    },
    synchronization: { dynamicRegistration: true, willSave: true, willSaveWaitUntil: true, didSave: true },
    hover: { dynamicRegistration: true, contentFormat: ["markdown", "plaintext"] },
    codeAction: {
      dynamicRegistration: true,
      isPreferredSupport: true,
      disabledSupport: true,
      dataSupport: true,
      resolveSupport: { properties: ["edit"] },
      codeActionLiteralSupport: {
        codeActionKind: {
          valueSet: [
            "",
            "quickfix",
            "refactor",
            "refactor.extract",
            "refactor.inline",
            "refactor.rewrite",
            "source",
            "source.organizeImports",
          ],
        },
      },
      honorsChangeAnnotations: true,
    },
    codeLens: { dynamicRegistration: true },
    documentSymbol: { dynamicRegistration: true, hierarchicalDocumentSymbolSupport: true, labelSupport: true },
    formatting: { dynamicRegistration: true },
    diagnostic: { dynamicRegistration: true, relatedDocumentSupport: false },
  },
  window: {
    showMessage: { messageActionItem: { additionalPropertiesSupport: true } },
    showDocument: { support: true },
    workDoneProgress: true,
  },
  general: {
    staleRequestSupport: {
      cancel: true,
      retryOnContentModified: [
        "textDocument/semanticTokens/full",
        "textDocument/semanticTokens/range",
        "textDocument/semanticTokens/full/delta",
      ],
    },
    regularExpressions: { engine: "ECMAScript", version: "ES2020" },
    markdown: { parser: "marked", version: "1.1.0" },
    positionEncodings: ["utf-16"],
  },
  notebookDocument: { synchronization: { dynamicRegistration: true, executionSummarySupport: true } },
  // Added by the extension's own feature (src/client.ts).
  experimental: CLIENT_EXTENSIONS,
};
