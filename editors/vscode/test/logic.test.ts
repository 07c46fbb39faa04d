/** The plain modules: settings, status text, commands, middleware, the proposal document. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ProposalCommands, listed, rejectArgs, type PickItem, type Rpc, type Ui } from "../src/commands";
import {
  DOCUMENT_SELECTOR,
  domainProblem,
  initializationOptions,
  mergeDomains,
  proposalIdFromPath,
  proposalUri,
  readSettings,
  resolveLearningDir,
  rulesFile,
  serverCommand,
} from "../src/config";
import { executeCommandMiddleware } from "../src/middleware";
import { ProposalDocumentProvider } from "../src/proposalDocument";
import { CLIENT_COMMANDS, SERVER_COMMANDS, type Proposal } from "../src/protocol";
import { formatStatus } from "../src/status";
import { AFTER, BEFORE, acceptedMessage, listing, proposal, summary } from "./fixtures";

const P1 = proposal("20250102T030405-11111111", "behavior", BEFORE, AFTER);
const P2 = proposal("20250103T030405-22222222", "writing", [], [AFTER[1]]);

/** A server that answers from a table and records every call. */
function fakeRpc(answers: Record<string, (args: any) => unknown> = {}) {
  const calls: { kind: "command" | "request"; name: string; payload: unknown }[] = [];
  const rpc: Rpc = {
    async executeCommand<T>(command: string, args: unknown[]): Promise<T> {
      calls.push({ kind: "command", name: command, payload: args });
      const answer = answers[command];
      if (!answer) {
        throw new Error(`unexpected command ${command}`);
      }
      return answer(args) as T;
    },
    async request<T>(method: string, params: unknown): Promise<T> {
      calls.push({ kind: "request", name: method, payload: params });
      const answer = answers[method];
      if (!answer) {
        throw new Error(`unexpected request ${method}`);
      }
      return answer(params) as T;
    },
  };
  return { rpc, calls };
}

/** A person who answers pick lists and input boxes from a script. */
function fakeUi(script: { picks?: ((items: any[]) => any)[]; inputs?: (string | undefined)[]; domains?: string[] } = {}) {
  const picks = [...(script.picks ?? [])];
  const inputs = [...(script.inputs ?? [])];
  const log = {
    picked: [] as { title: string; labels: string[] }[],
    inputs: [] as string[],
    info: [] as string[],
    errors: [] as string[],
    opened: [] as string[],
  };
  const ui: Ui = {
    async pick<T extends PickItem>(items: T[], options: { title: string }): Promise<T | undefined> {
      log.picked.push({ title: options.title, labels: items.map((i) => i.label) });
      const answer = picks.shift();
      return answer ? answer(items) : undefined;
    },
    async input(options) {
      log.inputs.push(options.title);
      return inputs.shift();
    },
    info: (m) => void log.info.push(m),
    error: (m) => void log.errors.push(m),
    openProposal: async (id) => void log.opened.push(id),
    knownDomains: async () => script.domains ?? [],
  };
  return { ui, log };
}

const listAnswer = (proposals: Proposal[]) => ({ [SERVER_COMMANDS.listProposals]: () => listing(proposals) });
const byLabel = (label: string) => (items: PickItem[]) => items.find((i) => i.label === label);
const byPrefix = (prefix: string) => (items: PickItem[]) => items.find((i) => i.label.includes(prefix));

describe("settings and server arguments", () => {
  test("defaults: mecha-sidecar lsp, no learning dir", () => {
    const settings = readSettings((_key, fallback) => fallback);
    assert.deepEqual(settings, { serverPath: "mecha-sidecar", learningDir: "", serverArgs: [] });
    assert.deepEqual(serverCommand(settings), { command: "mecha-sidecar", args: ["lsp"] });
    assert.deepEqual(initializationOptions(""), {});
  });

  test("extra arguments go before the verb; learningDir goes into initializationOptions", () => {
    const values: Record<string, unknown> = { serverPath: " /opt/py/bin/python ", serverArgs: ["-m", "mecha.sidecar", 3], learningDir: "/srv/store" };
    const settings = readSettings((key, fallback) => (key in values ? (values[key] as typeof fallback) : fallback));
    assert.deepEqual(serverCommand(settings), { command: "/opt/py/bin/python", args: ["-m", "mecha.sidecar", "lsp"] });
    assert.deepEqual(initializationOptions(settings.learningDir), { learningDir: "/srv/store" });
  });

  test("wrong types and blanks fall back to the defaults", () => {
    const values: Record<string, unknown> = { serverPath: "  ", serverArgs: "--json", learningDir: 7 };
    const settings = readSettings((key, fallback) => (key in values ? (values[key] as typeof fallback) : fallback));
    assert.deepEqual(settings, { serverPath: "mecha-sidecar", learningDir: "", serverArgs: [] });
  });

  test("~ and ${workspaceFolder} are expanded in the learning dir", () => {
    assert.equal(resolveLearningDir("~/store", undefined, "/home/me"), "/home/me/store");
    assert.equal(resolveLearningDir("~", undefined, "/home/me"), "/home/me");
    assert.equal(resolveLearningDir("${workspaceFolder}/.mecha", "/w/proj"), "/w/proj/.mecha");
    assert.equal(resolveLearningDir("", "/w/proj"), "");
    assert.throws(() => resolveLearningDir("${workspaceFolder}/x", undefined), /no folder is open/);
  });

  test("the document selector is rules TOML files on disk", () => {
    assert.deepEqual(DOCUMENT_SELECTOR, [
      { scheme: "file", language: "toml", pattern: "**/rules/*.user.toml" },
      { scheme: "file", language: "toml", pattern: "**/rules/*.learned.toml" },
    ]);
    assert.deepEqual(rulesFile("/s/rules/behavior.learned.toml"), { domain: "behavior", kind: "learned" });
    assert.deepEqual(rulesFile("C:\\s\\rules\\writing.user.toml"), { domain: "writing", kind: "user" });
    assert.equal(rulesFile("/s/rules/Behavior.learned.toml"), undefined);
    assert.equal(rulesFile("/s/Cargo.toml"), undefined);
    assert.deepEqual(rulesFile("/s/rules/behavior@app-0123456789abcdef.learned.toml"), {
      domain: "behavior",
      kind: "learned",
      project: "app-0123456789abcdef",
    });
    assert.equal(rulesFile("/s/rules/behavior@app.learned.toml"), undefined, "not a project id");
    assert.equal(rulesFile("/s/rules/behavior@-x-0123456789abcdef.learned.toml"), undefined);
  });

  test("domain names are checked the way the store checks them", () => {
    assert.equal(domainProblem("behavior"), undefined);
    assert.equal(domainProblem("mail-triage_2"), undefined);
    assert.match(domainProblem("../x") ?? "", /lowercase/);
    assert.match(domainProblem("") ?? "", /lowercase/);
    assert.deepEqual(mergeDomains(["triage", undefined], ["behavior", "triage", "Bad"], ["behavior", "writing"]), [
      "triage",
      "behavior",
      "writing",
    ]);
  });

  test("proposal documents are mecha-proposal:/<id>.diff", () => {
    assert.equal(proposalUri("20250102T030405-11111111"), "mecha-proposal:/20250102T030405-11111111.diff");
    assert.equal(proposalIdFromPath("/20250102T030405-11111111.diff"), "20250102T030405-11111111");
    assert.throws(() => proposalIdFromPath("/.diff"), /not a proposal document/);
  });

  test("palette command ids never collide with the server's executeCommand ids", () => {
    const server = new Set<string>(Object.values(SERVER_COMMANDS));
    for (const id of Object.values(CLIENT_COMMANDS)) {
      assert.ok(id.startsWith("mecha.client."), id);
      assert.ok(!server.has(id), id);
    }
  });
});

describe("status bar text", () => {
  test("0, 1 and n pending proposals", () => {
    assert.deepEqual(formatStatus({ kind: "ready", pending: 0, byDomain: {} }), {
      text: "$(check) mecha",
      tooltip: "mecha: no pending proposals",
    });
    assert.deepEqual(formatStatus({ kind: "ready", pending: 1, byDomain: { behavior: 1 } }), {
      text: "$(git-pull-request) mecha: 1 proposal",
      tooltip: "mecha: 1 pending proposal (behavior: 1) — click to review",
    });
    assert.deepEqual(formatStatus({ kind: "ready", pending: 3, byDomain: { writing: 1, behavior: 2 } }), {
      text: "$(git-pull-request) mecha: 3 proposals",
      tooltip: "mecha: 3 pending proposals (behavior: 2, writing: 1) — click to review",
    });
  });

  test("starting and stopped", () => {
    assert.equal(formatStatus({ kind: "starting" }).text, "$(sync~spin) mecha");
    const stopped = formatStatus({ kind: "stopped", error: "spawn mecha-sidecar ENOENT" });
    assert.equal(stopped.text, "$(warning) mecha");
    assert.match(stopped.tooltip, /ENOENT/);
  });
});

describe("palette commands", () => {
  test("list → pick → accept runs listProposals then acceptProposal with the id", async () => {
    const { rpc, calls } = fakeRpc({
      ...listAnswer([P1, P2]),
      [SERVER_COMMANDS.acceptProposal]: ([id]) => ({
        proposal: { ...P1, id, status: "accepted" },
        message: "accepted proposal 20250102T030405-11111111; behavior now has 2 active learned rules",
        exports: [],
      }),
    });
    const { ui, log } = fakeUi({ picks: [byLabel(P1.id), byPrefix("Accept")] });
    const described: (string | undefined)[][] = [];
    const seeing: Ui = { ...ui, pick: async (items, options) => (described.push(items.map((i) => i.description)), ui.pick(items, options)) };
    await new ProposalCommands(rpc, seeing).listProposals();
    assert.deepEqual(calls, [
      { kind: "command", name: "mecha.listProposals", payload: [{ status: "pending" }] },
      { kind: "command", name: "mecha.acceptProposal", payload: [P1.id] },
    ]);
    assert.deepEqual(log.picked[0].labels, [P1.id, P2.id]);
    assert.deepEqual(log.picked[1].labels, ["$(diff) Show diff", "$(check) Accept", "$(close) Reject…"]);
    assert.deepEqual(described, [
      ["behavior · 1 → 2 active rules", "writing · 0 → 1 active rules"],
      ["the rules block before and after", "write it to behavior.learned.toml", "with an optional reason"],
    ]);
    // The server's line, as it wrote it: the client counts no rules.
    assert.deepEqual(log.info, ["mecha: accepted proposal 20250102T030405-11111111; behavior now has 2 active learned rules."]);
  });

  test("list → pick → reject asks for a reason and passes it", async () => {
    const { rpc, calls } = fakeRpc({
      ...listAnswer([P1]),
      [SERVER_COMMANDS.rejectProposal]: ([id]) => ({
        proposal: { ...P1, id, status: "rejected" },
        message: `rejected proposal ${id}`,
        exports: [],
      }),
    });
    const { ui, log } = fakeUi({ picks: [byLabel(P1.id), byPrefix("Reject")], inputs: ["  too specific  "] });
    await new ProposalCommands(rpc, ui).listProposals();
    assert.deepEqual(calls[1], { kind: "command", name: "mecha.rejectProposal", payload: [P1.id, "too specific"] });
    assert.equal(log.inputs.length, 1);
    assert.deepEqual(log.info, [`mecha: rejected proposal ${P1.id}.`]);
  });

  test("an empty reason rejects without one; Escape cancels", async () => {
    const { rpc, calls } = fakeRpc({ [SERVER_COMMANDS.rejectProposal]: () => ({ proposal: P1 }) });
    const commands = new ProposalCommands(rpc, fakeUi({ inputs: ["", undefined] }).ui);
    await commands.rejectProposal(P1.id);
    assert.deepEqual(calls, [{ kind: "command", name: "mecha.rejectProposal", payload: [P1.id] }]);
    assert.equal(await commands.rejectProposal(P1.id), undefined);
    assert.equal(calls.length, 1);
    assert.deepEqual(rejectArgs("x", " why "), ["x", "why"]);
  });

  test("list → pick → show diff opens the proposal document", async () => {
    const { rpc, calls } = fakeRpc(listAnswer([P1, P2]));
    const { ui, log } = fakeUi({ picks: [byLabel(P2.id), byPrefix("Show diff")] });
    await new ProposalCommands(rpc, ui).listProposals();
    assert.equal(calls.length, 1);
    assert.deepEqual(log.opened, [P2.id]);
  });

  test("nothing pending says so and asks nothing", async () => {
    const { rpc } = fakeRpc(listAnswer([]));
    const { ui, log } = fakeUi();
    await new ProposalCommands(rpc, ui).listProposals();
    assert.deepEqual(log.picked, []);
    assert.deepEqual(log.info, ["mecha: no pending proposals."]);
  });

  test("dismissing the pick list does nothing", async () => {
    const { rpc, calls } = fakeRpc(listAnswer([P1]));
    await new ProposalCommands(rpc, fakeUi({ picks: [() => undefined] }).ui).listProposals();
    assert.equal(calls.length, 1);
  });

  test("accept without an id picks from the pending list first", async () => {
    const { rpc, calls } = fakeRpc({ ...listAnswer([P1, P2]), [SERVER_COMMANDS.acceptProposal]: () => ({ proposal: P2 }) });
    await new ProposalCommands(rpc, fakeUi({ picks: [byLabel(P2.id)] }).ui).acceptProposal();
    assert.deepEqual(calls.map((c) => [c.name, c.payload]), [
      ["mecha.listProposals", [{ status: "pending" }]],
      ["mecha.acceptProposal", [P2.id]],
    ]);
  });

  test("learn now: a picked domain, another domain typed in, and a refusal", async () => {
    const { rpc, calls } = fakeRpc({
      [SERVER_COMMANDS.learnNow]: ([domain]) =>
        domain === "triage"
          ? { job: null, reason: "2 learnable reflections, fewer than 3" }
          : { job: { id: "20250102T030405-learn-abc123-42", kind: "learn", state: "running", started_at: "x" } },
    });
    const { ui, log } = fakeUi({
      domains: ["behavior", "writing"],
      picks: [byLabel("writing"), byPrefix("Another domain")],
      inputs: ["triage"],
    });
    const commands = new ProposalCommands(rpc, ui);
    await commands.learnNow();
    await commands.learnNow();
    assert.deepEqual(calls.map((c) => c.payload), [["writing"], ["triage"]]);
    assert.ok(calls.every((c) => c.name === "mecha.learnNow"));
    assert.deepEqual(log.picked[0].labels, ["behavior", "writing", "$(edit) Another domain…"]);
    assert.match(log.info[0], /started a learn pass for writing \(job 20250102T030405-learn-abc123-42\)/);
    assert.equal(log.info[1], "mecha: nothing started for triage: 2 learnable reflections, fewer than 3.");
    await assert.rejects(commands.learnNow("../etc"), /lowercase/);
    assert.equal(calls.length, 2);
  });

  test("a listing pairs each proposal with the server's summary of it, by id", () => {
    const project = { ...summary(P2), title: "writing · 0 → 1 active rules · project /home/pat/app" };
    const paired = listed({ proposals: [P1, P2], summaries: [project, summary(P1)] });
    assert.deepEqual(paired.map((l) => [l.proposal.id, l.summary.title]), [
      [P1.id, "behavior · 1 → 2 active rules"],
      [P2.id, "writing · 0 → 1 active rules · project /home/pat/app"],
    ]);
    assert.deepEqual(listed({ proposals: [P1], summaries: [] }), [], "a proposal the server did not summarise is not listed");
    assert.deepEqual(listed(undefined), []);
  });
});

describe("server-command middleware (code actions and lenses)", () => {
  function setup(inputs: (string | undefined)[] = [], picks: ((items: any[]) => any)[] = []) {
    const { ui, log } = fakeUi({ inputs, picks });
    const opened: { content: string; language: string }[] = [];
    const middleware = executeCommandMiddleware({
      ui,
      openText: async (content, language) => void opened.push({ content, language }),
    });
    const sent: { command: string; args: unknown[] }[] = [];
    const next = (answer: unknown) => (command: string, args: unknown[]) => {
      sent.push({ command, args });
      if (answer instanceof Error) {
        return Promise.reject(answer);
      }
      return Promise.resolve(answer);
    };
    return { middleware, next, sent, log, opened };
  }

  test("show diff opens the document the server names", async () => {
    const s = setup();
    const result = { uri: `mecha-proposal:/${P1.id}.diff`, id: P1.id, diff: "-a\n+b\n" };
    assert.deepEqual(await s.middleware("mecha.showProposalDiff", [P1.id.slice(0, 10)], s.next(result)), result);
    assert.deepEqual(s.log.opened, [P1.id]);
  });

  test("reject from a code action asks for the reason", async () => {
    const s = setup(["duplicate of a user rule"]);
    await s.middleware("mecha.rejectProposal", [P1.id], s.next({ proposal: P1, message: `rejected proposal ${P1.id}` }));
    assert.deepEqual(s.sent, [{ command: "mecha.rejectProposal", args: [P1.id, "duplicate of a user rule"] }]);
    assert.deepEqual(s.log.info, [`mecha: rejected proposal ${P1.id}.`]);
  });

  test("reject with a reason already given does not ask; Escape cancels", async () => {
    const s = setup([undefined]);
    await s.middleware("mecha.rejectProposal", [P1.id, "given"], s.next({ proposal: P1 }));
    assert.equal(s.log.inputs.length, 0);
    assert.equal(await s.middleware("mecha.rejectProposal", [P1.id], s.next({ proposal: P1 })), undefined);
    assert.equal(s.sent.length, 1);
  });

  test("leaving out a change asks whether its lesson is wrong; only a wrong lesson asks why; Escape cancels", async () => {
    const only = (items: any[]) => items.find((i) => i.label === "Only this rule");
    const lesson = (items: any[]) => items.find((i) => i.label === "Its lesson is wrong");
    const s = setup(["wrong for this repo"], [only, lesson, () => undefined]);
    const accepted = { ...P1, status: "accepted" };
    await s.middleware("mecha.acceptProposal", [P1.id, { without: [2] }], s.next({ proposal: accepted, message: "m" }));
    await s.middleware("mecha.acceptProposal", [P1.id, { without: [2] }], s.next({ proposal: accepted, message: "m" }));
    assert.deepEqual(s.sent, [
      { command: "mecha.acceptProposal", args: [P1.id, { without: [2] }] },
      { command: "mecha.acceptProposal", args: [P1.id, { wrong: [2], reason: "wrong for this repo" }] },
    ]);
    assert.deepEqual(s.log.picked[0].labels, ["Only this rule", "Its lesson is wrong"]);
    assert.equal(await s.middleware("mecha.acceptProposal", [P1.id, { without: [2] }], s.next({ proposal: accepted })), undefined);
    assert.equal(s.sent.length, 2);
  });

  test("an edit action asks for the person's words, starting from the proposed ones; Escape cancels", async () => {
    const s = setup(["  Answer in three lines or fewer. ", undefined]);
    const accepted = { ...P1, status: "accepted" };
    const options = { edit: [{ number: 1, text: "Keep replies short" }] };
    await s.middleware("mecha.acceptProposal", [P1.id, options], s.next({ proposal: accepted, message: "m" }));
    assert.deepEqual(s.sent, [
      { command: "mecha.acceptProposal", args: [P1.id, { edit: [{ number: 1, text: "Answer in three lines or fewer." }] }] },
    ]);
    assert.equal(await s.middleware("mecha.acceptProposal", [P1.id, options], s.next({ proposal: accepted })), undefined);
    assert.equal(s.sent.length, 1);
  });

  test("accept and a proposed retirement say the server's line; a server error becomes a message", async () => {
    const s = setup();
    const accepted = { ...P1, status: "accepted" };
    await s.middleware("mecha.acceptProposal", [P1.id], s.next({ proposal: accepted, message: acceptedMessage(P1), exports: [] }));
    assert.deepEqual(s.log.info, [`mecha: ${acceptedMessage(P1)}.`]);
    const retiring = { proposal: P2, message: `proposal ${P2.id} would retire the rule; review it like any other`, exports: [] };
    await s.middleware("mecha.proposeRetirement", ["writing", "r-1", "regressed"], s.next(retiring));
    assert.equal(s.log.info[1], `mecha: proposal ${P2.id} would retire the rule; review it like any other.`);
    assert.equal(await s.middleware("mecha.acceptProposal", [P1.id], s.next(new Error("proposal is stale"))), undefined);
    assert.deepEqual(s.log.errors, ["mecha: mecha.acceptProposal failed: proposal is stale"]);
  });

  test("the rules block opens as markdown; other commands pass through", async () => {
    const s = setup();
    await s.middleware("mecha.showRulesBlock", ["behavior"], s.next({ block: "## Learned rules\n", rule_ids: [] }));
    assert.deepEqual(s.opened, [{ content: "## Learned rules\n", language: "markdown" }]);
    assert.deepEqual(await s.middleware("mecha.somethingElse", [1], s.next({ ok: true })), { ok: true });
  });
});

describe("proposal documents", () => {
  test("the content is the diff from mecha/proposal", async () => {
    const { rpc, calls } = fakeRpc({ "mecha/proposal": ({ id }) => ({ proposal: { ...P1, id }, diff: "--- before\n+++ after\n+- x" }) });
    const provider = new ProposalDocumentProvider(rpc.request);
    const text = await provider.provideTextDocumentContent({ scheme: "mecha-proposal", path: `/${P1.id}.diff` });
    assert.equal(text, "--- before\n+++ after\n+- x\n");
    assert.deepEqual(calls, [{ kind: "request", name: "mecha/proposal", payload: { id: P1.id } }]);
  });

  test("an empty diff says so; refresh fires for each open document", async () => {
    const { rpc } = fakeRpc({ "mecha/proposal": () => ({ proposal: P1, diff: "" }) });
    const fired: unknown[] = [];
    const provider = new ProposalDocumentProvider(rpc.request, { event: () => undefined, fire: (u) => fired.push(u) });
    assert.match(await provider.provideTextDocumentContent({ scheme: "mecha-proposal", path: "/x.diff" }), /does not change/);
    const uris = [{ scheme: "mecha-proposal", path: "/a.diff" }, { scheme: "mecha-proposal", path: "/b.diff" }];
    provider.refresh(uris);
    assert.deepEqual(fired, uris);
  });
});
