/**
 * `mecha-proposal:/<id>.diff` documents: the diff of the rendered rules block
 * a proposal would make, fetched from the server's `mecha/proposal`. VS Code
 * treats documents from a content provider as read-only.
 */
import { proposalIdFromPath } from "./config";
import { METHODS, type ProposalWithDiffResult } from "./protocol";

/** The part of `vscode.Uri` the provider reads. */
export interface UriLike {
  readonly scheme: string;
  readonly path: string;
}

/** The part of `vscode.EventEmitter<Uri>` the provider needs. */
export interface EmitterLike<T> {
  readonly event: unknown;
  fire(value: T): void;
}

export type Request = <R>(method: string, params: unknown) => Promise<R>;

export class ProposalDocumentProvider<U extends UriLike = UriLike> {
  readonly onDidChange: unknown;

  constructor(
    private readonly request: Request,
    private readonly emitter?: EmitterLike<U>,
  ) {
    this.onDidChange = emitter?.event;
  }

  async provideTextDocumentContent(uri: U): Promise<string> {
    const id = proposalIdFromPath(uri.path);
    const shown = await this.request<ProposalWithDiffResult>(METHODS.proposal, { id });
    const diff = shown?.diff ?? "";
    if (diff) {
      return diff.endsWith("\n") ? diff : `${diff}\n`;
    }
    return `# proposal ${shown?.proposal?.id ?? id} does not change the rendered rules block\n`;
  }

  /** Re-fetch these open documents (a proposal was resolved, a pass finished). */
  refresh(uris: Iterable<U>): void {
    for (const uri of uris) {
      this.emitter?.fire(uri);
    }
  }
}
