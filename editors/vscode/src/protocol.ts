/**
 * What the extension and `mecha-sidecar lsp` agree on: command ids, custom
 * methods, the proposal document scheme, and the shapes on the wire
 * (see editors/README.md and protocol/README.md in the repository). The
 * ids and shapes are generated from protocol/'s JSON Schema into `wire.ts`
 * (editors/vscode/scripts/generate_wire.py); this module adds what is the
 * client's own.
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
export { SERVER_COMMANDS } from "./wire";
export type {
  Job,
  LearnResult,
  Proposal,
  ProposalListResult,
  ProposalStatus,
  ProposalSummary,
  ReviewedProposalResult,
  Rule,
  RulesPromptBlockResult,
  ProposalWithDiffResult,
  ShowProposalDiffResult,
  ProposalsChangedParams,
  JobFinishedParams,
} from "./wire";
import { MECHA_METHODS } from "./wire";

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
  ...MECHA_METHODS,
} as const;

/**
 * What this client tells the server, under `capabilities.experimental`, that
 * it handles beyond LSP: the `mecha/*` notifications, and showing command
 * results itself (the diff under `mecha-proposal:`, a review's message).
 * A client that says nothing is any LSP client: the server then sends it no
 * `mecha/*` notification, and shows results through `window/showMessage`
 * and `window/showDocument` instead (`protocol/commands.py`).
 */
export const CLIENT_EXTENSIONS = { mecha: { notifications: true, showsResults: true } } as const;

/** Read-only documents showing a proposal's diff: `mecha-proposal:/<id>.diff`. */
export const PROPOSAL_SCHEME = "mecha-proposal";
