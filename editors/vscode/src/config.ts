/**
 * Settings → how the server is started and what it is told. Plain functions
 * over plain values, so they are tested without VS Code.
 */
import * as os from "node:os";
import * as path from "node:path";

import { PROPOSAL_SCHEME } from "./protocol";

export const DEFAULT_SERVER_PATH = "mecha-sidecar";

export interface MechaSettings {
  /** The executable; `mecha.serverPath`. */
  serverPath: string;
  /** The learning store root; empty means the server's own default. */
  learningDir: string;
  /** Extra arguments, placed before the `lsp` verb. */
  serverArgs: string[];
}

/** Reads one setting, falling back to the default when it is missing. */
export type SettingReader = <T>(key: string, fallback: T) => T;

/**
 * The `mecha.*` settings, normalised: a wrong type or a blank value falls back
 * to the default instead of starting something surprising.
 */
export function readSettings(get: SettingReader): MechaSettings {
  const serverPath = get<unknown>("serverPath", DEFAULT_SERVER_PATH);
  const learningDir = get<unknown>("learningDir", "");
  const serverArgs = get<unknown>("serverArgs", []);
  return {
    serverPath: typeof serverPath === "string" && serverPath.trim() ? serverPath.trim() : DEFAULT_SERVER_PATH,
    learningDir: typeof learningDir === "string" ? learningDir.trim() : "",
    serverArgs: Array.isArray(serverArgs) ? serverArgs.filter((a): a is string => typeof a === "string") : [],
  };
}

/**
 * `~` and `${workspaceFolder}` expanded in the learning directory. Empty stays
 * empty: the server then uses `$MECHA_LEARNING_DIR`, else `~/.mecha/learning`.
 */
export function resolveLearningDir(
  learningDir: string,
  workspaceFolder?: string,
  home: string = os.homedir(),
): string {
  if (!learningDir) {
    return "";
  }
  let dir = learningDir;
  if (dir.includes("${workspaceFolder}")) {
    if (!workspaceFolder) {
      throw new Error("mecha.learningDir uses ${workspaceFolder}, but no folder is open");
    }
    dir = dir.split("${workspaceFolder}").join(workspaceFolder);
  }
  if (dir === "~") {
    dir = home;
  } else if (dir.startsWith("~/") || dir.startsWith("~\\")) {
    dir = path.join(home, dir.slice(2));
  }
  return dir;
}

export interface ServerCommand {
  command: string;
  /** Without `--stdio`: vscode-languageclient appends it for the stdio transport. */
  args: string[];
}

/**
 * `<serverPath> <serverArgs…> lsp`. The extra arguments come before the verb
 * so that top-level options (`--learning-dir DIR`) and interpreter launches
 * (`serverPath = python3`, `serverArgs = ["-m", "mecha.sidecar"]`) both work.
 */
export function serverCommand(settings: MechaSettings): ServerCommand {
  return { command: settings.serverPath, args: [...settings.serverArgs, "lsp"] };
}

/** `initializationOptions`: the harness endpoint's; only `learningDir` is set here. */
export function initializationOptions(learningDir: string): { learningDir?: string } {
  return learningDir ? { learningDir } : {};
}

export const RULES_GLOBS = ["**/rules/*.user.toml", "**/rules/*.learned.toml"] as const;

/** The documents the server is told about: rules files on disk, as TOML. */
export const DOCUMENT_SELECTOR = RULES_GLOBS.map((pattern) => ({ scheme: "file", language: "toml", pattern }));

/**
 * `rules/<domain>.<kind>.toml`, or a project's `rules/<domain>@<project id>.<kind>.toml`
 * (the id `<slug>-<16 hex digits>`, as the store's layout spells it).
 */
const RULES_FILE_RE =
  /(?:^|[\\/])rules[\\/]([a-z0-9][a-z0-9_-]{0,63})(?:@([a-z0-9][a-z0-9_-]{0,39}-[0-9a-f]{16}))?\.(user|learned)\.toml$/;

/** The domain, kind and project id (a project's file) of a rules file path, or `undefined` for anything else. */
export function rulesFile(fsPath: string): { domain: string; kind: "user" | "learned"; project?: string } | undefined {
  const m = RULES_FILE_RE.exec(fsPath);
  if (!m) {
    return undefined;
  }
  const found: { domain: string; kind: "user" | "learned"; project?: string } = { domain: m[1], kind: m[3] as "user" | "learned" };
  if (m[2] !== undefined) {
    found.project = m[2];
  }
  return found;
}

const DOMAIN_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** An input box's complaint about a domain name, or `undefined` when it is fine. */
export function domainProblem(domain: string): string | undefined {
  return DOMAIN_RE.test(domain)
    ? undefined
    : "A domain is 1-64 characters of lowercase letters, digits, '-' and '_', starting with a letter or digit.";
}

/** `mecha-proposal:/<id>.diff`, as the server's `mecha.showProposalDiff` spells it. */
export function proposalUri(id: string): string {
  return `${PROPOSAL_SCHEME}:/${encodeURIComponent(id)}.diff`;
}

/** The proposal id in a `mecha-proposal:` URI's path (`/<id>.diff`). */
export function proposalIdFromPath(uriPath: string): string {
  let id = uriPath.replace(/^\/+/, "");
  if (id.endsWith(".diff")) {
    id = id.slice(0, -".diff".length);
  }
  if (!id) {
    throw new Error(`not a proposal document: ${PROPOSAL_SCHEME}:${uriPath}`);
  }
  return decodeURIComponent(id);
}

/**
 * The store the server uses when `mecha.learningDir` is empty — the same
 * rule as the server's: `$MECHA_LEARNING_DIR`, else `~/.mecha/learning`.
 * Only used to offer domain names; the server decides for itself.
 */
export function defaultLearningDir(env: NodeJS.ProcessEnv = process.env, home: string = os.homedir()): string {
  const fromEnv = env.MECHA_LEARNING_DIR?.trim();
  return fromEnv ? fromEnv : path.join(home, ".mecha", "learning");
}

/** The domains that ride in every ordinary run, offered when nothing else is known. */
export const RUN_DOMAINS = ["behavior", "writing"] as const;

/** Domain names in first-seen order, without duplicates or invalid names. */
export function mergeDomains(...lists: Iterable<string | undefined>[]): string[] {
  const seen = new Set<string>();
  for (const list of lists) {
    for (const d of list) {
      if (d && !domainProblem(d)) {
        seen.add(d);
      }
    }
  }
  return [...seen];
}
