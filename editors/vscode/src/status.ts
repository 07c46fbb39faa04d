/**
 * The status bar item's text, as a pure function of what the server said:
 * the pending counts are `mecha/proposalsChanged`'s, never counted here.
 */

export type StatusState =
  | { kind: "starting" }
  | { kind: "stopped"; error?: string }
  | { kind: "ready"; pending: number; byDomain: Record<string, number> };

export interface StatusView {
  text: string;
  tooltip: string;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

export function formatStatus(state: StatusState): StatusView {
  switch (state.kind) {
    case "starting":
      return { text: "$(sync~spin) mecha", tooltip: "mecha: starting the language server…" };
    case "stopped":
      return {
        text: "$(warning) mecha",
        tooltip: state.error
          ? `mecha: the language server is not running — ${state.error}`
          : "mecha: the language server is not running",
      };
    case "ready": {
      if (state.pending <= 0) {
        return { text: "$(check) mecha", tooltip: "mecha: no pending proposals" };
      }
      const domains = Object.keys(state.byDomain)
        .sort()
        .map((d) => `${d}: ${state.byDomain[d]}`)
        .join(", ");
      const count = plural(state.pending, "pending proposal", "pending proposals");
      return {
        text: `$(git-pull-request) mecha: ${plural(state.pending, "proposal", "proposals")}`,
        tooltip: `mecha: ${count}${domains ? ` (${domains})` : ""} — click to review`,
      };
    }
  }
}
