/**
 * What happens when VS Code runs one of the *server's* commands — from a code
 * action, a code lens, or another extension. vscode-languageclient forwards
 * those to the server; this middleware wraps the round trip so the result is
 * shown (the diff opens, the rules block opens, an accept says what changed),
 * a rejection from a code action still asks for its optional reason, leaving
 * a change out asks whether its lesson is wrong, and an edit asks for the
 * person's words.
 */
import { askReason, rejectArgs, tell, type PickItem, type Ui } from "./commands";
import {
  SERVER_COMMANDS,
  type LearnResult,
  type ReviewedProposalResult,
  type RulesPromptBlockResult,
  type ShowProposalDiffResult,
} from "./protocol";
import type { AcceptOptions, EditedRule } from "./wire";

export type Next = (command: string, args: unknown[]) => unknown;

export interface MiddlewareHooks {
  ui: Ui;
  /** Shows text in a new untitled document (the rules block). */
  openText(content: string, language: string): Promise<void>;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The options of a "leave out change N" or "edit change N" action (`AcceptOptions`), or undefined. */
function acceptOptions(arg: unknown): AcceptOptions | undefined {
  if (typeof arg !== "object" || arg === null) {
    return undefined;
  }
  const { without, wrong, edit, reason } = arg as AcceptOptions;
  const out: AcceptOptions = {};
  if (Array.isArray(without) && without.length > 0) {
    out.without = without;
  }
  if (Array.isArray(wrong) && wrong.length > 0) {
    out.wrong = wrong;
  }
  if (Array.isArray(edit) && edit.length > 0) {
    out.edit = edit;
  }
  if (typeof reason === "string") {
    out.reason = reason;
  }
  return out.without || out.wrong || out.edit ? out : undefined;
}

interface WhichItem extends PickItem {
  wrong: boolean;
}

/**
 * Whether the change is left out for itself or because its lesson is wrong:
 * only the second marks the lesson rejected (a learner citing the wrong
 * lesson is not the lesson's fault). Escape cancels.
 */
async function askWhichWrong(ui: Ui, id: string, numbers: number[]): Promise<boolean | undefined> {
  const items: WhichItem[] = [
    { label: "Only this rule", description: "its lessons return to the pool for a later pass", wrong: false },
    { label: "Its lesson is wrong", description: "the lessons it rests on are marked rejected", wrong: true },
  ];
  const picked = await ui.pick(items, {
    title: `mecha: accept proposal ${id} without change ${numbers.join(", ")}`,
    placeHolder: "What is wrong: the rule alone, or the lesson behind it?",
  });
  return picked?.wrong;
}

/** Why the lesson is wrong: optional, kept with the lessons it marks rejected; Escape cancels. */
function askWrongReason(ui: Ui, id: string, numbers: number[]): Promise<string | undefined> {
  return ui.input({
    title: `mecha: accept proposal ${id} without change ${numbers.join(", ")}`,
    prompt: "Why is the lesson wrong? Optional; kept with the lessons marked rejected. Press Escape to cancel.",
    placeHolder: "e.g. right for another repository, not this one",
  });
}

/** The rule in the person's words, starting from the proposed ones; Escape cancels. */
function askRuleWords(ui: Ui, id: string, rule: EditedRule): Promise<string | undefined> {
  return ui.input({
    title: `mecha: accept proposal ${id} with change ${rule.number} in your words`,
    prompt: "The rule as it should read (one line). Press Escape to cancel.",
    value: rule.text,
    validate: (value) => (value.trim() === "" ? "A rule needs words." : /[\r\n]/.test(value) ? "One line." : undefined),
  });
}

/** The accept's options once the person has said what each action asks, or undefined when they cancelled. */
async function completeAccept(ui: Ui, id: string, options: AcceptOptions): Promise<AcceptOptions | undefined> {
  const out: AcceptOptions = { ...options };
  if (options.without && options.reason === undefined) {
    const wrong = await askWhichWrong(ui, id, options.without);
    if (wrong === undefined) {
      return undefined;
    }
    if (wrong) {
      const why = await askWrongReason(ui, id, options.without);
      if (why === undefined) {
        return undefined;
      }
      out.wrong = options.without;
      delete out.without;
      if (why.trim()) {
        out.reason = why.trim();
      }
    }
  }
  if (options.edit) {
    const edits: EditedRule[] = [];
    for (const rule of options.edit) {
      const words = await askRuleWords(ui, id, rule);
      if (words === undefined) {
        return undefined;
      }
      edits.push({ number: rule.number, text: words.trim() });
    }
    out.edit = edits;
  }
  return out;
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
          const options = acceptOptions(args[1]);
          if (options && typeof args[0] === "string") {
            const complete = await completeAccept(ui, args[0], options);
            if (complete === undefined) {
              return undefined;
            }
            forwarded = [args[0], complete];
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
