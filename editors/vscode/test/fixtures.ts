/** Proposals and rules shaped like the store's (core/store/learning_store.py `Proposal`). */
import type { Proposal, ProposalListResult, ProposalSummary, Rule } from "../src/protocol";

export function rule(text: string, id: string, extra: Partial<Rule> = {}): Rule {
  return { text, enabled: true, id, sources: [], created_at: "2025-01-02T03:04:05.000000Z", ...extra };
}

export function proposal(id: string, domain: string, before: Rule[], after: Rule[], extra: Partial<Proposal> = {}): Proposal {
  return {
    id,
    domain,
    status: "pending",
    reflexion_ids: ["20250102T030405-aaaaaaaa"],
    rules_before: before,
    rules: after,
    evidence: "paired gate: 12 episodes, 9 improved, 0 regressed",
    created_at: "2025-01-02T03:04:05.000000Z",
    resolved_at: null,
    reason: null,
    drops: [],
    refusals: [],
    left_out: [],
    project: null,
    promoted_from: [],
    accepted_as_global: false,
    rewrite_of: [],
    ...extra,
  };
}

export const BEFORE = [rule("Ask before deleting files.", "r-20250101-aaaaaaaa")];
export const AFTER = [...BEFORE, rule("Run the tests before saying a change is done.", "r-20250102-bbbbbbbb")];

/**
 * What a fake server answers for a proposal in `mecha.listProposals`, worded
 * as `mecha-sidecar lsp` words it (core/editor/review.py). Every fixture rule
 * is active, so the counts are the lists' lengths.
 */
export function summary(p: Proposal): ProposalSummary {
  const [before, after] = [p.rules_before.length, p.rules.length];
  return {
    id: p.id,
    title: `${p.domain} · ${before} → ${after} active rules`,
    active_before: before,
    active_after: after,
    scope: "global",
    writes: `${p.domain}.learned.toml`,
    scope_label: "global",
  };
}

/** A `mecha.listProposals` answer over these proposals. */
export function listing(proposals: Proposal[]): ProposalListResult {
  return { proposals, summaries: proposals.map(summary) };
}

/** The line the server says after an accept (core/editor/review.py `accepted_message`). */
export function acceptedMessage(p: Proposal): string {
  return `accepted proposal ${p.id}; ${p.domain} now has ${p.rules.length} active learned rules`;
}
