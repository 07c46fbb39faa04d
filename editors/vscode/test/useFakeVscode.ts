/**
 * Makes `require("vscode")` load the fake in `./fakes/vscode` — for this test
 * process only; nothing is written to node_modules. Import it before any
 * module that imports `vscode`.
 *
 * Names the fake does not define resolve to an empty class, so third-party
 * code that subclasses VS Code types at load time (vscode-languageclient's
 * `class ProtocolCodeLens extends vscode.CodeLens`) still loads.
 */
import Module = require("node:module");
import * as path from "node:path";

import * as fake from "./fakes/vscode";

const FAKE_ID = path.join(__dirname, "fakes", "vscode-proxied.js");

const stubs = new Map<PropertyKey, unknown>();
const proxied = new Proxy(fake as Record<PropertyKey, unknown>, {
  get(target, name) {
    if (name in target || typeof name === "symbol" || name === "then") {
      return target[name];
    }
    if (!stubs.has(name)) {
      stubs.set(name, { [name]: class {} }[name as string]);
    }
    return stubs.get(name);
  },
});

const cached = new Module(FAKE_ID);
cached.filename = FAKE_ID;
cached.loaded = true;
cached.exports = proxied;
require.cache[FAKE_ID] = cached;

type Resolve = (request: string, parent: unknown, ...rest: unknown[]) => string;
const internals = Module as unknown as { _resolveFilename: Resolve };
const resolve = internals._resolveFilename;
internals._resolveFilename = function (this: unknown, request: string, parent: unknown, ...rest: unknown[]): string {
  return request === "vscode" ? FAKE_ID : resolve.call(this, request, parent, ...rest);
};

export const vscode = fake;
