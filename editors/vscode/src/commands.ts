/**
 * The palette commands' logic: what to ask the person, which server command
 * to run with which arguments, and what to say afterwards. The server and the
 * UI come in as parameters (`Rpc`, `Ui`), so every path here runs in plain
 * Node under test.
 */
import { domainProblem } from "./config";
import {
  SERVER_COMMANDS,
  type LearnResult,
  type Proposal,
  type ProposalListResult,
  type ProposalSummary,
  type ReviewedProposalResult,
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

/** A pending proposal and the server's summary of it (`mecha.listProposals`). */
export interface Listed {
  proposal: Proposal;
  summary: ProposalSummary;
}

interface ProposalItem extends PickItem {
  listed: Listed;
}

interface ActionItem extends PickItem {
  action: ProposalAction;
}

interface DomainItem extends PickItem {
  domain?: string;
}

/** The proposals of a listing, each with the server's summary of it (paired by id). */
export function listed(result: ProposalListResult | undefined): Listed[] {
  const summaries = new Map((result?.summaries ?? []).map((s) => [s.id, s]));
  const out: Listed[] = [];
  for (const proposal of result?.proposals ?? []) {
    const summary = summaries.get(proposal.id);
    if (summary) {
      out.push({ proposal, summary });
    }
  }
  return out;
}

/** The line the server wrote for an accept, a rejection or a retirement, shown as it is. */
export function tell(ui: Ui, result: ReviewedProposalResult | undefined): void {
  if (result?.message) {
    ui.info(`mecha: ${result.message}.`);
  }
}

function pickItem(l: Listed): ProposalItem {
  return { label: l.proposal.id, description: l.summary.title, detail: evidenceLine(l.proposal), listed: l };
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
  ) {}

  /** Pending proposals, oldest first, through the server's `mecha.listProposals`, with its summaries. */
  async pending(domain?: string): Promise<Listed[]> {
    const filters: { status: "pending"; domain?: string } = { status: "pending" };
    if (domain) {
      filters.domain = domain;
    }
    return listed(await this.rpc.executeCommand<ProposalListResult>(SERVER_COMMANDS.listProposals, [filters]));
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
    const picked = await this.ui.pick<ProposalItem>(proposals.map(pickItem), {
      title: "mecha: pending proposals",
      placeHolder: "Choose a proposal to review",
    });
    if (!picked) {
      return;
    }
    const { proposal, summary } = picked.listed;
    const id = proposal.id;
    const action = await this.ui.pick<ActionItem>(
      [
        { label: "$(diff) Show diff", description: "the rules block before and after", action: "diff" },
        { label: "$(check) Accept", description: `write it to ${summary.writes}`, action: "accept" },
        { label: "$(close) Reject…", description: "with an optional reason", action: "reject" },
      ],
      { title: `mecha: proposal ${id}`, placeHolder: summary.title },
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
    const result = await this.rpc.executeCommand<ReviewedProposalResult>(SERVER_COMMANDS.acceptProposal, [chosen]);
    tell(this.ui, result);
    return result?.proposal;
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
    const result = await this.rpc.executeCommand<ReviewedProposalResult>(
      SERVER_COMMANDS.rejectProposal,
      rejectArgs(chosen, why),
    );
    tell(this.ui, result);
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
    const picked = await this.ui.pick<ProposalItem>(proposals.map(pickItem), { title: `mecha: ${title}` });
    return picked?.listed.proposal.id;
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
