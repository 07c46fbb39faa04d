/**
 * What happens when VS Code runs one of the *server's* commands — from a code
 * action, a code lens, or another extension. vscode-languageclient forwards
 * those to the server; this middleware wraps the round trip so the result is
 * shown (the diff opens, the rules block opens, an accept says what changed)
 * and a rejection from a code action still asks for its optional reason.
 */
import { askReason, rejectArgs, tell, type Ui } from "./commands";
import {
  SERVER_COMMANDS,
  type LearnResult,
  type ReviewedProposalResult,
  type RulesPromptBlockResult,
  type ShowProposalDiffResult,
} from "./protocol";

export type Next = (command: string, args: unknown[]) => unknown;

export interface MiddlewareHooks {
  ui: Ui;
  /** Shows text in a new untitled document (the rules block). */
  openText(content: string, language: string): Promise<void>;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The options of a "leave out change N" action (`AcceptOptions`), or undefined. */
function leaveOutOptions(arg: unknown): { without: number[]; reason?: string } | undefined {
  if (typeof arg !== "object" || arg === null) {
    return undefined;
  }
  const { without, reason } = arg as { without?: unknown; reason?: unknown };
  if (!Array.isArray(without) || without.length === 0) {
    return undefined;
  }
  return { without: without as number[], ...(typeof reason === "string" ? { reason } : {}) };
}

/** Why the change is left out: optional, kept with the lessons it marks rejected; Escape cancels. */
function askLeaveOutReason(ui: Ui, id: string, without: number[]): Promise<string | undefined> {
  return ui.input({
    title: `mecha: accept proposal ${id} without change ${without.join(", ")}`,
    prompt: "Why leave it out? Optional; its lessons are marked rejected with it. Press Escape to cancel.",
    placeHolder: "e.g. right for another repository, not this one",
  });
}

export function executeCommandMiddleware(hooks: MiddlewareHooks) {
  const { ui } = hooks;
  return async (command: string, args: unknown[], next: Next): Promise<unknown> => {
    try {
      switch (command) {
        case SERVER_COMMANDS.rejectProposal: {
          let forwarded = args;
          if (args.length < 2 && typeof args[0] === "string") {
            const why = await askReason(ui, args[0]);
            if (why === undefined) {
              return undefined;
            }
            forwarded = rejectArgs(args[0], why);
          }
          const result = (await next(command, forwarded)) as ReviewedProposalResult | undefined;
          tell(ui, result);
          return result;
        }
        case SERVER_COMMANDS.acceptProposal: {
          let forwarded = args;
          const options = leaveOutOptions(args[1]);
          if (options && options.reason === undefined && typeof args[0] === "string") {
            const why = await askLeaveOutReason(ui, args[0], options.without);
            if (why === undefined) {
              return undefined;
            }
            forwarded = [args[0], why.trim() ? { ...options, reason: why.trim() } : options];
          }
          const result = (await next(command, forwarded)) as ReviewedProposalResult | undefined;
          tell(ui, result);
          return result;
        }
        case SERVER_COMMANDS.proposeRetirement: {
          const result = (await next(command, args)) as ReviewedProposalResult | undefined;
          tell(ui, result);
          return result;
        }
        case SERVER_COMMANDS.showProposalDiff: {
          const result = (await next(command, args)) as ShowProposalDiffResult | undefined;
          const id = result?.id ?? (typeof args[0] === "string" ? args[0] : undefined);
          if (id) {
            await ui.openProposal(id);
          }
          return result;
        }
        case SERVER_COMMANDS.showRulesBlock: {
          const result = (await next(command, args)) as RulesPromptBlockResult | undefined;
          await hooks.openText(
            result?.block ?? "<!-- No active rules: a run in these domains gets no rules block. -->\n",
            "markdown",
          );
          return result;
        }
        case SERVER_COMMANDS.learnNow: {
          const result = (await next(command, args)) as LearnResult | undefined;
          ui.info(
            result?.job
              ? `mecha: started a learn pass (job ${result.job.id}).`
              : `mecha: nothing started${result?.reason ? `: ${result.reason}` : ""}.`,
          );
          return result;
        }
        default:
          return await next(command, args);
      }
    } catch (err) {
      ui.error(`mecha: ${command} failed: ${message(err)}`);
      return undefined;
    }
  };
}
