// Drives code-server (a real VS Code in the browser) through headless
// chromium the way a person works the mecha extension, and records what it
// saw in `results` for the Python side to judge. Exits 0 only if every step
// happened; on a failure it saves a screenshot and the page's text.
//
// Usage: node vscode_ui.mjs params.json   (NODE_PATH must hold playwright-core)

import { createRequire } from "node:module";
import * as fs from "node:fs";
import * as path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH ?? ".", "noop.js"));
const { chromium } = require("playwright-core");

const params = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = { errors: [], steps: [] };
const STEP_MS = 30_000;
let page;
let shots = 0;

function save() {
  fs.writeFileSync(params.results, JSON.stringify(out, null, 2));
}

function log(msg) {
  const line = `[${new Date().toISOString()}] ${msg}`;
  out.steps.push(line);
  console.log(line);
}

/** Text as a person reads it: VS Code renders spaces as U+00A0. */
function norm(text) {
  return (text ?? "").replace(/\u00a0/g, " ");
}

async function shot(name) {
  shots += 1;
  const file = path.join(params.artifacts, `${String(shots).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file }).catch(() => undefined);
  return file;
}

/** Polls `check` until it returns something truthy; fails naming `what`. */
async function waitFor(what, check, timeout = STEP_MS) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await check();
      if (last) {
        return last;
      }
    } catch (err) {
      last = `(${err.message.split("\n")[0]})`;
    }
    await page.waitForTimeout(200);
  }
  throw new Error(`timed out after ${timeout / 1000}s waiting for ${what} (last seen: ${JSON.stringify(last)})`);
}

async function texts(selector) {
  return (await page.locator(selector).allInnerTexts()).map(norm);
}

async function statusTexts() {
  return (await texts("footer .statusbar-item")).map((t) => t.trim()).filter((t) => t);
}

/** The extension's status bar item: its text and its icon (a codicon name). */
async function mechaItem() {
  const items = page.locator("footer .statusbar-item");
  for (let i = 0; i < (await items.count()); i += 1) {
    const item = items.nth(i);
    const text = norm(await item.innerText()).trim();
    if (text === "mecha" || text.startsWith("mecha:")) {
      const icon = await item.locator(".codicon").first().getAttribute("class").catch(() => "");
      const name = (icon ?? "").split(/\s+/).find((c) => c.startsWith("codicon-") && c !== "codicon-modifier-spin");
      return { text, icon: name ? name.slice("codicon-".length) : "" };
    }
  }
  return { text: "", icon: "" };
}

async function mechaStatus() {
  return (await mechaItem()).text;
}

async function notifications() {
  return texts(".notifications-toasts .notification-list-item-message");
}

async function problems() {
  // One snapshot of the rows: read one by one, a row the panel re-renders
  // away between the count and the read would be waited for in vain.
  const rows = page.locator(".markers-panel .monaco-list-row");
  const labels = await rows.evaluateAll((els) => els.map((e) => e.getAttribute("aria-label") ?? e.innerText));
  return labels.map(norm);
}

async function openFile(name) {
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").waitFor({ state: "visible", timeout: STEP_MS });
  await page.keyboard.type(name, { delay: 20 });
  await waitFor(`${name} in quick open`, async () =>
    (await texts(".quick-input-widget .monaco-list-row")).some((t) => t.includes(name)),
  );
  await page.keyboard.press("Enter");
  await waitFor(`the ${name} editor`, async () => (await page.title()).includes(name));
}

async function gotoLine(line) {
  await page.keyboard.press("Control+1"); // focus the editor group, not a code lens
  await page.keyboard.press("Control+G");
  await page.locator(".quick-input-widget input").waitFor({ state: "visible", timeout: STEP_MS });
  await page.keyboard.type(String(line));
  await page.keyboard.press("Enter");
}

async function quickFixes(line) {
  await gotoLine(line);
  await page.waitForTimeout(300);
  // A request that races a reload of the document answers nothing: ask again.
  for (let attempt = 1; ; attempt += 1) {
    await page.keyboard.press("Control+.");
    try {
      return await waitFor("the Quick Fix menu", async () => {
        const rows = await texts(".action-widget .monaco-list-row");
        return rows.length > 0 ? rows.map((r) => r.split("\n")[0].trim()) : undefined;
      }, 8_000);
    } catch (err) {
      if (attempt >= 3) {
        throw err;
      }
      log(`no Quick Fix menu on line ${line} (attempt ${attempt}); asking again`);
      await page.keyboard.press("Escape");
      await gotoLine(line);
    }
  }
}

async function pickQuickFix(prefix) {
  const row = page.locator(".action-widget .monaco-list-row", { hasText: prefix }).first();
  await row.waitFor({ state: "visible", timeout: STEP_MS });
  await row.hover();
  await row.click();
}

async function runCommand(title) {
  await page.keyboard.press("F1");
  await page.locator(".quick-input-widget input").waitFor({ state: "visible", timeout: STEP_MS });
  await page.keyboard.type(title, { delay: 10 });
  await waitFor(`"${title}" in the command palette`, async () =>
    (await texts(".quick-input-widget .monaco-list-row")).some((t) => t.includes(title)),
  );
  await page.keyboard.press("Enter");
}

async function editorText() {
  return norm(await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().innerText());
}

async function main() {
  const browser = await chromium.launch({ executablePath: params.chromium, args: ["--no-sandbox"], headless: true });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 760 } });
    page = await context.newPage();
    page.on("pageerror", (err) => log(`page error: ${err.message.split("\n")[0]}`));
    log(`open ${params.url}`);
    await page.goto(params.url, { waitUntil: "domcontentloaded", timeout: 60_000 });
    await page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: 60_000 });
    await waitFor("the explorer to list rules/", async () =>
      (await texts(".explorer-folders-view .monaco-list-row")).some((t) => t.includes("rules")),
    60_000);

    // The learned file: squiggles, code lens, status bar, Problems.
    await openFile("behavior.learned.toml");
    log("opened the learned file");
    out.codelens = await waitFor("the code lens", async () => {
      const lens = (await texts(".codelens-decoration")).join(" ");
      return lens.includes("pending proposal") ? lens : undefined;
    }, 60_000);
    log(`code lens: ${out.codelens}`);
    out.squiggles = await waitFor("the squiggles", async () => {
      const warning = await page.locator(".monaco-editor .squiggly-warning").count();
      const info = await page.locator(".monaco-editor .squiggly-info").count();
      return warning > 0 && info > 0 ? { warning, info } : undefined;
    });
    out.status_before = await waitFor("the status bar item", async () => {
      const s = await mechaItem();
      return s.text.includes("proposal") ? s : undefined;
    });
    log(`status bar: ${JSON.stringify(out.status_before)}`);
    await page.keyboard.press("Control+Shift+M");
    out.problems_before = await waitFor("two Problems entries", async () => {
      const p = await problems();
      return p.length >= 2 && p.some((x) => x.includes("is pending")) ? p : undefined;
    });
    log(`problems: ${JSON.stringify(out.problems_before)}`);
    await shot("diagnostics");

    // Ctrl+. on the pending-proposal diagnostic (line 1).
    out.quick_fixes = await quickFixes(1);
    log(`Ctrl+. lists: ${JSON.stringify(out.quick_fixes)}`);
    // The README's picture: the editor, its lightbulb menu and Problems.
    await page.screenshot({ path: params.readme_shot, clip: { x: 352, y: 36, width: 628, height: 556 } });
    await shot("quick-fix");

    // Show diff opens the mecha-proposal: document.
    await pickQuickFix(`Show diff of proposal ${params.proposal_id}`);
    out.diff_tab = await waitFor("the proposal's diff editor", async () => {
      const title = await page.title();
      return title.includes(params.proposal_id) ? title : undefined;
    });
    out.diff_text = await waitFor("the diff's text", async () => {
      const text = await editorText();
      return text.includes(params.new_rule) ? text.split("\n") : undefined;
    });
    log(`diff tab: ${out.diff_tab}`);
    await shot("diff");

    // Accept from the lightbulb's list: the file on disk, Problems, status bar.
    await openFile("behavior.learned.toml");
    await quickFixes(1);
    await pickQuickFix(`Accept proposal ${params.proposal_id}`);
    out.accept_said = await waitFor("the accept's notification", async () =>
      (await notifications()).find((t) => t.includes(`accepted proposal ${params.proposal_id}`)),
    );
    log(`accept said: ${out.accept_said}`);
    out.learned_after_accept = await waitFor("the learned file on disk to hold the accepted rule", async () => {
      const text = fs.readFileSync(params.learned, "utf8");
      return text.includes(params.new_rule) ? text : undefined;
    });
    out.problems_after = await waitFor("the pending-proposal entry to leave Problems", async () => {
      const p = await problems();
      return p.length > 0 && !p.some((x) => x.includes("is pending")) ? p : undefined;
    });
    out.status_after = await waitFor("the status bar to show no pending proposal", async () => {
      const s = await mechaItem();
      return s.text && !s.text.includes("proposal") ? s : undefined;
    });
    out.editor_after_accept = await waitFor("the editor to show the accepted rule", async () => {
      const text = await editorText();
      return text.includes(params.new_rule) ? text : undefined;
    });
    log(`after accept: status ${JSON.stringify(out.status_after)}, problems ${JSON.stringify(out.problems_after)}`);
    await shot("accepted");

    // The duplicate's own quick fix: remove it, save, and Problems is empty.
    await page.keyboard.press("Escape");
    const lines = fs.readFileSync(params.learned, "utf8").split("\n");
    const copyAt = lines.findIndex((l) => l.includes(params.duplicate_text)) + 1;
    out.duplicate_fixes = await quickFixes(copyAt);
    log(`Ctrl+. on line ${copyAt} lists: ${JSON.stringify(out.duplicate_fixes)}`);
    await pickQuickFix("Remove duplicate rule");
    // Save once the edit is in the buffer: a save that beats the edit
    // writes the file unchanged and leaves the edit unsaved.
    await waitFor("the editor to lose the duplicate", async () => {
      const text = await editorText();
      return text.includes(params.new_rule) && !text.includes(params.duplicate_text) ? text : undefined;
    });
    await page.keyboard.press("Control+S");
    out.learned_after_remove = await waitFor("the learned file on disk to lose the duplicate", async () => {
      const text = fs.readFileSync(params.learned, "utf8");
      return !text.includes(params.duplicate_text) ? text : undefined;
    });
    out.problems_after_remove = await waitFor("Problems to empty", async () => {
      const p = await problems();
      return p.length === 0 ? p : undefined;
    });

    // A learn pass shows its progress while the scripted model holds it.
    await runCommand("mecha: Learn Now");
    await waitFor("the domain picker", async () =>
      (await texts(".quick-input-widget .monaco-list-row")).some((t) => t.includes(params.learn_domain)),
    );
    await page.keyboard.type(params.learn_domain);
    await page.keyboard.press("Enter");
    out.progress = await waitFor("the learn pass's progress in the status bar", async () =>
      (await statusTexts()).find((t) => t.includes("mecha learn")),
    );
    log(`progress: ${out.progress}`);
    await shot("progress");
    out.learn_finished = await waitFor("the pass's proposal notification", async () =>
      (await notifications()).find((t) => t.includes(`pass for ${params.learn_domain} proposed`)),
    60_000);
    log(`learn finished: ${out.learn_finished}`);

    // A serverPath that names no program: a clear error, not a hang.
    const settings = JSON.parse(fs.readFileSync(params.settings, "utf8"));
    settings["mecha.serverPath"] = params.missing_server;
    fs.writeFileSync(params.settings, JSON.stringify(settings, null, 2));
    await waitFor("the restart offer after the settings change", async () =>
      (await notifications()).some((t) => t.includes("restart the language server")),
    );
    const restarted = Date.now();
    await runCommand("mecha: Restart Language Server");
    out.missing_server_error = await waitFor("the extension's error naming the missing program", async () =>
      (await notifications()).find((t) => t.includes("could not start") && t.includes(params.missing_server)),
    );
    out.missing_server_error_s = (Date.now() - restarted) / 1000;
    out.status_missing_server = await waitFor("the status bar's warning", async () => {
      const s = await mechaItem();
      return s.icon === "warning" ? s : undefined;
    });
    log(`missing server: ${out.missing_server_error} / status ${out.status_missing_server}`);
    await shot("missing-server");
  } catch (err) {
    out.errors.push(String(err?.stack ?? err));
    log(`FAILED: ${err?.message ?? err}`);
    if (page) {
      out.failure_screenshot = await shot("failure");
      out.failure_text = norm(await page.locator("body").innerText().catch(() => "")).slice(0, 20000);
    }
  } finally {
    await browser.close().catch(() => undefined);
  }
}

try {
  await main();
} catch (err) {
  out.errors.push(String(err?.stack ?? err));
}
save();
process.exit(out.errors.length === 0 ? 0 : 1);
