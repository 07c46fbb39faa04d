/**
 * What the extension and `mecha-sidecar lsp` agree on: command ids, custom
 * methods, the proposal document scheme, and the shapes on the wire
 * (see editors/README.md and protocol/README.md in the repository).
 *
 * Nothing here imports `vscode`, so it loads in plain Node.
 */

/**
 * Commands the *server* executes (`workspace/executeCommand`). The server
 * lists them in `executeCommandProvider`, and vscode-languageclient registers
 * a VS Code command under each of these ids that forwards to the server — the
 * ids code actions and code lenses carry. The extension's own palette
 * commands therefore use other ids (`CLIENT_COMMANDS`): registering
 * `mecha.acceptProposal` twice would fail activation.
 */
export const SERVER_COMMANDS = {
  acceptProposal: "mecha.acceptProposal",
  rejectProposal: "mecha.rejectProposal",
  showProposalDiff: "mecha.showProposalDiff",
  listProposals: "mecha.listProposals",
  learnNow: "mecha.learnNow",
  proposeRetirement: "mecha.proposeRetirement",
  showRulesBlock: "mecha.showRulesBlock",
} as const;

/** The extension's palette commands, contributed in package.json. */
export const CLIENT_COMMANDS = {
  learnNow: "mecha.client.learnNow",
  listProposals: "mecha.client.listProposals",
  acceptProposal: "mecha.client.acceptProposal",
  rejectProposal: "mecha.client.rejectProposal",
  showProposalDiff: "mecha.client.showProposalDiff",
  restartServer: "mecha.client.restartServer",
} as const;

export const METHODS = {
  executeCommand: "workspace/executeCommand",
  proposals: "mecha/proposals",
  proposal: "mecha/proposal",
  proposalsChanged: "mecha/proposalsChanged",
  jobFinished: "mecha/jobFinished",
} as const;

/** Read-only documents showing a proposal's diff: `mecha-proposal:/<id>.diff`. */
export const PROPOSAL_SCHEME = "mecha-proposal";

export type ProposalStatus = "pending" | "accepted" | "rejected" | "rejected_by_gate";

export interface Rule {
  text: string;
  enabled?: boolean;
  confidence?: number;
  based_on_count?: number;
  id?: string;
  sources?: string[];
  created_at?: string;
  retired_at?: string;
  retired_reason?: string;
}

export interface Proposal {
  id: string;
  domain: string;
  status: ProposalStatus;
  reflexion_ids: string[];
  rules_before: Rule[];
  rules: Rule[];
  evidence: string;
  created_at: string;
  resolved_at?: string | null;
  reason?: string | null;
}

export interface Job {
  id: string;
  kind: string;
  domain?: string;
  state: string;
  started_at: string;
  finished_at?: string;
  outcome?: string;
  proposal_id?: string;
}

export interface ProposalsResult {
  proposals: Proposal[];
}

export interface ProposalResult {
  proposal: Proposal;
}

export interface ProposalWithDiff {
  proposal: Proposal;
  diff: string;
}

export interface ShowDiffResult {
  uri: string;
  id: string;
  diff: string;
}

export interface LearnResult {
  job: Job | null;
  reason?: string;
}

export interface RulesBlockResult {
  block: string | null;
  rules_hash: string | null;
  rule_ids: string[];
  domains: string[];
}

/** `mecha/proposalsChanged` params. */
export interface ProposalsChanged {
  pending: number;
  by_domain: Record<string, number>;
}

/** `mecha/jobFinished` params. */
export interface JobFinished {
  job: Job;
}

/** Whether a rule rides in prompts; retirement wins over `enabled = true`. */
export function isActive(rule: Rule): boolean {
  return rule.enabled !== false && !rule.retired_at;
}
