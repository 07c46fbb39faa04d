/**
 * A small stand-in for the `vscode` module: enough of the API for the
 * extension's wiring, recording what was registered and shown, with scripted
 * answers for quick picks and input boxes. Loaded in place of `vscode` by
 * `../useFakeVscode`.
 */

export class Disposable {
  constructor(private readonly onDispose: () => void = () => undefined) {}
  dispose(): void {
    this.onDispose();
  }
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
}

type Listener<T> = (value: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(value: T): void {
    for (const l of [...this.listeners]) {
      l(value);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  get fsPath(): string {
    return this.path;
  }
  static parse(value: string): Uri {
    const m = /^([a-zA-Z][\w+.-]*):(.*)$/.exec(value);
    if (!m) {
      throw new Error(`not a URI: ${value}`);
    }
    let rest = m[2];
    if (rest.startsWith("//")) {
      rest = rest.slice(rest.indexOf("/", 2));
    }
    return new Uri(m[1], decodeURIComponent(rest));
  }
  static file(fsPath: string): Uri {
    return new Uri("file", fsPath);
  }
  toString(): string {
    return this.scheme === "file" ? `file://${this.path}` : `${this.scheme}:${this.path}`;
  }
}

export interface FakeDocument {
  uri: Uri;
  languageId: string;
  text: string;
}

export interface FakeStatusBarItem {
  id: string;
  alignment: StatusBarAlignment;
  priority: number;
  name?: string;
  text: string;
  tooltip?: string;
  command?: string;
  visible: boolean;
  show(): void;
  hide(): void;
  dispose(): void;
}

export interface QuickPickCall {
  items: { label: string; description?: string; detail?: string }[];
  options: { title?: string; placeHolder?: string };
}

type PickAnswer = (items: any[]) => any;
type InputAnswer = (options: any) => string | undefined;

/** Everything the fake recorded, and the scripted answers still to give. */
export const recorded = {
  commands: new Map<string, (...args: any[]) => any>(),
  statusBarItems: [] as FakeStatusBarItem[],
  contentProviders: new Map<string, { provideTextDocumentContent(uri: Uri): any; onDidChange?: unknown }>(),
  quickPicks: [] as QuickPickCall[],
  inputBoxes: [] as any[],
  messages: [] as { level: "info" | "warning" | "error"; text: string; items: string[] }[],
  shown: [] as FakeDocument[],
  executed: [] as { command: string; args: unknown[] }[],
  pickAnswers: [] as PickAnswer[],
  inputAnswers: [] as InputAnswer[],
  messageAnswers: [] as (string | undefined)[],
  settings: {} as Record<string, unknown>,
  workspaceFiles: [] as Uri[],
};

const openDocuments: FakeDocument[] = [];
const onDidOpen = new EventEmitter<FakeDocument>();
const onDidChangeConfig = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();

/** Back to a fresh editor: nothing registered, nothing open, no scripts. */
export function __reset(): void {
  recorded.commands.clear();
  recorded.statusBarItems.length = 0;
  recorded.contentProviders.clear();
  recorded.quickPicks.length = 0;
  recorded.inputBoxes.length = 0;
  recorded.messages.length = 0;
  recorded.shown.length = 0;
  recorded.executed.length = 0;
  recorded.pickAnswers.length = 0;
  recorded.inputAnswers.length = 0;
  recorded.messageAnswers.length = 0;
  recorded.settings = {};
  recorded.workspaceFiles = [];
  openDocuments.length = 0;
  onDidOpen.dispose();
  onDidChangeConfig.dispose();
  window.activeTextEditor = undefined;
  workspace.workspaceFolders = undefined;
}

/** Opens a document as the editor would, firing `onDidOpenTextDocument`. */
export function __openDocument(uri: Uri, languageId: string, text = ""): FakeDocument {
  const doc = { uri, languageId, text };
  openDocuments.push(doc);
  onDidOpen.fire(doc);
  return doc;
}

export function __changeSettings(sections: string[]): void {
  onDidChangeConfig.fire({ affectsConfiguration: (s: string) => sections.some((x) => x === s || x.startsWith(`${s}.`)) });
}

function message(level: "info" | "warning" | "error") {
  return (text: string, ...items: unknown[]): Promise<string | undefined> => {
    const labels = items.filter((i): i is string => typeof i === "string");
    recorded.messages.push({ level, text, items: labels });
    return Promise.resolve(labels.length ? recorded.messageAnswers.shift() : undefined);
  };
}

export const commands = {
  registerCommand(id: string, handler: (...args: any[]) => any): Disposable {
    if (recorded.commands.has(id)) {
      // What VS Code does when two registrations claim one id.
      throw new Error(`command '${id}' already exists`);
    }
    recorded.commands.set(id, handler);
    return new Disposable(() => recorded.commands.delete(id));
  },
  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    recorded.executed.push({ command, args });
    const handler = recorded.commands.get(command);
    return handler ? handler(...args) : undefined;
  },
};

export const window = {
  activeTextEditor: undefined as { document: FakeDocument } | undefined,
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number): FakeStatusBarItem {
    const item: FakeStatusBarItem = {
      id,
      alignment,
      priority,
      text: "",
      visible: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {
        item.visible = false;
      },
    };
    recorded.statusBarItems.push(item);
    return item;
  },
  async showQuickPick(items: any[], options: any): Promise<any> {
    recorded.quickPicks.push({ items, options });
    const answer = recorded.pickAnswers.shift();
    return answer ? answer(items) : undefined;
  },
  async showInputBox(options: any): Promise<string | undefined> {
    recorded.inputBoxes.push(options);
    const answer = recorded.inputAnswers.shift();
    return answer ? answer(options) : undefined;
  },
  showInformationMessage: message("info"),
  showWarningMessage: message("warning"),
  showErrorMessage: message("error"),
  async showTextDocument(doc: FakeDocument): Promise<{ document: FakeDocument }> {
    recorded.shown.push(doc);
    return { document: doc };
  },
};

export const workspace = {
  workspaceFolders: undefined as { uri: Uri; name: string }[] | undefined,
  get textDocuments(): FakeDocument[] {
    return [...openDocuments];
  },
  onDidOpenTextDocument: onDidOpen.event,
  onDidChangeConfiguration: onDidChangeConfig.event,
  getConfiguration(section: string) {
    return {
      get<T>(key: string, fallback: T): T {
        const full = `${section}.${key}`;
        return full in recorded.settings ? (recorded.settings[full] as T) : fallback;
      },
    };
  },
  registerTextDocumentContentProvider(scheme: string, provider: any): Disposable {
    if (recorded.contentProviders.has(scheme)) {
      throw new Error(`a content provider for '${scheme}' is already registered`);
    }
    recorded.contentProviders.set(scheme, provider);
    return new Disposable(() => recorded.contentProviders.delete(scheme));
  },
  async openTextDocument(arg: Uri | { content: string; language: string }): Promise<FakeDocument> {
    if (arg instanceof Uri) {
      const provider = recorded.contentProviders.get(arg.scheme);
      if (!provider) {
        throw new Error(`no content provider for ${arg.toString()}`);
      }
      const text = await provider.provideTextDocumentContent(arg);
      // VS Code derives the language from the extension, as `.diff` is here.
      const doc = { uri: arg, languageId: arg.path.endsWith(".diff") ? "diff" : "plaintext", text };
      openDocuments.push(doc);
      return doc;
    }
    const doc = { uri: Uri.parse(`untitled:Untitled-${openDocuments.length + 1}`), languageId: arg.language, text: arg.content };
    openDocuments.push(doc);
    return doc;
  },
  async findFiles(): Promise<Uri[]> {
    return [...recorded.workspaceFiles];
  },
};

export const languages = {
  async setTextDocumentLanguage(doc: FakeDocument, languageId: string): Promise<FakeDocument> {
    doc.languageId = languageId;
    return doc;
  },
};
