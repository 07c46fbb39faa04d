/**
 * The file VS Code loads (`main`, the esbuild bundle) — with the `vscode`
 * module replaced. It must carry vscode-languageclient inside it, because the
 * package is built with `--no-dependencies`.
 */
import { vscode } from "./useFakeVscode";

import assert from "node:assert/strict";
import * as fs from "node:fs";
import { builtinModules } from "node:module";
import * as path from "node:path";
import { test } from "node:test";

const ROOT = path.join(__dirname, "..", "..");
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
const MAIN = path.join(ROOT, manifest.main);

test("the bundle requires nothing but Node's own modules and vscode", () => {
  const text = fs.readFileSync(MAIN, "utf8");
  const required = new Set([...text.matchAll(/\brequire\(["']([^"']+)["']\)/g)].map((m) => m[1]));
  const builtin = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
  const outside = [...required].filter((r) => r !== "vscode" && !builtin.has(r));
  assert.deepEqual(outside, []);
  assert.ok(required.has("vscode"));
  assert.match(text, /\bLanguageClient\b/, "vscode-languageclient is bundled");
});

test("the bundle activates: palette commands and the status bar item, then deactivates", async () => {
  vscode.__reset();
  const ext = require(MAIN) as { activate(c: unknown): void; deactivate(): Promise<void> };
  const context = { subscriptions: [] as { dispose(): unknown }[] };
  ext.activate(context);
  const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
  assert.deepEqual([...vscode.recorded.commands.keys()].sort(), contributed);
  assert.equal(vscode.recorded.statusBarItems[0]?.command, "mecha.client.listProposals");
  await ext.deactivate();
  context.subscriptions.forEach((d) => d.dispose());
  assert.equal(vscode.recorded.commands.size, 0);
});
