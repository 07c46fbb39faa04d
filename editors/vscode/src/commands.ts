/**
 * The palette commands' logic: what to ask the person, which server command
 * to run with which arguments, and what to say afterwards. The server and the
 * UI come in as parameters (`Rpc`, `Ui`), so every path here runs in plain
 * Node under test.
 */
import { domainProblem } from "./config";
import {
  SERVER_COMMANDS,
  isActive,
  type LearnResult,
  type Proposal,
  type ProposalResult,
  type ProposalsResult,
} from "./protocol";

/** The language server, as far as these commands need it. */
export interface Rpc {
  /** `workspace/executeCommand {command, arguments}`. */
  executeCommand<T = unknown>(command: string, args: unknown[]): Promise<T>;
  /** Any request, e.g. `mecha/proposal`. */
  request<T = unknown>(method: string, params: unknown): Promise<T>;
}

export interface PickItem {
  label: string;
  description?: string;
  detail?: string;
}

/** The editor, as far as these commands need it. */
export interface Ui {
  pick<T extends PickItem>(items: T[], options: { title: string; placeHolder?: string }): Promise<T | undefined>;
  input(options: {
    title: string;
    prompt: string;
    placeHolder?: string;
    value?: string;
    validate?: (value: string) => string | undefined;
  }): Promise<string | undefined>;
  info(message: string): void;
  error(message: string): void;
  /** Opens `mecha-proposal:/<id>.diff`. */
  openProposal(id: string): Promise<void>;
  /** Domains worth offering first: the active editor's, then rules files in the workspace. */
  knownDomains(): Promise<string[]>;
}

export type ProposalAction = "diff" | "accept" | "reject";

interface ProposalItem extends PickItem {
  proposal: Proposal;
}

interface ActionItem extends PickItem {
  action: ProposalAction;
}

interface DomainItem extends PickItem {
  domain?: string;
}

/** `behavior · 3 → 4 active rules`, for a pick list. */
export function describeProposal(p: Proposal): string {
  const before = p.rules_before.filter(isActive).length;
  const after = p.rules.filter(isActive).length;
  return `${p.domain} · ${before} → ${after} active rules`;
}

/** The first line of a proposal's evidence, shortened for a pick list. */
export function evidenceLine(p: Proposal, max = 120): string {
  const line = (p.evidence || "no measured evidence — review by reading the diff").split("\n")[0].trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export class ProposalCommands {
  constructor(
    private readonly rpc: Rpc,
    private readonly ui: Ui,
    /** Called after a proposal is resolved here, to refresh the status bar. */
    private readonly onResolved: () => void = () => undefined,
  ) {}

  /** Pending proposals, oldest first, through the server's `mecha.listProposals`. */
  async pending(domain?: string): Promise<Proposal[]> {
    const filters: { status: "pending"; domain?: string } = { status: "pending" };
    if (domain) {
      filters.domain = domain;
    }
    const result = await this.rpc.executeCommand<ProposalsResult>(SERVER_COMMANDS.listProposals, [filters]);
    return result?.proposals ?? [];
  }

  /** `mecha.client.learnNow [domain?]`: start a consolidation pass for a domain. */
  async learnNow(domain?: string): Promise<LearnResult | undefined> {
    const chosen = domain ?? (await this.askDomain());
    if (chosen === undefined) {
      return undefined;
    }
    const problem = domainProblem(chosen);
    if (problem) {
      throw new Error(problem);
    }
    const result = await this.rpc.executeCommand<LearnResult>(SERVER_COMMANDS.learnNow, [chosen]);
    if (result?.job) {
      this.ui.info(
        `mecha: started a learn pass for ${chosen} (job ${result.job.id}). It proposes, never applies; ` +
          "a proposal shows up in the status bar.",
      );
    } else {
      this.ui.info(`mecha: nothing started for ${chosen}${result?.reason ? `: ${result.reason}` : ""}.`);
    }
    return result;
  }

  /** `mecha.client.listProposals`: pick a pending proposal, then what to do with it. */
  async listProposals(): Promise<void> {
    const proposals = await this.pending();
    if (proposals.length === 0) {
      this.ui.info("mecha: no pending proposals.");
      return;
    }
    const picked = await this.ui.pick<ProposalItem>(
      proposals.map((p) => ({ label: p.id, description: describeProposal(p), detail: evidenceLine(p), proposal: p })),
      { title: "mecha: pending proposals", placeHolder: "Choose a proposal to review" },
    );
    if (!picked) {
      return;
    }
    const id = picked.proposal.id;
    const action = await this.ui.pick<ActionItem>(
      [
        { label: "$(diff) Show diff", description: "the rules block before and after", action: "diff" },
        { label: "$(check) Accept", description: `write it to ${picked.proposal.domain}.learned.toml`, action: "accept" },
        { label: "$(close) Reject…", description: "with an optional reason", action: "reject" },
      ],
      { title: `mecha: proposal ${id}`, placeHolder: describeProposal(picked.proposal) },
    );
    if (!action) {
      return;
    }
    await this.run(action.action, id);
  }

  async run(action: ProposalAction, id: string): Promise<void> {
    switch (action) {
      case "diff":
        await this.showProposalDiff(id);
        return;
      case "accept":
        await this.acceptProposal(id);
        return;
      case "reject":
        await this.rejectProposal(id);
        return;
    }
  }

  /** `mecha.client.acceptProposal [id?]`. */
  async acceptProposal(id?: string): Promise<Proposal | undefined> {
    const chosen = id ?? (await this.pickPending("Accept which proposal?"));
    if (chosen === undefined) {
      return undefined;
    }
    const result = await this.rpc.executeCommand<ProposalResult>(SERVER_COMMANDS.acceptProposal, [chosen]);
    this.onResolved();
    const p = result?.proposal;
    this.ui.info(
      p
        ? `mecha: accepted proposal ${p.id}; ${p.domain} now has ${p.rules.filter(isActive).length} active learned rules.`
        : `mecha: accepted proposal ${chosen}.`,
    );
    return p;
  }

  /** `mecha.client.rejectProposal [id?, reason?]`; asks for an optional reason. */
  async rejectProposal(id?: string, reason?: string): Promise<Proposal | undefined> {
    const chosen = id ?? (await this.pickPending("Reject which proposal?"));
    if (chosen === undefined) {
      return undefined;
    }
    const why = reason ?? (await askReason(this.ui, chosen));
    if (why === undefined) {
      return undefined;
    }
    const result = await this.rpc.executeCommand<ProposalResult>(SERVER_COMMANDS.rejectProposal, rejectArgs(chosen, why));
    this.onResolved();
    this.ui.info(`mecha: rejected proposal ${result?.proposal?.id ?? chosen}.`);
    return result?.proposal;
  }

  /** `mecha.client.showProposalDiff [id?]`: the `mecha-proposal:` document. */
  async showProposalDiff(id?: string): Promise<void> {
    const chosen = id ?? (await this.pickPending("Show the diff of which proposal?"));
    if (chosen === undefined) {
      return;
    }
    await this.ui.openProposal(chosen);
  }

  private async pickPending(title: string): Promise<string | undefined> {
    const proposals = await this.pending();
    if (proposals.length === 0) {
      this.ui.info("mecha: no pending proposals.");
      return undefined;
    }
    const picked = await this.ui.pick<ProposalItem>(
      proposals.map((p) => ({ label: p.id, description: describeProposal(p), detail: evidenceLine(p), proposal: p })),
      { title: `mecha: ${title}` },
    );
    return picked?.proposal.id;
  }

  private async askDomain(): Promise<string | undefined> {
    const known = await this.ui.knownDomains();
    if (known.length > 0) {
      const picked = await this.ui.pick<DomainItem>(
        [...known.map((d) => ({ label: d, domain: d })), { label: "$(edit) Another domain…" }],
        { title: "mecha: learn now", placeHolder: "Consolidate which domain's reflections?" },
      );
      if (!picked) {
        return undefined;
      }
      if (picked.domain) {
        return picked.domain;
      }
    }
    return this.ui.input({
      title: "mecha: learn now",
      prompt: "The domain to consolidate (for example behavior or writing)",
      placeHolder: "behavior",
      validate: domainProblem,
    });
  }
}

/** `[id]`, or `[id, reason]` when a reason was given. */
export function rejectArgs(id: string, reason: string): unknown[] {
  return reason.trim() ? [id, reason.trim()] : [id];
}

/** An optional reason: empty means none, `undefined` (Escape) cancels the rejection. */
export function askReason(ui: Ui, id: string): Promise<string | undefined> {
  return ui.input({
    title: `mecha: reject proposal ${id}`,
    prompt: "Why? Optional; it is recorded with the rejection. Press Escape to cancel.",
    placeHolder: "e.g. too specific to one session",
  });
}
